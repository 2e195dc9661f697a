//! Chains composed into one kernel against the same ops run one after another through the JIT, on random data;
//! identity chains that must simplify to nothing; and the chains that cannot be composed.

use relayout::ir::{DType, TensorType};
use relayout::{
    compile, compile_chain, compose_chain, ChainError, DataFormat, DepthToSpaceMode, Error,
    Movement, Op, PadMode, PadValue,
};

#[path = "support/ops.rs"]
mod ops;
use ops::{b2s, d2s, s2b, s2d, t, Rng};

/// The ops run one after another, each compiled on its own: the oracle.
fn run_one_by_one(ops: &[Op], input: &TensorType, src: &[u8]) -> (TensorType, Vec<u8>) {
    let (mut ty, mut data) = (input.clone(), src.to_vec());
    for op in ops {
        let kernel = compile(op, &ty).unwrap_or_else(|e| panic!("{op:?} on {ty}: {e}"));
        data = kernel.run_to_vec(&data).unwrap();
        ty = kernel.output_type().clone();
    }
    (ty, data)
}

/// A reflect Pad of every dim (`pads`: all begins, then all ends).
fn reflect_pad(pads: Vec<i64>) -> Op {
    Op::Pad {
        pads,
        mode: PadMode::Reflect,
        constant_value: PadValue::ZERO,
        axes: None,
    }
}

/// Composes `ops`, checks it against running them one by one on random data (on one thread and
/// on two), and returns the movement of the composed kernel.
fn check_chain(ops: &[Op], input: &TensorType, rng: &mut Rng) -> Movement {
    let fused = compile_chain(ops, input).unwrap_or_else(|e| panic!("{ops:?} on {input}: {e}"));
    let src = rng.bytes(input.size_bytes().unwrap() as usize);
    let (ty, want) = run_one_by_one(ops, input, &src);
    assert_eq!(fused.output_type(), &ty, "{ops:?} on {input}");
    assert_eq!(fused.input_type(), input);
    assert_eq!(fused.ops(), ops);
    let got = fused.run_to_vec(&src).unwrap();
    assert_eq!(
        got,
        want,
        "{ops:?} on {input}\ncomposed kernel:\n{}",
        fused.stages().lowered
    );
    for pieces in [2, 3, 7] {
        let mut threaded = rng.bytes(got.len());
        let report = fused
            .run_split(&src, &mut threaded, relayout::Split::Pieces(pieces))
            .unwrap();
        report
            .check_forced(pieces)
            .unwrap_or_else(|e| panic!("{ops:?} on {input}: {e}"));
        assert_eq!(threaded, want, "{ops:?} on {input}, {pieces} pieces");
    }
    fused.movement()
}

#[test]
fn space_to_batch_then_depth_to_space() {
    let mut rng = Rng(1);
    let ops = [
        s2b(&[2, 2], &[[1, 2], [1, 2]]),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    for dtype in [DType::F32, DType::U8, DType::C128] {
        check_chain(&ops, &t(dtype, &[2, 5, 5, 4]), &mut rng);
    }
    let unpadded = [
        s2b(&[2, 2], &[[0, 0], [0, 0]]),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    check_chain(&unpadded, &t(DType::F32, &[1, 4, 6, 8]), &mut rng);
}

#[test]
fn depth_to_space_then_space_to_depth_is_the_identity() {
    let mut rng = Rng(2);
    for (format, mode, shape) in [
        (DataFormat::Nhwc, DepthToSpaceMode::Dcr, [1, 2, 3, 8]),
        (DataFormat::Nchw, DepthToSpaceMode::Dcr, [2, 8, 3, 2]),
        (DataFormat::Nchw, DepthToSpaceMode::Crd, [1, 12, 2, 2]),
    ] {
        let ops = [d2s(2, format, mode), s2d(2, format)];
        let input = t(DType::F32, &shape);
        let m = check_chain(&ops, &input, &mut rng);
        // SpaceToDepth has DCR's channel order, so only DCR round-trips.
        if mode == DepthToSpaceMode::Dcr {
            assert_eq!(m, Movement::NoMovement, "{ops:?} on {input}");
        }
    }
}

#[test]
fn space_to_depth_then_depth_to_space_is_the_identity() {
    let mut rng = Rng(3);
    for (block, format, shape) in [
        (2, DataFormat::Nhwc, vec![1, 4, 6, 3]),
        (3, DataFormat::Nchw, vec![2, 2, 3, 6]),
        (2, DataFormat::NchwVectC, vec![1, 1, 2, 4, 4]),
    ] {
        let ops = [
            s2d(block, format),
            d2s(block, format, DepthToSpaceMode::Dcr),
        ];
        let m = check_chain(&ops, &t(DType::I16, &shape), &mut rng);
        assert_eq!(m, Movement::NoMovement, "{ops:?} on {shape:?}");
    }
}

#[test]
fn batch_to_space_undoes_space_to_batch_with_crops_equal_to_paddings() {
    let mut rng = Rng(4);
    for (block, pads, shape) in [
        (vec![2, 2], vec![[1, 2], [1, 2]], vec![2, 5, 5, 3]),
        (vec![3], vec![[2, 1]], vec![1, 6, 2]),
        (vec![2, 1], vec![[0, 2], [1, 0]], vec![3, 4, 3, 2]),
    ] {
        let ops = [s2b(&block, &pads), b2s(&block, &pads)];
        let m = check_chain(&ops, &t(DType::F64, &shape), &mut rng);
        assert_eq!(m, Movement::NoMovement, "{ops:?} on {shape:?}");
    }
}

#[test]
fn chains_of_three_with_padding() {
    let mut rng = Rng(5);
    let nhwc = DataFormat::Nhwc;
    let dcr = DepthToSpaceMode::Dcr;
    let cases: Vec<(Vec<Op>, TensorType)> = vec![
        (
            vec![
                s2b(&[2, 2], &[[1, 1], [0, 2]]),
                d2s(2, nhwc, dcr),
                s2d(2, nhwc),
            ],
            t(DType::F32, &[1, 4, 2, 4]),
        ),
        (
            // Padding twice: the second op reads the first one's zeros.
            vec![
                s2b(&[2], &[[1, 1]]),
                s2b(&[1, 2], &[[0, 1], [1, 1]]),
                b2s(&[2], &[[1, 0]]),
            ],
            t(DType::U16, &[1, 4, 2, 2]),
        ),
        (
            vec![
                d2s(2, DataFormat::Nchw, DepthToSpaceMode::Crd),
                s2d(3, DataFormat::Nchw),
                d2s(3, DataFormat::Nchw, dcr),
            ],
            t(DType::I8, &[1, 8, 3, 3]),
        ),
        (
            vec![
                Op::SpaceToBatch {
                    block_size: 2,
                    paddings: vec![vec![1, 3], vec![2, 0]],
                },
                s2d(2, nhwc),
                Op::BatchToSpace {
                    block_size: 2,
                    crops: vec![vec![1, 1], vec![0, 1]],
                },
            ],
            t(DType::F32, &[1, 4, 2, 1]),
        ),
    ];
    for (ops, input) in cases {
        check_chain(&ops, &input, &mut rng);
    }
}

#[test]
fn chains_that_produce_or_read_empty_tensors() {
    let mut rng = Rng(6);
    // The input is empty, the padding is not: the chain writes zeros only.
    let ops = [s2b(&[1, 1], &[[1, 1], [0, 0]]), s2d(2, DataFormat::Nhwc)];
    let fused = compile_chain(&ops, &t(DType::F32, &[1, 0, 2, 1])).unwrap();
    assert_eq!(fused.run_to_vec(&[]).unwrap(), vec![0u8; 16]);
    check_chain(&ops, &t(DType::F32, &[1, 0, 2, 1]), &mut rng);
    // Everything is empty.
    let ops = [
        s2d(2, DataFormat::Nhwc),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    assert_eq!(
        check_chain(&ops, &t(DType::F32, &[0, 2, 2, 1]), &mut rng),
        Movement::NoMovement
    );
}

/// Random chains of two or three copy ops, each valid for the type the previous one makes.
#[test]
fn random_chains_agree_with_running_the_ops_one_by_one() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut fused = 0;
    while fused < 60 {
        let input = t(
            [DType::U8, DType::F32, DType::C64][rng.below(3) as usize],
            &[
                1 + rng.below(2),
                2 * (1 + rng.below(2)),
                2 * (1 + rng.below(3)),
                4,
            ],
        );
        let mut ty = input.clone();
        let mut ops = Vec::new();
        for _ in 0..2 + rng.below(2) {
            let op = random_op(&mut rng);
            if let Ok(next) = op.output_type(&ty) {
                ty = next;
                ops.push(op);
            }
        }
        if ops.len() >= 2 {
            check_chain(&ops, &input, &mut rng);
            fused += 1;
        }
    }
}

/// An op on a 4-D NHWC tensor, with attributes that are often valid.
fn random_op(rng: &mut Rng) -> Op {
    let block = 2;
    let pad = |rng: &mut Rng| [rng.below(2) as i64, rng.below(2) as i64 * 2];
    match rng.below(4) {
        0 => s2d(block, DataFormat::Nhwc),
        1 => d2s(block, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
        2 => {
            let (a, b) = (pad(rng), pad(rng));
            // Padded sizes must divide by the block: pad by an even total.
            let fix = |p: [i64; 2]| {
                if (p[0] + p[1]) % 2 == 0 {
                    p
                } else {
                    [p[0], p[1] + 1]
                }
            };
            s2b(&[2, 2], &[fix(a), fix(b)])
        }
        _ => b2s(&[2, 1], &[[rng.below(2) as i64, 0], [0, 0]]),
    }
}

#[test]
fn one_op_is_the_op_itself() {
    let mut rng = Rng(7);
    let op = s2b(&[2, 2], &[[1, 2], [1, 2]]);
    let input = t(DType::F32, &[2, 5, 5, 3]);
    check_chain(std::slice::from_ref(&op), &input, &mut rng);
    let fused = compile_chain(std::slice::from_ref(&op), &input).unwrap();
    let single = compile(&op, &input).unwrap();
    assert_eq!(fused.stages().loops, single.stages().loops);
    assert_eq!(fused.movement(), single.movement());
}

#[test]
fn composing_saves_the_intermediate_traffic() {
    let ops = [
        s2b(&[2, 2], &[[0, 0], [0, 0]]),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    let input = t(DType::F32, &[1, 4, 6, 8]);
    let fused = compile_chain(&ops, &input).unwrap();
    let mut ty = input.clone();
    let mut one_by_one = 0;
    for op in &ops {
        let k = compile(op, &ty).unwrap();
        one_by_one += k.bytes_moved();
        ty = k.output_type().clone();
    }
    let size = input.size_bytes().unwrap();
    assert_eq!(one_by_one, 4 * size);
    assert_eq!(fused.bytes_moved(), 2 * size);
}

#[test]
fn col2im_is_refused_wherever_it_is() {
    let col2im = Op::Col2Im {
        image_shape: vec![4, 4],
        block_shape: vec![2, 2],
        dilations: vec![1, 1],
        pads: vec![0, 0, 0, 0],
        strides: vec![2, 2],
    };
    let input = t(DType::F32, &[1, 4, 4]);
    let before = [s2b(&[1], &[[0, 0]]), col2im.clone()];
    for (ops, index) in [(vec![col2im.clone()], 0), (before.to_vec(), 1)] {
        match compile_chain(&ops, &input) {
            Err(Error::Chain(ChainError::NotComposable {
                index: i,
                op,
                reason,
            })) => {
                assert_eq!((i, op), (index, "Col2Im"));
                assert!(reason.contains("scatter-add"), "{reason}");
            }
            other => panic!("expected NotComposable, got {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn invalid_ops_and_empty_chains_are_errors() {
    assert!(matches!(
        compose_chain(&[], &t(DType::F32, &[1])),
        Err(ChainError::EmptyChain)
    ));
    // The second op gets 1 channel, which 4 does not divide.
    let ops = [
        s2d(2, DataFormat::Nhwc),
        d2s(4, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    let err = compile_chain(&ops, &t(DType::F32, &[1, 2, 2, 1])).unwrap_err();
    assert!(
        matches!(err, Error::Chain(ChainError::Op { index: 1, .. })),
        "{err}"
    );
    assert_eq!(err.category(), Some("not_divisible"), "{err}");
    assert!(err.to_string().contains("tensor<1x1x1x4xf32>"), "{err}");
}

/// The names chains had before "fusion" came to mean only loop fusion still compile, as
/// deprecated aliases of the new ones.
#[test]
#[allow(deprecated)]
fn the_old_chain_names_still_work() {
    let ops = [s2d(2, DataFormat::Nhwc)];
    let input = t(DType::F32, &[1, 2, 2, 1]);
    let old: relayout::FusedOp = compile_chain(&ops, &input).unwrap();
    assert_eq!(
        relayout::fuse_chain(&ops, &input).unwrap(),
        compose_chain(&ops, &input).unwrap()
    );
    assert_eq!(old.output_type(), &t(DType::F32, &[1, 1, 1, 4]));
    let err: relayout::FuseError = relayout::fuse_chain(&[], &input).unwrap_err();
    assert!(matches!(err, ChainError::EmptyChain));
}

#[test]
fn the_composed_kernel_prints_and_parses_back() {
    let ops = [
        s2b(&[2, 2], &[[1, 2], [1, 2]]),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
    ];
    let kernel = compose_chain(&ops, &t(DType::F32, &[2, 5, 5, 4])).unwrap();
    assert_eq!(kernel.name, "space_to_batch_nd_then_depth_to_space");
    let text = kernel.to_string();
    assert_eq!(relayout::ir::parse_kernel(&text).unwrap(), kernel);
}

/// SpaceToBatchND's guarded index ends up inside BatchToSpaceND's `floordiv`, which
/// `canonicalize` rewrites: the composed kernel must still be proven in bounds after every pass.
#[test]
fn a_guarded_index_inside_a_floordiv_still_verifies() {
    let mut rng = Rng(8);
    let ops = [
        b2s(&[2, 1], &[[0, 0], [0, 0]]),
        s2b(&[2, 2], &[[1, 1], [1, 3]]),
    ];
    check_chain(&ops, &t(DType::C64, &[2, 4, 6, 4]), &mut rng);
}

/// Padding, two transposes and a crop that cancel out: nothing moves, and one read and one
/// write of the tensor remain if the kernel is run anyway.
#[test]
fn a_round_trip_through_four_ops_moves_nothing() {
    let mut rng = Rng(9);
    let pads = [[1, 1], [1, 1]];
    let ops = [
        s2b(&[2, 2], &pads),
        s2d(2, DataFormat::Nhwc),
        d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr),
        b2s(&[2, 2], &pads),
    ];
    let input = t(DType::F32, &[1, 6, 6, 2]);
    assert_eq!(check_chain(&ops, &input, &mut rng), Movement::NoMovement);
    let fused = compile_chain(&ops, &input).unwrap();
    assert_eq!(fused.bytes_moved(), 2 * input.size_bytes().unwrap());
}
/// Each op's map uses a dim several times, so composing without simplifying would grow the
/// maps exponentially with the chain's length; long chains must stay small.
#[test]
fn long_chains_stay_small() {
    let mut rng = Rng(10);
    let mut ops = Vec::new();
    for _ in 0..32 {
        ops.push(d2s(2, DataFormat::Nhwc, DepthToSpaceMode::Dcr));
        ops.push(s2d(2, DataFormat::Nhwc));
    }
    let fused = compile_chain(&ops, &t(DType::F32, &[1, 4, 4, 16])).unwrap();
    assert_eq!(fused.movement(), Movement::NoMovement);
    assert!(fused.stages().lowered.to_string().len() < 2000);

    let input = t(DType::U8, &[1, 4, 4, 4]);
    let mut ty = input.clone();
    let mut ops = Vec::new();
    for _ in 0..10_000 {
        if ops.len() == 16 {
            break;
        }
        let op = random_op(&mut rng);
        match op.output_type(&ty) {
            Ok(next) if next.num_elements().unwrap() <= 1 << 12 => {
                ty = next;
                ops.push(op);
            }
            _ => {}
        }
    }
    assert!(ops.len() >= 8, "only {} ops chained", ops.len());
    check_chain(&ops, &input, &mut rng);
}

fn transpose(perm: &[i64]) -> Op {
    Op::Transpose {
        perm: Some(perm.to_vec()),
    }
}

fn reshape(shape: &[i64]) -> Op {
    Op::Reshape {
        shape: shape.to_vec(),
        allowzero: false,
    }
}

/// The chains ONNX exporters emit around DepthToSpace: NHWC -> NCHW, DepthToSpace (CRD),
/// NCHW -> NHWC; and DepthToSpace spelt as Reshape -> Transpose -> Reshape. Both fuse into
/// one kernel equal to running the ops one by one, and the second is named a permutation.
#[test]
fn chains_of_transposes_and_reshapes_around_depth_to_space() {
    let mut rng = Rng(11);
    let crd = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Crd,
    };
    let chain = [transpose(&[0, 3, 1, 2]), crd, transpose(&[0, 2, 3, 1])];
    let m = check_chain(&chain, &t(DType::F32, &[2, 5, 6, 8]), &mut rng);
    assert!(matches!(m, Movement::Permutation { .. }), "{m:?}");
    // DepthToSpace DCR of [1, 8, 3, 5] NCHW with block 2, as ONNX's function body spells it:
    // reshape to [N, b, b, C, H, W], transpose [0, 3, 4, 1, 5, 2], reshape to [N, C, Hb, Wb].
    let spelt = [
        reshape(&[1, 2, 2, 2, 3, 5]),
        transpose(&[0, 3, 4, 1, 5, 2]),
        reshape(&[1, 2, 6, 10]),
    ];
    let input = t(DType::F32, &[1, 8, 3, 5]);
    check_chain(&spelt, &input, &mut rng);
    let d2s = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Dcr,
    };
    let src = rng.bytes(input.size_bytes().unwrap() as usize);
    let fused = compile_chain(&spelt, &input).unwrap();
    assert_eq!(
        fused.run_to_vec(&src).unwrap(),
        compile(&d2s, &input).unwrap().run_to_vec(&src).unwrap()
    );
    assert_eq!(fused.movement(), compile(&d2s, &input).unwrap().movement());
}

/// Slices, Tiles and Transposes compose with the seed ops' gathers.
#[test]
fn slices_tiles_and_transposes_compose_with_the_seed_ops() {
    let mut rng = Rng(12);
    let slice = Op::Slice {
        starts: vec![-1, 1],
        ends: vec![i64::MIN, 9],
        axes: Some(vec![1, 2]),
        steps: Some(vec![-1, 2]),
    };
    let chain = [
        slice,
        Op::Tile {
            repeats: vec![1, 2, 1, 1],
        },
        transpose(&[0, 3, 1, 2]),
        s2d(2, DataFormat::Nchw),
    ];
    check_chain(&chain, &t(DType::I16, &[2, 4, 9, 3]), &mut rng);
}

/// Pads of every mode compose with Slices and Transposes on either side: the composed
/// kernel reads each piece of the Pad where the next op reads it, and only there.
#[test]
fn pads_of_every_mode_compose_with_slices_and_transposes() {
    let mut rng = Rng(13);
    let pad = |mode: PadMode, value: PadValue| Op::Pad {
        pads: vec![0, 2, -1, 0, 1, 3],
        mode,
        constant_value: value,
        axes: None,
    };
    let slice = Op::Slice {
        starts: vec![1, -3],
        ends: vec![i64::MAX, 0],
        axes: Some(vec![1, 2]),
        steps: Some(vec![1, -1]),
    };
    let modes = [
        (PadMode::Constant, PadValue::ZERO),
        (PadMode::Constant, PadValue::float(1.5)),
        (PadMode::Edge, PadValue::ZERO),
        (PadMode::Reflect, PadValue::ZERO),
        (PadMode::Wrap, PadValue::ZERO),
    ];
    for (mode, value) in modes {
        let input = t(DType::F32, &[2, 4, 6]);
        check_chain(&[pad(mode, value), slice.clone()], &input, &mut rng);
        check_chain(
            &[slice.clone(), pad(mode, value), transpose(&[2, 0, 1])],
            &t(DType::F16, &[3, 5, 9]),
            &mut rng,
        );
        // A Pad of a Pad: the second one's borders read the first one's borders.
        check_chain(&[pad(mode, value), pad(mode, value)], &input, &mut rng);
    }
    // A Slice of the middle of a reflect Pad is the plain copy it reads.
    let middle = Op::Slice {
        starts: vec![1],
        ends: vec![7],
        axes: Some(vec![2]),
        steps: None,
    };
    let input = t(DType::F32, &[2, 4, 6]);
    let reflect = reflect_pad(vec![0, 0, 1, 0, 0, 1]);
    let ops = [reflect, middle];
    let fused = compile_chain(&ops, &input).unwrap();
    assert_eq!(
        fused.stages().lowered.stmts.len(),
        1,
        "{}",
        fused.stages().lowered
    );
    check_chain(&ops, &input, &mut rng);
}

/// Reflect Pads of all four dims, one after the other: 81 pieces read 81 pieces, and the
/// composed kernel keeps only the pairs that can apply (or the chain is refused as too large,
/// never wrong).
#[test]
fn a_reflect_pad_of_a_reflect_pad_in_four_dims() {
    let mut rng = Rng(15);
    let pad = reflect_pad(vec![1, 2, 1, 1, 2, 1, 1, 2]);
    let input = t(DType::F32, &[4, 3, 4, 5]);
    let ops = [pad.clone(), pad];
    match compile_chain(&ops, &input) {
        Ok(fused) => {
            assert!(fused.stages().lowered.stmts.len() <= 256);
            check_chain(&ops, &input, &mut rng);
        }
        Err(Error::Chain(ChainError::TooLarge {
            index: 1,
            statements,
            limit,
            ..
        })) => assert!(statements > limit),
        Err(other) => panic!("{other}"),
    }
}

/// A chain too large to compose is refused with the op where it may be split, and the two
/// parts compose: three reflect Pads of four dims (81 pieces each) split after the second or
/// the first, and running the parts one after the other gives the ops' result.
#[test]
fn a_chain_too_large_names_where_to_split_it() {
    let mut rng = Rng(16);
    let pad = reflect_pad(vec![1, 1, 1, 1, 1, 1, 1, 1]);
    let input = t(DType::F32, &[3, 4, 5, 6]);
    let ops = [pad.clone(), pad.clone(), pad];
    let (index, statements, limit) = match compile_chain(&ops, &input) {
        Err(Error::Chain(ChainError::TooLarge {
            index,
            op,
            statements,
            limit,
        })) => {
            assert_eq!(op, "Pad");
            (index, statements, limit)
        }
        other => panic!("expected TooLarge, got {:?}", other.map(|_| ())),
    };
    assert!(
        (1..3).contains(&index) && statements > limit,
        "{index} {statements} {limit}"
    );
    let message = compile_chain(&ops, &input).err().unwrap().to_string();
    assert!(
        message.contains(&format!("(ops[..{index}] and ops[{index}..])")),
        "{message}"
    );
    // The front composes; the rest starts from the front's output type.
    let front = compile_chain(&ops[..index], &input).unwrap();
    let middle = front.output_type().clone();
    let src = rng.bytes(input.size_bytes().unwrap() as usize);
    let mid = front.run_to_vec(&src).unwrap();
    let got = match compile_chain(&ops[index..], &middle) {
        Ok(rest) => rest.run_to_vec(&mid).unwrap(),
        // The rest may be too large again: split once more, one op at a time.
        Err(Error::Chain(ChainError::TooLarge { .. })) => {
            run_one_by_one(&ops[index..], &middle, &mid).1
        }
        Err(e) => panic!("{e}"),
    };
    let (_, want) = run_one_by_one(&ops, &input, &src);
    assert_eq!(got, want);
}

/// Im2Col may end a chain (lowered as on its own, a scatter of blocks) and feed one (lowered
/// as a gather): PyTorch's `unfold(x).transpose(1, 2)`, the columns of a convolution as rows,
/// is one kernel, padded or not, in 1-D to 3-D, and so is a Reshape of the columns.
#[test]
fn im2col_ends_and_feeds_chains() {
    let mut rng = Rng(14);
    let im2col =
        |block: Vec<i64>, dilations: Vec<i64>, pads: Vec<i64>, strides: Vec<i64>| Op::Im2Col {
            block_shape: block,
            dilations: Some(dilations),
            pads: Some(pads),
            strides: Some(strides),
        };
    let padded = im2col(vec![2, 3], vec![1, 2], vec![1, 0, 0, 2], vec![1, 2]);
    let input = t(DType::F32, &[2, 5, 6, 3]);
    check_chain(
        &[transpose(&[0, 3, 1, 2]), padded.clone()],
        &input,
        &mut rng,
    );
    let nchw = t(DType::F32, &[2, 3, 5, 6]);
    check_chain(&[padded.clone(), transpose(&[0, 2, 1])], &nchw, &mut rng);
    let unpadded = im2col(vec![3, 3], vec![1, 1], vec![0, 0, 0, 0], vec![1, 1]);
    for dtype in [DType::U8, DType::F64] {
        check_chain(
            &[unpadded.clone(), transpose(&[0, 2, 1])],
            &t(dtype, &[1, 2, 5, 4]),
            &mut rng,
        );
    }
    let reshape = Op::Reshape {
        shape: vec![-1],
        allowzero: false,
    };
    check_chain(&[padded, reshape], &nchw, &mut rng);
    let one_d = im2col(vec![3], vec![2], vec![2, 1], vec![2]);
    let three_d = im2col(
        vec![2, 1, 2],
        vec![1, 1, 2],
        vec![1, 0, 0, 0, 1, 1],
        vec![1, 2, 1],
    );
    check_chain(
        &[one_d, transpose(&[2, 0, 1])],
        &t(DType::I16, &[2, 3, 7]),
        &mut rng,
    );
    check_chain(
        &[three_d, transpose(&[0, 2, 1])],
        &t(DType::F32, &[1, 2, 3, 4, 3]),
        &mut rng,
    );
}

/// Random chains of the ops around the seeds (Transpose, Pad in every mode, Slice, Tile,
/// Reshape) with DepthToSpace and SpaceToDepth, sometimes ended by an Im2Col, against
/// running the ops one by one.
#[test]
fn random_chains_of_every_composable_op_agree_with_running_them_one_by_one() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut fused = 0;
    let mut tried = 0;
    while fused < 80 {
        tried += 1;
        assert!(tried < 10_000, "too few valid random chains");
        let input = t(
            [DType::U8, DType::F32, DType::C64, DType::F16][rng.below(4) as usize],
            &[
                1 + rng.below(2),
                2 * (1 + rng.below(2)),
                2 + rng.below(4),
                2 + rng.below(4),
            ],
        );
        let mut ty = input.clone();
        let mut ops = Vec::new();
        for _ in 0..2 + rng.below(3) {
            let op = random_beyond_op(&mut rng, ty.rank());
            if let Ok(next) = op.output_type(&ty) {
                ty = next;
                ops.push(op);
            }
        }
        if ty.rank() == 4 && rng.below(4) == 0 {
            let im2col = Op::Im2Col {
                block_shape: vec![2, 1 + rng.below(2) as i64],
                dilations: None,
                pads: Some(vec![rng.below(2) as i64, 0, 1, rng.below(2) as i64]),
                strides: Some(vec![1 + rng.below(2) as i64, 1]),
            };
            if im2col.output_type(&ty).is_ok() {
                ops.push(im2col);
            }
        }
        if ops.len() >= 2 {
            check_chain(&ops, &input, &mut rng);
            fused += 1;
        }
    }
}

/// An op for a tensor of `rank` dims, with attributes that are often valid for small shapes.
fn random_beyond_op(rng: &mut Rng, rank: usize) -> Op {
    let small = |rng: &mut Rng| rng.below(3) as i64 - 1;
    match rng.below(7) {
        0 => {
            let mut perm: Vec<i64> = (0..rank as i64).collect();
            for i in (1..perm.len()).rev() {
                perm.swap(i, rng.below(i as u64 + 1) as usize);
            }
            transpose(&perm)
        }
        1 | 2 => {
            let (mode, value) = match rng.below(5) {
                0 => (PadMode::Constant, PadValue::ZERO),
                1 => (PadMode::Constant, PadValue::float(-2.5)),
                2 => (PadMode::Edge, PadValue::ZERO),
                3 => (PadMode::Reflect, PadValue::ZERO),
                _ => (PadMode::Wrap, PadValue::ZERO),
            };
            Op::Pad {
                pads: (0..2 * rank).map(|_| small(rng)).collect(),
                mode,
                constant_value: value,
                axes: None,
            }
        }
        3 => {
            let axis = rng.below(rank as u64) as i64;
            let step = [1, 2, -1, -2][rng.below(4) as usize];
            let (start, end) = if step > 0 {
                (rng.below(2) as i64, i64::MAX)
            } else {
                (-1 - rng.below(2) as i64, i64::MIN)
            };
            Op::Slice {
                starts: vec![start],
                ends: vec![end],
                axes: Some(vec![axis]),
                steps: Some(vec![step]),
            }
        }
        4 => Op::Tile {
            repeats: (0..rank).map(|_| 1 + rng.below(2) as i64).collect(),
        },
        5 => {
            // Merge the last two dims, then split them back (when the rank allows).
            if rank >= 2 && rng.below(2) == 0 {
                let mut shape = vec![0; rank - 1];
                shape[rank - 2] = -1;
                reshape(&shape)
            } else {
                reshape(&(0..rank).map(|_| 0).collect::<Vec<_>>())
            }
        }
        _ => {
            if rng.below(2) == 0 {
                s2d(2, DataFormat::Nchw)
            } else {
                d2s(2, DataFormat::Nchw, DepthToSpaceMode::Crd)
            }
        }
    }
}

/// A composed chain runs on element slices over threads like on bytes on one thread, and
/// refuses elements of the wrong size.
#[test]
fn composed_chains_run_typed_over_threads() {
    let ops = [
        d2s(2, DataFormat::Nchw, DepthToSpaceMode::Crd),
        s2d(2, DataFormat::Nchw),
    ];
    let fused = compile_chain(&ops, &t(DType::F32, &[1, 12, 64, 64])).unwrap();
    let src: Vec<f32> = (0..12 * 64 * 64).map(|i| i as f32).collect();
    let bytes: Vec<u8> = src.iter().flat_map(|v| v.to_le_bytes()).collect();
    let want = fused.run_to_vec(&bytes).unwrap();
    for threads in [1, 2, 7] {
        let mut got = vec![0f32; src.len()];
        fused.run_threaded_typed(&src, &mut got, threads).unwrap();
        let got: Vec<u8> = got.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert!(got == want, "{threads} threads");
    }
    let mut wrong = vec![0u16; 2 * src.len()];
    assert!(fused
        .run_threaded_typed(&vec![0u16; 2 * src.len()], &mut wrong, 2)
        .is_err());
}

/// Random chains of two or three ops drawn from every copy op (Transpose, Pad in its four
/// modes with negative pads too, Slice with negative indices and steps, Tile, Reshape, and
/// SpaceToDepth / DepthToSpace in both layouts), each valid for the type the previous one
/// makes, over several element types: the composed kernel gives what running the ops one by one
/// gives, on one thread and in pieces, and its movement analysis answers.
#[test]
fn random_chains_of_every_copy_op_agree_with_running_the_ops_one_by_one() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut checked, mut with_new_ops) = (0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    while checked < 150 {
        let dtype =
            [DType::U8, DType::F32, DType::I16, DType::F16, DType::C64][rng.below(5) as usize];
        let shape: Vec<u64> = (0..2 + rng.below(3)).map(|_| 1 + rng.below(4)).collect();
        let input = t(dtype, &shape);
        let mut ty = input.clone();
        let mut ops = Vec::new();
        let length = 2 + rng.below(2) as usize;
        for _ in 0..40 {
            if ops.len() == length {
                break;
            }
            let op = any_copy_op(&mut rng, &ty.shape);
            // Keep outputs small: the oracle runs every op on its own.
            if let Ok(next) = op.output_type(&ty) {
                if next.num_elements().is_ok_and(|n| (1..=4096).contains(&n)) {
                    ty = next;
                    ops.push(op);
                }
            }
        }
        if ops.len() < 2 {
            continue;
        }
        check_chain(&ops, &input, &mut rng);
        checked += 1;
        for op in &ops {
            kinds.insert(op.name());
        }
        with_new_ops += usize::from(ops.iter().any(|op| {
            matches!(
                op,
                Op::Transpose { .. }
                    | Op::Pad { .. }
                    | Op::Slice { .. }
                    | Op::Tile { .. }
                    | Op::Reshape { .. }
            )
        }));
    }
    assert!(
        with_new_ops >= 100,
        "only {with_new_ops} chains with the new ops"
    );
    assert!(kinds.len() >= 7, "only {kinds:?} made it into a chain");
}

/// A copy op for an input of `shape`, with attributes that are often valid for it.
fn any_copy_op(rng: &mut Rng, shape: &[u64]) -> Op {
    let rank = shape.len();
    let small = |rng: &mut Rng, lo: i64, hi: i64| lo + rng.below((hi - lo + 1) as u64) as i64;
    match rng.below(8) {
        0 => {
            // A random permutation.
            let mut perm: Vec<i64> = (0..rank as i64).collect();
            for i in (1..rank).rev() {
                perm.swap(i, rng.below(i as u64 + 1) as usize);
            }
            Op::Transpose {
                perm: if rng.below(5) == 0 { None } else { Some(perm) },
            }
        }
        1 => {
            let mode = [
                PadMode::Constant,
                PadMode::Reflect,
                PadMode::Edge,
                PadMode::Wrap,
            ][rng.below(4) as usize];
            let pads = (0..2 * rank).map(|_| small(rng, -1, 2)).collect();
            Op::Pad {
                pads,
                mode,
                constant_value: PadValue::Int(small(rng, 0, 3) as i128),
                axes: None,
            }
        }
        2 => {
            let axis = rng.below(rank as u64) as i64;
            let step = [1, 2, -1, -2, 3][rng.below(5) as usize];
            Op::Slice {
                starts: vec![small(rng, -4, 4)],
                ends: vec![[small(rng, -4, 5), i64::MAX, i64::MIN][rng.below(3) as usize]],
                axes: Some(vec![if rng.below(2) == 0 {
                    axis
                } else {
                    axis - rank as i64
                }]),
                steps: Some(vec![step]),
            }
        }
        3 => Op::Tile {
            repeats: (0..rank).map(|_| small(rng, 1, 2)).collect(),
        },
        4 => {
            let shape = match rng.below(3) {
                0 => vec![-1],
                1 => vec![shape[0] as i64, -1],
                _ => std::iter::once(1)
                    .chain(shape.iter().map(|&d| d as i64))
                    .collect(),
            };
            Op::Reshape {
                shape,
                allowzero: false,
            }
        }
        5 => s2d(
            2,
            [DataFormat::Nhwc, DataFormat::Nchw][rng.below(2) as usize],
        ),
        6 => d2s(
            2,
            [DataFormat::Nhwc, DataFormat::Nchw][rng.below(2) as usize],
            [DepthToSpaceMode::Dcr, DepthToSpaceMode::Crd][rng.below(2) as usize],
        ),
        _ => {
            // A Pad of chosen axes only.
            let axis = rng.below(rank as u64) as i64;
            Op::Pad {
                pads: vec![small(rng, -1, 2), small(rng, 0, 2)],
                mode: PadMode::Reflect,
                constant_value: PadValue::Int(0),
                axes: Some(vec![axis]),
            }
        }
    }
}
