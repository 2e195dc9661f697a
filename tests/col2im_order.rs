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

#[test]
fn float_col2im_adds_in_the_order_of_its_definition() {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut seed = 1;
    for (h, w) in [(3i64, 7i64), (5, 8), (6, 7), (7, 16), (9, 3)] {
        for k in 1..=4i64 {
            for s in 1..=3i64 {
                for (dil, pads) in [
                    (1i64, [0i64, 0, 0, 0]),
                    (1, [1, 1, 1, 1]),
                    (1, [0, 1, 0, 2]),
                    (2, [2, 0, 1, 2]),
                ] {
                    let ext = dil * (k - 1) + 1;
                    let (ph, pw) = (pads[0] + pads[2], pads[1] + pads[3]);
                    if h + ph < ext || w + pw < ext {
                        continue;
                    }
                    let blocks = ((h + ph - ext) / s + 1) * ((w + pw - ext) / s + 1);
                    let op = Op::Col2Im {
                        image_shape: vec![h, w],
                        block_shape: vec![k, k],
                        strides: vec![s, s],
                        dilations: vec![dil, dil],
                        pads: pads.to_vec(),
                    };
                    let dtype = if seed % 2 == 0 {
                        DType::F32
                    } else {
                        DType::F64
                    };
                    let input = TensorType::new(dtype, [2, (3 * k * k) as u64, blocks as u64]);
                    failures.extend(differs(&op, &input, seed));
                    seed += 1;
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 100, "only {cases} cases");
    assert!(
        failures.is_empty(),
        "{} of {cases}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Kernels of more than twenty positions, 3-D and 2-D, some padded along inner image dims
/// only (where `peel-dims` must first peel the outer kernel dim to keep the order), which
/// `output-stationary` sums in consecutive chunks of kernel positions (3x3x3 in three chunks
/// of nine, 6x6 by kernel rows, 2x3x4 by rows of four), each adding to what the one before
/// stored.
#[test]
fn float_col2im_of_many_kernel_positions_adds_in_the_order_of_its_definition() {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut seed = 1000;
    let shapes: [(&[i64], &[i64]); 5] = [
        (&[5, 6, 7], &[3, 3, 3]),
        (&[4, 9, 5], &[2, 3, 4]),
        (&[9, 11], &[5, 5]),
        (&[8, 13], &[6, 6]),
        (&[3, 4, 18], &[3, 3, 3]),
    ];
    for (image, kernel) in shapes {
        for pad in [0i64, 1, 2] {
            let rank = image.len();
            let pads: Vec<i64> = (0..2 * rank).map(|d| (pad + d as i64) % 3).collect();
            let blocks: i64 = (0..rank)
                .map(|d| image[d] + pads[d] + pads[d + rank] - kernel[d] + 1)
                .product();
            let op = Op::Col2Im {
                image_shape: image.to_vec(),
                block_shape: kernel.to_vec(),
                strides: vec![1; rank],
                dilations: vec![1; rank],
                pads,
            };
            for dtype in [DType::F32, DType::F64] {
                let positions: i64 = kernel.iter().product();
                let input = TensorType::new(dtype, [2, (2 * positions) as u64, blocks as u64]);
                failures.extend(differs(&op, &input, seed));
                seed += 1;
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 30);
    assert!(
        failures.is_empty(),
        "{} of {cases}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The 16-bit floats, which round after every addition (the definition adds in f16/bf16):
/// small 2-D images with every kernel size and stride, padded on both or one image dim, and
/// the many-position kernels summed in chunks.
#[test]
fn half_float_col2im_adds_in_the_order_of_its_definition() {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut seed = 2000;
    let mut ops: Vec<(Op, [i64; 2])> = Vec::new();
    for k in 1..=4i64 {
        for s in 1..=2i64 {
            for pads in [[1i64, 1, 1, 1], [0, 1, 0, 2]] {
                let (h, w) = (6i64, 7i64);
                let blocks =
                    ((h + pads[0] + pads[2] - k) / s + 1) * ((w + pads[1] + pads[3] - k) / s + 1);
                ops.push((
                    Op::Col2Im {
                        image_shape: vec![h, w],
                        block_shape: vec![k, k],
                        strides: vec![s, s],
                        dilations: vec![1, 1],
                        pads: pads.to_vec(),
                    },
                    [k * k, blocks],
                ));
            }
        }
    }
    for (image, kernel, pads) in [
        (
            vec![5i64, 6, 7],
            vec![3i64, 3, 3],
            vec![0i64, 1, 2, 0, 1, 2],
        ),
        (vec![9, 11], vec![5, 5], vec![2, 2, 2, 2]),
    ] {
        let rank = image.len();
        let blocks: i64 = (0..rank)
            .map(|d| image[d] + pads[d] + pads[d + rank] - kernel[d] + 1)
            .product();
        let positions = kernel.iter().product();
        ops.push((
            Op::Col2Im {
                image_shape: image,
                block_shape: kernel,
                strides: vec![1; rank],
                dilations: vec![1; rank],
                pads,
            },
            [positions, blocks],
        ));
    }
    for (op, [positions, blocks]) in &ops {
        for dtype in [DType::F16, DType::BF16] {
            let input = TensorType::new(dtype, [2, (2 * positions) as u64, *blocks as u64]);
            failures.extend(differs(op, &input, seed));
            seed += 1;
            cases += 1;
        }
    }
    assert_eq!(cases, 36);
    assert!(
        failures.is_empty(),
        "{} of {cases}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
