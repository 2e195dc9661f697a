//! `peel-dims`: the last resort. For every statement that still has a guard or a `floordiv` or
//! `mod` (which the loop IR cannot express), it cuts a dim until none is left:
//!
//! - when an atom `(c * d + c0) floordiv k` or `mod k` reads a single dim `d`, the range of `d`
//!   is split into the intervals on which the quotient is constant; on each, the ranges fold
//!   the atom (`floordiv` to a constant, `mod` to `c * d + c0 - q * k`);
//! - otherwise a dim of an offending atom or constraint (the one with the fewest values) is
//!   peeled: one statement per value, with the dim folded to that constant;
//! - each piece is re-canonicalized, which decides the guards that became single-dim or
//!   constant and removes the pieces where they are false.
//!
//! The cut with the fewest pieces is taken first. Cutting runs the points in another order, so
//! for a copy whose writes may collide (see `stmt::order_matters`) only the outermost dim with
//! several values is cut (split or peeled), which keeps the order. A float accumulation is cut
//! only along dims before which every dim separates its writes (`stmt::splittable_dims`),
//! peeling such a dim first when the cuts it needs are not (a Col2Im padded along inner image
//! dims only: its outer kernel dim, so that each piece adds its kernel positions in order).
//! Beyond a budget of statements per kernel the pass fails with an error naming the statement
//! ([`PassError::TooManyStatements`]).
//!
//! What it does not do: anything to a statement that has neither a guard nor a `floordiv` or
//! `mod`, or to one whose byte offsets fold into affine sums although its indices do not
//! (`linearize` lowers it whole: a Reshape between shapes that do not nest), or look for a
//! cheaper formulation (`split-dims` and `split-guards` should have left
//! it nothing to do for every op lowering).

use crate::pass::{impl_pass, IndexPass};
use crate::simplify::Simplifier;
use crate::stmt::{
    additions_round, canonicalize_owned, describe, exprs, fix_dim, needs_lowering_help,
    order_matters, splittable_dims, with_range,
};
use crate::sum::Sum;
use crate::PassError;
use relayout_ir::{Action, Kernel, Stmt};

/// Statements the pass may create per kernel.
const MAX_STATEMENTS: usize = 16384;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeelDims;

impl IndexPass for PeelDims {
    const NAME: &'static str = "peel-dims";

    fn run_index(&self, mut k: Kernel) -> Result<Kernel, PassError> {
        let mut budget = MAX_STATEMENTS;
        let mut stmts = Vec::new();
        let rounding = additions_round(k.dst.dtype);
        for (i, s) in std::mem::take(&mut k.stmts).into_iter().enumerate() {
            let help = needs_lowering_help(&s);
            if help && crate::passes::linearize::lowers_whole(&k, &s) {
                // Its byte offsets are affine although its indices are not: `linearize`
                // lowers it whole, where cutting could take thousands of pieces.
                stmts.push(s);
                continue;
            }
            peel(i, s, help, rounding, &mut budget, &mut stmts)?;
        }
        k.stmts = stmts;
        Ok(k)
    }
}

impl_pass!(index PeelDims);

fn fail(message: String) -> PassError {
    PassError::Failed {
        pass: PeelDims::NAME,
        message,
    }
}

/// Appends the pieces of `stmt` (statement `index` of the input) to `out`, in order.
/// `help`: whether it needs lowering help as given (`stmt::needs_lowering_help`). `rounding`:
/// the kernel's additions round (see `stmt::splittable_dims`).
fn peel(
    index: usize,
    stmt: Stmt,
    help: bool,
    rounding: bool,
    budget: &mut usize,
    out: &mut Vec<Stmt>,
) -> Result<(), PassError> {
    // The statement as given, which an error names. Only one that needs a cut can fail, and
    // canonicalizing adds no guard and no floordiv/mod, so only such a one is kept.
    let given = help.then(|| stmt.clone());
    let Some(s) = canonicalize_owned(stmt) else {
        return Ok(());
    };
    if !needs_lowering_help(&s) {
        out.push(s);
        return Ok(());
    }
    let given = given.as_ref().unwrap_or(&s);
    let cut = choose(&s, rounding).ok_or_else(|| {
        fail(format!(
            "{} keeps a guard or a floordiv/mod that no cut removes",
            describe(index, given)
        ))
    })?;
    if cost(&s, cut) > *budget as u64 {
        return Err(PassError::TooManyStatements {
            pass: PeelDims::NAME,
            stmt: describe(index, given),
            limit: MAX_STATEMENTS,
        });
    }
    let pieces = apply(&s, cut);
    *budget -= pieces.len();
    for p in pieces {
        let help = needs_lowering_help(&p);
        peel(index, p, help, rounding, budget, out)?;
    }
    Ok(())
}

/// A way to cut a statement, with the number of pieces it makes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Cut {
    /// Split the range of the dim where `(c * d + c0) floordiv k` changes.
    Split { d: usize, c: i64, c0: i64, k: i64 },
    /// One statement per value of the dim.
    Peel { d: usize },
}

/// The cheapest cut; `None` when the statement has no dim left to cut.
///
/// Every cut makes progress: a peel removes a dim, and a split is taken only when it makes at
/// least two pieces, each with a shorter range.
fn choose(s: &Stmt, rounding: bool) -> Option<Cut> {
    let simp = Simplifier::new(&s.domain)?;
    let mut cuts = candidates(s, &simp);
    if order_matters(s) {
        // Only cuts of the outermost dim with several values keep the order of the points.
        let Some(d) = s.domain.iter().position(|r| r.len() > 1) else {
            return (!s.domain.is_empty()).then_some(Cut::Peel { d: 0 });
        };
        cuts.retain(|c| matches!(c, Cut::Split { d: x, .. } if *x == d));
        cuts.push(Cut::Peel { d });
    } else if rounding && matches!(s.action, Action::Accumulate { .. }) {
        // Float sums round in the order of their terms: prefer cuts along dims that keep the
        // order of the points adding into the same element. When there is none, peel the
        // innermost dim that keeps the order before the first dim a cut wants (a Col2Im's
        // outer kernel dim when only inner image dims are padded): in each piece that dim is
        // fixed, so a cut it stood in the way of may keep the order. Only when there is no
        // such dim either, any cut: the op still lowers, and a float result may differ from
        // the definition's by rounding.
        let splittable = splittable_dims(s, true);
        let dim = |c: &Cut| {
            let (Cut::Split { d, .. } | Cut::Peel { d }) = *c;
            d
        };
        let in_order: Vec<Cut> = cuts
            .iter()
            .copied()
            .filter(|c| splittable[dim(c)])
            .collect();
        let first_wanted = cuts.iter().map(dim).min();
        let before = first_wanted.and_then(|first| {
            (0..first)
                .rev()
                .find(|&d| splittable[d] && s.domain[d].len() > 1)
        });
        if !in_order.is_empty() {
            cuts = in_order;
        } else if let Some(d) = before {
            cuts = vec![Cut::Peel { d }];
        }
    }
    let best = cuts
        .into_iter()
        .map(|c| (cost(s, c), c))
        .min()
        .map(|(_, c)| c)
        .or_else(|| fallback(s))?;
    match best {
        // A split that does not split (the ranges could not fold the atom, say on overflow):
        // peel instead.
        Cut::Split { d, .. } if cost(s, best) < 2 => Some(Cut::Peel { d }),
        _ => Some(best),
    }
}

/// The cuts that would remove an offending atom or constraint.
fn candidates(s: &Stmt, simp: &Simplifier) -> Vec<Cut> {
    let mut out = Vec::new();
    let peel_smallest = |dims: Vec<usize>| {
        dims.into_iter()
            .filter(|&d| s.domain[d].len() > 1)
            .min_by_key(|&d| (s.domain[d].len(), d))
            .map(|d| Cut::Peel { d })
    };
    for e in exprs(s) {
        let Some(sum) = simp.sum_of(e) else { continue };
        sum.for_each_div_mod(&mut |atom| {
            let Some((arg, k)) = atom.div_mod_parts() else {
                return;
            };
            match arg.as_linear_in_one_dim() {
                Some((d, c, c0)) => out.push(Cut::Split { d, c, c0, k }),
                None => out.extend(peel_smallest(arg.dims_used())),
            }
        });
    }
    for c in &s.guard {
        if let Some(sum) = simp.sum_of(&c.expr).filter(Sum::is_linear) {
            out.extend(peel_smallest(sum.dims_used()));
        }
    }
    out
}

/// When no atom or constraint could be read: peel the first dim with several values that an
/// offending expression uses, or else any dim.
fn fallback(s: &Stmt) -> Option<Cut> {
    let used: Vec<usize> = exprs(s)
        .filter(|e| e.has_div_or_mod())
        .chain(s.guard.iter().map(|c| &c.expr))
        .flat_map(|e| e.dims_used())
        .collect();
    let d = used
        .into_iter()
        .find(|&d| s.domain.get(d).is_some_and(|r| r.len() > 1))
        .or((!s.domain.is_empty()).then_some(0))?;
    Some(Cut::Peel { d })
}

/// An upper bound of the number of pieces of a cut.
fn cost(s: &Stmt, cut: Cut) -> u64 {
    match cut {
        Cut::Peel { d } => s.domain[d].len(),
        Cut::Split { d, c, c0, k } => {
            let r = s.domain[d];
            let q = |v: i64| quotient(c, c0, k, v);
            let distinct = (q(r.hi - 1) - q(r.lo)).unsigned_abs() + 1;
            u64::try_from(distinct).unwrap_or(u64::MAX).min(r.len())
        }
    }
}

/// `floor((c * v + c0) / k)`, exactly.
fn quotient(c: i64, c0: i64, k: i64, v: i64) -> i128 {
    (i128::from(c) * i128::from(v) + i128::from(c0)).div_euclid(i128::from(k))
}

fn apply(s: &Stmt, cut: Cut) -> Vec<Stmt> {
    match cut {
        Cut::Peel { d } => {
            let r = s.domain[d];
            (r.lo..r.hi).map(|v| fix_dim(s, d, v)).collect()
        }
        Cut::Split { d, c, c0, k } => {
            quotient_pieces(s.domain[d].lo, s.domain[d].hi, |v| quotient(c, c0, k, v))
                .into_iter()
                .map(|(a, b)| with_range(s, d, a, b))
                .collect()
        }
    }
}

/// The maximal intervals of `[lo, hi)` on which the monotone `f` is constant, in order.
fn quotient_pieces(lo: i64, hi: i64, f: impl Fn(i64) -> i128) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut x = lo;
    while x < hi {
        let q = f(x);
        // The largest `y` in `[x, hi)` with `f(y) == q`; the set is an interval because `f`
        // is monotone.
        let (mut a, mut b) = (x, hi - 1);
        while a < b {
            // In i128: `b - a + 1` may not fit in i64.
            let m = (i128::from(a) + (i128::from(b) - i128::from(a) + 1) / 2) as i64;
            if f(m) == q {
                a = m;
            } else {
                b = m - 1;
            }
        }
        out.push((x, a + 1));
        x = a + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_follow_the_quotient() {
        let p = quotient_pieces(0, 10, |v| quotient(1, 2, 4, v));
        assert_eq!(p, vec![(0, 2), (2, 6), (6, 10)]);
        let p = quotient_pieces(0, 5, |v| quotient(-3, 0, 4, v));
        assert_eq!(p, vec![(0, 1), (1, 2), (2, 3), (3, 5)]);
    }
}
