//! Execution tests: hand-built loop kernels of every action, JIT result == interpreter result,
//! bit for bit, on one thread and on several.

use relayout_ir::{interpret_loops, DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::{CompiledKernel, Split};

mod support;
use support::{bytes, lp};

fn stmt(
    action: LoopAction,
    bytes: u64,
    src_offset: i64,
    dst_offset: i64,
    loops: Vec<Loop>,
) -> LoopStmt {
    LoopStmt {
        action,
        bytes,
        src_offset,
        dst_offset,
        loops,
        window: None,
    }
}

/// A kernel over 1-D tensors of `src_len` and `dst_len` bytes (rounded up to whole elements).
fn kernel(dtype: DType, src_len: u64, dst_len: u64, stmts: Vec<LoopStmt>) -> LoopKernel {
    let elems = |n: u64| n.div_ceil(dtype.size());
    LoopKernel {
        bands: Vec::new(),
        name: "test".into(),
        src: TensorType::new(dtype, [elems(src_len)]),
        dst: TensorType::new(dtype, [elems(dst_len)]),
        stmts,
    }
}

/// Runs `k` through the JIT (single-threaded and threaded) and the interpreter on the given
/// buffers and asserts that all results are identical.
fn check_with(k: &LoopKernel, src: &[u8], dst: &[u8]) {
    let mut want = dst.to_vec();
    interpret_loops(k, src, &mut want).unwrap_or_else(|e| panic!("interpreter: {e}\n{k}"));
    let compiled = CompiledKernel::compile(k).unwrap_or_else(|e| panic!("compile: {e}\n{k}"));
    let mut got = dst.to_vec();
    compiled.run(src, &mut got).expect("run");
    assert_bytes_eq(k, &got, &want, "run");
    for pieces in [2, 3, 7] {
        let mut got = dst.to_vec();
        let report = compiled
            .run_split(src, &mut got, Split::Pieces(pieces))
            .expect("run_split");
        report
            .check_forced(pieces)
            .unwrap_or_else(|e| panic!("{e}\n{k}"));
        assert_bytes_eq(k, &got, &want, &format!("{pieces} pieces"));
    }
}

fn assert_bytes_eq(k: &LoopKernel, got: &[u8], want: &[u8], what: &str) {
    if let Some(i) = got.iter().zip(want).position(|(a, b)| a != b) {
        panic!(
            "{what}: byte {i} is {:#04x}, the interpreter says {:#04x}\n{k}",
            got[i], want[i]
        );
    }
}

/// `check_with` on random source and destination bytes.
fn check(k: &LoopKernel) {
    let src = bytes(k.src.size_bytes().unwrap() as usize, 1);
    let dst = bytes(k.dst.size_bytes().unwrap() as usize, 2);
    check_with(k, &src, &dst);
}

/// Run lengths: every length up to 300, and around the vector-loop and libc-call thresholds.
fn run_lengths() -> impl Iterator<Item = u64> {
    (1..=300).chain([
        383, 384, 385, 511, 512, 513, 1000, 4096, 4099, 65535, 65536, 65537, 70001,
    ])
}

#[test]
fn copy_runs_of_every_length() {
    for n in run_lengths() {
        // Gaps between runs, so that a move past the end of a run would show.
        let (ss, ds) = (n as i64 + 5, n as i64 + 3);
        let k = kernel(
            DType::U8,
            3 * ss as u64 + 1,
            3 * ds as u64 + 2,
            vec![stmt(LoopAction::Copy, n, 1, 2, vec![lp(3, ss, ds)])],
        );
        check(&k);
        // A single run, without loops.
        let k = kernel(
            DType::U8,
            n + 7,
            n + 9,
            vec![stmt(LoopAction::Copy, n, 7, 9, vec![])],
        );
        check(&k);
    }
}

#[test]
fn fill_runs_of_every_length() {
    for n in run_lengths() {
        let ds = n as i64 + 3;
        let k = kernel(
            DType::U8,
            1,
            4 * ds as u64,
            vec![stmt(
                LoopAction::ZERO_FILL,
                n,
                0,
                1,
                vec![lp(2, 0, ds), lp(2, 0, 2 * ds)],
            )],
        );
        check(&k);
    }
}

#[test]
fn small_runs_in_unrolled_loops_of_every_count() {
    // The innermost loop is unrolled around runs of up to 16 bytes; counts around multiples
    // of the unroll factor exercise the remainder, both as the outermost loop (a runtime
    // count) and as an inner loop (a constant count).
    for n in [1u64, 2, 3, 4, 6, 8, 12, 16] {
        for extent in 0..14u64 {
            let (ss, ds) = (n as i64 + 1, n as i64 + 2);
            let len = |s: i64| extent * s as u64 + 16;
            for action in [
                LoopAction::Copy,
                LoopAction::ZERO_FILL,
                LoopAction::Accumulate,
            ] {
                let src_stride = if action.is_fill() { 0 } else { ss };
                let k = kernel(
                    DType::U8,
                    len(ss),
                    len(ds),
                    vec![stmt(action, n, 0, 0, vec![lp(extent, src_stride, ds)])],
                );
                check(&k);
                let k = kernel(
                    DType::U8,
                    2 * len(ss),
                    2 * len(ds),
                    vec![stmt(
                        action,
                        n,
                        0,
                        0,
                        vec![
                            lp(2, src_stride * extent as i64, ds * extent as i64),
                            lp(extent, src_stride, ds),
                        ],
                    )],
                );
                check(&k);
            }
        }
    }
}

#[test]
fn negative_strides_reverse_and_transpose() {
    // dst[i][j] = src[j][i] over a 5x7 matrix of 4-byte elements, both walked backwards.
    let (r, c, e) = (5i64, 7i64, 4i64);
    let k = kernel(
        DType::F32,
        (r * c * e) as u64,
        (r * c * e) as u64,
        vec![stmt(
            LoopAction::Copy,
            e as u64,
            (r * c - 1) * e,
            (r * c - 1) * e,
            vec![lp(c as u64, -e, -r * e), lp(r as u64, -c * e, -e)],
        )],
    );
    check(&k);
    // Reversed runs of 24 bytes.
    let k = kernel(
        DType::U16,
        240,
        240,
        vec![stmt(LoopAction::Copy, 24, 216, 0, vec![lp(10, -24, 24)])],
    );
    check(&k);
}

#[test]
fn zero_strides_accumulate_and_broadcast() {
    for dtype in DType::ALL {
        let e = dtype.size();
        // Sum 6 rows of 5 elements into one row (dst stride 0), then add one row to each of 4
        // rows (src stride 0).
        let row = 5 * e;
        let k = kernel(
            dtype,
            6 * row,
            4 * row,
            vec![
                stmt(
                    LoopAction::Accumulate,
                    row,
                    0,
                    0,
                    vec![lp(6, row as i64, 0)],
                ),
                stmt(
                    LoopAction::Accumulate,
                    row,
                    0,
                    0,
                    vec![lp(4, 0, row as i64)],
                ),
                stmt(
                    LoopAction::Accumulate,
                    e,
                    0,
                    row as i64,
                    vec![lp(3, 0, 0), lp(5, e as i64, e as i64)],
                ),
            ],
        );
        check_with(
            &k,
            &special_values(dtype, 6 * row as usize, 3),
            &special_values(dtype, 4 * row as usize, 4),
        );
    }
}

#[test]
fn zero_extent_loops_do_nothing() {
    for loops in [
        vec![lp(0, 4, 4)],
        vec![lp(3, 4, 4), lp(0, 1, 1)],
        vec![lp(0, 4, 4), lp(2, 1, 1)],
    ] {
        for action in [LoopAction::Copy, LoopAction::Accumulate] {
            let k = kernel(
                DType::U32,
                64,
                64,
                vec![stmt(action, 4, 0, 0, loops.clone())],
            );
            check(&k);
        }
    }
}

/// Little-endian bytes of values worth adding for `dtype` (NaN, signed zeros, infinities,
/// wrapping integers, values that round in f16/bf16), repeated and mixed with random bytes.
fn special_values(dtype: DType, len: usize, seed: u64) -> Vec<u8> {
    let f32s = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.1,
        1e-40,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3.0e38,
        1.0e-3,
        2049.0,
        f32::from_bits(0x7fc0_1234),
        f32::from_bits(0xff80_0001),
    ];
    let f64s: Vec<f64> = f32s
        .iter()
        .map(|&v| f64::from(v))
        .chain([
            f64::MAX,
            1e-310,
            0.1 + 0.2,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_dead_0000),
        ])
        .collect();
    let pool: Vec<Vec<u8>> = match dtype {
        DType::F32 | DType::C64 => f32s.iter().map(|v| v.to_le_bytes().to_vec()).collect(),
        DType::F64 | DType::C128 => f64s.iter().map(|v| v.to_le_bytes().to_vec()).collect(),
        DType::F16 => f32s
            .iter()
            .map(|&v| half::f16::from_f32(v).to_le_bytes().to_vec())
            .chain([
                vec![0x01, 0x00],
                vec![0xff, 0x7b],
                vec![0x01, 0x3c],
                vec![0x01, 0x7c],
                vec![0x23, 0xfe],
            ])
            .collect(),
        DType::BF16 => f32s
            .iter()
            .map(|&v| half::bf16::from_f32(v).to_le_bytes().to_vec())
            .chain([
                vec![0x01, 0x00],
                vec![0x7f, 0x7f],
                vec![0x81, 0x3f],
                vec![0x81, 0x7f],
                vec![0xc5, 0xff],
            ])
            .collect(),
        DType::Bool => vec![vec![0], vec![1], vec![2], vec![255]],
        _ => {
            let e = dtype.size() as usize;
            let ones = vec![0xffu8; e];
            let mut max = vec![0xffu8; e];
            max[e - 1] = 0x7f;
            let mut min = vec![0u8; e];
            min[e - 1] = 0x80;
            let mut one = vec![0u8; e];
            one[0] = 1;
            vec![ones, max, min, one, vec![0; e]]
        }
    };
    let random = bytes(len, seed);
    let e = dtype.size() as usize;
    let mut out = Vec::with_capacity(len);
    let mut k = seed as usize;
    while out.len() < len {
        let at = out.len();
        if k % 4 == 3 {
            out.extend_from_slice(&random[at..(at + e).min(len)]);
        } else {
            out.extend_from_slice(&pool[k % pool.len()]);
        }
        k = k.wrapping_mul(7).wrapping_add(3);
    }
    out.truncate(len);
    out
}

#[test]
fn accumulate_every_dtype_and_length() {
    for dtype in DType::ALL {
        let e = dtype.size();
        for elems in (1..=40).chain([63, 64, 65, 130, 150]) {
            let n = elems * e;
            if n > 600 {
                continue;
            }
            let (ss, ds) = (n as i64 + e as i64, n as i64 + 2 * e as i64);
            let k = kernel(
                dtype,
                3 * ss as u64,
                3 * ds as u64,
                vec![stmt(LoopAction::Accumulate, n, 0, 0, vec![lp(3, ss, ds)])],
            );
            let src = special_values(dtype, k.src.size_bytes().unwrap() as usize, elems);
            let dst = special_values(dtype, k.dst.size_bytes().unwrap() as usize, elems + 1);
            check_with(&k, &src, &dst);
        }
    }
}

#[test]
fn accumulate_with_reduction_loops_every_dtype_and_length() {
    // Innermost loops of destination stride 0 (what `output-stationary` makes): codegen sums
    // their contributions in registers and stores once; every element must still see the same
    // additions in the same order (NaN payloads, -0.0 and f16/bf16 rounding included).
    for dtype in DType::ALL {
        let e = dtype.size();
        for elems in (1..=24).chain([31, 63, 64, 65, 81, 100, 150, 161]) {
            let n = elems * e;
            if n > 700 {
                continue;
            }
            let (rows_src, rows_dst) = (n as i64 + e as i64, n as i64 + 3 * e as i64);
            // Two reduction loops (2 x 3 terms) whose runs overlap in the source.
            let terms = [lp(2, 5 * rows_src, 0), lp(3, e as i64, 0)];
            let k = kernel(
                dtype,
                (3 + 5 * 2) as u64 * rows_src as u64 + 3 * e,
                3 * rows_dst as u64,
                vec![stmt(
                    LoopAction::Accumulate,
                    n,
                    0,
                    0,
                    [lp(3, rows_src, rows_dst)]
                        .into_iter()
                        .chain(terms)
                        .collect(),
                )],
            );
            let src = special_values(dtype, k.src.size_bytes().unwrap() as usize, elems);
            let dst = special_values(dtype, k.dst.size_bytes().unwrap() as usize, elems + 1);
            check_with(&k, &src, &dst);
        }
    }
}

#[test]
fn sum_from_zero_every_dtype_and_length() {
    // `accumulate ... = 0 + ...`: the sums start from +0.0 in registers, the destination is
    // never read. With reduction loops, with none (one term), without outer loops, and with
    // outer iterations whose runs overlap (the last one wins); NaN payloads, -0.0 and f16/bf16
    // rounding included.
    for dtype in DType::ALL {
        let e = dtype.size();
        for elems in (1..=24).chain([31, 63, 64, 65, 81, 100, 150, 161]) {
            let n = elems * e;
            if n > 700 {
                continue;
            }
            let (rows_src, rows_dst) = (n as i64 + e as i64, n as i64 + 3 * e as i64);
            let terms = [lp(2, 5 * rows_src, 0), lp(3, e as i64, 0)];
            let src_len = (3 + 5 * 2) as u64 * rows_src as u64 + 3 * e;
            let dst_len = 3 * rows_dst as u64;
            let shapes: [Vec<Loop>; 5] = [
                [lp(3, rows_src, rows_dst)]
                    .into_iter()
                    .chain(terms)
                    .collect(),
                vec![lp(3, rows_src, rows_dst)],
                terms.to_vec(),
                vec![],
                // Outer runs overlapping by all but one element.
                [lp(3, rows_src, e as i64)]
                    .into_iter()
                    .chain(terms)
                    .collect(),
            ];
            for loops in shapes {
                let k = kernel(
                    dtype,
                    src_len,
                    dst_len,
                    vec![stmt(LoopAction::Sum, n, 0, 0, loops)],
                );
                let src = special_values(dtype, k.src.size_bytes().unwrap() as usize, elems);
                let dst = special_values(dtype, k.dst.size_bytes().unwrap() as usize, elems + 1);
                check_with(&k, &src, &dst);
            }
        }
    }
}

#[test]
fn sum_from_zero_of_negative_zeros_is_positive_zero() {
    // +0.0 + -0.0 is +0.0: a sum from +0.0 must add its first term to a zero, not start from
    // it. And NaN stays NaN.
    for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let e = dtype.size();
        for elems in [1u64, 3, 4, 8, 17] {
            let n = elems * e;
            for (bits, want_zero) in [(0x80u8, true), (0xffu8, false)] {
                // Every element -0.0 (only the sign bit) or all ones (a NaN).
                let mut src = vec![0u8; (4 * n) as usize];
                for el in src.chunks_mut(e as usize) {
                    if bits == 0x80 {
                        *el.last_mut().unwrap() = 0x80;
                    } else {
                        el.fill(0xff);
                    }
                }
                for loops in [
                    vec![lp(2, n as i64, n as i64), lp(2, 2 * n as i64, 0)],
                    vec![],
                ] {
                    let k = kernel(
                        dtype,
                        4 * n,
                        2 * n,
                        vec![stmt(LoopAction::Sum, n, 0, 0, loops)],
                    );
                    let dst = vec![0x5au8; (2 * n) as usize];
                    check_with(&k, &src, &dst);
                    let compiled = CompiledKernel::compile(&k).unwrap();
                    let mut got = dst.clone();
                    compiled.run(&src, &mut got).unwrap();
                    let written = if k.stmts[0].loops.is_empty() {
                        n
                    } else {
                        2 * n
                    } as usize;
                    if want_zero {
                        assert!(got[..written].iter().all(|&b| b == 0), "{dtype}: {got:?}");
                    } else {
                        assert!(
                            got[..written].iter().all(|&b| b != 0x5a),
                            "{dtype}: {got:?}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn accumulate_overlapping_runs_in_order() {
    // Runs of 8 u16 elements whose destinations overlap by 6 elements: each run must see the
    // previous run's sums.
    let k = kernel(
        DType::U16,
        160,
        64,
        vec![stmt(LoopAction::Accumulate, 16, 0, 0, vec![lp(10, 16, 4)])],
    );
    check(&k);
    // Overlapping copies: the last one wins.
    let k = kernel(
        DType::U8,
        400,
        64,
        vec![stmt(LoopAction::Copy, 40, 0, 0, vec![lp(10, 40, 2)])],
    );
    check(&k);
}

#[test]
fn statements_run_in_order() {
    let k = kernel(
        DType::I32,
        64,
        64,
        vec![
            stmt(LoopAction::ZERO_FILL, 64, 0, 0, vec![]),
            stmt(LoopAction::Copy, 8, 0, 8, vec![lp(4, 16, 16)]),
            stmt(
                LoopAction::Accumulate,
                4,
                4,
                0,
                vec![lp(8, 8, 8), lp(2, 0, 0)],
            ),
        ],
    );
    check(&k);
}

#[test]
fn large_kernels_split_over_threads() {
    // 2 MiB in rows of 4 KiB (libc calls), a 512x512 f32 transpose (scalar moves, split over
    // destination rows), and a column-strided accumulate.
    let rows = 512u64;
    let k = kernel(
        DType::U8,
        rows * 4096,
        rows * 4096,
        vec![stmt(
            LoopAction::Copy,
            4096,
            0,
            0,
            vec![lp(rows, 4096, 4096)],
        )],
    );
    check(&k);
    let n = 512i64;
    let k = kernel(
        DType::F32,
        (n * n * 4) as u64,
        (n * n * 4) as u64,
        vec![stmt(
            LoopAction::Copy,
            4,
            0,
            0,
            vec![lp(n as u64, 4, n * 4), lp(n as u64, n * 4, 4)],
        )],
    );
    check(&k);
    let k = kernel(
        DType::F64,
        (n * n * 8) as u64,
        (n * 8) as u64,
        vec![stmt(
            LoopAction::Accumulate,
            8,
            0,
            0,
            vec![lp(n as u64, 8, 8), lp(n as u64, n * 8, 0)],
        )],
    );
    check(&k);
}

#[test]
fn accumulate_nan_payloads_like_the_interpreter() {
    // Both operands NaN with different payloads, quiet and signalling: the result's payload
    // depends on the operand order, which must be `acc + x` as in `DType::add_assign`.
    let cases: [(DType, &[u64]); 6] = [
        (
            DType::F32,
            &[0x7fc0_1234, 0xff80_0001, 0x7f80_0000, 0x8000_0000],
        ),
        (
            DType::C64,
            &[0x7fc0_1234, 0xff80_0001, 0x7f80_0000, 0x8000_0000],
        ),
        (
            DType::F64,
            &[
                0x7ff8_0000_0000_1234,
                0xfff0_0000_0000_0001,
                0x8000_0000_0000_0000,
            ],
        ),
        (
            DType::C128,
            &[
                0x7ff8_0000_0000_1234,
                0xfff0_0000_0000_0001,
                0x8000_0000_0000_0000,
            ],
        ),
        (DType::F16, &[0x7e01, 0xfc01, 0x7c00, 0x8000]),
        (DType::BF16, &[0x7fc1, 0xff81, 0x7f80, 0x8000]),
    ];
    for (dtype, values) in cases {
        let e = dtype.size() as usize;
        let part = if dtype.is_complex() { e / 2 } else { e };
        let encode = |v: u64| v.to_le_bytes()[..part].repeat(e / part);
        // Every pair of values, element by element: dst holds value i, src value j.
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for &a in values {
            for &x in values {
                dst.extend(encode(a));
                src.extend(encode(x));
            }
        }
        let len = src.len() as u64;
        for bytes in [e as u64, len] {
            let k = kernel(
                dtype,
                len,
                len,
                vec![stmt(
                    LoopAction::Accumulate,
                    bytes,
                    0,
                    0,
                    vec![lp(len / bytes, bytes as i64, bytes as i64)],
                )],
            );
            check_with(&k, &src, &dst);
        }
    }
}

#[test]
fn small_inner_loops_fold_into_the_body() {
    // Inner loops of 2..=4 iterations around small runs are unrolled completely, and the
    // outer loop then by the remaining factor: DepthToSpace-like interleaves of every depth.
    for outer in 1..10u64 {
        for inner in [
            vec![2u64],
            vec![3],
            vec![4],
            vec![2, 2],
            vec![3, 2],
            vec![2, 2, 2],
            vec![9],
        ] {
            for run in [1u64, 4, 16] {
                let points: u64 = inner.iter().product();
                // Destination: the inner loops are contiguous; source: planes of the outer loop.
                let mut loops = vec![lp(outer, run as i64, (points * run) as i64)];
                let mut dst_stride = (points * run) as i64;
                let plane = (outer * run) as i64;
                let mut src_stride = plane;
                for &e in &inner {
                    dst_stride /= e as i64;
                    loops.push(lp(e, src_stride, dst_stride));
                    src_stride *= e as i64;
                }
                let len = outer * points * run;
                let k = kernel(
                    DType::U8,
                    len,
                    len,
                    vec![stmt(LoopAction::Copy, run, 0, 0, loops)],
                );
                check(&k);
            }
        }
    }
}
