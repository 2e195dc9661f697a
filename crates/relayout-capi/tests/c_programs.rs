//! C and C++ programs that use librelayout_capi, compiled with the system compiler and run:
//! every public conformance case through the C API, the error paths, four threads sharing a
//! kernel, and the C++ example. Without a C compiler the tests print that they were skipped
//! and pass, as the disas feature's tests do.
//!
//! The libraries are the ones cargo built for this test run: the crate's `cdylib` and
//! `staticlib` are built with the same profile as this test, next to its `deps` folder.

mod support;

use relayout::conformance::{compare, find_cases, load_case, Case, Expected};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use support::{build, compiler, op_text, run, scratch, Link, CRATE};

/// tests/c/capi_test.c, built once per test run (linked as `link`), or `None` without a C
/// compiler.
fn capi_test(link: Link) -> Option<PathBuf> {
    static SHARED: OnceLock<Option<PathBuf>> = OnceLock::new();
    static STATIC: OnceLock<Option<PathBuf>> = OnceLock::new();
    let cell = match link {
        Link::Shared => &SHARED,
        Link::Static => &STATIC,
        Link::Alone => panic!("capi_test calls the C API, so it links a library"),
    };
    cell.get_or_init(|| {
        let Some(cc) = compiler("CC", "cc") else {
            eprintln!("no C compiler (cc, or $CC): skipping the C API's C tests");
            return None;
        };
        let dir = scratch(&format!("capi_test_{link:?}"));
        let exe = dir.join("capi_test");
        let source = Path::new(CRATE).join("tests/c/capi_test.c");
        build(&cc, &[source], &["-std=c11", "-O1", "-pthread"], link, &exe);
        Some(exe)
    })
    .clone()
}

/// What the C program said about one case.
enum Outcome {
    Ok { dims: String },
    Error { category: String, message: String },
}

#[test]
fn every_public_conformance_case_through_the_c_api() {
    let Some(exe) = capi_test(Link::Shared) else {
        return;
    };
    let dir = scratch("conformance");
    let root = Path::new(CRATE).join("../../tests/conformance");
    let mut cases = BTreeMap::new();
    let mut manifest = String::new();
    for path in find_cases(&root) {
        let case = load_case(&path).unwrap();
        let (input, output) = match &case.input_bytes {
            Some(bytes) => {
                let input = dir.join(format!("{}.in", case.name));
                std::fs::write(&input, bytes).unwrap();
                let output = dir.join(format!("{}.out", case.name));
                (input.display().to_string(), output.display().to_string())
            }
            None => ("-".to_string(), "-".to_string()),
        };
        manifest.push_str(&format!(
            "{}\t{input}\t{output}\t{}\n",
            case.name,
            op_text(&case)
        ));
        cases.insert(case.name.clone(), (case, output));
    }
    assert!(cases.len() > 100, "only {} cases found", cases.len());
    let manifest_path = dir.join("manifest.tsv");
    std::fs::write(&manifest_path, manifest).unwrap();
    let stdout = run(&exe, &["conformance", manifest_path.to_str().unwrap()]);

    let (mut passed, mut skipped, mut failed) = (0, Vec::new(), Vec::new());
    let mut seen = 0;
    for line in stdout.lines() {
        let fields: Vec<&str> = line.splitn(4, '\t').collect();
        let (case, output) = &cases[fields[0]];
        seen += 1;
        let outcome = match fields[1] {
            "ok" => Outcome::Ok {
                dims: fields[2].to_string(),
            },
            _ => Outcome::Error {
                category: fields[2].to_string(),
                message: fields.get(3).unwrap_or(&"").to_string(),
            },
        };
        match check(case, output, outcome) {
            Verdict::Pass => passed += 1,
            Verdict::Skip => skipped.push(case.name.clone()),
            Verdict::Fail(why) => failed.push(format!("{}: {why}", case.name)),
        }
    }
    assert_eq!(seen, cases.len(), "the C program stopped early:\n{stdout}");
    eprintln!(
        "C API conformance: {passed} cases passed, {} skipped (ops this build does not know: \
         {skipped:?}), {} failed",
        skipped.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(passed > 100);
}

enum Verdict {
    Pass,
    Skip,
    Fail(String),
}

/// Checks one case's outcome in C against the case and against the Rust API's own run.
fn check(case: &Case, output: &str, outcome: Outcome) -> Verdict {
    match (&case.expected, outcome) {
        // Ops are being added to the library: a case of an op it does not know yet is
        // counted apart, not failed.
        (expected, Outcome::Error { category, .. })
            if category == "unknown_op"
                && !matches!(expected, Expected::Error(want) if want == "unknown_op") =>
        {
            Verdict::Skip
        }
        (Expected::Error(want), Outcome::Error { category, message }) => {
            if &category == want {
                Verdict::Pass
            } else {
                Verdict::Fail(format!(
                    "expected the error {want}, got [{category}] {message}"
                ))
            }
        }
        (Expected::Error(want), Outcome::Ok { .. }) => Verdict::Fail(format!(
            "expected the error {want}, but the op was accepted"
        )),
        (Expected::Output { .. }, Outcome::Error { category, message }) => {
            Verdict::Fail(format!("expected an output, got [{category}] {message}"))
        }
        (
            Expected::Output {
                ty,
                bytes,
                tolerance,
            },
            Outcome::Ok { dims },
        ) => {
            let want_dims: Vec<String> = ty.shape.iter().map(|d| d.to_string()).collect();
            if dims != want_dims.join("x") {
                return Verdict::Fail(format!("output dims {dims}, expected {ty}"));
            }
            let Ok(got) = std::fs::read(output) else {
                return Verdict::Fail("the C program wrote no output".into());
            };
            if let Err(m) = compare(ty, bytes, &got, *tolerance) {
                return Verdict::Fail(m.to_string());
            }
            // The same kernel through the Rust API gives the same bytes, to the bit.
            let op = case.op().unwrap();
            let kernel = relayout::compile(&op, &case.input).unwrap();
            let rust = kernel
                .run_to_vec(case.input_bytes.as_ref().unwrap())
                .unwrap();
            if rust != got {
                return Verdict::Fail("the C API's output differs from the Rust API's".into());
            }
            Verdict::Pass
        }
    }
}

#[test]
fn error_paths_from_c() {
    if let Some(exe) = capi_test(Link::Shared) {
        run(&exe, &["errors"]);
    }
}

#[test]
fn four_threads_share_one_kernel_from_c() {
    if let Some(exe) = capi_test(Link::Shared) {
        run(&exe, &["threads"]);
    }
}

#[test]
fn the_static_library_links_alone() {
    // The same program linked with librelayout_capi.a: nothing to find at run time.
    if let Some(exe) = capi_test(Link::Static) {
        run(&exe, &["errors"]);
    }
}

#[test]
fn the_cpp_example_runs() {
    let Some(cxx) = compiler("CXX", "c++") else {
        eprintln!("no C++ compiler (c++, or $CXX): skipping the C++ example");
        return;
    };
    let dir = scratch("cpp_example");
    let exe = dir.join("example");
    let example = Path::new(CRATE).join("examples/cpp");
    build(
        &cxx,
        &[example.join("example.cpp")],
        &[
            "-std=c++17",
            "-O1",
            "-pthread",
            "-I",
            example.to_str().unwrap(),
        ],
        Link::Shared,
        &exe,
    );
    let out = run(&exe, &[]);
    assert!(out.contains("pixel_shuffle: ok"), "{out}");
    assert!(out.contains("not_divisible"), "{out}");
}

/// The README's first C program, as printed there: it compiles, runs and prints what the
/// README says it prints.
#[test]
fn the_readme_c_program_runs() {
    let Some(cc) = compiler("CC", "cc") else {
        eprintln!("no C compiler (cc, or $CC): skipping the README's C program");
        return;
    };
    let readme = std::fs::read_to_string(Path::new(CRATE).join("../../README.md")).unwrap();
    let section = &readme[readme.find("## C and C++").expect("the README's C section")..];
    let start = section.find("```c\n").expect("a ```c block") + "```c\n".len();
    let program = &section[start..start + section[start..].find("```").unwrap()];
    let dir = scratch("readme");
    std::fs::write(dir.join("first.c"), program).unwrap();
    let exe = dir.join("first");
    build(
        &cc,
        &[dir.join("first.c")],
        &["-std=c11"],
        Link::Shared,
        &exe,
    );
    let out = run(&exe, &[]);
    assert!(
        out.starts_with("output 1x2x2x4: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"),
        "{out}"
    );
    assert!(
        out.contains("not_divisible: SpaceToDepth: input height 5"),
        "{out}"
    );
}
