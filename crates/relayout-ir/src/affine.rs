//! Affine expressions over the dims of a statement's domain, as MLIR writes them:
//! `d0 * 2 + d1`, `d2 floordiv 4`, `d2 mod 4`, integer constants. There are no symbols: shapes
//! are fixed, so everything that is not a dim is a constant.
//!
//! Evaluation is checked: an expression whose value leaves `i64` evaluates to `None`, so that an
//! overflow is an error and never a wrapped index.

use std::ops::{Add, Mul, Sub};

/// An affine expression. `FloorDiv` and `Mod` take a positive constant divisor and round towards
/// negative infinity (MLIR's `floordiv` and `mod`, whose result is never negative).
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum AffineExpr {
    /// The dim `d{n}` of the statement's domain.
    Dim(usize),
    /// An integer constant.
    Const(i64),
    /// The sum of two expressions.
    Add(Box<AffineExpr>, Box<AffineExpr>),
    /// Multiplication by a constant (affine: never a product of two dims).
    Mul(Box<AffineExpr>, i64),
    /// `e floordiv k`: division by a positive constant, rounding towards negative infinity.
    FloorDiv(Box<AffineExpr>, i64),
    /// `e mod k`: the remainder of `floordiv` by a positive constant, in `[0, k)`.
    Mod(Box<AffineExpr>, i64),
}

/// A closed interval `[lo, hi]` of values an expression can take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The smallest value.
    pub lo: i64,
    /// The largest value (included).
    pub hi: i64,
}

impl AffineExpr {
    /// The dim `d{i}`.
    pub fn dim(i: usize) -> AffineExpr {
        AffineExpr::Dim(i)
    }

    /// The constant `c`.
    pub fn constant(c: i64) -> AffineExpr {
        AffineExpr::Const(c)
    }

    /// `self floordiv k`, unsimplified.
    pub fn floor_div(self, k: i64) -> AffineExpr {
        AffineExpr::FloorDiv(Box::new(self), k)
    }

    /// `self mod k`, unsimplified.
    pub fn modulo(self, k: i64) -> AffineExpr {
        AffineExpr::Mod(Box::new(self), k)
    }

    /// The value at the point `dims`, or `None` on overflow, a non-positive divisor or a dim
    /// that `dims` does not have.
    pub fn eval(&self, dims: &[i64]) -> Option<i64> {
        match self {
            AffineExpr::Dim(i) => dims.get(*i).copied(),
            AffineExpr::Const(c) => Some(*c),
            AffineExpr::Add(a, b) => a.eval(dims)?.checked_add(b.eval(dims)?),
            AffineExpr::Mul(a, k) => a.eval(dims)?.checked_mul(*k),
            AffineExpr::FloorDiv(a, k) if *k > 0 => Some(a.eval(dims)?.div_euclid(*k)),
            AffineExpr::Mod(a, k) if *k > 0 => Some(a.eval(dims)?.rem_euclid(*k)),
            AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => None,
        }
    }

    /// An interval holding every value of the expression when each dim `i` ranges over the
    /// closed interval `ranges[i]`, or `None` on overflow or an unknown dim. Sound, and exact for
    /// sums of distinct dims times constants; `mod` is bounded by `[0, k - 1]` unless its
    /// argument already lies inside one period.
    pub fn bounds(&self, ranges: &[Interval]) -> Option<Interval> {
        match self {
            AffineExpr::Dim(i) => ranges.get(*i).copied(),
            AffineExpr::Const(c) => Some(Interval { lo: *c, hi: *c }),
            AffineExpr::Add(a, b) => {
                let (a, b) = (a.bounds(ranges)?, b.bounds(ranges)?);
                Some(Interval {
                    lo: a.lo.checked_add(b.lo)?,
                    hi: a.hi.checked_add(b.hi)?,
                })
            }
            AffineExpr::Mul(a, k) => {
                let a = a.bounds(ranges)?;
                let (x, y) = (a.lo.checked_mul(*k)?, a.hi.checked_mul(*k)?);
                Some(Interval {
                    lo: x.min(y),
                    hi: x.max(y),
                })
            }
            AffineExpr::FloorDiv(a, k) if *k > 0 => {
                let a = a.bounds(ranges)?;
                Some(Interval {
                    lo: a.lo.div_euclid(*k),
                    hi: a.hi.div_euclid(*k),
                })
            }
            AffineExpr::Mod(a, k) if *k > 0 => {
                let a = a.bounds(ranges)?;
                if a.lo.div_euclid(*k) == a.hi.div_euclid(*k) {
                    Some(Interval {
                        lo: a.lo.rem_euclid(*k),
                        hi: a.hi.rem_euclid(*k),
                    })
                } else {
                    Some(Interval { lo: 0, hi: k - 1 })
                }
            }
            AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => None,
        }
    }

    /// Every dim the expression uses, once each, in increasing order.
    pub fn dims_used(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk(&mut |e| {
            if let AffineExpr::Dim(i) = e {
                out.push(*i);
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Calls `f` on this expression and every subexpression, parents first.
    pub fn walk(&self, f: &mut impl FnMut(&AffineExpr)) {
        f(self);
        match self {
            AffineExpr::Dim(_) | AffineExpr::Const(_) => {}
            AffineExpr::Add(a, b) => {
                a.walk(f);
                b.walk(f);
            }
            AffineExpr::Mul(a, _) | AffineExpr::FloorDiv(a, _) | AffineExpr::Mod(a, _) => a.walk(f),
        }
    }

    /// Replaces every `Dim(i)` by `f(i)`.
    pub fn substitute(&self, f: &impl Fn(usize) -> AffineExpr) -> AffineExpr {
        match self {
            AffineExpr::Dim(i) => f(*i),
            AffineExpr::Const(c) => AffineExpr::Const(*c),
            AffineExpr::Add(a, b) => {
                AffineExpr::Add(Box::new(a.substitute(f)), Box::new(b.substitute(f)))
            }
            AffineExpr::Mul(a, k) => AffineExpr::Mul(Box::new(a.substitute(f)), *k),
            AffineExpr::FloorDiv(a, k) => AffineExpr::FloorDiv(Box::new(a.substitute(f)), *k),
            AffineExpr::Mod(a, k) => AffineExpr::Mod(Box::new(a.substitute(f)), *k),
        }
    }

    /// True when the expression holds a `floordiv` or a `mod` anywhere.
    pub fn has_div_or_mod(&self) -> bool {
        match self {
            AffineExpr::Dim(_) | AffineExpr::Const(_) => false,
            AffineExpr::Add(a, b) => a.has_div_or_mod() || b.has_div_or_mod(),
            AffineExpr::Mul(a, _) => a.has_div_or_mod(),
            AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => true,
        }
    }
}

impl Add for AffineExpr {
    type Output = AffineExpr;
    fn add(self, rhs: AffineExpr) -> AffineExpr {
        AffineExpr::Add(Box::new(self), Box::new(rhs))
    }
}

impl Add<i64> for AffineExpr {
    type Output = AffineExpr;
    fn add(self, rhs: i64) -> AffineExpr {
        self + AffineExpr::Const(rhs)
    }
}

impl Sub<i64> for AffineExpr {
    type Output = AffineExpr;
    fn sub(self, rhs: i64) -> AffineExpr {
        self + AffineExpr::Const(-rhs)
    }
}

impl Mul<i64> for AffineExpr {
    type Output = AffineExpr;
    fn mul(self, rhs: i64) -> AffineExpr {
        AffineExpr::Mul(Box::new(self), rhs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: usize) -> AffineExpr {
        AffineExpr::dim(i)
    }

    #[test]
    fn eval_floors_towards_negative_infinity() {
        let e = (d(0) - 5).floor_div(4);
        assert_eq!(e.eval(&[0]), Some(-2));
        assert_eq!((d(0) - 5).modulo(4).eval(&[0]), Some(3));
        assert_eq!((d(0) * i64::MAX).eval(&[2]), None);
    }

    #[test]
    fn bounds_are_sound() {
        let r = [Interval { lo: 0, hi: 3 }, Interval { lo: 0, hi: 1 }];
        let e = (d(0) * 2 + d(1)).floor_div(2);
        assert_eq!(e.bounds(&r), Some(Interval { lo: 0, hi: 3 }));
        let m = (d(0) * 2 + d(1)).modulo(2);
        assert_eq!(m.bounds(&r), Some(Interval { lo: 0, hi: 1 }));
        let neg = d(0) * -3 + 1;
        assert_eq!(neg.bounds(&r), Some(Interval { lo: -8, hi: 1 }));
    }
}
