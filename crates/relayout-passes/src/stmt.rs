//! Statement-level helpers shared by the index-map passes: canonicalizing one statement,
//! rewriting its dims, and the analyses that decide whether a rewrite may reorder its points.

use crate::simplify::Simplifier;
use crate::sum::Sum;
use relayout_ir::{Action, AffineExpr, Constraint, DimRange, Stmt};

/// How many times [`canonicalize_stmt`] re-simplifies the guard after it narrowed a range.
const MAX_ROUNDS: usize = 16;

/// The canonical form of a statement, or `None` when it does nothing (an empty domain, or a
/// guard that no point of the domain satisfies).
///
/// - Every map and guard expression is simplified with the ranges of the dims.
/// - A guard constraint that the ranges prove always true is dropped. Reason: a conjunct that
///   holds at every point does not change the set of points.
/// - A constraint on a single dim (`lo <= c * d + c0 < hi`, or `d floordiv k + c0`) narrows
///   the range of that dim and is dropped. Reason: it selects exactly an interval of `d`, and
///   outside it the statement does nothing.
/// - Constraints with the same expression are intersected.
///
/// The number of dims does not change, and neither does the order of the points that remain.
pub(crate) fn canonicalize_stmt(stmt: &Stmt) -> Option<Stmt> {
    canonicalize_over(stmt, stmt.domain.clone())
}

/// [`canonicalize_stmt`] of the statement with the range of dim `d` replaced by `[lo, hi)`
/// ([`with_range`]). Reason: a piece whose guard fails everywhere (most pieces around a
/// padded interior) is then dropped before any of its expressions is copied.
pub(crate) fn canonicalize_with_range(stmt: &Stmt, d: usize, lo: i64, hi: i64) -> Option<Stmt> {
    let mut domain = stmt.domain.clone();
    domain[d] = DimRange::new(lo, hi);
    canonicalize_over(stmt, domain)
}

/// [`canonicalize_stmt`] of the statement over `domain` instead of its own.
fn canonicalize_over(stmt: &Stmt, domain: Vec<DimRange>) -> Option<Stmt> {
    let (domain, simp, canons) = narrowed_domain(domain, &stmt.guard)?;
    // Every expression is simplified from its original form with the final ranges, in one go.
    // Reason: the verifier proves a guarded access in bounds by finding the guard's
    // expression inside the access, so equal expressions must stay equal; simplifying each
    // one by the same function of the same ranges guarantees it.
    let guard = canonical_guard(&simp, &stmt.guard, canons)?;
    Some(Stmt {
        dst: stmt.dst.iter().map(|e| simp.simplify(e)).collect(),
        action: map_action(&stmt.action, |e| simp.simplify(e)),
        domain,
        guard,
    })
}

/// [`canonicalize_stmt`] of a statement the caller no longer needs: its expressions that are
/// simplified already are moved into the result instead of copied. Reason: the passes that
/// cut statements into pieces canonicalize each fresh piece and then drop it.
pub(crate) fn canonicalize_owned(stmt: Stmt) -> Option<Stmt> {
    let (domain, simp, canons) = narrowed_domain(stmt.domain.clone(), &stmt.guard)?;
    // As in `canonicalize_stmt`: every expression simplified with the final ranges.
    let guard = canonical_guard(&simp, &stmt.guard, canons)?;
    let simplify_all = |v: Vec<AffineExpr>| v.into_iter().map(|e| simp.simplify_owned(e)).collect();
    let action = match stmt.action {
        Action::Copy { src } => Action::Copy {
            src: simplify_all(src),
        },
        Action::Accumulate { src } => Action::Accumulate {
            src: simplify_all(src),
        },
        Action::Fill { value } => Action::Fill { value },
    };
    Some(Stmt {
        dst: simplify_all(stmt.dst),
        action,
        domain,
        guard,
    })
}

/// The canonical guard, from what each constraint of `guard` is over the final domain;
/// `None` when it is false.
fn canonical_guard(
    simp: &Simplifier,
    guard: &[Constraint],
    canons: Vec<Canon>,
) -> Option<Vec<Constraint>> {
    let mut out: Vec<Constraint> = Vec::new();
    for (c, canon) in guard.iter().zip(canons) {
        match canon {
            Canon::Never => return None,
            Canon::Always => {}
            // Only when the narrowing rounds ran out; the constraint still holds as written.
            Canon::Narrow(..) => add_constraint(&mut out, simplified(simp, c)),
            Canon::Keep(sum) => add_constraint(
                &mut out,
                Constraint {
                    expr: sum.map_or_else(|| c.expr.clone(), |s| s.to_expr()),
                    lo: c.lo,
                    hi: c.hi,
                },
            ),
        }
    }
    if out.iter().any(|c| c.lo >= c.hi) {
        return None;
    }
    Some(out)
}

/// The domain narrowed by the single-dim constraints of the guard, repeated while narrowing
/// one range lets another constraint narrow further; `None` when it becomes empty or a
/// constraint is provably false. With it, a simplifier over it and what each constraint of
/// the guard is over it. Reason: the round that narrows nothing more has just computed
/// those, over the final domain, so the caller need not compute them again.
fn narrowed_domain(
    mut domain: Vec<DimRange>,
    guard: &[Constraint],
) -> Option<(Vec<DimRange>, Simplifier, Vec<Canon>)> {
    if domain.iter().any(DimRange::is_empty) {
        return None;
    }
    for _ in 0..MAX_ROUNDS {
        let simp = Simplifier::new(&domain)?;
        let canons = canon_guard(&simp, guard)?;
        let mut narrowed = false;
        for canon in &canons {
            if let Canon::Narrow(d, lo, hi) = *canon {
                let r = &mut domain[d];
                let new = DimRange::new(r.lo.max(lo), r.hi.min(hi));
                if new.is_empty() {
                    return None;
                }
                narrowed |= new != *r;
                *r = new;
            }
        }
        if !narrowed {
            return Some((domain, simp, canons));
        }
    }
    // The rounds ran out: the last one narrowed the domain its constraints were read over.
    let simp = Simplifier::new(&domain)?;
    let canons = canon_guard(&simp, guard)?;
    Some((domain, simp, canons))
}

/// [`canon_constraint`] of every constraint of the guard, in order; `None` when one is
/// provably false.
fn canon_guard(simp: &Simplifier, guard: &[Constraint]) -> Option<Vec<Canon>> {
    guard
        .iter()
        .map(|c| match canon_constraint(simp, c) {
            Canon::Never => None,
            canon => Some(canon),
        })
        .collect()
}

fn simplified(simp: &Simplifier, c: &Constraint) -> Constraint {
    Constraint {
        expr: simp.simplify(&c.expr),
        lo: c.lo,
        hi: c.hi,
    }
}

/// Adds `c` to a guard, intersecting it with a constraint on the same expression.
fn add_constraint(guard: &mut Vec<Constraint>, c: Constraint) {
    match guard.iter_mut().find(|g| g.expr == c.expr) {
        Some(g) => {
            g.lo = g.lo.max(c.lo);
            g.hi = g.hi.min(c.hi);
        }
        None => guard.push(c),
    }
}

enum Canon {
    Always,
    Never,
    /// The constraint is `lo <= d < hi` for the dim `d`.
    Narrow(usize, i64, i64),
    /// The constraint stays, over this sum (`None`: as written, when it has no sum). The sum
    /// becomes an expression only if the constraint ends in the guard.
    Keep(Option<Sum>),
}

fn canon_constraint(simp: &Simplifier, c: &Constraint) -> Canon {
    if c.lo >= c.hi {
        return Canon::Never;
    }
    let Some(s) = simp.sum_of(&c.expr) else {
        return Canon::Keep(None);
    };
    if let Some(b) = simp.bounds(&s) {
        if b.lo >= c.lo && b.hi < c.hi {
            return Canon::Always;
        }
        if b.hi < c.lo || b.lo >= c.hi {
            return Canon::Never;
        }
    }
    if let Some((d, coef, c0)) = s.as_linear_in_one_dim() {
        if let Some((lo, hi)) = solve_linear(coef, c0, c.lo, c.hi) {
            return Canon::Narrow(d, lo, hi);
        }
    }
    if let Some((d, lo, hi)) = solve_floordiv(&s, c.lo, c.hi) {
        return Canon::Narrow(d, lo, hi);
    }
    Canon::Keep(Some(s))
}

/// The half-open interval of integers `d` with `lo <= coef * d + c0 < hi`, clamped to `i64`.
fn solve_linear(coef: i64, c0: i64, lo: i64, hi: i64) -> Option<(i64, i64)> {
    let c0 = i128::from(c0);
    solve_scaled(coef, i128::from(lo) - c0, i128::from(hi) - 1 - c0)
}

/// The half-open interval of integers `d` with `a <= coef * d <= b`, clamped to `i64` (empty
/// when its end is at or before its start); `None` when `coef` is 0.
pub(crate) fn solve_scaled(coef: i64, a: i128, b: i128) -> Option<(i64, i64)> {
    let (first, last) = match i128::from(coef) {
        0 => return None,
        c if c > 0 => (ceil_div(a, c), floor_div(b, c)),
        c => (ceil_div(b, c), floor_div(a, c)),
    };
    Some((clamp(first), clamp(last + 1)))
}

/// `lo <= d floordiv k + c0 < hi` is `k * (lo - c0) <= d < k * (hi - c0)`.
/// Reason: `q = d floordiv k` satisfies `k*q <= d < k*(q+1)`, so `q >= m` iff `d >= k*m` and
/// `q < n` iff `d < k*n`.
fn solve_floordiv(s: &crate::sum::Sum, lo: i64, hi: i64) -> Option<(usize, i64, i64)> {
    let [(crate::sum::Atom::FloorDiv(arg, k), 1)] = s.terms() else {
        return None;
    };
    let d = arg.as_dim()?;
    let c0 = i128::from(s.constant_part());
    let k = i128::from(*k);
    let first = k * (i128::from(lo) - c0);
    let end = k * (i128::from(hi) - c0);
    Some((d, clamp(first), clamp(end)))
}

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: i128, b: i128) -> i128 {
    -floor_div(-a, b)
}

fn clamp(v: i128) -> i64 {
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The action with `f` applied to every source index.
pub(crate) fn map_action(a: &Action, f: impl Fn(&AffineExpr) -> AffineExpr) -> Action {
    match a {
        Action::Copy { src } => Action::Copy {
            src: src.iter().map(f).collect(),
        },
        Action::Accumulate { src } => Action::Accumulate {
            src: src.iter().map(f).collect(),
        },
        Action::Fill { value } => Action::Fill { value: *value },
    }
}

/// The statement over a new domain, with every dim `i` of every expression replaced by `f(i)`.
pub(crate) fn substitute(
    stmt: &Stmt,
    domain: Vec<DimRange>,
    f: &impl Fn(usize) -> AffineExpr,
) -> Stmt {
    Stmt {
        domain,
        guard: stmt
            .guard
            .iter()
            .map(|c| Constraint {
                expr: c.expr.substitute(f),
                lo: c.lo,
                hi: c.hi,
            })
            .collect(),
        dst: stmt.dst.iter().map(|e| e.substitute(f)).collect(),
        action: map_action(&stmt.action, |e| e.substitute(f)),
    }
}

/// The statement with dim `d` fixed to `value` and removed from the domain (later dims are
/// renumbered down by one).
pub(crate) fn fix_dim(stmt: &Stmt, d: usize, value: i64) -> Stmt {
    let mut domain = stmt.domain.clone();
    domain.remove(d);
    substitute(stmt, domain, &|i| match i.cmp(&d) {
        std::cmp::Ordering::Less => AffineExpr::Dim(i),
        std::cmp::Ordering::Equal => AffineExpr::Const(value),
        std::cmp::Ordering::Greater => AffineExpr::Dim(i - 1),
    })
}

/// The statement with the range of dim `d` replaced by `[lo, hi)`.
pub(crate) fn with_range(stmt: &Stmt, d: usize, lo: i64, hi: i64) -> Stmt {
    let mut s = stmt.clone();
    s.domain[d] = DimRange::new(lo, hi);
    s
}

/// Every expression of the statement: destination, source, guard.
pub(crate) fn exprs(stmt: &Stmt) -> impl Iterator<Item = &AffineExpr> {
    stmt.dst
        .iter()
        .chain(stmt.action.src_map().unwrap_or(&[]))
        .chain(stmt.guard.iter().map(|c| &c.expr))
}

/// True when the statement has a guard or a `floordiv`/`mod` in a map: what the loop IR cannot
/// express.
pub(crate) fn needs_lowering_help(stmt: &Stmt) -> bool {
    !stmt.guard.is_empty() || exprs(stmt).any(AffineExpr::has_div_or_mod)
}

/// The destination map as linear forms: per index, `(dim, coef)` pairs and a constant. `None`
/// when an index is not affine in the dims after simplification.
type LinearIndex = (Vec<(usize, i64)>, i64);

/// The destination indices as sums over the domain of `simp` (`None` where one cannot be built).
fn dst_sums(stmt: &Stmt, simp: &Simplifier) -> Vec<Option<Sum>> {
    stmt.dst.iter().map(|e| simp.sum_of(e)).collect()
}

/// [`LinearIndex`]es of the destination, from its sums ([`dst_sums`]).
fn linear_dst(sums: &[Option<Sum>]) -> Option<Vec<LinearIndex>> {
    sums.iter()
        .map(|s| {
            let s = s.as_ref()?;
            let terms = s
                .terms()
                .iter()
                .map(|(a, c)| match a {
                    crate::sum::Atom::Dim(d) => Some((*d, *c)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((terms, s.constant_part()))
        })
        .collect()
}

/// The terms of one index on dims with more than one value, sorted by `|coef|`, or `None` when
/// a dim appears twice in the whole map (then the indices are not independent).
fn varying_terms(stmt: &Stmt, idx: &[LinearIndex]) -> Option<Vec<Vec<(i64, u64)>>> {
    let mut seen = vec![false; stmt.domain.len()];
    let mut out = Vec::with_capacity(idx.len());
    for (terms, _) in idx {
        let mut v = Vec::new();
        for &(d, c) in terms {
            let len = stmt.domain.get(d)?.len();
            if len <= 1 {
                continue;
            }
            if std::mem::replace(&mut seen[d], true) {
                return None;
            }
            v.push((c, len));
        }
        v.sort_by_key(|&(c, _)| c.unsigned_abs());
        out.push(v);
    }
    Some(out)
}

/// True when no two points of the domain write the same destination element.
///
/// Proven only for maps where each dim with more than one value appears in exactly one
/// destination index, and the dims of each index form a mixed radix: sorted by `|coef|`,
/// `|c_(j+1)| >= |c_j| * len_j`. Reason: then `sum |c_i| * (len_i - 1) < |c_(j+1)|` for the
/// digits below `j+1`, so the index determines every digit (the sign of a coefficient only
/// mirrors its digit).
pub(crate) fn dst_injective(stmt: &Stmt) -> bool {
    Simplifier::new(&stmt.domain)
        .is_some_and(|simp| injective_from_sums(stmt, &dst_sums(stmt, &simp)))
}

/// [`dst_injective`], from the destination's sums ([`dst_sums`]).
fn injective_from_sums(stmt: &Stmt, sums: &[Option<Sum>]) -> bool {
    let Some(idx) = linear_dst(sums) else {
        return false;
    };
    let Some(per_index) = varying_terms(stmt, &idx) else {
        return false;
    };
    let used: usize = per_index.iter().map(Vec::len).sum();
    let varying = stmt.domain.iter().filter(|r| r.len() > 1).count();
    used == varying
        && per_index.iter().all(|terms| {
            let mut need: u64 = 1;
            terms.iter().all(|&(c, len)| {
                let ok = c.unsigned_abs() >= need;
                need = c.unsigned_abs().saturating_mul(len);
                ok
            })
        })
}

/// True when reordering the points of the statement may change which value an element ends
/// with: a copy whose writes are not proven disjoint. A fill writes zeros wherever it writes.
/// An `accumulate` ends with the same value in any order for integers, but its float sums
/// round in the order of their terms: the passes that split statements ask
/// [`splittable_dims`], which covers both.
pub(crate) fn order_matters(stmt: &Stmt) -> bool {
    matches!(stmt.action, Action::Copy { .. }) && !dst_injective(stmt)
}

/// Whether additions of `dtype` round, so that their order shows in the result: floats and
/// complex numbers. Integers wrap the same way in any order (and bool's `or` has no order).
pub(crate) fn additions_round(dtype: relayout_ir::DType) -> bool {
    dtype.is_float() || dtype.is_complex()
}

/// For each dim `d`: whether running the statement as one statement per value (or interval)
/// of `d`, in order, keeps the order in which any two points that write the same element
/// run, so that every element gets the same writes, or for `accumulate` the same additions,
/// in the same order (floats round after each addition, so their order shows in the bits).
/// Computed once per statement, for the passes that weigh several dims.
///
/// The split runs the points in the order of (`d`, then all dims). Two points that write the
/// same element agree on every dim that *separates* the destination (a dim that is alone in
/// some destination index, with a non-zero coefficient: points that differ in it write
/// different elements). So when every dim before `d` with several values separates, such
/// points agree on the dims before `d`, and their order is decided by `d` and the dims after
/// it in both orders. Col2Im: its channels and batch separate, so its kernel-position dims
/// may be split, and its block positions, which come after them, may not.
///
/// `rounding`: the kernel's additions round (floats and complex numbers); integer sums wrap
/// the same way in any order, so their accumulates may be split along any dim.
pub(crate) fn splittable_dims(stmt: &Stmt, rounding: bool) -> Vec<bool> {
    match Simplifier::new(&stmt.domain) {
        Some(simp) => splittable_dims_in(stmt, rounding, &simp),
        // Nothing is proven on an empty range: a copy's writes are not proven disjoint.
        None => {
            let free = match stmt.action {
                Action::Copy { .. } => false,
                Action::Accumulate { .. } => !rounding,
                Action::Fill { .. } => true,
            };
            vec![free; stmt.domain.len()]
        }
    }
}

/// [`splittable_dims`] with a simplifier over the statement's domain. Reason: a caller that
/// has one saves building another, and the destination's sums serve both the injectivity
/// test and the separating dims.
pub(crate) fn splittable_dims_in(stmt: &Stmt, rounding: bool, simp: &Simplifier) -> Vec<bool> {
    let n = stmt.domain.len();
    let sums = match stmt.action {
        Action::Copy { .. } => {
            let sums = dst_sums(stmt, simp);
            if injective_from_sums(stmt, &sums) {
                return vec![true; n];
            }
            sums
        }
        Action::Accumulate { .. } if rounding => dst_sums(stmt, simp),
        Action::Accumulate { .. } | Action::Fill { .. } => return vec![true; n],
    };
    let mut separates = vec![false; n];
    for sum in sums.iter().flatten().filter(|s| s.is_linear()) {
        if let [only] = sum.dims_used()[..] {
            separates[only] = true;
        }
    }
    // Dim `d` may be split while every dim before it is fixed or separates.
    let mut out = Vec::with_capacity(n);
    let mut so_far = true;
    for (r, sep) in stmt.domain.iter().zip(separates) {
        out.push(so_far);
        so_far &= r.len() <= 1 || sep;
    }
    out
}

/// The box of destination elements the statement writes, as one half-open range per
/// destination index, when that set is exactly a box: no guard, each varying dim in at most
/// one index, and each index a dense mixed radix (sorted by `|coef|`: `|c_1| = 1`,
/// `|c_(j+1)| = |c_j| * len_j`), so that it takes every value between its bounds.
pub(crate) fn dst_box(stmt: &Stmt) -> Option<Vec<DimRange>> {
    if !stmt.guard.is_empty() || stmt.domain.iter().any(DimRange::is_empty) {
        return None;
    }
    let simp = Simplifier::new(&stmt.domain)?;
    let sums = dst_sums(stmt, &simp);
    let idx = linear_dst(&sums)?;
    let per_index = varying_terms(stmt, &idx)?;
    let mut out = Vec::with_capacity(idx.len());
    for (sum, terms) in sums.iter().zip(&per_index) {
        let mut need: u64 = 1;
        for &(c, len) in terms {
            if c.unsigned_abs() != need {
                return None;
            }
            need = need.checked_mul(len)?;
        }
        let b = simp.bounds(sum.as_ref()?)?;
        out.push(DimRange::new(b.lo, b.hi.checked_add(1)?));
    }
    Some(out)
}

/// `statement {i} (`first line`)`, for error messages.
pub(crate) fn describe(i: usize, stmt: &Stmt) -> String {
    let text = stmt.to_string();
    let first = text.lines().next().unwrap_or_default();
    format!("statement {i} (`{first}`)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: usize) -> AffineExpr {
        AffineExpr::dim(i)
    }

    fn copy(domain: &[(i64, i64)], dst: Vec<AffineExpr>, src: Vec<AffineExpr>) -> Stmt {
        Stmt {
            domain: domain.iter().map(|&(a, b)| DimRange::new(a, b)).collect(),
            guard: vec![],
            dst,
            action: Action::Copy { src },
        }
    }

    #[test]
    fn single_dim_guards_narrow_the_domain() {
        let mut s = copy(
            &[(0, 10), (0, 3)],
            vec![d(0), d(1)],
            vec![d(0) * 2 - 3, d(1)],
        );
        s.guard.push(Constraint {
            expr: d(0) * 2 - 3,
            lo: 0,
            hi: 8,
        });
        let c = canonicalize_stmt(&s).unwrap();
        assert!(c.guard.is_empty());
        assert_eq!(c.domain[0], DimRange::new(2, 6));
        s.guard[0].lo = 100;
        assert!(canonicalize_stmt(&s).is_none());
    }

    #[test]
    fn negative_coefficients_narrow() {
        assert_eq!(solve_linear(-2, 10, 0, 5), Some((3, 6)));
        assert_eq!(solve_linear(3, 1, 0, 10), Some((0, 3)));
    }

    #[test]
    fn injectivity_and_boxes() {
        let s = copy(&[(0, 2), (0, 3)], vec![d(1) * 2 + d(0)], vec![d(0), d(1)]);
        assert!(dst_injective(&s));
        assert_eq!(dst_box(&s), Some(vec![DimRange::new(0, 6)]));
        let t = copy(&[(0, 3), (0, 3)], vec![d(1) * 2 + d(0)], vec![d(0), d(1)]);
        assert!(!dst_injective(&t));
        assert!(order_matters(&t));
        let u = copy(&[(0, 2), (0, 3)], vec![d(1) * 4 + d(0)], vec![d(0), d(1)]);
        assert!(dst_injective(&u));
        assert_eq!(dst_box(&u), None);
    }
}
