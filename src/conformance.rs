//! Running conformance cases (the JSON format of `tests/conformance/FORMAT.md`) through the
//! whole pipeline: op description -> JIT-compiled kernel -> output, compared bit-exactly or
//! within the case's tolerance. `cargo test` and `relayout conformance` both use this.

pub use relayout_conformance::{
    compare, find_cases, load_case, Case, Expected, LoadError, Mismatch,
};

use crate::{compile, Op, Split, SplitReport};
use std::path::Path;

/// How a case is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// How the kernel's statements are cut over the thread pool; `Split::Threads(1)` runs on
    /// the calling thread.
    pub split: Split,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            split: Split::Threads(1),
        }
    }
}

/// Runs one case through the JIT, into an output buffer that starts as garbage (a byte
/// pattern that no case expects everywhere), so a kernel that forgets to write some output
/// byte fails. `Err` says what differed: the first differing index with the expected and
/// produced values, or the wrong (or missing) error. `Ok` carries how the kernel's statements
/// were split for a case that ran, and `None` for a case whose op was rightly refused.
pub fn run_case(case: &Case, options: RunOptions) -> Result<Option<SplitReport>, String> {
    let outcome = Op::from_attrs(&case.op_name, &case.attrs)
        .map_err(crate::Error::from)
        .and_then(|op| {
            let kernel = compile(&op, &case.input)?;
            let Some(input) = &case.input_bytes else {
                return Ok(None);
            };
            let len = usize::try_from(kernel.output_type().size_bytes().unwrap_or(u64::MAX))
                .unwrap_or(usize::MAX);
            let mut out = garbage(len);
            let report = kernel.run_split(input, &mut out, options.split)?;
            Ok(Some((kernel.output_type().clone(), out, report)))
        });
    match (&case.expected, outcome) {
        (Expected::Output { .. }, Ok(None)) => Err("the case has no input data to run".into()),
        (
            Expected::Output {
                ty,
                bytes,
                tolerance,
            },
            Ok(Some((got_ty, got, report))),
        ) => {
            if &got_ty != ty {
                return Err(format!("output type {got_ty}, expected {ty}"));
            }
            compare(ty, bytes, &got, *tolerance).map_err(|m| m.to_string())?;
            Ok(Some(report))
        }
        (Expected::Output { .. }, Err(e)) => Err(format!("expected an output, got the error: {e}")),
        (Expected::Error(want), Ok(_)) => Err(format!(
            "expected the error {want}, but the op was accepted"
        )),
        (Expected::Error(want), Err(e)) => match e.category() {
            Some(got) if got == want => Ok(None),
            _ => Err(format!("expected the error {want}, got: {e}")),
        },
    }
}

/// Loads and runs one case file.
pub fn run_case_file(path: &Path) -> Result<(), String> {
    let case = load_case(path).map_err(|e| e.to_string())?;
    run_case(&case, RunOptions::default()).map(drop)
}

/// `len` bytes with no zero byte, changing from byte to byte, as the starting value of an
/// output buffer.
fn garbage(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| 0x5b ^ (i as u8).wrapping_mul(0x3d) | 1)
        .collect()
}
