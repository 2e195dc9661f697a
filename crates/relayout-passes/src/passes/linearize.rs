//! `linearize`: lowers an index-map kernel to a loop kernel.
//!
//! What it does: every dim of a statement becomes a loop (in domain order, outermost first,
//! counting from 0 to the length of its range), and every access `%t[e_0, ..., e_n]` becomes
//! the byte offset `base + sum(stride_i * i_i)`, where for the row-major element strides `s_j`
//! of `t` and the element size `z`, `stride_i = z * sum_j(s_j * coef of d_i in e_j)` and `base`
//! is the offset at the first point (`d_i = lo_i`). Each point moves one element (`bytes` is
//! the element size). Statements with an empty range are dropped, and so need no strides: a
//! kernel over empty tensors lowers to a kernel that does nothing.
//!
//! It never fails on the size of a kernel whose accesses are in bounds (see `access`); an
//! access that leaves its tensor can give [`PassError::OutOfBounds`].
//!
//! What it does not do: simplify, reorder or merge loops (`coalesce` and `interchange` do
//! that), or express a guard or a `floordiv`/`mod` in a byte offset: a statement with a guard,
//! or with an access whose byte offset keeps a `floordiv` or `mod` after simplification, is an
//! error that names it (run `canonicalize`, `split-dims`, `split-guards` and `peel-dims`
//! first). An access whose indices have `floordiv`/`mod` but whose byte offset, the weighted
//! sum of its indices, folds into an affine sum is lowered from that sum (a Reshape between
//! shapes that do not nest; see `flat_access`).

use crate::pass::{expect_index, Pass};
use crate::simplify::Simplifier;
use crate::stmt::describe;
use crate::sum::{Atom, Sum};
use crate::{Level, PassError};
use relayout_ir::{
    Action, AffineExpr, AnyKernel, DimRange, Kernel, Loop, LoopAction, LoopKernel, LoopStmt, Stmt,
    TensorType,
};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Linearize;

impl Linearize {
    /// The name in pipeline strings.
    pub(crate) const NAME: &'static str = "linearize";
}

const NAME: &str = Linearize::NAME;

impl Pass for Linearize {
    fn name(&self) -> &'static str {
        NAME
    }

    fn input_level(&self) -> Level {
        Level::Index
    }

    fn output_level(&self) -> Level {
        Level::Loops
    }

    fn run(&self, ir: AnyKernel) -> Result<AnyKernel, PassError> {
        let k = expect_index(NAME, ir)?;
        linearize(&k).map(AnyKernel::Loops)
    }
}

fn fail(message: String) -> PassError {
    PassError::Failed {
        pass: NAME,
        message,
    }
}

/// Why a statement cannot be lowered.
enum StmtError {
    /// It has something the loop IR cannot express, or a malformed map.
    Unsupported(String),
    /// One of its accesses leaves its tensor (see [`PassError::OutOfBounds`]).
    OutOfBounds(String),
}

/// The loop kernel of an index-map kernel without guards, `floordiv` or `mod`.
///
/// For a kernel whose accesses are in bounds (what the verifier proves), nothing here can
/// overflow or fail on the size of the tensors: every byte offset of a point lies in its
/// tensor, whose size fits in `i64`; see [`access`].
pub(crate) fn linearize(k: &Kernel) -> Result<LoopKernel, PassError> {
    let esize = k.dst.dtype.size();
    let src = Operand::new(&k.src, esize)?;
    let dst = Operand::new(&k.dst, esize)?;
    let mut stmts = Vec::with_capacity(k.stmts.len());
    for (i, s) in k.stmts.iter().enumerate() {
        if s.domain.iter().any(DimRange::is_empty) {
            continue;
        }
        let stmt = lower_stmt(s, &src, &dst, esize).map_err(|e| match e {
            StmtError::Unsupported(m) => fail(format!("{}: {m}", describe(i, s))),
            StmtError::OutOfBounds(m) => PassError::OutOfBounds {
                pass: NAME,
                message: format!("{}: {m}", describe(i, s)),
            },
        })?;
        stmts.push(stmt);
    }
    Ok(LoopKernel {
        bands: Vec::new(),
        name: k.name.clone(),
        src: k.src.clone(),
        dst: k.dst.clone(),
        stmts,
    })
}

/// A tensor as the loop IR addresses it.
struct Operand<'a> {
    ty: &'a TensorType,
    /// Bytes per unit of each index (the row-major element stride times the element size), or
    /// `None` for a tensor with no element.
    weights: Option<Vec<i128>>,
}

impl<'a> Operand<'a> {
    fn new(ty: &'a TensorType, esize: u64) -> Result<Operand<'a>, PassError> {
        let elements = ty.num_elements().map_err(|e| fail(e.to_string()))?;
        ty.size_bytes().map_err(|e| fail(e.to_string()))?;
        // A tensor with no element may have other dims whose product fits in no integer type
        // (`tensor<0x2^62x2^62xui8>`), so its row-major strides are not computed: no point
        // can address it. For any other tensor every stride times the element size is at most
        // its byte size, which fits in `i64`.
        let weights = (elements > 0).then(|| {
            ty.strides()
                .into_iter()
                .map(|s| i128::from(s) * i128::from(esize))
                .collect()
        });
        Ok(Operand { ty, weights })
    }
}

fn lower_stmt(s: &Stmt, src: &Operand, dst: &Operand, esize: u64) -> Result<LoopStmt, StmtError> {
    if !s.guard.is_empty() {
        return Err(StmtError::Unsupported(
            "has a guard, which the loop IR cannot express".into(),
        ));
    }
    let simp =
        Simplifier::new(&s.domain).ok_or(StmtError::Unsupported("has an empty range".into()))?;
    let (dst_offset, dst_strides) = access(&simp, &s.dst, dst, &s.domain, "destination")?;
    let (action, src_offset, src_strides) = match &s.action {
        Action::Fill { value } => (
            LoopAction::Fill { value: *value },
            0,
            vec![0; s.domain.len()],
        ),
        Action::Copy { src: map } | Action::Accumulate { src: map } => {
            let (o, st) = access(&simp, map, src, &s.domain, "source")?;
            let a = match s.action {
                Action::Copy { .. } => LoopAction::Copy,
                _ => LoopAction::Accumulate,
            };
            (a, o, st)
        }
    };
    let loops = s
        .domain
        .iter()
        .zip(src_strides.into_iter().zip(dst_strides))
        .map(|(r, (src_stride, dst_stride))| Loop {
            extent: r.len(),
            src_stride,
            dst_stride,
        })
        .collect();
    Ok(LoopStmt {
        action,
        bytes: esize,
        src_offset,
        dst_offset,
        loops,
        window: None,
    })
}

/// The byte offset at the first point and the byte stride of each dim, for one access.
///
/// Everything is computed at the first point (`d_i = lo_i`) and in `i128`, and only the results
/// must fit in `i64`. When the access is in bounds they do: each index at the first point is
/// evaluated as written, whose every subexpression the verifier bounded in `i64` over the
/// domain; the offset lies in the tensor; and the stride of a dim with two or more values is
/// the difference of two offsets in the tensor. The constant of a flattened index is not used
/// on its own: it can lie far outside the tensor (`d0 * 3 - 19327352823` for `d0` from
/// 6442450941) and overflow once multiplied by its stride. A dim with one value keeps a stride
/// that does not fit only as 0, which moves the same bytes because its counter is always 0.
fn access(
    simp: &Simplifier,
    map: &[AffineExpr],
    operand: &Operand,
    domain: &[DimRange],
    what: &str,
) -> Result<(i64, Vec<i64>), StmtError> {
    let Some(weights) = &operand.weights else {
        return Err(StmtError::OutOfBounds(format!(
            "the {what} {} has no element, but the statement accesses it",
            operand.ty
        )));
    };
    if map.len() != weights.len() {
        return Err(StmtError::Unsupported(format!(
            "the {what} map has {} indices for a tensor of rank {}",
            map.len(),
            weights.len()
        )));
    }
    let first_point: Vec<i64> = domain.iter().map(|r| r.lo).collect();
    if map.iter().any(AffineExpr::has_div_or_mod) {
        return flat_access(simp, map, weights, &first_point, what)
            .or_else(|e| unravelled_access(simp, map, operand, domain, &first_point).ok_or(e));
    }
    let mut offset = Some(0i128);
    // `None` once a stride overflows even `i128`.
    let mut strides = vec![Some(0i128); domain.len()];
    for (e, &w) in map.iter().zip(weights) {
        // An index in canonical linear form (most are) gives its terms without its sum being
        // built: one allocation fewer per index.
        let canonical = Sum::is_canonical_linear(e, domain.len());
        let sum = if canonical {
            None
        } else {
            Some(simp.sum_of(e).ok_or_else(|| {
                StmtError::Unsupported(format!("the {what} index `{e}` cannot be flattened"))
            })?)
        };
        let first = e.eval(&first_point).ok_or_else(|| {
            StmtError::OutOfBounds(format!(
                "the {what} index `{e}` overflows i64 at the first point"
            ))
        })?;
        offset = offset.and_then(|o| o.checked_add(i128::from(first).checked_mul(w)?));
        let mut add_term = |d: usize, coef: i64| {
            strides[d] = strides[d].and_then(|s| s.checked_add(i128::from(coef).checked_mul(w)?));
        };
        match sum {
            None => {
                Sum::visit_canonical_linear(e, domain.len(), &mut add_term);
            }
            Some(sum) => {
                for (a, coef) in sum.terms() {
                    let Atom::Dim(d) = a else {
                        return Err(StmtError::Unsupported(format!(
                            "the {what} index `{e}` is not affine"
                        )));
                    };
                    add_term(*d, *coef);
                }
            }
        }
    }
    let offset = offset.and_then(|o| i64::try_from(o).ok()).ok_or_else(|| {
        StmtError::OutOfBounds(format!(
            "the {what} offset at the first point does not fit in i64"
        ))
    })?;
    let strides = strides
        .into_iter()
        .zip(domain)
        .enumerate()
        .map(|(d, (s, r))| match s.and_then(|s| i64::try_from(s).ok()) {
            Some(s) => Ok(s),
            None if r.len() == 1 => Ok(0),
            None => Err(StmtError::OutOfBounds(format!(
                "the {what} stride of d{d} does not fit in i64"
            ))),
        })
        .collect::<Result<_, _>>()?;
    Ok((offset, strides))
}

/// [`access`] for a map with a `floordiv` or `mod`: the byte offset as one sum over the dims,
/// `sum(weight_j * e_j)`, which the simplifier's rules may fold into an affine sum although
/// no index is affine on its own. A Reshape whose shapes do not nest (`tensor<2xNx3>` as
/// `tensor<6xN>`, N not a multiple of 3) reads `%src[d0, X floordiv 3, X mod 3]`: its offset
/// `3N * d0 + 3 * (X floordiv 3) + (X mod 3)` is `3N * d0 + X` (`Sum::recombine`), the
/// destination's own. An offset that keeps a `floordiv` or `mod` is an error, as before.
///
/// Every rule of the simplifier is an identity over the statement's domain, so the folded sum
/// is the offset at every point; its value at the first point is computed from the indices as
/// written, as in [`access`].
fn flat_access(
    simp: &Simplifier,
    map: &[AffineExpr],
    weights: &[i128],
    first_point: &[i64],
    what: &str,
) -> Result<(i64, Vec<i64>), StmtError> {
    let not_affine = |why: &str| {
        StmtError::Unsupported(format!(
            "the {what} map `{}` has a floordiv or mod {why}, which the loop IR cannot express",
            map.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    let mut total = Sum::constant(0);
    let mut offset = Some(0i128);
    for (e, &w) in map.iter().zip(weights) {
        let sum = simp
            .sum_of(e)
            .and_then(|s| s.scale_owned(i64::try_from(w).ok()?))
            .ok_or_else(|| not_affine("that cannot be flattened"))?;
        total = total
            .add(sum)
            .ok_or_else(|| not_affine("that cannot be flattened"))?;
        let first = e.eval(first_point).ok_or_else(|| {
            StmtError::OutOfBounds(format!(
                "the {what} index `{e}` overflows i64 at the first point"
            ))
        })?;
        offset = offset.and_then(|o| o.checked_add(i128::from(first).checked_mul(w)?));
    }
    let total = simp.fold_digits(total);
    let mut strides = vec![0i64; first_point.len()];
    for (a, coef) in total.terms() {
        let Atom::Dim(d) = a else {
            return Err(not_affine("even in its byte offset"));
        };
        strides[*d] = *coef;
    }
    let offset = offset.and_then(|o| i64::try_from(o).ok()).ok_or_else(|| {
        StmtError::OutOfBounds(format!(
            "the {what} offset at the first point does not fit in i64"
        ))
    })?;
    Ok((offset, strides))
}

/// [`access`] for a map that unravels one affine row-major position: when every index
/// `e_j`, as the simplifier writes it, is `(F floordiv s_j) mod n_j` for the tensor's dims
/// `n_j`, their row-major strides `s_j` and one affine position `F` that stays in
/// `[0, elements)` over the domain, the element at the indices is element `F`, so the byte
/// offset is `element size * F`. A Reshape between shapes that do not nest reads its source
/// so, and [`flat_access`] does not always see it: the simplifier writes the digits of `F` in
/// forms whose quotients no longer match (`tensor<4x4x8x3x5>` read as `tensor<3x320x2>`:
/// `(d0 * 320 + d1) floordiv 240`, `(d0 * 128 + (d1 * 2 + d2) floordiv 5) mod 3`,
/// `(d1 * 2 + d2) mod 5`), so `fold_digits` finds no fold.
///
/// `F` is found by evaluating the flat position `sum(s_j * e_j)` at the `first` point and one
/// step along each dim, and then proven, not assumed: the simplifier's form of each candidate
/// digit of `F` must be the form it gives `e_j`. Its rules are identities over the domain, so
/// equal forms mean equal values at every point. `None` when any step fails.
fn unravelled_access(
    simp: &Simplifier,
    map: &[AffineExpr],
    operand: &Operand,
    domain: &[DimRange],
    first: &[i64],
) -> Option<(i64, Vec<i64>)> {
    let ty = operand.ty;
    let esize = i128::from(ty.dtype.size());
    let strides = ty.strides();
    let elements = i128::from(ty.num_elements().ok()?);
    // The flat position at a point, evaluated from the indices as written.
    let flat = |point: &[i64]| -> Option<i128> {
        map.iter().zip(&strides).try_fold(0i128, |acc, (e, &s)| {
            acc.checked_add(i128::from(e.eval(point)?).checked_mul(i128::from(s))?)
        })
    };
    let at_first = flat(first)?;
    let mut coefs = Vec::with_capacity(domain.len());
    for (d, r) in domain.iter().enumerate() {
        if r.len() < 2 {
            coefs.push(0i128);
            continue;
        }
        let mut next = first.to_vec();
        next[d] += 1;
        coefs.push(flat(&next)?.checked_sub(at_first)?);
    }
    // F's least and greatest values over the box: it must stay inside the tensor, where the
    // row-major digits of F are the indices of element F.
    let (mut lo, mut hi) = (at_first, at_first);
    for (c, r) in coefs.iter().zip(domain) {
        let span = c.checked_mul(i128::from(r.len()) - 1)?;
        if span < 0 {
            lo = lo.checked_add(span)?;
        } else {
            hi = hi.checked_add(span)?;
        }
    }
    if lo < 0 || hi >= elements {
        return None;
    }
    // F as an expression: its value at the first point, plus each coefficient times the dim's
    // distance from its first value.
    let constant = coefs.iter().zip(domain).try_fold(at_first, |acc, (c, r)| {
        acc.checked_sub(c.checked_mul(i128::from(r.lo))?)
    })?;
    let mut position = AffineExpr::Const(i64::try_from(constant).ok()?);
    for (d, &c) in coefs.iter().enumerate() {
        if c != 0 {
            let term = AffineExpr::Mul(Box::new(AffineExpr::Dim(d)), i64::try_from(c).ok()?);
            position = AffineExpr::Add(Box::new(position), Box::new(term));
        }
    }
    for ((e, &s), &n) in map.iter().zip(&strides).zip(&ty.shape) {
        let digit = AffineExpr::Mod(
            Box::new(AffineExpr::FloorDiv(
                Box::new(position.clone()),
                i64::try_from(s).ok()?,
            )),
            i64::try_from(n).ok()?,
        );
        // A dim with one value is that value in `e` too (F has no term of it).
        let e = e.substitute(&|d| match domain[d].len() {
            1 => AffineExpr::Const(domain[d].lo),
            _ => AffineExpr::Dim(d),
        });
        if simp.sum_of(&digit)? != simp.sum_of(&e)? {
            return None;
        }
    }
    let offset = i64::try_from(at_first.checked_mul(esize)?).ok()?;
    let strides = coefs
        .iter()
        .map(|c| i64::try_from(c.checked_mul(esize)?).ok())
        .collect::<Option<Vec<_>>>()?;
    Some((offset, strides))
}

/// Whether `linearize` lowers statement `s` of `k` as it is: it has no guard, and every
/// access's byte offset is affine in its dims, even where an index has a `floordiv` or `mod`
/// (see [`flat_access`]). `peel-dims` leaves such a statement whole.
pub(crate) fn lowers_whole(k: &Kernel, s: &Stmt) -> bool {
    let esize = k.dst.dtype.size();
    let (Ok(src), Ok(dst)) = (Operand::new(&k.src, esize), Operand::new(&k.dst, esize)) else {
        return false;
    };
    s.guard.is_empty() && lower_stmt(s, &src, &dst, esize).is_ok()
}
