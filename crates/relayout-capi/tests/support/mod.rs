//! What the tests that compile C share: finding the compiler and the libraries, building a
//! program, running it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// The C (or C++) compiler: `$CC` (`$CXX`), else `cc` (`c++`), if it runs.
pub fn compiler(var: &str, default: &str) -> Option<String> {
    let cc = std::env::var(var).unwrap_or_else(|_| default.to_string());
    let ok = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(cc)
}

/// The folder holding librelayout_capi.{a,so}: the profile folder above this test's `deps`.
/// `cargo test` builds the crate's rlib for the tests but not its C libraries, so they are
/// built here (once per test process, with the same profile and target folder): always, not
/// only when missing, since libraries left from before a change would link (or fail to link)
/// the old runtime. Cargo makes it a no-op when they are fresh.
pub fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    if cfg!(target_os = "linux") {
        static BUILD: std::sync::Once = std::sync::Once::new();
        BUILD.call_once(|| {
            let mut cargo = Command::new(env!("CARGO"));
            cargo.args(["build", "--quiet", "-p", "relayout-capi", "--lib"]);
            if dir.file_name().is_some_and(|n| n == "release") {
                cargo.arg("--release");
            }
            let target = dir.parent().unwrap();
            let status = cargo
                .env("CARGO_TARGET_DIR", target)
                .current_dir(CRATE)
                .status()
                .expect("cargo runs");
            assert!(status.success(), "cargo build -p relayout-capi failed");
        });
    }
    for lib in ["librelayout_capi.a", "librelayout_capi.so"] {
        if cfg!(target_os = "linux") {
            assert!(
                dir.join(lib).exists(),
                "{lib} is not in {}: cargo should build it with the test",
                dir.display()
            );
        }
    }
    dir
}

/// A scratch folder for the programs and the case files.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("relayout-capi")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How a program is linked.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// With no relayout library at all (ahead-of-time objects that need none).
    Alone,
    /// With librelayout_capi.so, found at run time through the rpath.
    Shared,
    /// With librelayout_capi.a and the system libraries Rust's standard library needs.
    Static,
}

/// Compiles and links `sources` into `out`, or panics with the compiler's output.
pub fn build(cc: &str, sources: &[PathBuf], flags: &[&str], link: Link, out: &Path) {
    let mut cmd = Command::new(cc);
    cmd.args(flags)
        .arg("-Wall")
        .arg("-Wextra")
        .arg("-Werror")
        .arg("-I")
        .arg(Path::new(CRATE).join("include"))
        .args(sources)
        .arg("-o")
        .arg(out);
    match link {
        Link::Alone => {}
        Link::Shared => {
            let lib = lib_dir();
            cmd.arg(format!("-L{}", lib.display()))
                .arg("-lrelayout_capi")
                .arg(format!("-Wl,-rpath,{}", lib.display()));
        }
        Link::Static => {
            cmd.arg(lib_dir().join("librelayout_capi.a"))
                .args(["-lpthread", "-ldl", "-lm"]);
        }
    }
    let output = cmd.output().expect("run the compiler");
    assert!(
        output.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs a program and returns its stdout, or panics with everything it printed.
pub fn run(exe: &Path, args: &[&str]) -> String {
    let output = Command::new(exe).args(args).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert!(
        output.status.success(),
        "{} {args:?} failed ({}):\n{stdout}\n{stderr}",
        exe.display(),
        output.status
    );
    eprint!("{stderr}");
    stdout
}

/// A conformance case's op in the command line's op syntax.
pub fn op_text(case: &relayout::conformance::Case) -> String {
    let attrs: Vec<String> = case
        .attrs
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    format!("{} {{{}}} : {}", case.op_name, attrs.join(", "), case.input)
}
