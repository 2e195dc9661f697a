//! Output comparison as the format defines it: exact element by element, except that any NaN
//! matches any NaN; `-0.0` and `0.0` differ (inside complex numbers too); with a tolerance,
//! each float (each part of a complex) passes when `|got - exp| <= atol + rtol * |exp|`.
//! Integers and bools are always exact.

use crate::data::{element_to_string, float_parts};
use relayout_ir::TensorType;
use std::fmt;

/// The first difference between an expected and a produced output.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Mismatch {
    /// The buffers do not have the same length (or not the length of the type).
    Length {
        /// The expected length in bytes.
        expected: usize,
        /// The produced length in bytes.
        got: usize,
    },
    /// The element at flat index `index` differs; both values printed in the dtype.
    Element {
        /// The element's flat (row-major) index.
        index: usize,
        /// The expected value, as text.
        expected: String,
        /// The produced value, as text.
        got: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Length { expected, got } => {
                write!(f, "output has {got} bytes, expected {expected}")
            }
            Mismatch::Element {
                index,
                expected,
                got,
            } => write!(f, "element {index}: expected {expected}, got {got}"),
        }
    }
}

impl std::error::Error for Mismatch {}

/// One float part: exact (bits, so the sign of zero counts) or within the tolerance.
fn part_matches(exp: f64, got: f64, tolerance: Option<(f64, f64)>) -> bool {
    if exp.is_nan() || got.is_nan() {
        return exp.is_nan() && got.is_nan();
    }
    if exp.to_bits() == got.to_bits() {
        return true;
    }
    match tolerance {
        // An infinity only matches itself: with `exp` infinite the bound itself is infinite.
        Some((rtol, atol)) if exp.is_finite() && got.is_finite() => {
            (got - exp).abs() <= atol + rtol * exp.abs()
        }
        _ => false,
    }
}

/// Compares `got` with `expected`, both the bytes of a tensor of type `ty`.
pub fn compare(
    ty: &TensorType,
    expected: &[u8],
    got: &[u8],
    tolerance: Option<(f64, f64)>,
) -> Result<(), Mismatch> {
    let size = ty.dtype.size() as usize;
    let want = ty
        .size_bytes()
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n == expected.len());
    if want.is_none() || expected.len() != got.len() {
        return Err(Mismatch::Length {
            expected: expected.len(),
            got: got.len(),
        });
    }
    for (index, (e, g)) in expected
        .chunks_exact(size)
        .zip(got.chunks_exact(size))
        .enumerate()
    {
        let same = match (float_parts(ty.dtype, e), float_parts(ty.dtype, g)) {
            (Some(ep), Some(gp)) => ep
                .iter()
                .zip(&gp)
                .all(|(&x, &y)| part_matches(x, y, tolerance)),
            _ => e == g,
        };
        if !same {
            return Err(Mismatch::Element {
                index,
                expected: element_to_string(ty.dtype, e),
                got: element_to_string(ty.dtype, g),
            });
        }
    }
    Ok(())
}
