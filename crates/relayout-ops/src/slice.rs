//! Slice (ONNX opset 13, `starts`, `ends`, `axes` and `steps` as attributes), with the clamping
//! of the ONNX text: on an axis of size `d` with step `k`, a negative start or end gets `d`
//! added once; then for `k > 0` both clamp to `[0, d]`, for `k < 0` the start clamps to
//! `[0, d-1]` and the end to `[-1, d-1]`; the axis takes `start, start + k, ...` while before
//! the end.

use crate::lowering::{d, gather};
use crate::validate::{check_tensor, fail, list, normalize_axes};
use crate::{ErrorCategory, OpError};
use relayout_ir::{AffineExpr, Kernel, TensorType};

const OP: &str = "Slice";

/// What the slice takes on one axis: `count` elements from `start`, `step` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AxisSlice {
    pub start: i64,
    pub step: i64,
    pub count: u64,
}

/// A validated Slice: one [`AxisSlice`] per input dim (the whole dim where not sliced).
#[derive(Clone, Debug)]
pub(crate) struct SlicePlan {
    pub axes: Vec<AxisSlice>,
    pub output_type: TensorType,
}

/// The attributes as given to the op.
pub(crate) struct SliceAttrs<'a> {
    pub starts: &'a [i64],
    pub ends: &'a [i64],
    pub axes: Option<&'a [i64]>,
    pub steps: Option<&'a [i64]>,
}

fn bad<T>(message: String) -> Result<T, OpError> {
    fail(ErrorCategory::BadSlice, format!("{OP}: {message}"))
}

/// The ONNX clamping of one axis of size `dim`.
fn axis_slice(dim: u64, start: i64, end: i64, step: i64) -> AxisSlice {
    let dim = i128::from(dim);
    let fix = |v: i64| {
        let v = i128::from(v);
        if v < 0 {
            v + dim
        } else {
            v
        }
    };
    let (start, end, step) = (fix(start), fix(end), i128::from(step));
    let (start, end) = if step > 0 {
        (start.clamp(0, dim), end.clamp(0, dim))
    } else {
        (start.clamp(0, (dim - 1).max(0)), end.clamp(-1, dim - 1))
    };
    // ceil((end - start) / step), at least 0; an empty axis takes nothing whatever the clamps.
    let span = end - start;
    let count = if dim == 0 || (span > 0) != (step > 0) || span == 0 {
        0
    } else {
        (span.abs() + step.abs() - 1) / step.abs()
    };
    AxisSlice {
        // Within [0, dim - 1] whenever count > 0, so within i64.
        start: i64::try_from(start).unwrap_or(0),
        step: i64::try_from(step).unwrap_or(0),
        count: u64::try_from(count).unwrap_or(0),
    }
}

/// Validates, in order: equal list lengths, nonzero steps, axes in range and distinct.
pub(crate) fn plan_slice(a: &SliceAttrs, ty: &TensorType) -> Result<SlicePlan, OpError> {
    check_tensor(OP, "input", ty)?;
    let n = a.starts.len();
    let default_axes: Vec<i64> = (0..n as i64).collect();
    let axes = a.axes.unwrap_or(&default_axes);
    let default_steps = vec![1; n];
    let steps = a.steps.unwrap_or(&default_steps);
    for (name, values) in [("ends", a.ends), ("axes", axes), ("steps", steps)] {
        if values.len() != n {
            return bad(format!(
                "{name} {} has {} entries but starts {} has {n}",
                list(values),
                values.len(),
                list(a.starts)
            ));
        }
    }
    if let Some(i) = steps.iter().position(|&s| s == 0) {
        return bad(format!("steps[{i}] is 0 (steps {})", list(steps)));
    }
    let mut plan: Vec<AxisSlice> = ty
        .shape
        .iter()
        .map(|&dim| AxisSlice {
            start: 0,
            step: 1,
            count: dim,
        })
        .collect();
    let dims = normalize_axes(OP, ErrorCategory::BadSlice, axes, ty)?;
    for (i, &ax) in dims.iter().enumerate() {
        plan[ax] = axis_slice(ty.shape[ax], a.starts[i], a.ends[i], steps[i]);
    }
    let shape = plan.iter().map(|s| s.count).collect::<Vec<_>>();
    Ok(SlicePlan {
        axes: plan,
        output_type: TensorType::new(ty.dtype, shape),
    })
}

/// A gather over the output reading `start + step * d_i` on every axis (a constant where the
/// axis takes one element, so that no huge step reaches the index arithmetic).
pub(crate) fn lower_slice(plan: &SlicePlan, ty: &TensorType) -> Kernel {
    let src = plan
        .axes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if s.count == 1 {
                AffineExpr::Const(s.start)
            } else {
                let scaled = if s.step == 1 { d(i) } else { d(i) * s.step };
                if s.start == 0 {
                    scaled
                } else {
                    scaled + s.start
                }
            }
        })
        .collect();
    Kernel {
        name: "slice".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(&plan.output_type.shape, src, Vec::new())],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamping_follows_the_onnx_text() {
        // The two corners FORMAT.md names.
        assert_eq!(axis_slice(10, i64::MIN, i64::MIN, -3).count, 1);
        assert_eq!(axis_slice(10, i64::MIN, i64::MIN, -3).start, 0);
        assert_eq!(axis_slice(10, 5, i64::MAX, -1).count, 0);
        // Ordinary slices.
        assert_eq!(axis_slice(10, 1, 8, 3).count, 3);
        assert_eq!(axis_slice(10, -1, -11, -1).count, 10);
        assert_eq!(axis_slice(10, -1, i64::MIN, -4).count, 3);
        assert_eq!(axis_slice(0, 0, 5, 1).count, 0);
        assert_eq!(axis_slice(0, -1, -5, -1).count, 0);
        assert_eq!(axis_slice(5, 0, i64::MAX, i64::MAX).count, 1);
    }
}
