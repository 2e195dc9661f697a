//! Every worked example of the seed documentation pages (TensorFlow's SpaceToBatch,
//! BatchToSpaceND, SpaceToDepth and DepthToSpace), each as its own test, run through both
//! oracles: the interpreted lowering and the reference. Values are copied from the pages and
//! flattened in row-major order. (The conformance cases `*_tfdoc_*` hold them too; these tests
//! keep them independent of the JSON loader.)

use relayout_ir::{interpret, DType, TensorType};
use relayout_ops::{DataFormat, DepthToSpaceMode, Op};
use relayout_reference::reference;

fn bytes_i32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_f32(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect()
}

/// Runs `op` on `input` through both oracles, in int32 and in float32.
#[track_caller]
fn check(op: Op, in_shape: &[u64], input: &[i32], out_shape: &[u64], output: &[i32]) {
    for (dtype, bytes) in [
        (DType::I32, bytes_i32 as fn(&[i32]) -> Vec<u8>),
        (DType::F32, bytes_f32),
    ] {
        let in_ty = TensorType::new(dtype, in_shape.to_vec());
        let out_ty = TensorType::new(dtype, out_shape.to_vec());
        assert_eq!(op.output_type(&in_ty), Ok(out_ty.clone()));
        let kernel = op.lower(&in_ty).unwrap();
        let mut dst = vec![0xFF; out_ty.size_bytes().unwrap() as usize];
        interpret(&kernel, &bytes(input), &mut dst).unwrap();
        assert_eq!(dst, bytes(output), "interpreted\n{kernel}");
        assert_eq!(
            reference(&op, &in_ty, &bytes(input)).unwrap(),
            bytes(output),
            "reference"
        );
    }
}

fn iota(n: i32) -> Vec<i32> {
    (1..=n).collect()
}

fn space_to_batch() -> Op {
    Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![0, 0], vec![0, 0]],
    }
}

fn batch_to_space_nd(crops: [[i64; 2]; 2]) -> Op {
    Op::BatchToSpaceNd {
        block_shape: vec![2, 2],
        crops: crops.iter().map(|c| c.to_vec()).collect(),
    }
}

fn space_to_depth() -> Op {
    Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    }
}

fn depth_to_space() -> Op {
    Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nhwc,
        mode: DepthToSpaceMode::Dcr,
    }
}

/// The 4x4 image of examples (3) and (4), split into the four 2x2 phases.
const PHASES: [i32; 16] = [1, 3, 9, 11, 2, 4, 10, 12, 5, 7, 13, 15, 6, 8, 14, 16];

#[test]
fn space_to_batch_example_1() {
    check(
        space_to_batch(),
        &[1, 2, 2, 1],
        &[1, 2, 3, 4],
        &[4, 1, 1, 1],
        &[1, 2, 3, 4],
    );
}

#[test]
fn space_to_batch_example_2() {
    check(
        space_to_batch(),
        &[1, 2, 2, 3],
        &iota(12),
        &[4, 1, 1, 3],
        &iota(12),
    );
}

#[test]
fn space_to_batch_example_3() {
    check(
        space_to_batch(),
        &[1, 4, 4, 1],
        &iota(16),
        &[4, 2, 2, 1],
        &PHASES,
    );
}

#[test]
fn space_to_batch_example_4() {
    check(
        space_to_batch(),
        &[2, 2, 4, 1],
        &iota(16),
        &[8, 1, 2, 1],
        &PHASES,
    );
}

#[test]
fn batch_to_space_nd_example_1() {
    let op = batch_to_space_nd([[0, 0], [0, 0]]);
    check(
        op,
        &[4, 1, 1, 1],
        &[1, 2, 3, 4],
        &[1, 2, 2, 1],
        &[1, 2, 3, 4],
    );
}

#[test]
fn batch_to_space_nd_example_2() {
    let op = batch_to_space_nd([[0, 0], [0, 0]]);
    check(op, &[4, 1, 1, 3], &iota(12), &[1, 2, 2, 3], &iota(12));
}

#[test]
fn batch_to_space_nd_example_3() {
    let op = batch_to_space_nd([[0, 0], [0, 0]]);
    check(op, &[4, 2, 2, 1], &PHASES, &[1, 4, 4, 1], &iota(16));
}

/// Example (4) crops the two zero columns that SpaceToBatchND's padding `[[0, 0], [2, 0]]`
/// added; run it both ways.
const PADDED: [i32; 24] = [
    0, 1, 3, 0, 9, 11, 0, 2, 4, 0, 10, 12, 0, 5, 7, 0, 13, 15, 0, 6, 8, 0, 14, 16,
];

#[test]
fn batch_to_space_nd_example_4() {
    let op = batch_to_space_nd([[0, 0], [2, 0]]);
    check(op, &[8, 1, 3, 1], &PADDED, &[2, 2, 4, 1], &iota(16));
}

#[test]
fn space_to_batch_nd_inverse_of_example_4() {
    let op = Op::SpaceToBatchNd {
        block_shape: vec![2, 2],
        paddings: vec![vec![0, 0], vec![2, 0]],
    };
    check(op, &[2, 2, 4, 1], &iota(16), &[8, 1, 3, 1], &PADDED);
}

#[test]
fn space_to_depth_example_1() {
    check(
        space_to_depth(),
        &[1, 2, 2, 1],
        &[1, 2, 3, 4],
        &[1, 1, 1, 4],
        &[1, 2, 3, 4],
    );
}

#[test]
fn space_to_depth_example_2() {
    check(
        space_to_depth(),
        &[1, 2, 2, 3],
        &iota(12),
        &[1, 1, 1, 12],
        &iota(12),
    );
}

/// Example (3) of both pages: the 4x4 image in this order becomes channels 1..16.
const BLOCKED: [i32; 16] = [1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16];

#[test]
fn space_to_depth_example_3() {
    check(
        space_to_depth(),
        &[1, 4, 4, 1],
        &BLOCKED,
        &[1, 2, 2, 4],
        &iota(16),
    );
}

#[test]
fn depth_to_space_example_1() {
    check(
        depth_to_space(),
        &[1, 1, 1, 4],
        &[1, 2, 3, 4],
        &[1, 2, 2, 1],
        &[1, 2, 3, 4],
    );
}

#[test]
fn depth_to_space_example_2() {
    check(
        depth_to_space(),
        &[1, 1, 1, 12],
        &iota(12),
        &[1, 2, 2, 3],
        &iota(12),
    );
}

#[test]
fn depth_to_space_example_3() {
    check(
        depth_to_space(),
        &[1, 2, 2, 4],
        &iota(16),
        &[1, 4, 4, 1],
        &BLOCKED,
    );
}
