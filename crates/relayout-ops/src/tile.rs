//! Tile (ONNX): output dim `i` is `d_i * repeats[i]` and `out[i_0, ...] = x[i_0 mod d_0, ...]`.

use crate::lowering::{d, gather, konst};
use crate::validate::{check_tensor, fail, list, mul, nonneg};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Kernel, TensorType};

const OP: &str = "Tile";

/// A validated Tile: the input dims and the output type.
#[derive(Clone, Debug)]
pub(crate) struct TilePlan {
    pub repeats: Vec<u64>,
    pub output_type: TensorType,
}

/// Checks one non-negative repeat per input dim.
pub(crate) fn plan_tile(repeats: &[i64], ty: &TensorType) -> Result<TilePlan, OpError> {
    check_tensor(OP, "input", ty)?;
    if repeats.len() != ty.rank() {
        return fail(
            ErrorCategory::BadRepeats,
            format!(
                "{OP}: repeats {} has {} entries but the input {ty} has rank {}",
                list(repeats),
                repeats.len(),
                ty.rank()
            ),
        );
    }
    if let Some((i, r)) = repeats.iter().enumerate().find(|(_, &r)| r < 0) {
        return fail(
            ErrorCategory::BadRepeats,
            format!(
                "{OP}: repeats[{i}] = {r} is negative (repeats {})",
                list(repeats)
            ),
        );
    }
    let repeats: Vec<u64> = repeats.iter().map(|&r| nonneg(r)).collect();
    let shape = ty
        .shape
        .iter()
        .zip(&repeats)
        .enumerate()
        .map(|(i, (&n, &r))| mul(OP, n, r, &format!("output dim {i}")))
        .collect::<Result<Vec<u64>, _>>()?;
    let output_type = TensorType::new(ty.dtype, shape);
    check_tensor(OP, "output", &output_type)?;
    Ok(TilePlan {
        repeats,
        output_type,
    })
}

/// A gather over the output reading `d_i mod n_i` (just `d_i` where the repeat is 1).
pub(crate) fn lower_tile(plan: &TilePlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let src = ty
        .shape
        .iter()
        .zip(&plan.repeats)
        .enumerate()
        .map(|(i, (&n, &r))| {
            Ok(if r == 1 {
                d(i)
            } else {
                d(i).modulo(konst(OP, n)?)
            })
        })
        .collect::<Result<Vec<_>, OpError>>()?;
    Ok(Kernel {
        name: "tile".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(&plan.output_type.shape, src, Vec::new())],
    })
}
