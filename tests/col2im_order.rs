//! Col2Im's float results are bit-exact with the op's definition: every output cell adds its
//! contributions from +0.0 in the order the definition adds them (kernel positions outermost,
//! then block positions), so the rounding after each addition, and -0.0, come out the same.
//! Passes may run an accumulate's points in another order only where no two of them add into
//! the same cell (`split-guards` peels kernel positions rather than block positions,
//! `interchange` keeps the loops of colliding accumulates in their order, `output-stationary`
//! sums each cell's terms in their order).
//!
//! Checked over a grid of small images, where the choices of the passes differ most from one
//! shape to the next: kernels 1 to 4, strides 1 to 3, dilations 1 and 2, paddings 0 to 2 and
//! uneven, with the interpreter's result after every pass and the JIT's, against the
//! reference implementation.

use relayout::ir::{interpret, interpret_loops, AnyKernel, DType, TensorType};
use relayout::passes::{PassManager, Pipeline, DEFAULT_PIPELINE};
use relayout::Op;

#[path = "support/float_sums.rs"]
mod float_sums;

/// The first pass after which the interpreter's result differs from `want`, if any.
fn first_pass_that_differs(
    lowered: &relayout::ir::Kernel,
    src: &[u8],
    want: &[u8],
) -> Option<String> {
    let pm = PassManager::new(Pipeline::parse(DEFAULT_PIPELINE).unwrap()).verify_each(true);
    let mut first = None;
    pm.run_with(AnyKernel::Index(lowered.clone()), &mut |info, ir| {
        let mut out = vec![0x77u8; want.len()];
        match ir {
            AnyKernel::Index(k) => interpret(k, src, &mut out).unwrap(),
            AnyKernel::Loops(k) => interpret_loops(k, src, &mut out).unwrap(),
        }
        if out != want && first.is_none() {
            first = Some(info.name.to_string());
        }
    })
    .unwrap();
    first
}

/// How `op` on `input` (float values of run lengths of -0.0 from `seed`) differs from the
/// reference: the first pass whose interpreter result differs and whether the JIT's does, or
/// `None` when both are bit-exact.
fn differs(op: &Op, input: &TensorType, seed: u64) -> Option<String> {
    let count = input.num_elements().unwrap() as usize;
    let src = float_sums::values(input.dtype, count, seed, 5);
    let want = relayout_reference::reference(op, input, &src).unwrap();
    let lowered = op.lower(input).unwrap();
    let pass = first_pass_that_differs(&lowered, &src, &want);
    let kernel = relayout::compile(op, input).unwrap();
    let mut got = vec![0x5au8; want.len()];
    kernel.run(&src, &mut got).unwrap();
    (pass.is_some() || got != want).then(|| {
        format!(
            "{op:?} on {input}: first pass that differs {pass:?}, JIT {}",
            if got == want { "exact" } else { "differs" }
        )
    })
}

/// A Col2Im of `image` with `kernel`, the same stride and dilation along every dim, and its
/// input for `channels` channels (batch 2) of `dtype`; `None` when the kernel does not fit.
fn col2im(
    image: &[i64],
    kernel: &[i64],
    (stride, dilation): (i64, i64),
    pads: &[i64],
    (channels, dtype): (i64, DType),
) -> Option<(Op, TensorType)> {
    let rank = image.len();
    let mut blocks = 1;
    for d in 0..rank {
        let room = image[d] + pads[d] + pads[d + rank] - (dilation * (kernel[d] - 1) + 1);
        if room < 0 {
            return None;
        }
        blocks *= room / stride + 1;
    }
    let op = Op::Col2Im {
        image_shape: image.to_vec(),
        block_shape: kernel.to_vec(),
        strides: vec![stride; rank],
        dilations: vec![dilation; rank],
        pads: pads.to_vec(),
    };
    let positions: i64 = kernel.iter().product();
    let input = TensorType::new(dtype, [2, (channels * positions) as u64, blocks as u64]);
    Some((op, input))
}

/// Runs `cases` through [`differs`], each with a seed of its own from `seed`, and fails with
/// every case that differs; checks that there were `count` cases.
fn assert_all_exact(cases: &[(Op, TensorType)], seed: u64, count: usize) {
    let failures: Vec<String> = cases
        .iter()
        .zip(seed..)
        .filter_map(|((op, input), seed)| differs(op, input, seed))
        .collect();
    assert_eq!(cases.len(), count);
    assert!(
        failures.is_empty(),
        "{} of {}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn float_col2im_adds_in_the_order_of_its_definition() {
    let mut cases = Vec::new();
    for (h, w) in [(3i64, 7i64), (5, 8), (6, 7), (7, 16), (9, 3)] {
        for k in 1..=4i64 {
            for s in 1..=3i64 {
                for (dil, pads) in [
                    (1i64, [0i64, 0, 0, 0]),
                    (1, [1, 1, 1, 1]),
                    (1, [0, 1, 0, 2]),
                    (2, [2, 0, 1, 2]),
                ] {
                    let dtype = [DType::F64, DType::F32][cases.len() % 2];
                    cases.extend(col2im(&[h, w], &[k, k], (s, dil), &pads, (3, dtype)));
                }
            }
        }
    }
    assert_all_exact(&cases, 1, 225);
}

/// Kernels of more than twenty positions, 3-D and 2-D, some padded along inner image dims
/// only (where `peel-dims` must first peel the outer kernel dim to keep the order), which
/// `output-stationary` sums in consecutive chunks of kernel positions (3x3x3 in three chunks
/// of nine, 6x6 by kernel rows, 2x3x4 by rows of four), each adding to what the one before
/// stored.
#[test]
fn float_col2im_of_many_kernel_positions_adds_in_the_order_of_its_definition() {
    let mut cases = Vec::new();
    let shapes: [(&[i64], &[i64]); 5] = [
        (&[5, 6, 7], &[3, 3, 3]),
        (&[4, 9, 5], &[2, 3, 4]),
        (&[9, 11], &[5, 5]),
        (&[8, 13], &[6, 6]),
        (&[3, 4, 18], &[3, 3, 3]),
    ];
    for (image, kernel) in shapes {
        for pad in [0i64, 1, 2] {
            let pads: Vec<i64> = (0..2 * image.len() as i64).map(|d| (pad + d) % 3).collect();
            for dtype in [DType::F32, DType::F64] {
                cases.extend(col2im(image, kernel, (1, 1), &pads, (2, dtype)));
            }
        }
    }
    assert_all_exact(&cases, 1000, 30);
}

/// The 16-bit floats, which round after every addition (the definition adds in f16/bf16):
/// small 2-D images with every kernel size and strides 1 and 2, padded on both or one image
/// dim, and many-position kernels summed in chunks.
#[test]
fn half_float_col2im_adds_in_the_order_of_its_definition() {
    let mut cases = Vec::new();
    for dtype in [DType::F16, DType::BF16] {
        for k in 1..=4i64 {
            for s in 1..=2i64 {
                for pads in [[1i64, 1, 1, 1], [0, 1, 0, 2]] {
                    cases.extend(col2im(&[6, 7], &[k, k], (s, 1), &pads, (2, dtype)));
                }
            }
        }
        cases.extend(col2im(
            &[5, 6, 7],
            &[3, 3, 3],
            (1, 1),
            &[0, 1, 2, 0, 1, 2],
            (2, dtype),
        ));
        cases.extend(col2im(&[9, 11], &[5, 5], (1, 1), &[2, 2, 2, 2], (2, dtype)));
    }
    assert_all_exact(&cases, 2000, 36);
}

/// Rows long enough that code generation sums each one from +0.0 in a loop over groups of
/// vectors whose last group ends at the row's end, overlapping the group before it (rows of
/// 16 f32 or 8 f64 and more; whole numbers of groups, and not), and stride-2 rows long enough
/// for the loop over vectors of each phase: the overlapped elements are stored twice with the
/// same sums, and nothing else changes.
#[test]
fn float_col2im_of_long_rows_adds_in_the_order_of_its_definition() {
    let mut cases = Vec::new();
    for w in [34i64, 40, 64, 67, 100] {
        for (k, s) in [(3i64, 1i64), (2, 1), (4, 2)] {
            for dtype in [DType::F32, DType::F64] {
                cases.extend(col2im(&[5, w], &[k, k], (s, 1), &[1, 1, 1, 1], (2, dtype)));
            }
        }
    }
    assert_all_exact(&cases, 3000, 30);
    // The loop is there: the long rows' notes say they are summed in registers, whole rows
    // (67 elements) with each kernel position's terms added over its window of the row.
    let (op, input) = col2im(&[5, 67], &[3, 3], (1, 1), &[1, 1, 1, 1], (2, DType::F32)).unwrap();
    let notes = relayout::codegen_notes(&relayout::lower(&op, &input).unwrap().loops);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("over its window")
                && n.contains("each run of 268 bytes stored once")),
        "{notes:?}"
    );
}

/// Windows that do not overlap (strides equal to the kernel, no padding): the fill and the one
/// accumulate of all kernel positions become a sum from +0.0 of one term per element, which
/// moves like the copy of the same permutation, in shuffle blocks that add each destination
/// vector to +0.0 before storing it (or, for stride 2 along the rows, in the paired phases).
/// Every -0.0 of the input must come out +0.0, as the definition's sum from zeros makes it,
/// in the interpreter after every pass and in the JIT; integers become a plain copy.
#[test]
fn col2im_of_windows_apart_adds_each_element_to_plus_zero() {
    let mut cases = Vec::new();
    for (image, k) in [
        (&[16i64, 16][..], 2i64),
        (&[18, 18], 3),
        (&[16, 32], 4),
        (&[32, 32], 8),
        (&[48, 48], 16),
        (&[8, 12, 16], 4),
    ] {
        let kernel = vec![k; image.len()];
        let pads = vec![0; 2 * image.len()];
        for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
            cases.extend(col2im(image, &kernel, (k, 1), &pads, (3, dtype)));
        }
    }
    assert_all_exact(&cases, 4000, 24);
    // The blocks are there, and -0.0 reaches them: the notes say so, and the input of each
    // case holds -0.0 (every fifth run of five values), which a copy would keep.
    let (op, input) = col2im(&[48, 48], &[16, 16], (16, 1), &[0; 4], (3, DType::F32)).unwrap();
    let notes = relayout::codegen_notes(&relayout::lower(&op, &input).unwrap().loops);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("each vector added to +0.0")),
        "{notes:?}"
    );
    let count = input.num_elements().unwrap() as usize;
    let src = float_sums::values(DType::F32, count, 7, 5);
    let mut got = vec![0u8; src.len()];
    relayout::compile(&op, &input)
        .unwrap()
        .run(&src, &mut got)
        .unwrap();
    let negative_zeros = |bytes: &[u8]| {
        bytes
            .chunks_exact(4)
            .filter(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_bits() == 0x8000_0000)
            .count()
    };
    assert!(negative_zeros(&src) > 0);
    assert_eq!(negative_zeros(&got), 0);
    // Integers add nothing to 0 + x: the kernel is a copy.
    let (op, input) = col2im(&[16, 16], &[4, 4], (4, 1), &[0; 4], (3, DType::I32)).unwrap();
    let loops = relayout::lower(&op, &input).unwrap().loops;
    assert!(
        loops
            .stmts
            .iter()
            .all(|s| s.action == relayout::ir::LoopAction::Copy),
        "{loops}"
    );
}

/// An integer Col2Im whose output rows (the last dim and the one before it, contiguous) are
/// summed whole by `output-stationary`'s windows, except at the far edge of the rows before
/// them, where the members cover less of a row than the union of all of theirs: that cell
/// must not become a whole row (it would leave bytes unwritten and run past the output's
/// end, which the verifier refused, so the op did not compile). Found by the fuzz bodies.
#[test]
fn col2im_rows_short_at_an_edge_keep_their_cells() {
    let op = Op::Col2Im {
        image_shape: vec![1, 5, 2],
        block_shape: vec![1, 3, 2],
        dilations: vec![1, 2, 1],
        pads: vec![0, 1, 1, 0, 0, 1],
        strides: vec![2, 1, 1],
    };
    for dtype in [DType::I8, DType::U16, DType::I32, DType::I64] {
        let input = TensorType::new(dtype, [1, 6, 6]);
        let bytes = input.size_bytes().unwrap() as usize;
        let src: Vec<u8> = (0..bytes).map(|i| (i * 7 + 3) as u8).collect();
        let want = relayout_reference::reference(&op, &input, &src).unwrap();
        let kernel = relayout::compile(&op, &input).unwrap_or_else(|e| panic!("{dtype:?}: {e}"));
        let mut got = vec![0x5au8; want.len()];
        kernel.run(&src, &mut got).unwrap();
        assert_eq!(got, want, "{dtype:?}");
    }
}
