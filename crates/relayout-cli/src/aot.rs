//! `relayout aot`: one op compiled ahead of time into a relocatable object and a C header.

use relayout::Op;
use std::path::PathBuf;
use std::process::ExitCode;

/// The arguments of `relayout aot`.
#[derive(clap::Args)]
pub struct AotArgs {
    /// The op, e.g. 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>'.
    op: String,
    /// The name of the function the object defines (NAME and NAME_range): a C identifier.
    #[arg(long)]
    symbol: String,
    /// The object file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.o")]
    output: PathBuf,
    /// The C header to write, declaring the functions with the sizes and the op as constants.
    #[arg(long, value_name = "FILE.h")]
    header: Option<PathBuf>,
}

pub fn aot(args: AotArgs) -> Result<ExitCode, String> {
    let spec =
        relayout::parse_op_spec(&args.op).map_err(|e| format!("in the op description, {e}"))?;
    let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(|e| e.to_string())?;
    let object =
        relayout::compile_aot(&op, &spec.input, &args.symbol).map_err(|e| e.to_string())?;
    std::fs::write(&args.output, &object.object)
        .map_err(|e| format!("writing {}: {e}", args.output.display()))?;
    if let Some(header) = &args.header {
        std::fs::write(header, object.header(args.op.trim()))
            .map_err(|e| format!("writing {}: {e}", header.display()))?;
    }
    outln!(
        "{}: {} -> {}, {} and {}_range (outer range 0..{})",
        args.output.display(),
        object.src,
        object.dst,
        object.symbol,
        object.symbol,
        object.outer
    );
    if object.helpers.is_empty() {
        outln!("needs no runtime library: link it alone (cc prog.c FILE.o)");
    } else {
        let names: Vec<&str> = object.helpers.iter().map(|h| h.symbol()).collect();
        outln!(
            "calls {}: link librelayout_capi too (cc prog.c FILE.o -lrelayout_capi)",
            names.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
