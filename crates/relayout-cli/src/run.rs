//! `relayout run`: an op on a NumPy .npy file, the result written as .npy.
//!
//! The op comes from the command-line syntax (whose input type must be the file's, and may be
//! left out: then it is the file's), from a conformance case (whose data is the input when no
//! file is given), or is a kernel given as IR text (index-map IR runs the default pipeline,
//! loop IR is compiled as it is). Without --output the result is printed. Without an input
//! file (and without a case's data), the input is 0, 1, 2, ... in the input type
//! (`counting_input`), printed before the result: a quick look at what an op does.

mod npy;

use relayout::ir::TensorType;
use relayout::{conformance, Op, Split, SplitReport};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The op, e.g. 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>'. The input type
    /// must be the input file's dtype and shape; without it (`'SpaceToDepth {block_size =
    /// 2}'`), it is taken from the file.
    op: Option<String>,
    /// Read the op from a conformance case file instead; its data is the input unless --input
    /// is given.
    #[arg(long, conflicts_with = "op")]
    case: Option<PathBuf>,
    /// Run a kernel given as IR text instead (index-map or loop IR, as `lower` and `opt`
    /// print it; - for standard input), on an --input file of its source type (or on 0, 1,
    /// 2, ...).
    #[arg(long, conflicts_with_all = ["op", "case"])]
    ir: Option<PathBuf>,
    /// Then apply this op to the output (repeatable, in order), all composed into one kernel
    /// as `compile_chain` does; written without a type, e.g. 'DepthToSpace {block_size = 2}'.
    #[arg(long, value_name = "OP", conflicts_with = "ir")]
    then: Vec<String>,
    /// The input .npy file (little-endian, C order). Without it (and without a case's data),
    /// the input is 0, 1, 2, ... in the op's input type, printed before the result.
    #[arg(long)]
    input: Option<PathBuf>,
    /// Where to write the result as .npy; without it, the result is printed.
    #[arg(long)]
    output: Option<PathBuf>,
    /// Print the result (also when it is written to --output).
    #[arg(long)]
    print: bool,
    /// Print the compile time and the kernel's run time.
    #[arg(long)]
    time: bool,
    /// Split the work over this many threads (at least 1). When the kernel's work gives fewer
    /// pieces (short loops, or too little data to pay for a thread), a note on standard error
    /// says how many ran at once.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

pub fn run(args: RunArgs) -> Result<ExitCode, String> {
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let file = args.input.as_deref().map(npy::read).transpose()?;
    if let Some(ir) = &args.ir {
        return run_ir(&args, ir, file);
    }
    let then = crate::commands::read_chained_ops(&args.then)?;
    let (op, ty, case_data) = read_op(&args, file.as_ref().map(|(ty, _)| ty))?;
    if args.output.is_some() {
        // Refuse a type that cannot be written before doing any work.
        npy::descr(ty.dtype)?;
    }
    let data = match (&args.input, file, case_data) {
        (Some(path), Some((file_ty, data)), _) => {
            if file_ty != ty {
                return Err(format!(
                    "{} holds {file_ty} ({}), but the op takes {ty} ({})",
                    path.display(),
                    file_ty.dtype.name(),
                    ty.dtype.name()
                ));
            }
            Some(data)
        }
        (_, _, Some(data)) => Some(data),
        _ => match &args.case {
            Some(case) => {
                return Err(format!(
                    "{} has no input data: give --input FILE",
                    case.display()
                ))
            }
            // Counted up once the op has compiled: an invalid op is refused first.
            None => None,
        },
    };
    let start = std::time::Instant::now();
    let threads = Split::Threads(args.threads);
    let (out_ty, compiled): (TensorType, Runner) = if then.is_empty() {
        let c = relayout::compile(&op, &ty).map_err(|e| e.to_string())?;
        (
            c.output_type().clone(),
            Box::new(move |s: &[u8], d: &mut [u8]| c.run_split(s, d, threads)),
        )
    } else {
        let ops: Vec<Op> = std::iter::once(op).chain(then).collect();
        let c = relayout::compile_chain(&ops, &ty).map_err(|e| e.to_string())?;
        (
            c.output_type().clone(),
            Box::new(move |s: &[u8], d: &mut [u8]| c.run_split(s, d, threads)),
        )
    };
    let compile_time = start.elapsed();
    let data = match data {
        Some(data) => data,
        None => counting_input(&ty)?,
    };
    let mut out = zeroed(&out_ty, "output")?;
    let start = std::time::Instant::now();
    let split = compiled(&data, &mut out).map_err(|e| e.to_string())?;
    let run_time = start.elapsed();
    report(&args, &out_ty, &out, compile_time, run_time, &split)
}

/// The input 0, 1, 2, ... of type `ty` (printed on standard output, as the result will be),
/// for a run without an input file: element `i` is `i` in the element type, counting modulo
/// the first integer the type cannot hold exactly (256 for 8-bit integers and bfloat16,
/// 2048 for float16, 2^24 for float32), so that a small input shows every element's origin;
/// bool alternates false and true, and a complex element is `(i, 0)`.
fn counting_input(ty: &TensorType) -> Result<Vec<u8>, String> {
    use relayout::ir::{DType, Scalar};
    let mut data = zeroed(ty, "input")?;
    let size = ty.dtype.size() as usize;
    // f16 and bf16 values from a table of one period (their conversions are the IR's).
    let table = |dtype: DType, period: u64| -> Vec<[u8; 2]> {
        (0..period)
            .map(|k| {
                let bits = Scalar::from_f64(dtype, k as f64).map(|v| v.to_le_bytes(dtype));
                bits.and_then(|b| b.try_into().ok()).unwrap_or_default()
            })
            .collect()
    };
    let half = match ty.dtype {
        DType::F16 => table(DType::F16, 1 << 11),
        DType::BF16 => table(DType::BF16, 1 << 8),
        _ => Vec::new(),
    };
    for (i, element) in data.chunks_exact_mut(size).enumerate() {
        let i = i as u64;
        // Exact: `i % period` is an integer the type holds. A complex element's imaginary
        // part stays zero; integers wrap (the low bytes of `i`).
        match ty.dtype {
            DType::F16 | DType::BF16 => element.copy_from_slice(&half[i as usize % half.len()]),
            DType::F32 | DType::C64 => {
                element[..4].copy_from_slice(&((i % (1 << 24)) as f32).to_le_bytes())
            }
            DType::F64 | DType::C128 => {
                element[..8].copy_from_slice(&((i % (1 << 53)) as f64).to_le_bytes())
            }
            DType::Bool => element[0] = (i % 2) as u8,
            _ => element.copy_from_slice(&i.to_le_bytes()[..size]),
        }
    }
    outln!(
        "input {ty} (0, 1, 2, ...: no --input given):\n{}",
        relayout::format_tensor(ty, &data, 256)
    );
    Ok(data)
}

/// A zeroed buffer for the `what` (input or output) of type `ty`, or why it cannot be held
/// in memory.
fn zeroed(ty: &TensorType, what: &str) -> Result<Vec<u8>, String> {
    let len = ty
        .size_bytes()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("the {what} {ty} is too large to hold in memory"))?;
    Ok(vec![0u8; len])
}

/// Writes, prints and times the result as the flags say.
fn report(
    args: &RunArgs,
    out_ty: &TensorType,
    out: &[u8],
    compile_time: std::time::Duration,
    run_time: std::time::Duration,
    split: &SplitReport,
) -> Result<ExitCode, String> {
    // The most pieces that ran at once: fewer than the threads asked means some sat idle.
    let used = split.max_pieces().min(args.threads);
    if used < args.threads {
        eprintln!(
            "note: {} threads asked, but the work gave at most {used} piece{} to run at once",
            args.threads,
            if used == 1 { "" } else { "s" }
        );
    }
    if let Some(path) = &args.output {
        npy::write(path, out_ty, out)?;
        outln!("{}: {out_ty}", path.display());
    }
    if args.print || args.output.is_none() {
        outln!("{out_ty}:\n{}", relayout::format_tensor(out_ty, out, 256));
    }
    if args.time {
        let threads = if used < args.threads {
            format!("{used} of {} threads used", args.threads)
        } else {
            format!("{used} thread{}", if used == 1 { "" } else { "s" })
        };
        outln!(
            "compile {}, run {} (one call, {threads}, cold caches)",
            duration(compile_time),
            duration(run_time),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A compiled kernel's run on the source bytes into the destination bytes.
type Runner = Box<dyn Fn(&[u8], &mut [u8]) -> Result<SplitReport, relayout::Error>>;

/// `run --ir FILE`: compiles the kernel of the IR text (index-map IR through the default
/// pipeline, loop IR as it is) and runs it on the --input file, which must hold its source type.
fn run_ir(
    args: &RunArgs,
    ir: &std::path::Path,
    file: Option<(TensorType, Vec<u8>)>,
) -> Result<ExitCode, String> {
    use relayout::ir::AnyKernel;
    let text = if ir == std::path::Path::new("-") {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| format!("cannot read standard input: {e}"))?
    } else {
        std::fs::read_to_string(ir).map_err(|e| format!("cannot read {}: {e}", ir.display()))?
    };
    let kernel = relayout::ir::parse_any(&text)
        .map_err(|e| format!("{}: {}", ir.display(), e.render(&text)))?;
    let src = kernel.src().clone();
    if args.output.is_some() {
        npy::descr(src.dtype)?;
    }
    let data = match (&args.input, file) {
        (Some(path), Some((file_ty, data))) => {
            if file_ty != src {
                return Err(format!(
                    "{} holds {file_ty}, but the kernel in {} reads {src}",
                    path.display(),
                    ir.display()
                ));
            }
            Some(data)
        }
        // Counted up once the kernel has compiled.
        _ => None,
    };
    let in_ir = |e: relayout::Error| format!("{}: {e}", ir.display());
    let start = std::time::Instant::now();
    let (out_ty, compiled): (TensorType, Runner) = match kernel {
        AnyKernel::Index(k) => {
            let c = relayout::compile_kernel(k).map_err(in_ir)?;
            let threads = args.threads;
            (
                c.output_type().clone(),
                Box::new(move |s: &[u8], d: &mut [u8]| c.run_split(s, d, Split::Threads(threads))),
            )
        }
        AnyKernel::Loops(k) => {
            let c = relayout::compile_loops(k).map_err(in_ir)?;
            let threads = args.threads;
            (
                c.output_type().clone(),
                Box::new(move |s: &[u8], d: &mut [u8]| c.run_split(s, d, Split::Threads(threads))),
            )
        }
    };
    let compile_time = start.elapsed();
    let data = match data {
        Some(data) => data,
        None => counting_input(&src)?,
    };
    let mut out = zeroed(&out_ty, "output")?;
    let start = std::time::Instant::now();
    let split = compiled(&data, &mut out).map_err(|e| e.to_string())?;
    let run_time = start.elapsed();
    report(args, &out_ty, &out, compile_time, run_time, &split)
}

/// A duration in the unit that reads best: ns, us, ms or s.
fn duration(d: std::time::Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// The op, its input type, and the case's input data when the op came from a case. An op
/// description without its input type takes `file_type`, the type of the --input file.
fn read_op(
    args: &RunArgs,
    file_type: Option<&TensorType>,
) -> Result<(Op, TensorType, Option<Vec<u8>>), String> {
    match (&args.op, &args.case) {
        (Some(text), None) => {
            let typed;
            let text = match file_type {
                Some(ty) if !text.contains(':') => {
                    typed = format!("{text} : {ty}");
                    &typed
                }
                None if !text.contains(':') => {
                    return Err(format!(
                        "give the op's input type after a colon (`{} : tensor<DIMSxTYPE>`, such \
                         as tensor<1x4x4x8xf32>), or an --input file to take it from",
                        text.trim()
                    ))
                }
                _ => text,
            };
            let spec =
                relayout::parse_op_spec(text).map_err(|e| format!("in the op description, {e}"))?;
            let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(|e| e.to_string())?;
            Ok((op, spec.input, None))
        }
        (None, Some(path)) => {
            let case = conformance::load_case(path).map_err(|e| e.to_string())?;
            let op = Op::from_attrs(&case.op_name, &case.attrs).map_err(|e| e.to_string())?;
            Ok((op, case.input, case.input_bytes))
        }
        _ => Err(
            "give an op description, --case FILE or --ir FILE (see `relayout run --help`)".into(),
        ),
    }
}
