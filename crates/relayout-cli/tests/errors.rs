//! Bad input at the command line's edges: malformed IR, malformed or missing case files, unknown
//! ops and attributes, bad tensor types. Each must end the process with a non-zero status and
//! exactly one line on standard error, `error: ...`, that says what is wrong, and never with a
//! panic or a backtrace.

mod support;
use support::relayout_with_stdin as relayout;

use std::path::{Path, PathBuf};

/// A file in this test's own scratch directory.
fn scratch(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-errors");
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).expect("a scratch directory");
    std::fs::write(&path, contents).expect("a scratch file");
    path
}

/// Asserts the one-line error contract and returns the message (after `error: `).
fn expect_error(args: &[&str], stdin: &str) -> String {
    let out = relayout(args, stdin);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let context = format!(
        "relayout {args:?}\nstatus: {:?}\nstderr:\n{stderr}",
        out.status
    );
    assert!(!out.status.success(), "succeeded: {context}");
    assert_eq!(
        out.status.code(),
        Some(2),
        "not the error status: {context}"
    );
    for bad in ["panicked", "backtrace", "RUST_BACKTRACE"] {
        assert!(!stderr.contains(bad), "{bad}: {context}");
    }
    let line = stderr.strip_suffix('\n').unwrap_or(&stderr);
    assert!(!line.contains('\n'), "more than one line: {context}");
    line.strip_prefix("error: ")
        .unwrap_or_else(|| panic!("no `error: ` prefix: {context}"))
        .to_string()
}

const BAD_IR: &str = "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {
  copy %dst[d0] = %src[d0 +]
      for d0 in 0 to 4
}
";

#[test]
fn malformed_ir_names_line_and_column() {
    // `]` where an operand of `+` should be: line 2, column 28.
    let from_stdin = expect_error(&["opt", "-"], BAD_IR);
    assert!(from_stdin.contains("2:28:"), "{from_stdin}");
    let file = scratch("bad.ir", BAD_IR);
    let from_file = expect_error(&["opt", file.to_str().unwrap()], "");
    assert!(
        from_file.contains("bad.ir") && from_file.contains("2:28:"),
        "{from_file}"
    );
}

#[test]
fn malformed_ir_variants() {
    for (text, at) in [
        ("", "1:1:"),
        ("kernel", "1:7:"),
        ("kernel @k(%src: tensor<4xf33>)", "1:26:"),
        (
            "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n  copy %dst[d0] = %src[d0 * d0]\n      for d0 in 0 to 4\n}\n",
            "2:",
        ),
        (
            "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n  copy %dst[d0] = %src[99999999999999999999]\n      for d0 in 0 to 4\n}\n",
            "2:",
        ),
        ("\u{0}\u{1}\u{7f}", "1:1:"),
    ] {
        let message = expect_error(&["opt", "-"], text);
        assert!(message.contains(at), "{text:?}: {message}");
    }
}

#[test]
fn missing_files() {
    let message = expect_error(&["opt", "does/not/exist.ir"], "");
    assert!(message.contains("does/not/exist.ir"), "{message}");
    let message = expect_error(&["lower", "--case", "does/not/exist.json"], "");
    assert!(message.contains("exist.json"), "{message}");
    expect_error(&["conformance", "does/not/exist"], "");
}

#[test]
fn a_conformance_directory_without_cases_is_an_error() {
    // "0 passed, 0 failed" with success would hide a suite that moved or a mistyped path.
    let dir = scratch("empty/readme.txt", "no cases here")
        .parent()
        .unwrap()
        .to_path_buf();
    let message = expect_error(&["conformance", dir.to_str().unwrap()], "");
    assert!(message.contains("no conformance case"), "{message}");
}

#[test]
fn malformed_case_files() {
    for (name, contents) in [
        ("syntax.json", "{\"name\": \"x\", \"op\": "),
        ("empty.json", ""),
        ("array.json", "[1, 2, 3]"),
        (
            "no_op.json",
            r#"{"name": "no_op", "attrs": {}, "input": {"dtype": "float32", "shape": [1]}}"#,
        ),
        (
            "bad_dtype.json",
            r#"{"name": "bad_dtype", "op": "SpaceToDepth", "attrs": {"block_size": 2}, "input": {"dtype": "float33", "shape": [1, 2, 2, 1]}, "error": "bad_rank"}"#,
        ),
        (
            "bad_shape.json",
            r#"{"name": "bad_shape", "op": "SpaceToDepth", "attrs": {"block_size": 2}, "input": {"dtype": "float32", "shape": [1, -2, 2, 1]}, "error": "bad_rank"}"#,
        ),
        (
            "huge_attr.json",
            r#"{"name": "huge_attr", "op": "SpaceToDepth", "attrs": {"block_size": 18446744073709551616}, "input": {"dtype": "float32", "shape": [1, 2, 2, 1]}, "error": "bad_rank"}"#,
        ),
    ] {
        let path = scratch(name, contents);
        let message = expect_error(&["lower", "--case", path.to_str().unwrap()], "");
        assert!(!message.is_empty(), "{name}");
    }
}

#[test]
fn conformance_reports_a_malformed_case_as_a_failure() {
    // `relayout conformance` goes on past a bad case: it is counted as failed, the summary is
    // the last line, and the status is 1.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-errors-suite");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("broken.json"), "{ not json").unwrap();
    let out = relayout(&["conformance", dir.to_str().unwrap()], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 1 failed"),
        "{stdout}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn conformance_names_an_unknown_key_of_a_case() {
    // A misspelt key (`atrs` for `attrs`) is not silently ignored: the case fails, saying
    // which key, and the status is not 0.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-errors-unknown-key");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("typo.json"),
        r#"{"name": "typo", "op": "SpaceToDepth", "attrs": {"block_size": 2}, "atrs": {}, "input": {"dtype": "float32", "shape": [1, 2, 2, 1]}}"#,
    )
    .unwrap();
    let out = relayout(&["conformance", dir.to_str().unwrap()], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("FAIL typo") && stdout.contains("atrs"),
        "{stdout}{stderr}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some("0 passed, 1 failed"),
        "{stdout}"
    );
}

#[test]
fn conformance_verbose_prints_every_case_and_a_summary_per_op() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/SpaceToDepth");
    let cases = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    let out = relayout(&["conformance", "-v", dir.to_str().unwrap()], "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let ok = stdout.lines().filter(|l| l.starts_with("ok   ")).count();
    assert_eq!(ok, cases, "{stdout}");
    assert!(
        stdout.contains(&format!("SpaceToDepth: {cases} passed, 0 failed")),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().last(),
        Some(format!("{cases} passed, 0 failed").as_str())
    );
}

#[test]
fn bad_op_descriptions() {
    for (op, expect) in [
        ("Reshape {block_size = 2} : tensor<1x2x2x1xf32>", "Reshape"),
        (
            "SpaceToDepth {block_size = 2, colour = 1} : tensor<1x2x2x1xf32>",
            "colour",
        ),
        (
            "SpaceToDepth {block_size = \"2\"} : tensor<1x2x2x1xf32>",
            "block_size",
        ),
        ("SpaceToDepth {block_size = 2} : tensor<1x2x2x1xq7>", "q7"),
        ("SpaceToDepth {block_size = 2} : tensor<1x2x2x1>", "column"),
        (
            "SpaceToDepth {block_size = 2} : tensor<18446744073709551616x2x2x1xf32>",
            "column",
        ),
        ("SpaceToDepth {block_size = 2}", "column"),
        (
            "SpaceToDepth {block_size = 3} : tensor<1x2x2x1xf32>",
            "not_divisible",
        ),
        (
            "SpaceToDepth {block_size = 2, data_format = \"NWHC\"} : tensor<1x2x2x1xf32>",
            "bad_data_format",
        ),
        (
            "SpaceToDepth {block_size = 2} : tensor<9223372036854775807x2x2x4xf32>",
            "size_overflow",
        ),
        ("", "column"),
        // An unknown op is its own category, not a bad attribute.
        (
            "SpaceToDeth {block_size = 2} : tensor<1x2x2x1xf32>",
            "[unknown_op]",
        ),
        // Dynamic dims are refused as such, not as an unknown element type.
        (
            "SpaceToDepth {block_size = 2} : tensor<1x?x2x1xf32>",
            "dim 1 is dynamic",
        ),
        // An unknown element type lists the valid ones.
        (
            "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xq7>",
            "the element types are f32",
        ),
        // A float where an integer is expected says so.
        (
            "SpaceToDepth {block_size = 2.5} : tensor<1x2x2x1xf32>",
            "attribute `block_size` must be an integer, got 2.5",
        ),
    ] {
        let message = expect_error(&["lower", op], "");
        assert!(message.contains(expect), "{op}: {message}");
    }
    // The short unsigned names are accepted.
    let out = relayout(
        &[
            "lower",
            "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xu8>",
            "--emit",
            "loop",
        ],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("tensor<1x2x2x1xui8>"));
}

#[test]
fn bad_pipelines() {
    let ir = "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n  copy %dst[d0] = %src[d0]\n      for d0 in 0 to 4\n}\n";
    let message = expect_error(&["opt", "-", "--passes", "canonicalize,no-such-pass"], ir);
    assert!(message.contains("no-such-pass"), "{message}");
    let message = expect_error(&["opt", "-", "--passes", "canonicalize,,split-dims"], ir);
    assert!(message.contains("empty"), "{message}");
}

#[test]
fn ir_that_does_not_verify_is_an_error() {
    // Out of bounds: d0 + 1 reaches index 4 of a 4-element source. The verifier's report shows
    // the kernel, so it is more than one line; only its first line is the `error:` line.
    let ir = "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n  copy %dst[d0] = %src[d0 + 1]\n      for d0 in 0 to 4\n}\n";
    let out = relayout(&["opt", "-"], ir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("in-bounds"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
