//! SpaceToDepth and DepthToSpace: validation, output type and lowering.
//!
//! Both ops are defined on a logical NHWC tensor `(n, y, x, c)`. The three data formats only
//! store it differently: NHWC as `[N, H, W, C]`, NCHW as `[N, C, H, W]`, and NCHW_VECT_C as
//! `[N, C / 4, H, W, 4]` whose logical channel is `outer * 4 + inner` (the format unpacks to
//! NHWC, applies the op and packs again). So each lowering is three steps: the output index in
//! logical form, the op's formula from logical output to logical input, and the input's
//! storage. That keeps one formula per op instead of one per format.
//!
//! SpaceToDepth: output channel `(by * b + bx) * C + c` takes input `(y * b + by, x * b + bx, c)`.
//! DepthToSpace DCR is its inverse; CRD (NCHW only) reads input channel `c * b * b + by * b + bx`.

use crate::lowering::{d, gather, konst};
use crate::validate::{check_rank, check_tensor, fail, mul};
use crate::{DataFormat, DepthToSpaceMode, ErrorCategory, OpError};
use relayout_ir::{AffineExpr, Kernel, TensorType};

/// Logical NHWC sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Nhwc {
    pub n: u64,
    pub h: u64,
    pub w: u64,
    pub c: u64,
}

/// A validated SpaceToDepth or DepthToSpace.
#[derive(Clone, Debug)]
pub(crate) struct DepthPlan {
    pub input: Nhwc,
    pub output: Nhwc,
    pub block: u64,
    pub format: DataFormat,
    pub output_type: TensorType,
}

/// What the storage of each format means for validation.
impl DataFormat {
    fn rank(self) -> usize {
        match self {
            DataFormat::Nhwc | DataFormat::Nchw => 4,
            DataFormat::NchwVectC => 5,
        }
    }

    /// Which storage dims hold the height and the width (for messages).
    fn spatial_dims(self) -> (usize, usize) {
        match self {
            DataFormat::Nhwc => (1, 2),
            DataFormat::Nchw | DataFormat::NchwVectC => (2, 3),
        }
    }
}

/// Checks the rank and, for NCHW_VECT_C, the vector dim; then reads the logical sizes.
fn read_input(op: &str, format: DataFormat, ty: &TensorType) -> Result<Nhwc, OpError> {
    check_rank(op, format.name(), ty, format.rank())?;
    let s = &ty.shape;
    if format == DataFormat::NchwVectC && s[4] != 4 {
        return fail(
            ErrorCategory::BadVectC,
            format!(
                "{op}: NCHW_VECT_C input must have 4 in its last dim (dim 4), got {} ({ty})",
                s[4]
            ),
        );
    }
    Ok(match format {
        DataFormat::Nhwc => Nhwc {
            n: s[0],
            h: s[1],
            w: s[2],
            c: s[3],
        },
        DataFormat::Nchw => Nhwc {
            n: s[0],
            c: s[1],
            h: s[2],
            w: s[3],
        },
        DataFormat::NchwVectC => Nhwc {
            n: s[0],
            c: mul(op, s[1], 4, "NCHW_VECT_C depth")?,
            h: s[2],
            w: s[3],
        },
    })
}

fn check_block(op: &str, block_size: i64) -> Result<u64, OpError> {
    if block_size < 2 {
        return fail(
            ErrorCategory::BlockSizeTooSmall,
            format!("{op}: block_size must be at least 2, got {block_size}"),
        );
    }
    Ok(block_size.unsigned_abs())
}

/// The storage shape of logical sizes in `format`. For NCHW_VECT_C the caller has checked that
/// the channel count is a multiple of 4.
fn storage_shape(format: DataFormat, t: Nhwc) -> Vec<u64> {
    match format {
        DataFormat::Nhwc => vec![t.n, t.h, t.w, t.c],
        DataFormat::Nchw => vec![t.n, t.c, t.h, t.w],
        DataFormat::NchwVectC => vec![t.n, t.c / 4, t.h, t.w, 4],
    }
}

fn output_plan(
    op: &str,
    input: Nhwc,
    output: Nhwc,
    block: u64,
    format: DataFormat,
    ty: &TensorType,
) -> Result<DepthPlan, OpError> {
    let output_type = TensorType::new(ty.dtype, storage_shape(format, output));
    check_tensor(op, "output", &output_type)?;
    Ok(DepthPlan {
        input,
        output,
        block,
        format,
        output_type,
    })
}

/// Validates SpaceToDepth: rank, vector dim, block size, then H and W divisible by the block.
pub(crate) fn plan_space_to_depth(
    block_size: i64,
    format: DataFormat,
    ty: &TensorType,
) -> Result<DepthPlan, OpError> {
    let op = "SpaceToDepth";
    let input = read_input(op, format, ty)?;
    let b = check_block(op, block_size)?;
    check_tensor(op, "input", ty)?;
    let (hd, wd) = format.spatial_dims();
    for (what, size, dim) in [("height", input.h, hd), ("width", input.w, wd)] {
        if size % b != 0 {
            return fail(
                ErrorCategory::NotDivisible,
                format!("{op}: input {what} {size} (dim {dim}) is not divisible by block_size {b}"),
            );
        }
    }
    let bb = mul(op, b, b, "block_size * block_size")?;
    let output = Nhwc {
        n: input.n,
        h: input.h / b,
        w: input.w / b,
        c: mul(op, input.c, bb, "output depth")?,
    };
    output_plan(op, input, output, b, format, ty)
}

/// Validates DepthToSpace: rank, vector dim, mode, block size, then the depth divisible by
/// `b * b` (and, for NCHW_VECT_C, the output depth divisible by 4).
pub(crate) fn plan_depth_to_space(
    block_size: i64,
    format: DataFormat,
    mode: DepthToSpaceMode,
    ty: &TensorType,
) -> Result<DepthPlan, OpError> {
    let op = "DepthToSpace";
    let input = read_input(op, format, ty)?;
    if mode == DepthToSpaceMode::Crd && format != DataFormat::Nchw {
        return fail(
            ErrorCategory::BadMode,
            format!(
                "{op}: mode CRD is only defined for data_format NCHW, got {}",
                format.name()
            ),
        );
    }
    let b = check_block(op, block_size)?;
    check_tensor(op, "input", ty)?;
    let bb = mul(op, b, b, "block_size * block_size")?;
    let depth_dim = match format {
        DataFormat::Nhwc => 3,
        DataFormat::Nchw | DataFormat::NchwVectC => 1,
    };
    if input.c % bb != 0 {
        return fail(
            ErrorCategory::NotDivisible,
            format!(
                "{op}: input depth {} (dim {depth_dim}) is not divisible by block_size * block_size = {bb}",
                input.c
            ),
        );
    }
    let c = input.c / bb;
    if format == DataFormat::NchwVectC && c % 4 != 0 {
        return fail(
            ErrorCategory::NotDivisible,
            format!(
                "{op}: NCHW_VECT_C output depth {} / {bb} = {c} is not divisible by 4 \
                 (the {} channel groups of dim 1 must be divisible by block_size * block_size = {bb})",
                input.c,
                input.c / 4
            ),
        );
    }
    let output = Nhwc {
        n: input.n,
        h: mul(op, input.h, b, "output height")?,
        w: mul(op, input.w, b, "output width")?,
        c,
    };
    output_plan(op, input, output, b, format, ty)
}

/// The logical `(n, y, x, c)` of the output point `d0, d1, ...` in `format`.
fn logical_output(format: DataFormat) -> [AffineExpr; 4] {
    match format {
        DataFormat::Nhwc => [d(0), d(1), d(2), d(3)],
        DataFormat::Nchw => [d(0), d(2), d(3), d(1)],
        DataFormat::NchwVectC => [d(0), d(2), d(3), d(1) * 4 + d(4)],
    }
}

/// The storage index of the logical input point `(n, y, x, c)` in `format`.
fn storage_index(format: DataFormat, [n, y, x, c]: [AffineExpr; 4]) -> Vec<AffineExpr> {
    match format {
        DataFormat::Nhwc => vec![n, y, x, c],
        DataFormat::Nchw => vec![n, c, y, x],
        DataFormat::NchwVectC => vec![n, c.clone().floor_div(4), y, x, c.modulo(4)],
    }
}

fn kernel(name: &str, plan: &DepthPlan, ty: &TensorType, src: Vec<AffineExpr>) -> Kernel {
    Kernel {
        name: name.into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(&plan.output_type.shape, src, Vec::new())],
    }
}

/// Gather form: output `(n, y, x, oc)` reads input
/// `(n, y * b + oc floordiv (b * C), x * b + (oc floordiv C) mod b, oc mod C)`.
pub(crate) fn lower_space_to_depth(plan: &DepthPlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let op = "SpaceToDepth";
    let b = konst(op, plan.block)?;
    let c = konst(op, plan.input.c)?;
    let bc = konst(op, mul(op, plan.block, plan.input.c, "block_size * depth")?)?;
    let [n, y, x, oc] = logical_output(plan.format);
    let src = [
        n,
        y * b + oc.clone().floor_div(bc),
        x * b + oc.clone().floor_div(c).modulo(b),
        oc.modulo(c),
    ];
    Ok(kernel(
        "space_to_depth",
        plan,
        ty,
        storage_index(plan.format, src),
    ))
}

/// Gather form: output `(n, Y, X, c)` reads input `(n, Y floordiv b, X floordiv b, ic)` with
/// `ic = ((Y mod b) * b + X mod b) * C + c` (DCR) or `c * b * b + (Y mod b) * b + X mod b` (CRD).
pub(crate) fn lower_depth_to_space(
    plan: &DepthPlan,
    mode: DepthToSpaceMode,
    ty: &TensorType,
) -> Result<Kernel, OpError> {
    let op = "DepthToSpace";
    let b = konst(op, plan.block)?;
    let [n, y, x, c] = logical_output(plan.format);
    let by = y.clone().modulo(b);
    let bx = x.clone().modulo(b);
    let ic = match mode {
        DepthToSpaceMode::Dcr => (by * b + bx) * konst(op, plan.output.c)? + c,
        DepthToSpaceMode::Crd => {
            c * konst(op, mul(op, plan.block, plan.block, "b * b")?)? + by * b + bx
        }
    };
    let src = [n, y.floor_div(b), x.floor_div(b), ic];
    Ok(kernel(
        "depth_to_space",
        plan,
        ty,
        storage_index(plan.format, src),
    ))
}
