//! The bodies of relayout's fuzz targets, shared by `fuzz/` (cargo-fuzz, libFuzzer) and by
//! `tests/fuzz_bodies.rs` (proptest, a few thousand cases inside `cargo test`), as regalloc2
//! runs its fuzz bodies as short tests. Each body takes input that a fuzzer can produce, and
//! panics exactly when it has found a bug: a panic inside relayout, a wrong result, a value that
//! does not round-trip, or (with the guarded buffers) an access outside a kernel's buffers.
//!
//! Most bodies have two entry points: a structured one (`parse_ir(&str)`, `op_validation(name,
//! attrs, input)`, `differential(op, input, seed)`) that proptest strategies can call directly,
//! and a `*_bytes(&[u8])` one that decodes raw fuzzer bytes with [`Input`] first. [`Input`] is a
//! small stand-in for `arbitrary::Unstructured`, so that `cargo test` needs no extra
//! dependency; like it, it reads zeros once the bytes run out, so every byte string decodes.
//!
//! The decoders lean towards the values that break size arithmetic (0, 1, `i64::MIN`,
//! `i64::MAX`, `u64::MAX`, powers of two near the overflow points), because uniformly random
//! 64-bit values almost never land on them.

#![allow(dead_code)] // Each includer uses a different part of this file.

#[path = "guarded.rs"]
pub mod guarded;
#[path = "movement.rs"]
pub mod movement;

use guarded::{Guard, GuardedBuf};
use relayout::ir::{
    interpret, interpret_loops, parse_any, verify_kernel, verify_loop_kernel, Action, AnyKernel,
    DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType,
};
use relayout::{
    compile, compile_chain, AttrValue, Attrs, ChainError, DataFormat, DepthToSpaceMode, Op,
    PadMode, PadValue,
};

// =============================================================================================
// Decoding fuzzer bytes

/// Reads values from fuzzer bytes, front to back; zeros once they run out.
pub struct Input<'a> {
    data: &'a [u8],
}

/// Attribute values that sit on the edges of 32- and 64-bit arithmetic.
pub const EDGE_I64: [i64; 22] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    4,
    8,
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    1 << 31,
    1 << 32,
    (1 << 32) + 1,
    1 << 53,
    1 << 62,
    -(1 << 62),
    3_037_000_500, // just above sqrt(i64::MAX): its square overflows
];

/// Shape dims on the edges of the size arithmetic.
pub const EDGE_U64: [u64; 16] = [
    0,
    1,
    2,
    3,
    4,
    8,
    1 << 31,
    1 << 32,
    1 << 62,
    i64::MAX as u64,
    i64::MAX as u64 + 1,
    u64::MAX,
    u64::MAX - 1,
    u32::MAX as u64,
    3_037_000_500,
    (1 << 61) + 1,
];

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        for b in &mut bytes {
            *b = self.byte();
        }
        u64::from_le_bytes(bytes)
    }

    /// A value in `0..n` (0 when `n` is 0 or 1). One byte is read for small `n`, so that short
    /// inputs still reach every choice.
    pub fn below(&mut self, n: u64) -> u64 {
        match n {
            0 | 1 => 0,
            2..=256 => u64::from(self.byte()) % n,
            _ => self.u64() % n,
        }
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        debug_assert!(lo <= hi);
        lo + self.below(hi.abs_diff(lo) + 1) as i64
    }

    /// A value in `lo..=hi`.
    pub fn urange(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }

    pub fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// True with probability about `1 / n`.
    pub fn one_in(&mut self, n: u8) -> bool {
        self.byte() % n == 0
    }

    /// Any `i64`, mostly small or on an edge.
    pub fn wild_i64(&mut self) -> i64 {
        match self.byte() % 4 {
            0 => self.pick(&EDGE_I64),
            1 => self.range(-8, 16),
            2 => self.u64() as i64,
            _ => self.range(0, 6),
        }
    }

    /// Any `u64` dim, mostly small or on an edge.
    pub fn wild_dim(&mut self) -> u64 {
        match self.byte() % 4 {
            0 => self.pick(&EDGE_U64),
            1 => self.u64(),
            _ => self.urange(0, 8),
        }
    }

    /// A short string: mostly a name the ops know, sometimes arbitrary characters.
    pub fn string(&mut self) -> String {
        const KNOWN: [&str; 9] = [
            "NHWC",
            "NCHW",
            "NCHW_VECT_C",
            "DCR",
            "CRD",
            "",
            "nhwc",
            "NCHW_VECT_C\0",
            "ÑHWC",
        ];
        if self.byte() % 4 != 0 {
            return self.pick(&KNOWN).to_string();
        }
        let len = self.below(12) as usize;
        (0..len)
            .map(|_| char::from_u32(u32::from(self.byte()) * 7 + 1).unwrap_or('?'))
            .collect()
    }
}

// =============================================================================================
// Ops: names, attributes, and a generator of small valid ops

/// The op names of the conformance format.
pub use relayout::OP_NAMES;

/// Every attribute name of any op, plus one that no op has.
pub const ATTR_NAMES: [&str; 11] = [
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

/// The data formats and modes, and names that look like them.
pub const FORMATS: [&str; 5] = ["NHWC", "NCHW", "NCHW_VECT_C", "NWHC", "nchw"];
pub const MODES: [&str; 4] = ["DCR", "CRD", "RCD", ""];

fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

fn ints(values: &[i64]) -> AttrValue {
    AttrValue::List(values.iter().map(|&v| int(v)).collect())
}

fn pairs(values: &[Vec<i64>]) -> AttrValue {
    AttrValue::List(values.iter().map(|p| ints(p)).collect())
}

/// The name and attributes that [`Op::from_attrs`] turns back into `op`.
pub fn op_to_attrs(op: &Op) -> (&'static str, Attrs) {
    let mut a = Attrs::new();
    let mut put = |k: &str, v: AttrValue| {
        a.insert(k.to_string(), v);
    };
    match op {
        Op::SpaceToDepth {
            block_size,
            data_format,
        } => {
            put("block_size", int(*block_size));
            put("data_format", AttrValue::Str(data_format.name().into()));
        }
        Op::DepthToSpace {
            block_size,
            data_format,
            mode,
        } => {
            put("block_size", int(*block_size));
            put("data_format", AttrValue::Str(data_format.name().into()));
            put("mode", AttrValue::Str(mode.name().into()));
        }
        Op::SpaceToBatchNd {
            block_shape,
            paddings,
        } => {
            put("block_shape", ints(block_shape));
            put("paddings", pairs(paddings));
        }
        Op::BatchToSpaceNd { block_shape, crops } => {
            put("block_shape", ints(block_shape));
            put("crops", pairs(crops));
        }
        Op::SpaceToBatch {
            block_size,
            paddings,
        } => {
            put("block_size", int(*block_size));
            put("paddings", pairs(paddings));
        }
        Op::BatchToSpace { block_size, crops } => {
            put("block_size", int(*block_size));
            put("crops", pairs(crops));
        }
        Op::Col2Im {
            image_shape,
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            put("image_shape", ints(image_shape));
            put("block_shape", ints(block_shape));
            put("dilations", ints(dilations));
            put("pads", ints(pads));
            put("strides", ints(strides));
        }
        Op::Transpose { perm } => {
            if let Some(p) = perm {
                put("perm", ints(p));
            }
        }
        Op::Pad {
            pads,
            mode,
            constant_value,
            axes,
        } => {
            put("pads", ints(pads));
            put("mode", AttrValue::Str(mode.name().into()));
            put(
                "constant_value",
                match *constant_value {
                    PadValue::Int(v) => match i64::try_from(v) {
                        Ok(i) => AttrValue::Int(i),
                        Err(_) => AttrValue::UInt(v as u64),
                    },
                    PadValue::Float(bits) => AttrValue::Float(f64::from_bits(bits)),
                    PadValue::Bool(b) => AttrValue::Bool(b),
                    PadValue::Complex(re, im) => AttrValue::List(vec![
                        AttrValue::Float(f64::from_bits(re)),
                        AttrValue::Float(f64::from_bits(im)),
                    ]),
                },
            );
            if let Some(a) = axes {
                put("axes", ints(a));
            }
        }
        Op::Slice {
            starts,
            ends,
            axes,
            steps,
        } => {
            put("starts", ints(starts));
            put("ends", ints(ends));
            if let Some(a) = axes {
                put("axes", ints(a));
            }
            if let Some(s) = steps {
                put("steps", ints(s));
            }
        }
        Op::Tile { repeats } => put("repeats", ints(repeats)),
        Op::Reshape { shape, allowzero } => {
            put("shape", ints(shape));
            put("allowzero", int(i64::from(*allowzero)));
        }
        Op::Im2Col {
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            put("block_shape", ints(block_shape));
            for (name, v) in [
                ("dilations", dilations),
                ("pads", pads),
                ("strides", strides),
            ] {
                if let Some(v) = v {
                    put(name, ints(v));
                }
            }
        }
    }
    (op.name(), a)
}

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
    for i in (1..rank).rev() {
        perm.swap(i, inp.below(i as u64 + 1) as usize);
    }
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
        for i in (1..rank).rev() {
            axes.swap(i, inp.below(i as u64 + 1) as usize);
        }
        axes.truncate(inp.urange(1, rank as u64) as usize);
        // An axis counted from the end names the same dim.
        Some(
            axes.into_iter()
                .map(|a| if inp.one_in(3) { a - rank as i64 } else { a })
                .collect(),
        )
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
        for i in (1..rank).rev() {
            axes.swap(i, inp.below(i as u64 + 1) as usize);
        }
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
    let axes = (!default_axes).then(|| {
        axes.into_iter()
            .map(|a| if inp.one_in(3) { a - rank as i64 } else { a })
            .collect()
    });
    Op::Slice {
        starts,
        ends,
        axes,
        steps,
    }
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

/// Deterministic bytes from a seed (splitmix64): every byte pattern, NaNs and `-0.0` included.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// The byte size of a type known to be valid, as `usize`.
pub fn byte_len(ty: &TensorType) -> usize {
    usize::try_from(ty.size_bytes().expect("a validated type has a size")).expect("fits")
}

// =============================================================================================
// Body 1: the IR parser

fn print_any(k: &AnyKernel) -> String {
    match k {
        AnyKernel::Index(k) => k.to_string(),
        AnyKernel::Loops(k) => k.to_string(),
    }
}

/// Any text: parsing never panics, errors point inside the text, a kernel that parses prints
/// to text that parses back to the same kernel, and a kernel that also verifies goes through
/// the default pipeline (as `relayout opt` runs it) and the JIT with the interpreter's result.
pub fn parse_ir(text: &str) {
    parse_ir_checked(text, Refusal::Allowed);
}

/// Whether the default pipeline may refuse a kernel that verifies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Arbitrary IR: a pass may give up on what it cannot handle (never with IR that fails
    /// verification).
    Allowed,
    /// IR that a valid op lowered to: the pipeline compiles it, so it must compile it again.
    Forbidden,
}

fn parse_ir_checked(text: &str, refusal: Refusal) {
    match parse_any(text) {
        Err(e) => {
            // Positions are 1-based and inside the text (or just after its last line).
            let lines = text.split('\n').count();
            assert!(
                e.line >= 1 && e.col >= 1 && e.line <= lines,
                "parse error at {}:{} outside the {lines}-line text: {e}",
                e.line,
                e.col
            );
            let _ = e.render(text);
        }
        Ok(kernel) => {
            let printed = print_any(&kernel);
            let again = parse_any(&printed).unwrap_or_else(|e| {
                panic!("a parsed kernel prints to text that does not parse: {e}\n{printed}")
            });
            assert_eq!(
                again, kernel,
                "print then parse changed the kernel:\n{printed}"
            );
            check_parsed_kernel(&kernel, refusal);
        }
    }
    // `relayout opt` on the same text must answer with a result or an error message.
    let _ = relayout::opt(text, None, false);
}

/// Work limits for running an arbitrary parsed kernel: interpreting is one step per point.
const MAX_POINTS: u64 = 1 << 16;
const MAX_BYTES: u64 = 1 << 20;

fn small_types(src: &TensorType, dst: &TensorType) -> bool {
    [src, dst]
        .iter()
        .all(|t| t.size_bytes().is_ok_and(|n| n <= MAX_BYTES))
}

/// Whether the result of a kernel may depend on the order of additions (float accumulate), so
/// that two correct implementations can differ in the last bits.
fn order_sensitive(dtype: DType, accumulates: bool) -> bool {
    accumulates && (dtype.is_float() || dtype.is_complex())
}

/// A parsed kernel that verifies: the default pipeline preserves its meaning, and its machine
/// code (run in guarded buffers) does what the interpreter does.
fn check_parsed_kernel(kernel: &AnyKernel, refusal: Refusal) {
    match kernel {
        AnyKernel::Index(k) => {
            if let Err(e) = verify_kernel(k) {
                assert!(
                    refusal == Refusal::Allowed,
                    "IR lowered from a valid op fails verification: {e}\n{k}"
                );
                return;
            }
            if !small_types(&k.src, &k.dst) {
                return;
            }
            let points: u64 = k
                .stmts
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(s.domain_size()));
            if points > MAX_POINTS {
                return;
            }
            let src = random_bytes(byte_len(&k.src), 1);
            let mut want = random_bytes(byte_len(&k.dst), 2);
            interpret(k, &src, &mut want)
                .unwrap_or_else(|e| panic!("the interpreter refused a verified kernel: {e}\n{k}"));
            let loops = match relayout_passes::lower_to_loops(k) {
                Ok(loops) => loops,
                Err(e) => {
                    let message = e.to_string();
                    // A pass may give up on a kernel it cannot handle, but it must never
                    // produce IR that does not verify.
                    assert!(
                        !matches!(e, relayout_passes::PassError::Verification { .. }),
                        "a pass broke a verified kernel: {message}\n{k}"
                    );
                    assert!(
                        refusal == Refusal::Allowed,
                        "the pipeline refused IR that it produced for a valid op: \
                         {message}\n{k}"
                    );
                    return;
                }
            };
            let accumulates = k
                .stmts
                .iter()
                .any(|s| matches!(s.action, Action::Accumulate { .. }));
            if order_sensitive(k.dst.dtype, accumulates) {
                return;
            }
            let mut got = random_bytes(byte_len(&k.dst), 2);
            interpret_loops(&loops, &src, &mut got).expect("the pipeline's output verified");
            assert!(
                got == want,
                "the default pipeline changed the result of\n{k}\ninto\n{loops}"
            );
            check_jit(&loops, &src, random_bytes(byte_len(&k.dst), 2), &want);
        }
        AnyKernel::Loops(k) => {
            if let Err(e) = verify_loop_kernel(k) {
                assert!(
                    refusal == Refusal::Allowed,
                    "IR lowered from a valid op fails verification: {e}\n{k}"
                );
                return;
            }
            if !small_types(&k.src, &k.dst) {
                return;
            }
            let points = k
                .stmts
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(s.trip_count()));
            if points > MAX_POINTS {
                return;
            }
            let src = random_bytes(byte_len(&k.src), 1);
            let mut want = random_bytes(byte_len(&k.dst), 2);
            interpret_loops(k, &src, &mut want).unwrap_or_else(|e| {
                panic!("the interpreter refused a verified loop kernel: {e}\n{k}")
            });
            // Same kernel, same order of additions: no exception for floats here.
            check_jit(k, &src, random_bytes(byte_len(&k.dst), 2), &want);
        }
    }
}

/// Whether two results of the same kernel agree: bit for bit, except that a NaN matches any
/// NaN. A float `accumulate` of two NaNs keeps the payload of one of them, and which one is
/// the hardware's and the operand order's business, not a bug.
pub fn same_result(ty: &TensorType, want: &[u8], got: &[u8]) -> bool {
    relayout::conformance::compare(ty, want, got, None).is_ok()
}

/// The piece counts every threaded check forces: 1 is the calling thread.
pub const PIECES: [usize; 4] = [1, 2, 3, 7];

/// Asserts that a run forced into `pieces` cut every statement that can be cut into exactly
/// that many pieces (fewer only where its outer loop is shorter).
pub fn assert_split(report: &relayout::SplitReport, pieces: usize, what: &dyn std::fmt::Display) {
    report
        .check_forced(pieces)
        .unwrap_or_else(|e| panic!("{e}\n{what}"));
}

/// Compiles a verified loop kernel and runs it with both buffers against a guard page, at the
/// end and then at the start, whole and forced into 2, 3 and 7 pieces on the thread pool:
/// every run must give `want`.
pub fn check_jit(k: &LoopKernel, src: &[u8], dst_init: Vec<u8>, want: &[u8]) {
    let compiled = relayout_jit::CompiledKernel::compile(k)
        .unwrap_or_else(|e| panic!("a verified loop kernel did not compile: {e}\n{k}"));
    for guard in Guard::BOTH {
        for pieces in PIECES {
            let src = GuardedBuf::from_bytes(src, guard);
            let mut dst = GuardedBuf::from_bytes(&dst_init, guard);
            let report = compiled
                .run_split(&src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_split(&report, pieces, k);
            assert!(
                same_result(&k.dst, want, &dst),
                "JIT ({pieces} pieces, guard at {guard:?}) differs from the interpreter on\n{k}"
            );
        }
    }
}

/// Raw fuzzer bytes as text (invalid UTF-8 is replaced, as a file reader would have to).
pub fn parse_ir_bytes(data: &[u8]) {
    parse_ir(&String::from_utf8_lossy(data));
}

/// Pieces of IR syntax that mutations splice in: every keyword, punctuation, and the integer
/// literals on the edges of `u64` and `i64`.
pub const IR_WORDS: [&str; 30] = [
    "kernel",
    "loops",
    "copy",
    "fill",
    "accumulate",
    "for",
    "in",
    "to",
    "where",
    "bytes",
    "floordiv",
    "mod",
    "tensor<2x3xf32>",
    "tensor<0xcomplex<f64>>",
    "%src",
    "%dst",
    "@k",
    "d0",
    "d7",
    "i0",
    "i3",
    "-",
    " * -1",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "(((((((",
    "// comment\n",
];

/// Applies one to four edits to `text`: splice in a piece of syntax or a character, delete a
/// span, duplicate a span, or replace a number with an edge value.
pub fn mutate_text(text: &str, inp: &mut Input) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..inp.urange(1, 4) {
        let len = chars.len() as u64;
        let at = inp.below(len + 1) as usize;
        match inp.below(5) {
            0 => {
                let word: Vec<char> = inp.pick(&IR_WORDS).chars().collect();
                chars.splice(at..at, word);
            }
            1 => {
                let c = inp.pick(&[
                    '0', '1', '9', ' ', '\n', ',', '(', ')', '[', ']', '{', '}', '<', '>', '=',
                    '+', '-', '*', ':', 'x', 'd', '%', '@', '\t', 'é', '\u{0}',
                ]);
                chars.insert(at, c);
            }
            2 => {
                let end = (at + inp.below(24) as usize).min(chars.len());
                chars.drain(at..end);
            }
            3 => {
                let end = (at + inp.below(40) as usize).min(chars.len());
                let span: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, span);
            }
            _ => {
                // Replace the number that starts at or after `at` with an edge value.
                if let Some(start) = (at..chars.len()).find(|&i| chars[i].is_ascii_digit()) {
                    let end = (start..chars.len())
                        .find(|&i| !chars[i].is_ascii_digit())
                        .unwrap_or(chars.len());
                    let value = inp.pick(&EDGE_I64).to_string();
                    chars.splice(start..end, value.chars());
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// A printed stage of a small valid op, mutated: text close enough to valid IR to get past
/// the lexer and deep into the parser, the verifier and the passes.
pub fn parse_mutated_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (op, input) = small_valid_op(&mut inp);
    let stages = relayout::lower(&op, &input)
        .unwrap_or_else(|e| panic!("a valid op failed to lower: {e}\n{op:?} on {input}"));
    let text = match inp.below(3) {
        0 => stages.lowered.to_string(),
        1 => stages.optimized.to_string(),
        _ => stages.loops.to_string(),
    };
    // The unmutated text must parse back to the stage (the printer's round trip) and go
    // through the pipeline and the JIT again.
    parse_ir_checked(&text, Refusal::Forbidden);
    parse_ir(&mutate_text(&text, &mut inp));
}

// =============================================================================================
// Body 2: op validation

/// Valid ops up to this size (input and output) are interpreted and checked against the
/// reference in [`op_validation`].
const MAX_INTERPRETED_BYTES: usize = 1 << 16;

/// Any op name, attributes and input type: [`Op::from_attrs`], [`Op::output_type`] and
/// [`relayout::lower`] return `Ok` or a typed error, never panic, and agree with each other. A
/// small valid op is also interpreted and compared with the reference implementation.
pub fn op_validation(name: &str, attrs: &Attrs, input: &TensorType) {
    let op = match Op::from_attrs(name, attrs) {
        Ok(op) => op,
        Err(e) => {
            assert!(!e.message.is_empty(), "an error without a message: {e:?}");
            return;
        }
    };
    // The attributes of a built op read back to the same op.
    let (name2, attrs2) = op_to_attrs(&op);
    assert_eq!(name2, name);
    assert_eq!(Op::from_attrs(name2, &attrs2).as_ref(), Ok(&op));

    let output = op.output_type(input);
    let stages = relayout::lower(&op, input);
    let (output, stages) = match (output, stages) {
        (Err(e), Err(e2)) => {
            assert!(!e.message.is_empty());
            assert_eq!(
                e2.category(),
                Some(e.category()),
                "output_type and lower disagree on {op:?} for {input}: {e} / {e2}"
            );
            return;
        }
        (Ok(output), Ok(stages)) => (output, stages),
        (Ok(output), Err(e)) => {
            panic!("{op:?} on {input} is valid (output {output}) but does not lower: {e}")
        }
        (Err(e), Ok(_)) => panic!("{op:?} on {input} is invalid ({e}) but lowers"),
    };
    assert_eq!(stages.lowered.dst, output);
    assert_eq!(&stages.lowered.src, input);
    // Valid types have sizes (validation checked them).
    let (in_len, out_len) = (byte_len(input), byte_len(&output));
    if in_len > MAX_INTERPRETED_BYTES || out_len > MAX_INTERPRETED_BYTES {
        return;
    }
    let src = random_bytes(in_len, in_len as u64);
    let reference = relayout_reference::reference(&op, input, &src)
        .unwrap_or_else(|e| panic!("the reference refused a valid op: {e}\n{op:?} on {input}"));
    let mut got = random_bytes(out_len, 7);
    interpret(&stages.lowered, &src, &mut got).expect("a lowered kernel interprets");
    assert!(
        got == reference,
        "lowered IR vs reference for {op:?} on {input}"
    );
}

/// A fully arbitrary attribute value, at most three lists deep.
fn attr_value(inp: &mut Input, depth: u32) -> AttrValue {
    match inp.below(6) {
        0 | 1 => AttrValue::Int(inp.wild_i64()),
        2 => AttrValue::Str(inp.string()),
        3 | 4 => {
            let len = inp.below(7);
            AttrValue::List((0..len).map(|_| AttrValue::Int(inp.wild_i64())).collect())
        }
        _ if depth < 3 => {
            let len = inp.below(5);
            AttrValue::List((0..len).map(|_| attr_value(inp, depth + 1)).collect())
        }
        _ => AttrValue::List(Vec::new()),
    }
}

/// A small attribute value: usually small, sometimes on an edge.
fn small_i64(inp: &mut Input) -> i64 {
    if inp.one_in(6) {
        inp.wild_i64()
    } else {
        inp.range(-1, 4)
    }
}

/// A list of about `n` small integers; now and then one too many or too few.
fn int_list(inp: &mut Input, n: usize) -> AttrValue {
    let n = match inp.below(10) {
        0 => n.saturating_sub(1),
        1 => n + 1,
        _ => n,
    };
    AttrValue::List((0..n).map(|_| AttrValue::Int(small_i64(inp))).collect())
}

/// About `n` `[begin, end]` pairs; now and then a pair of the wrong length or a flat list.
fn pair_list(inp: &mut Input, n: usize) -> AttrValue {
    if inp.one_in(12) {
        return int_list(inp, 2 * n);
    }
    let n = if inp.one_in(10) { n + 1 } else { n };
    AttrValue::List(
        (0..n)
            .map(|_| {
                let len = if inp.one_in(12) {
                    inp.below(4) as usize
                } else {
                    2
                };
                int_list(inp, len)
            })
            .collect(),
    )
}

/// The attributes of op `name` (Col2Im's for an unknown name).
pub fn known_attributes(name: &str) -> &'static [&'static str] {
    relayout::known_attributes(name)
        .or_else(|| relayout::known_attributes("Col2Im"))
        .unwrap_or_default()
}

/// Attributes of the right names and kinds with values that may be anything, for `name`.
fn typed_attrs(inp: &mut Input, name: &str) -> Attrs {
    let m = inp.urange(1, 4) as usize;
    let mut a = Attrs::new();
    for &key in known_attributes(name) {
        // Leave out an attribute now and then: required ones must be missed, optional ones
        // defaulted.
        if inp.one_in(10) {
            continue;
        }
        let value = match key {
            "block_size" => AttrValue::Int(if inp.flag() {
                inp.range(-1, 4)
            } else {
                inp.wild_i64()
            }),
            "data_format" => AttrValue::Str(inp.pick(&FORMATS).to_string()),
            "mode" => AttrValue::Str(inp.pick(&MODES).to_string()),
            "paddings" | "crops" => pair_list(inp, m),
            "pads" => int_list(inp, 2 * m),
            _ => int_list(inp, m),
        };
        a.insert(key.to_string(), value);
    }
    a
}

/// A shape of rank about `rank` with small dims, now and then one on an edge.
fn near_shape(inp: &mut Input, rank: usize) -> Vec<u64> {
    let rank = match inp.below(10) {
        0 => rank.saturating_sub(1),
        1 => rank + 1,
        _ => rank,
    };
    (0..rank)
        .map(|_| {
            if inp.one_in(8) {
                inp.wild_dim()
            } else {
                inp.urange(0, 6)
            }
        })
        .collect()
}

/// Large factors and values for [`huge_op_description`]: powers of two around the sizes where
/// products leave 32 and 64 bits, and a few that are not.
const LARGE: [u64; 12] = [
    1 << 20,
    1 << 28,
    (1 << 31) - 1,
    1 << 31,
    3 << 29,
    1 << 32,
    (1 << 32) + 1,
    1_000_000_007,
    1 << 40,
    1 << 45,
    3 << 40,
    1 << 60,
];

/// A small valid op with one to three of its input dims or integer attributes multiplied by,
/// set to, or increased by a large value. Often invalid; when valid, its tensors are huge (or
/// empty with huge other dims), which is where the size and offset arithmetic of validation,
/// lowering and the passes is at its limits, and which mutating a small op reaches only by luck.
pub fn huge_op_description(inp: &mut Input) -> (String, Attrs, TensorType) {
    let (op, mut input) = small_valid_op(inp);
    let (name, mut attrs) = op_to_attrs(&op);
    for _ in 0..inp.urange(1, 3) {
        let m = inp.pick(&LARGE);
        let how = inp.below(3);
        let grow = |v: u64| match how {
            0 => v.saturating_mul(m),
            1 => m,
            _ => v.saturating_add(m),
        };
        if inp.flag() && !input.shape.is_empty() {
            let i = inp.below(input.shape.len() as u64) as usize;
            input.shape[i] = grow(input.shape[i]);
        } else {
            let ints: u64 = attrs.values().map(count_ints).sum();
            let mut k = inp.below(ints.max(1));
            // Attribute integers are i64: a negative one grows from 0, and the result is
            // capped at i64::MAX.
            let mut grow_int = |x: i64| grow(x.max(0) as u64).min(i64::MAX as u64) as i64;
            attrs
                .values_mut()
                .any(|v| update_nth_int(v, &mut k, &mut grow_int));
        }
    }
    (name.to_string(), attrs, input)
}

fn count_ints(v: &AttrValue) -> u64 {
    match v {
        AttrValue::Int(_) => 1,
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => 0,
        AttrValue::List(items) => items.iter().map(count_ints).sum(),
    }
}

/// Applies `f` to the integer at index `k` of a depth-first walk of the integers in `v`, and
/// returns true; or, when `v` holds fewer, takes their number off `k` and returns false, so
/// that the walk can go on in the next value.
fn update_nth_int(v: &mut AttrValue, k: &mut u64, f: &mut impl FnMut(i64) -> i64) -> bool {
    match v {
        AttrValue::Int(x) if *k == 0 => {
            *x = f(*x);
            true
        }
        AttrValue::Int(_) => {
            *k -= 1;
            false
        }
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => false,
        AttrValue::List(items) => items.iter_mut().any(|item| update_nth_int(item, k, f)),
    }
}

/// Decodes an op description from fuzzer bytes in one of four ways: fully arbitrary; right
/// names and kinds with arbitrary values; a small valid op with one thing changed; or a small
/// valid op made huge ([`huge_op_description`]).
pub fn decode_op_description(inp: &mut Input) -> (String, Attrs, TensorType) {
    let dtype = inp.pick(&DType::ALL);
    if inp.one_in(4) {
        return huge_op_description(inp);
    }
    match inp.below(3) {
        0 => {
            let names = [&OP_NAMES[..], &["", "spacetodepth", "Col2im", "Reshape"]].concat();
            let name = inp.pick(&names).to_string();
            let attrs = (0..inp.below(6))
                .map(|_| (inp.pick(&ATTR_NAMES).to_string(), attr_value(inp, 0)))
                .collect();
            let rank = inp.below(8) as usize;
            let shape = (0..rank).map(|_| inp.wild_dim()).collect::<Vec<_>>();
            (name, attrs, TensorType::new(dtype, shape))
        }
        1 => {
            let name = inp.pick(&OP_NAMES);
            let attrs = typed_attrs(inp, name);
            let rank = match name {
                "SpaceToDepth" | "DepthToSpace" => inp.urange(4, 5) as usize,
                "Col2Im" => 3,
                _ => inp.urange(2, 6) as usize,
            };
            let shape = near_shape(inp, rank);
            (name.to_string(), attrs, TensorType::new(dtype, shape))
        }
        _ => {
            let (op, mut input) = small_valid_op(inp);
            let (name, mut attrs) = op_to_attrs(&op);
            // (A Transpose of the default perm has no attribute to change.)
            match inp.below(4) {
                0 if !attrs.is_empty() => {
                    // One attribute replaced by anything.
                    let keys: Vec<String> = attrs.keys().cloned().collect();
                    let key = inp.pick(&keys);
                    attrs.insert(key, attr_value(inp, 0));
                }
                1 if !attrs.is_empty() => {
                    // One integer somewhere in the attributes set to an edge value.
                    let keys: Vec<String> = attrs.keys().cloned().collect();
                    let key = inp.pick(&keys);
                    let value = attrs.get_mut(&key).expect("a key of the map");
                    let edge = inp.pick(&EDGE_I64);
                    set_some_int(value, edge, inp);
                }
                2 if !input.shape.is_empty() => {
                    let i = inp.below(input.shape.len() as u64) as usize;
                    input.shape[i] = inp.wild_dim();
                }
                _ => {}
            }
            (name.to_string(), attrs, input)
        }
    }
}

/// Sets one integer inside `value` (the first one an index walk reaches) to `v`.
fn set_some_int(value: &mut AttrValue, v: i64, inp: &mut Input) {
    match value {
        AttrValue::Int(i) => *i = v,
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => {}
        AttrValue::List(items) if !items.is_empty() => {
            let i = inp.below(items.len() as u64) as usize;
            set_some_int(&mut items[i], v, inp);
        }
        AttrValue::List(_) => {}
    }
}

pub fn op_validation_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (name, attrs, input) = decode_op_description(&mut inp);
    op_validation(&name, &attrs, &input);
}

// =============================================================================================
// Body 3: differential, JIT == interpreter == reference

/// A valid op: the JIT (in guarded buffers, one thread and several), the interpreter on the
/// lowered, the simplified and the loop IR, and the reference implementation produce the same
/// bytes; every stage prints to text that parses back to it; and the movement analysis's
/// answer describes the output.
pub fn differential(op: &Op, input: &TensorType, seed: u64) {
    let kernel = compile(op, input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
    let output = kernel.output_type().clone();
    let src = random_bytes(byte_len(input), seed);
    let reference = relayout_reference::reference(op, input, &src)
        .unwrap_or_else(|e| panic!("the reference refused {op:?} on {input}: {e}"));
    let stages = kernel.stages();
    let out_len = byte_len(&output);

    for (what, k) in [
        ("lowered", &stages.lowered),
        ("optimized", &stages.optimized),
    ] {
        let mut got = random_bytes(out_len, seed ^ 1);
        interpret(k, &src, &mut got).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            got == reference,
            "{what} IR vs reference for {op:?} on {input}\n{k}"
        );
        assert_eq!(
            relayout::ir::parse_kernel(&k.to_string()).as_ref(),
            Ok(k),
            "the {what} IR does not round-trip"
        );
    }
    let mut got = random_bytes(out_len, seed ^ 2);
    interpret_loops(&stages.loops, &src, &mut got).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        got == reference,
        "loop IR vs reference for {op:?} on {input}\n{}",
        stages.loops
    );
    assert_eq!(
        relayout::ir::parse_loop_kernel(&stages.loops.to_string()).as_ref(),
        Ok(&stages.loops),
        "the loop IR does not round-trip"
    );

    for guard in Guard::BOTH {
        for pieces in PIECES {
            let src = GuardedBuf::from_bytes(&src, guard);
            let mut dst = GuardedBuf::from_bytes(&random_bytes(out_len, seed ^ 3), guard);
            let report = kernel
                .run_split(&src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_split(&report, pieces, &stages.loops);
            assert!(
                dst[..] == reference[..],
                "JIT ({pieces} pieces, guard at {guard:?}) vs reference for {op:?} on \
                 {input}\n{}",
                stages.loops
            );
        }
    }
    let elem = input.dtype.size() as usize;
    movement::assert_describes(
        &kernel.movement(),
        elem,
        &src,
        &reference,
        &format!("{op:?} on {input}"),
    );
}

pub fn differential_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (op, input) = small_valid_op(&mut inp);
    let seed = inp.u64();
    differential(&op, &input, seed);
}

// =============================================================================================
// Body: chains of small ops composed into one kernel

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

/// A chain of ops composed into one kernel (`compile_chain`) gives what running its ops one by
/// one in the reference gives: run by the JIT in guarded buffers, in one piece and several,
/// and by the interpreter at every stage; its movement answer describes the chain. A chain
/// that holds a Col2Im (a scatter-add), or an Im2Col anywhere but at its end, must be refused
/// as not composable.
pub fn chain_differential(ops: &[Op], input: &TensorType, seed: u64) {
    let src = random_bytes(byte_len(input), seed);
    let what = format!("{ops:?} on {input}");
    let mut ty = input.clone();
    let mut want = src.clone();
    for op in ops {
        want = relayout_reference::reference(op, &ty, &want)
            .unwrap_or_else(|e| panic!("the reference refused {op:?} on {ty}: {e}"));
        ty = op.output_type(&ty).expect("the chain's ops are valid");
    }
    let chain = match compile_chain(ops, input) {
        Ok(chain) => chain,
        // Col2Im adds into its output, and Im2Col writes through a scatter of blocks, which
        // another op cannot read element by element: it may only end a chain.
        Err(relayout::Error::Chain(ChainError::NotComposable { index, op, .. }))
            if op == "Col2Im" || (op == "Im2Col" && index + 1 < ops.len()) =>
        {
            assert_eq!(ops[index].name(), op, "{what}");
            return;
        }
        // Piecewise Pads (edge, reflect, wrap) multiply the statements of what they read:
        // past the composed kernel's limit the chain is refused, and its front is run instead.
        Err(relayout::Error::Chain(ChainError::NotComposable { index, reason, .. }))
            if reason.contains("run the chain in two parts") && index >= 1 =>
        {
            return chain_differential(&ops[..index], input, seed);
        }
        Err(e) => panic!("{what}: {e}"),
    };
    assert_eq!(chain.output_type(), &ty, "{what}");
    let stages = chain.stages();
    let out_len = byte_len(&ty);
    for (stage, k) in [
        ("lowered", &stages.lowered),
        ("optimized", &stages.optimized),
    ] {
        let mut got = random_bytes(out_len, seed ^ 1);
        interpret(k, &src, &mut got).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(
            got == want,
            "{stage} IR of the chain vs one by one: {what}\n{k}"
        );
    }
    let mut got = random_bytes(out_len, seed ^ 2);
    interpret_loops(&stages.loops, &src, &mut got).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        got == want,
        "loop IR of the chain vs one by one: {what}\n{}",
        stages.loops
    );
    for guard in Guard::BOTH {
        for pieces in PIECES {
            let guarded_src = GuardedBuf::from_bytes(&src, guard);
            let mut dst = GuardedBuf::from_bytes(&random_bytes(out_len, seed ^ 3), guard);
            let report = chain
                .run_split(&guarded_src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_split(&report, pieces, &stages.loops);
            assert!(
                dst[..] == want[..],
                "the composed kernel ({pieces} pieces, guard at {guard:?}) vs one by one: \
                 {what}\n{}",
                stages.loops
            );
        }
    }
    let elem = input.dtype.size() as usize;
    movement::assert_describes(&chain.movement(), elem, &src, &want, &what);
}

/// Chains of no more elements than this are run; a longer chain stops growing here.
const CHAIN_MAX_ELEMENTS: u64 = 4096;

pub fn chain_differential_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (first, input) = small_valid_op(&mut inp);
    let mut ty = first.output_type(&input).expect("a valid op");
    let mut ops = vec![first];
    for _ in 0..inp.urange(1, 3) {
        let op = op_for(&mut inp, &ty);
        let next = op.output_type(&ty).expect("op_for makes valid ops");
        if next.num_elements().map_or(true, |n| n > CHAIN_MAX_ELEMENTS) {
            break;
        }
        ops.push(op);
        ty = next;
    }
    let seed = inp.u64();
    chain_differential(&ops, &input, seed);
}

// =============================================================================================
// Body 4: random loop kernels flush against their buffers' ends

/// A random loop kernel whose accesses reach exactly the first and the last byte of each
/// operand, so that an access one byte outside lands on a guard page. Statements get random
/// runs, extents and strides (negative ones too), then are shifted so that their lowest access
/// is at 0, and the tensors are sized to the highest access.
pub fn tight_loop_kernel(inp: &mut Input) -> LoopKernel {
    let dtype = inp.pick(&DType::ALL);
    let e = dtype.size() as i64;
    let mut stmts = Vec::new();
    let (mut src_end, mut dst_end) = (e, e);
    for _ in 0..inp.urange(1, 3) {
        let action = inp.pick(&[
            LoopAction::Copy,
            LoopAction::ZERO_FILL,
            LoopAction::Accumulate,
        ]);
        // Mostly short runs, sometimes long enough for vector loops and memcpy.
        let elems = if inp.one_in(4) {
            inp.range(16, 300)
        } else {
            inp.range(1, 9)
        };
        let bytes = elems * e;
        let loops: Vec<Loop> = (0..inp.below(4))
            .map(|_| {
                // Strides in whole elements, or now and then in bytes (unaligned elements).
                let unit = if inp.one_in(8) { 1 } else { e };
                let min_extent = if inp.one_in(16) { 0 } else { 1 };
                Loop {
                    extent: inp.urange(min_extent, 6),
                    src_stride: inp.range(-12, 12) * unit,
                    dst_stride: inp.range(-12, 12) * unit,
                }
            })
            .collect();
        let span = |stride: fn(&Loop) -> i64| {
            loops.iter().fold((0i64, 0i64), |(lo, hi), l| {
                let reach = stride(l) * (l.extent.max(1) as i64 - 1);
                (lo + reach.min(0), hi + reach.max(0))
            })
        };
        let (src_lo, src_hi) = span(|l| l.src_stride);
        let (dst_lo, dst_hi) = span(|l| l.dst_stride);
        let mut stmt = LoopStmt {
            action,
            bytes: bytes as u64,
            src_offset: -src_lo,
            dst_offset: -dst_lo,
            loops,
        };
        if action.is_fill() {
            // A fill does not read the source; the verifier wants its source terms zero.
            stmt.src_offset = 0;
            for l in &mut stmt.loops {
                l.src_stride = 0;
            }
        } else {
            src_end = src_end.max(src_hi - src_lo + bytes);
        }
        dst_end = dst_end.max(dst_hi - dst_lo + bytes);
        stmts.push(stmt);
    }
    // Round the sizes up to whole elements (unaligned strides can end mid-element).
    let elems = |end: i64| (end + e - 1) / e;
    LoopKernel {
        bands: Vec::new(),
        name: "tight".into(),
        src: TensorType::new(dtype, [elems(src_end) as u64]),
        dst: TensorType::new(dtype, [elems(dst_end) as u64]),
        stmts,
    }
}

/// A tight random loop kernel: it verifies, and the JIT in guarded buffers matches the
/// interpreter.
pub fn tight_loops_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let k = tight_loop_kernel(&mut inp);
    verify_loop_kernel(&k).unwrap_or_else(|e| panic!("a tight kernel does not verify: {e}"));
    let src = random_bytes(byte_len(&k.src), inp.u64());
    let init = random_bytes(byte_len(&k.dst), 5);
    let mut want = init.clone();
    interpret_loops(&k, &src, &mut want).unwrap_or_else(|e| panic!("{e}\n{k}"));
    check_jit(&k, &src, init, &want);
}

// =============================================================================================
// Loop passes on random loop kernels

/// A tight random loop kernel made for the loop passes: sometimes every statement gets the
/// same outer loop over planes (so that `fuse-nests` can band them), sometimes copies of a
/// statement moved by a few elements are inserted after it (translates for `reroll`, some
/// overlapping what lies between). The tensors grow to hold what was added.
pub fn passes_loop_kernel(inp: &mut Input) -> LoopKernel {
    let mut k = tight_loop_kernel(inp);
    let e = k.dtype().size() as i64;
    if inp.flag() {
        let at = inp.below(k.stmts.len() as u64) as usize;
        let base = k.stmts[at].clone();
        let step = (inp.range(-3, 3) * e, inp.range(-3, 3) * e);
        for j in 1..=inp.range(1, 3) {
            let mut copy = base.clone();
            copy.dst_offset += j * step.0;
            if !copy.action.is_fill() {
                copy.src_offset += j * step.1;
            }
            let to = (at + j as usize + inp.below(2) as usize).min(k.stmts.len());
            k.stmts.insert(to, copy);
        }
        // Shift everything up so no offset is negative, and grow the tensors to the ends.
        let shift = |k: &mut LoopKernel, dst: bool| {
            let low = k
                .stmts
                .iter()
                .map(|s| if dst { s.dst_offset } else { s.src_offset })
                .min()
                .unwrap_or(0)
                .min(0);
            for s in &mut k.stmts {
                if dst {
                    s.dst_offset -= low;
                } else if !s.action.is_fill() {
                    s.src_offset -= low;
                }
            }
        };
        shift(&mut k, true);
        shift(&mut k, false);
    }
    // The highest byte a statement reaches (plus one) along the strides `stride` picks.
    let reach = |s: &LoopStmt, stride: fn(&Loop) -> i64| -> i64 {
        s.loops
            .iter()
            .map(|l| (stride(l) * (l.extent.max(1) as i64 - 1)).max(0))
            .sum()
    };
    let end = |k: &LoopKernel, dst: bool| -> i64 {
        k.stmts
            .iter()
            .filter(|s| dst || !s.action.is_fill())
            .map(|s| {
                let far = if dst {
                    s.dst_offset + reach(s, |l| l.dst_stride)
                } else {
                    s.src_offset + reach(s, |l| l.src_stride)
                };
                far + s.bytes as i64
            })
            .max()
            .unwrap_or(e)
            .max(e)
    };
    let (mut src_end, mut dst_end) = (end(&k, false), end(&k, true));
    if inp.flag() {
        // One outer loop over planes, shared by every statement.
        let planes = inp.urange(1, 4);
        let plane = Loop {
            extent: planes,
            src_stride: src_end,
            dst_stride: dst_end,
        };
        for s in &mut k.stmts {
            let mut l = plane;
            if s.action.is_fill() {
                l.src_stride = 0;
            }
            s.loops.insert(0, l);
        }
        src_end *= planes as i64;
        dst_end *= planes as i64;
    }
    let elems = |end: i64| ((end + e - 1) / e) as u64;
    k.src = TensorType::new(k.dtype(), [elems(src_end)]);
    k.dst = TensorType::new(k.dtype(), [elems(dst_end)]);
    k
}

/// The loop pipelines [`loop_passes_bytes`] runs: each loop pass alone, the loop part of the
/// default pipeline, and fusion forced (`FuseNests::always`, which tiny kernels need) followed
/// by `reroll`.
pub const LOOP_PIPELINES: [&str; 8] = [
    "output-stationary",
    "coalesce",
    "interchange",
    "tile-transposes",
    "pair-phases",
    "fuse-nests",
    "reroll",
    "output-stationary,coalesce,interchange,coalesce,tile-transposes,pair-phases,fuse-nests,reroll",
];

/// A random loop kernel that verifies: every loop pipeline keeps it verified and keeps its
/// result bit for bit (float accumulations included: loop passes never reorder the additions
/// into one element), in the interpreter and in the JIT in guarded buffers, whole and in
/// pieces.
pub fn loop_passes_bytes(data: &[u8]) {
    use relayout_passes::{FuseNests, Pass, PassManager, Pipeline, Reroll};
    let mut inp = Input::new(data);
    let k = passes_loop_kernel(&mut inp);
    if verify_loop_kernel(&k).is_err() {
        // Translates moved out of the tensors' ends: nothing to check.
        return;
    }
    let src = random_bytes(byte_len(&k.src), inp.u64());
    let init = random_bytes(byte_len(&k.dst), 9);
    let mut want = init.clone();
    interpret_loops(&k, &src, &mut want).unwrap_or_else(|e| panic!("{e}\n{k}"));
    let check = |what: &str, out: &LoopKernel| {
        verify_loop_kernel(out)
            .unwrap_or_else(|e| panic!("{what} made a kernel that fails: {e}\n{k}\ninto\n{out}"));
        let mut got = init.clone();
        interpret_loops(out, &src, &mut got).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert!(
            same_result(&k.dst, &want, &got),
            "{what} changed the result of\n{k}\ninto\n{out}"
        );
        check_jit(out, &src, init.clone(), &want);
    };
    for pipeline in LOOP_PIPELINES {
        let pm = PassManager::new(Pipeline::parse(pipeline).unwrap()).verify_each(true);
        match pm.run(AnyKernel::Loops(k.clone())) {
            Ok(AnyKernel::Loops(out)) => check(pipeline, &out),
            Ok(other) => panic!("{pipeline} left loop IR: {other:?}"),
            Err(e) => panic!("{pipeline} refused a verified kernel: {e}\n{k}"),
        }
    }
    let forced = |k: &LoopKernel| match FuseNests::always().run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(out)) => out,
        other => panic!("forced fusion: {other:?}\n{k}"),
    };
    let fused = forced(&k);
    check("forced fuse-nests", &fused);
    match Reroll.run(AnyKernel::Loops(fused.clone())) {
        Ok(AnyKernel::Loops(out)) => check("forced fuse-nests, then reroll", &out),
        other => panic!("reroll: {other:?}\n{fused}"),
    }
}
