//! Execution tests on random ops and shapes: the JIT (one thread and two), the interpreter on
//! the lowered IR, the interpreter on the final loop IR, and the direct reference
//! implementation must all produce the same bytes.

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::{image_shape, random_bytes};
use proptest::prelude::*;
use relayout::ir::{interpret, interpret_loops, DType, TensorType};
use relayout::{compile, DataFormat, DepthToSpaceMode, Op, PadMode, PadValue, Split};

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

fn data_format() -> impl Strategy<Value = DataFormat> {
    prop::sample::select(vec![
        DataFormat::Nhwc,
        DataFormat::Nchw,
        DataFormat::NchwVectC,
    ])
}

fn space_to_depth() -> impl Strategy<Value = (Op, TensorType)> {
    (
        2i64..=4,
        data_format(),
        1u64..=2,
        1u64..=3,
        1u64..=3,
        1u64..=5,
        dtype(),
    )
        .prop_map(|(b, format, n, oh, ow, c, dtype)| {
            let c = if format == DataFormat::NchwVectC {
                4 * c.div_ceil(2)
            } else {
                c
            };
            let bu = b as u64;
            (
                Op::SpaceToDepth {
                    block_size: b,
                    data_format: format,
                },
                TensorType::new(dtype, image_shape(format, n, oh * bu, ow * bu, c)),
            )
        })
}

fn depth_to_space() -> impl Strategy<Value = (Op, TensorType)> {
    (
        2i64..=3,
        data_format(),
        any::<bool>(),
        1u64..=2,
        1u64..=3,
        1u64..=3,
        1u64..=3,
        dtype(),
    )
        .prop_map(|(b, format, crd, n, h, w, k, dtype)| {
            let bb = (b * b) as u64;
            // NCHW_VECT_C needs C / 4 divisible by b * b.
            let c = if format == DataFormat::NchwVectC {
                4 * bb * k
            } else {
                bb * k
            };
            let mode = if crd && format == DataFormat::Nchw {
                DepthToSpaceMode::Crd
            } else {
                DepthToSpaceMode::Dcr
            };
            (
                Op::DepthToSpace {
                    block_size: b,
                    data_format: format,
                    mode,
                },
                TensorType::new(dtype, image_shape(format, n, h, w, c)),
            )
        })
}

fn space_to_batch_nd() -> impl Strategy<Value = (Op, TensorType)> {
    (1usize..=3, 1u64..=2, 0usize..=2, dtype())
        .prop_flat_map(|(m, batch, rest, dtype)| {
            let spatial = prop::collection::vec((1i64..=3, 1i64..=3, 0i64..=3, 0i64..=3), m);
            let rest_dims = prop::collection::vec(1u64..=3, rest);
            (Just(batch), spatial, rest_dims, Just(dtype))
        })
        .prop_filter_map(
            "padded size must leave at least one element",
            |(batch, spatial, rest, dtype)| {
                let mut shape = vec![batch];
                let (mut block_shape, mut paddings) = (Vec::new(), Vec::new());
                for (block, blocks, pad_begin, pad_end) in spatial {
                    let size = block * blocks - pad_begin - pad_end;
                    if size < 1 {
                        return None;
                    }
                    shape.push(size as u64);
                    block_shape.push(block);
                    paddings.push(vec![pad_begin, pad_end]);
                }
                shape.extend(rest);
                Some((
                    Op::SpaceToBatchNd {
                        block_shape,
                        paddings,
                    },
                    TensorType::new(dtype, shape),
                ))
            },
        )
}

fn batch_to_space_nd() -> impl Strategy<Value = (Op, TensorType)> {
    (1usize..=3, 1u64..=2, 0usize..=2, dtype())
        .prop_flat_map(|(m, batch, rest, dtype)| {
            let spatial = prop::collection::vec((1i64..=3, 1u64..=3, 0i64..=2, 0i64..=2), m);
            let rest_dims = prop::collection::vec(1u64..=3, rest);
            (Just(batch), spatial, rest_dims, Just(dtype))
        })
        .prop_filter_map("crops must fit", |(batch, spatial, rest, dtype)| {
            let prod: i64 = spatial.iter().map(|s| s.0).product();
            let mut shape = vec![batch * prod as u64];
            let (mut block_shape, mut crops) = (Vec::new(), Vec::new());
            for (block, size, crop_begin, crop_end) in spatial {
                if crop_begin + crop_end > block * size as i64 {
                    return None;
                }
                shape.push(size);
                block_shape.push(block);
                crops.push(vec![crop_begin, crop_end]);
            }
            shape.extend(rest);
            Some((
                Op::BatchToSpaceNd { block_shape, crops },
                TensorType::new(dtype, shape),
            ))
        })
}

fn col2im() -> impl Strategy<Value = (Op, TensorType)> {
    // Integer element types only: sums are exact whatever the summation order.
    col2im_of(vec![DType::I32, DType::U8, DType::I64, DType::U16], 2..=6)
}

/// Random Col2Ims of 2 or 3 spatial dims, with strides, dilations and pads, of `dtypes`, the
/// last image dim in `width` (the others 2 to 6).
fn col2im_of(
    dtypes: Vec<DType>,
    width: std::ops::RangeInclusive<i64>,
) -> impl Strategy<Value = (Op, TensorType)> {
    (2usize..=3, 1u64..=2, 1u64..=2, prop::sample::select(dtypes))
        .prop_flat_map(move |(m, n, c, dtype)| {
            let dim = |img: std::ops::RangeInclusive<i64>| {
                (img, 1i64..=3, 1i64..=2, 1i64..=2, 0i64..=1, 0i64..=1)
            };
            let dims = (prop::collection::vec(dim(2..=6), m - 1), dim(width.clone())).prop_map(
                |(mut dims, last)| {
                    dims.push(last);
                    dims
                },
            );
            (Just(n), Just(c), dims, Just(dtype))
        })
        .prop_filter_map(
            "the dilated kernel must fit the padded image",
            |(n, c, dims, dtype)| {
                let (mut image, mut block, mut strides, mut dilations, mut begins, mut ends) =
                    (vec![], vec![], vec![], vec![], vec![], vec![]);
                let mut blocks = 1i64;
                for (img, k, s, d, pb, pe) in dims {
                    let span = d * (k - 1) + 1;
                    if span > img + pb + pe {
                        return None;
                    }
                    blocks *= (img + pb + pe - span) / s + 1;
                    image.push(img);
                    block.push(k);
                    strides.push(s);
                    dilations.push(d);
                    begins.push(pb);
                    ends.push(pe);
                }
                let k: i64 = block.iter().product();
                begins.extend(ends);
                let input = TensorType::new(dtype, [n, c * k as u64, blocks as u64]);
                Some((
                    Op::Col2Im {
                        image_shape: image,
                        block_shape: block,
                        dilations,
                        pads: begins,
                        strides,
                    },
                    input,
                ))
            },
        )
}

/// Keeps the ops that validate on their input (the generators below draw attributes loosely
/// and let validation pick the valid ones, so that boundary values are reached).
fn valid((op, input): (Op, TensorType)) -> Option<(Op, TensorType)> {
    op.output_type(&input).ok().map(|_| (op, input))
}

fn shape(
    rank: std::ops::RangeInclusive<usize>,
    dim: std::ops::RangeInclusive<u64>,
) -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(dim, rank)
}

fn transpose() -> impl Strategy<Value = (Op, TensorType)> {
    (shape(1..=5, 1..=4), dtype(), any::<bool>())
        .prop_flat_map(|(dims, dtype, default)| {
            let perm = Just((0..dims.len() as i64).collect::<Vec<_>>()).prop_shuffle();
            (Just(dims), Just(dtype), Just(default), perm)
        })
        .prop_map(|(dims, dtype, default, perm)| {
            let perm = (!default).then_some(perm);
            (Op::Transpose { perm }, TensorType::new(dtype, dims))
        })
}

fn pad() -> impl Strategy<Value = (Op, TensorType)> {
    let mode = prop::sample::select(vec![
        PadMode::Constant,
        PadMode::Reflect,
        PadMode::Edge,
        PadMode::Wrap,
    ]);
    (shape(1..=3, 1..=5), dtype(), mode, -2i128..=2)
        .prop_flat_map(|(dims, dtype, mode, value)| {
            let pads = prop::collection::vec(-2i64..=3, 2 * dims.len());
            (Just(dims), Just(dtype), Just(mode), Just(value), pads)
        })
        .prop_filter_map("valid pads", |(dims, dtype, mode, value, pads)| {
            valid((
                Op::Pad {
                    pads,
                    mode,
                    constant_value: PadValue::Int(value),
                    axes: None,
                },
                TensorType::new(dtype, dims),
            ))
        })
}

fn slice() -> impl Strategy<Value = (Op, TensorType)> {
    let bound = prop_oneof![-8i64..=8, Just(i64::MIN), Just(i64::MAX)];
    let step = prop::sample::select(vec![-3i64, -2, -1, 1, 2, 3]);
    (shape(1..=3, 0..=6), dtype())
        .prop_flat_map(move |(dims, dtype)| {
            let r = dims.len();
            let specs = prop::collection::vec((bound.clone(), bound.clone(), step.clone()), r);
            let axes = Just((0..r as i64).collect::<Vec<_>>()).prop_shuffle();
            (Just(dims), Just(dtype), specs, axes, 1..=r)
        })
        .prop_map(|(dims, dtype, specs, axes, k)| {
            let specs = &specs[..k];
            let op = Op::Slice {
                starts: specs.iter().map(|s| s.0).collect(),
                ends: specs.iter().map(|s| s.1).collect(),
                axes: Some(axes[..k].to_vec()),
                steps: Some(specs.iter().map(|s| s.2).collect()),
            };
            (op, TensorType::new(dtype, dims))
        })
}

fn tile() -> impl Strategy<Value = (Op, TensorType)> {
    (shape(1..=3, 1..=3), dtype())
        .prop_flat_map(|(dims, dtype)| {
            let repeats = prop::collection::vec(0i64..=3, dims.len());
            (Just(dims), Just(dtype), repeats)
        })
        .prop_map(|(dims, dtype, repeats)| (Op::Tile { repeats }, TensorType::new(dtype, dims)))
}

fn reshape() -> impl Strategy<Value = (Op, TensorType)> {
    // The target regroups the input's dims: the factors of its shape in another grouping,
    // with one entry possibly left to -1.
    (
        shape(1..=4, 1..=4),
        dtype(),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(dims, dtype, cut, infer)| {
            let at = cut.index(dims.len() + 1);
            let left: u64 = dims[..at].iter().product();
            let right: u64 = dims[at..].iter().product();
            let mut target = vec![left as i64, right as i64];
            if infer {
                target[0] = -1;
            }
            let op = Op::Reshape {
                shape: target,
                allowzero: false,
            };
            (op, TensorType::new(dtype, dims))
        })
}

fn im2col() -> impl Strategy<Value = (Op, TensorType)> {
    (1usize..=3, 0u64..=2, 1u64..=2, dtype())
        .prop_flat_map(|(m, n, c, dtype)| {
            let dims = prop::collection::vec(
                (1u64..=6, 1i64..=3, 1i64..=2, 1i64..=2, 0i64..=1, 0i64..=1),
                m,
            );
            (Just(n), Just(c), dims, Just(dtype))
        })
        .prop_filter_map("the dilated kernel must fit", |(n, c, dims, dtype)| {
            let mut shape = vec![n, c];
            let (mut block, mut strides, mut dilations, mut begins, mut ends) =
                (vec![], vec![], vec![], vec![], vec![]);
            for (img, k, s, d, pb, pe) in dims {
                shape.push(img);
                block.push(k);
                strides.push(s);
                dilations.push(d);
                begins.push(pb);
                ends.push(pe);
            }
            begins.extend(ends);
            valid((
                Op::Im2Col {
                    block_shape: block,
                    dilations: Some(dilations),
                    pads: Some(begins),
                    strides: Some(strides),
                },
                TensorType::new(dtype, shape),
            ))
        })
}

fn any_op() -> impl Strategy<Value = (Op, TensorType)> {
    prop_oneof![
        space_to_depth(),
        depth_to_space(),
        space_to_batch_nd(),
        batch_to_space_nd(),
        col2im(),
        transpose(),
        pad(),
        slice(),
        tile(),
        reshape(),
        im2col(),
    ]
}

/// [`check_all_agree`], and `run_threaded` on three threads against the reference too.
fn check_all_agree_threaded(op: &Op, input: &TensorType, seed: u64) {
    check_all_agree(op, input, seed);
    let kernel = compile(op, input).unwrap();
    let src = random_bytes(input.size_bytes().unwrap() as usize, seed);
    let want = relayout_reference::reference(op, input, &src).unwrap();
    let mut got = random_bytes(want.len(), seed ^ 5);
    kernel.run_threaded(&src, &mut got, 3).unwrap();
    assert_eq!(got, want, "run_threaded: {op:?} on {input}");
}

fn check_all_agree(op: &Op, input: &TensorType, seed: u64) {
    let kernel = compile(op, input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
    let src = random_bytes(input.size_bytes().unwrap() as usize, seed);
    let out_len = kernel.output_type().size_bytes().unwrap() as usize;
    let reference = relayout_reference::reference(op, input, &src).unwrap();

    let mut lowered = random_bytes(out_len, seed ^ 1);
    interpret(&kernel.stages().lowered, &src, &mut lowered).unwrap();
    assert_eq!(
        lowered, reference,
        "lowered IR vs reference for {op:?} on {input}"
    );

    let mut loops = random_bytes(out_len, seed ^ 2);
    interpret_loops(&kernel.stages().loops, &src, &mut loops).unwrap();
    assert_eq!(
        loops,
        reference,
        "loop IR vs reference for {op:?} on {input}\n{}",
        kernel.stages().loops
    );

    let mut jit = random_bytes(out_len, seed ^ 3);
    kernel.run(&src, &mut jit).unwrap();
    assert_eq!(
        jit,
        reference,
        "JIT vs reference for {op:?} on {input}\n{}",
        kernel.stages().loops
    );

    for pieces in [2, 3, 7] {
        let mut threaded = random_bytes(out_len, seed ^ 4);
        let report = kernel
            .run_split(&src, &mut threaded, Split::Pieces(pieces))
            .unwrap();
        report
            .check_forced(pieces)
            .unwrap_or_else(|e| panic!("{op:?} on {input}: {e}\n{}", kernel.stages().loops));
        assert_eq!(
            threaded, reference,
            "JIT in {pieces} pieces vs reference for {op:?} on {input}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn jit_interpreter_and_reference_agree((op, input) in any_op(), seed in any::<u64>()) {
        check_all_agree(&op, &input, seed);
    }
}

#[test]
fn wrong_buffer_lengths_are_errors() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    };
    let kernel = compile(&op, &TensorType::new(DType::F32, [1, 2, 2, 1])).unwrap();
    let mut dst = [0u8; 16];
    assert!(kernel.run(&[0u8; 15], &mut dst).is_err());
    assert!(kernel.run(&[0u8; 16], &mut dst[..12]).is_err());
    let mut wrong_type = [0u16; 4];
    assert!(kernel.run_typed(&[0u16; 4], &mut wrong_type).is_err());
}

#[test]
fn typed_threaded_runs_and_debug() {
    let op = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nhwc,
        mode: DepthToSpaceMode::Dcr,
    };
    let input = TensorType::new(DType::F32, [2, 8, 8, 4]);
    let kernel = compile(&op, &input).unwrap();
    let src: Vec<f32> = (0..512).map(|i| i as f32).collect();
    let mut one = vec![0f32; 512];
    kernel.run_typed(&src, &mut one).unwrap();
    let mut two = vec![-1f32; 512];
    kernel.run_threaded_typed(&src, &mut two, 2).unwrap();
    assert_eq!(one, two);
    assert_ne!(one, src, "DepthToSpace moves elements");
    // The element size is checked as for run_typed.
    let mut wrong = vec![0u16; 512];
    assert!(kernel
        .run_threaded_typed(&vec![0u16; 512], &mut wrong, 2)
        .is_err());
    let debug = format!("{kernel:?}");
    assert!(
        debug.contains("DepthToSpace") && debug.contains("tensor<2x8x8x4xf32>"),
        "{debug}"
    );
}

/// A pixel shuffle of one RGB frame: the outermost loop (the 3 channels) is too short to
/// give 4 or 7 threads a piece each, yet a forced split into 2, 4 or 7 pieces really runs in
/// that many (through a variant of the statement whose outer loop is long enough) and
/// writes the bytes one thread writes.
#[test]
fn pixel_shuffle_of_one_frame_splits_into_any_number_of_pieces() {
    let spec = r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x12x540x960xf32>"#;
    let parsed = relayout::parse_op_spec(spec).unwrap();
    let op = Op::from_attrs(&parsed.name, &parsed.attrs).unwrap();
    let kernel = compile(&op, &parsed.input).unwrap();
    assert_eq!(kernel.stages().loops.stmts[0].loops[0].extent, 3);
    let src = random_bytes(parsed.input.size_bytes().unwrap() as usize, 5);
    let len = kernel.output_type().size_bytes().unwrap() as usize;
    let mut want = vec![0u8; len];
    kernel.run(&src, &mut want).unwrap();
    for pieces in [2, 4, 7] {
        let mut got = random_bytes(len, pieces as u64);
        let report = kernel
            .run_split(&src, &mut got, Split::Pieces(pieces))
            .unwrap();
        assert!(
            report.statements.iter().all(|s| s.pieces == pieces),
            "{pieces}: {report:?}"
        );
        assert_eq!(report.max_pieces(), pieces);
        assert!(got == want, "{pieces} pieces differ from one thread");
    }
}

/// The same op on a frame of 3 rows: neither the outer loop (3 channels) nor the second (3
/// rows) has 4 iterations, so only the two collapsed into one loop of 9 can give 4 or 7
/// pieces. The bytes are the reference's, in every split.
#[test]
fn short_outer_loops_split_collapsed() {
    let spec = r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x12x3x960xf32>"#;
    let parsed = relayout::parse_op_spec(spec).unwrap();
    let op = Op::from_attrs(&parsed.name, &parsed.attrs).unwrap();
    let kernel = compile(&op, &parsed.input).unwrap();
    let loops = &kernel.stages().loops.stmts[0].loops;
    assert_eq!((loops[0].extent, loops[1].extent), (3, 3));
    let src = random_bytes(parsed.input.size_bytes().unwrap() as usize, 6);
    let want = relayout_reference::reference(&op, &parsed.input, &src).unwrap();
    let len = kernel.output_type().size_bytes().unwrap() as usize;
    for pieces in [2, 4, 7, 9, 20] {
        let mut got = random_bytes(len, pieces as u64);
        let report = kernel
            .run_split(&src, &mut got, Split::Pieces(pieces))
            .unwrap();
        report.check_forced(pieces).unwrap();
        // Two pieces fit the outer loop; more take the collapsed one.
        let extent = if pieces <= 3 { 3 } else { 9 };
        let s = report.statements[0];
        assert_eq!(
            (s.pieces, s.outer_extent),
            (pieces.min(9), extent),
            "{report:?}"
        );
        assert!(got == want, "{pieces} pieces differ from the reference");
    }
}

/// A band sharing two loops, the first of 3 iterations: collapsed into one of 15, it runs in
/// as many pieces as asked, and computes what the interpreter computes.
#[test]
fn bands_split_collapsed() {
    let text = "loops @band(%src: tensor<3x5x8xf32>) -> (%dst: tensor<3x5x8xf32>) {\n\
                  fused for i0 in 0 to 3, i1 in 0 to 5 {\n\
                    fill 32 bytes %dst[0 + 160 * i0 + 32 * i1] = 0\n\
                        for i0 in 0 to 3, i1 in 0 to 5\n\
                    copy 16 bytes %dst[8 + 160 * i0 + 32 * i1] = %src[0 + 160 * i0 + 32 * i1]\n\
                        for i0 in 0 to 3, i1 in 0 to 5\n\
                  }\n\
                }\n";
    let loops = relayout::ir::parse_loop_kernel(text).unwrap();
    assert_eq!(loops.bands.len(), 1);
    let src = random_bytes(480, 7);
    let mut want = random_bytes(480, 8);
    interpret_loops(&loops, &src, &mut want).unwrap();
    let kernel = relayout::compile_loops(loops).unwrap();
    for pieces in [2, 4, 7, 15] {
        let mut got = random_bytes(480, 8);
        let report = kernel
            .run_split(&src, &mut got, Split::Pieces(pieces))
            .unwrap();
        report.check_forced(pieces).unwrap();
        let extent = if pieces <= 3 { 3 } else { 15 };
        for s in &report.statements {
            assert_eq!((s.pieces, s.outer_extent), (pieces, extent), "{report:?}");
        }
        assert_eq!(got, want, "{pieces} pieces");
    }
}

/// A Slice of the last axis with `step`, from `start` to `end`, of `rows` rows of `width`
/// elements of `dtype`.
fn last_axis_slice(
    dtype: DType,
    rows: u64,
    width: u64,
    (start, end, step): (i64, i64, i64),
) -> (Op, TensorType) {
    let op = Op::Slice {
        starts: vec![start],
        ends: vec![end],
        axes: Some(vec![1]),
        steps: Some(vec![step]),
    };
    (op, TensorType::new(dtype, [rows, width]))
}

/// Strided Slices run as shuffle blocks that load whole vectors with the skipped elements
/// (the codegen note says so), for every element size and steps 2 to 4, forward and reversed,
/// and agree with the reference on one thread, in pieces and with `run_threaded`.
#[test]
fn strided_slices_gather_from_whole_vectors() {
    let mut seed = 0;
    for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
        for step in [2i64, 3, 4, -2, -3, -4] {
            for (rows, width, skip) in [(5u64, 70u64, 0i64), (3, 64, 1), (4, 61, 1), (2, 129, 2)] {
                let width = width * step.unsigned_abs() / 2;
                // `skip` elements left out at the end the slice starts from.
                let (start, end) = if step > 0 {
                    (skip, i64::MAX)
                } else {
                    (-1 - skip, i64::MIN)
                };
                let (op, input) = last_axis_slice(dtype, rows, width, (start, end, step));
                let stages = relayout::lower(&op, &input).unwrap();
                let notes = relayout::codegen_notes(&stages.loops);
                // Every f32 of four near both ends of the source may stay scalar: its vectors
                // would lie outside at one end whichever way they are aligned, and kept inside
                // they cost more shuffles than the scalar moves.
                let f32_step4 = dtype == DType::F32 && step.abs() == 4;
                assert!(
                    f32_step4
                        || notes
                            .iter()
                            .any(|n| n.contains("gathered from whole vectors")),
                    "{op:?} on {input}: {notes:?}\n{}",
                    stages.loops
                );
                seed += 1;
                check_all_agree_threaded(&op, &input, seed);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Col2Im of f16 and bf16, whose sums run in the JIT's sum helper (no generated code):
    /// bit for bit the reference's, which adds each cell's contributions in the op's order,
    /// rounding after each addition, on random bits (NaNs, infinities and subnormals among
    /// them), on one thread and on three.
    #[test]
    fn half_precision_col2im_agrees_bit_for_bit(
        // Rows long enough for the helper's vectors of eight and its overlapping last one.
        (op, input) in col2im_of(vec![DType::F16, DType::BF16], 2..=40),
        seed in any::<u64>(),
    ) {
        check_all_agree_threaded(&op, &input, seed);
    }
}

/// Stride-2 Col2Im of f16 and bf16 as the benchmark has it (4x4 blocks): `pair-phases` rows of
/// every other element, which the JIT's sum helper sums eight elements of a phase at a time
/// and interleaves; rows of both parities, long and short, odd widths, 2-D and 3-D.
#[test]
fn half_precision_stride2_col2im_rows_agree() {
    let mut seed = 7;
    for dtype in [DType::F16, DType::BF16] {
        for image in [
            vec![6i64, 40],
            vec![5, 35],
            vec![4, 18],
            vec![4, 6],
            vec![4, 6, 20],
        ] {
            let m = image.len();
            let (block, strides, pads) = (vec![4i64; m], vec![2i64; m], vec![1i64; 2 * m]);
            let blocks: i64 = image.iter().map(|&i| (i + 2 - 4) / 2 + 1).product();
            let k: i64 = block.iter().product();
            let op = Op::Col2Im {
                image_shape: image,
                block_shape: block,
                dilations: vec![1; m],
                pads,
                strides,
            };
            let input = TensorType::new(dtype, [2, 2 * k as u64, blocks as u64]);
            seed += 1;
            check_all_agree_threaded(&op, &input, seed);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random NHWC <-> NCHW (and HWC <-> CHW) transposes of three byte channels, most of
    /// which the JIT's deinterleave and interleave helpers run (rows of at least 64 pixels, a
    /// batch or a row cut), the rest generated code: every stage and `run_threaded` against
    /// the reference.
    #[test]
    fn random_three_channel_byte_transposes_agree(
        dtype in prop::sample::select(vec![DType::U8, DType::I8, DType::Bool]),
        batch in prop::option::of(1u64..4),
        into_planes in any::<bool>(),
        height in 1u64..40,
        width in 1u64..70,
        seed in any::<u64>(),
    ) {
        let (perm, dims) = match (batch, into_planes) {
            (Some(n), true) => (vec![0, 3, 1, 2], vec![n, height, width, 3]),
            (Some(n), false) => (vec![0, 2, 3, 1], vec![n, 3, height, width]),
            (None, true) => (vec![2, 0, 1], vec![height, width, 3]),
            (None, false) => (vec![1, 2, 0], vec![3, height, width]),
        };
        let input = TensorType::new(dtype, dims);
        check_all_agree_threaded(&Op::Transpose { perm: Some(perm) }, &input, seed);
    }

    /// Random NCHW -> NHWC transposes of power-of-two maps, whose channel rows alias in the
    /// level-1 cache, so that `tile-transposes` walks them by source lines (or, with more
    /// channels, cache-blocks or strip-mines them): every stage and `run_threaded` against the
    /// reference.
    #[test]
    fn random_transposes_of_power_of_two_maps_agree(
        dtype in dtype(),
        batch in 1u64..3,
        channels in 1u64..72,
        height in prop::sample::select(vec![1u64, 2, 8, 16, 32]),
        width in prop::sample::select(vec![16u64, 32, 64, 128]),
        seed in any::<u64>(),
    ) {
        let input = TensorType::new(dtype, [batch, channels, height, width]);
        check_all_agree_threaded(&Op::Transpose { perm: Some(vec![0, 2, 3, 1]) }, &input, seed);
    }

    /// Random transposes that swap an outer and the inner axis with a batch between them
    /// (`[2, 1, 0]`, `[0, 3, 2, 1]`), at sizes where `tile-transposes` moves the batch inside
    /// the loops of register blocks (source and lane loops of whole blocks or with edges): every
    /// stage and `run_threaded` against the reference.
    #[test]
    fn random_transposes_with_a_batch_between_agree(
        dtype in dtype(),
        outer in prop::option::of(1u64..4),
        x in 4u64..40,
        batch in 1u64..12,
        z in 4u64..40,
        seed in any::<u64>(),
    ) {
        let (perm, dims) = match outer {
            Some(n) => (vec![0, 3, 2, 1], vec![n, z, batch, x]),
            None => (vec![2, 1, 0], vec![z, batch, x]),
        };
        let input = TensorType::new(dtype, dims);
        check_all_agree_threaded(&Op::Transpose { perm: Some(perm) }, &input, seed);
    }
}

/// The benchmark's stride-2 Slice of the two last axes, small, for every element size.
#[test]
fn two_axis_stride2_slices_agree() {
    for (i, dtype) in [DType::I8, DType::BF16, DType::I32, DType::I64, DType::C64]
        .into_iter()
        .enumerate()
    {
        for starts in [[0i64, 0], [1, 1], [0, 1]] {
            let op = Op::Slice {
                starts: starts.to_vec(),
                ends: vec![i64::MAX, i64::MAX],
                axes: Some(vec![2, 3]),
                steps: Some(vec![2, 2]),
            };
            let input = TensorType::new(dtype, [2, 3, 34, 66]);
            check_all_agree(&op, &input, i as u64);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random strided Slices of the last axis, long enough rows for the shuffle blocks.
    #[test]
    fn random_strided_slices_agree(
        dtype in prop::sample::select(vec![DType::U8, DType::I16, DType::F32, DType::F64]),
        rows in 1u64..5,
        width in 16u64..200,
        start in -20i64..20,
        end in prop_oneof![Just(i64::MAX), Just(i64::MIN), -20i64..20],
        step in prop::sample::select(vec![-4i64, -3, -2, 2, 3, 4]),
        seed in any::<u64>(),
    ) {
        let (op, input) = last_axis_slice(dtype, rows, width, (start, end, step));
        prop_assume!(compile(&op, &input).is_ok());
        check_all_agree(&op, &input, seed);
    }
}

/// A Reshape is one contiguous copy, also between shapes whose dims do not nest
/// (`tensor<2xNx3>` as `tensor<6xN>` with N not a multiple of 3), whose source indices keep a
/// `floordiv` and a `mod` but whose byte offsets fold into the destination's (`linearize`).
/// Before that, peel-dims cut such a copy into a piece per residue and failed beyond 16384
/// pieces (a fuzz target found `tensor<2x2147483648x3x1xcomplex<f64>>`). The last three run
/// cases are shapes whose source digits the simplifier writes with quotients that no longer
/// match (`(d0 * 320 + d1) floordiv 240`, `(d0 * 128 + (d1 * 2 + d2) floordiv 5) mod 3`), which
/// lowered to scalar copies or failed the same way (840x16x72 as 80x756x16, 3.9 MB) until
/// `linearize` proved them unravellings of one position.
#[test]
fn reshapes_between_shapes_that_do_not_nest_are_one_copy() {
    let cases: [(&[u64], &[i64], DType); 11] = [
        (&[98, 2, 3, 1], &[2, 2, -1, 1], DType::I8),
        (&[7, 3, 2, 3], &[2, 7, 9], DType::F64),
        (&[2, 7, 3, 1], &[6, -1, 1], DType::F32),
        (&[2, 1000, 3], &[6, 1000], DType::F16),
        (&[2, 100003, 3, 1], &[6, -1, 1], DType::U8),
        (&[3, 5], &[5, 3], DType::I64),
        (&[2, 3, 5], &[5, 6], DType::C64),
        (&[4, 6], &[3, 8], DType::BF16),
        (&[4, 4, 8, 3, 5], &[3, -1, 2], DType::F32),
        (&[2, 3, 3, 4, 1, 5], &[2, 1, 3, 2, 15, 2], DType::F32),
        (&[840, 16, 72], &[80, 756, 16], DType::F32),
    ];
    for (i, (shape, target, dtype)) in cases.into_iter().enumerate() {
        let op = Op::Reshape {
            shape: target.to_vec(),
            allowzero: false,
        };
        let input = TensorType::new(dtype, shape.to_vec());
        check_all_agree(&op, &input, i as u64);
        let loops = relayout::lower(&op, &input).unwrap().loops;
        assert_eq!(loops.stmts.len(), 1, "{op:?} on {input}:\n{loops}");
        assert_eq!(
            loops.stmts[0].bytes,
            input.size_bytes().unwrap(),
            "{op:?} on {input}:\n{loops}"
        );
    }
    // Too large to run here, but they lower to one copy too.
    for (shape, target, dtype) in [
        (vec![2u64, 2147483648, 3, 1], vec![6i64, -1, 1], DType::C128),
        (vec![982557131854, 2, 3, 1], vec![2, 2, -1, 1], DType::I8),
        (vec![1, 4, 4, 2147483648, 3, 5], vec![3, -1, 2], DType::U64),
    ] {
        let op = Op::Reshape {
            shape: target,
            allowzero: false,
        };
        let input = TensorType::new(dtype, shape);
        let loops = relayout::lower(&op, &input).unwrap().loops;
        assert_eq!(loops.stmts.len(), 1, "{loops}");
    }
}

/// A shape regrouped from the prime factors of `dims`' element count, spread over `slots`
/// dims (some of them 1): another shape of the same size, which nests with `dims` only by
/// chance.
fn regrouped(dims: &[u64], slots: &[usize]) -> Vec<i64> {
    let mut n: u64 = dims.iter().product();
    let mut factors = Vec::new();
    let mut p = 2;
    while n > 1 {
        while n % p == 0 {
            factors.push(p);
            n /= p;
        }
        p += 1;
    }
    let rank = slots.len().max(1);
    let mut target = vec![1i64; rank];
    for (f, slot) in factors.into_iter().zip(slots.iter().cycle()) {
        target[slot % rank] *= f as i64;
    }
    target
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Reshapes between random shapes of the same size, mostly shapes that do not nest: one
    /// contiguous copy of the whole tensor, and every stage agrees with the reference.
    #[test]
    fn random_reshapes_are_one_copy(
        dims in shape(1..=5, 1..=12),
        slots in prop::collection::vec(0usize..6, 1..=5),
        dtype in dtype(),
        seed in any::<u64>(),
    ) {
        let op = Op::Reshape { shape: regrouped(&dims, &slots), allowzero: false };
        let input = TensorType::new(dtype, dims);
        check_all_agree(&op, &input, seed);
        let loops = relayout::lower(&op, &input).unwrap().loops;
        prop_assert_eq!(loops.stmts.len(), 1, "{:?} on {}:\n{}", op, input, loops);
        prop_assert_eq!(loops.stmts[0].bytes, input.size_bytes().unwrap());
    }
}

/// A padded Im2Col takes about one statement per kernel position for its borders (each
/// position's rows start and end at other output columns, and the loop IR's loops are boxes):
/// a 64x64 kernel lowers, a 200x200 one passes the passes' budget of statements and is refused
/// with the typed limit error, which names the statement and the budget, instead of a
/// generic pass failure.
#[test]
fn kernels_of_too_many_positions_meet_a_typed_limit() {
    let im2col = |k: i64| Op::Im2Col {
        block_shape: vec![k, k],
        dilations: None,
        pads: Some(vec![k / 2; 4]),
        strides: None,
    };
    let input = TensorType::new(DType::F32, vec![1, 1, 256, 256]);
    assert!(relayout::lower(&im2col(64), &input).is_ok());
    let e = relayout::lower(&im2col(200), &input).unwrap_err();
    match &e {
        relayout::Error::Pass(relayout_passes::PassError::TooManyStatements {
            pass,
            limit,
            ..
        }) => assert_eq!((*pass, *limit), ("peel-dims", 16384)),
        _ => panic!("not the statement budget: {e}"),
    }
    assert!(
        e.to_string().contains("needs more than 16384 statements"),
        "{e}"
    );
}
