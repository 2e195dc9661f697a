//! Checks shared by the validation of every op.
//!
//! Attributes can be anything an `i64` holds and shape dims anything a `u64` holds, so every
//! size here is computed with checked arithmetic and an overflow is a `size_overflow` error,
//! never a panic or a wrapped value. A tensor that passes [`check_tensor`] has every dim, its
//! element count and its byte size at most `i64::MAX`, which is what lets lowering turn dims
//! into `i64` constants and ranges without further thought.

use crate::{ErrorCategory, OpError};
use relayout_ir::TensorType;

/// `Err` of an [`OpError`] with this category and message.
pub(crate) fn fail<T>(category: ErrorCategory, message: impl Into<String>) -> Result<T, OpError> {
    Err(OpError::new(category, message))
}

/// Rejects a tensor type the IR cannot index. The element count alone is not enough: a shape
/// like `[0, u64::MAX]` has zero elements but a dim that does not fit a domain range.
pub(crate) fn check_tensor(op: &str, role: &str, ty: &TensorType) -> Result<(), OpError> {
    if let Some((i, &d)) = ty
        .shape
        .iter()
        .enumerate()
        .find(|(_, &d)| d > i64::MAX as u64)
    {
        return fail(
            ErrorCategory::SizeOverflow,
            format!("{op}: {role} {ty} has dim {i} of size {d}, above 2^63 - 1"),
        );
    }
    ty.size_bytes().map(|_| ()).map_err(|e| {
        OpError::new(
            ErrorCategory::SizeOverflow,
            format!(
                "{op}: {role} {ty} is too large: its {} overflows 2^63 - 1",
                e.what
            ),
        )
    })
}

/// Rejects an input whose rank is not exactly `want`; `layout` says why that rank (`NHWC`).
pub(crate) fn check_rank(
    op: &str,
    layout: &str,
    ty: &TensorType,
    want: usize,
) -> Result<(), OpError> {
    if ty.rank() != want {
        return fail(
            ErrorCategory::BadRank,
            format!(
                "{op}: {layout} input must have rank {want}, got rank {} ({ty})",
                ty.rank()
            ),
        );
    }
    Ok(())
}

/// `a * b`, or a `size_overflow` error naming `what` when it does not fit below 2^63.
pub(crate) fn mul(op: &str, a: u64, b: u64, what: &str) -> Result<u64, OpError> {
    a.checked_mul(b)
        .filter(|&v| v <= i64::MAX as u64)
        .ok_or_else(|| {
            OpError::new(
                ErrorCategory::SizeOverflow,
                format!("{op}: {what} = {a} * {b} overflows 2^63 - 1"),
            )
        })
}

/// `a + b`, or a `size_overflow` error naming `what` when it does not fit below 2^63.
pub(crate) fn add(op: &str, a: u64, b: u64, what: &str) -> Result<u64, OpError> {
    a.checked_add(b)
        .filter(|&v| v <= i64::MAX as u64)
        .ok_or_else(|| {
            OpError::new(
                ErrorCategory::SizeOverflow,
                format!("{op}: {what} = {a} + {b} overflows 2^63 - 1"),
            )
        })
}

/// The product of `values`, or a `size_overflow` error naming `what`.
pub(crate) fn product(op: &str, values: &[u64], what: &str) -> Result<u64, OpError> {
    values
        .iter()
        .try_fold(1u64, |acc, &v| mul(op, acc, v, what))
}

/// An attribute value known to be non-negative, as `u64`.
pub(crate) fn nonneg(v: i64) -> u64 {
    v.unsigned_abs()
}

/// Formats a list of integers as `[a, b, c]` for messages.
pub(crate) fn list<T: std::fmt::Display>(values: &[T]) -> String {
    let items: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// `axes` as dims of `ty` (a negative axis counts from the end), or an error in `category`
/// (naming `op`) for an axis outside `[-rank, rank - 1]` or a dim named twice.
pub(crate) fn normalize_axes(
    op: &str,
    category: ErrorCategory,
    axes: &[i64],
    ty: &TensorType,
) -> Result<Vec<usize>, OpError> {
    let rank = ty.rank();
    let r = rank as i64;
    let mut seen = vec![false; rank];
    let mut dims = Vec::with_capacity(axes.len());
    for (i, &axis) in axes.iter().enumerate() {
        if !(-r..r).contains(&axis) {
            return fail(
                category,
                format!(
                    "{op}: axis {axis} (axes[{i}] of {}) is outside [-{rank}, {}] for the input \
                     {ty}",
                    list(axes),
                    r - 1
                ),
            );
        }
        let dim = if axis < 0 { axis + r } else { axis } as usize;
        if std::mem::replace(&mut seen[dim], true) {
            return fail(
                category,
                format!("{op}: axes {} name dim {dim} twice", list(axes)),
            );
        }
        dims.push(dim);
    }
    Ok(dims)
}
