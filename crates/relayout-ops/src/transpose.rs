//! Transpose (ONNX): output dim `i` is input dim `perm[i]`, as `numpy.transpose(x, perm)`; the
//! default perm reverses the dims.

use crate::lowering::{d, gather};
use crate::validate::{check_tensor, fail, list};
use crate::{ErrorCategory, OpError};
use relayout_ir::{AffineExpr, Kernel, TensorType};

const OP: &str = "Transpose";

/// A validated Transpose: the permutation and the output type.
#[derive(Clone, Debug)]
pub(crate) struct TransposePlan {
    pub perm: Vec<usize>,
    pub output_type: TensorType,
}

/// Checks that `perm` (or the reversal, when absent) is a permutation of `0..rank`.
pub(crate) fn plan_transpose(
    perm: Option<&[i64]>,
    ty: &TensorType,
) -> Result<TransposePlan, OpError> {
    check_tensor(OP, "input", ty)?;
    let rank = ty.rank();
    let perm: Vec<usize> = match perm {
        None => (0..rank).rev().collect(),
        Some(p) => {
            if p.len() != rank {
                return fail(
                    ErrorCategory::BadPerm,
                    format!(
                        "{OP}: perm {} has {} entries but the input {ty} has rank {rank}",
                        list(p),
                        p.len()
                    ),
                );
            }
            let mut seen = vec![false; rank];
            let mut out = Vec::with_capacity(rank);
            for (i, &v) in p.iter().enumerate() {
                let Some(u) = usize::try_from(v).ok().filter(|&u| u < rank) else {
                    return fail(
                        ErrorCategory::BadPerm,
                        format!(
                            "{OP}: perm[{i}] = {v} is not a dim of the rank-{rank} input \
                             (perm {}; entries lie in [0, {}])",
                            list(p),
                            rank as i64 - 1
                        ),
                    );
                };
                if std::mem::replace(&mut seen[u], true) {
                    return fail(
                        ErrorCategory::BadPerm,
                        format!("{OP}: perm {} repeats dim {u}", list(p)),
                    );
                }
                out.push(u);
            }
            out
        }
    };
    let shape: Vec<u64> = perm.iter().map(|&p| ty.shape[p]).collect();
    Ok(TransposePlan {
        perm,
        output_type: TensorType::new(ty.dtype, shape),
    })
}

/// A gather over the output: input dim `perm[i]` is output dim `i`.
pub(crate) fn lower_transpose(plan: &TransposePlan, ty: &TensorType) -> Kernel {
    let mut src = vec![AffineExpr::Const(0); plan.perm.len()];
    for (i, &p) in plan.perm.iter().enumerate() {
        src[p] = d(i);
    }
    Kernel {
        name: "transpose".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(&plan.output_type.shape, src, Vec::new())],
    }
}
