//! Canonical affine sums: the normal form the passes simplify into and read.
//!
//! A [`Sum`] is `c_1 * a_1 + ... + c_n * a_n + c_0` where every atom `a_i` is a dim, a
//! `floordiv` of a sum by a positive constant, or a `mod` of a sum by a positive constant.
//! Atoms are kept sorted and distinct, and no coefficient is zero, so two sums that are equal
//! as data are equal as functions (the converse does not hold: `d0 floordiv 2 * 2 + d0 mod 2`
//! and `d0` are the same function until [`Sum::recombine`] folds the first into the second).
//!
//! Every operation is checked: an overflow gives `None`, and the caller keeps the expression it
//! had. Nothing here uses the ranges of the dims; the range-aware rules are in `simplify`.

use relayout_ir::{AffineExpr, Interval};

/// An indivisible term of a [`Sum`]. The derived order (dims first, by index; then `floordiv`s;
/// then `mod`s) is the order terms print in.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub(crate) enum Atom {
    Dim(usize),
    /// `sum floordiv k`, `k > 0`.
    FloorDiv(Box<Sum>, i64),
    /// `sum mod k`, `k > 0`.
    Mod(Box<Sum>, i64),
}

/// `sum(coef * atom) + constant`, terms sorted by atom, atoms distinct, coefficients non-zero.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub(crate) struct Sum {
    terms: Vec<(Atom, i64)>,
    constant: i64,
}

impl Sum {
    pub fn constant(c: i64) -> Sum {
        Sum {
            terms: Vec::new(),
            constant: c,
        }
    }

    pub fn dim(i: usize) -> Sum {
        Sum::atom(Atom::Dim(i))
    }

    pub fn atom(a: Atom) -> Sum {
        Sum {
            terms: vec![(a, 1)],
            constant: 0,
        }
    }

    /// Builds a sum from terms in any order, merging equal atoms.
    #[cfg(test)]
    pub fn from_terms(terms: Vec<(Atom, i64)>, constant: i64) -> Option<Sum> {
        let mut out = Sum::constant(constant);
        for (a, c) in terms {
            out = out.add(Sum {
                terms: vec![(a, c)],
                constant: 0,
            })?;
        }
        Some(out)
    }

    pub fn terms(&self) -> &[(Atom, i64)] {
        &self.terms
    }

    pub fn constant_part(&self) -> i64 {
        self.constant
    }

    /// The value, when the sum has no terms.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    /// `(atom, coef)` when the sum is exactly one term with no constant.
    pub fn as_single_term(&self) -> Option<(&Atom, i64)> {
        match self.terms.as_slice() {
            [(a, c)] if self.constant == 0 => Some((a, *c)),
            _ => None,
        }
    }

    /// `d` when the sum is exactly the dim `d`.
    pub fn as_dim(&self) -> Option<usize> {
        match self.as_single_term() {
            Some((Atom::Dim(d), 1)) => Some(*d),
            _ => None,
        }
    }

    /// `(d, c, c0)` when the sum is `c * d + c0` for a single dim `d`.
    pub fn as_linear_in_one_dim(&self) -> Option<(usize, i64, i64)> {
        match self.terms.as_slice() {
            [(Atom::Dim(d), c)] => Some((*d, *c, self.constant)),
            _ => None,
        }
    }

    /// True when every atom is a dim: the sum is affine without `floordiv` or `mod`.
    pub fn is_linear(&self) -> bool {
        self.terms.iter().all(|(a, _)| matches!(a, Atom::Dim(_)))
    }

    /// `self + other`, the atoms moved (not cloned) into the sum.
    pub fn add(mut self, other: Sum) -> Option<Sum> {
        let constant = self.constant.checked_add(other.constant)?;
        // When every atom of `other` comes after those of `self` (building `d0 + d1 * 4`, or
        // adding a constant), the merge is an append: `self`'s vector grows in place instead
        // of a third one being allocated. No coefficient is zero, so none is dropped.
        let appends = match (self.terms.last(), other.terms.first()) {
            (Some((x, _)), Some((y, _))) => x < y,
            _ => true,
        };
        if appends {
            if self.terms.is_empty() {
                self.terms = other.terms;
            } else {
                self.terms.extend(other.terms);
            }
            self.constant = constant;
            return Some(self);
        }
        let mut terms = Vec::with_capacity(self.terms.len() + other.terms.len());
        let mut a = self.terms.into_iter().peekable();
        let mut b = other.terms.into_iter().peekable();
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    let (atom, c) = a.next()?;
                    let (_, d) = b.next()?;
                    (atom, c.checked_add(d)?)
                }
                (Some(x), Some(y)) if x.0 < y.0 => a.next()?,
                (Some(_), None) => a.next()?,
                (_, Some(_)) => b.next()?,
                (None, None) => break,
            };
            if next.1 != 0 {
                terms.push(next);
            }
        }
        Some(Sum { terms, constant })
    }

    /// `self + c`.
    pub fn add_const(&self, c: i64) -> Option<Sum> {
        Some(Sum {
            terms: self.terms.clone(),
            constant: self.constant.checked_add(c)?,
        })
    }

    /// `self * k`.
    pub fn scale(&self, k: i64) -> Option<Sum> {
        self.clone().scale_owned(k)
    }

    /// [`Sum::scale`] of an owned sum, in place.
    pub fn scale_owned(mut self, k: i64) -> Option<Sum> {
        if k == 0 {
            return Some(Sum::constant(0));
        }
        for (_, c) in &mut self.terms {
            *c = c.checked_mul(k)?;
        }
        self.constant = self.constant.checked_mul(k)?;
        Some(self)
    }

    /// `self / k` for a `k` that divides every coefficient and the constant.
    pub fn div_exact(&self, k: i64) -> Option<Sum> {
        if k == 0 || self.constant % k != 0 || self.terms.iter().any(|(_, c)| c % k != 0) {
            return None;
        }
        let terms = self
            .terms
            .iter()
            .map(|(a, c)| Some((a.clone(), c.checked_div(k)?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Sum {
            terms,
            constant: self.constant.checked_div(k)?,
        })
    }

    /// Splits the terms by `keep`: `(terms where keep holds, the others plus the constant)`.
    pub fn partition(&self, keep: impl Fn(&Atom, i64) -> bool) -> (Sum, Sum) {
        let (a, b): (Vec<_>, Vec<_>) = self.terms.iter().cloned().partition(|(a, c)| keep(a, *c));
        (
            Sum {
                terms: a,
                constant: 0,
            },
            Sum {
                terms: b,
                constant: self.constant,
            },
        )
    }

    /// Folds `c * k * (e floordiv k) + c * (e mod k)` into `c * e`, and the digits of a
    /// mixed radix, `c * n * (x floordiv (k * n)) + c * ((x floordiv k) mod n)`, into
    /// `c * (x floordiv k)` (also when the simplifier has moved multiples of `k` out of
    /// `x floordiv k`: see [`Sum::mixed_radix_digit`]).
    ///
    /// Reason: `k * (e floordiv k) + e mod k == e` for every integer `e` and `k > 0` (the
    /// definition of floored division); the second is the first for `e = x floordiv k`,
    /// whose `floordiv n` the simplifier writes as `x floordiv (k * n)` (equal for `k, n > 0`).
    /// No precondition; on overflow the sum is kept. Together they fold a row-major offset
    /// `sum(stride_j * ((x floordiv stride_j) mod n_j))` back into `x`.
    pub fn recombine(self) -> Sum {
        let mut sum = self;
        // Each fold removes two atoms, so this terminates.
        while let Some(next) = sum.recombine_once() {
            sum = next;
        }
        sum
    }

    fn recombine_once(&self) -> Option<Sum> {
        for (atom, c) in &self.terms {
            let Atom::Mod(e, k) = atom else { continue };
            let want = c.checked_mul(*k)?;
            let mut divs = vec![Atom::FloorDiv(e.clone(), *k)];
            // `e = l + x floordiv j` (`l` without that term) is `(x + j * l) floordiv j`, whose
            // `floordiv k` the simplifier writes `(x + j * l) floordiv (j * k)`.
            if let Some(x_div) = e.mixed_radix_digit(*k) {
                divs.push(x_div);
            }
            for div in divs {
                if self.terms.iter().any(|(a, c2)| *a == div && *c2 == want) {
                    let (_, rest) = self.partition(|a, _| *a == div || a == atom);
                    return rest.add(e.scale(*c)?);
                }
            }
        }
        None
    }

    /// For `self = l + 1 * (x floordiv j)`, with exactly one `floordiv` term of coefficient 1
    /// (and `l` the rest, constant included): the atom `(x + j * l) floordiv (j * k)`, which is
    /// `self floordiv k` (`self` is `(x + j * l) floordiv j`, as `j * l` is a multiple of `j`,
    /// and floored divisions by `j` then `k` are one by `j * k`). `None` on overflow or
    /// another form.
    fn mixed_radix_digit(&self, k: i64) -> Option<Atom> {
        let mut divs = self
            .terms
            .iter()
            .filter(|(a, c)| *c == 1 && matches!(a, Atom::FloorDiv(..)));
        let (div @ Atom::FloorDiv(x, j), _) = divs.next()? else {
            return None;
        };
        if divs.next().is_some() {
            return None;
        }
        let (_, rest) = self.partition(|a, _| a == div);
        let shifted = (**x).clone().add(rest.scale(*j)?)?;
        Some(Atom::FloorDiv(Box::new(shifted), j.checked_mul(k)?))
    }

    /// Every dim the sum uses, once each, in increasing order.
    pub fn dims_used(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.collect_dims(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn collect_dims(&self, out: &mut Vec<usize>) {
        for (a, _) in &self.terms {
            match a {
                Atom::Dim(d) => out.push(*d),
                Atom::FloorDiv(s, _) | Atom::Mod(s, _) => s.collect_dims(out),
            }
        }
    }

    /// Calls `f` on every `floordiv` and `mod` atom, innermost first.
    pub fn for_each_div_mod(&self, f: &mut impl FnMut(&Atom)) {
        for (a, _) in &self.terms {
            if let Atom::FloorDiv(s, _) | Atom::Mod(s, _) = a {
                s.for_each_div_mod(f);
                f(a);
            }
        }
    }

    /// An interval holding every value of the sum when dim `i` ranges over `ranges[i]`, or
    /// `None` on overflow or an unknown dim. Sound; exact for a sum of distinct dims.
    pub fn bounds(&self, ranges: &[Interval]) -> Option<Interval> {
        let mut lo = self.constant;
        let mut hi = self.constant;
        for (a, c) in &self.terms {
            let b = a.bounds(ranges)?;
            let (x, y) = (b.lo.checked_mul(*c)?, b.hi.checked_mul(*c)?);
            lo = lo.checked_add(x.min(y))?;
            hi = hi.checked_add(x.max(y))?;
        }
        Some(Interval { lo, hi })
    }

    /// The sum as an expression: terms in order, `d * c` for a coefficient other than 1, the
    /// constant last and only when non-zero.
    pub fn to_expr(&self) -> AffineExpr {
        let mut out: Option<AffineExpr> = None;
        for (a, c) in &self.terms {
            let t = if *c == 1 {
                a.to_expr()
            } else {
                a.to_expr() * *c
            };
            out = Some(match out {
                None => t,
                Some(acc) => acc + t,
            });
        }
        match out {
            None => AffineExpr::Const(self.constant),
            Some(e) if self.constant == 0 => e,
            Some(e) => e + self.constant,
        }
    }
}

/// Terms beyond which [`Sum::from_canonical_linear`] leaves an expression to the simplifier,
/// whose depth limit such a long chain could reach.
const MAX_CANONICAL_TERMS: usize = 64;

impl Sum {
    /// The sum of `e` when `e` is already what [`Sum::to_expr`] prints for a linear sum over
    /// dims below `dims`: terms left to right in increasing dim, each `d` or `d * c` (`c` not
    /// 0 or 1), then a non-zero constant; or a constant alone. Building such an expression
    /// term by term gives exactly this sum (no rule of the simplifier reads a linear sum's
    /// ranges), so this is a shortcut past the allocations of building it, not another answer.
    pub fn from_canonical_linear(e: &AffineExpr, dims: usize) -> Option<Sum> {
        // Room for the terms of most indices, so that pushing them does not grow the vector
        // (two reallocations for three terms from an empty one).
        let mut terms = Vec::with_capacity(4);
        let constant = canonical_linear(e, dims, &mut |d, c| terms.push((Atom::Dim(d), c)))?;
        terms.reverse();
        Some(Sum { terms, constant })
    }

    /// When `e` is in the form of [`Sum::from_canonical_linear`], calls `f(dim, coef)` on each
    /// of its terms (from the last to the first) and returns its constant, without building
    /// the sum; otherwise `None`, and `f` is not called.
    pub fn visit_canonical_linear(
        e: &AffineExpr,
        dims: usize,
        f: &mut impl FnMut(usize, i64),
    ) -> Option<i64> {
        if !Sum::is_canonical_linear(e, dims) {
            return None;
        }
        canonical_linear(e, dims, f)
    }

    /// True when `e` is in the form of [`Sum::from_canonical_linear`]: simplifying it gives it
    /// back.
    pub fn is_canonical_linear(e: &AffineExpr, dims: usize) -> bool {
        canonical_linear(e, dims, &mut |_, _| {}).is_some()
    }
}

/// Reads `e` in the form of [`Sum::from_canonical_linear`], calling `f` on each term as
/// `(dim, coef)` from the last to the first; the constant, or `None` when `e` is not in that
/// form.
fn canonical_linear(e: &AffineExpr, dims: usize, f: &mut impl FnMut(usize, i64)) -> Option<i64> {
    let (mut node, constant) = match e {
        AffineExpr::Const(c) => return Some(*c),
        AffineExpr::Add(rest, c) => match **c {
            AffineExpr::Const(c) if c != 0 => (&**rest, c),
            _ => (e, 0),
        },
        _ => (e, 0),
    };
    // The terms nest to the left: the outermost is the last, with the largest dim.
    let mut below = dims;
    for _ in 0..MAX_CANONICAL_TERMS {
        let (left, term) = match node {
            AffineExpr::Add(left, term) => (Some(&**left), &**term),
            term => (None, term),
        };
        let (d, c) = match term {
            AffineExpr::Dim(d) => (*d, 1),
            AffineExpr::Mul(inner, c) if *c != 0 && *c != 1 => match **inner {
                AffineExpr::Dim(d) => (d, *c),
                _ => return None,
            },
            _ => return None,
        };
        if d >= below {
            return None;
        }
        below = d;
        f(d, c);
        match left {
            Some(l) => node = l,
            None => return Some(constant),
        }
    }
    None
}

impl Atom {
    pub fn bounds(&self, ranges: &[Interval]) -> Option<Interval> {
        match self {
            Atom::Dim(i) => ranges.get(*i).copied(),
            Atom::FloorDiv(s, k) if *k > 0 => {
                let b = s.bounds(ranges)?;
                Some(Interval {
                    lo: b.lo.div_euclid(*k),
                    hi: b.hi.div_euclid(*k),
                })
            }
            Atom::Mod(s, k) if *k > 0 => {
                let b = s.bounds(ranges)?;
                if b.lo.div_euclid(*k) == b.hi.div_euclid(*k) {
                    Some(Interval {
                        lo: b.lo.rem_euclid(*k),
                        hi: b.hi.rem_euclid(*k),
                    })
                } else {
                    Some(Interval { lo: 0, hi: k - 1 })
                }
            }
            Atom::FloorDiv(..) | Atom::Mod(..) => None,
        }
    }

    pub fn to_expr(&self) -> AffineExpr {
        match self {
            Atom::Dim(i) => AffineExpr::Dim(*i),
            Atom::FloorDiv(s, k) => s.to_expr().floor_div(*k),
            Atom::Mod(s, k) => s.to_expr().modulo(*k),
        }
    }

    /// The argument and divisor of a `floordiv` or `mod`.
    pub fn div_mod_parts(&self) -> Option<(&Sum, i64)> {
        match self {
            Atom::Dim(_) => None,
            Atom::FloorDiv(s, k) | Atom::Mod(s, k) => Some((s, *k)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_merges_and_drops_zero_terms() {
        let a = Sum::dim(0).scale(2).unwrap().add_const(3).unwrap();
        let b = Sum::dim(1).add(Sum::dim(0).scale(-2).unwrap()).unwrap();
        let s = a.add(b).unwrap();
        assert_eq!(s.to_expr().to_string(), "d1 + 3");
    }

    #[test]
    fn overflow_is_none() {
        assert!(Sum::dim(0).scale(i64::MAX).unwrap().scale(2).is_none());
        assert!(Sum::constant(i64::MAX).add_const(1).is_none());
    }

    #[test]
    fn recombine_folds_div_and_mod() {
        let e = Sum::dim(0).add(Sum::dim(1)).unwrap();
        let s = Sum::from_terms(
            vec![
                (Atom::FloorDiv(Box::new(e.clone()), 4), 12),
                (Atom::Mod(Box::new(e), 4), 3),
                (Atom::Dim(2), 1),
            ],
            0,
        )
        .unwrap();
        assert_eq!(s.recombine().to_expr().to_string(), "d0 * 3 + d1 * 3 + d2");
    }

    #[test]
    fn prints_terms_in_order() {
        let s = Sum::from_terms(
            vec![(Atom::Mod(Box::new(Sum::dim(3)), 2), 1), (Atom::Dim(2), 2)],
            -1,
        )
        .unwrap();
        assert_eq!(s.to_expr().to_string(), "d2 * 2 + d3 mod 2 - 1");
    }
}
