//! The shuffle path of the code generator (interleave, deinterleave, small transposes of
//! short runs): the DepthToSpace / SpaceToDepth statements of the benchmark suite scaled
//! down, and random interleave / deinterleave statements, JIT == interpreter bit for bit, on
//! one thread and split across threads.

use proptest::prelude::*;
use relayout_ir::{interpret_loops, DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::{CompiledKernel, Split};

mod support;
use support::{
    bytes, d2s_nhwc_b2_f16_12, dcr_b2_f32, dcr_b4_u8, lp, pixel_shuffle_b4_f32, s2d_nchw_b2_4_byte,
};

/// A copy statement over 1-D tensors long enough for its reach (strides may be negative; the
/// offsets lift the lowest access to `slack`).
fn kernel(dtype: DType, run: u64, loops: Vec<Loop>, slack: (i64, i64)) -> LoopKernel {
    let reach = |f: &dyn Fn(&Loop) -> i64| {
        loops.iter().fold((0i64, 0i64), |(lo, hi), l| {
            let span = f(l) * (l.extent.max(1) as i64 - 1);
            (lo + span.min(0), hi + span.max(0))
        })
    };
    let (slo, shi) = reach(&|l| l.src_stride);
    let (dlo, dhi) = reach(&|l| l.dst_stride);
    let (so, dof) = (slack.0 - slo, slack.1 - dlo);
    let e = dtype.size();
    let len = |off: i64, hi: i64| ((off + hi) as u64 + run).div_ceil(e) + 1;
    LoopKernel {
        bands: Vec::new(),
        name: "shuffle".into(),
        src: TensorType::new(dtype, [len(so, shi)]),
        dst: TensorType::new(dtype, [len(dof, dhi)]),
        stmts: vec![LoopStmt {
            action: LoopAction::Copy,
            bytes: run,
            src_offset: so,
            dst_offset: dof,
            loops,
            window: None,
        }],
    }
}

fn mismatch(k: &LoopKernel, threads: usize) -> Option<String> {
    let src = bytes(k.src.size_bytes().unwrap() as usize, 1);
    let dst = bytes(k.dst.size_bytes().unwrap() as usize, 2);
    let mut want = dst.clone();
    interpret_loops(k, &src, &mut want).unwrap();
    let compiled = CompiledKernel::compile(k).unwrap_or_else(|e| panic!("compile: {e}\n{k}"));
    let mut got = dst.clone();
    let report = compiled
        .run_split(&src, &mut got, Split::Pieces(threads))
        .unwrap();
    report
        .check_forced(threads)
        .unwrap_or_else(|e| panic!("{e}\n{k}"));
    let i = got.iter().zip(&want).position(|(a, b)| a != b)?;
    Some(format!(
        "{threads} pieces: byte {i} is {:#04x}, the interpreter says {:#04x}\n{k}",
        got[i], want[i]
    ))
}

fn check(k: &LoopKernel) {
    for threads in [1, 2, 3, 7] {
        if let Some(m) = mismatch(k, threads) {
            panic!("{m}");
        }
    }
}

/// Destination vectors that are a permutation of ONE source vector: the lanes must move.
/// (A bug chose the source vector as loaded because it "holds" the bytes, so these copies
/// came out unpermuted; proptest found it with swapped f64 pairs.)
#[test]
fn single_source_permutations() {
    // Swapped f64 pairs, the reversed loop innermost.
    check(&kernel(
        DType::F64,
        8,
        vec![lp(4, 16, 16), lp(2, 8, -8)],
        (0, 0),
    ));
    // Each group of four f32 reversed, and each group of eight u16.
    check(&kernel(
        DType::F32,
        4,
        vec![lp(6, 16, 16), lp(4, 4, -4)],
        (0, 0),
    ));
    check(&kernel(
        DType::U16,
        2,
        vec![lp(5, 16, 16), lp(8, 2, -2)],
        (0, 0),
    ));
}

/// Pixel shuffle, NCHW CRD, f32, block 4: in [16, h, w], out [4 h, 4 w].
#[test]
fn pixel_shuffle_f32_block4() {
    for (h, w) in [(3i64, 8i64), (2, 11), (1, 4), (2, 3)] {
        let plane = h * w * 4;
        check(&kernel(
            DType::F32,
            4,
            [
                vec![lp(2, 16 * plane, 16 * plane)],
                pixel_shuffle_b4_f32(h, w),
            ]
            .concat(),
            (0, 0),
        ));
    }
}

/// DepthToSpace NCHW DCR u8 block 4.
#[test]
fn dcr_u8_block4() {
    for (h, w) in [(2i64, 32i64), (3, 21), (1, 16), (2, 15)] {
        check(&kernel(DType::U8, 1, dcr_b4_u8(h, w), (0, 0)));
    }
}

/// SpaceToDepth NCHW block 2 (yolo focus) with 4-byte runs of f32 and of i8 (NCHW_VECT_C).
#[test]
fn space_to_depth_block2() {
    for dtype in [DType::F32, DType::I8] {
        for (c, h, w) in [(2i64, 3i64, 8i64), (1, 2, 9), (2, 2, 5), (1, 1, 4)] {
            check(&kernel(dtype, 4, s2d_nchw_b2_4_byte(c, h, w), (0, 0)));
        }
    }
}

/// DepthToSpace NHWC f16 with 12-byte runs.
#[test]
fn nhwc_f16_12_byte_runs() {
    for (h, w) in [(3i64, 9i64), (2, 16), (1, 3)] {
        check(&kernel(DType::F16, 12, d2s_nhwc_b2_f16_12(h, w), (0, 0)));
    }
}

/// DepthToSpace NCHW DCR f32 block 2, and the same with the lane loop outermost (its range
/// is what threads split).
#[test]
fn dcr_f32_block2() {
    check(&kernel(DType::F32, 4, dcr_b2_f32(8), (0, 0)));
    check(&kernel(
        DType::F32,
        4,
        vec![
            lp(8, 128, 512),
            lp(2, 4096, 256),
            lp(31, 4, 8),
            lp(2, 2048, 4),
        ],
        (4, 8),
    ));
    for n in [1u64, 3, 4, 7, 9, 33] {
        check(&kernel(
            DType::F32,
            4,
            vec![lp(n, 4, 8), lp(2, 1024, 4)],
            (0, 0),
        ));
        check(&kernel(
            DType::F32,
            4,
            vec![lp(n, 8, 4), lp(2, 4, 1024)],
            (0, 0),
        ));
    }
}

/// Interleave (`dst[f x + j] = src[j][x]`) or deinterleave (the reverse) of `f` rows of `n`
/// runs of `run` bytes, inside an outer loop, with optional reversal of the lane loop.
fn interleave(
    dtype: DType,
    run: u64,
    f: u64,
    n: u64,
    deinterleave: bool,
    outer: u64,
) -> LoopKernel {
    let r = run as i64;
    let row = r * n as i64 + 8;
    let (fl, xl) = if deinterleave {
        (lp(f, r, row), lp(n, r * f as i64, r))
    } else {
        (lp(f, row, r), lp(n, r, r * f as i64))
    };
    let span = row.max(r * (f * n) as i64) * f as i64 + 16;
    kernel(dtype, run, vec![lp(outer, span, span), xl, fl], (3, 5))
}

#[test]
fn every_factor_and_element_size() {
    for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
        let e = dtype.size();
        for f in 2..=4 {
            for n in [1u64, 2, 15, 16, 17, 40] {
                for de in [false, true] {
                    check(&interleave(dtype, e, f, n, de, 3));
                }
            }
        }
    }
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::U8, DType::F16, DType::F32, DType::F64])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random interleave / deinterleave statements: factor, element size, run of one or a few
    /// elements, extents, outer loops in random places, offsets, negative strides.
    #[test]
    fn random_interleaves(
        dtype in dtype(),
        elems in prop_oneof![4 => Just(1u64), 1 => 2u64..7],
        f in 2u64..=4,
        n in 1u64..70,
        de in any::<bool>(),
        outer in prop::collection::vec((1u64..4, any::<bool>()), 0..3),
        at in 0usize..3,
        reverse in any::<bool>(),
        gap in 0i64..3,
        slack in (0i64..20, 0i64..20),
    ) {
        let run = elems * dtype.size();
        let r = run as i64;
        let row = r * n as i64 + gap * r;
        let (mut fl, mut xl) = if de {
            (lp(f, r, row), lp(n, r * f as i64, r))
        } else {
            (lp(f, row, r), lp(n, r, r * f as i64))
        };
        if reverse {
            xl.src_stride = -xl.src_stride;
            xl.dst_stride = -xl.dst_stride;
            fl.dst_stride = -fl.dst_stride;
        }
        let mut span = row.max(r * (f * n) as i64) * f as i64 + r;
        let mut loops = vec![xl, fl];
        for (extent, neg) in outer {
            let s = if neg { -span } else { span };
            let pos = at.min(loops.len());
            loops.insert(pos, lp(extent, s, s));
            span *= extent as i64;
        }
        let k = kernel(dtype, run, loops, slack);
        for threads in [1, 2, 3, 7] {
            let m = mismatch(&k, threads);
            prop_assert!(m.is_none(), "{}", m.unwrap_or_default());
        }
    }
}

/// A strided gather with no slack around it: `rows` rows of `width` elements of `dtype`, and
/// from each the `n` elements `start, start + step, ...` (step negative: reversed), so that the
/// first and last elements read can be the first and last of the source. The shuffle path
/// loads whole vectors with the skipped elements; they must stay inside the source.
fn gather(dtype: DType, rows: u64, width: u64, start: i64, step: i64, n: u64) -> LoopKernel {
    let e = dtype.size() as i64;
    LoopKernel {
        bands: Vec::new(),
        name: "gather".into(),
        src: TensorType::new(dtype, [rows, width]),
        dst: TensorType::new(dtype, [rows, n]),
        stmts: vec![LoopStmt {
            action: LoopAction::Copy,
            bytes: e as u64,
            src_offset: start * e,
            dst_offset: 0,
            loops: vec![lp(rows, width as i64 * e, n as i64 * e), lp(n, step * e, e)],
            window: None,
        }],
    }
}

/// Every element size with steps 2 to 4, forward and reversed, reading up to both ends of
/// the source; each really runs as shuffle blocks over vectors with skipped bytes.
#[test]
fn strided_gathers_up_to_the_source_ends() {
    for dtype in [DType::U8, DType::F16, DType::F32, DType::F64] {
        for step in [2i64, 3, 4, -2, -3, -4] {
            let s = step.unsigned_abs();
            for (n, lead) in [(32u64, 0u64), (33, 1), (35, s - 1), (64, 0), (17, 2)] {
                // The last element read is the last of the row (first, reversed).
                let width = lead + (n - 1) * s + 1;
                let start = if step > 0 {
                    lead as i64
                } else {
                    width as i64 - 1 - lead as i64
                };
                let k = gather(dtype, 3, width, start, step, n);
                relayout_ir::verify_loop_kernel(&k).unwrap_or_else(|e| panic!("{e}\n{k}"));
                // Every f32 of four in a row flush with both ends: its vectors would lie
                // outside at one end whichever way they are aligned, and kept inside they
                // cost more shuffles than the scalar moves.
                let tight_f32_step4 = dtype.size() == 4 && s == 4 && n % 4 == 0 && lead == 0;
                let what = relayout_codegen::describe(&k, 0).unwrap();
                assert!(
                    tight_f32_step4 || what.contains("gathered from whole vectors"),
                    "{what}\n{k}"
                );
                check(&k);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random strided gathers in tight buffers, their loops in either order, on one thread
    /// and in pieces.
    #[test]
    fn random_strided_gathers(
        dtype in dtype(),
        rows in 1u64..4,
        n in 1u64..70,
        step in prop::sample::select(vec![-4i64, -3, -2, -1, 2, 3, 4]),
        (lead, tail) in (0u64..5, 0u64..5),
        swap in any::<bool>(),
    ) {
        let s = step.unsigned_abs();
        let width = lead + (n - 1) * s + 1 + tail;
        let start = if step > 0 { lead } else { lead + (n - 1) * s } as i64;
        let mut k = gather(dtype, rows, width, start, step, n);
        if swap {
            k.stmts[0].loops.swap(0, 1);
        }
        relayout_ir::verify_loop_kernel(&k).unwrap();
        for threads in [1, 2, 3, 7] {
            let m = mismatch(&k, threads);
            prop_assert!(m.is_none(), "{}", m.unwrap_or_default());
        }
    }
}

/// A 2-D transpose of `rows x cols` elements of `dtype` as `tile-transposes` leaves it: the
/// source-contiguous loop split into `cols / f` blocks of `f = 16 / size` destination rows,
/// the destination-contiguous lane loop innermost.
fn square_blocks(dtype: DType, rows: u64, cols: u64) -> LoopKernel {
    let e = dtype.size() as i64;
    let f = 16 / e as u64;
    let (r, c) = (rows as i64, cols as i64);
    LoopKernel {
        bands: Vec::new(),
        name: "transpose".into(),
        src: TensorType::new(dtype, [rows, cols]),
        dst: TensorType::new(dtype, [cols, rows]),
        stmts: vec![LoopStmt {
            action: LoopAction::Copy,
            bytes: e as u64,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![
                lp(cols / f, f as i64 * e, f as i64 * r * e),
                lp(f, e, r * e),
                lp(rows, c * e, e),
            ],
            window: None,
        }],
    }
}

/// Square register transposes of every element size (2x2 f64, 4x4 f32, 8x8 16-bit, 16x16
/// bytes), lane loops that are and are not a multiple of the block (scalar leftovers), on
/// one thread and in pieces; each really runs as shuffle blocks.
#[test]
fn square_register_transposes_of_every_element_size() {
    for dtype in [DType::U8, DType::F16, DType::BF16, DType::F32, DType::F64] {
        let f = 16 / dtype.size();
        for (rows, blocks) in [(f, 1), (2 * f, 3), (3 * f + 5, 2), (40, 4)] {
            let k = square_blocks(dtype, rows, blocks * f);
            relayout_ir::verify_loop_kernel(&k).unwrap_or_else(|e| panic!("{e}\n{k}"));
            let what = relayout_codegen::describe(&k, 0).unwrap();
            assert!(what.contains("16-byte shuffle blocks"), "{what}\n{k}");
            check(&k);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// Random square-block transposes: any element size, lane loops of any length (leftover
    /// source rows run as scalars), one to four blocks, on one thread and in pieces.
    #[test]
    fn random_square_block_transposes(dtype in dtype(), rows in 1u64..70, blocks in 1u64..5) {
        let k = square_blocks(dtype, rows, blocks * (16 / dtype.size()));
        relayout_ir::verify_loop_kernel(&k).unwrap_or_else(|e| panic!("{e}\n{k}"));
        for threads in [1, 3] {
            if let Some(m) = mismatch(&k, threads) {
                prop_assert!(false, "{}", m);
            }
        }
    }
}
