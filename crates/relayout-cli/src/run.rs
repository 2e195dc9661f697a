//! `relayout run`: an op on a NumPy .npy file, the result written as .npy.
//!
//! The op comes from the command-line syntax (whose input type must be the file's, and may be
//! left out: then it is the file's) or from a conformance case (whose data is the input when no
//! file is given). Without --output the result is printed.

mod npy;

use relayout::ir::TensorType;
use relayout::{conformance, Op};
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
    /// The input .npy file (little-endian, C order).
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
    /// Split the work over this many threads (at least 1).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

pub fn run(args: RunArgs) -> Result<ExitCode, String> {
    if args.threads == 0 {
        return Err("--threads must be at least 1".into());
    }
    let file = args.input.as_deref().map(npy::read).transpose()?;
    let (op, ty, case_data) = read_op(&args, file.as_ref().map(|(ty, _)| ty))?;
    // Refuse a type that cannot be written before doing any work.
    npy::descr(ty.dtype)?;
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
            data
        }
        (_, _, Some(data)) => data,
        _ => {
            return Err(match &args.case {
                Some(case) => format!("{} has no input data: give --input FILE", case.display()),
                None => "give the input as --input FILE.npy".into(),
            })
        }
    };
    let start = std::time::Instant::now();
    let kernel = relayout::compile(&op, &ty).map_err(|e| e.to_string())?;
    let compile_time = start.elapsed();
    let out_ty = kernel.output_type().clone();
    let len = out_ty
        .size_bytes()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("the output {out_ty} is too large to hold in memory"))?;
    let mut out = vec![0u8; len];
    let start = std::time::Instant::now();
    kernel
        .run_threaded(&data, &mut out, args.threads)
        .map_err(|e| e.to_string())?;
    let run_time = start.elapsed();
    if let Some(path) = &args.output {
        npy::write(path, &out_ty, &out)?;
        println!("{}: {out_ty}", path.display());
    }
    if args.print || args.output.is_none() {
        println!("{out_ty}:\n{}", relayout::format_tensor(&out_ty, &out, 256));
    }
    if args.time {
        println!(
            "compile {}, run {} (one call, {} thread{}, cold caches)",
            duration(compile_time),
            duration(run_time),
            args.threads,
            if args.threads == 1 { "" } else { "s" }
        );
    }
    Ok(ExitCode::SUCCESS)
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
        _ => Err("give an op description or --case FILE (see `relayout run --help`)".into()),
    }
}
