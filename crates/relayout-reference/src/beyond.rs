//! The ops around the seeds, as FORMAT.md and the ONNX documentation state them, element by
//! element: Transpose, Pad, Slice, Tile, Reshape and Im2Col. The output shape is the validated
//! one (validation is shared); every index is computed here from the op's own definition.

use crate::tensor::{for_each_index, ravel, size, unravel, zeros, Dense};
use relayout_ir::DType;
use relayout_ops::{ErrorCategory, OpError, PadMode, PadValue};

/// `out[i_0, ..] = x[i_perm^-1 ...]`: input index `i` lands at `(i[perm[0]], i[perm[1]], ..)`.
pub(crate) fn transpose(t: &Dense, perm: Option<&[i64]>) -> Result<Dense, OpError> {
    let rank = t.shape.len();
    let perm: Vec<usize> = match perm {
        Some(p) => p.iter().map(|&v| v as usize).collect(),
        None => (0..rank).rev().collect(),
    };
    let shape: Vec<usize> = perm.iter().map(|&p| t.shape[p]).collect();
    let mut out = zeros(shape, t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let o: Vec<usize> = perm.iter().map(|&p| i[p]).collect();
        let to = out.offset(&o);
        out.set_from(to, t, at);
    });
    Ok(out)
}

/// `out[i] = x[i mod d]` on every dim.
pub(crate) fn tile(t: &Dense, shape: Vec<usize>) -> Result<Dense, OpError> {
    let mut out = zeros(shape.clone(), t.esize)?;
    for_each_index(&shape, |o, at| {
        let i: Vec<usize> = o.iter().zip(&t.shape).map(|(&o, &d)| o % d).collect();
        let from = t.offset(&i);
        out.set_from(at, t, from);
    });
    Ok(out)
}

/// The same bytes under another shape.
pub(crate) fn reshape(t: &Dense, shape: Vec<usize>) -> Dense {
    Dense {
        shape,
        esize: t.esize,
        bytes: t.bytes.clone(),
    }
}

/// The positions one sliced axis takes, by the clamping rules of the ONNX text.
fn slice_positions(dim: usize, start: i64, end: i64, step: i64) -> Vec<usize> {
    let d = dim as i128;
    let norm = |v: i64| {
        let v = v as i128;
        if v < 0 {
            v + d
        } else {
            v
        }
    };
    let (mut s, mut e) = (norm(start), norm(end));
    let step = step as i128;
    if step > 0 {
        s = s.max(0).min(d);
        e = e.max(0).min(d);
    } else {
        s = s.max(0).min(d - 1);
        e = e.max(-1).min(d - 1);
    }
    let mut out = Vec::new();
    let mut p = s;
    while dim > 0 && ((step > 0 && p < e) || (step < 0 && p > e)) {
        out.push(p as usize);
        p += step;
    }
    out
}

/// Slice: per axis, the positions taken; the output is their product.
pub(crate) fn slice(
    t: &Dense,
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
    empty_out_shape: Vec<usize>,
) -> Result<Dense, OpError> {
    let rank = t.shape.len();
    if t.shape.contains(&0) {
        // Nothing to take, and the other dims may be far too large to list positions for:
        // the (validated) output shape is all there is.
        return zeros(empty_out_shape, t.esize);
    }
    let mut taken: Vec<Vec<usize>> = t.shape.iter().map(|&d| (0..d).collect()).collect();
    for k in 0..starts.len() {
        let axis = axes.map_or(k as i64, |a| a[k]);
        let axis = if axis < 0 { axis + rank as i64 } else { axis } as usize;
        let step = steps.map_or(1, |s| s[k]);
        taken[axis] = slice_positions(t.shape[axis], starts[k], ends[k], step);
    }
    let shape: Vec<usize> = taken.iter().map(Vec::len).collect();
    let mut out = zeros(shape.clone(), t.esize)?;
    for_each_index(&shape, |o, at| {
        let i: Vec<usize> = o.iter().zip(&taken).map(|(&o, p)| p[o]).collect();
        let from = t.offset(&i);
        out.set_from(at, t, from);
    });
    Ok(out)
}

/// Pad: per dim, begin and end pads (0 for dims not in `axes`).
pub(crate) fn pad(
    t: &Dense,
    dtype: DType,
    pads: &[i64],
    mode: PadMode,
    value: PadValue,
    axes: Option<&[i64]>,
) -> Result<Dense, OpError> {
    let rank = t.shape.len();
    let mut begin = vec![0i64; rank];
    let mut end = vec![0i64; rank];
    let all: Vec<i64> = (0..rank as i64).collect();
    let axes = axes.unwrap_or(&all);
    for (k, &a) in axes.iter().enumerate() {
        let a = if a < 0 { a + rank as i64 } else { a } as usize;
        begin[a] = pads[k];
        end[a] = pads[axes.len() + k];
    }
    let shape: Vec<usize> = (0..rank)
        .map(|a| size((t.shape[a] as i64 + begin[a] + end[a]) as u64))
        .collect::<Result<_, _>>()?;
    let mut out = zeros(shape.clone(), t.esize)?;
    if mode == PadMode::Constant {
        let bytes = value
            .to_scalar(dtype)
            .ok_or_else(|| OpError::new(ErrorCategory::BadAttribute, "constant_value"))?
            .to_le_bytes(dtype);
        for chunk in out.bytes.chunks_mut(t.esize) {
            chunk.copy_from_slice(&bytes);
        }
        // Scatter the input: element i goes to i + begin where that is inside the output.
        for_each_index(&t.shape, |i, at| {
            let o: Option<Vec<usize>> = (0..rank)
                .map(|a| {
                    let p = i[a] as i64 + begin[a];
                    (p >= 0 && (p as usize) < shape[a]).then_some(p as usize)
                })
                .collect();
            if let Some(o) = o {
                let to = out.offset(&o);
                out.set_from(to, t, at);
            }
        });
        return Ok(out);
    }
    // Crops first: axis a keeps x[cut_lo .. d - cut_hi], then p_b / p_e are added.
    for_each_index(&shape, |o, at| {
        let i: Vec<usize> = (0..rank)
            .map(|a| {
                let cut_lo = (-begin[a]).max(0);
                let kept = t.shape[a] as i64 - cut_lo - (-end[a]).max(0);
                let j = o[a] as i64 - begin[a].max(0);
                let j = match mode {
                    PadMode::Edge => j.clamp(0, kept - 1),
                    PadMode::Reflect if j < 0 => -j,
                    PadMode::Reflect if j > kept - 1 => 2 * (kept - 1) - j,
                    PadMode::Wrap => j.rem_euclid(kept),
                    _ => j,
                };
                (cut_lo + j) as usize
            })
            .collect();
        let from = t.offset(&i);
        out.set_from(at, t, from);
    });
    Ok(out)
}

/// Im2Col's attributes, validated and as sizes.
pub(crate) struct Im2Col {
    pub block: Vec<usize>,
    pub dilations: Vec<usize>,
    pub strides: Vec<usize>,
    pub pad_begin: Vec<usize>,
    pub pad_end: Vec<usize>,
}

/// `out[n, c * K + q, l] = x[n, c, l_i * stride_i - pad_begin_i + q_i * dil_i]`, zero in the
/// padding.
pub(crate) fn im2col(t: &Dense, a: &Im2Col) -> Result<Dense, OpError> {
    let m = t.shape.len() - 2;
    let image = &t.shape[2..];
    let blocks: Vec<usize> = (0..m)
        .map(|i| {
            let padded = image[i] + a.pad_begin[i] + a.pad_end[i];
            (padded - (a.dilations[i] * (a.block[i] - 1) + 1)) / a.strides[i] + 1
        })
        .collect();
    let k: usize = a.block.iter().product();
    let l: usize = blocks.iter().product();
    let shape = vec![t.shape[0], t.shape[1] * k, l];
    let mut out = zeros(shape.clone(), t.esize)?;
    for_each_index(&shape, |o, at| {
        let (n, row, col) = (o[0], o[1], o[2]);
        let q = unravel(row % k, &a.block);
        let pos = unravel(col, &blocks);
        let mut index = vec![n, row / k];
        for i in 0..m {
            let p =
                (pos[i] * a.strides[i] + q[i] * a.dilations[i]) as i128 - a.pad_begin[i] as i128;
            if p < 0 || p >= image[i] as i128 {
                return; // padding: stays zero
            }
            index.push(p as usize);
        }
        let from = ravel(&index, &t.shape);
        out.set_from(at, t, from);
    });
    Ok(out)
}
