//! `relayout run`: an op on a NumPy .npy file, the result written as .npy.
//!
//! The op comes from the command-line syntax (whose input type must be the file's) or from a
//! conformance case (whose data is the input when no file is given).

mod npy;

use relayout::ir::TensorType;
use relayout::{conformance, Op};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The op with its input type, which must be the input file's dtype and shape, e.g.
    /// 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>'.
    op: Option<String>,
    /// Read the op from a conformance case file instead; its data is the input unless --input
    /// is given.
    #[arg(long, conflicts_with = "op")]
    case: Option<PathBuf>,
    /// The input .npy file (little-endian, C order).
    #[arg(long)]
    input: Option<PathBuf>,
    /// Where to write the result as .npy.
    #[arg(long)]
    output: PathBuf,
    /// Split the work over this many threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

pub fn run(args: RunArgs) -> Result<ExitCode, String> {
    let (op, ty, case_data) = read_op(&args)?;
    // Refuse a type that cannot be written before doing any work.
    npy::descr(ty.dtype)?;
    let data = match (&args.input, case_data) {
        (Some(path), _) => {
            let (file_ty, data) = npy::read(path)?;
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
        (None, Some(data)) => data,
        (None, None) => {
            return Err(match &args.case {
                Some(case) => format!("{} has no input data: give --input FILE", case.display()),
                None => "give the input as --input FILE.npy".into(),
            })
        }
    };
    let kernel = relayout::compile(&op, &ty).map_err(|e| e.to_string())?;
    let out_ty = kernel.output_type().clone();
    let len = out_ty
        .size_bytes()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("the output {out_ty} is too large to hold in memory"))?;
    let mut out = vec![0u8; len];
    kernel
        .run_threaded(&data, &mut out, args.threads.max(1))
        .map_err(|e| e.to_string())?;
    npy::write(&args.output, &out_ty, &out)?;
    println!("{}: {out_ty}", args.output.display());
    Ok(ExitCode::SUCCESS)
}

/// The op, its input type, and the case's input data when the op came from a case.
fn read_op(args: &RunArgs) -> Result<(Op, TensorType, Option<Vec<u8>>), String> {
    match (&args.op, &args.case) {
        (Some(text), None) => {
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
