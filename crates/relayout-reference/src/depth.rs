//! SpaceToDepth and DepthToSpace, as the TensorFlow documentation describes them: on NHWC,
//! each block of `b x b` pixels becomes `b * b * C` channels with the block's (Y, X) as the
//! high-order part of the channel. NCHW is the same op on a transposed tensor, and NCHW_VECT_C
//! unpacks `[N, C/4, H, W, 4]` to NHWC, applies the op and packs again, which is literally what
//! this file does. CRD mode (ONNX, PyTorch pixel_shuffle) orders the input channel as
//! `c * b * b + by * b + bx` instead of `(by * b + bx) * C + c`.

use crate::tensor::{for_each_index, zeros, Dense};
use relayout_ops::{DataFormat, DepthToSpaceMode, OpError};

/// Storage in `format` to logical NHWC.
fn to_nhwc(format: DataFormat, t: &Dense) -> Result<Dense, OpError> {
    let s = &t.shape;
    let shape = match format {
        DataFormat::Nhwc => return Ok(t.clone()),
        DataFormat::Nchw => vec![s[0], s[2], s[3], s[1]],
        DataFormat::NchwVectC => vec![s[0], s[2], s[3], s[1] * 4],
    };
    let mut out = zeros(shape, t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let logical = match format {
            // Storage (n, c, y, x) holds logical (n, y, x, c).
            DataFormat::Nchw => [i[0], i[2], i[3], i[1]],
            // Storage (n, outer, y, x, inner) holds logical (n, y, x, outer * 4 + inner).
            _ => [i[0], i[2], i[3], i[1] * 4 + i[4]],
        };
        let to = out.offset(&logical);
        out.set_from(to, t, at);
    });
    Ok(out)
}

/// Logical NHWC to storage in `format`.
fn from_nhwc(format: DataFormat, t: &Dense) -> Result<Dense, OpError> {
    let s = &t.shape;
    let shape = match format {
        DataFormat::Nhwc => return Ok(t.clone()),
        DataFormat::Nchw => vec![s[0], s[3], s[1], s[2]],
        DataFormat::NchwVectC => vec![s[0], s[3] / 4, s[1], s[2], 4],
    };
    let mut out = zeros(shape, t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let (n, y, x, c) = (i[0], i[1], i[2], i[3]);
        let to = match format {
            DataFormat::Nchw => out.offset(&[n, c, y, x]),
            _ => out.offset(&[n, c / 4, y, x, c % 4]),
        };
        out.set_from(to, t, at);
    });
    Ok(out)
}

/// NHWC SpaceToDepth: input `(n, y, x, c)` goes to output
/// `(n, y / b, x / b, ((y % b) * b + x % b) * C + c)`.
fn space_to_depth_nhwc(t: &Dense, b: usize) -> Result<Dense, OpError> {
    let [n, h, w, c] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
    let mut out = zeros(vec![n, h / b, w / b, c * b * b], t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let (y, x) = (i[1], i[2]);
        let to = out.offset(&[i[0], y / b, x / b, ((y % b) * b + x % b) * c + i[3]]);
        out.set_from(to, t, at);
    });
    Ok(out)
}

/// NHWC DepthToSpace: input `(n, y, x, ic)` goes to output `(n, y * b + by, x * b + bx, c)`
/// where `ic` splits into `(by, bx, c)` (DCR) or `(c, by, bx)` (CRD).
fn depth_to_space_nhwc(t: &Dense, b: usize, mode: DepthToSpaceMode) -> Result<Dense, OpError> {
    let [n, h, w, ic] = [t.shape[0], t.shape[1], t.shape[2], t.shape[3]];
    let c = ic / (b * b);
    let mut out = zeros(vec![n, h * b, w * b, c], t.esize)?;
    for_each_index(&t.shape, |i, at| {
        let k = i[3];
        let (by, bx, ch) = match mode {
            DepthToSpaceMode::Dcr => (k / (b * c), (k / c) % b, k % c),
            DepthToSpaceMode::Crd => ((k / b) % b, k % b, k / (b * b)),
        };
        let to = out.offset(&[i[0], i[1] * b + by, i[2] * b + bx, ch]);
        out.set_from(to, t, at);
    });
    Ok(out)
}

pub(crate) fn space_to_depth(t: &Dense, b: usize, format: DataFormat) -> Result<Dense, OpError> {
    from_nhwc(format, &space_to_depth_nhwc(&to_nhwc(format, t)?, b)?)
}

pub(crate) fn depth_to_space(
    t: &Dense,
    b: usize,
    format: DataFormat,
    mode: DepthToSpaceMode,
) -> Result<Dense, OpError> {
    from_nhwc(format, &depth_to_space_nhwc(&to_nhwc(format, t)?, b, mode)?)
}
