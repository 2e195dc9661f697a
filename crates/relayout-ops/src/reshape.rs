//! Reshape (ONNX opset 14+): the data keeps its row-major order and only the shape changes.
//! The lowering reads the input at the unravelled row-major position of each output element;
//! the passes turn that into one contiguous copy (and the movement analysis calls it a view).

use crate::lowering::{d, gather, konsts, linearize, unravel};
use crate::validate::{check_tensor, fail, list, nonneg, product};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Kernel, TensorType};

const OP: &str = "Reshape";

/// A validated Reshape: just the output type.
#[derive(Clone, Debug)]
pub(crate) struct ReshapePlan {
    pub output_type: TensorType,
}

fn bad<T>(message: String) -> Result<T, OpError> {
    fail(ErrorCategory::BadShape, format!("{OP}: {message}"))
}

/// Resolves `shape` against the input: `0` copies the input dim at its index (unless
/// `allowzero`), one `-1` is inferred from the element count.
pub(crate) fn plan_reshape(
    shape: &[i64],
    allowzero: bool,
    ty: &TensorType,
) -> Result<ReshapePlan, OpError> {
    check_tensor(OP, "input", ty)?;
    let numel = ty.num_elements().unwrap_or(u64::MAX);
    let shown = list(shape);
    if let Some((i, v)) = shape.iter().enumerate().find(|(_, &v)| v < -1) {
        return bad(format!("shape[{i}] = {v} is below -1 (shape {shown})"));
    }
    let inferred: Vec<usize> = (0..shape.len()).filter(|&i| shape[i] == -1).collect();
    if inferred.len() > 1 {
        return bad(format!("shape {shown} has more than one -1"));
    }
    if allowzero && !inferred.is_empty() && shape.contains(&0) {
        return bad(format!(
            "shape {shown} has both a -1 and a 0, which with allowzero = 1 is a real size 0"
        ));
    }
    let mut out = Vec::with_capacity(shape.len());
    for (i, &v) in shape.iter().enumerate() {
        out.push(match v {
            0 if !allowzero => match ty.shape.get(i) {
                Some(&dim) => dim,
                None => {
                    return bad(format!(
                        "shape[{i}] = 0 copies input dim {i}, but the input {ty} has rank {}",
                        ty.rank()
                    ))
                }
            },
            -1 => 1,
            v => nonneg(v),
        });
    }
    let known = product(OP, &out, "the product of the shape entries")?;
    if let Some(&at) = inferred.first() {
        if known == 0 || numel % known != 0 {
            return bad(format!(
                "cannot infer the -1 of shape {shown}: the other entries multiply to {known}, \
                 which does not divide the {numel} elements of the input {ty}"
            ));
        }
        out[at] = numel / known;
    } else if known != numel {
        return bad(format!(
            "shape {shown} (resolved {}) has {known} elements but the input {ty} has {numel}",
            list(&out)
        ));
    }
    let output_type = TensorType::new(ty.dtype, out);
    check_tensor(OP, "output", &output_type)?;
    Ok(ReshapePlan { output_type })
}

/// A gather over the output: the input at the unravelled row-major position of each element.
pub(crate) fn lower_reshape(plan: &ReshapePlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let out = &plan.output_type.shape;
    let linear = linearize(OP, (0..out.len()).map(d).collect(), &konsts(OP, out)?)?;
    let src = unravel(OP, &linear, &konsts(OP, &ty.shape)?)?;
    Ok(Kernel {
        name: "reshape".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(out, src, Vec::new())],
    })
}
