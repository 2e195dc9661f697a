//! Col2Im (ONNX opset 18), as the ONNX reference evaluator computes it: walk the columns
//! `[N, C * prod(block_shape), L]` in order, and add each value into the image at
//! `l_i * stride_i - pad_begin_i + k_i * dilation_i`, where `k` is the kernel position (minor
//! part of dim 1) and `l` the block position (dim 2, blocks in row-major order); positions in
//! the padding are dropped.

use crate::tensor::{for_each_index, unravel, zeros, Dense};
use relayout_ir::DType;
use relayout_ops::OpError;

/// The attributes, validated and converted to sizes.
pub(crate) struct Col2Im {
    pub image: Vec<usize>,
    pub block: Vec<usize>,
    pub dilations: Vec<usize>,
    pub strides: Vec<usize>,
    pub pad_begin: Vec<usize>,
    pub pad_end: Vec<usize>,
}

pub(crate) fn col2im(t: &Dense, dtype: DType, a: &Col2Im) -> Result<Dense, OpError> {
    let m = a.image.len();
    let kernel: usize = a.block.iter().product();
    let blocks: Vec<usize> = (0..m)
        .map(|i| {
            let padded = a.image[i] + a.pad_begin[i] + a.pad_end[i];
            let dilated = a.dilations[i] * (a.block[i] - 1) + 1;
            (padded - dilated) / a.strides[i] + 1
        })
        .collect();
    let channels = t.shape[1] / kernel;
    let mut shape = vec![t.shape[0], channels];
    shape.extend(&a.image);
    let mut out = zeros(shape, t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let (n, col, l) = (i[0], i[1], i[2]);
        let k = unravel(col % kernel, &a.block);
        let l = unravel(l, &blocks);
        let mut index = vec![n, col / kernel];
        for d in 0..m {
            // Signed, because the padding at the start puts positions below 0.
            let pos =
                (l[d] * a.strides[d] + k[d] * a.dilations[d]) as i128 - a.pad_begin[d] as i128;
            if pos < 0 || pos >= a.image[d] as i128 {
                return;
            }
            index.push(pos as usize);
        }
        let to = out.offset(&index);
        dtype.add_assign(out.get_mut(to), t.get(at));
    });
    Ok(out)
}
