//! Range-aware simplification of affine expressions into canonical [`Sum`]s.
//!
//! This is where `floordiv` and `mod` disappear. Every rule below states its precondition and
//! why it holds; all of them are identities over the integers under that precondition, with
//! floored division (`floordiv` rounds towards negative infinity, `mod` is never negative) and
//! positive divisors. "`x` in `[lo, hi]`" always means: for every point of the statement's
//! domain, as proven by interval analysis ([`Sum::bounds`]) over the closed dim ranges.
//!
//! TVM's history of wrong `floordiv`/`mod` rewrites (rules that assumed non-negative operands,
//! or truncating division) is why every rule here is checked against brute-force evaluation in
//! the tests, and why a rule whose arithmetic overflows simply does not fire.
//!
//! A [`Simplifier`] has fuel: every rule application burns one unit, and with none left the
//! rules stop firing (the expression is kept as a plain `floordiv`/`mod` atom). That bounds the
//! work on any input, however adversarial, without affecting correctness.

use crate::sum::{Atom, Sum};
use relayout_ir::{AffineExpr, DimRange, Interval};
use std::cell::Cell;

/// Rule applications allowed per simplified expression. Rules recurse, so this also bounds the
/// depth of the recursion (and the stack it needs).
const FUEL: u32 = 512;

/// Expressions nested deeper than this are not simplified (the verifier rejects them anyway).
const MAX_DEPTH: usize = 256;

/// The closed ranges of a statement's dims, and the fuel left.
pub(crate) struct Simplifier {
    ranges: Vec<Interval>,
    fuel: Cell<u32>,
}

impl Simplifier {
    /// A simplifier for a domain, or `None` when a range is empty (every rule would be vacuously
    /// true on an empty domain, so nothing may be concluded from its bounds).
    pub fn new(domain: &[DimRange]) -> Option<Simplifier> {
        let ranges = domain
            .iter()
            .map(|r| {
                (!r.is_empty()).then(|| Interval {
                    lo: r.lo,
                    hi: r.hi - 1,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Simplifier {
            ranges,
            fuel: Cell::new(FUEL),
        })
    }

    /// Interval bounds of a sum over the domain.
    pub fn bounds(&self, s: &Sum) -> Option<Interval> {
        s.bounds(&self.ranges)
    }

    /// The canonical form of `e`, or `None` when it cannot be built (overflow, a non-positive
    /// divisor, a dim outside the domain, or nesting deeper than [`MAX_DEPTH`]).
    pub fn sum_of(&self, e: &AffineExpr) -> Option<Sum> {
        if let Some(s) = Sum::from_canonical_linear(e, self.ranges.len()) {
            return Some(s);
        }
        self.build_fresh(e)
    }

    /// `e` simplified, or `e` itself when it cannot be.
    pub fn simplify(&self, e: &AffineExpr) -> AffineExpr {
        // Most expressions are simplified already (the previous pass's output): they come
        // back as they are, without building their sum and printing it again.
        if Sum::is_canonical_linear(e, self.ranges.len()) {
            return e.clone();
        }
        match self.build_fresh(e) {
            Some(s) => s.to_expr(),
            None => e.clone(),
        }
    }

    /// [`Simplifier::simplify`] of an expression the caller no longer needs: returned as it is
    /// when it is simplified already, or cannot be, instead of copied.
    pub fn simplify_owned(&self, e: AffineExpr) -> AffineExpr {
        if Sum::is_canonical_linear(&e, self.ranges.len()) {
            return e;
        }
        match self.build_fresh(&e) {
            Some(s) => s.to_expr(),
            None => e,
        }
    }

    /// The sum of `e` built node by node, with a full tank of fuel: what [`Simplifier::sum_of`]
    /// does for an expression not in canonical linear form (its callers have checked that).
    fn build_fresh(&self, e: &AffineExpr) -> Option<Sum> {
        self.fuel.set(FUEL);
        self.build(e, 0)
    }

    fn build(&self, e: &AffineExpr, depth: usize) -> Option<Sum> {
        if depth > MAX_DEPTH {
            return None;
        }
        match e {
            AffineExpr::Dim(i) => (*i < self.ranges.len()).then(|| Sum::dim(*i)),
            AffineExpr::Const(c) => Some(Sum::constant(*c)),
            AffineExpr::Add(a, b) => Some(
                self.build(a, depth + 1)?
                    .add(self.build(b, depth + 1)?)?
                    .recombine(),
            ),
            AffineExpr::Mul(a, k) => self.build(a, depth + 1)?.scale_owned(*k),
            AffineExpr::FloorDiv(a, k) if *k > 0 => self.floordiv(self.build(a, depth + 1)?, *k),
            AffineExpr::Mod(a, k) if *k > 0 => self.modulo(self.build(a, depth + 1)?, *k),
            AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => None,
        }
    }

    /// Takes one unit of fuel; false when there is none left.
    fn burn(&self) -> bool {
        let f = self.fuel.get();
        if f == 0 {
            return false;
        }
        self.fuel.set(f - 1);
        true
    }

    /// `total` with its `mod` atoms folded where that removes atoms that are not dims: for a
    /// term `c * (y mod k)`, `c * y - c * k * q - c * (y mod k)` is added, where `q` is
    /// `y floordiv k` as this simplifier writes it. That is zero on the domain
    /// (`k * (y floordiv k) + y mod k = y`, and `q` equals `y floordiv k` there), so the sum
    /// keeps its value at every point; it is kept when it has fewer such atoms. It finds what
    /// [`Sum::recombine`] cannot where the simplifier has written a digit's quotient in
    /// another form (`(3 * d0) floordiv 6` as `d0 floordiv 2`): a row-major offset into a
    /// shape that does not nest with the index's (see `linearize`).
    pub fn fold_digits(&self, total: Sum) -> Sum {
        let non_dims = |s: &Sum| {
            s.terms()
                .iter()
                .filter(|(a, _)| !matches!(a, Atom::Dim(_)))
                .count()
        };
        let mut total = total.recombine();
        // Each accepted fold removes at least one atom, so this ends.
        'fold: loop {
            let before = non_dims(&total);
            if before == 0 {
                return total;
            }
            for (atom, c) in total.terms() {
                let Atom::Mod(y, k) = atom else { continue };
                self.fuel.set(FUEL);
                let folded = (|| {
                    let q = self.floordiv((**y).clone(), *k)?;
                    let zero = y
                        .scale(*c)?
                        .add(q.scale(c.checked_mul(*k)?.checked_neg()?)?)?
                        .add(Sum::atom(atom.clone()).scale(c.checked_neg()?)?)?;
                    Some(total.clone().add(zero)?.recombine())
                })();
                if let Some(folded) = folded.filter(|f| non_dims(f) < before) {
                    total = folded;
                    continue 'fold;
                }
            }
            return total;
        }
    }

    /// `p` when every value of `s` lies in `[p * k, (p + 1) * k)`.
    fn one_period(&self, s: &Sum, k: i64) -> Option<i64> {
        let b = self.bounds(s)?;
        let p = b.lo.div_euclid(k);
        (b.hi.div_euclid(k) == p).then_some(p)
    }

    /// `s floordiv k` for `k > 0`, simplified.
    pub fn floordiv(&self, s: Sum, k: i64) -> Option<Sum> {
        // Rule: `x floordiv 1 = x`. Precondition: none.
        if k == 1 {
            return Some(s);
        }
        if let Some(c) = s.as_const() {
            return Some(Sum::constant(c.div_euclid(k)));
        }
        if !self.burn() {
            return Some(Sum::atom(Atom::FloorDiv(Box::new(s), k)));
        }
        // Rule: `x floordiv k = p` when x in [p*k, (p+1)*k). That is the definition of floored
        // division.
        if let Some(p) = self.one_period(&s, k) {
            return Some(Sum::constant(p));
        }
        if let Some(r) = self.floordiv_of_floordiv(&s, k) {
            return Some(r);
        }
        if let Some(r) = self.floordiv_of_mod(&s, k) {
            return Some(r);
        }
        if let Some(r) = self.radix(&s, k, Kind::FloorDiv) {
            return Some(r);
        }
        self.floordiv_split(s, k)
    }

    /// Rule: `(e floordiv a + c) floordiv k = (e + c*a) floordiv (a*k)`.
    /// Precondition: `a > 0`, `k > 0`, no overflow in `c*a` and `a*k`.
    /// Reason: `e floordiv a + c = (e + c*a) floordiv a` (adding a multiple of `a` shifts the
    /// quotient by exactly `c`), and `(y floordiv a) floordiv k = y floordiv (a*k)` for positive
    /// `a` and `k` (nested floored division).
    fn floordiv_of_floordiv(&self, s: &Sum, k: i64) -> Option<Sum> {
        let [(Atom::FloorDiv(e, a), 1)] = s.terms() else {
            return None;
        };
        let shifted = e.add_const(s.constant_part().checked_mul(*a)?)?;
        self.floordiv(shifted, a.checked_mul(k)?)
    }

    /// Rule: `(e mod m) floordiv k = (e floordiv k) mod (m / k)`.
    /// Precondition: `k` divides `m`.
    /// Reason: write `e = m*q + r` with `r = e mod m` in `[0, m)`. Then
    /// `e floordiv k = (m/k)*q + r floordiv k` because `m*q` is a multiple of `k`, and
    /// `r floordiv k` lies in `[0, m/k)`, so `(e floordiv k) mod (m/k) = r floordiv k`.
    fn floordiv_of_mod(&self, s: &Sum, k: i64) -> Option<Sum> {
        let (Atom::Mod(e, m), 1) = s.as_single_term()? else {
            return None;
        };
        if m % k != 0 {
            return None;
        }
        let q = self.floordiv((**e).clone(), k)?;
        self.modulo(q, m / k)
    }

    /// The last resort for `floordiv`: `(k*q + r) floordiv k = q + r floordiv k`, where `k*q`
    /// collects the terms whose coefficient is a multiple of `k` and the multiple of `k` in the
    /// constant, so that the remaining constant lies in `[0, k)`.
    /// Precondition: none (`k*q` is a multiple of `k`, so it leaves the floored quotient
    /// exactly).
    fn floordiv_split(&self, s: Sum, k: i64) -> Option<Sum> {
        let (q, r) = s.partition(|_, c| c % k == 0);
        let c = r.constant_part();
        let q = q.add_const(c.checked_sub(c.rem_euclid(k))?)?;
        let r = r.add_const(c.rem_euclid(k).checked_sub(c)?)?;
        if q.as_const() == Some(0) {
            return Some(Sum::atom(Atom::FloorDiv(Box::new(r), k)));
        }
        // `r` is smaller than `s`, so this recursion ends.
        self.floordiv(r, k)?.add(q.div_exact(k)?)
    }

    /// `s mod k` for `k > 0`, simplified.
    pub fn modulo(&self, s: Sum, k: i64) -> Option<Sum> {
        // Rule: `x mod 1 = 0`. Precondition: none.
        if k == 1 {
            return Some(Sum::constant(0));
        }
        if let Some(c) = s.as_const() {
            return Some(Sum::constant(c.rem_euclid(k)));
        }
        if !self.burn() {
            return Some(Sum::atom(Atom::Mod(Box::new(s), k)));
        }
        // Rule: `x mod k = x - p*k` when x in [p*k, (p+1)*k). Reason: `x mod k = x - k*(x
        // floordiv k)` and the quotient is `p` on that interval.
        if let Some(p) = self.one_period(&s, k) {
            return s.add_const(p.checked_mul(k)?.checked_neg()?);
        }
        if let Some(r) = self.mod_of_mod(&s, k) {
            return Some(r);
        }
        if let Some(r) = self.radix(&s, k, Kind::Mod) {
            return Some(r);
        }
        self.mod_split(s, k)
    }

    /// Rule: `(e mod m) mod k = e mod k`.
    /// Precondition: `k` divides `m`.
    /// Reason: `e mod m = e - m*q` differs from `e` by a multiple of `m`, hence of `k`.
    fn mod_of_mod(&self, s: &Sum, k: i64) -> Option<Sum> {
        let (Atom::Mod(e, m), 1) = s.as_single_term()? else {
            return None;
        };
        if m % k != 0 {
            return None;
        }
        self.modulo((**e).clone(), k)
    }

    /// The last resort for `mod`: `(k*q + r) mod k = r mod k`, dropping the terms whose
    /// coefficient is a multiple of `k` and reducing the constant into `[0, k)`.
    /// Precondition: none (adding a multiple of `k` does not change a value mod `k`).
    fn mod_split(&self, s: Sum, k: i64) -> Option<Sum> {
        let (_, r) = s.partition(|_, c| c % k == 0);
        let c = r.constant_part();
        let r = r.add_const(c.rem_euclid(k).checked_sub(c)?)?;
        if r == s {
            return Some(Sum::atom(Atom::Mod(Box::new(r), k)));
        }
        // `r` is smaller than `s` or has a constant in `[0, k)` and so is left as it is by the
        // next call: the recursion ends.
        self.modulo(r, k)
    }

    /// The mixed-radix rules, the ones that turn `(d0 * 4 + d1) floordiv 4` into `d0` and
    /// `(d0 * 4 + d1) mod 8` into `(d0 mod 2) * 4 + d1`.
    ///
    /// Split `s = g*t + r`, where `g > 1` divides `k`, `g*t` collects the terms whose
    /// coefficient is a multiple of `g`, and the rest `r` (with the constant) is proven to lie in
    /// `[p*g, (p+1)*g)`. Let `m = k / g` and `r' = r - p*g`, in `[0, g)`. Then
    ///
    /// - Rule: `s floordiv k = (t + p) floordiv m`
    /// - Rule: `s mod k = g * ((t + p) mod m) + r'`
    ///
    /// Precondition: `g > 1`, `g` divides `k`, `r` in `[p*g, (p+1)*g)`, no overflow.
    /// Reason: `s = g*(t + p) + r'`. Write `t + p = m*u + v` with `v` in `[0, m)`. Then
    /// `s = k*u + (g*v + r')` and `0 <= g*v + r' <= g*(m-1) + g-1 = k-1`, so the floored
    /// quotient of `s` by `k` is `u = (t + p) floordiv m`, and the remainder `g*v + r'`.
    ///
    /// Candidate `g`s are `k` and the gcds of `k` with each coefficient and with all of them,
    /// tried largest first. The recursion divides by `m < k`, so it ends.
    fn radix(&self, s: &Sum, k: i64, kind: Kind) -> Option<Sum> {
        for g in radix_candidates(s, k) {
            let (gt, r) = s.partition(|_, c| c % g == 0);
            let Some(p) = self.one_period(&r, g) else {
                continue;
            };
            let t = gt.div_exact(g)?.add_const(p)?;
            let m = k / g;
            return match kind {
                Kind::FloorDiv => self.floordiv(t, m),
                Kind::Mod => {
                    let r0 = r.add_const(p.checked_mul(g)?.checked_neg()?)?;
                    self.modulo(t, m)?.scale_owned(g)?.add(r0)
                }
            };
        }
        None
    }
}

#[derive(Clone, Copy)]
enum Kind {
    FloorDiv,
    Mod,
}

/// The divisors of `k` worth trying in [`Simplifier::radix`], largest first, all above 1.
fn radix_candidates(s: &Sum, k: i64) -> Vec<i64> {
    let mut out = vec![k];
    let mut all = 0;
    for (_, c) in s.terms() {
        out.extend(gcd(*c, k));
        all = gcd_u64(all, c.unsigned_abs());
    }
    out.extend(i64::try_from(gcd_u64(all, k.unsigned_abs())).ok());
    out.retain(|&g| g > 1);
    out.sort_unstable_by(|a, b| b.cmp(a));
    out.dedup();
    out
}

/// Greatest common divisor of the absolute values (`gcd(0, x) = |x|`), or `None` when it is
/// 2^63 (both are `i64::MIN` or zero and `i64::MIN`).
pub(crate) fn gcd(a: i64, b: i64) -> Option<i64> {
    i64::try_from(gcd_u64(a.unsigned_abs(), b.unsigned_abs())).ok()
}

fn gcd_u64(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: usize) -> AffineExpr {
        AffineExpr::dim(i)
    }

    fn simp(e: AffineExpr, domain: &[(i64, i64)]) -> String {
        let dom: Vec<DimRange> = domain.iter().map(|&(a, b)| DimRange::new(a, b)).collect();
        let s = Simplifier::new(&dom).unwrap();
        let out = s.simplify(&e);
        check_same(&e, &out, &dom);
        out.to_string()
    }

    /// Brute force: the two expressions agree at every point of the domain.
    fn check_same(a: &AffineExpr, b: &AffineExpr, dom: &[DimRange]) {
        let mut p: Vec<i64> = dom.iter().map(|r| r.lo).collect();
        loop {
            assert_eq!(a.eval(&p), b.eval(&p), "{a} vs {b} at {p:?}");
            let mut i = p.len();
            loop {
                if i == 0 {
                    return;
                }
                i -= 1;
                p[i] += 1;
                if p[i] < dom[i].hi {
                    break;
                }
                p[i] = dom[i].lo;
            }
        }
    }

    #[test]
    fn floordiv_with_ranges() {
        let e = (d(0) * 4 + d(1)).floor_div(4);
        assert_eq!(simp(e.clone(), &[(0, 5), (0, 4)]), "d0");
        // d1 may reach 4: the rewrite to d0 must not fire.
        assert_eq!(simp(e, &[(0, 5), (0, 5)]), "d0 + d1 floordiv 4");
        assert_eq!(simp((d(0) * 4 + d(1)).modulo(4), &[(0, 5), (0, 4)]), "d1");
        assert_eq!(
            simp((d(0) * 4 + d(1)).modulo(8), &[(0, 5), (0, 4)]),
            "d1 + d0 mod 2 * 4"
        );
    }

    /// A row-major offset of a linear index unravelled into a shape whose dims do not nest
    /// with the index's own (`tensor<5x6>` read as `tensor<2x3x5>`): its digits fold back
    /// into the index (`Sum::recombine`), checked against brute force.
    #[test]
    fn unravelled_offsets_fold_back() {
        let x = || d(0) * 6 + d(1);
        let offset = x().floor_div(15) * 15 + x().floor_div(5).modulo(3) * 5 + x().modulo(5);
        assert_eq!(simp(offset, &[(0, 5), (0, 6)]), "d0 * 6 + d1");
        // The same with the index's digits split off first, as split-dims leaves them (the
        // rule fires inside a scaled sum too).
        let x = || d(1) * 7 + d(2);
        let offset = d(0) * 84 + x().floor_div(3) * 12 + x().modulo(3) * 4;
        assert_eq!(
            simp(offset, &[(0, 2), (0, 3), (0, 7)]),
            "d0 * 84 + d1 * 28 + d2 * 4"
        );
        // A digit from which the simplifier moved multiples out of the floordiv:
        // `(147 * d0 + d1) floordiv 3` is written `d0 * 49 + d1 floordiv 3` (tensor<2x2x147>
        // read as tensor<98x2x3>).
        let x = || d(0) * 147 + d(1);
        let offset = x().floor_div(6) * 6 + x().floor_div(3).modulo(2) * 3 + x().modulo(3);
        assert_eq!(simp(offset, &[(0, 2), (0, 147)]), "d0 * 147 + d1");
    }

    /// `fold_digits` finds digits whose quotient the simplifier wrote in another form
    /// (`(3 * d0) floordiv 6` as `d0 floordiv 2`: tensor<2x7x9> read as tensor<7x3x2x3>),
    /// and keeps the value at every point.
    #[test]
    fn digits_fold_whatever_form_their_quotient_takes() {
        let x = || d(0) * 3;
        let offset =
            x().floor_div(6) * 18 + x().floor_div(2).modulo(3) * 6 + x().modulo(2) * 3 + d(1);
        let dom = [DimRange::new(0, 14), DimRange::new(0, 3)];
        let s = Simplifier::new(&dom).unwrap();
        let sum = s.sum_of(&offset).unwrap();
        assert!(!sum.is_linear(), "{}", sum.to_expr());
        let folded = s.fold_digits(sum).to_expr();
        check_same(&offset, &folded, &dom);
        assert_eq!(folded.to_string(), "d0 * 9 + d1");
    }

    #[test]
    fn multiples_and_gcd() {
        assert_eq!(simp((d(0) * 8).floor_div(4), &[(0, 5)]), "d0 * 2");
        assert_eq!(simp((d(0) * 2).floor_div(4), &[(0, 9)]), "d0 floordiv 2");
        assert_eq!(simp((d(0) * 2).modulo(4), &[(0, 9)]), "d0 mod 2 * 2");
        assert_eq!(
            simp((d(0) * 4 + 3).floor_div(8), &[(0, 9)]),
            "d0 floordiv 2"
        );
    }

    #[test]
    fn nested() {
        assert_eq!(
            simp(d(0).floor_div(2).floor_div(3), &[(0, 20)]),
            "d0 floordiv 6"
        );
        assert_eq!(
            simp(d(0).modulo(12).floor_div(4), &[(0, 30)]),
            "d0 floordiv 4 mod 3"
        );
        assert_eq!(simp(d(0).modulo(12).modulo(4), &[(0, 30)]), "d0 mod 4");
        assert_eq!(simp(d(0).modulo(8), &[(0, 8)]), "d0");
        assert_eq!(simp((d(0) + 8).modulo(8), &[(0, 8)]), "d0");
        assert_eq!(
            simp((d(0) - 1).floor_div(4), &[(0, 9)]),
            "(d0 + 3) floordiv 4 - 1"
        );
    }

    #[test]
    fn vect_c_channel_forms() {
        // Logical channel d1 * 4 + d4 of NCHW_VECT_C with C = 8 input channels.
        let c = d(1) * 4 + d(4);
        let dom = [(0, 1), (0, 8), (0, 2), (0, 2), (0, 4)];
        assert_eq!(simp(c.clone().modulo(8).floor_div(4), &dom), "d1 mod 2");
        assert_eq!(simp(c.clone().modulo(8).modulo(4), &dom), "d4");
        assert_eq!(simp(c.floor_div(8), &dom), "d1 floordiv 2");
    }

    #[test]
    fn negative_values_floor() {
        assert_eq!(simp((d(0) - 4).floor_div(4), &[(0, 4)]), "-1");
        assert_eq!(simp((d(0) - 4).modulo(4), &[(0, 4)]), "d0");
        assert_eq!(simp((d(0) * -1).modulo(4), &[(1, 4)]), "d0 * -1 + 4");
    }

    #[test]
    fn recombines() {
        let e = d(0).floor_div(4) * 4 + d(0).modulo(4);
        assert_eq!(simp(e, &[(0, 30)]), "d0");
    }

    #[test]
    fn gcd_basics() {
        assert_eq!(gcd(12, -18), Some(6));
        assert_eq!(gcd(0, 5), Some(5));
        assert_eq!(gcd(i64::MIN, 0), None);
    }

    #[test]
    fn overflow_does_not_fire() {
        let e = (d(0) * i64::MAX + d(1) * i64::MAX).floor_div(2);
        let dom = [DimRange::new(0, 2), DimRange::new(0, 2)];
        let s = Simplifier::new(&dom).unwrap();
        // Must not panic; the result is either the input or an equivalent form.
        let _ = s.simplify(&e);
    }

    mod random {
        use super::*;
        use proptest::prelude::*;

        /// Random expressions over three dims, with `floordiv` and `mod` by small divisors.
        fn expr() -> impl Strategy<Value = AffineExpr> {
            let leaf = prop_oneof![
                (0usize..3).prop_map(AffineExpr::Dim),
                (-10i64..10).prop_map(AffineExpr::Const),
            ];
            leaf.prop_recursive(4, 24, 2, |inner| {
                prop_oneof![
                    (inner.clone(), inner.clone()).prop_map(|(a, b)| a + b),
                    (inner.clone(), -4i64..5).prop_map(|(a, k)| a * k),
                    (inner.clone(), 1i64..9).prop_map(|(a, k)| a.floor_div(k)),
                    (inner, 1i64..9).prop_map(|(a, k)| a.modulo(k)),
                ]
            })
        }

        fn domain() -> impl Strategy<Value = Vec<DimRange>> {
            proptest::collection::vec(
                (-6i64..6, 1i64..9).prop_map(|(lo, n)| DimRange::new(lo, lo + n)),
                3,
            )
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(3000))]

            /// The simplified expression agrees with the original at every point.
            #[test]
            fn simplification_is_exact(e in expr(), dom in domain()) {
                let s = Simplifier::new(&dom).unwrap();
                let out = s.simplify(&e);
                check_same(&e, &out, &dom);
            }

            /// Bounds of the canonical form hold at every point.
            #[test]
            fn bounds_are_sound(e in expr(), dom in domain()) {
                let s = Simplifier::new(&dom).unwrap();
                if let Some(sum) = s.sum_of(&e) {
                    if let Some(b) = s.bounds(&sum) {
                        let out = sum.to_expr();
                        for p in points(&dom) {
                            let v = out.eval(&p).unwrap();
                            prop_assert!(b.lo <= v && v <= b.hi, "{out} = {v} outside {b:?} at {p:?}");
                        }
                    }
                }
            }

            /// The shortcut for expressions already in canonical linear form gives what
            /// building them gives, both for the input and for a sum printed back.
            #[test]
            fn canonical_shortcut_is_exact(e in expr(), dom in domain()) {
                let s = Simplifier::new(&dom).unwrap();
                let built = |e: &AffineExpr| s.build_fresh(e);
                let printed = built(&e).map(|sum| sum.to_expr());
                for e in std::iter::once(&e).chain(printed.as_ref()) {
                    if let Some(fast) = Sum::from_canonical_linear(e, dom.len()) {
                        prop_assert!(Sum::is_canonical_linear(e, dom.len()));
                        let slow = built(e);
                        prop_assert_eq!(Some(&fast), slow.as_ref(), "{}", e);
                        prop_assert!(&fast.to_expr() == e, "{}", e);
                    } else {
                        prop_assert!(!Sum::is_canonical_linear(e, dom.len()));
                    }
                }
            }
        }

        fn points(dom: &[DimRange]) -> Vec<Vec<i64>> {
            let mut out = vec![vec![]];
            for r in dom {
                out = out
                    .into_iter()
                    .flat_map(|p| {
                        (r.lo..r.hi).map(move |v| {
                            let mut q = p.clone();
                            q.push(v);
                            q
                        })
                    })
                    .collect();
            }
            out
        }
    }
}
