//! Im2Col, the inverse layout of Col2Im (`torch.nn.functional.unfold` generalised to N-D and
//! asymmetric pads): input `[N, C, *S]`, output `[N, C * K, L]` with
//! `out[n, c * K + q, l] = x[n, c, l_i * stride_i - pad_begin_i + q_i * dilation_i ...]`, zero
//! where that position is in the padding. `K = prod(block_shape)`, `L` the number of block
//! positions; `q` and `l` are row-major multi-indices.

use crate::lowering::{d, domain, fill_all, konst, konsts, linearize, minus, within};
use crate::validate::{add, check_tensor, fail, list, mul, nonneg, product};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Action, Kernel, Stmt, TensorType};

const OP: &str = "Im2Col";

/// A validated Im2Col.
#[derive(Clone, Debug)]
pub(crate) struct Im2ColPlan {
    pub n: u64,
    pub channels: u64,
    pub image: Vec<u64>,
    pub block: Vec<u64>,
    pub dilations: Vec<u64>,
    pub strides: Vec<u64>,
    pub pad_begin: Vec<u64>,
    pub pad_end: Vec<u64>,
    /// Number of block positions along each spatial dim.
    pub blocks: Vec<u64>,
    pub output_type: TensorType,
}

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
    let mut blocks = Vec::with_capacity(m);
    for i in 0..m {
        let what = format!("padded image dim {i}");
        let padded = add(
            OP,
            add(OP, image[i], pad_begin[i], &what)?,
            pad_end[i],
            &what,
        )?;
        let kernel = dilations[i]
            .checked_mul(block[i] - 1)
            .and_then(|v| v.checked_add(1));
        let Some(kernel) = kernel.filter(|&k| k <= padded) else {
            let size = kernel.map_or("more than 2^64".to_string(), |k| k.to_string());
            return bad(format!(
                "dilated kernel dilations[{i}] * (block_shape[{i}] - 1) + 1 = {} * ({} - 1) + 1 \
                 = {size} is larger than the padded image dim {i} = {} + {} + {} = {padded}",
                dilations[i], block[i], pad_begin[i], image[i], pad_end[i]
            ));
        };
        blocks.push((padded - kernel) / strides[i] + 1);
    }
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

/// A zero fill when there is padding, then one scatter copy over (n, c, q_1..q_m, l_1..l_m):
/// Col2Im's statement with source and destination swapped, guarded on the padded dims.
pub(crate) fn lower_im2col(plan: &Im2ColPlan, ty: &TensorType) -> Result<Kernel, OpError> {
    let m = plan.image.len();
    let block = konsts(OP, &plan.block)?;
    let blocks = konsts(OP, &plan.blocks)?;
    let (qdim, ldim) = (|i: usize| 2 + i, |i: usize| 2 + m + i);

    let mut row_extents = vec![konst(OP, plan.channels)?];
    row_extents.extend_from_slice(&block);
    let dst = vec![
        d(0),
        linearize(OP, (0..=m).map(|i| d(1 + i)).collect(), &row_extents)?,
        linearize(OP, (0..m).map(|i| d(ldim(i))).collect(), &blocks)?,
    ];
    let mut src = vec![d(0), d(1)];
    let mut guard = Vec::new();
    for i in 0..m {
        let e = minus(
            d(ldim(i)) * konst(OP, plan.strides[i])?,
            konst(OP, plan.pad_begin[i])?,
        ) + d(qdim(i)) * konst(OP, plan.dilations[i])?;
        if plan.pad_begin[i] != 0 || plan.pad_end[i] != 0 {
            guard.push(within(e.clone(), 0, konst(OP, plan.image[i])?));
        }
        src.push(e);
    }
    let mut space = vec![plan.n, plan.channels];
    space.extend_from_slice(&plan.block);
    space.extend_from_slice(&plan.blocks);
    let mut stmts = Vec::new();
    if !guard.is_empty() {
        stmts.push(fill_all(&plan.output_type.shape));
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
