//! Every rule of FORMAT.md's error table, with exactly its category and a message that names
//! the rule and the values; the order of the checks; and sizes that overflow.

use relayout_ir::{DType, TensorType};
use relayout_ops::{
    DataFormat, DepthToSpaceMode, ErrorCategory as E, Op, OpError, PadMode, PadValue,
};

fn f32s(shape: &[u64]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

fn s2d(b: i64, f: DataFormat) -> Op {
    Op::SpaceToDepth {
        block_size: b,
        data_format: f,
    }
}

fn d2s(b: i64, f: DataFormat, mode: DepthToSpaceMode) -> Op {
    Op::DepthToSpace {
        block_size: b,
        data_format: f,
        mode,
    }
}

fn s2bnd(block: &[i64], pads: &[&[i64]]) -> Op {
    Op::SpaceToBatchNd {
        block_shape: block.to_vec(),
        paddings: pads.iter().map(|p| p.to_vec()).collect(),
    }
}

fn b2snd(block: &[i64], crops: &[&[i64]]) -> Op {
    Op::BatchToSpaceNd {
        block_shape: block.to_vec(),
        crops: crops.iter().map(|p| p.to_vec()).collect(),
    }
}

fn col2im(image: &[i64], block: &[i64], dil: &[i64], pads: &[i64], strides: &[i64]) -> Op {
    Op::Col2Im {
        image_shape: image.to_vec(),
        block_shape: block.to_vec(),
        dilations: dil.to_vec(),
        pads: pads.to_vec(),
        strides: strides.to_vec(),
    }
}

/// Both `output_type` and `lower` refuse with `category`; returns the error.
#[track_caller]
fn refused(op: &Op, input: &TensorType, category: E) -> OpError {
    let e = op.output_type(input).expect_err("output_type must refuse");
    assert_eq!(e.category, category, "{op:?} on {input}: {e}");
    assert_eq!(op.lower(input).expect_err("lower must refuse"), e);
    e
}

/// The message contains every one of `words`.
#[track_caller]
fn says(e: &OpError, words: &[&str]) {
    for w in words {
        assert!(
            e.message.contains(w),
            "`{}` does not mention `{w}`",
            e.message
        );
    }
}

use DataFormat::{Nchw, NchwVectC, Nhwc};
use DepthToSpaceMode::{Crd, Dcr};

#[test]
fn block_size_too_small() {
    let e = refused(&s2d(1, Nhwc), &f32s(&[1, 2, 2, 1]), E::BlockSizeTooSmall);
    says(&e, &["SpaceToDepth", "block_size", "at least 2", "1"]);
    refused(
        &d2s(0, Nchw, Dcr),
        &f32s(&[1, 4, 1, 1]),
        E::BlockSizeTooSmall,
    );
    refused(
        &d2s(i64::MIN, Nhwc, Dcr),
        &f32s(&[1, 1, 1, 4]),
        E::BlockSizeTooSmall,
    );
    let v1 = Op::SpaceToBatch {
        block_size: 1,
        paddings: vec![vec![0, 0], vec![0, 0]],
    };
    refused(&v1, &f32s(&[1, 2, 2, 1]), E::BlockSizeTooSmall);
    let v1 = Op::BatchToSpace {
        block_size: -3,
        crops: vec![vec![0, 0], vec![0, 0]],
    };
    refused(&v1, &f32s(&[4, 1, 1, 1]), E::BlockSizeTooSmall);
    let e = refused(
        &s2bnd(&[2, 0], &[&[0, 0], &[0, 0]]),
        &f32s(&[1, 2, 2, 1]),
        E::BlockSizeTooSmall,
    );
    says(&e, &["block_shape[1]", "0"]);
    refused(
        &b2snd(&[-1], &[&[0, 0]]),
        &f32s(&[4, 1]),
        E::BlockSizeTooSmall,
    );
    // An entry of 1 is allowed in the ND ops.
    assert!(s2bnd(&[1, 1], &[&[0, 0], &[0, 0]])
        .lower(&f32s(&[1, 2, 2, 1]))
        .is_ok());
}

#[test]
fn not_divisible() {
    let e = refused(&s2d(2, Nhwc), &f32s(&[1, 3, 4, 2]), E::NotDivisible);
    says(&e, &["height 3", "dim 1", "block_size 2"]);
    let e = refused(&s2d(4, Nchw), &f32s(&[1, 2, 4, 6]), E::NotDivisible);
    says(&e, &["width 6", "dim 3", "block_size 4"]);
    let e = refused(&d2s(2, Nhwc, Dcr), &f32s(&[1, 2, 2, 6]), E::NotDivisible);
    says(&e, &["depth 6", "dim 3", "4"]);
    refused(&d2s(3, Nchw, Crd), &f32s(&[1, 12, 2, 1]), E::NotDivisible);
    // NCHW_VECT_C: C = 4 is divisible by b * b = 4, but C / 4 = 1 is not.
    let e = refused(
        &d2s(2, NchwVectC, Dcr),
        &f32s(&[1, 1, 2, 2, 4]),
        E::NotDivisible,
    );
    says(&e, &["NCHW_VECT_C", "by 4"]);
    let e = refused(
        &s2bnd(&[2, 2], &[&[0, 0], &[0, 0]]),
        &f32s(&[1, 3, 4, 1]),
        E::NotDivisible,
    );
    says(
        &e,
        &["spatial dim 0", "input dim 1", "3", "block_shape[0] = 2"],
    );
    let v1 = Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![0, 1], vec![0, 0]],
    };
    refused(&v1, &f32s(&[1, 2, 2, 1]), E::NotDivisible);
    let e = refused(
        &b2snd(&[2, 2], &[&[0, 0], &[0, 0]]),
        &f32s(&[6, 1, 2, 1]),
        E::NotDivisible,
    );
    says(&e, &["batch 6", "prod(block_shape) = 4"]);
    let e = refused(
        &col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 4], &[1, 1]),
        &f32s(&[1, 6, 4]),
        E::NotDivisible,
    );
    says(&e, &["dim 1 = 6", "prod(block_shape) = 4"]);
}

#[test]
fn crops_too_large() {
    let e = refused(
        &b2snd(&[2, 2], &[&[1, 1], &[3, 2]]),
        &f32s(&[4, 1, 2, 1]),
        E::CropsTooLarge,
    );
    says(&e, &["crops[1] = [3, 2]", "4"]);
    let v1 = Op::BatchToSpace {
        block_size: 2,
        crops: vec![vec![0, 0], vec![2, 3]],
    };
    refused(&v1, &f32s(&[4, 1, 2, 1]), E::CropsTooLarge);
    // Cropping everything is allowed: the output is empty.
    let op = b2snd(&[2], &[&[3, 1]]);
    assert_eq!(op.output_type(&f32s(&[2, 2, 5])), Ok(f32s(&[1, 0, 5])));
    // A sum of crops that overflows is too large, not an overflow of ours.
    refused(
        &b2snd(&[2], &[&[i64::MAX, i64::MAX]]),
        &f32s(&[2, 2]),
        E::CropsTooLarge,
    );
}

#[test]
fn bad_rank() {
    let e = refused(&s2d(2, Nhwc), &f32s(&[2, 4, 1]), E::BadRank);
    says(&e, &["NHWC", "rank 4", "rank 3"]);
    refused(&d2s(2, Nhwc, Dcr), &f32s(&[1, 1, 1, 1, 4]), E::BadRank);
    let e = refused(&s2d(2, NchwVectC), &f32s(&[1, 1, 2, 2]), E::BadRank);
    says(&e, &["NCHW_VECT_C", "rank 5"]);
    let e = refused(
        &s2bnd(&[2, 2], &[&[0, 0], &[0, 0]]),
        &f32s(&[2, 4]),
        E::BadRank,
    );
    says(&e, &["rank >= 3", "rank 2"]);
    refused(&b2snd(&[2], &[&[0, 0]]), &f32s(&[4]), E::BadRank);
    let v1 = Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![0, 0], vec![0, 0]],
    };
    refused(&v1, &f32s(&[2, 2, 1]), E::BadRank);
    // v1 is 4-D only, even though the ND op would take a 5-D input.
    refused(&v1, &f32s(&[1, 2, 2, 1, 1]), E::BadRank);
    let e = refused(
        &col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 4], &[1, 1]),
        &f32s(&[4, 4]),
        E::BadRank,
    );
    says(&e, &["rank 3", "rank 2"]);
    // Rank comes first: this input also has a block size that is too small.
    refused(&s2d(1, Nhwc), &f32s(&[2, 4, 1]), E::BadRank);
}

#[test]
fn bad_paddings_and_bad_crops() {
    let input = f32s(&[1, 2, 2, 1]);
    let e = refused(
        &s2bnd(&[2, 2], &[&[0, 0], &[-1, 1]]),
        &input,
        E::BadPaddings,
    );
    says(&e, &["paddings[1] = [-1, 1]", "negative"]);
    let e = refused(&s2bnd(&[2, 2], &[&[0, 0]]), &input, E::BadPaddings);
    says(&e, &["2 [begin, end] pairs", "got 1"]);
    let e = refused(
        &s2bnd(&[2, 2], &[&[0, 0], &[0, 0, 0]]),
        &input,
        E::BadPaddings,
    );
    says(&e, &["paddings[1] = [0, 0, 0]"]);
    let v1 = Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![-2, 0], vec![0, 0]],
    };
    refused(&v1, &f32s(&[1, 4, 2, 1]), E::BadPaddings);
    let v1 = Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![0, 0]],
    };
    refused(&v1, &input, E::BadPaddings);
    let e = refused(
        &b2snd(&[2, 2], &[&[0, 0], &[-1, 0]]),
        &f32s(&[4, 1, 2, 1]),
        E::BadCrops,
    );
    says(&e, &["crops[1] = [-1, 0]"]);
    refused(
        &b2snd(&[2, 2], &[&[0, 0], &[0, 0], &[0, 0]]),
        &f32s(&[4, 1, 2, 1]),
        E::BadCrops,
    );
    let v1 = Op::BatchToSpace {
        block_size: 2,
        crops: vec![vec![0, -1], vec![0, 0]],
    };
    refused(&v1, &f32s(&[4, 2, 2, 1]), E::BadCrops);
}

#[test]
fn bad_vect_c_and_bad_mode() {
    let e = refused(&s2d(2, NchwVectC), &f32s(&[1, 1, 2, 2, 3]), E::BadVectC);
    says(&e, &["last dim", "3"]);
    refused(
        &d2s(2, NchwVectC, Dcr),
        &f32s(&[1, 4, 1, 1, 8]),
        E::BadVectC,
    );
    let e = refused(&d2s(2, Nhwc, Crd), &f32s(&[1, 1, 1, 4]), E::BadMode);
    says(&e, &["CRD", "NCHW", "NHWC"]);
    refused(&d2s(2, NchwVectC, Crd), &f32s(&[1, 4, 1, 1, 4]), E::BadMode);
}

#[test]
fn col2im_rules() {
    let input = f32s(&[1, 4, 4]);
    let ok = col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 4], &[1, 1]);
    assert_eq!(ok.output_type(&input), Ok(f32s(&[1, 1, 3, 3])));
    let e = refused(&ok, &f32s(&[1, 4, 5]), E::BadCol2ImL);
    says(&e, &["L) = 5", "2 * 2 = 4"]);
    for bad in [
        col2im(&[3], &[2], &[1], &[0, 0], &[1]),
        col2im(&[3, 3], &[2, 2, 1], &[1, 1], &[0; 4], &[1, 1]),
        col2im(&[3, 3], &[2, 2], &[1], &[0; 4], &[1, 1]),
        col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 2], &[1, 1]),
        col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 4], &[0, 1]),
        col2im(&[3, 3], &[2, 2], &[-1, 1], &[0; 4], &[1, 1]),
        col2im(&[3, 3], &[2, 0], &[1, 1], &[0; 4], &[1, 1]),
        col2im(&[3, -3], &[2, 2], &[1, 1], &[0; 4], &[1, 1]),
        col2im(&[3, 3], &[2, 2], &[1, 1], &[0, 0, -1, 0], &[1, 1]),
        // Dilated kernel 3 * (2 - 1) + 1 = 4 > 3.
        col2im(&[3, 3], &[2, 2], &[3, 1], &[0; 4], &[1, 1]),
        col2im(&[3, 3], &[2, 2], &[i64::MAX, 1], &[0; 4], &[1, 1]),
    ] {
        refused(&bad, &input, E::BadCol2ImAttrs);
    }
    let e = refused(
        &col2im(&[3, 3], &[2, 2], &[1, 1], &[0; 4], &[0, 1]),
        &input,
        E::BadCol2ImAttrs,
    );
    says(&e, &["strides[0]", "0"]);
    let e = refused(
        &col2im(&[3, 3], &[2, 2], &[3, 1], &[0; 4], &[1, 1]),
        &input,
        E::BadCol2ImAttrs,
    );
    says(&e, &["dilated kernel", "padded image dim 0"]);
}

#[test]
fn nd_ops_need_a_block_dim() {
    let e = refused(&s2bnd(&[], &[]), &f32s(&[1, 2]), E::BadAttribute);
    says(&e, &["block_shape", "at least one"]);
    refused(&b2snd(&[], &[]), &f32s(&[1, 2]), E::BadAttribute);
}

#[test]
fn sizes_that_overflow() {
    let huge = u64::MAX;
    // The input itself.
    refused(&s2d(2, Nhwc), &f32s(&[huge, 2, 2, 1]), E::SizeOverflow);
    refused(
        &s2d(2, Nhwc),
        &f32s(&[1 << 40, 2, 2, 1 << 22]),
        E::SizeOverflow,
    );
    // No elements, but a dim that no index can reach.
    refused(&s2d(2, Nhwc), &f32s(&[0, 2, 2, huge]), E::SizeOverflow);
    // The output depth C * b * b.
    refused(
        &s2d(1 << 31, Nhwc),
        &f32s(&[0, 0, 0, 1 << 2]),
        E::SizeOverflow,
    );
    refused(
        &d2s(i64::MAX, Nhwc, Dcr),
        &f32s(&[1, 1, 1, 4]),
        E::SizeOverflow,
    );
    // The output height H * b.
    refused(
        &d2s(2, Nhwc, Dcr),
        &TensorType::new(DType::U8, [1, 1 << 62, 1, 4]),
        E::SizeOverflow,
    );
    // Padded sizes and output batches.
    refused(
        &s2bnd(&[1], &[&[i64::MAX, 1]]),
        &f32s(&[1, 1]),
        E::SizeOverflow,
    );
    let e = refused(
        &s2bnd(&[i64::MAX, 4], &[&[0, 0], &[0, 0]]),
        &f32s(&[1, 0, 0]),
        E::SizeOverflow,
    );
    says(&e, &["overflows"]);
    refused(
        &b2snd(&[i64::MAX, i64::MAX], &[&[0, 0], &[0, 0]]),
        &f32s(&[0, 1, 1]),
        E::SizeOverflow,
    );
    // Col2Im padded image.
    let op = col2im(&[3, 3], &[2, 2], &[1, 1], &[i64::MAX, 0, 1, 0], &[1, 1]);
    refused(&op, &f32s(&[1, 4, 4]), E::SizeOverflow);
    // A valid op whose output would not fit in bytes.
    let op = s2bnd(&[1], &[&[(1 << 62) - 1, (1 << 62) - 1]]);
    refused(&op, &f32s(&[1, 1]), E::SizeOverflow);
    let u8s = TensorType::new(DType::U8, [1, 1]);
    assert_eq!(
        op.output_type(&u8s),
        Ok(TensorType::new(DType::U8, [1, i64::MAX as u64]))
    );
    assert!(op.lower(&u8s).is_ok());
    // A reflect Pad's end pad reads index `c - o`, `c` twice the last kept index plus the
    // crop and the begin pad: an i64 for axes of up to 2^62 elements, refused beyond (it
    // wrapped into a wrong index that the verifier caught, and would panic in a debug build).
    let reflect = |begin: i64| Op::Pad {
        pads: vec![begin, 1 << 20],
        mode: PadMode::Reflect,
        constant_value: PadValue::Int(0),
        axes: Some(vec![-2]),
    };
    let axis = |n: u64| TensorType::new(DType::U8, [n, 1]);
    let e = refused(
        &reflect(-1),
        &axis((1 << 63) - 4_294_967_296),
        E::SizeOverflow,
    );
    says(&e, &["reflect", "overflows"]);
    refused(&reflect(3), &axis(1 << 62), E::SizeOverflow);
    assert!(reflect(0).lower(&axis(1 << 62)).is_ok());
}

#[test]
fn every_format_category_is_produced_above() {
    // The categories of FORMAT.md's table, spelt as the conformance cases spell them.
    let table = [
        "block_size_too_small",
        "not_divisible",
        "crops_too_large",
        "bad_rank",
        "bad_paddings",
        "bad_crops",
        "bad_vect_c",
        "bad_mode",
        "bad_data_format",
        "bad_col2im_L",
        "bad_col2im_attrs",
    ];
    for name in table {
        let c = E::from_name(name).unwrap_or_else(|| panic!("no category {name}"));
        assert_eq!(c.as_str(), name);
    }
}
