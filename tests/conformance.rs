//! Every conformance case under tests/conformance, through the whole pipeline (JIT), on one
//! thread and cut into 2, 3 and 7 pieces on the thread pool whatever its size. A valid case
//! passes when its output matches bit for bit (or within its tolerance); an invalid case only
//! when the op is refused with the case's category. The number of cases per op and per
//! expected error category must be exactly the one in `tests/conformance/expected_counts.txt`,
//! so a case that disappears (or a directory that stops being searched) fails the suite.

use relayout::conformance::{find_cases, load_case, run_case, Case, Expected, RunOptions};
use relayout::Split;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance")
}

fn cases() -> Vec<Case> {
    find_cases(&dir())
        .iter()
        .map(|path| load_case(path).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Runs every case; returns how many cases ran a kernel and how many of those ran at least
/// one statement in more than one piece. With a forced split into `n` pieces, every statement
/// that can be cut must have run in exactly the pieces asked for.
fn run_all(options: RunOptions) -> (usize, usize) {
    let cases = cases();
    assert!(
        !cases.is_empty(),
        "no conformance case under {}",
        dir().display()
    );
    let mut failures = Vec::new();
    let (mut ran, mut split) = (0, 0);
    for case in &cases {
        match run_case(case, options) {
            Err(why) => failures.push(format!("{}: {why}", case.name)),
            Ok(Some(report)) => {
                ran += 1;
                split += usize::from(report.split());
                let Split::Pieces(n) = options.split else {
                    continue;
                };
                if let Err(why) = report.check_forced(n) {
                    failures.push(format!("{}: {why}", case.name));
                }
            }
            Ok(None) => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed with {options:?}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    (ran, split)
}

#[test]
fn every_case_passes_single_threaded() {
    let (ran, split) = run_all(RunOptions::default());
    assert!(ran > 0);
    assert_eq!(split, 0, "a single-threaded run must not split");
}

/// Forced splits: every statement whose outer iterations write disjoint bytes is cut into
/// `pieces` (fewer when its outer loop is shorter), so the threaded path runs on these small
/// cases too, and `run_all` checks each statement's pieces. Kernels that cannot be cut (one
/// outer iteration, or outer iterations that overlap) run whole; most kernels must split.
/// "Most" is two thirds: many cases of the ops beyond the seeds are a few bytes that coalesce
/// into a single run (every Reshape is one contiguous copy), which no split can cut; the
/// per-statement check in `run_all` is what holds every cuttable statement to its pieces.
fn passes_split_into(pieces: usize) {
    let (ran, split) = run_all(RunOptions {
        split: Split::Pieces(pieces),
    });
    assert!(
        split * 3 >= ran * 2,
        "only {split} of {ran} kernels split into {pieces} pieces"
    );
}

#[test]
fn every_case_passes_split_into_two() {
    passes_split_into(2);
}

#[test]
fn every_case_passes_split_into_three() {
    passes_split_into(3);
}

#[test]
fn every_case_passes_split_into_seven() {
    passes_split_into(7);
}

/// `op NAME N` lines per op and `error CATEGORY N` / `output N` lines per expectation, sorted.
fn counts(cases: &[Case]) -> String {
    let mut counts = BTreeMap::new();
    for case in cases {
        *counts.entry(format!("op {}", case.op_name)).or_insert(0) += 1;
        let expectation = match &case.expected {
            Expected::Output { .. } => "output".to_string(),
            Expected::Error(category) => format!("error {category}"),
        };
        *counts.entry(expectation).or_insert(0) += 1;
    }
    counts.iter().map(|(k, n)| format!("{k} {n}\n")).collect()
}

#[test]
fn the_suite_has_exactly_the_expected_cases() {
    let file = dir().join("expected_counts.txt");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let want: String = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| format!("{}\n", l.trim()))
        .collect();
    let got = counts(&cases());
    assert!(
        got == want,
        "the conformance cases found differ from {}; if cases were added or removed on \
         purpose, its lines (after the comments) must be:\n{got}",
        file.display()
    );
}

#[test]
fn every_error_category_is_produced() {
    let mut seen = std::collections::BTreeSet::new();
    for case in cases() {
        if let Expected::Error(category) = case.expected {
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
