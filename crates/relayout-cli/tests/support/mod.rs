//! Running the `relayout` binary from the command line's tests, one way for every test file.

#![allow(dead_code)] // Each test file uses a different part.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `relayout ARGS` with nothing on standard input. `RUST_BACKTRACE=1`: were anything to
/// panic, the backtrace would be in the standard error the tests read.
pub fn relayout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the relayout binary runs")
}

/// [`relayout`] with `stdin` on standard input. A command given an op or a file does not read
/// its standard input and may have exited before the write: a broken pipe then is not an
/// error.
pub fn relayout_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the relayout binary runs");
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().expect("relayout finishes")
}

/// The standard output of `relayout ARGS`, which must succeed.
pub fn stdout_of(args: &[&str]) -> String {
    let out = relayout(args);
    assert!(
        out.status.success(),
        "relayout {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The standard error of `relayout ARGS`, which must fail.
pub fn stderr_of_failure(args: &[&str]) -> String {
    let out = relayout(args);
    assert!(!out.status.success(), "relayout {args:?} succeeded");
    String::from_utf8(out.stderr).expect("UTF-8 output")
}
