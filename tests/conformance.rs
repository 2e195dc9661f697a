//! Every conformance case under tests/conformance, through the whole pipeline (JIT), on one
//! thread and on two. A valid case passes when its output matches bit for bit (or within its
//! tolerance); an invalid case only when the op is refused with the case's category.

use relayout::conformance::{find_cases, load_case, run_case, RunOptions};
use std::path::Path;

fn run_all(options: RunOptions) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let cases = find_cases(&dir);
    assert!(
        cases.len() >= 100,
        "expected the public conformance suite under {}, found {} cases",
        dir.display(),
        cases.len()
    );
    let mut failures = Vec::new();
    for path in &cases {
        let case = load_case(path).unwrap_or_else(|e| panic!("{e}"));
        if let Err(why) = run_case(&case, options) {
            failures.push(format!("{}: {why}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_case_passes_single_threaded() {
    run_all(RunOptions { threads: 1 });
}

#[test]
fn every_case_passes_on_two_threads() {
    run_all(RunOptions { threads: 2 });
}

#[test]
fn every_error_category_is_produced() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut seen = std::collections::BTreeSet::new();
    for path in find_cases(&dir) {
        if let relayout::conformance::Expected::Error(category) = load_case(&path).unwrap().expected
        {
            seen.insert(category);
        }
    }
    let all = [
        "block_size_too_small",
        "not_divisible",
        "crops_too_large",
        "bad_rank",
        "bad_paddings",
        "bad_crops",
        "bad_vect_c",
        "bad_mode",
        "bad_data_format",
        "bad_col2im_L",
        "bad_col2im_attrs",
    ];
    let missing: Vec<_> = all.iter().filter(|c| !seen.contains(**c)).collect();
    assert!(
        missing.is_empty(),
        "no conformance case produces {missing:?}"
    );
}
