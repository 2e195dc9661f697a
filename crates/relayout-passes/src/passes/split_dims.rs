//! `split-dims`: replaces a dim that the maps read through `floordiv` and `mod` by its digits.
//!
//! A dim `d` used as `d floordiv (b*C)`, `(d floordiv C) mod b` and `d mod C` is a mixed-radix
//! number with digits of sizes `[n / (b*C), b, C]`. The pass substitutes
//! `d = o * (b*C) + y * C + x` with new dims `o`, `y`, `x` (outer digit first, in the place of
//! `d`) and re-canonicalizes, after which the `floordiv`s and `mod`s are plain dims. This is
//! what turns SpaceToDepth's maps into the strided 6-D transpose that the TensorFlow
//! documentation describes.
//!
//! More precisely, for every dim `d` it collects the divisors of the atoms that read
//! `d + c` (for one constant offset `c`, such as a BatchToSpace crop) directly or through a
//! `floordiv`: `(d + c) floordiv a`, `(d + c) mod a`, `((d + c) floordiv a) mod b` give the
//! radix points `a` and `a*b`. It keeps the points that form a chain under divisibility
//! (`r_1 | r_2 | ... | r_m`). With `u = d + c` ranging over `[u0, u1)`:
//!
//! - the body `[ceil(u0 / r_m) * r_m, floor(u1 / r_m) * r_m)` is split into digits; the
//!   substitution is a bijection onto the body that keeps the order of the points;
//! - a partial block before or after the body, if any, stays a separate statement over the
//!   rest of `d`'s range, where the ranges fold the outer digits to constants;
//! - a range with no full block that crosses one multiple of `r_m` is cut there in two.
//!
//! Splitting off partial blocks runs the points in a different order, so it is done only when
//! the order cannot matter (see `stmt::order_matters`) or `d` is the outermost dim with more
//! than one value. The pass repeats until nothing changes (a bounded number of times).
//!
//! What it does not do: split a dim read with a coefficient other than 1 inside a `floordiv` or
//! `mod` (canonicalize reduces most of those to this form first), split at radix points that
//! do not form a divisibility chain, or remove guards.

use crate::pass::{impl_pass, IndexPass};
use crate::simplify::Simplifier;
use crate::stmt::{
    additions_round, canonicalize_owned, exprs, order_matters, splittable_dims, substitute,
    with_range,
};
use crate::sum::{Atom, Sum};
use crate::PassError;
use relayout_ir::{AffineExpr, DimRange, Kernel, Stmt};
use std::collections::{BTreeMap, BTreeSet};

/// Rounds of splitting per input statement.
const MAX_ROUNDS: usize = 16;
/// Statements one input statement may become.
const MAX_PIECES: usize = 64;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitDims;

impl IndexPass for SplitDims {
    const NAME: &'static str = "split-dims";

    fn run_index(&self, mut k: Kernel) -> Result<Kernel, PassError> {
        let rounding = additions_round(k.dst.dtype);
        k.stmts = std::mem::take(&mut k.stmts)
            .into_iter()
            .flat_map(|s| split_stmt(s, rounding))
            .collect();
        Ok(k)
    }
}

impl_pass!(index SplitDims);

/// The statement, split until no dim can be split further. `rounding`: the kernel's additions
/// round (see `stmt::splittable_dims`).
fn split_stmt(stmt: Stmt, rounding: bool) -> Vec<Stmt> {
    // Each statement with whether `split_once` found no split of it: it never will (the
    // answer depends on the statement alone), so later rounds do not ask again.
    let mut stmts: Vec<(Stmt, bool)> = canonicalize_owned(stmt)
        .into_iter()
        .map(|s| (s, false))
        .collect();
    for _ in 0..MAX_ROUNDS {
        let mut changed = false;
        let mut next = Vec::with_capacity(stmts.len());
        let len = stmts.len();
        for (i, (s, done)) in stmts.into_iter().enumerate() {
            if done {
                next.push((s, true));
                continue;
            }
            // Statements still to come keep at least one slot each.
            let room = MAX_PIECES.saturating_sub(next.len() + (len - i - 1));
            match split_once(&s, rounding) {
                Some(pieces) if pieces.len() <= room => {
                    changed = true;
                    next.extend(
                        pieces
                            .into_iter()
                            .filter_map(canonicalize_owned)
                            .map(|p| (p, false)),
                    );
                }
                Some(_) => next.push((s, false)),
                None => next.push((s, true)),
            }
        }
        stmts = next;
        if !changed {
            break;
        }
    }
    stmts.into_iter().map(|(s, _)| s).collect()
}

/// `u = (d + offset) floordiv scale`: a digit read from a dim.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Digit {
    dim: usize,
    offset: i64,
    scale: i64,
}

/// The digit an atom argument reads, if it is `d + c` or `(d + c) floordiv a + c1`.
/// Reason for the second form: `(d + c) floordiv a + c1 = (d + c + c1*a) floordiv a`.
fn digit_of(arg: &Sum) -> Option<Digit> {
    if let Some((dim, 1, offset)) = arg.as_linear_in_one_dim() {
        return Some(Digit {
            dim,
            offset,
            scale: 1,
        });
    }
    let [(Atom::FloorDiv(inner, a), 1)] = arg.terms() else {
        return None;
    };
    let (dim, 1, c) = inner.as_linear_in_one_dim()? else {
        return None;
    };
    let offset = c.checked_add(arg.constant_part().checked_mul(*a)?)?;
    Some(Digit {
        dim,
        offset,
        scale: *a,
    })
}

/// The radix points of every `(dim, offset)` the statement's atoms read.
fn radix_points(stmt: &Stmt) -> Option<BTreeMap<(usize, i64), BTreeSet<i64>>> {
    let simp = Simplifier::new(&stmt.domain)?;
    let mut out: BTreeMap<(usize, i64), BTreeSet<i64>> = BTreeMap::new();
    for e in exprs(stmt) {
        let Some(sum) = simp.sum_of(e) else { continue };
        sum.for_each_div_mod(&mut |atom| {
            let Some((arg, k)) = atom.div_mod_parts() else {
                return;
            };
            let Some(digit) = digit_of(arg) else { return };
            let points = out.entry((digit.dim, digit.offset)).or_default();
            if digit.scale > 1 {
                points.insert(digit.scale);
            }
            if let Some(p) = digit.scale.checked_mul(k) {
                points.insert(p);
            }
        });
    }
    Some(out)
}

/// The longest prefix-greedy chain `r_1 | r_2 | ...` of points above 1, ascending.
fn chain(points: &BTreeSet<i64>) -> Vec<i64> {
    let mut out: Vec<i64> = Vec::new();
    for &p in points {
        let last = out.last().copied().unwrap_or(1);
        if p > last && p % last == 0 {
            out.push(p);
        }
    }
    out
}

/// One split of one dim, or `None` when no dim can be split.
fn split_once(stmt: &Stmt, rounding: bool) -> Option<Vec<Stmt>> {
    let points = radix_points(stmt)?;
    for ((dim, offset), pts) in points {
        let mut radices = chain(&pts);
        while !radices.is_empty() {
            if let Some(pieces) = split_dim(stmt, dim, offset, &radices, rounding) {
                return Some(pieces);
            }
            radices.pop();
        }
    }
    None
}

/// Splits `dim` at the radix points `radices` (ascending, a divisibility chain) of
/// `u = dim + offset`; `None` when the range of `u` does not cross a multiple of the largest
/// radix, or when partial blocks would have to be split off a statement whose order matters.
fn split_dim(
    stmt: &Stmt,
    dim: usize,
    offset: i64,
    radices: &[i64],
    rounding: bool,
) -> Option<Vec<Stmt>> {
    let top = *radices.last()?;
    let r = stmt.domain[dim];
    let (u0, u1) = (r.lo.checked_add(offset)?, r.hi.checked_add(offset)?);
    // The body [a, z) of full blocks of `top`.
    let a = u0.checked_add((top - u0.rem_euclid(top)) % top)?;
    let z = u1.checked_sub(u1.rem_euclid(top))?;
    let outermost = stmt.domain[..dim].iter().all(|r| r.len() <= 1);
    // A float accumulate's additions round in their order: see `stmt::splittable_dims`.
    let may_reorder = outermost || (!order_matters(stmt) && splittable_dims(stmt, rounding)[dim]);
    if a >= z {
        // No full block. If the range crosses one multiple of `top` (it is then `a`), cut
        // there: on each side the quotient by `top` is constant.
        if u0 < a && a < u1 && may_reorder {
            let cut = a.checked_sub(offset)?;
            return Some(vec![
                with_range(stmt, dim, r.lo, cut),
                with_range(stmt, dim, cut, r.hi),
            ]);
        }
        return None;
    }
    let partial = a > u0 || z < u1;
    if partial && !may_reorder {
        return None;
    }
    let mut pieces = Vec::new();
    if a > u0 {
        pieces.push(with_range(stmt, dim, r.lo, a.checked_sub(offset)?));
    }
    pieces.push(digits(stmt, dim, offset, radices, a / top, z / top)?);
    if z < u1 {
        pieces.push(with_range(stmt, dim, z.checked_sub(offset)?, r.hi));
    }
    Some(pieces)
}

/// The statement with `dim = o * r_m + y_(m-1) * r_(m-1) + ... + y_1 * r_1 + x - offset`, where
/// `o` ranges over `[o_lo, o_hi)`, the digit `y_j` over `[0, r_(j+1) / r_j)` and `x` over
/// `[0, r_1)`: new dims in that order (outer first), in the place of `dim`.
fn digits(
    stmt: &Stmt,
    dim: usize,
    offset: i64,
    radices: &[i64],
    o_lo: i64,
    o_hi: i64,
) -> Option<Stmt> {
    // (range, weight) of each new dim, outer first.
    let mut new_dims = vec![(DimRange::new(o_lo, o_hi), *radices.last()?)];
    for j in (0..radices.len()).rev() {
        let below = if j == 0 { 1 } else { radices[j - 1] };
        new_dims.push((DimRange::new(0, radices[j] / below), below));
    }
    let extra = new_dims.len() - 1;
    let mut domain = stmt.domain[..dim].to_vec();
    domain.extend(new_dims.iter().map(|(r, _)| *r));
    domain.extend_from_slice(&stmt.domain[dim + 1..]);
    // The substituted value must not overflow at the ends of the body.
    o_hi.checked_mul(*radices.last()?)?;
    let value = new_dims.iter().enumerate().fold(
        AffineExpr::Const(offset.checked_neg()?),
        |acc, (j, (_, w))| acc + AffineExpr::Dim(dim + j) * *w,
    );
    Some(substitute(stmt, domain, &|i| {
        if i < dim {
            AffineExpr::Dim(i)
        } else if i == dim {
            value.clone()
        } else {
            AffineExpr::Dim(i + extra)
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_keep_divisibility() {
        let pts: BTreeSet<i64> = [2, 3, 6, 12].into_iter().collect();
        assert_eq!(chain(&pts), vec![2, 6, 12]);
    }
}
