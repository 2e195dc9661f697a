//! Every case of `tests/conformance`, through both oracles: the interpreted lowering
//! (`interpret(op.lower(input))`) and the reference implementation. Valid cases must produce
//! the expected output; invalid ones must be refused with exactly their category.

use relayout_conformance::{compare, find_cases, load_case, Case, Expected};
use relayout_ir::interpret;
use relayout_ops::{Op, OpError};
use std::path::{Path, PathBuf};

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

fn cases() -> Vec<Case> {
    let paths = find_cases(&suite_dir());
    assert!(paths.len() >= 170, "found only {} cases", paths.len());
    paths
        .iter()
        .map(|p| load_case(p).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// How one way of running an op fares on a case.
fn check(case: &Case, run: impl Fn(&Op, &Case) -> Result<Vec<u8>, OpError>) -> Result<(), String> {
    let result = case.op().and_then(|op| run(&op, case));
    match (&case.expected, result) {
        (
            Expected::Output {
                ty,
                bytes,
                tolerance,
            },
            Ok(got),
        ) => compare(ty, bytes, &got, *tolerance).map_err(|m| m.to_string()),
        (Expected::Output { .. }, Err(e)) => Err(format!("refused: {e}")),
        (Expected::Error(want), Err(e)) if e.category() == want => Ok(()),
        (Expected::Error(want), Err(e)) => Err(format!("expected {want}, got {e}")),
        (Expected::Error(want), Ok(_)) => Err(format!("expected {want}, but it ran")),
    }
}

fn run_suite(what: &str, run: impl Fn(&Op, &Case) -> Result<Vec<u8>, OpError>) {
    let cases = cases();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| check(c, &run).err().map(|e| format!("{}: {e}", c.name)))
        .collect();
    println!(
        "{what}: {} passed, {} failed",
        cases.len() - failures.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

fn input_bytes(case: &Case) -> &[u8] {
    case.input_bytes.as_deref().unwrap_or_default()
}

#[test]
fn interpreted_lowering_passes_every_case() {
    run_suite("interpret(lower)", |op, case| {
        let kernel = op.lower(&case.input)?;
        let out = op.output_type(&case.input)?;
        assert_eq!(kernel.dst, out, "{}: kernel type", case.name);
        if let Expected::Output { ty, .. } = &case.expected {
            assert_eq!(&out, ty, "{}: output type", case.name);
        }
        let mut dst = vec![0xA5u8; out.size_bytes().unwrap_or(0) as usize];
        interpret(&kernel, input_bytes(case), &mut dst)
            .unwrap_or_else(|e| panic!("{}: {e}\n{kernel}", case.name));
        Ok(dst)
    });
}

#[test]
fn reference_passes_every_case() {
    run_suite("reference", |op, case| {
        relayout_reference::reference(op, &case.input, input_bytes(case))
    });
}

#[test]
fn every_op_and_category_is_covered() {
    let cases = cases();
    for op in relayout_ops::OP_NAMES {
        assert!(cases.iter().any(|c| c.op_name == op), "no case for {op}");
    }
    let categories: Vec<&str> = cases
        .iter()
        .filter_map(|c| match &c.expected {
            Expected::Error(e) => Some(e.as_str()),
            _ => None,
        })
        .collect();
    for c in categories {
        assert!(
            relayout_ops::ErrorCategory::from_name(c).is_some(),
            "unknown category {c}"
        );
    }
}
