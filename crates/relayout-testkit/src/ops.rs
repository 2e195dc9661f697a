//! Small valid ops of every kind, valid by construction, and ops valid for a given tensor.

use crate::Input;
use relayout_ir::{DType, TensorType};
use relayout_ops::{DataFormat, DepthToSpaceMode, Op, PadMode, PadValue};

fn data_format(inp: &mut Input) -> DataFormat {
    inp.pick(&[DataFormat::Nhwc, DataFormat::Nchw, DataFormat::NchwVectC])
}

/// The input shape of a SpaceToDepth/DepthToSpace from (batch, height, width, channels) in the
/// op's data format; `c` must be a multiple of 4 for NCHW_VECT_C.
pub fn image_shape(format: DataFormat, n: u64, h: u64, w: u64, c: u64) -> Vec<u64> {
    match format {
        DataFormat::Nhwc => vec![n, h, w, c],
        DataFormat::Nchw => vec![n, c, h, w],
        DataFormat::NchwVectC => vec![n, c / 4, h, w, 4],
    }
}

/// Element types whose Col2Im sums are exact in any order (integers wrap, bool is `or`), so
/// that the JIT, the interpreter and the reference may add in different orders.
const EXACT_SUM_DTYPES: [DType; 7] = [
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::Bool,
];

/// A small valid op of any of the thirteen kinds, valid by construction. Its tensors have at
/// most a few hundred elements; a batch of 0 now and then gives an empty tensor.
pub fn small_valid_op(inp: &mut Input) -> (Op, TensorType) {
    let dtype = inp.pick(&DType::ALL);
    // Mostly 1 or 2, sometimes an empty batch.
    let batch = |inp: &mut Input| if inp.one_in(16) { 0 } else { inp.urange(1, 2) };
    match inp.below(13) {
        7 => {
            let shape = small_shape(inp, 1, 5, 3);
            (
                small_transpose(inp, shape.len()),
                TensorType::new(dtype, shape),
            )
        }
        8 => {
            let input = TensorType::new(dtype, small_shape(inp, 1, 3, 4));
            (small_pad(inp, &input), input)
        }
        9 => {
            let mut shape = small_shape(inp, 1, 3, 5);
            // Slices of empty dims clamp to empty windows.
            if inp.one_in(8) {
                let at = inp.below(shape.len() as u64) as usize;
                shape[at] = 0;
            }
            (small_slice(inp, shape.len()), TensorType::new(dtype, shape))
        }
        10 => {
            let shape = small_shape(inp, 1, 3, 3);
            let repeats = (0..shape.len()).map(|_| inp.range(0, 3)).collect();
            (Op::Tile { repeats }, TensorType::new(dtype, shape))
        }
        11 => {
            let shape = small_shape(inp, 1, 4, 3);
            (small_reshape(inp, &shape), TensorType::new(dtype, shape))
        }
        12 => {
            let n = batch(inp);
            small_im2col(inp, dtype, n)
        }
        0 => {
            let b = inp.range(2, 4);
            let format = data_format(inp);
            let (n, oh, ow) = (batch(inp), inp.urange(1, 3), inp.urange(1, 3));
            let c = match format {
                DataFormat::NchwVectC => 4 * inp.urange(1, 2),
                _ => inp.urange(1, 5),
            };
            let bu = b as u64;
            (
                Op::SpaceToDepth {
                    block_size: b,
                    data_format: format,
                },
                TensorType::new(dtype, image_shape(format, n, oh * bu, ow * bu, c)),
            )
        }
        1 => {
            let b = inp.range(2, 3);
            let format = data_format(inp);
            let mode = if format == DataFormat::Nchw && inp.flag() {
                DepthToSpaceMode::Crd
            } else {
                DepthToSpaceMode::Dcr
            };
            let (n, h, w, k) = (
                batch(inp),
                inp.urange(1, 3),
                inp.urange(1, 3),
                inp.urange(1, 2),
            );
            let bb = (b * b) as u64;
            // NCHW_VECT_C needs C / 4 divisible by b * b.
            let c = match format {
                DataFormat::NchwVectC => 4 * bb * k,
                _ => bb * k,
            };
            (
                Op::DepthToSpace {
                    block_size: b,
                    data_format: format,
                    mode,
                },
                TensorType::new(dtype, image_shape(format, n, h, w, c)),
            )
        }
        k @ (2 | 4) => {
            // SpaceToBatchND, or TF v1's SpaceToBatch (4-D, one block size >= 2 for both dims).
            let v1 = k == 4;
            let m = if v1 { 2 } else { inp.urange(1, 3) as usize };
            let v1_block = inp.range(2, 3);
            let mut shape = vec![batch(inp)];
            let (mut block_shape, mut paddings) = (Vec::new(), Vec::new());
            for _ in 0..m {
                let block = if v1 { v1_block } else { inp.range(1, 3) };
                let size = inp.range(0, 4);
                let begin = inp.range(0, 3);
                // The smallest end padding that makes the padded size divisible, plus maybe a
                // whole block more.
                let end = (block - (size + begin) % block) % block + block * inp.range(0, 1);
                shape.push(size as u64);
                block_shape.push(block);
                paddings.push(vec![begin, end]);
            }
            let rest = if v1 { 1 } else { inp.below(3) };
            for _ in 0..rest {
                shape.push(inp.urange(1, 3));
            }
            let op = if v1 {
                Op::SpaceToBatch {
                    block_size: v1_block,
                    paddings,
                }
            } else {
                Op::SpaceToBatchNd {
                    block_shape,
                    paddings,
                }
            };
            (op, TensorType::new(dtype, shape))
        }
        k @ (3 | 5) => {
            let v1 = k == 5;
            let m = if v1 { 2 } else { inp.urange(1, 3) as usize };
            let v1_block = inp.range(2, 3);
            let n = batch(inp);
            let (mut spatial, mut block_shape, mut crops) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..m {
                let block = if v1 { v1_block } else { inp.range(1, 3) };
                let size = inp.range(1, 3);
                let span = block * size;
                let begin = inp.range(0, span.min(2));
                let end = inp.range(0, (span - begin).min(2));
                spatial.push(size as u64);
                block_shape.push(block);
                crops.push(vec![begin, end]);
            }
            let blocks: i64 = block_shape.iter().product();
            let mut shape = vec![n * blocks as u64];
            shape.extend(spatial);
            let rest = if v1 { 1 } else { inp.below(3) };
            for _ in 0..rest {
                shape.push(inp.urange(1, 3));
            }
            let op = if v1 {
                Op::BatchToSpace {
                    block_size: v1_block,
                    crops,
                }
            } else {
                Op::BatchToSpaceNd { block_shape, crops }
            };
            (op, TensorType::new(dtype, shape))
        }
        _ => {
            let dtype = inp.pick(&EXACT_SUM_DTYPES);
            let m = inp.urange(2, 3) as usize;
            let (n, c) = (batch(inp), inp.urange(1, 2));
            let (mut image, mut block, mut dil, mut begins, mut ends, mut strides) =
                (vec![], vec![], vec![], vec![], vec![], vec![]);
            let mut blocks = 1i64;
            for _ in 0..m {
                let (k, s, d) = (inp.range(1, 3), inp.range(1, 2), inp.range(1, 2));
                let (pb, pe) = (inp.range(0, 1), inp.range(0, 1));
                let span = d * (k - 1) + 1;
                // An image too small for the dilated block is grown until the block fits once.
                let img = inp.range(1, 5).max(span - pb - pe).max(1);
                blocks *= (img + pb + pe - span) / s + 1;
                image.push(img);
                block.push(k);
                dil.push(d);
                begins.push(pb);
                ends.push(pe);
                strides.push(s);
            }
            let k: i64 = block.iter().product();
            begins.extend(ends);
            (
                Op::Col2Im {
                    image_shape: image,
                    block_shape: block,
                    dilations: dil,
                    pads: begins,
                    strides,
                },
                TensorType::new(dtype, [n, c * k as u64, blocks as u64]),
            )
        }
    }
}

/// A shape of `min_rank..=max_rank` dims of `1..=max_dim` each.
fn small_shape(inp: &mut Input, min_rank: u64, max_rank: u64, max_dim: u64) -> Vec<u64> {
    let rank = inp.urange(min_rank, max_rank);
    (0..rank).map(|_| inp.urange(1, max_dim)).collect()
}

/// A permutation of `0..rank` (a shuffle), or now and then `None`, ONNX's reversal.
fn small_transpose(inp: &mut Input, rank: usize) -> Op {
    if inp.one_in(5) {
        return Op::Transpose { perm: None };
    }
    let mut perm: Vec<i64> = (0..rank as i64).collect();
    inp.shuffle(&mut perm);
    Op::Transpose { perm: Some(perm) }
}

/// A Pad of any mode, with crops (negative pads), `axes` (negative ones too) and a constant of
/// the dtype; where the draw is not valid for the mode (reflect needs pads below the dim, a
/// crop must leave a dim of at least 0), a zero Pad of the same axes with small pads.
fn small_pad(inp: &mut Input, input: &TensorType) -> Op {
    let rank = input.shape.len();
    let mode = inp.pick(&[
        PadMode::Constant,
        PadMode::Reflect,
        PadMode::Edge,
        PadMode::Wrap,
    ]);
    let axes: Option<Vec<i64>> = if inp.flag() {
        None
    } else {
        let mut axes: Vec<i64> = (0..rank as i64).collect();
        inp.shuffle(&mut axes);
        axes.truncate(inp.urange(1, rank as u64) as usize);
        Some(some_from_end(inp, axes, rank))
    };
    let n = axes.as_ref().map_or(rank, Vec::len);
    let pads: Vec<i64> = (0..2 * n).map(|_| inp.range(-2, 3)).collect();
    let constant_value = inp.pick(&[
        PadValue::ZERO,
        PadValue::Int(1),
        PadValue::Int(-3),
        PadValue::Int(7),
        PadValue::float(-0.0),
        PadValue::float(0.5),
        PadValue::Bool(true),
    ]);
    // A constant the dtype does not have (-3 unsigned, 0.5 in an integer) is zero instead.
    for constant_value in [constant_value, PadValue::ZERO] {
        let op = Op::Pad {
            pads: pads.clone(),
            mode,
            constant_value,
            axes: axes.clone(),
        };
        if op.output_type(input).is_ok() {
            return op;
        }
    }
    Op::Pad {
        pads: pads.iter().map(|&p| p.clamp(0, 2)).collect(),
        mode: PadMode::Constant,
        constant_value: PadValue::ZERO,
        axes,
    }
}

/// A Slice of some axes (in any order, some counted from the end), with bounds that need
/// ONNX's clamping (beyond the dim, negative, `i64::MIN` and `i64::MAX`) and steps of either
/// sign; `axes` and `steps` are sometimes left to their defaults.
fn small_slice(inp: &mut Input, rank: usize) -> Op {
    let mut axes: Vec<i64> = (0..rank as i64).collect();
    let default_axes = inp.one_in(4);
    if !default_axes {
        inp.shuffle(&mut axes);
    }
    axes.truncate(inp.urange(1, rank as u64) as usize);
    let bound = |inp: &mut Input| match inp.below(8) {
        0 => i64::MIN,
        1 => i64::MAX,
        _ => inp.range(-7, 7),
    };
    let starts = axes.iter().map(|_| bound(inp)).collect();
    let ends = axes.iter().map(|_| bound(inp)).collect();
    let steps: Option<Vec<i64>> = if inp.one_in(4) {
        None
    } else {
        Some(
            axes.iter()
                .map(|_| inp.pick(&[-3, -2, -1, 1, 2, 3]))
                .collect(),
        )
    };
    let axes = (!default_axes).then(|| some_from_end(inp, axes, rank));
    Op::Slice {
        starts,
        ends,
        axes,
        steps,
    }
}

/// `axes` with about a third of them counted from the end (`a - rank`), which names the same
/// dim.
fn some_from_end(inp: &mut Input, axes: Vec<i64>, rank: usize) -> Vec<i64> {
    axes.into_iter()
        .map(|a| if inp.one_in(3) { a - rank as i64 } else { a })
        .collect()
}

/// A Reshape that regroups `shape`'s dims (products of neighbours, or a dim split off as 1s),
/// with one size sometimes left to -1 and, without `allowzero`, sizes equal to the input dim
/// at their index sometimes written as 0 (copy that dim).
fn small_reshape(inp: &mut Input, shape: &[u64]) -> Op {
    let mut target: Vec<i64> = Vec::new();
    let mut group = 1u64;
    for (i, &d) in shape.iter().enumerate() {
        group *= d;
        if i + 1 == shape.len() || inp.flag() {
            target.push(group as i64);
            group = 1;
            if inp.one_in(6) {
                target.push(1);
            }
        }
    }
    // Without `allowzero`, a 0 would copy the input dim at its index, and a -1 cannot be
    // inferred from zero elements: an empty input is reshaped with real zeros.
    let empty = shape.contains(&0);
    let allowzero = empty || inp.one_in(4);
    if !allowzero {
        for (i, t) in target.iter_mut().enumerate() {
            if shape.get(i) == Some(&(*t as u64)) && inp.one_in(3) {
                *t = 0;
            }
        }
    }
    if !empty && inp.flag() {
        let at = inp.below(target.len() as u64) as usize;
        if target[at] != 0 {
            target[at] = -1;
        }
    }
    Op::Reshape {
        shape: target,
        allowzero,
    }
}

/// An Im2Col of 1 to 3 spatial dims, with strides, dilations and pads; an image too small for
/// its dilated block is grown until the block fits once. Strides, dilations and pads are now
/// and then left to their defaults (then all 1, 1 and 0).
fn small_im2col(inp: &mut Input, dtype: DType, n: u64) -> (Op, TensorType) {
    let m = inp.urange(1, 3) as usize;
    let c = inp.urange(1, 2);
    let (defaults_s, defaults_d, defaults_p) = (inp.one_in(4), inp.one_in(4), inp.one_in(4));
    let mut shape = vec![n, c];
    let (mut block, mut dil, mut begins, mut ends, mut strides) =
        (vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..m {
        let k = inp.range(1, 3);
        let s = if defaults_s { 1 } else { inp.range(1, 3) };
        let d = if defaults_d { 1 } else { inp.range(1, 2) };
        let (pb, pe) = if defaults_p {
            (0, 0)
        } else {
            (inp.range(0, 2), inp.range(0, 1))
        };
        let span = d * (k - 1) + 1;
        shape.push(inp.range(1, 5).max(span - pb - pe).max(1) as u64);
        block.push(k);
        dil.push(d);
        begins.push(pb);
        ends.push(pe);
        strides.push(s);
    }
    begins.extend(ends);
    let op = Op::Im2Col {
        block_shape: block,
        dilations: (!defaults_d).then_some(dil),
        pads: (!defaults_p).then_some(begins),
        strides: (!defaults_s).then_some(strides),
    };
    (op, TensorType::new(dtype, shape))
}

/// An op valid for `input`, of the kinds that take any shape (Transpose, Pad, Slice, Tile,
/// Reshape), or a SpaceToDepth or DepthToSpace where the shape is an image that fits one.
pub fn op_for(inp: &mut Input, input: &TensorType) -> Op {
    let rank = input.shape.len();
    if rank == 0 {
        return Op::Reshape {
            shape: vec![1],
            allowzero: false,
        };
    }
    match inp.below(6) {
        0 => small_transpose(inp, rank),
        1 => small_pad(inp, input),
        2 => small_slice(inp, rank),
        // At most twice along each dim, so that chains stay small.
        3 => Op::Tile {
            repeats: (0..rank).map(|_| inp.range(0, 2)).collect(),
        },
        4 => small_reshape(inp, &input.shape),
        _ => {
            let block = inp.range(2, 3);
            let op = match inp.below(4) {
                0 => Op::SpaceToDepth {
                    block_size: block,
                    data_format: DataFormat::Nhwc,
                },
                1 => Op::SpaceToDepth {
                    block_size: block,
                    data_format: DataFormat::Nchw,
                },
                k => Op::DepthToSpace {
                    block_size: block,
                    data_format: if k == 2 {
                        DataFormat::Nhwc
                    } else {
                        DataFormat::Nchw
                    },
                    mode: if inp.flag() {
                        DepthToSpaceMode::Crd
                    } else {
                        DepthToSpaceMode::Dcr
                    },
                },
            };
            if op.output_type(input).is_ok() {
                op
            } else {
                small_transpose(inp, rank)
            }
        }
    }
}
