//! The mlir-opt-style pass debugging flags of `lower` and `opt`: --print-after-change,
//! --print-after PASS (repeatable), --print-pipeline, and the pass table of `opt --help`.

mod support;
use support::relayout_with_stdin as relayout;

use std::process::Output;

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The passes named in the `IR Dump After` headers of `text`, in order.
fn dumped(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("// -----// IR Dump After "))
        .filter_map(|l| l.split(" (").nth(1))
        .map(|l| l.split(')').next().unwrap().to_string())
        .collect()
}

const S2D: &str = "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>";

#[test]
fn print_after_change_skips_passes_that_changed_nothing() {
    let all = stdout(&relayout(&["lower", S2D, "--print-after-all"], ""));
    let changed = stdout(&relayout(&["lower", S2D, "--print-after-change"], ""));
    let (all, changed) = (dumped(&all), dumped(&changed));
    let pipeline = stdout(&relayout(&["opt", "--print-pipeline"], ""));
    // Every pass of the pipeline (and the lowering) in the full dump; fewer, in the same order,
    // when only changes are printed: this op leaves guards, unit dims and fusion untouched.
    assert_eq!(all.len(), pipeline.trim().split(',').count() + 1, "{all:?}");
    assert!(changed.len() < all.len(), "{changed:?}");
    assert!(changed.iter().all(|p| all.contains(p)));
    for unchanged in ["split-guards", "fuse-nests"] {
        assert!(!changed.iter().any(|p| p == unchanged), "{changed:?}");
    }
    assert!(changed.iter().any(|p| p == "linearize"), "{changed:?}");
}

#[test]
fn print_after_names_passes() {
    let out = stdout(&relayout(
        &[
            "lower",
            S2D,
            "--print-after",
            "linearize",
            "--print-after",
            "coalesce",
        ],
        "",
    ));
    // Only the named passes, as mlir-opt: linearize once, coalesce twice (it runs twice), and
    // no dump of the lowering, which was not named.
    assert_eq!(dumped(&out), ["linearize", "coalesce", "coalesce"], "{out}");
    assert!(!out.contains("IR Dump After Lowering"), "{out}");
    let err = relayout(&["lower", S2D, "--print-after", "no-such-pass"], "");
    assert_eq!(err.status.code(), Some(2));
    let err = String::from_utf8_lossy(&err.stderr);
    assert!(
        err.contains("no-such-pass") && err.contains("fuse-nests"),
        "{err}"
    );
}

#[test]
fn opt_prints_only_the_selected_dumps() {
    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    let out = stdout(&relayout(
        &["opt", "-", "--print-after", "split-dims"],
        &lowered,
    ));
    assert_eq!(dumped(&out), ["split-dims"], "{out}");
    assert!(out.contains("kernel @"), "{out}");
}

#[test]
fn print_pipeline_prints_what_opt_passes_accepts() {
    let pipeline = stdout(&relayout(&["opt", "--print-pipeline"], ""));
    let pipeline = pipeline.trim();
    assert!(
        pipeline.starts_with("canonicalize,")
            && pipeline.ends_with(",fuse-nests,reroll,long-runs-first,group-alike")
    );
    // The printed string is accepted back, and a given --passes prints as itself.
    let again = stdout(&relayout(
        &["opt", "--print-pipeline", "--passes", pipeline],
        "",
    ));
    assert_eq!(again.trim(), pipeline);
    let lower = stdout(&relayout(&["lower", "--print-pipeline"], ""));
    assert_eq!(lower.trim(), pipeline);
}

#[test]
fn opt_help_lists_every_pass_with_its_level() {
    let help = stdout(&relayout(&["opt", "--help"], ""));
    for (name, level) in [
        ("canonicalize", "index-map"),
        ("peel-dims", "index-map"),
        ("linearize", "index-map -> loop"),
        ("coalesce", "loop"),
        ("fuse-nests", "loop"),
    ] {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no line for {name} in\n{help}"));
        assert!(line.contains(level), "{line}");
    }
}

#[test]
fn a_pass_given_the_wrong_level_says_which_it_needs() {
    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    let out = relayout(&["opt", "-", "--passes", "coalesce"], &lowered);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("coalesce") && err.contains("loop IR") && err.contains("index-map IR"),
        "{err}"
    );
}

#[test]
fn ir_text_goes_all_the_way_to_machine_code() {
    // Loop IR as `lower --emit loop` prints it, fed back through `lower --ir -`.
    let loops = stdout(&relayout(&["lower", S2D, "--emit", "loop"], ""));
    let out = stdout(&relayout(
        &["lower", "--ir", "-", "--emit", "loop,clif,vcode"],
        &loops,
    ));
    assert!(out.contains("// ----- loop IR ----- //"), "{out}");
    assert!(out.contains("// ----- Cranelift IR ----- //"), "{out}");
    assert!(
        out.contains("// ----- machine code (VCode) ----- //"),
        "{out}"
    );
    assert!(out.contains(loops.trim_end()), "{out}");
    // Index-map IR goes through the default pipeline, or the one given.
    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    let out = stdout(&relayout(
        &["lower", "--ir", "-", "--emit", "loop"],
        &lowered,
    ));
    assert_eq!(out, loops);
    // Loop IR has no index-map stage to print.
    let out = relayout(&["lower", "--ir", "-", "--emit", "lowered"], &loops);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no index-map IR"));
}

#[test]
fn lower_runs_a_given_pipeline() {
    // Without the loop passes, linearize's loop IR is printed as it comes out.
    let out = stdout(&relayout(
        &[
            "lower",
            S2D,
            "--passes",
            "canonicalize,split-dims,linearize",
            "--emit",
            "loop",
        ],
        "",
    ));
    let default = stdout(&relayout(&["lower", S2D, "--emit", "loop"], ""));
    assert!(out.starts_with("loops @"), "{out}");
    assert_ne!(out, default, "coalesce and interchange change this kernel");
    // A pipeline that stops before linearize has no loop IR.
    let err = relayout(
        &["lower", S2D, "--passes", "canonicalize", "--emit", "loop"],
        "",
    );
    assert_eq!(err.status.code(), Some(2));
}

#[test]
fn dumps_combine_with_emit_and_a_given_pipeline() {
    // The dumps first, then the emitted stage under its header: --emit is not ignored.
    let out = stdout(&relayout(
        &["lower", S2D, "--print-after-all", "--emit", "loop"],
        "",
    ));
    let dumps = dumped(&out);
    assert_eq!(dumps.first().map(String::as_str), Some("SpaceToDepth"));
    assert_eq!(dumps.last().map(String::as_str), Some("group-alike"));
    let loops = stdout(&relayout(&["lower", S2D, "--emit", "loop"], ""));
    let tail = out
        .split("// ----- loop IR ----- //\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no loop IR after the dumps:\n{out}"));
    assert_eq!(tail.trim_end(), loops.trim_end());
    // With --passes, the dumps are of that pipeline.
    let out = stdout(&relayout(
        &[
            "lower",
            S2D,
            "--passes",
            "canonicalize,split-dims,linearize",
            "--print-after-all",
        ],
        "",
    ));
    assert_eq!(
        dumped(&out),
        ["SpaceToDepth", "canonicalize", "split-dims", "linearize"]
    );
}

#[test]
fn dumps_of_ir_text_given_to_lower() {
    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    // No lowering header for IR text: the pipeline starts from the file.
    let out = stdout(&relayout(
        &[
            "lower",
            "--ir",
            "-",
            "--print-after-change",
            "--emit",
            "clif",
        ],
        &lowered,
    ));
    let dumps = dumped(&out);
    assert!(
        dumps.first().is_some_and(|p| p == "canonicalize"),
        "{dumps:?}"
    );
    assert!(!dumps.iter().any(|p| p == "fuse-nests"), "{dumps:?}");
    assert!(out.contains("// ----- Cranelift IR ----- //\n"), "{out}");
    assert!(out.contains("function %space_to_depth("), "{out}");
}

#[test]
fn the_clif_says_what_codegen_made_of_each_statement() {
    let out = stdout(&relayout(&["lower", S2D, "--emit", "clif"], ""));
    // The statement, then codegen's decision, then the function.
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("function %space_to_depth("))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        lines[at - 1].starts_with(";   codegen: 16-byte shuffle blocks"),
        "{out}"
    );
    assert!(lines[at - 2].starts_with(";       for i0"), "{out}");
    assert!(lines[at - 3].starts_with(";   copy 8 bytes"), "{out}");
}

/// The stage names of a `--timings` table (the column after the percentage), in order.
fn timed(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| {
            l.split_once("%)  ")
                .map(|(_, name)| name.trim().to_string())
        })
        .collect()
}

#[test]
fn timings_cover_every_stage_of_a_compile_and_every_pass() {
    let out = relayout(&["lower", S2D, "--emit", "loop", "--timings"], "");
    let text = stdout(&out);
    assert!(
        text.starts_with("loops @"),
        "the IR is still printed: {text}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Execution time report"), "{stderr}");
    assert!(stderr.contains("Total Execution Time:"), "{stderr}");
    let names = timed(&out.stderr);
    let pipeline = stdout(&relayout(&["opt", "--print-pipeline"], ""));
    let mut want = vec!["Validation", "Lowering", "Pipeline"];
    want.extend(pipeline.trim().split(','));
    want.extend([
        "JIT",
        "verify",
        "module",
        "codegen",
        "cranelift",
        "instruction selection",
        "register allocation",
        "emission",
        "link",
        "Total",
    ]);
    // Debug builds verify after every pass: those lines come under each pass.
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let without_verify: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|&(i, n)| *n != "verify" || names.get(i + 1) == Some(&"module"))
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(without_verify, want, "{stderr}");
    // Cranelift's parts are indented under it, and took time.
    let part = stderr
        .lines()
        .find(|l| l.ends_with("register allocation"))
        .expect("a register allocation line");
    let cranelift = stderr.lines().find(|l| l.ends_with("cranelift")).unwrap();
    let depth = |l: &str| {
        let name = l.split_once("%)  ").unwrap().1;
        name.len() - name.trim_start().len()
    };
    assert_eq!(depth(part), depth(cranelift) + 2, "{stderr}");
    let ms: f64 = part.split_whitespace().next().unwrap().parse().unwrap();
    assert!(ms > 0.0, "{stderr}");

    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    let out = relayout(&["opt", "-", "--timings"], &lowered);
    assert!(stdout(&out).starts_with("loops @"));
    let names = timed(&out.stderr);
    assert_eq!(names.first().map(String::as_str), Some("Parsing"));
    assert!(names.iter().any(|n| n == "split-dims"), "{names:?}");
    // opt verifies after every pass, in every build.
    assert!(names.iter().any(|n| n == "verify"), "{names:?}");
    assert_eq!(names.last().map(String::as_str), Some("Total"));

    let out = relayout(&["lower", "--ir", "-", "--timings"], &lowered);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("opt FILE --timings"));
}

/// The index-map passes and `linearize` of the default pipeline: what makes loop IR that the
/// loop passes have not touched yet.
const TO_LOOPS: &str = "canonicalize,split-dims,split-guards,peel-dims,drop-unit-dims,linearize";

#[test]
fn lower_prints_the_empty_pipeline_it_runs_on_loop_ir() {
    let loops = stdout(&relayout(&["lower", S2D, "--emit", "loop"], ""));
    // `lower` runs no pass on loop IR by default: the pipeline printed is an empty line, which
    // `opt --passes` accepts as the empty pipeline.
    let printed = stdout(&relayout(
        &["lower", "--ir", "-", "--print-pipeline"],
        &loops,
    ));
    assert_eq!(printed, "\n");
    let again = stdout(&relayout(&["opt", "--print-pipeline", "--passes", ""], ""));
    assert_eq!(again, "\n");
    // On index-map IR, the default pipeline; a given --passes prints as itself on either.
    let lowered = stdout(&relayout(&["lower", S2D, "--emit", "lowered"], ""));
    let default = stdout(&relayout(&["opt", "--print-pipeline"], ""));
    let printed = stdout(&relayout(
        &["lower", "--ir", "-", "--print-pipeline"],
        &lowered,
    ));
    assert_eq!(printed, default);
    let printed = stdout(&relayout(
        &[
            "lower",
            "--ir",
            "-",
            "--print-pipeline",
            "--passes",
            "coalesce",
        ],
        &loops,
    ));
    assert_eq!(printed.trim(), "coalesce");
}

#[test]
fn opt_runs_the_loop_passes_of_the_default_pipeline_on_loop_ir() {
    let linearized = stdout(&relayout(
        &["lower", S2D, "--passes", TO_LOOPS, "--emit", "loop"],
        "",
    ));
    // What runs, and as a string `opt --passes` accepts: the default pipeline after linearize.
    let printed = stdout(&relayout(&["opt", "-", "--print-pipeline"], &linearized));
    let default = stdout(&relayout(&["opt", "--print-pipeline"], ""));
    let (_, loop_part) = default.trim().split_once("linearize,").unwrap();
    assert_eq!(printed.trim(), loop_part);
    // Those passes run, in that order, and finish what the default pipeline does to the op.
    let out = stdout(&relayout(&["opt", "-", "--print-after-all"], &linearized));
    assert_eq!(dumped(&out).join(","), loop_part, "{out}");
    let optimized = stdout(&relayout(&["opt", "-"], &linearized));
    let full = stdout(&relayout(&["lower", S2D, "--emit", "loop"], ""));
    assert_eq!(optimized.trim(), full.trim());
    // `opt --help` says so.
    let help = stdout(&relayout(&["opt", "--help"], ""));
    assert!(help.contains(loop_part), "{help}");
}

#[test]
fn opt_help_pass_table_lines_up() {
    // Every row's level column starts at the same offset, whatever the name's length
    // (output-stationary is the longest).
    let help = stdout(&relayout(&["opt", "--help"], ""));
    let rows: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Passes (name"))
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert!(
        rows.iter().any(|r| r.contains("output-stationary")),
        "{help}"
    );
    let level_column = |row: &str| {
        let name_end = 2 + row[2..].find(' ').unwrap();
        name_end + row[name_end..].find(|c: char| c != ' ').unwrap()
    };
    let first = level_column(rows[0]);
    for row in &rows {
        assert_eq!(level_column(row), first, "{help}");
    }
}
