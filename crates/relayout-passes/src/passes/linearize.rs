//! `linearize`: lowers an index-map kernel to a loop kernel.
//!
//! What it does: every dim of a statement becomes a loop (in domain order, outermost first,
//! counting from 0 to the length of its range), and every access `%t[e_0, ..., e_n]` becomes
//! the byte offset `base + sum(stride_i * i_i)`, where for the row-major element strides `s_j`
//! of `t` and the element size `z`, `stride_i = z * sum_j(s_j * coef of d_i in e_j)` and `base`
//! is the offset at the first point (`d_i = lo_i`). Each point moves one element (`bytes` is
//! the element size). Statements with an empty range are dropped.
//!
//! What it does not do: simplify, reorder or merge loops (`coalesce` and `interchange` do
//! that), or express a guard or a `floordiv`/`mod`: a statement with either is an error that
//! names it (run `canonicalize`, `split-dims`, `split-guards` and `peel-dims` first).

use crate::pass::{expect_index, Pass};
use crate::simplify::Simplifier;
use crate::stmt::describe;
use crate::sum::Atom;
use crate::{Level, PassError};
use relayout_ir::{
    Action, AffineExpr, AnyKernel, DimRange, Kernel, Loop, LoopAction, LoopKernel, LoopStmt, Stmt,
    TensorType,
};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Linearize;

const NAME: &str = "linearize";

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

/// The loop kernel of an index-map kernel without guards, `floordiv` or `mod`.
pub(crate) fn linearize(k: &Kernel) -> Result<LoopKernel, PassError> {
    let esize = i64::try_from(k.dst.dtype.size()).map_err(|_| fail("element size".into()))?;
    let src = element_strides(&k.src)?;
    let dst = element_strides(&k.dst)?;
    let mut stmts = Vec::with_capacity(k.stmts.len());
    for (i, s) in k.stmts.iter().enumerate() {
        if s.domain.iter().any(DimRange::is_empty) {
            continue;
        }
        stmts.push(
            lower_stmt(s, &src, &dst, esize)
                .map_err(|m| fail(format!("{}: {m}", describe(i, s))))?,
        );
    }
    Ok(LoopKernel {
        name: k.name.clone(),
        src: k.src.clone(),
        dst: k.dst.clone(),
        stmts,
    })
}

/// Row-major strides in elements, as `i64`.
fn element_strides(t: &TensorType) -> Result<Vec<i64>, PassError> {
    t.size_bytes().map_err(|e| fail(e.to_string()))?;
    t.strides()
        .into_iter()
        .map(|s| i64::try_from(s).map_err(|_| fail(format!("a stride of {t} overflows"))))
        .collect()
}

fn lower_stmt(s: &Stmt, src: &[i64], dst: &[i64], esize: i64) -> Result<LoopStmt, String> {
    if !s.guard.is_empty() {
        return Err("has a guard, which the loop IR cannot express".into());
    }
    let simp = Simplifier::new(&s.domain).ok_or("has an empty range")?;
    let (dst_offset, dst_strides) = access(&simp, &s.dst, dst, esize, &s.domain, "destination")?;
    let (action, src_offset, src_strides) = match &s.action {
        Action::Fill => (LoopAction::Fill, 0, vec![0; s.domain.len()]),
        Action::Copy { src: map } | Action::Accumulate { src: map } => {
            let (o, st) = access(&simp, map, src, esize, &s.domain, "source")?;
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
        bytes: esize.unsigned_abs(),
        src_offset,
        dst_offset,
        loops,
    })
}

/// The byte offset at the first point and the byte stride of each dim, for one access.
fn access(
    simp: &Simplifier,
    map: &[AffineExpr],
    elem_strides: &[i64],
    esize: i64,
    domain: &[DimRange],
    what: &str,
) -> Result<(i64, Vec<i64>), String> {
    let overflow = || format!("the {what} offset overflows");
    if map.len() != elem_strides.len() {
        return Err(format!(
            "the {what} map has {} indices for a tensor of rank {}",
            map.len(),
            elem_strides.len()
        ));
    }
    let mut offset: i64 = 0;
    let mut strides = vec![0i64; domain.len()];
    for (e, &st) in map.iter().zip(elem_strides) {
        if e.has_div_or_mod() {
            return Err(format!(
                "the {what} index `{e}` has a floordiv or mod, which the loop IR cannot express"
            ));
        }
        let sum = simp
            .sum_of(e)
            .ok_or_else(|| format!("the {what} index `{e}` cannot be flattened"))?;
        let w = st.checked_mul(esize).ok_or_else(overflow)?;
        let c = sum.constant_part().checked_mul(w).ok_or_else(overflow)?;
        offset = offset.checked_add(c).ok_or_else(overflow)?;
        for (a, coef) in sum.terms() {
            let Atom::Dim(d) = a else {
                return Err(format!("the {what} index `{e}` is not affine"));
            };
            let add = coef.checked_mul(w).ok_or_else(overflow)?;
            strides[*d] = strides[*d].checked_add(add).ok_or_else(overflow)?;
        }
    }
    // Loops count from 0: start at the offset of `d_i = lo_i`.
    for (st, r) in strides.iter().zip(domain) {
        let c = st.checked_mul(r.lo).ok_or_else(overflow)?;
        offset = offset.checked_add(c).ok_or_else(overflow)?;
    }
    Ok((offset, strides))
}
