//! SpaceToBatchND and BatchToSpaceND, following the steps of the TensorFlow documentation:
//! zero-pad (or crop) the M spatial dims, view each padded dim `i` as
//! `(size_i / block_i, block_i)`, and move the block offsets in front of the batch, offsets
//! major: batch index `((o_0 * block_1 + o_1) * ... ) * batch + b`. The dims after the spatial
//! ones move as one contiguous run per point.

use crate::tensor::{for_each_index, ravel, unravel, zeros, Dense};
use relayout_ops::OpError;

/// The spatial dims are `1..=m`; everything after them is one inner run of elements. A run
/// whose length overflows belongs to an empty tensor (another dim is 0), so it counts as 0.
fn split(shape: &[usize], m: usize) -> (usize, Vec<usize>, usize) {
    let inner = shape[m + 1..]
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .unwrap_or(0);
    (shape[0], shape[1..=m].to_vec(), inner)
}

/// Copies `count` elements from element offset `from` of `src` to `to` of `dst`.
fn copy_run(dst: &mut Dense, to: usize, src: &Dense, from: usize, count: usize) {
    let e = src.esize;
    dst.bytes[to * e..(to + count) * e].copy_from_slice(&src.bytes[from * e..(from + count) * e]);
}

/// Scatter: input `(b, y_0.., r..)` lands at padded position `p_i = y_i + pad_begin_i`, which
/// is block `p_i / block_i` at offset `p_i % block_i`. Everything not written stays zero.
pub(crate) fn space_to_batch(
    t: &Dense,
    block: &[usize],
    begin: &[usize],
    end: &[usize],
) -> Result<Dense, OpError> {
    let m = block.len();
    let (batch, spatial, inner) = split(&t.shape, m);
    let out_spatial: Vec<usize> = (0..m)
        .map(|i| (spatial[i] + begin[i] + end[i]) / block[i])
        .collect();
    let mut shape = vec![batch * block.iter().product::<usize>()];
    shape.extend(&out_spatial);
    shape.extend(&t.shape[m + 1..]);
    let mut out = zeros(shape, t.esize)?;
    if inner == 0 {
        return Ok(out);
    }
    let mut outer = vec![batch];
    outer.extend(&spatial);
    for_each_index(&outer, |i, at| {
        let padded: Vec<usize> = (0..m).map(|k| i[k + 1] + begin[k]).collect();
        let offsets: Vec<usize> = (0..m).map(|k| padded[k] % block[k]).collect();
        let mut index = vec![ravel(&offsets, block) * batch + i[0]];
        index.extend((0..m).map(|k| padded[k] / block[k]));
        let to = ravel(&index, &out.shape[..=m]);
        copy_run(&mut out, to * inner, t, at * inner, inner);
    });
    Ok(out)
}

/// Scatter: input `(ib, y_0.., r..)` with `ib = linear(o) * out_batch + b` is the element at
/// uncropped position `y_i * block_i + o_i`; it is kept when that lies past the start crop and
/// before the end crop.
pub(crate) fn batch_to_space(
    t: &Dense,
    block: &[usize],
    begin: &[usize],
    end: &[usize],
) -> Result<Dense, OpError> {
    let m = block.len();
    let (batch, spatial, inner) = split(&t.shape, m);
    let out_batch = batch / block.iter().product::<usize>();
    let out_spatial: Vec<usize> = (0..m)
        .map(|i| spatial[i] * block[i] - begin[i] - end[i])
        .collect();
    let mut shape = vec![out_batch];
    shape.extend(&out_spatial);
    shape.extend(&t.shape[m + 1..]);
    let mut out = zeros(shape, t.esize)?;
    if inner == 0 || out_batch == 0 {
        return Ok(out);
    }
    let mut outer = vec![batch];
    outer.extend(&spatial);
    for_each_index(&outer, |i, at| {
        let offsets = unravel(i[0] / out_batch, block);
        let mut index = vec![i[0] % out_batch];
        for k in 0..m {
            let full = i[k + 1] * block[k] + offsets[k];
            if full < begin[k] || full - begin[k] >= out_spatial[k] {
                return;
            }
            index.push(full - begin[k]);
        }
        let to = ravel(&index, &out.shape[..=m]);
        copy_run(&mut out, to * inner, t, at * inner, inner);
    });
    Ok(out)
}
