//! Stride-2 Col2Im of floats, whose even and odd output columns `pair-phases` merges and code
//! generation sums as whole vectors interleaved by shuffles (or, for a phase without a
//! partner, stores lane by lane): bit-exact with the reference
//! (the same additions in the same order, from +0.0, so -0.0 and rounding included), on one
//! thread and threaded, in 1-D (an image of height 1), 2-D and 3-D, with odd widths and
//! dilation.

use relayout::ir::{interpret_loops, DType, TensorType};
use relayout::{compile, Op};

#[path = "support/float_sums.rs"]
mod float_sums;

/// The codegen notes of a row of two phases, and of a phase summed alone.
const PAIRED: &str = "two interleaved phases";
const ALONE: &str = "every other element";

/// Image, block, stride, dilation and padding (begin, end) of each spatial dim.
type Dim = (u64, u64, u64, u64, (u64, u64));

/// The Col2Im of `dims` over `n` images of `c` channels of `dtype`.
fn col2im(dtype: DType, n: u64, c: u64, dims: &[Dim]) -> (Op, TensorType) {
    let mut blocks = 1;
    let mut kernel = 1;
    for &(image, block, stride, dilation, (pb, pe)) in dims {
        blocks *= (image + pb + pe - (dilation * (block - 1) + 1)) / stride + 1;
        kernel *= block;
    }
    let mut pads: Vec<i64> = dims.iter().map(|d| d.4 .0 as i64).collect();
    pads.extend(dims.iter().map(|d| d.4 .1 as i64));
    let op = Op::Col2Im {
        image_shape: dims.iter().map(|d| d.0 as i64).collect(),
        block_shape: dims.iter().map(|d| d.1 as i64).collect(),
        strides: dims.iter().map(|d| d.2 as i64).collect(),
        dilations: dims.iter().map(|d| d.3 as i64).collect(),
        pads,
    };
    (op, TensorType::new(dtype, [n, c * kernel, blocks]))
}

/// The loop IR of the default pipeline without `pair-phases`: what the kernel computed before
/// the phases were paired.
fn unpaired(op: &Op, input: &TensorType) -> relayout::ir::LoopKernel {
    use relayout::passes::{PassManager, Pipeline, DEFAULT_PIPELINE};
    let text = DEFAULT_PIPELINE.replace(",pair-phases", "");
    let pm = PassManager::new(Pipeline::parse(&text).unwrap()).verify_each(true);
    let lowered = relayout::ir::AnyKernel::Index(op.lower(input).unwrap());
    match pm.run(lowered).unwrap() {
        relayout::ir::AnyKernel::Loops(k) => k,
        relayout::ir::AnyKernel::Index(_) => unreachable!("the pipeline lowers to loops"),
    }
}

/// Runs `op` on `input` on one thread and on three and checks, bit for bit, that the JIT and
/// the interpreter of the final loop IR compute what the loop IR without `pair-phases`
/// computes; with `note`, also that some statement's codegen note says it.
/// Returns whether that is also the reference's result (the op's own order of additions),
/// which every caller asserts.
fn check(op: &Op, input: &TensorType, note: Option<&str>, seed: u64) -> bool {
    let stages = relayout::lower(op, input).unwrap();
    if let Some(note) = note {
        let notes = relayout::codegen_notes(&stages.loops);
        assert!(
            notes.iter().any(|n| n.contains(note)),
            "{op:?} on {input}: {notes:?}\n{}",
            stages.loops
        );
    }
    let count = (input.size_bytes().unwrap() / input.dtype.size()) as usize;
    let src = float_sums::values(input.dtype, count, seed, 7);
    let reference = relayout_reference::reference(op, input, &src).unwrap();
    let mut want = vec![0x11u8; reference.len()];
    interpret_loops(&unpaired(op, input), &src, &mut want).unwrap();
    let mut loops = vec![0x22u8; want.len()];
    interpret_loops(&stages.loops, &src, &mut loops).unwrap();
    same(op, input, "the loop IR", &loops, &want);
    let kernel = compile(op, input).unwrap();
    let mut got = vec![0x5au8; want.len()];
    kernel.run(&src, &mut got).unwrap();
    same(op, input, "the JIT", &got, &want);
    let mut threaded = vec![0xa5u8; want.len()];
    kernel.run_threaded(&src, &mut threaded, 3).unwrap();
    same(op, input, "run_threaded", &threaded, &want);
    want == reference
}

/// Panics with the first element where `got` (what `who` computed) differs from `want`, what
/// the kernel computed before the pairing.
fn same(op: &Op, input: &TensorType, who: &str, got: &[u8], want: &[u8]) {
    let e = input.dtype.size() as usize;
    if let Some(i) = (0..want.len())
        .step_by(e)
        .find(|&i| got[i..i + e] != want[i..i + e])
    {
        panic!(
            "{op:?} on {input}: element {} of {who} differs: {:?} vs {:?}\n{}",
            i / e,
            &got[i..i + e],
            &want[i..i + e],
            relayout::lower(op, input).unwrap().loops
        );
    }
}

#[test]
fn stride2_2d_agrees_bit_for_bit() {
    let mut seed = 1;
    for dtype in [DType::F32, DType::F64] {
        // Odd and even widths, rows shorter and longer than a vector, kernels of 3 and 4.
        for (h, w) in [
            (9u64, 13u64),
            (8, 64),
            (6, 7),
            (5, 3),
            (12, 41),
            (7, 16),
            (4, 18),
        ] {
            for k in [3u64, 4] {
                let dims = [(h, k, 2, 1, (1, 1)), (w, k, 2, 1, (1, 1))];
                let (op, input) = col2im(dtype, 2, 3, &dims);
                // With a kernel of 4 both column phases of the interior add the same number
                // of contributions and pair up; with 3, the even columns add two and the odd
                // ones one, and each phase is summed alone. Narrow images have too few
                // columns for a vector, and `output-stationary` places an odd height with a
                // kernel of 3 in no cells at all. Images of fewer than 8 rows are placed in
                // cells or not depending on how their edges were peeled.
                let note = match k {
                    _ if w < 16 || h < 8 || (h % 2 == 1 && k == 3) => None,
                    4 => Some(PAIRED),
                    _ => Some(ALONE),
                };
                let exact = check(&op, &input, note, seed);
                assert!(exact, "{op:?} on {input}: not the reference's result");
                seed += 1;
            }
        }
    }
}

#[test]
fn stride2_with_dilation_and_uneven_padding_agrees() {
    let mut seed = 100;
    for dtype in [DType::F32, DType::F64] {
        for dims in [
            [
                (11u64, 3u64, 2u64, 2u64, (2u64, 1u64)),
                (17, 3, 2, 2, (1, 2)),
            ],
            [(10, 4, 2, 3, (0, 3)), (23, 4, 2, 1, (3, 0))],
            [(7, 2, 2, 1, (0, 1)), (19, 5, 2, 1, (2, 2))],
        ] {
            let (op, input) = col2im(dtype, 1, 4, &dims);
            assert!(check(&op, &input, None, seed), "{op:?} on {input}");
            seed += 1;
        }
    }
}

#[test]
fn stride2_1d_and_3d_agree() {
    let mut seed = 200;
    for dtype in [DType::F32, DType::F64] {
        // Col2Im wants two spatial dims at least: one of them of height 1.
        // A row of 37 is not placed in cells by `output-stationary` (its channel planes are
        // an odd number of elements apart), so it is summed as before.
        for w in [38u64, 64, 37, 6] {
            let dims = [(1, 1, 1, 1, (0, 0)), (w, 4, 2, 1, (1, 1))];
            let (op, input) = col2im(dtype, 2, 3, &dims);
            let note = (w % 2 == 0 && w >= 16).then_some(PAIRED);
            let exact = check(&op, &input, note, seed);
            assert!(exact, "{op:?} on {input}: not the reference's result");
            seed += 1;
        }
        let dims = [
            (4, 2, 2, 1, (0, 0)),
            (6, 2, 2, 1, (1, 1)),
            (28, 4, 2, 1, (1, 1)),
        ];
        let (op, input) = col2im(dtype, 1, 2, &dims);
        assert!(check(&op, &input, Some(PAIRED), seed), "{op:?} on {input}");
        seed += 1;
    }
}

/// Other element types keep their paths (integers may pair too: their sums are exact) and
/// agree as well: f16 and bf16 through their helpers, complex numbers element by element.
#[test]
fn stride2_other_element_types_agree() {
    for (seed, dtype) in [
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U8,
        DType::I64,
        DType::C64,
    ]
    .into_iter()
    .enumerate()
    {
        let (op, input) = col2im(dtype, 2, 2, &[(6, 4, 2, 1, (1, 1)), (40, 4, 2, 1, (1, 1))]);
        let count = input.size_bytes().unwrap() as usize;
        // Small integers in every byte: finite f16, bf16 and complex values, no overflow
        // that matters (integer sums wrap the same way in any order).
        let src: Vec<u8> = (0..count).map(|i| ((i * 7 + seed) % 5) as u8).collect();
        let want = relayout_reference::reference(&op, &input, &src).unwrap();
        let kernel = compile(&op, &input).unwrap();
        let mut got = vec![0u8; want.len()];
        kernel.run(&src, &mut got).unwrap();
        assert!(got == want, "{op:?} on {input}");
        let mut threaded = vec![0u8; want.len()];
        kernel.run_threaded(&src, &mut threaded, 2).unwrap();
        assert!(threaded == want, "{op:?} on {input}: threaded");
        let notes = relayout::codegen_notes(&relayout::lower(&op, &input).unwrap().loops);
        let paired = notes.iter().any(|n| n.contains(PAIRED));
        assert_eq!(
            paired,
            matches!(dtype, DType::I32 | DType::U8 | DType::I64),
            "{dtype:?}: {notes:?}"
        );
    }
}
