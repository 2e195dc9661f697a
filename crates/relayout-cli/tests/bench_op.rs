//! `relayout bench --op OP` and `--ir FILE` (repeatable): ops from the command line and kernels
//! given as IR text, with JSON lines that carry
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

/// `bench --ir FILE`: loop IR (here a hand-fused variant of what `lower` prints) and
/// index-map IR are benchmarked like ops, named by their file; a file that does not parse
/// fails its row and the run, naming the place.
#[test]
fn kernels_given_as_ir_are_benchmarked() {
    let dir = std::env::temp_dir().join(format!("relayout-bench-ir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let loops = dir.join("fused.ir");
    std::fs::write(
        &loops,
        "loops @k(%src: tensor<4x64xf32>) -> (%dst: tensor<4x66xf32>) {
  fused for i0 in 0 to 4 {
    copy 4 bytes %dst[0 + 264 * i0] = %src[4 + 256 * i0]
        for i0 in 0 to 4
    copy 256 bytes %dst[4 + 264 * i0] = %src[0 + 256 * i0]
        for i0 in 0 to 4
    copy 4 bytes %dst[260 + 264 * i0] = %src[248 + 256 * i0]
        for i0 in 0 to 4
  }
}
",
    )
    .unwrap();
    let index = dir.join("index.ir");
    let lowered = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args([
            "lower",
            "SpaceToDepth {block_size = 2} : tensor<1x8x8x4xf32>",
            "--emit",
            "lowered",
        ])
        .output()
        .unwrap();
    assert!(lowered.status.success());
    std::fs::write(&index, &lowered.stdout).unwrap();
    let bench = |files: &[&std::path::Path]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_relayout"));
        cmd.args(["bench", "--reps", "2", "--json"]);
        for f in files {
            cmd.arg("--ir").arg(f);
        }
        cmd.output().unwrap()
    };
    let out = bench(&[&loops, &index]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["case"], loops.display().to_string());
    assert_eq!(lines[1]["case"], index.display().to_string());
    assert!(lines
        .iter()
        .all(|l| l["reps"] == 2 && l["ratio"].as_f64().unwrap() > 0.0));

    let broken = dir.join("broken.ir");
    std::fs::write(
        &broken,
        "loops @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n  copy\n}\n",
    )
    .unwrap();
    let out = bench(&[&broken]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("broken.ir: error: 3:1: expected"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
