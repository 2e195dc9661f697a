//! Building blocks shared by the lowerings. They build the documented index formulas as they
//! are written, without simplifying them: the passes own simplification, and a literal lowering
//! is what the snapshot tests and the verifier are read against. Two liberties only: a zero
//! offset is left out (no padding is no term, not `+ 0`), and so is a stride of 1 when
//! linearising or unravelling a multi-index (`d3`, not `d3 * 1`), since that is the arithmetic
//! of row-major order and not a constant of the op. Multipliers that are attributes (block
//! sizes, strides, dilations) stay even when they are 1.

use crate::validate::mul;
use crate::{ErrorCategory, OpError};
use relayout_ir::{Action, AffineExpr, Constraint, DimRange, Stmt};

/// The dim `d{i}` of a statement's domain.
pub(crate) fn d(i: usize) -> AffineExpr {
    AffineExpr::dim(i)
}

/// A validated size as an IR constant. Validation keeps every size at most `i64::MAX`, so this
/// fails only if a lowering forgot to validate something.
pub(crate) fn konst(op: &str, v: u64) -> Result<i64, OpError> {
    i64::try_from(v).map_err(|_| {
        OpError::new(
            ErrorCategory::SizeOverflow,
            format!("{op}: constant {v} does not fit in a signed 64-bit index"),
        )
    })
}

/// Every value of `shape` as an IR constant.
pub(crate) fn konsts(op: &str, shape: &[u64]) -> Result<Vec<i64>, OpError> {
    shape.iter().map(|&v| konst(op, v)).collect()
}

/// The box `[0, n)` for every dim of `shape`.
pub(crate) fn domain(shape: &[u64]) -> Vec<DimRange> {
    shape.iter().map(|&n| DimRange::upto(n)).collect()
}

/// `[d0, d1, ...]` for a domain of this rank.
pub(crate) fn identity(rank: usize) -> Vec<AffineExpr> {
    (0..rank).map(d).collect()
}

/// `e - c`, leaving out the subtraction when `c` is 0.
pub(crate) fn minus(e: AffineExpr, c: i64) -> AffineExpr {
    if c == 0 {
        e
    } else {
        e - c
    }
}

/// Row-major strides of `extents`: `stride[i] = prod(extents[i + 1..])`.
pub(crate) fn strides(op: &str, extents: &[i64]) -> Result<Vec<i64>, OpError> {
    let mut out = vec![1i64; extents.len()];
    for i in (0..extents.len().saturating_sub(1)).rev() {
        let s = mul(
            op,
            nonneg_u64(out[i + 1]),
            nonneg_u64(extents[i + 1]),
            "stride",
        )?;
        out[i] = konst(op, s)?;
    }
    Ok(out)
}

fn nonneg_u64(v: i64) -> u64 {
    v.max(0).unsigned_abs()
}

/// The row-major linear index of the multi-index `terms` in a box of `extents`:
/// `terms[0] * stride[0] + ... + terms[n-1]`.
pub(crate) fn linearize(
    op: &str,
    terms: Vec<AffineExpr>,
    extents: &[i64],
) -> Result<AffineExpr, OpError> {
    let strides = strides(op, extents)?;
    let mut sum: Option<AffineExpr> = None;
    for (t, s) in terms.into_iter().zip(strides) {
        let term = if s == 1 { t } else { t * s };
        sum = Some(match sum {
            None => term,
            Some(acc) => acc + term,
        });
    }
    Ok(sum.unwrap_or(AffineExpr::Const(0)))
}

/// The multi-index of the row-major linear index `linear` in a box of `extents`:
/// `(linear floordiv stride[i]) mod extents[i]` (no `floordiv` for stride 1).
pub(crate) fn unravel(
    op: &str,
    linear: &AffineExpr,
    extents: &[i64],
) -> Result<Vec<AffineExpr>, OpError> {
    let strides = strides(op, extents)?;
    Ok(extents
        .iter()
        .zip(strides)
        .map(|(&n, s)| {
            let q = if s == 1 {
                linear.clone()
            } else {
                linear.clone().floor_div(s)
            };
            q.modulo(n)
        })
        .collect())
}

/// `lo <= expr < hi`.
pub(crate) fn within(expr: AffineExpr, lo: i64, hi: i64) -> Constraint {
    Constraint { expr, lo, hi }
}

/// A gather copy over the output box: `copy %dst[d0, ...] = %src[src]`.
pub(crate) fn gather(out_shape: &[u64], src: Vec<AffineExpr>, guard: Vec<Constraint>) -> Stmt {
    Stmt {
        domain: domain(out_shape),
        guard,
        dst: identity(out_shape.len()),
        action: Action::Copy { src },
    }
}

/// An unguarded zero fill of the whole output.
pub(crate) fn fill_all(out_shape: &[u64]) -> Stmt {
    Stmt {
        domain: domain(out_shape),
        guard: Vec::new(),
        dst: identity(out_shape.len()),
        action: Action::ZERO_FILL,
    }
}
