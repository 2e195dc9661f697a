//! `split-guards`: index-set splitting. A guarded statement becomes guard-free statements over
//! sub-boxes of its domain, and a zero fill shrinks to the elements no later statement
//! overwrites, so that padding is written once.
//!
//! What it does:
//! - A constraint on a single dim is a range of that dim (canonicalize narrows it). A
//!   constraint that is affine in several dims is made single-dim by peeling: one of its dims
//!   (the one with the fewest values, usually a block offset or a kernel position) is fixed
//!   to each of its values in turn, one statement per value, and each statement is
//!   re-canonicalized. Col2Im's `0 <= l * stride - pad + k * dilation < image` becomes one
//!   guard-free statement per kernel position `k`, over the range of `l` where it holds.
//!   Statements whose guard is false everywhere disappear.
//! - An unguarded fill whose destination is a box loses every element that a later unguarded
//!   copy or fill overwrites completely (box subtraction). Reason: the last write to an
//!   element decides its value, and an `accumulate` in between reads the fill's zeros only
//!   where no later write overwrites them anyway.
//!
//! Peeling runs the points in another order, so a copy whose writes may collide (see
//! `stmt::order_matters`) is peeled only along its outermost dim.
//!
//! What it does not do: split on a constraint that holds a `floordiv` or `mod` (`split-dims`
//! or `peel-dims` handles those), peel beyond a budget of statements (the statement stays
//! guarded, for `peel-dims` to handle or report), or shrink a fill past an `accumulate` (which
//! adds to it).

use crate::boxes::{merge_adjacent, subtract, IndexBox};
use crate::pass::{impl_pass, IndexPass};
use crate::simplify::Simplifier;
use crate::stmt::{canonicalize_stmt, dst_box, fix_dim, order_matters, with_range};
use crate::sum::{Atom, Sum};
use crate::PassError;
use relayout_ir::{Action, AffineExpr, Kernel, Stmt};

/// Statements the peeling may create per kernel.
const MAX_STATEMENTS: usize = 16384;
/// Boxes a shrunk fill may become; beyond that the fill is kept whole.
const MAX_FILL_BOXES: usize = 256;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitGuards;

impl IndexPass for SplitGuards {
    const NAME: &'static str = "split-guards";

    fn run_index(&self, k: &Kernel) -> Result<Kernel, PassError> {
        let mut budget = MAX_STATEMENTS;
        let mut stmts = Vec::new();
        for s in &k.stmts {
            split(s, &mut budget, &mut stmts);
        }
        Ok(Kernel {
            stmts: shrink_fills(stmts),
            ..k.clone()
        })
    }
}

impl_pass!(index SplitGuards);

/// Appends the guard-free pieces of `stmt` to `out`, in order.
fn split(stmt: &Stmt, budget: &mut usize, out: &mut Vec<Stmt>) {
    let Some(s) = canonicalize_stmt(stmt) else {
        return;
    };
    if let Some((d, lo, hi)) = interior(&s).filter(|_| *budget >= 2) {
        *budget -= 2;
        let r = s.domain[d];
        for (a, b) in [(r.lo, lo), (lo, hi), (hi, r.hi)] {
            if a < b {
                split(&with_range(&s, d, a, b), budget, out);
            }
        }
        return;
    }
    let Some(d) = dim_to_peel(&s) else {
        out.push(s);
        return;
    };
    let r = s.domain[d];
    let n = usize::try_from(r.len()).unwrap_or(usize::MAX);
    if n > *budget {
        out.push(s);
        return;
    }
    *budget -= n;
    for v in r.lo..r.hi {
        split(&fix_dim(&s, d, v), budget, out);
    }
}

/// The dim to peel: over the affine multi-dim constraints, the dim with the fewest values
/// (the first on ties). `None` when no constraint is affine in several dims, or when the
/// statement's order matters and that dim is not the outermost one with several values.
fn dim_to_peel(s: &Stmt) -> Option<usize> {
    let simp = Simplifier::new(&s.domain)?;
    let best = s
        .guard
        .iter()
        .filter_map(|c| simp.sum_of(&c.expr))
        .filter(|sum| sum.is_linear())
        .filter_map(|sum| {
            let dims = sum.dims_used();
            (dims.len() >= 2)
                .then(|| dims.into_iter().min_by_key(|&d| (s.domain[d].len(), d)))
                .flatten()
        })
        .min_by_key(|&d| (s.domain[d].len(), d))?;
    let outermost = s.domain.iter().position(|r| r.len() > 1);
    if order_matters(s) && outermost != Some(best) {
        return None;
    }
    Some(best)
}

/// For a copy: a range `[lo, hi)` of one dim, strictly inside its range, where some affine
/// multi-dim constraint holds whatever the other dims are, as `(dim, lo, hi)`. The dim is the
/// one of the constraint with the most values (a row, not a block offset).
///
/// Reason: peeling the dim with the fewest values (below) makes one statement per block
/// offset, and each of them then reads the source in a separate strided pass (SpaceToBatchND
/// with padding: one statement per phase, four passes over the input for a 2x2 block). The
/// interior instead stays one statement over all block offsets, which reads the source in
/// order; only the thin boundary slabs are peeled. Accumulates are left to the peeling: their
/// statement per kernel position is what the code generator vectorises.
fn interior(s: &Stmt) -> Option<(usize, i64, i64)> {
    if !matches!(s.action, Action::Copy { .. }) {
        return None;
    }
    let simp = Simplifier::new(&s.domain)?;
    let outermost = s.domain.iter().position(|r| r.len() > 1);
    s.guard.iter().find_map(|c| {
        let sum = simp.sum_of(&c.expr).filter(Sum::is_linear)?;
        let dims = sum.dims_used();
        if dims.len() < 2 {
            return None;
        }
        let d = dims
            .into_iter()
            .max_by_key(|&d| (s.domain[d].len(), std::cmp::Reverse(d)))?;
        if order_matters(s) && outermost != Some(d) {
            return None;
        }
        let (own, rest) = sum.partition(|a, _| *a == Atom::Dim(d));
        let (_, coef) = own.as_single_term()?;
        let r = simp.bounds(&rest)?;
        // For every value of the rest: c.lo <= coef * x + rest <= c.hi - 1.
        let need_lo = c.lo.checked_sub(r.lo)?;
        let need_hi = c.hi.checked_sub(1)?.checked_sub(r.hi)?;
        let (x_lo, x_hi) = if coef > 0 {
            (div_ceil(need_lo, coef), need_hi.div_euclid(coef))
        } else {
            // Dividing by a negative coefficient flips both inequalities.
            (div_ceil(need_hi, coef), need_lo.div_euclid(coef))
        };
        let range = s.domain[d];
        let lo = x_lo.max(range.lo);
        let hi = x_hi.checked_add(1)?.min(range.hi);
        (hi - lo >= 2 && (lo > range.lo || hi < range.hi)).then_some((d, lo, hi))
    })
}

/// `ceil(a / b)` for `b != 0`.
fn div_ceil(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// Replaces each unguarded box-shaped fill by fills of what no later copy or fill overwrites.
fn shrink_fills(stmts: Vec<Stmt>) -> Vec<Stmt> {
    let boxes: Vec<Option<IndexBox>> = stmts
        .iter()
        .map(|s| match s.action {
            Action::Copy { .. } | Action::Fill => dst_box(s),
            Action::Accumulate { .. } => None,
        })
        .collect();
    let mut out = Vec::with_capacity(stmts.len());
    for (i, s) in stmts.iter().enumerate() {
        let shrunk = match (&s.action, &boxes[i]) {
            (Action::Fill, Some(region)) => remainder(region, &boxes[i + 1..]),
            _ => None,
        };
        match shrunk {
            Some(rest) => out.extend(rest.into_iter().map(fill_box)),
            None => out.push(s.clone()),
        }
    }
    out
}

/// `region` minus the later boxes, or `None` when nothing was removed or the difference is
/// too fragmented to be worth it.
fn remainder(region: &IndexBox, later: &[Option<IndexBox>]) -> Option<Vec<IndexBox>> {
    let mut rest = vec![region.clone()];
    for b in later.iter().flatten() {
        rest = rest.iter().flat_map(|r| subtract(r, b)).collect();
        if rest.len() > MAX_FILL_BOXES {
            return None;
        }
    }
    let rest = merge_adjacent(rest);
    (rest != [region.clone()]).then_some(rest)
}

/// `fill %dst[d0, d1, ...] = 0` over the box.
fn fill_box(b: IndexBox) -> Stmt {
    Stmt {
        dst: (0..b.len()).map(AffineExpr::Dim).collect(),
        domain: b,
        guard: Vec::new(),
        action: Action::Fill,
    }
}
