//! `relayout bench SUITE.json`: per case, the cold compile time, the median kernel time and the
//! median time of a memcpy of the same output bytes, measured side by side in one process.
//! The figure that matters is the ratio kernel / memcpy (see the Performance section of the
//! design notes); absolute times depend on the machine.

mod buffer;
mod measure;
mod memcpy;
mod report;
mod suite;

use buffer::AlignedBuf;
use measure::{Order, Plan, Timing};
use memcpy::Memcpy;
use relayout::ir::{DType, TensorType};
use relayout::{CompiledOp, Op};
use report::{CaseResult, CompileTimes};
use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Measured time per case (kernel and memcpy batches together): long enough for a stable
/// median, short enough that the whole suite stays within a few minutes on two cores.
const BUDGET_PER_CASE: Duration = Duration::from_millis(500);

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The suite: a JSON array of cases {"name", "op", "attrs", "dtype", "input_shape"}.
    #[arg(required_unless_present_any = ["ops", "irs"])]
    suite: Option<PathBuf>,
    /// Benchmark this op instead of a suite, in the syntax of `lower` (repeatable), e.g.
    /// 'SpaceToDepth {block_size = 2} : tensor<8x3x640x640xf32>'.
    #[arg(long = "op", value_name = "OP", conflicts_with = "suite")]
    ops: Vec<String>,
    /// Benchmark a kernel given as IR text instead (index-map or loop IR, as `lower` and `opt`
    /// print it; repeatable): compare a hand-edited loop nest with what the passes made.
    #[arg(long = "ir", value_name = "FILE", conflicts_with_all = ["suite", "ops"])]
    irs: Vec<PathBuf>,
    /// Threads for the kernel (run_threaded) and for the memcpy reference. Default: the
    /// BENCH_THREADS environment variable, or 1.
    #[arg(long)]
    threads: Option<usize>,
    /// Print one JSON object per case on standard output; the table goes to standard error.
    #[arg(long)]
    json: bool,
    /// Run only the cases whose name contains this string.
    #[arg(long)]
    filter: Option<String>,
    /// Timed (kernel, memcpy) pairs per case, instead of the adaptive count (about 0.5 s of
    /// them, at least 5).
    /// Small kernels are timed in batches of many calls; this counts batches.
    #[arg(long)]
    reps: Option<usize>,
    /// Time all kernel batches, then all memcpy batches, instead of alternating them: each
    /// side then keeps its data in the caches between calls, as harnesses that time other
    /// libraries back to back do. Use it to compare absolute times with such a harness; the
    /// default (interleaved) gives the steadier ratio.
    #[arg(long)]
    back_to_back: bool,
}

pub fn bench(args: BenchArgs) -> Result<ExitCode, String> {
    let threads = thread_count(args.threads)?;
    if args.reps == Some(0) {
        return Err("--reps must be at least 1".into());
    }
    let plan = Plan {
        budget: BUDGET_PER_CASE,
        reps: args.reps,
        order: if args.back_to_back {
            Order::BackToBack
        } else {
            Order::Interleaved
        },
    };
    let cases = selected_cases(&args)?;
    let out = Out { json: args.json };
    let memcpy = Memcpy::new(threads)?;

    out.text(&jit_setup_line()?);
    let mut results = Vec::new();
    let mut failed = 0usize;
    let ir_cases = args
        .irs
        .iter()
        .map(|path| (path.display().to_string(), path));
    let runs = cases
        .iter()
        .map(|case| (case.name.clone(), Subject::Case(case)))
        .chain(ir_cases.map(|(name, path)| (name, Subject::Ir(path))))
        .collect::<Vec<_>>();
    let width = report::case_width(runs.iter().map(|(name, _)| name.as_str()));
    out.text(&report::header(width));
    for (name, subject) in &runs {
        let result = match subject {
            Subject::Case(case) => bench_case(case, threads, plan, &memcpy),
            Subject::Ir(path) => bench_ir(path, threads, plan, &memcpy),
        };
        match result {
            Ok(result) => {
                out.text(&report::row(&result, width));
                if args.json {
                    outln!("{}", report::json_line(&result, threads));
                }
                results.push(result);
            }
            Err(e) => {
                failed += 1;
                eprintln!("{name}: error: {e}");
            }
        }
    }
    for note in report::notes(&results, threads, plan.order) {
        out.text(&note);
    }
    if failed > 0 {
        eprintln!("{failed} of {} case(s) failed", runs.len());
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What one row of the table measures.
enum Subject<'a> {
    /// An op of the suite or of `--op`.
    Case(&'a suite::SuiteCase),
    /// A kernel given as IR text (`--ir`).
    Ir(&'a PathBuf),
}

/// Where the human-readable lines go: standard output, or standard error when standard output
/// carries the JSON lines.
struct Out {
    json: bool,
}

impl Out {
    fn text(&self, line: &str) {
        if self.json {
            eprintln!("{line}");
        } else {
            outln!("{line}");
        }
    }
}

/// `--threads`, else `BENCH_THREADS`, else 1.
fn thread_count(flag: Option<usize>) -> Result<usize, String> {
    let threads = match (flag, std::env::var("BENCH_THREADS")) {
        (Some(n), _) => n,
        (None, Ok(text)) => text
            .trim()
            .parse()
            .map_err(|_| format!("BENCH_THREADS={text:?} is not a number of threads"))?,
        (None, Err(_)) => 1,
    };
    if threads == 0 {
        return Err("the number of threads must be at least 1".into());
    }
    Ok(threads)
}

fn selected_cases(args: &BenchArgs) -> Result<Vec<suite::SuiteCase>, String> {
    let Some(path) = &args.suite else {
        if !args.irs.is_empty() {
            return Ok(Vec::new());
        }
        // Ops from the command line: each is its own case, named by its op and input type.
        return args
            .ops
            .iter()
            .map(|text| {
                let spec = relayout::parse_op_spec(text)
                    .map_err(|e| format!("in the op description {text:?}, {e}"))?;
                Ok(suite::SuiteCase {
                    name: format!("{}:{}", spec.name, spec.input),
                    spec: Ok(suite::CaseSpec {
                        op_name: spec.name,
                        attrs: spec.attrs,
                        input: spec.input,
                    }),
                })
            })
            .collect();
    };
    let mut cases = suite::load(path)?;
    if let Some(filter) = &args.filter {
        cases.retain(|c| c.name.contains(filter.as_str()));
        if cases.is_empty() {
            return Err(format!(
                "no case of {} has a name containing {filter:?}",
                path.display()
            ));
        }
    }
    Ok(cases)
}

/// Compiles a tiny op twice before the suite, with an empty kernel cache both times. The first
/// compile in a process pays for the JIT's lazy set-up (host ISA detection, ...); doing it here
/// keeps that cost out of the first case's compile time, and the line shows how large it is.
fn jit_setup_line() -> Result<String, String> {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: relayout::DataFormat::Nhwc,
    };
    let input = TensorType::new(DType::F32, [1, 2, 2, 1]);
    let warm_up = |op: &Op, input: &TensorType| {
        clear_cache();
        timed_compile(op, input).map_err(|e| format!("the warm-up compile failed: {e}"))
    };
    let (_, first) = warm_up(&op, &input)?;
    let (_, again) = warm_up(&op, &input)?;
    Ok(format!(
        "JIT set-up: the first compile in the process took {:.3} ms, the same op again (cache cleared) {:.3} ms; the set-up is kept out of the cases' compile times",
        first.as_secs_f64() * 1e3,
        again.as_secs_f64() * 1e3
    ))
}

/// Empties relayout's kernel cache, so the next compile is a true miss: without this a case
/// whose loop kernel equals an earlier case's would reuse that machine code and look cheap.
fn clear_cache() {
    relayout::set_cache_capacity(0);
    relayout::set_cache_capacity(relayout::DEFAULT_CAPACITY);
}

/// Compiles with an empty kernel cache this many times per case; the table reports the median
/// and the first. The first runs right after the previous case's kernel, whose data filled the
/// CPU caches, so it also pays for reloading the compiler's code and data; the median is the
/// compile itself. A single sample varies by 2x or more on a shared machine.
pub(crate) const COMPILE_MISSES: usize = 5;

/// Calls `compile` [`COMPILE_MISSES`] times with the kernel cache emptied before each, then
/// once more without emptying it (a hit). Returns the first result and the three times.
fn compile_times<T>(
    mut compile: impl FnMut() -> Result<(T, Duration), String>,
) -> Result<(T, CompileTimes), String> {
    clear_cache();
    let (first_result, first) = compile()?;
    let mut misses = vec![first];
    for _ in 1..COMPILE_MISSES {
        clear_cache();
        misses.push(compile()?.1);
    }
    // The same call again: a hit in the kernel cache (or a full recompile, were there none).
    let (_, hit) = compile()?;
    misses.sort();
    let times = CompileTimes {
        median: misses[misses.len() / 2],
        first,
        hit,
    };
    Ok((first_result, times))
}

fn timed_compile(op: &Op, input: &TensorType) -> Result<(CompiledOp, Duration), String> {
    let start = Instant::now();
    let compiled = relayout::compile(black_box(op), black_box(input));
    let elapsed = start.elapsed();
    Ok((compiled.map_err(|e| e.to_string())?, elapsed))
}

fn bench_case(
    case: &suite::SuiteCase,
    threads: usize,
    plan: Plan,
    memcpy: &Memcpy,
) -> Result<CaseResult, String> {
    let spec = case.spec.as_ref().map_err(Clone::clone)?;
    let op = Op::from_attrs(&spec.op_name, &spec.attrs).map_err(|e| e.to_string())?;
    let (kernel, compile) = compile_times(|| timed_compile(&op, &spec.input))?;
    let in_bytes = byte_size(&spec.input)?;
    let out_bytes = byte_size(kernel.output_type())?;
    let run = |src: &[u8], dst: &mut [u8]| match threads {
        1 => kernel.run(src, dst),
        n => kernel.run_threaded(src, dst, n),
    };
    let dtype = kernel.input_type().dtype;
    let timing = time_case(run, dtype, in_bytes, out_bytes, plan, memcpy)?;
    Ok(CaseResult {
        name: case.name.clone(),
        counts_input: matches!(op, Op::Col2Im { .. }),
        in_bytes: in_bytes as u64,
        out_bytes: out_bytes as u64,
        compile,
        timing,
    })
}

/// `--ir FILE`: the kernel of the IR text (index-map IR through the default pipeline, loop IR
/// as it is), compiled with an empty cache and timed like an op. Its ratio is against memcpy of
/// the output bytes.
fn bench_ir(
    path: &std::path::Path,
    threads: usize,
    plan: Plan,
    memcpy: &Memcpy,
) -> Result<CaseResult, String> {
    use relayout::ir::AnyKernel;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    // The rendered error starts with its own "error: ", which the row already says.
    let kernel = relayout::ir::parse_any(&text).map_err(|e| {
        let rendered = e.render(&text);
        rendered
            .strip_prefix("error: ")
            .map_or(rendered.clone(), str::to_string)
    })?;
    let compile = |kernel: AnyKernel| -> Result<(Box<dyn Runner>, Duration), String> {
        let start = Instant::now();
        let runner: Box<dyn Runner> = match kernel {
            AnyKernel::Index(k) => {
                Box::new(relayout::compile_kernel(k).map_err(|e| e.to_string())?)
            }
            AnyKernel::Loops(k) => Box::new(relayout::compile_loops(k).map_err(|e| e.to_string())?),
        };
        Ok((runner, start.elapsed()))
    };
    let (src_ty, dst_ty) = (kernel.src().clone(), kernel.dst().clone());
    let (runner, compile) = compile_times(|| compile(kernel.clone()))?;
    let in_bytes = byte_size(&src_ty)?;
    let out_bytes = byte_size(&dst_ty)?;
    let run = |src: &[u8], dst: &mut [u8]| runner.run_on(src, dst, threads);
    let timing = time_case(run, src_ty.dtype, in_bytes, out_bytes, plan, memcpy)?;
    Ok(CaseResult {
        name: path.display().to_string(),
        counts_input: false,
        in_bytes: in_bytes as u64,
        out_bytes: out_bytes as u64,
        compile,
        timing,
    })
}

/// A compiled kernel of IR text, run on one thread or several.
trait Runner {
    fn run_on(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), relayout::Error>;
}

impl Runner for relayout::CompiledChain {
    fn run_on(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), relayout::Error> {
        match threads {
            1 => self.run(src, dst),
            n => self.run_threaded(src, dst, n),
        }
    }
}

impl Runner for relayout::CompiledLoops {
    fn run_on(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), relayout::Error> {
        match threads {
            1 => self.run(src, dst),
            n => self.run_threaded(src, dst, n),
        }
    }
}

/// Allocates the four buffers (kernel src and dst, memcpy src and dst, each page-aligned and
/// written in full) and runs the interleaved measurement. The memcpy gets buffers of its own so
/// that, in the steady state, each side finds its data exactly where its previous run left it.
fn time_case(
    run: impl Fn(&[u8], &mut [u8]) -> Result<(), relayout::Error>,
    dtype: DType,
    in_bytes: usize,
    out_bytes: usize,
    plan: Plan,
    memcpy: &Memcpy,
) -> Result<Timing, String> {
    let src = AlignedBuf::with_pattern(in_bytes, dtype, 0)?;
    let mut dst = AlignedBuf::with_pattern(out_bytes, dtype, 1)?;
    let copy_src = AlignedBuf::with_pattern(out_bytes, dtype, 2)?;
    let mut copy_dst = AlignedBuf::with_pattern(out_bytes, dtype, 3)?;
    measure::measure(
        plan,
        || run(black_box(src.as_slice()), black_box(dst.as_mut_slice())).map_err(|e| e.to_string()),
        || {
            memcpy.copy(copy_src.as_slice(), copy_dst.as_mut_slice());
            Ok(())
        },
    )
}

fn byte_size(ty: &TensorType) -> Result<usize, String> {
    let bytes = ty.size_bytes().map_err(|e| e.to_string())?;
    usize::try_from(bytes).map_err(|_| format!("{ty} does not fit in memory"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_default_and_flag() {
        assert_eq!(thread_count(Some(3)), Ok(3));
        assert!(thread_count(Some(0)).is_err());
    }
}
