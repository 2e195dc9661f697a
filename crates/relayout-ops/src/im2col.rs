//! Im2Col, the inverse layout of Col2Im (`torch.nn.functional.unfold` generalised to N-D and
//! asymmetric pads): input `[N, C, *S]`, output `[N, C * K, L]` with
//! `out[n, c * K + q, l] = x[n, c, l_i * stride_i - pad_begin_i + q_i * dilation_i ...]`, zero
//! where that position is in the padding. `K = prod(block_shape)`, `L` the number of block
//! positions; `q` and `l` are row-major multi-indices.

use crate::blocks::{BlockGeometry, BlockMaps, BlockPlan};
use crate::lowering::{d, domain, fill_all, gather, konst, konsts, unravel, within};
use crate::validate::{check_tensor, fail, list, mul, nonneg, product};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Action, Kernel, Stmt, TensorType};

const OP: &str = "Im2Col";

/// A validated Im2Col.
pub(crate) type Im2ColPlan = BlockPlan;

/// The attributes as given (`None`: the default for the input's spatial rank).
pub(crate) struct Im2ColAttrs<'a> {
    pub block_shape: &'a [i64],
    pub dilations: Option<&'a [i64]>,
    pub pads: Option<&'a [i64]>,
    pub strides: Option<&'a [i64]>,
}

fn bad<T>(message: String) -> Result<T, OpError> {
    fail(ErrorCategory::BadIm2ColAttrs, format!("{OP}: {message}"))
}

/// Validates, in order: input rank >= 3 and one block entry per spatial dim (`bad_rank`),
/// attribute lengths and values, and the dilated kernel fitting the padded image.
pub(crate) fn plan_im2col(a: &Im2ColAttrs, ty: &TensorType) -> Result<Im2ColPlan, OpError> {
    if ty.rank() < 3 {
        return fail(
            ErrorCategory::BadRank,
            format!(
                "{OP}: input must have rank at least 3 ([N, C, spatial...]), got rank {} ({ty})",
                ty.rank()
            ),
        );
    }
    let m = ty.rank() - 2;
    if a.block_shape.len() != m {
        return fail(
            ErrorCategory::BadRank,
            format!(
                "{OP}: block_shape {} has {} entries but the input {ty} has {m} spatial dims",
                list(a.block_shape),
                a.block_shape.len()
            ),
        );
    }
    check_tensor(OP, "input", ty)?;
    let ones = vec![1i64; m];
    let zeros = vec![0i64; 2 * m];
    let dilations = a.dilations.unwrap_or(&ones);
    let strides = a.strides.unwrap_or(&ones);
    let pads = a.pads.unwrap_or(&zeros);
    for (name, values, want) in [
        ("dilations", dilations, m),
        ("strides", strides, m),
        ("pads", pads, 2 * m),
    ] {
        if values.len() != want {
            return bad(format!(
                "{name} must have {want} entries for the {m} spatial dims of the input {ty}, \
                 got {}",
                list(values)
            ));
        }
    }
    for (name, values, min) in [
        ("block_shape", a.block_shape, 1),
        ("dilations", dilations, 1),
        ("strides", strides, 1),
        ("pads", pads, 0),
    ] {
        if let Some((i, v)) = values.iter().enumerate().find(|(_, &v)| v < min) {
            return bad(format!(
                "{name}[{i}] must be at least {min}, got {v} ({name} {})",
                list(values)
            ));
        }
    }
    let u = |v: &[i64]| v.iter().map(|&x| nonneg(x)).collect::<Vec<u64>>();
    let (block, dilations, strides) = (u(a.block_shape), u(dilations), u(strides));
    let (pad_begin, pad_end) = (u(&pads[..m]), u(&pads[m..]));
    let image = ty.shape[2..].to_vec();
    let blocks = BlockGeometry {
        image: &image,
        block: &block,
        dilations: &dilations,
        strides: &strides,
        pad_begin: &pad_begin,
        pad_end: &pad_end,
    }
    .positions(OP, ErrorCategory::BadIm2ColAttrs)?;
    let k = product(OP, &block, "prod(block_shape)")?;
    let l = product(OP, &blocks, "the number of block positions")?;
    let (n, channels) = (ty.shape[0], ty.shape[1]);
    let rows = mul(OP, channels, k, "output dim 1 (C * prod(block_shape))")?;
    let output_type = TensorType::new(ty.dtype, vec![n, rows, l]);
    check_tensor(OP, "output", &output_type)?;
    Ok(Im2ColPlan {
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

/// One scatter copy over (n, c, q_1..q_m, l_1..l_m), Col2Im's statement with source and
/// destination swapped, guarded on the padded dims; before it, zero fills over the same points
/// guarded to the padding before and after the image on each padded axis, so that every
/// output element is written once (twice where two axes are in their padding) and the passes
/// can split the fills into boxes like the copy.
pub(crate) fn lower_im2col(plan: &Im2ColPlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let BlockMaps {
        space,
        columns: dst,
        image: src,
        guard,
    } = plan.maps(OP)?;
    let mut stmts = Vec::new();
    for (i, e) in src[2..].iter().enumerate() {
        let (begin, end) = (konst(OP, plan.pad_begin[i])?, konst(OP, plan.pad_end[i])?);
        let image = konst(OP, plan.image[i])?;
        if begin != 0 || end != 0 {
            // The zeros: the points whose position on this axis is in the padding before
            // or after the image (a point in the padding of two axes is zeroed twice).
            for (lo, hi) in [(-begin, 0), (image, image + end)] {
                if lo < hi {
                    stmts.push(Stmt {
                        domain: domain(&space),
                        guard: vec![within(e.clone(), lo, hi)],
                        dst: dst.clone(),
                        action: Action::ZERO_FILL,
                    });
                }
            }
        }
    }
    stmts.push(Stmt {
        domain: domain(&space),
        guard,
        dst,
        action: Action::Copy { src },
    });
    Ok(Kernel {
        name: "im2col".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts,
    })
}

/// Im2Col as a gather over the output box, in SpaceToBatchND's shape: a zero fill of the whole
/// output (when an axis is padded), then one copy that reads each output element's image
/// position, guarded to the image. The point `(n, c, k, l)` of [`lower_im2col`]'s statement
/// comes back from the output index `(n, row, col)` by unravelling `row` over `[C, *block]`
/// and `col` over the block positions. Chains need this form to read an Im2Col's output (every
/// statement writes `dst[d]` at point `d`); on its own, the scatter of [`lower_im2col`] is what
/// the passes make the better kernel from.
pub(crate) fn lower_im2col_gather(plan: &Im2ColPlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let BlockMaps { image, guard, .. } = plan.maps(OP)?;
    let m = plan.image.len();
    let mut channel_extents = vec![konst(OP, plan.channels)?];
    channel_extents.extend(konsts(OP, &plan.block)?);
    // [c, k_1..k_m], then [l_1..l_m]: the point's dims 1.. in order.
    let mut point = unravel(OP, &d(1), &channel_extents)?;
    point.extend(unravel(OP, &d(2), &konsts(OP, &plan.blocks)?)?);
    debug_assert_eq!(point.len(), 1 + 2 * m);
    let at = |i: usize| if i == 0 { d(0) } else { point[i - 1].clone() };
    let src = image.iter().map(|e| e.substitute(&at)).collect();
    let guard: Vec<_> = guard
        .into_iter()
        .map(|c| within(c.expr.substitute(&at), c.lo, c.hi))
        .collect();
    let out = &plan.output_type.shape;
    let mut stmts = Vec::new();
    // A zero fill of the whole output, not only of the padding: a chain proves that the
    // next op reads only written elements from the unguarded statements alone.
    if !guard.is_empty() {
        stmts.push(fill_all(out));
    }
    stmts.push(gather(out, src, guard));
    Ok(Kernel {
        name: "im2col".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts,
    })
}
