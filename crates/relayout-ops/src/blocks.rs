//! The sliding-block geometry that Col2Im and Im2Col share (one is the other's inverse layout):
//! on each spatial dim, blocks of `block` elements `dilation` apart, placed every `stride`
//! elements over the image padded by `pad_begin` and `pad_end`.

use crate::lowering::{d, konst, konsts, linearize, minus, within};
use crate::validate::{add, fail};
use crate::{ErrorCategory, OpError};
use relayout_ir::{AffineExpr, Constraint, TensorType};

/// A validated Col2Im or Im2Col: the image side `[n, channels, *image]`, the attributes per
/// spatial dim (non-negative; blocks, dilations and strides at least 1), the number of block
/// positions per dim, and the op's output type.
#[derive(Clone, Debug)]
pub(crate) struct BlockPlan {
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

impl BlockPlan {
    pub fn geometry(&self) -> BlockGeometry<'_> {
        BlockGeometry {
            image: &self.image,
            block: &self.block,
            dilations: &self.dilations,
            strides: &self.strides,
            pad_begin: &self.pad_begin,
            pad_end: &self.pad_end,
        }
    }

    /// The one statement both ops lower to, without its action (Col2Im accumulates the
    /// columns into the image, Im2Col copies the image into the columns); see [`BlockMaps`].
    pub fn maps(&self, op: &str) -> Result<BlockMaps, OpError> {
        let m = self.image.len();
        let block = konsts(op, &self.block)?;
        let blocks = konsts(op, &self.blocks)?;
        let (kdim, ldim) = (|i: usize| 2 + i, |i: usize| 2 + m + i);

        let mut channel_extents = vec![konst(op, self.channels)?];
        channel_extents.extend_from_slice(&block);
        let channel_terms = (0..=m).map(|i| d(1 + i)).collect();
        let columns = vec![
            d(0),
            linearize(op, channel_terms, &channel_extents)?,
            linearize(op, (0..m).map(|i| d(ldim(i))).collect(), &blocks)?,
        ];

        let mut image = vec![d(0), d(1)];
        let mut guard = Vec::new();
        for i in 0..m {
            let e = self.geometry().position(op, i, d(ldim(i)), d(kdim(i)))?;
            if self.pad_begin[i] != 0 || self.pad_end[i] != 0 {
                guard.push(within(e.clone(), 0, konst(op, self.image[i])?));
            }
            image.push(e);
        }

        let mut space = vec![self.n, self.channels];
        space.extend_from_slice(&self.block);
        space.extend_from_slice(&self.blocks);
        Ok(BlockMaps {
            space,
            columns,
            image,
            guard,
        })
    }
}

/// The statement of a Col2Im or Im2Col over the points `(n, c, k_1..k_m, l_1..l_m)`: `k` the
/// offset in the block, `l` the block's position (both row-major multi-indices).
pub(crate) struct BlockMaps {
    /// The extents of the points: `[n, channels, *block, *blocks]`.
    pub space: Vec<u64>,
    /// The index in the columns: `[n, c * prod(block) + linear(k), linear(l)]`.
    pub columns: Vec<AffineExpr>,
    /// The index in the image: `[n, c, l_i * stride_i - pad_begin_i + k_i * dilation_i ...]`
    /// (its dim `2 + i` is the position on spatial dim `i`).
    pub image: Vec<AffineExpr>,
    /// `0 <= position_i < image_i` on each padded spatial dim `i`, in order.
    pub guard: Vec<Constraint>,
}

/// The validated attributes of one op, per spatial dim (all non-negative; blocks, dilations
/// and strides at least 1).
pub(crate) struct BlockGeometry<'a> {
    pub image: &'a [u64],
    pub block: &'a [u64],
    pub dilations: &'a [u64],
    pub strides: &'a [u64],
    pub pad_begin: &'a [u64],
    pub pad_end: &'a [u64],
}

impl BlockGeometry<'_> {
    /// The number of block positions on each spatial dim, or an error in `category` (naming
    /// `op`) when the dilated kernel is larger than the padded image.
    pub fn positions(&self, op: &str, category: ErrorCategory) -> Result<Vec<u64>, OpError> {
        let mut blocks = Vec::with_capacity(self.image.len());
        for i in 0..self.image.len() {
            let what = format!("padded image dim {i}");
            let padded = add(
                op,
                add(op, self.image[i], self.pad_begin[i], &what)?,
                self.pad_end[i],
                &what,
            )?;
            // A dilated kernel too large for u64 is certainly larger than the padded image.
            let kernel = self.dilations[i]
                .checked_mul(self.block[i] - 1)
                .and_then(|v| v.checked_add(1));
            let Some(kernel) = kernel.filter(|&k| k <= padded) else {
                let size = kernel.map_or("more than 2^64".to_string(), |k| k.to_string());
                return fail(
                    category,
                    format!(
                        "{op}: dilated kernel dilations[{i}] * (block_shape[{i}] - 1) + 1 = {} * \
                         ({} - 1) + 1 = {size} is larger than the padded image dim {i} = {} + {} \
                         + {} = {padded}",
                        self.dilations[i],
                        self.block[i],
                        self.pad_begin[i],
                        self.image[i],
                        self.pad_end[i]
                    ),
                );
            };
            blocks.push((padded - kernel) / self.strides[i] + 1);
        }
        Ok(blocks)
    }

    /// The image position on spatial dim `i` of kernel offset `k` in the block at position
    /// `l`: `l * stride_i - pad_begin_i + k * dilation_i`.
    pub fn position(
        &self,
        op: &str,
        i: usize,
        l: AffineExpr,
        k: AffineExpr,
    ) -> Result<AffineExpr, OpError> {
        Ok(minus(
            l * konst(op, self.strides[i])?,
            konst(op, self.pad_begin[i])?,
        ) + k * konst(op, self.dilations[i])?)
    }
}
