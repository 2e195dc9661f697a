//! `Movement`: the answers for the ops whose answer is known by hand, and, for a grid of ops
//! of every family, the check that the answer describes what the kernel really does: the
//! permutation applied to random data, the contiguous block, or the identity must give the
//! bytes the JIT-compiled kernel produces.

use relayout::ir::{DType, TensorType};
use relayout::{compile, DataFormat, DepthToSpaceMode, Movement, Op, PadMode, PadValue};

#[path = "support/movement.rs"]
mod movement_check;
#[path = "support/ops.rs"]
mod ops;
use movement_check::assert_describes;
use ops::{b2s, d2s, s2b, s2d, t, Rng};

fn movement(op: &Op, input: &TensorType) -> Movement {
    compile(op, input)
        .unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"))
        .movement()
}

/// Runs `op` on random data and checks that its movement describes the output exactly.
/// Returns the movement, for the caller's own expectations.
fn check_movement(op: &Op, input: &TensorType, rng: &mut Rng) -> Movement {
    let kernel = compile(op, input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
    let m = kernel.movement();
    check_describes(
        &m,
        input,
        &|src| kernel.run_to_vec(src).unwrap(),
        rng,
        &format!("{op:?}"),
    );
    m
}

/// Checks on random data that `m` describes what `run` does to an input of type `input`.
fn check_describes(
    m: &Movement,
    input: &TensorType,
    run: &dyn Fn(&[u8]) -> Vec<u8>,
    rng: &mut Rng,
    name: &str,
) {
    let src = rng.bytes(input.size_bytes().unwrap() as usize);
    let out = run(&src);
    let elem = input.dtype.size() as usize;
    let what = format!("{name} on {input}");
    assert_describes(m, elem, &src, &out, &what);
    if let Movement::Gather { bytes_moved, .. } = m {
        // Counted from the data, not from the loop IR: run on an input of all 0xFF bytes,
        // the output bytes that are 0xFF were copied (one read and one write each) and the
        // others are padding zeros (one write each). These ops write every output byte
        // exactly once.
        let ones = run(&vec![0xFF; src.len()]);
        let copied = ones.iter().filter(|&&b| b == 0xFF).count() as u64;
        let filled = ones.len() as u64 - copied;
        assert_eq!(*bytes_moved, 2 * copied + filled, "{what}: {m:?}");
    }
}

#[test]
fn ops_that_move_nothing() {
    use DataFormat::*;
    use DepthToSpaceMode::*;
    let f32 = DType::F32;
    let cases = [
        (s2b(&[1, 1], &[[0, 0], [0, 0]]), t(f32, &[2, 3, 4, 5])),
        (b2s(&[1, 1], &[[0, 0], [0, 0]]), t(f32, &[2, 3, 4, 5])),
        // The block of a one-pixel image is the whole depth, in the same order.
        (d2s(2, Nhwc, Dcr), t(f32, &[3, 1, 1, 8])),
        (s2d(2, Nhwc), t(f32, &[3, 2, 2, 5])),
        // CRD puts the block innermost in the channels: with one pixel, that is the output order.
        (d2s(2, Nchw, Crd), t(f32, &[3, 8, 1, 1])),
        (s2d(3, Nchw), t(DType::U8, &[1, 1, 3, 3])),
        // The batch is the block offset: with batch 1 and one pixel, the space is the batch.
        (b2s(&[2, 2], &[[0, 0], [0, 0]]), t(f32, &[4, 1, 1, 3])),
        (s2b(&[2, 2], &[[0, 0], [0, 0]]), t(f32, &[1, 2, 2, 3])),
    ];
    let mut rng = Rng(1);
    for (op, input) in cases {
        assert_eq!(
            check_movement(&op, &input, &mut rng),
            Movement::NoMovement,
            "{op:?} on {input}"
        );
    }
}

#[test]
fn transposes_are_described_like_numpy() {
    use DataFormat::*;
    // TensorFlow's SpaceToDepth example: (h, by, w, bx) -> (h, w, by, bx).
    assert_eq!(
        movement(&s2d(2, Nhwc), &t(DType::F32, &[1, 4, 4, 1])),
        Movement::Permutation {
            shape: vec![2, 2, 2, 2],
            perm: vec![0, 2, 1, 3]
        }
    );
    // DCR on one pixel in NCHW: channels (by, bx, c) -> (c, by, bx).
    assert_eq!(
        movement(
            &d2s(2, Nchw, DepthToSpaceMode::Dcr),
            &t(DType::F32, &[1, 8, 1, 1])
        ),
        Movement::Permutation {
            shape: vec![4, 2],
            perm: vec![1, 0]
        }
    );
    // The batch of SpaceToBatchND is innermost in the block offsets: (n, y, by, x, bx, c)
    // -> (by, bx, n, y, x, c), where n and y stay together.
    assert_eq!(
        movement(
            &s2b(&[2, 2], &[[0, 0], [0, 0]]),
            &t(DType::I16, &[3, 4, 6, 5])
        ),
        Movement::Permutation {
            shape: vec![6, 2, 3, 2, 5],
            perm: vec![1, 3, 0, 2, 4]
        }
    );
}

/// Code generation cuts a transpose whose extents are not multiples of its register blocks
/// into several statements (the whole blocks, then the edges); it is still reported as the
/// one permutation it is, and the permutation still describes the data.
#[test]
fn transposes_cut_into_blocks_and_edges_are_permutations() {
    let mut rng = Rng(11);
    let transpose = |perm: &[i64]| Op::Transpose {
        perm: Some(perm.to_vec()),
    };
    let cases = [
        // The benchmark suite's transpose_tiny: no two axes stay together.
        (
            transpose(&[3, 1, 0, 2]),
            t(DType::F32, &[2, 3, 4, 5]),
            (vec![2, 3, 4, 5], vec![3, 1, 0, 2]),
        ),
        // A 2-D transpose of odd extents, blocks of 4x4 and edges on both sides.
        (
            transpose(&[1, 0]),
            t(DType::F32, &[13, 7]),
            (vec![13, 7], vec![1, 0]),
        ),
        // NCHW -> NHWC of 7x7 maps: 48 positions in blocks, the 49th an edge.
        (
            transpose(&[0, 2, 3, 1]),
            t(DType::F32, &[2, 20, 7, 7]),
            (vec![2, 20, 49], vec![0, 2, 1]),
        ),
        // Bytes in 16x16 blocks, with edges.
        (
            transpose(&[1, 0]),
            t(DType::U8, &[37, 21]),
            (vec![37, 21], vec![1, 0]),
        ),
    ];
    for (op, input, (shape, perm)) in cases {
        let kernel = compile(&op, &input).unwrap();
        assert!(
            kernel.stages().loops.stmts.len() > 1,
            "{input}: not cut, this case no longer tests the cut\n{}",
            kernel.stages().loops
        );
        assert_eq!(
            check_movement(&op, &input, &mut rng),
            Movement::Permutation { shape, perm },
            "{op:?} on {input}"
        );
    }
}

/// Slices with steps (forward and backward) and tiles read the input through strides: each is
/// a strided view, which describes the data.
#[test]
fn steps_reversals_and_repeats_are_strided_views() {
    let mut rng = Rng(13);
    let slice = |starts: &[i64], ends: &[i64], steps: &[i64]| Op::Slice {
        starts: starts.to_vec(),
        ends: ends.to_vec(),
        axes: None,
        steps: Some(steps.to_vec()),
    };
    let view = |offset: u64, shape: &[u64], strides: &[i64]| Movement::StridedView {
        offset,
        shape: shape.to_vec(),
        strides: strides.to_vec(),
    };
    let cases = [
        // Every other row and column of an 8x8 matrix.
        (
            slice(&[0, 0], &[8, 8], &[2, 2]),
            t(DType::F32, &[8, 8]),
            view(0, &[4, 4], &[16, 2]),
        ),
        // The rows of a 3x4 matrix backwards: whole rows, in reverse.
        (
            slice(&[-1], &[i64::MIN], &[-1]),
            t(DType::F32, &[3, 4]),
            view(8, &[3, 4], &[-4, 1]),
        ),
        // Every third element from the end, of 2-byte elements.
        (
            slice(&[0, 9], &[2, 0], &[1, -3]),
            t(DType::F16, &[2, 10]),
            view(9, &[2, 3], &[10, -3]),
        ),
        // A row repeated three times: a broadcast.
        (
            Op::Tile {
                repeats: vec![3, 1],
            },
            t(DType::I32, &[1, 5]),
            view(0, &[3, 5], &[0, 1]),
        ),
    ];
    for (op, input, want) in cases {
        assert_eq!(
            check_movement(&op, &input, &mut rng),
            want,
            "{op:?} on {input}"
        );
    }
}

/// A chain of a transpose and a slice with steps is one strided view of the chain's input.
#[test]
fn a_transposed_strided_slice_is_one_view() {
    let input = t(DType::F32, &[6, 4]);
    let ops = [
        Op::Transpose { perm: None },
        Op::Slice {
            starts: vec![3, 0],
            ends: vec![i64::MIN, 6],
            axes: None,
            steps: Some(vec![-1, 2]),
        },
    ];
    let chain = relayout::compile_chain(&ops, &input).unwrap();
    let m = chain.movement();
    // Output (i, j) is transposed (3 - i, 2 j), which is input (2 j, 3 - i): 4 * 2 j + 3 - i.
    assert_eq!(
        m,
        Movement::StridedView {
            offset: 3,
            shape: vec![4, 3],
            strides: vec![-1, 8],
        }
    );
    check_describes(
        &m,
        &input,
        &|src| chain.run_to_vec(src).unwrap(),
        &mut Rng(17),
        "Transpose then Slice",
    );
}

#[test]
fn slices_and_pads_of_one_block_are_contiguous_copies() {
    let f32 = DType::F32;
    // Rows 1 and 2 of four, 3 x 2 floats each: a slice.
    assert_eq!(
        movement(&b2s(&[1], &[[1, 1]]), &t(f32, &[1, 4, 3, 2])),
        Movement::ContiguousCopy {
            src_offset: 24,
            dst_offset: 0,
            bytes: 48
        }
    );
    // One zero row above and below: a padded block.
    assert_eq!(
        movement(&s2b(&[1], &[[1, 1]]), &t(f32, &[1, 2, 3, 2])),
        Movement::ContiguousCopy {
            src_offset: 0,
            dst_offset: 24,
            bytes: 48
        }
    );
}

#[test]
fn padding_inside_and_scatter_add_are_gathers() {
    let m = movement(
        &s2b(&[2, 2], &[[1, 2], [1, 2]]),
        &t(DType::F32, &[2, 5, 5, 3]),
    );
    assert!(
        matches!(
            m,
            Movement::Gather {
                statements: 9,
                fills: 5,
                ..
            }
        ),
        "{m:?}"
    );
    let col2im = Op::Col2Im {
        image_shape: vec![3, 3],
        block_shape: vec![2, 2],
        dilations: vec![1, 1],
        pads: vec![0, 0, 0, 0],
        strides: vec![1, 1],
    };
    let kernel = compile(&col2im, &t(DType::F32, &[1, 4, 4])).unwrap();
    assert!(matches!(kernel.movement(), Movement::Gather { .. }));
    // The fill writes 36 bytes; each of 16 points reads 4 bytes and reads and writes 4 more.
    assert_eq!(kernel.bytes_moved(), 36 + 16 * 4 * 3);
}

/// A Col2Im whose windows do not overlap (strides equal to the kernel, no padding) sums one
/// term per element from zero: for integers `0 + x` is `x`, so it is a permutation of the
/// input (the fold of patches, undone by the transpose it names); for floats `+0.0 + x`
/// turns -0.0 into +0.0, so it is no copy of the bytes and stays a gather.
#[test]
fn col2im_of_windows_apart_is_a_permutation_of_integers_only() {
    let fold = Op::Col2Im {
        image_shape: vec![8, 8],
        block_shape: vec![2, 2],
        dilations: vec![1, 1],
        pads: vec![0, 0, 0, 0],
        strides: vec![2, 2],
    };
    let mut rng = Rng(7);
    let m = check_movement(&fold, &t(DType::I32, &[2, 12, 16]), &mut rng);
    assert!(matches!(m, Movement::Permutation { .. }), "{m:?}");
    let m = movement(&fold, &t(DType::F32, &[2, 12, 16]));
    assert!(matches!(m, Movement::Gather { .. }), "{m:?}");
}

#[test]
fn empty_tensors_move_nothing() {
    assert_eq!(
        movement(&s2d(2, DataFormat::Nhwc), &t(DType::F32, &[0, 2, 2, 1])),
        Movement::NoMovement
    );
}

/// Every op family over small shapes, element sizes and attributes: whatever the analysis
/// answers must be true of the kernel's output.
#[test]
fn every_answer_describes_the_kernel() {
    use DataFormat::*;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut seen = [0usize; 5];
    let mut count = |m: Movement| {
        seen[match m {
            Movement::NoMovement => 0,
            Movement::ContiguousCopy { .. } => 1,
            Movement::Permutation { .. } => 2,
            // BatchToSpaceND cropping to a pixel per batch reads the input with strides.
            Movement::StridedView { .. } => 3,
            _ => 4,
        }] += 1
    };
    for dtype in [DType::U8, DType::F16, DType::F32, DType::C128] {
        for b in [2u64, 3] {
            for (n, h, w, c) in [
                (1, 1, 1, 1),
                (1, 1, 1, 2),
                (2, 1, 3, 1),
                (1, 2, 2, 3),
                (2, 3, 1, 4),
            ] {
                let (hb, wb) = (h * b, w * b);
                let bi = b as i64;
                count(check_movement(
                    &s2d(bi, Nhwc),
                    &t(dtype, &[n, hb, wb, c]),
                    &mut rng,
                ));
                count(check_movement(
                    &s2d(bi, Nchw),
                    &t(dtype, &[n, c, hb, wb]),
                    &mut rng,
                ));
                let cb = c * b * b;
                for mode in [DepthToSpaceMode::Dcr, DepthToSpaceMode::Crd] {
                    count(check_movement(
                        &d2s(bi, Nchw, mode),
                        &t(dtype, &[n, cb, h, w]),
                        &mut rng,
                    ));
                }
                count(check_movement(
                    &d2s(bi, Nhwc, DepthToSpaceMode::Dcr),
                    &t(dtype, &[n, h, w, cb]),
                    &mut rng,
                ));
                let vect = [n, c, hb, wb, 4];
                count(check_movement(
                    &s2d(bi, NchwVectC),
                    &t(dtype, &vect),
                    &mut rng,
                ));
            }
        }
        for (block, pads, shape) in [
            (vec![2], vec![[0, 0]], vec![1, 4, 3]),
            (vec![1], vec![[1, 1]], vec![1, 2, 3]),
            (vec![1, 2], vec![[0, 0], [0, 0]], vec![2, 3, 4, 2]),
            (vec![2, 2], vec![[1, 1], [0, 2]], vec![1, 2, 2, 1]),
            (vec![3], vec![[1, 2]], vec![2, 3, 2, 2]),
        ] {
            let mut ty = t(dtype, &shape);
            let op = s2b(&block, &pads);
            count(check_movement(&op, &ty, &mut rng));
            // BatchToSpaceND with the paddings as crops undoes it.
            ty = op.output_type(&ty).unwrap();
            count(check_movement(&b2s(&block, &pads), &ty, &mut rng));
        }
    }
    // Every variant must have been met, or the grid does not test what it claims.
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
}

/// Loop kernels written by hand that look like a copy in some respect but are not one: the
/// analysis must not be fooled.
#[test]
fn near_misses_are_gathers() {
    let analysed = |text: &str| {
        let k = relayout::ir::parse_loop_kernel(text).unwrap();
        relayout::ir::verify_loop_kernel(&k).unwrap();
        relayout::analysis::movement(&k)
    };
    let gather = |text: &str| {
        let m = analysed(text);
        assert!(matches!(m, Movement::Gather { .. }), "{m:?} for\n{text}");
    };
    // The first half twice: equal offsets, but the source is read with stride 0. Not a view
    // of the input in order: a broadcast, which only a strided view describes.
    assert_eq!(
        analysed(
            "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {
  copy 16 bytes %dst[0 + 16 * i0] = %src[0 + 0 * i0]
      for i0 in 0 to 2
}"
        ),
        Movement::StridedView {
            offset: 0,
            shape: vec![2, 4],
            strides: vec![0, 1]
        }
    );
    // The output written whole and in order, but from bytes that straddle the input's
    // elements (6 bytes apart), which no view of whole elements describes.
    gather(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<4xf32>) {
  copy 4 bytes %dst[0 + 4 * i0] = %src[0 + 6 * i0]
      for i0 in 0 to 4
}",
    );
    // A fill after the copy wipes part of it.
    gather(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {
  copy 32 bytes %dst[0] = %src[0]
  fill 4 bytes %dst[4] = 0
}",
    );
    // Half of the output is never written: not a slice, whatever it holds.
    gather(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {
  copy 16 bytes %dst[0] = %src[0]
}",
    );
    // Every other element: equal strides, but not one contiguous block.
    gather(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {
  copy 4 bytes %dst[0 + 8 * i0] = %src[0 + 8 * i0]
      for i0 in 0 to 4
  fill 4 bytes %dst[4 + 8 * i0] = 0
      for i0 in 0 to 4
}",
    );
}

#[test]
fn a_fill_before_the_copy_is_overwritten() {
    let k = relayout::ir::parse_loop_kernel(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {
  fill 32 bytes %dst[0] = 0
  copy 16 bytes %dst[8] = %src[4]
}",
    )
    .unwrap();
    assert_eq!(
        relayout::analysis::movement(&k),
        Movement::ContiguousCopy {
            src_offset: 4,
            dst_offset: 8,
            bytes: 16
        }
    );
}

#[test]
fn an_identity_in_pieces_moves_nothing() {
    // Rows 0 and 2 in one statement, row 1 in another, and the last row shifted in a third.
    let k = relayout::ir::parse_loop_kernel(
        "loops @k(%src: tensor<4x3xf32>) -> (%dst: tensor<4x3xf32>) {
  copy 12 bytes %dst[0 + 24 * i0] = %src[0 + 24 * i0]
      for i0 in 0 to 2
  copy 12 bytes %dst[12] = %src[12]
  copy 8 bytes %dst[36 + 4 * i0] = %src[36 + 4 * i0]
      for i0 in 0 to 2
  copy 4 bytes %dst[44] = %src[44]
}",
    )
    .unwrap();
    assert_eq!(relayout::analysis::movement(&k), Movement::NoMovement);
    // The same pieces with one shifted by an element are no longer one block in order.
    let shifted = relayout::ir::parse_loop_kernel(
        "loops @k(%src: tensor<4x3xf32>) -> (%dst: tensor<4x3xf32>) {
  copy 12 bytes %dst[0 + 24 * i0] = %src[0 + 24 * i0]
      for i0 in 0 to 2
  copy 12 bytes %dst[12] = %src[16]
  copy 12 bytes %dst[36] = %src[36]
}",
    )
    .unwrap();
    assert!(matches!(
        relayout::analysis::movement(&shifted),
        Movement::Gather { .. }
    ));
}

/// The ops beyond the seeds are named for what they are: a Reshape is a view, a Transpose a
/// permutation, a Slice of whole rows and a zero Pad of whole rows contiguous copies; a Pad
/// with a non-zero constant is not (its padding is not zeros).
#[test]
fn the_ops_beyond_the_seeds_are_named() {
    let mut rng = Rng(7);
    let reshape = Op::Reshape {
        shape: vec![0, -1],
        allowzero: false,
    };
    assert_eq!(
        check_movement(&reshape, &t(DType::F32, &[2, 3, 4]), &mut rng),
        Movement::NoMovement
    );
    let transpose = Op::Transpose {
        perm: Some(vec![0, 2, 3, 1]),
    };
    assert_eq!(
        check_movement(&transpose, &t(DType::F32, &[2, 3, 4, 5]), &mut rng),
        Movement::Permutation {
            shape: vec![2, 3, 20],
            perm: vec![0, 2, 1],
        }
    );
    let rows = Op::Slice {
        starts: vec![1],
        ends: vec![3],
        axes: None,
        steps: None,
    };
    assert_eq!(
        check_movement(&rows, &t(DType::F32, &[4, 3, 2]), &mut rng),
        Movement::ContiguousCopy {
            src_offset: 24,
            dst_offset: 0,
            bytes: 48,
        }
    );
    let pad = |value: PadValue| Op::Pad {
        pads: vec![1, 0, 0, 0],
        mode: PadMode::Constant,
        constant_value: value,
        axes: None,
    };
    assert_eq!(
        check_movement(&pad(PadValue::ZERO), &t(DType::F32, &[2, 3]), &mut rng),
        Movement::ContiguousCopy {
            src_offset: 0,
            dst_offset: 12,
            bytes: 24,
        }
    );
    // A pad of ones is no zero-padded block: a gather with one fill, of ones, which its line
    // does not call a zero fill (the fill writes 12 bytes, the copy reads and writes 24).
    let ones = check_movement(
        &pad(PadValue::float(1.0)),
        &t(DType::F32, &[2, 3]),
        &mut rng,
    );
    assert!(
        matches!(
            ones,
            Movement::Gather {
                statements: 2,
                fills: 1,
                ..
            }
        ),
        "{ones:?}"
    );
    assert_eq!(
        ones.to_string(),
        "gather: 2 loop statements (1 fill), 60 bytes moved"
    );
}
