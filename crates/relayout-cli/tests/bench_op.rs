//! `relayout bench --op OP` (repeatable): ops from the command line, with JSON lines that carry
//! the thread count, the repetitions and the ratio.

use std::process::Command;

#[test]
fn ops_on_the_command_line_are_benchmarked() {
    let out = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args([
            "bench",
            "--op",
            "SpaceToDepth {block_size = 2} : tensor<1x8x8x4xf32>",
            "--op",
            "DepthToSpace {block_size = 2} : tensor<1x4x4x16xui8>",
            "--reps",
            "2",
            "--json",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["case"], "SpaceToDepth:tensor<1x8x8x4xf32>");
    assert_eq!(lines[1]["case"], "DepthToSpace:tensor<1x4x4x16xui8>");
    for l in &lines {
        assert_eq!(l["threads"], 1);
        assert_eq!(l["reps"], 2);
        let ratio = l["ratio"].as_f64().unwrap();
        let (kernel, memcpy) = (
            l["median_ns"].as_f64().unwrap(),
            l["memcpy_ns"].as_f64().unwrap(),
        );
        // The times are rounded to whole nanoseconds; the ratio is not.
        let (lo, hi) = (
            (kernel - 0.5) / (memcpy + 0.5),
            (kernel + 0.5) / (memcpy - 0.5),
        );
        assert!(lo - 1e-3 <= ratio && ratio <= hi + 1e-3, "{l}");
    }
    // The human table goes to standard error with --json, and has no internal goals.
    assert!(!stderr.contains("goal"), "{stderr}");
}

#[test]
fn a_bad_op_is_an_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args([
            "bench",
            "--op",
            "SpaceToDepth {block_size = 2} : tensor<1x?x8x4xf32>",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dynamic"));
}
