//! SpaceToBatchND and BatchToSpaceND (`tf.space_to_batch_nd` / `tf.batch_to_space_nd`), and
//! their TensorFlow v1 forms SpaceToBatch and BatchToSpace (4-D NHWC, a scalar block size of at
//! least 2, otherwise the ND ops with `block_shape = [b, b]`).
//!
//! The input is `[batch] + M spatial dims + remaining dims`. SpaceToBatchND zero-pads spatial
//! dim `i` by `[begin, end]`, cuts it into blocks of `block_shape[i]`, and moves the offset
//! inside the block to the batch: output batch `block_offset_linear * batch + b`, with the
//! block offsets major and row-major among themselves. BatchToSpaceND is the inverse, with
//! crops instead of padding.

use crate::lowering::{d, fill_all, gather, konst, konsts, linearize, minus, unravel, within};
use crate::validate::{add, check_rank, check_tensor, fail, list, mul, nonneg, product};
use crate::{ErrorCategory, OpError};
use relayout_ir::{AffineExpr, Kernel, TensorType};

/// A validated SpaceToBatch(ND) or BatchToSpace(ND).
#[derive(Clone, Debug)]
pub(crate) struct BatchPlan {
    /// Input batch size.
    pub batch: u64,
    /// Input sizes of the M spatial dims.
    pub spatial: Vec<u64>,
    pub block: Vec<u64>,
    /// Paddings (SpaceToBatch) or crops (BatchToSpace) at the start of each spatial dim.
    pub begin: Vec<u64>,
    pub end: Vec<u64>,
    pub output_type: TensorType,
}

/// Whether the pairs are paddings or crops: they share every rule but the error category.
#[derive(Clone, Copy)]
enum Pairs {
    Paddings,
    Crops,
}

impl Pairs {
    fn name(self) -> &'static str {
        match self {
            Pairs::Paddings => "paddings",
            Pairs::Crops => "crops",
        }
    }

    fn category(self) -> ErrorCategory {
        match self {
            Pairs::Paddings => ErrorCategory::BadPaddings,
            Pairs::Crops => ErrorCategory::BadCrops,
        }
    }
}

/// `pairs` must be `m` lists of exactly `[begin, end]`.
fn check_pair_shape(op: &str, kind: Pairs, pairs: &[Vec<i64>], m: usize) -> Result<(), OpError> {
    let what = kind.name();
    if pairs.len() != m {
        return fail(
            kind.category(),
            format!(
                "{op}: {what} must have {m} [begin, end] pairs (one per spatial dim), got {}",
                pairs.len()
            ),
        );
    }
    if let Some((i, p)) = pairs.iter().enumerate().find(|(_, p)| p.len() != 2) {
        return fail(
            kind.category(),
            format!(
                "{op}: {what}[{i}] = {} must be a [begin, end] pair",
                list(p)
            ),
        );
    }
    Ok(())
}

/// Every pair entry must be `>= 0`; returns the begins and the ends.
fn check_pair_values(
    op: &str,
    kind: Pairs,
    pairs: &[Vec<i64>],
) -> Result<(Vec<u64>, Vec<u64>), OpError> {
    if let Some((i, p)) = pairs
        .iter()
        .enumerate()
        .find(|(_, p)| p.iter().any(|&v| v < 0))
    {
        return fail(
            kind.category(),
            format!(
                "{op}: {}[{i}] = {} has a negative entry; both must be >= 0",
                kind.name(),
                list(p)
            ),
        );
    }
    Ok(pairs.iter().map(|p| (nonneg(p[0]), nonneg(p[1]))).unzip())
}

/// The validated attributes shared by both directions.
struct Common {
    block: Vec<u64>,
    begin: Vec<u64>,
    end: Vec<u64>,
}

/// The checks common to both directions, in order: M >= 1, rank >= M + 1, the pair list's
/// shape, block entries >= 1, pair entries >= 0, and a representable input.
fn check_common(
    op: &str,
    block_shape: &[i64],
    kind: Pairs,
    pairs: &[Vec<i64>],
    ty: &TensorType,
) -> Result<Common, OpError> {
    let m = block_shape.len();
    if m == 0 {
        return fail(
            ErrorCategory::BadAttribute,
            format!("{op}: block_shape must have at least one entry"),
        );
    }
    if ty.rank() < m + 1 {
        return fail(
            ErrorCategory::BadRank,
            format!(
                "{op}: input must have rank >= {} (batch + {m} spatial dims for block_shape {}), got rank {} ({ty})",
                m + 1,
                list(block_shape),
                ty.rank()
            ),
        );
    }
    check_pair_shape(op, kind, pairs, m)?;
    if let Some((i, &b)) = block_shape.iter().enumerate().find(|(_, &b)| b < 1) {
        return fail(
            ErrorCategory::BlockSizeTooSmall,
            format!(
                "{op}: block_shape[{i}] must be at least 1, got {b} (block_shape {})",
                list(block_shape)
            ),
        );
    }
    let (begin, end) = check_pair_values(op, kind, pairs)?;
    check_tensor(op, "input", ty)?;
    let block = block_shape.iter().map(|&b| nonneg(b)).collect();
    Ok(Common { block, begin, end })
}

fn output_type(
    op: &str,
    ty: &TensorType,
    batch: u64,
    spatial: &[u64],
) -> Result<TensorType, OpError> {
    let mut shape = vec![batch];
    shape.extend_from_slice(spatial);
    shape.extend_from_slice(&ty.shape[spatial.len() + 1..]);
    let out = TensorType::new(ty.dtype, shape);
    check_tensor(op, "output", &out)?;
    Ok(out)
}

/// Validates SpaceToBatchND (or, with `op = "SpaceToBatch"`, the v1 op after its own checks).
pub(crate) fn plan_space_to_batch_nd(
    op: &str,
    block_shape: &[i64],
    paddings: &[Vec<i64>],
    ty: &TensorType,
) -> Result<BatchPlan, OpError> {
    let Common { block, begin, end } =
        check_common(op, block_shape, Pairs::Paddings, paddings, ty)?;
    let m = block.len();
    let spatial = ty.shape[1..=m].to_vec();
    let mut out_spatial = Vec::with_capacity(m);
    for i in 0..m {
        let what = format!("padded spatial dim {i}");
        let padded = add(op, add(op, spatial[i], begin[i], &what)?, end[i], &what)?;
        if padded % block[i] != 0 {
            return fail(
                ErrorCategory::NotDivisible,
                format!(
                    "{op}: padded size of spatial dim {i} (input dim {}) = {} + {} + {} = {padded} \
                     is not divisible by block_shape[{i}] = {}",
                    i + 1,
                    begin[i],
                    spatial[i],
                    end[i],
                    block[i]
                ),
            );
        }
        out_spatial.push(padded / block[i]);
    }
    let batch = ty.shape[0];
    let out_batch = mul(
        op,
        batch,
        product(op, &block, "prod(block_shape)")?,
        "output batch",
    )?;
    let output_type = output_type(op, ty, out_batch, &out_spatial)?;
    Ok(BatchPlan {
        batch,
        spatial,
        block,
        begin,
        end,
        output_type,
    })
}

/// Validates BatchToSpaceND (or, with `op = "BatchToSpace"`, the v1 op after its own checks).
pub(crate) fn plan_batch_to_space_nd(
    op: &str,
    block_shape: &[i64],
    crops: &[Vec<i64>],
    ty: &TensorType,
) -> Result<BatchPlan, OpError> {
    let Common { block, begin, end } = check_common(op, block_shape, Pairs::Crops, crops, ty)?;
    let m = block.len();
    let batch = ty.shape[0];
    let blocks = product(op, &block, "prod(block_shape)")?;
    if batch % blocks != 0 {
        return fail(
            ErrorCategory::NotDivisible,
            format!(
                "{op}: input batch {batch} (dim 0) is not divisible by prod(block_shape) = {blocks} \
                 (block_shape {})",
                list(&block)
            ),
        );
    }
    let spatial = ty.shape[1..=m].to_vec();
    let mut out_spatial = Vec::with_capacity(m);
    for i in 0..m {
        let full = mul(op, spatial[i], block[i], "uncropped spatial size")?;
        // An overflowing sum is larger than any representable size, so it is too large too.
        let cropped = begin[i].checked_add(end[i]).filter(|&c| c <= full);
        let Some(cropped) = cropped else {
            return fail(
                ErrorCategory::CropsTooLarge,
                format!(
                    "{op}: crops[{i}] = [{}, {}] removes more than the {full} elements of spatial \
                     dim {i} (input dim {} of size {} times block_shape[{i}] = {})",
                    begin[i],
                    end[i],
                    i + 1,
                    spatial[i],
                    block[i]
                ),
            );
        };
        out_spatial.push(full - cropped);
    }
    let output_type = output_type(op, ty, batch / blocks, &out_spatial)?;
    Ok(BatchPlan {
        batch,
        spatial,
        block,
        begin,
        end,
        output_type,
    })
}

/// The v1 checks before the ND rules: rank 4, two pairs, block size >= 2.
fn check_v1(
    op: &str,
    block_size: i64,
    kind: Pairs,
    pairs: &[Vec<i64>],
    ty: &TensorType,
) -> Result<Vec<i64>, OpError> {
    check_rank(op, "NHWC", ty, 4)?;
    check_pair_shape(op, kind, pairs, 2)?;
    if block_size < 2 {
        return fail(
            ErrorCategory::BlockSizeTooSmall,
            format!("{op}: block_size must be at least 2, got {block_size}"),
        );
    }
    Ok(vec![block_size, block_size])
}

pub(crate) fn plan_space_to_batch(
    block_size: i64,
    paddings: &[Vec<i64>],
    ty: &TensorType,
) -> Result<BatchPlan, OpError> {
    let op = "SpaceToBatch";
    let block_shape = check_v1(op, block_size, Pairs::Paddings, paddings, ty)?;
    plan_space_to_batch_nd(op, &block_shape, paddings, ty)
}

pub(crate) fn plan_batch_to_space(
    block_size: i64,
    crops: &[Vec<i64>],
    ty: &TensorType,
) -> Result<BatchPlan, OpError> {
    let op = "BatchToSpace";
    let block_shape = check_v1(op, block_size, Pairs::Crops, crops, ty)?;
    plan_batch_to_space_nd(op, &block_shape, crops, ty)
}

/// The dims after the spatial ones map to themselves.
fn remaining_dims(plan: &BatchPlan, ty: &TensorType) -> impl Iterator<Item = AffineExpr> {
    (plan.spatial.len() + 1..ty.rank()).map(d)
}

/// Gather form. Output `(ob, y_0.., r..)` with `b = ob mod batch` and block offsets
/// `o = unravel(ob floordiv batch, block_shape)` reads input
/// `(b, y_i * block_i + o_i - pad_begin_i, r..)`, which lies in the padding when outside
/// `[0, size_i)`. So: zero-fill everything, then copy where every padded dim's source index
/// is inside the input; the guard and the source map share those very expressions, which is
/// what lets the verifier prove the reads in bounds. Without any padding, there is nothing to
/// fill and nothing to guard.
pub(crate) fn lower_space_to_batch(
    name: &str,
    plan: &BatchPlan,
    ty: &TensorType,
) -> Result<Kernel, OpError> {
    let op = name;
    let batch = konst(op, plan.batch)?;
    let block = konsts(op, &plan.block)?;
    let offsets = unravel(op, &d(0).floor_div(batch), &block)?;
    let mut src = vec![d(0).modulo(batch)];
    let mut guard = Vec::new();
    for (i, offset) in offsets.into_iter().enumerate() {
        let e = minus(d(i + 1) * block[i] + offset, konst(op, plan.begin[i])?);
        if plan.begin[i] != 0 || plan.end[i] != 0 {
            guard.push(within(e.clone(), 0, konst(op, plan.spatial[i])?));
        }
        src.push(e);
    }
    src.extend(remaining_dims(plan, ty));
    let out = &plan.output_type.shape;
    let stmts = if guard.is_empty() {
        vec![gather(out, src, guard)]
    } else {
        vec![fill_all(out), gather(out, src, guard)]
    };
    Ok(Kernel {
        name: name.into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts,
    })
}

/// Gather form. Output `(b, y_0.., r..)` reads input
/// `(linear(o) * out_batch + b, (y_i + crop_begin_i) floordiv block_i, r..)` with block offsets
/// `o_i = (y_i + crop_begin_i) mod block_i`. Crops only shift the index, so no guard.
pub(crate) fn lower_batch_to_space(
    name: &str,
    plan: &BatchPlan,
    ty: &TensorType,
) -> Result<Kernel, OpError> {
    let op = name;
    let block = konsts(op, &plan.block)?;
    let out_batch = plan.output_type.shape[0];
    let mut offsets = Vec::with_capacity(block.len() + 1);
    let mut spatial = Vec::with_capacity(block.len());
    for (i, &b) in block.iter().enumerate() {
        let c = konst(op, plan.begin[i])?;
        let full = if c == 0 { d(i + 1) } else { d(i + 1) + c };
        offsets.push(full.clone().modulo(b));
        spatial.push(full.floor_div(b));
    }
    // The input batch index is the linear index of (o_0, .., o_{M-1}, b) with the offsets major.
    offsets.push(d(0));
    let mut extents = block;
    extents.push(konst(op, out_batch)?);
    let mut src = vec![linearize(op, offsets, &extents)?];
    src.extend(spatial);
    src.extend(remaining_dims(plan, ty));
    Ok(Kernel {
        name: name.into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![gather(&plan.output_type.shape, src, Vec::new())],
    })
}
