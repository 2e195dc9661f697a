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
//! - When every dim of such a constraint has more values than the budget of statements allows
//!   (a huge block size), one of them is cut into the intervals where the constraint holds
//!   for no value of the other dims, for some, and for all (see `band_cut`); the few values
//!   where it holds for some are then peeled.
//!
//! - Before any of that, a copy whose constraint holds for every value of its other dims over
//!   an interior range of its dim with the most values (a padded SpaceToBatchND's rows away
//!   from the padding) is cut into that interior and the slabs around it (see `interior`):
//!   the interior keeps all block offsets in one statement, which reads the source in order.
//!
//! Peeling and cutting run the points in another order, so a statement whose points may
//! write the same element (a copy not proven injective, or an `accumulate`, whose float sums
//! round in their order) is peeled or cut only along a dim before which every dim separates
//! its writes (see `stmt::splittable_dims`): each element keeps its writes in their order,
//! and Col2Im's float results stay bit-exact.
//!
//! What it does not do: split on a constraint that holds a `floordiv` or `mod` (`split-dims`
//! or `peel-dims` handles those), peel beyond a budget of statements (the statement stays
//! guarded, for `peel-dims` to handle or report), or shrink a fill past an `accumulate` (which
//! adds to it).

use crate::boxes::{merge_adjacent, subtract, IndexBox};
use crate::pass::{impl_pass, IndexPass};
use crate::simplify::Simplifier;
use crate::stmt::{
    additions_round, canonicalize_owned, canonicalize_with_range, dst_box, fix_dim, solve_scaled,
    splittable_dims_in,
};
use crate::sum::{Atom, Sum};
use crate::PassError;
use relayout_ir::{Action, AffineExpr, Constraint, DimRange, Kernel, Scalar, Stmt};

/// Statements the peeling may create per kernel.
const MAX_STATEMENTS: usize = 16384;
/// Boxes a shrunk fill may become; beyond that the fill is kept whole.
const MAX_FILL_BOXES: usize = 256;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct SplitGuards;

impl IndexPass for SplitGuards {
    const NAME: &'static str = "split-guards";

    fn run_index(&self, mut k: Kernel) -> Result<Kernel, PassError> {
        let mut budget = MAX_STATEMENTS;
        let mut stmts = Vec::new();
        let rounding = additions_round(k.dst.dtype);
        for s in std::mem::take(&mut k.stmts) {
            split_stmt(s, rounding, &mut budget, &mut stmts);
        }
        k.stmts = shrink_fills(stmts);
        Ok(k)
    }
}

impl_pass!(index SplitGuards);

/// Appends the guard-free pieces of `stmt` to `out`, in order. `rounding`: the kernel's
/// additions round (see `stmt::splittable_dims`).
fn split_stmt(stmt: Stmt, rounding: bool, budget: &mut usize, out: &mut Vec<Stmt>) {
    if let Some(s) = canonicalize_owned(stmt) {
        split(s, rounding, budget, out);
    }
}

/// [`split_stmt`] of a canonical statement. Each piece is canonicalized before it is split
/// in turn, and one that does nothing is dropped. The pieces are split depth first, in order,
/// from a stack of their own rather than by recursion: a staircase of bands (a huge block
/// against a huge pad, found by a fuzz target) is a chain of thousands of cuts, each piece
/// cut again, which overflowed a thread's stack.
fn split(s: Stmt, rounding: bool, budget: &mut usize, out: &mut Vec<Stmt>) {
    let mut pending = vec![s];
    while let Some(s) = pending.pop() {
        let first = pending.len();
        split_once(s, rounding, budget, out, &mut pending);
        // The pieces were pushed in order; the first is split next.
        pending[first..].reverse();
    }
}

/// One step of [`split`]: pushes the pieces of `s` to `pieces` in order, or, when it is not
/// split further, `s` to `out`.
fn split_once(
    s: Stmt,
    rounding: bool,
    budget: &mut usize,
    out: &mut Vec<Stmt>,
    pieces: &mut Vec<Stmt>,
) {
    let Some(facts) = Facts::of(&s, rounding) else {
        out.push(s);
        return;
    };
    let Some(d) = dim_to_peel(&s, &facts) else {
        out.push(s);
        return;
    };
    let r = s.domain[d];
    let n = usize::try_from(r.len()).unwrap_or(usize::MAX);
    // The interior only where the budget would allow peeling anyway: the slabs around it are
    // peeled, and a starved budget is better spent by `band_cut` below.
    if let Some((cut, lo, hi)) = interior(&s, &facts).filter(|_| n.saturating_add(2) <= *budget) {
        *budget -= 2;
        let range = s.domain[cut];
        for (a, b) in [(range.lo, lo), (lo, hi), (hi, range.hi)] {
            if a < b {
                pieces.extend(canonicalize_with_range(&s, cut, a, b));
            }
        }
        return;
    }
    if n <= *budget {
        *budget -= n;
        for v in r.lo..r.hi {
            pieces.extend(canonicalize_owned(fix_dim(&s, d, v)));
        }
        return;
    }
    match band_cut(&s, &facts) {
        Some((d, cuts)) if cuts.len() <= *budget => {
            *budget -= cuts.len();
            for (a, z) in cuts {
                pieces.extend(canonicalize_with_range(&s, d, a, z));
            }
        }
        _ => out.push(s),
    }
}

/// What `dim_to_peel`, `interior` and `band_cut` read of a statement, computed once per
/// statement. Reason: all three ask the same questions of the same statement in a row.
struct Facts<'a> {
    simp: Simplifier,
    /// The dims the statement may be split along (`stmt::splittable_dims`).
    splittable: Vec<bool>,
    /// The constraints of the guard that are affine in two dims or more, in order, with their
    /// sums and the dims those use.
    multi_dim: Vec<(&'a Constraint, Sum, Vec<usize>)>,
}

impl<'a> Facts<'a> {
    /// `None` when the domain has an empty range or no constraint is affine in several dims:
    /// then nothing is peeled or cut.
    fn of(s: &'a Stmt, rounding: bool) -> Option<Facts<'a>> {
        let simp = Simplifier::new(&s.domain)?;
        let multi_dim: Vec<_> = s
            .guard
            .iter()
            .filter_map(|c| {
                let sum = simp.sum_of(&c.expr).filter(Sum::is_linear)?;
                let dims = sum.dims_used();
                (dims.len() >= 2).then_some((c, sum, dims))
            })
            .collect();
        if multi_dim.is_empty() {
            return None;
        }
        // A copy's `splittable_dims` is the same whatever `rounding` is, so `interior` (which
        // asks for copies only, without rounding) reads this one too.
        let splittable = splittable_dims_in(s, rounding, &simp);
        Some(Facts {
            simp,
            splittable,
            multi_dim,
        })
    }
}

/// The statement cut along one dim `d` of a multi-dim affine constraint `lo <= b * d + r < hi`
/// (`r` the rest of the expression, over the other dims), for when every dim of the
/// constraint has too many values to peel (a huge block size).
///
/// The values of `d` fall into at most five intervals, in order: where the constraint fails
/// for every value of `r` (`b * d + max r < lo`), where it holds for some, where it holds for
/// every value of `r` (`lo <= b * d + min r` and `b * d + max r < hi`), where it holds for
/// some, where it fails for all. Re-canonicalizing drops the statement on the first kind and
/// the constraint on the third; on each piece of the second kind `d` has at most
/// `(max r - min r) / |b| + 1` values, few when `b` is the coarse digit of a mixed radix (`d0 + d1 * B`, `d0` in `[0, B)`),
/// and peeling it makes the constraint single-dim. The dim with the fewest such edge values is
/// cut, among the dims the statement may be split along (`stmt::splittable_dims`).
/// `None` when no cut makes two pieces or more (then every piece is of one kind already).
/// The dim and the intervals it is cut into, in order.
fn band_cut(s: &Stmt, f: &Facts) -> Option<(usize, Pieces)> {
    let simp = &f.simp;
    // (values of the dim where the constraint holds for some points only, dim, pieces)
    let mut best: Option<(u64, usize, Pieces)> = None;
    for (c, sum, _) in &f.multi_dim {
        for (atom, b) in sum.terms() {
            let Atom::Dim(d) = *atom else { continue };
            if !f.splittable[d] {
                continue;
            }
            let (_, rest) = sum.partition(|a, _| *a == Atom::Dim(d));
            let Some(rb) = simp.bounds(&rest) else {
                continue;
            };
            let (lo, hi) = (i128::from(c.lo), i128::from(c.hi) - 1);
            let (rlo, rhi) = (i128::from(rb.lo), i128::from(rb.hi));
            let (Some(every), Some(some)) = (
                solve_scaled(*b, lo - rlo, hi - rhi),
                solve_scaled(*b, lo - rhi, hi - rlo),
            ) else {
                continue;
            };
            let range = s.domain[d];
            let len = |(a, z): (i64, i64)| DimRange::new(a.max(range.lo), z.min(range.hi)).len();
            let edge = len(some) - len(every).min(len(some));
            let mut points = vec![some.0, some.1];
            if every.0 < every.1 {
                points.extend([every.0, every.1]);
            }
            let pieces = cut_at(range, points);
            if pieces.len() >= 2 && best.as_ref().is_none_or(|(e, _, _)| edge < *e) {
                best = Some((edge, d, pieces));
            }
        }
    }
    let (_, d, pieces) = best?;
    Some((d, pieces))
}

/// Consecutive half-open intervals of one dim.
type Pieces = Vec<(i64, i64)>;

/// `range` cut at the points strictly inside it, as consecutive non-empty intervals in order.
fn cut_at(range: DimRange, points: Vec<i64>) -> Pieces {
    let mut inside: Vec<i64> = points
        .into_iter()
        .filter(|&p| range.lo < p && p < range.hi)
        .collect();
    inside.sort_unstable();
    inside.dedup();
    let mut out = Vec::with_capacity(inside.len() + 1);
    let mut start = range.lo;
    for p in inside.into_iter().chain([range.hi]) {
        out.push((start, p));
        start = p;
    }
    out
}

/// The dim to peel: over the affine multi-dim constraints, the dim with the fewest values
/// (the first on ties) among those the statement may be split along
/// (`stmt::splittable_dims`: for Col2Im's accumulates, a kernel position rather than the
/// block position after it, whose peeling would add each cell's contributions in another
/// order). Fixing a dim with one value (what a cut can leave) keeps the order of the points.
/// `None` when no constraint is affine in several dims, or none of their dims may be split.
fn dim_to_peel(s: &Stmt, f: &Facts) -> Option<usize> {
    f.multi_dim
        .iter()
        .flat_map(|(_, _, dims)| dims.iter().copied())
        .filter(|&d| s.domain[d].len() <= 1 || f.splittable[d])
        .min_by_key(|&d| (s.domain[d].len(), d))
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
fn interior(s: &Stmt, f: &Facts) -> Option<(usize, i64, i64)> {
    if !matches!(s.action, Action::Copy { .. }) {
        return None;
    }
    // Only copies come here: no additions to round.
    f.multi_dim.iter().find_map(|(c, sum, dims)| {
        let d = dims
            .iter()
            .copied()
            .max_by_key(|&d| (s.domain[d].len(), std::cmp::Reverse(d)))?;
        if !f.splittable[d] {
            return None;
        }
        let (own, rest) = sum.partition(|a, _| *a == Atom::Dim(d));
        let (_, coef) = own.as_single_term()?;
        let r = f.simp.bounds(&rest)?;
        // For every value of the rest: c.lo <= coef * x + rest <= c.hi - 1.
        let (first, end) = solve_scaled(
            coef,
            i128::from(c.lo) - i128::from(r.lo),
            i128::from(c.hi) - 1 - i128::from(r.hi),
        )?;
        let range = s.domain[d];
        let (lo, hi) = (first.max(range.lo), end.min(range.hi));
        (hi.checked_sub(lo)? >= 2 && (lo > range.lo || hi < range.hi)).then_some((d, lo, hi))
    })
}

/// Replaces each unguarded box-shaped fill by fills of what no later copy or fill overwrites.
fn shrink_fills(stmts: Vec<Stmt>) -> Vec<Stmt> {
    let boxes: Vec<Option<IndexBox>> = stmts
        .iter()
        .map(|s| match s.action {
            Action::Copy { .. } | Action::Fill { .. } => dst_box(s),
            Action::Accumulate { .. } => None,
        })
        .collect();
    let mut out = Vec::with_capacity(stmts.len());
    for (i, s) in stmts.into_iter().enumerate() {
        let shrunk = match (&s.action, &boxes[i]) {
            (Action::Fill { .. }, Some(region)) => remainder(region, &boxes[i + 1..]),
            _ => None,
        };
        match (shrunk, &s.action) {
            (Some(rest), &Action::Fill { value }) => {
                out.extend(rest.into_iter().map(|b| fill_box(b, value)))
            }
            _ => out.push(s),
        }
    }
    out
}

/// `region` minus the later boxes, or `None` when nothing was removed or the difference is
/// too fragmented to be worth it.
fn remainder(region: &IndexBox, later: &[Option<IndexBox>]) -> Option<Vec<IndexBox>> {
    let mut rest = vec![region.clone()];
    for b in later.iter().flatten() {
        rest = rest.into_iter().flat_map(|r| subtract(r, b)).collect();
        if rest.len() > MAX_FILL_BOXES {
            return None;
        }
    }
    let rest = merge_adjacent(rest);
    (rest != [region.clone()]).then_some(rest)
}

/// `fill %dst[d0, d1, ...] = value` over the box.
fn fill_box(b: IndexBox, value: Scalar) -> Stmt {
    Stmt {
        dst: (0..b.len()).map(AffineExpr::Dim).collect(),
        domain: b,
        guard: Vec::new(),
        action: Action::Fill { value },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::{interpret, parse_kernel, verify_kernel};

    /// Splits every statement of `text` with a budget of `budget` statements, and checks that
    /// no guard is left, that the result verifies and that the interpreter computes the same
    /// bytes before and after. Returns the statements.
    fn split_with_budget(text: &str, budget: usize) -> Vec<Stmt> {
        let k = parse_kernel(text).unwrap_or_else(|e| panic!("{}", e.render(text)));
        let mut left = budget;
        let mut stmts = Vec::new();
        let rounding = additions_round(k.dst.dtype);
        for s in k.stmts.clone() {
            split_stmt(s, rounding, &mut left, &mut stmts);
        }
        let out = Kernel {
            stmts: stmts.clone(),
            ..k.clone()
        };
        assert!(stmts.iter().all(|s| s.guard.is_empty()), "{out}");
        verify_kernel(&out).unwrap_or_else(|e| panic!("{e}"));
        let n = |t: &relayout_ir::TensorType| t.size_bytes().unwrap() as usize;
        let src: Vec<u8> = (0..n(&k.src)).map(|i| (i * 7 + 3) as u8).collect();
        let dst0: Vec<u8> = (0..n(&k.dst)).map(|i| (i * 5 + 1) as u8).collect();
        let (mut want, mut got) = (dst0.clone(), dst0);
        interpret(&k, &src, &mut want).unwrap();
        interpret(&out, &src, &mut got).unwrap();
        assert_eq!(want, got, "split changed the result:\n{k}\ninto\n{out}");
        stmts
    }

    #[test]
    fn too_many_values_to_peel_cut_the_coarse_digit() {
        // SpaceToBatch's padded copy, with a budget below the number of values of both dims
        // (as a huge block size gives): the block row `d1` is cut at the rows where the guard
        // starts and stops holding for every block offset `d0`, and the two edge rows are
        // peeled.
        let stmts = split_with_budget(
            "kernel @s2b(%src: tensor<1x50x1xui8>) -> (%dst: tensor<8x8x1xui8>) {
  copy %dst[d0, d1, 0] = %src[0, d0 + d1 * 8 - 3, 0]
      for d0 in 0 to 8, d1 in 0 to 8
      where 0 <= d0 + d1 * 8 - 3 < 50
}",
            7,
        );
        assert_eq!(stmts.len(), 3, "{stmts:?}");
        // The same with the digits in the other order and a negative coefficient.
        split_with_budget(
            "kernel @r(%src: tensor<40xi16>) -> (%dst: tensor<8x8xi16>) {
  copy %dst[d0, d1] = %src[45 - d0 * 8 - d1]
      for d0 in 0 to 8, d1 in 0 to 8
      where 0 <= 45 - d0 * 8 - d1 < 40
}",
            7,
        );
    }

    #[test]
    fn a_cut_keeps_the_order_of_colliding_writes() {
        // Every point writes the same element, so only the outermost dim may be cut.
        let stmts = split_with_budget(
            "kernel @c(%src: tensor<20xi32>) -> (%dst: tensor<1xi32>) {
  copy %dst[0] = %src[d0 * 8 + d1]
      for d0 in 0 to 8, d1 in 0 to 8
      where 0 <= d0 * 8 + d1 < 20
}",
            7,
        );
        // Rows 0 and 1 whole, then row 2 up to its guard.
        assert_eq!(stmts.len(), 2, "{stmts:?}");
        assert_eq!(stmts[0].domain[0], DimRange::new(0, 2));
    }

    #[test]
    fn cuts_are_consecutive_intervals() {
        let r = DimRange::new(0, 10);
        assert_eq!(cut_at(r, vec![-5, 3, 3, 12]), vec![(0, 3), (3, 10)]);
        assert_eq!(cut_at(r, vec![0, 10, 0, 10]), vec![(0, 10)]);
        assert_eq!(
            cut_at(r, vec![8, 2, 5, 1]),
            vec![(0, 1), (1, 2), (2, 5), (5, 8), (8, 10)]
        );
    }
}
