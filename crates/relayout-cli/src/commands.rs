//! The subcommands. Each returns the process exit code, or a one-line error message.

use crate::{Emit, PrintFlags};
use relayout::ir::TensorType;
use relayout::{conformance, Op};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Reads the op from the command line syntax or a conformance case file.
fn read_op(op: Option<String>, case: Option<PathBuf>) -> Result<(Op, TensorType), String> {
    match (op, case) {
        (Some(text), None) => {
            let spec = relayout::parse_op_spec(&text)
                .map_err(|e| format!("in the op description, {e}"))?;
            let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(|e| e.to_string())?;
            Ok((op, spec.input))
        }
        (None, Some(path)) => {
            let case = conformance::load_case(&path).map_err(|e| e.to_string())?;
            let op = Op::from_attrs(&case.op_name, &case.attrs).map_err(|e| e.to_string())?;
            Ok((op, case.input))
        }
        _ => Err(
            "give an op description, --case FILE or --ir FILE (see `relayout lower --help`)".into(),
        ),
    }
}

/// Where `lower` starts: an op description, a conformance case, or a file of IR text; then
/// the ops of a chain after the first (`--then`), without their types.
pub struct Source {
    pub op: Option<String>,
    pub case: Option<PathBuf>,
    pub ir: Option<PathBuf>,
    pub then: Vec<String>,
}

/// The ops after the first of a chain, from their `--then` texts.
pub(crate) fn read_chained_ops(texts: &[String]) -> Result<Vec<Op>, String> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let (name, attrs) = relayout::parse_chained_op(text)
                .map_err(|e| format!("in --then op {} ('{text}'), {e}", i + 1))?;
            Op::from_attrs(&name, &attrs).map_err(|e| format!("in --then op {}, {e}", i + 1))
        })
        .collect()
}

/// The stages `lower` has for what it was given: IR text starts at its own level.
struct LowerStages {
    lowered: Option<relayout::ir::Kernel>,
    optimized: Option<relayout::ir::Kernel>,
    loops: Option<relayout::ir::LoopKernel>,
}

/// Runs `pipeline` on `start`, keeping the last index-map IR and the loop IR it reaches.
fn run_pipeline(
    start: relayout::ir::AnyKernel,
    pipeline: relayout::passes::Pipeline,
) -> Result<LowerStages, String> {
    use relayout::ir::AnyKernel;
    let lowered = match &start {
        AnyKernel::Index(k) => Some(k.clone()),
        AnyKernel::Loops(_) => None,
    };
    let mut optimized = lowered.clone();
    let run = relayout::passes::PassManager::new(pipeline)
        .verify_each(true)
        .run_with(start, &mut |_, ir| {
            if let AnyKernel::Index(k) = ir {
                optimized = Some(k.clone());
            }
        })
        .map_err(|e| e.to_string())?;
    let loops = match run {
        AnyKernel::Loops(k) => Some(k),
        AnyKernel::Index(_) => None,
    };
    Ok(LowerStages {
        lowered,
        optimized,
        loops,
    })
}

pub fn lower(
    source: Source,
    passes: Option<&str>,
    emit: &[Emit],
    print: &PrintFlags,
) -> Result<ExitCode, String> {
    if print.print_pipeline {
        // On loop IR, `lower` runs no pass unless --passes names some: an empty line.
        let loop_ir = match (&source.ir, passes) {
            (Some(file), None) => is_loop_ir(file)?,
            _ => false,
        };
        let pipeline = if loop_ir {
            relayout::passes::Pipeline::parse("").map_err(|e| e.to_string())?
        } else {
            chosen_pipeline(passes)?
        };
        outln!("{pipeline}");
        return Ok(ExitCode::SUCCESS);
    }
    if emit.contains(&Emit::Asm) && !relayout::HAS_DISASSEMBLER {
        // Refused before any work, with the command that gives a build that can do it.
        return Err(
            "--emit asm needs the disassembler, which this build leaves out: rebuild with \
             `cargo run --release -p relayout-cli --features disas -- lower ... --emit asm` \
             (needs a C compiler), or use --emit vcode for Cranelift's listing of the same \
             instructions"
                .into(),
        );
    }
    let given = passes
        .map(relayout::passes::Pipeline::parse)
        .transpose()
        .map_err(|e| e.to_string())?;
    if print.timings && source.ir.is_some() {
        return Err(
            "--timings times the compile of an op: give an op or --case, or time the passes \
             on IR text with `relayout opt FILE --timings`"
                .into(),
        );
    }
    if print.timings && !source.then.is_empty() {
        return Err("--timings times the compile of one op, not of a chain (--then)".into());
    }
    let then = read_chained_ops(&source.then)?;
    // Cold compiles of their own (the kernel cache neither read nor filled), timed before
    // anything is printed. The second is reported: the first pays the process's one-time
    // set-up of the JIT (host detection, Cranelift's lazy tables), which a program that
    // compiles many kernels pays once.
    let timings = if print.timings {
        let (op, input) = read_op(source.op.clone(), source.case.clone())?;
        relayout::compile_timed(&op, &input).map_err(|e| e.to_string())?;
        let (_, timings) = relayout::compile_timed(&op, &input).map_err(|e| e.to_string())?;
        Some(timings)
    } else {
        None
    };
    // Where the pipeline starts: the op's lowered IR (named by the op, for the dumps), or IR
    // text at its own level.
    let (start, op_name, file) = match source.ir {
        Some(file) => {
            let text = read_text(&file)?;
            let ir = relayout::ir::parse_any(&text)
                .map_err(|e| format!("{}: {}", file.display(), e.render(&text)))?;
            (ir, None, Some(file))
        }
        None if then.is_empty() => {
            let (op, input) = read_op(source.op, source.case)?;
            let lowered = op.lower(&input).map_err(|e| e.to_string())?;
            (
                relayout::ir::AnyKernel::Index(lowered),
                Some(op.name().to_string()),
                None,
            )
        }
        None => {
            let (first, input) = read_op(source.op, source.case)?;
            let ops: Vec<Op> = std::iter::once(first).chain(then).collect();
            let composed = relayout::compose_chain(&ops, &input).map_err(|e| e.to_string())?;
            let names: Vec<&str> = ops.iter().map(Op::name).collect();
            (
                relayout::ir::AnyKernel::Index(composed),
                Some(format!("chain {}", names.join(" then "))),
                None,
            )
        }
    };
    let in_file = |e: String| match &file {
        Some(f) => format!("{}: {e}", f.display()),
        None => e,
    };
    let pipeline = match (&start, given) {
        (_, Some(p)) => p,
        (relayout::ir::AnyKernel::Index(_), None) => relayout::passes::default_pipeline(),
        (relayout::ir::AnyKernel::Loops(_), None) => {
            relayout::passes::Pipeline::parse("").map_err(|e| e.to_string())?
        }
    };
    let selection = print.selection();
    let dumping = !selection.is_none();
    if dumping {
        print_dumps(&start, op_name.as_deref(), &pipeline, &selection).map_err(in_file)?;
        if emit.is_empty() {
            if let Some(t) = &timings {
                eprint!("{t}");
            }
            return Ok(ExitCode::SUCCESS);
        }
    }
    let stages = run_pipeline(start, pipeline).map_err(in_file)?;
    let all = [Emit::Lowered, Emit::Index, Emit::Loop, Emit::Clif];
    // Headers separate the stages when there are several, and the stages from the dumps.
    let (wanted, headers) = if emit.is_empty() {
        (&all[..], true)
    } else {
        (emit, emit.len() > 1 || dumping)
    };
    for &stage in wanted {
        let (title, text) = stage_text(&stages, stage, emit.is_empty())?;
        let Some(text) = text else { continue };
        if headers {
            outln!("// ----- {title} ----- //\n{text}");
        } else {
            out!("{text}");
        }
    }
    if let Some(t) = &timings {
        eprint!("{t}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints the IR dumps `selection` picks from a run of `pipeline` on `start`, after the
/// lowered IR with a `Lowering` header when `start` is an op's lowering (`op_name`) and every
/// pass or every change is printed. When a pass fails, the dumps up to it are printed and its
/// error returned.
fn print_dumps(
    start: &relayout::ir::AnyKernel,
    op_name: Option<&str>,
    pipeline: &relayout::passes::Pipeline,
    selection: &relayout::PrintAfter,
) -> Result<(), String> {
    use relayout::ir::AnyKernel;
    let text = match start {
        AnyKernel::Index(k) => k.to_string(),
        AnyKernel::Loops(k) => k.to_string(),
    };
    // The lowering is not a pass --print-after can name: its dump comes with every pass's
    // (--print-after-all) or with every change (--print-after-change), as it makes the IR.
    if let Some(name) = op_name.filter(|_| selection.all || selection.changed) {
        outln!("// -----// IR Dump After Lowering ({name}) //----- //\n{text}");
    }
    // The same run as `opt` on the printed IR (printing and parsing round-trip), so that
    // `lower` and `opt` select and print dumps alike.
    match relayout::opt_with(&text, Some(&pipeline.to_string()), selection) {
        Ok(dumps) => {
            out!("{dumps}");
            Ok(())
        }
        Err(e) => {
            out!("{}", e.output);
            Err(e.error.to_string())
        }
    }
}

/// The header title and the text of one stage; `None` text when the input does not have the
/// stage and `optional` (the default listing skips it), an error otherwise.
fn stage_text(
    stages: &LowerStages,
    stage: Emit,
    optional: bool,
) -> Result<(&'static str, Option<String>), String> {
    let missing = |what: &str| -> Result<(&'static str, Option<String>), String> {
        if optional {
            Ok(("", None))
        } else {
            Err(format!(
                "the input has no {what}: loop IR has no index-map stages, and a pipeline that \
                 stops before `linearize` has no loop IR"
            ))
        }
    };
    let loops = |f: &dyn Fn(&relayout::ir::LoopKernel) -> Result<String, relayout::Error>,
                 title: &'static str| {
        match &stages.loops {
            Some(l) => Ok((title, Some(f(l).map_err(|e| e.to_string())?))),
            None => missing("loop IR"),
        }
    };
    match stage {
        Emit::Lowered => match &stages.lowered {
            Some(k) => Ok(("lowered index-map IR", Some(k.to_string()))),
            None => missing("index-map IR"),
        },
        Emit::Index => match &stages.optimized {
            Some(k) => Ok(("index-map IR after simplification", Some(k.to_string()))),
            None => missing("index-map IR"),
        },
        Emit::Loop => loops(&|l| Ok(l.to_string()), "loop IR"),
        Emit::Clif => loops(&|l| relayout::clif_text(l), "Cranelift IR"),
        Emit::Vcode => loops(&|l| relayout::vcode_text(l), "machine code (VCode)"),
        Emit::Asm => loops(&|l| relayout::asm_text(l), "machine code (disassembly)"),
    }
}

/// The pipeline `--passes` names, or the default one.
fn chosen_pipeline(passes: Option<&str>) -> Result<relayout::passes::Pipeline, String> {
    match passes {
        Some(p) => relayout::passes::Pipeline::parse(p).map_err(|e| e.to_string()),
        None => Ok(relayout::passes::default_pipeline()),
    }
}

/// Whether `file` (or standard input, for `-`) holds loop IR rather than index-map IR.
fn is_loop_ir(file: &Path) -> Result<bool, String> {
    let text = read_text(file)?;
    let ir = relayout::ir::parse_any(&text)
        .map_err(|e| format!("{}: {}", file.display(), e.render(&text)))?;
    Ok(matches!(ir, relayout::ir::AnyKernel::Loops(_)))
}

/// The text of `file`, or of standard input for `-`.
fn read_text(file: &Path) -> Result<String, String> {
    if file == Path::new("-") {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| format!("cannot read standard input: {e}"))
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
    }
}

pub fn demo() -> Result<ExitCode, String> {
    // The third worked example of TensorFlow's SpaceToDepth page.
    let text = "SpaceToDepth {block_size = 2, data_format = \"NHWC\"} : tensor<1x4x4x1xf32>";
    let spec = relayout::parse_op_spec(text).map_err(|e| e.to_string())?;
    let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(|e| e.to_string())?;
    outln!("op: {text}\n");
    let start = std::time::Instant::now();
    let kernel = relayout::compile(&op, &spec.input).map_err(|e| e.to_string())?;
    let compile_time = start.elapsed();
    let stages = kernel.stages();
    outln!("// ----- lowered index-map IR ----- //\n{}", stages.lowered);
    outln!(
        "// ----- index-map IR after simplification ----- //\n{}",
        stages.optimized
    );
    outln!("// ----- loop IR ----- //\n{}", stages.loops);
    outln!(
        "// ----- Cranelift IR ----- //\n{}",
        relayout::clif_text(&stages.loops).map_err(|e| e.to_string())?
    );
    let input: Vec<f32> = [1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16]
        .map(|v| v as f32)
        .to_vec();
    let mut output = vec![0f32; input.len()];
    kernel
        .run_typed(&input, &mut output)
        .map_err(|e| e.to_string())?;
    let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    outln!(
        "input {}:\n{}\n",
        spec.input,
        relayout::format_tensor(&spec.input, &bytes(&input), 64)
    );
    outln!(
        "output {}:\n{}\n",
        kernel.output_type(),
        relayout::format_tensor(kernel.output_type(), &bytes(&output), 64)
    );
    outln!(
        "compiled in {:.3} ms (op -> callable, including the first-use set-up of the JIT)",
        compile_time.as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

pub fn opt(
    file: Option<&Path>,
    passes: Option<&str>,
    print: &PrintFlags,
) -> Result<ExitCode, String> {
    if print.print_pipeline {
        // Without --passes, what runs depends on the file's level: on loop IR, the default
        // pipeline's loop passes.
        let pipeline = match (file, passes) {
            (Some(file), None) if is_loop_ir(file)? => relayout::passes::default_loop_pipeline(),
            _ => chosen_pipeline(passes)?,
        };
        outln!("{pipeline}");
        return Ok(ExitCode::SUCCESS);
    }
    let file = file.ok_or("give a file of IR text, or - for standard input")?;
    let text = read_text(file)?;
    let (out, timings) = relayout::opt_timed(&text, passes, &print.selection())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    out!("{out}");
    if print.timings {
        eprint!("{timings}");
    }
    Ok(ExitCode::SUCCESS)
}

pub fn conformance(dirs: &[PathBuf], verbose: bool) -> Result<ExitCode, String> {
    let mut passed = 0usize;
    let mut failed = 0usize;
    // Per op: (passed, failed), for the verbose summary.
    let mut per_op: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    for dir in dirs {
        if !dir.exists() {
            return Err(format!("{} does not exist", dir.display()));
        }
        let cases = conformance::find_cases(dir);
        if cases.is_empty() {
            return Err(format!(
                "{} holds no conformance case (no .json file under it)",
                dir.display()
            ));
        }
        for path in cases {
            let stem = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            let (op, outcome) = match conformance::load_case(&path) {
                Ok(case) => (
                    case.op_name.clone(),
                    conformance::run_case(&case, conformance::RunOptions::default()).map(drop),
                ),
                Err(e) => ("(unreadable)".to_string(), Err(e.to_string())),
            };
            let counts = per_op.entry(op).or_default();
            match outcome {
                Ok(()) => {
                    passed += 1;
                    counts.0 += 1;
                    if verbose {
                        outln!("ok   {stem}");
                    }
                }
                Err(why) => {
                    failed += 1;
                    counts.1 += 1;
                    outln!("FAIL {stem}: {why}");
                }
            }
        }
    }
    if verbose {
        for (op, (p, f)) in &per_op {
            outln!("{op}: {p} passed, {f} failed");
        }
    }
    outln!("{passed} passed, {failed} failed");
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `relayout explain OP [--svg FILE]`: the picture of what the op does, as SVG.
pub fn explain(op: &str, svg: Option<&Path>) -> Result<ExitCode, String> {
    let (op, input) = read_op(Some(op.to_string()), None)?;
    let picture = relayout::explain_svg(&[op], &input).map_err(|e| e.to_string())?;
    match svg {
        Some(path) => {
            std::fs::write(path, &picture)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => out!("{picture}"),
    }
    Ok(ExitCode::SUCCESS)
}
