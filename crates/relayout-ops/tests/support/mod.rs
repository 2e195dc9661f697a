//! Random valid ops on small random inputs, for the property tests of this crate and of
//! relayout-reference (which includes this file). Each op family gets its geometry built
//! backwards from the output, so every generated op is valid by construction, zero-sized dims
//! included.

#![allow(dead_code)]

use proptest::prelude::*;
use relayout_ir::{DType, TensorType};
use relayout_ops::{
    AttrValue, Attrs, DataFormat, DepthToSpaceMode, Op, PadMode, PadValue, OP_NAMES,
};

pub fn dtype() -> impl Strategy<Value = DType> {
    proptest::sample::select(DType::ALL.to_vec())
}

fn format() -> impl Strategy<Value = DataFormat> {
    prop_oneof![
        Just(DataFormat::Nhwc),
        Just(DataFormat::Nchw),
        Just(DataFormat::NchwVectC)
    ]
}

/// A logical NHWC shape stored in `format` (the channel count must be a multiple of 4 for
/// NCHW_VECT_C).
fn store(format: DataFormat, n: u64, h: u64, w: u64, c: u64) -> Vec<u64> {
    match format {
        DataFormat::Nhwc => vec![n, h, w, c],
        DataFormat::Nchw => vec![n, c, h, w],
        DataFormat::NchwVectC => vec![n, c / 4, h, w, 4],
    }
}

/// Small sizes, occasionally zero (rarely, since one zero empties the whole tensor).
fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 20 => 1u64..=3]
}

pub fn space_to_depth() -> impl Strategy<Value = (Op, Vec<u64>)> {
    (format(), 2i64..=3, dim(), dim(), dim(), 1u64..=3).prop_map(|(f, b, n, oh, ow, c)| {
        let bu = b as u64;
        let c = if f == DataFormat::NchwVectC {
            4 * (c - 1)
        } else {
            c
        };
        let op = Op::SpaceToDepth {
            block_size: b,
            data_format: f,
        };
        (op, store(f, n, oh * bu, ow * bu, c))
    })
}

pub fn depth_to_space() -> impl Strategy<Value = (Op, Vec<u64>)> {
    (
        format(),
        any::<bool>(),
        2i64..=3,
        dim(),
        dim(),
        dim(),
        dim(),
    )
        .prop_map(|(f, crd, b, n, h, w, c)| {
            let bu = b as u64;
            let c = if f == DataFormat::NchwVectC { 4 * c } else { c };
            let mode = if crd && f == DataFormat::Nchw {
                DepthToSpaceMode::Crd
            } else {
                DepthToSpaceMode::Dcr
            };
            let op = Op::DepthToSpace {
                block_size: b,
                data_format: f,
                mode,
            };
            (op, store(f, n, h, w, c * bu * bu))
        })
}

/// Per spatial dim of SpaceToBatch: a block, and a padded size (a multiple of the block) split
/// into `(block, begin, size, end)`.
fn padded(block: impl Strategy<Value = u64>) -> impl Strategy<Value = (u64, u64, u64, u64)> {
    (block, dim()).prop_flat_map(|(b, out)| {
        let total = b * out;
        (Just(b), 0..=total).prop_flat_map(move |(b, begin)| {
            (0..=total - begin).prop_map(move |end| (b, begin, total - begin - end, end))
        })
    })
}

/// Per spatial dim of BatchToSpace: `(block, size, crop_begin, crop_end)` with the crops at
/// most `block * size` together. The cropped size is drawn first, so that crops which remove
/// everything stay as rare as other zero sizes.
fn uncropped(block: impl Strategy<Value = u64>) -> impl Strategy<Value = (u64, u64, u64, u64)> {
    (block, dim()).prop_flat_map(|(b, size)| {
        let full = b * size;
        let kept = if full == 0 {
            Just(0u64).boxed()
        } else {
            prop_oneof![1 => Just(0u64), 20 => 1..=full].boxed()
        };
        kept.prop_flat_map(move |kept| {
            let cut = full - kept;
            (0..=cut).prop_map(move |begin| (b, size, begin, cut - begin))
        })
    })
}

/// Spatial dims: M = 2 with one shared block size >= 2 for the v1 ops, else M in 1..=3 with
/// blocks >= 1.
fn spatial_dims<S: Strategy<Value = (u64, u64, u64, u64)> + 'static>(
    v1: bool,
    per_dim: fn(BoxedStrategy<u64>) -> S,
) -> BoxedStrategy<Vec<(u64, u64, u64, u64)>> {
    if v1 {
        (2u64..=3)
            .prop_flat_map(move |b| proptest::collection::vec(per_dim(Just(b).boxed()), 2))
            .boxed()
    } else {
        (1usize..=3)
            .prop_flat_map(move |m| proptest::collection::vec(per_dim((1u64..=3).boxed()), m))
            .boxed()
    }
}

/// The dims after the spatial ones: any number for the ND ops, exactly one (depth) for v1.
fn rest_dims(v1: bool) -> BoxedStrategy<Vec<u64>> {
    if v1 {
        proptest::collection::vec(1u64..=3, 1).boxed()
    } else {
        proptest::collection::vec(1u64..=3, 0..=2).boxed()
    }
}

/// SpaceToBatchND, or SpaceToBatch when `v1`.
pub fn space_to_batch(v1: bool) -> impl Strategy<Value = (Op, Vec<u64>)> {
    (spatial_dims(v1, padded), dim(), rest_dims(v1)).prop_map(move |(dims, batch, rest)| {
        let mut shape = vec![batch];
        shape.extend(dims.iter().map(|d| d.2));
        shape.extend(rest);
        let paddings = dims.iter().map(|d| vec![d.1 as i64, d.3 as i64]).collect();
        let op = if v1 {
            Op::SpaceToBatch {
                block_size: dims[0].0 as i64,
                paddings,
            }
        } else {
            Op::SpaceToBatchNd {
                block_shape: dims.iter().map(|d| d.0 as i64).collect(),
                paddings,
            }
        };
        (op, shape)
    })
}

/// BatchToSpaceND, or BatchToSpace when `v1`.
pub fn batch_to_space(v1: bool) -> impl Strategy<Value = (Op, Vec<u64>)> {
    (spatial_dims(v1, uncropped), dim(), rest_dims(v1)).prop_map(move |(dims, out_batch, rest)| {
        let blocks: u64 = dims.iter().map(|d| d.0).product();
        let mut shape = vec![out_batch * blocks];
        shape.extend(dims.iter().map(|d| d.1));
        shape.extend(rest);
        let crops = dims.iter().map(|d| vec![d.2 as i64, d.3 as i64]).collect();
        let op = if v1 {
            Op::BatchToSpace {
                block_size: dims[0].0 as i64,
                crops,
            }
        } else {
            Op::BatchToSpaceNd {
                block_shape: dims.iter().map(|d| d.0 as i64).collect(),
                crops,
            }
        };
        (op, shape)
    })
}

pub fn col2im() -> impl Strategy<Value = (Op, Vec<u64>)> {
    let dims = (2usize..=3).prop_flat_map(|m| {
        proptest::collection::vec((dim(), 1u64..=3, 1u64..=2, 1u64..=3, 0u64..=2, 0u64..=2), m)
    });
    (dims, 1u64..=2, 1u64..=2).prop_map(|(dims, n, c)| {
        let mut image = Vec::new();
        let mut blocks = 1u64;
        for &(img, k, dil, s, pb, pe) in &dims {
            let kernel = dil * (k - 1) + 1;
            // Grow the image until the dilated kernel fits the padded image.
            let img = img.max(kernel.saturating_sub(pb + pe));
            blocks *= (img + pb + pe - kernel) / s + 1;
            image.push(img as i64);
        }
        let kernel: u64 = dims.iter().map(|d| d.1).product();
        let op = Op::Col2Im {
            image_shape: image,
            block_shape: dims.iter().map(|d| d.1 as i64).collect(),
            dilations: dims.iter().map(|d| d.2 as i64).collect(),
            strides: dims.iter().map(|d| d.3 as i64).collect(),
            pads: dims
                .iter()
                .map(|d| d.4 as i64)
                .chain(dims.iter().map(|d| d.5 as i64))
                .collect(),
        };
        (op, vec![n, c * kernel, blocks])
    })
}

/// Any valid op of any family, with its input type.
pub fn valid_op() -> impl Strategy<Value = (Op, TensorType)> {
    let op = prop_oneof![
        space_to_depth(),
        depth_to_space(),
        space_to_batch(false),
        space_to_batch(true),
        batch_to_space(false),
        batch_to_space(true),
        col2im(),
    ];
    (op, dtype()).prop_map(|((op, shape), dt)| (op, TensorType::new(dt, shape)))
}

// ---- Arbitrary (mostly invalid) ops, attributes and shapes, for the no-panic tests. ----

pub fn extreme_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -2i64..=8,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(1i64 << 32),
        1 => Just((1i64 << 62) + 1),
        1 => any::<i64>(),
    ]
}

pub fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..=8,
        1 => Just(12u64),
        1 => Just(u64::MAX),
        1 => Just(i64::MAX as u64),
        1 => Just(1u64 << 32),
        1 => Just(1u64 << 62),
        1 => any::<u64>(),
    ]
}

pub fn attr_value() -> impl Strategy<Value = AttrValue> {
    let leaf = prop_oneof![
        4 => extreme_i64().prop_map(AttrValue::Int),
        1 => proptest::sample::select(vec!["NHWC", "NCHW", "NCHW_VECT_C", "DCR", "CRD", "nhwc", ""])
            .prop_map(|s| AttrValue::Str(s.into())),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        proptest::collection::vec(inner, 0..4).prop_map(AttrValue::List)
    })
}

pub fn attrs() -> impl Strategy<Value = Attrs> {
    let names = vec![
        "block_size",
        "data_format",
        "mode",
        "block_shape",
        "paddings",
        "crops",
        "image_shape",
        "dilations",
        "pads",
        "strides",
        "bogus",
    ];
    proptest::collection::btree_map(
        proptest::sample::select(names).prop_map(String::from),
        attr_value(),
        0..6,
    )
}

pub fn op_name() -> impl Strategy<Value = String> {
    let mut names: Vec<&str> = OP_NAMES.to_vec();
    names.push("Transpose");
    proptest::sample::select(names).prop_map(String::from)
}

pub fn input() -> impl Strategy<Value = TensorType> {
    (dtype(), proptest::collection::vec(extreme_u64(), 0..7))
        .prop_map(|(d, s)| TensorType::new(d, s))
}

fn ints(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(extreme_i64(), len)
}

fn pairs() -> impl Strategy<Value = Vec<Vec<i64>>> {
    proptest::collection::vec(ints(1..4), 0..4)
}

/// Ops built directly, with arbitrary numbers everywhere.
pub fn any_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (extreme_i64(), format()).prop_map(|(block_size, data_format)| Op::SpaceToDepth {
            block_size,
            data_format
        }),
        (extreme_i64(), format(), any::<bool>()).prop_map(|(block_size, data_format, crd)| {
            Op::DepthToSpace {
                block_size,
                data_format,
                mode: if crd {
                    DepthToSpaceMode::Crd
                } else {
                    DepthToSpaceMode::Dcr
                },
            }
        }),
        (ints(0..4), pairs()).prop_map(|(block_shape, paddings)| Op::SpaceToBatchNd {
            block_shape,
            paddings
        }),
        (ints(0..4), pairs())
            .prop_map(|(block_shape, crops)| Op::BatchToSpaceNd { block_shape, crops }),
        (extreme_i64(), pairs()).prop_map(|(block_size, paddings)| Op::SpaceToBatch {
            block_size,
            paddings
        }),
        (extreme_i64(), pairs())
            .prop_map(|(block_size, crops)| Op::BatchToSpace { block_size, crops }),
        (ints(1..5), ints(1..5), ints(1..5), ints(1..9), ints(1..5)).prop_map(
            |(image_shape, block_shape, dilations, pads, strides)| Op::Col2Im {
                image_shape,
                block_shape,
                dilations,
                pads,
                strides
            }
        ),
        proptest::option::of(ints(0..7)).prop_map(|perm| Op::Transpose { perm }),
        (
            ints(0..9),
            0usize..4,
            extreme_i64(),
            proptest::option::of(ints(0..5))
        )
            .prop_map(|(pads, mode, value, axes)| Op::Pad {
                pads,
                mode: [
                    PadMode::Constant,
                    PadMode::Reflect,
                    PadMode::Edge,
                    PadMode::Wrap
                ][mode],
                constant_value: PadValue::Int(i128::from(value)),
                axes,
            }),
        (
            ints(0..5),
            ints(0..5),
            proptest::option::of(ints(0..5)),
            proptest::option::of(ints(0..5))
        )
            .prop_map(|(starts, ends, axes, steps)| Op::Slice {
                starts,
                ends,
                axes,
                steps
            }),
        ints(0..5).prop_map(|repeats| Op::Tile { repeats }),
        (ints(0..5), any::<bool>()).prop_map(|(shape, allowzero)| Op::Reshape { shape, allowzero }),
        (
            ints(0..4),
            proptest::option::of(ints(0..4)),
            proptest::option::of(ints(0..8)),
            proptest::option::of(ints(0..4))
        )
            .prop_map(|(block_shape, dilations, pads, strides)| Op::Im2Col {
                block_shape,
                dilations,
                pads,
                strides
            }),
    ]
}
