//! Col2Im (ONNX opset 18): the input `[N, C * prod(block_shape), L]` holds, for every channel
//! `c`, kernel position `k` and sliding block `l`, the value at image position
//! `l_i * stride_i - pad_begin_i + k_i * dilation_i`; Col2Im sums every such value into an
//! image `[N, C, *image_shape]`, dropping those that land in the padding. Channels are major
//! and kernel positions minor in dim 1; blocks are enumerated in row-major order in dim 2.

use crate::blocks::{BlockGeometry, BlockMaps, BlockPlan};
use crate::lowering::{domain, fill_all};
use crate::validate::{check_tensor, fail, list, nonneg, product};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Action, Kernel, Stmt, TensorType};

/// A validated Col2Im, with every attribute at its spatial rank and non-negative.
pub(crate) type Col2ImPlan = BlockPlan;

/// The attributes as given to the op.
pub(crate) struct Col2ImAttrs<'a> {
    pub image_shape: &'a [i64],
    pub block_shape: &'a [i64],
    pub dilations: &'a [i64],
    pub pads: &'a [i64],
    pub strides: &'a [i64],
}

const OP: &str = "Col2Im";

fn bad_attrs<T>(message: String) -> Result<T, OpError> {
    fail(ErrorCategory::BadCol2ImAttrs, format!("{OP}: {message}"))
}

/// Attribute lengths: at least 2 spatial dims, one entry per dim, two pads per dim.
fn check_lengths(a: &Col2ImAttrs) -> Result<usize, OpError> {
    let m = a.image_shape.len();
    if m < 2 {
        return bad_attrs(format!(
            "image_shape must have at least 2 entries, got {}",
            list(a.image_shape)
        ));
    }
    for (name, values, want) in [
        ("block_shape", a.block_shape, m),
        ("dilations", a.dilations, m),
        ("strides", a.strides, m),
        ("pads", a.pads, 2 * m),
    ] {
        if values.len() != want {
            return bad_attrs(format!(
                "{name} must have {want} entries for the {m} spatial dims of image_shape {}, got {}",
                list(a.image_shape),
                list(values)
            ));
        }
    }
    Ok(m)
}

/// Attribute values: image dims and pads >= 0, block dims, strides and dilations >= 1.
fn check_values(a: &Col2ImAttrs) -> Result<(), OpError> {
    for (name, values, min) in [
        ("image_shape", a.image_shape, 0),
        ("block_shape", a.block_shape, 1),
        ("dilations", a.dilations, 1),
        ("strides", a.strides, 1),
        ("pads", a.pads, 0),
    ] {
        if let Some((i, v)) = values.iter().enumerate().find(|(_, &v)| v < min) {
            return bad_attrs(format!(
                "{name}[{i}] must be at least {min}, got {v} ({name} {})",
                list(values)
            ));
        }
    }
    Ok(())
}

fn to_u64(values: &[i64]) -> Vec<u64> {
    values.iter().map(|&v| nonneg(v)).collect()
}

/// Validates, in order: input rank 3, attribute lengths, attribute values, the dilated kernel
/// fitting the padded image, dim 1 divisible by `prod(block_shape)`, and `L` equal to the
/// number of sliding blocks.
pub(crate) fn plan_col2im(a: &Col2ImAttrs, ty: &TensorType) -> Result<Col2ImPlan, OpError> {
    if ty.rank() != 3 {
        return fail(
            ErrorCategory::BadRank,
            format!(
                "{OP}: input must have rank 3 ([N, C * prod(block_shape), L]), got rank {} ({ty})",
                ty.rank()
            ),
        );
    }
    let m = check_lengths(a)?;
    check_values(a)?;
    check_tensor(OP, "input", ty)?;
    let image = to_u64(a.image_shape);
    let block = to_u64(a.block_shape);
    let dilations = to_u64(a.dilations);
    let strides = to_u64(a.strides);
    let pad_begin = to_u64(&a.pads[..m]);
    let pad_end = to_u64(&a.pads[m..]);
    let blocks = BlockGeometry {
        image: &image,
        block: &block,
        dilations: &dilations,
        strides: &strides,
        pad_begin: &pad_begin,
        pad_end: &pad_end,
    }
    .positions(OP, ErrorCategory::BadCol2ImAttrs)?;
    let [n, cols, l] = [ty.shape[0], ty.shape[1], ty.shape[2]];
    let kernel_size = product(OP, &block, "prod(block_shape)")?;
    if cols % kernel_size != 0 {
        return fail(
            ErrorCategory::NotDivisible,
            format!(
                "{OP}: input dim 1 = {cols} is not divisible by prod(block_shape) = {kernel_size} \
                 (block_shape {})",
                list(&block)
            ),
        );
    }
    // A block count too large for u64 cannot equal the representable `L`.
    let expected = blocks.iter().try_fold(1u64, |acc, &b| acc.checked_mul(b));
    if expected != Some(l) {
        let count = expected.map_or("more than 2^64".to_string(), |e| e.to_string());
        return fail(
            ErrorCategory::BadCol2ImL,
            format!(
                "{OP}: input dim 2 (L) = {l} differs from the number of sliding blocks {} = {count} \
                 (image_shape {}, block_shape {}, dilations {}, pads {}, strides {})",
                blocks
                    .iter()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(" * "),
                list(a.image_shape),
                list(a.block_shape),
                list(a.dilations),
                list(a.pads),
                list(a.strides)
            ),
        );
    }
    let channels = cols / kernel_size;
    let mut shape = vec![n, channels];
    shape.extend_from_slice(&image);
    let output_type = TensorType::new(ty.dtype, shape);
    // Every index the kernel computes stays within [-pad_begin, image + pad_end], which the
    // checks above keep below 2^63, and its linearisations are bounded by dims 1 and 2.
    check_tensor(OP, "output", &output_type)?;
    Ok(Col2ImPlan {
        n,
        channels,
        image,
        block,
        dilations,
        strides,
        pad_begin,
        pad_end,
        blocks,
        output_type,
    })
}

/// Zero-fill the image, then one scatter-add over (n, c, k_1..k_m, l_1..l_m): the direct form
/// of the definition, with no `floordiv` or `mod`. The source is
/// `[n, c * prod(k) + linear(k), linear(l)]`, the destination
/// `[n, c, l_i * stride_i - pad_begin_i + k_i * dilation_i ...]`, and each padded dim is
/// guarded by `0 <= <that same expression> < image_i` so the verifier can match the two.
pub(crate) fn lower_col2im(plan: &Col2ImPlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let BlockMaps {
        space,
        columns: src,
        image: dst,
        guard,
    } = plan.maps(OP)?;
    let out = &plan.output_type.shape;
    Ok(Kernel {
        name: "col2im".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts: vec![
            fill_all(out),
            Stmt {
                domain: domain(&space),
                guard,
                dst,
                action: Action::Accumulate { src },
            },
        ],
    })
}
