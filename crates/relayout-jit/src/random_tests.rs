//! Property test: random in-bounds loop kernels, JIT == interpreter, bit for bit, on one
//! thread and split into as many pieces as the outermost loop allows (which the public
//! `run_threaded` only does for large statements).

use crate::module::JitCode;
use proptest::prelude::*;
use relayout_ir::{interpret_loops, DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};

/// A statement before its offsets are placed: action, run length in elements, loops.
#[derive(Clone, Debug)]
struct Shape {
    action: LoopAction,
    elems: u64,
    loops: Vec<Loop>,
    slack: (i64, i64),
    /// Space the outer iterations so that they write disjoint bytes (and may be split over
    /// threads): the outer destination stride becomes the span of one iteration, negated when
    /// this is `Some(true)`.
    disjoint: Option<bool>,
}

fn shape() -> impl Strategy<Value = Shape> {
    let action = prop_oneof![
        Just(LoopAction::Copy),
        Just(LoopAction::ZERO_FILL),
        Just(LoopAction::Accumulate)
    ];
    // Mostly short runs; some long enough for the in-run vector loop, a few for libc calls.
    let elems = prop_oneof![40 => 1u64..24, 10 => 24u64..700, 1 => 65536u64..66000];
    let lp = (
        prop_oneof![1 => Just(0u64), 12 => 1u64..9],
        -80i64..80,
        -80i64..80,
    )
        .prop_map(|(extent, src_stride, dst_stride)| Loop {
            extent,
            src_stride,
            dst_stride,
        });
    (
        action,
        elems,
        prop::collection::vec(lp, 0..4),
        (0i64..9, 0i64..9),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(action, elems, loops, slack, disjoint)| Shape {
            action,
            elems,
            loops,
            slack,
            disjoint,
        })
}

/// Places each statement so that it is in bounds: the offset lifts the lowest access to
/// `slack`, and the tensors are made long enough for the highest.
fn kernel(dtype: DType, shapes: Vec<Shape>) -> LoopKernel {
    let e = dtype.size();
    let (mut src_len, mut dst_len) = (1u64, 1u64);
    let mut stmts = Vec::new();
    for mut s in shapes {
        let bytes = s.elems * e;
        if bytes >= 1 << 16 {
            // Keep the buffers of long runs small enough to test quickly.
            s.loops.truncate(1);
            for l in &mut s.loops {
                l.extent = l.extent.min(3);
            }
        }
        if s.action.is_fill() {
            for l in &mut s.loops {
                l.src_stride = 0;
            }
        }
        if let (Some(negative), Some((_, inner))) = (s.disjoint, s.loops.split_first()) {
            let span = inner.iter().fold(bytes as i64, |span, l| {
                span + l.dst_stride.abs() * (l.extent.max(1) as i64 - 1)
            });
            s.loops[0].dst_stride = if negative { -span } else { span };
        }
        let reach = |stride: &dyn Fn(&Loop) -> i64| {
            s.loops.iter().fold((0i64, 0i64), |(lo, hi), l| {
                let span = stride(l) * (l.extent.max(1) as i64 - 1);
                (lo + span.min(0), hi + span.max(0))
            })
        };
        let (slo, shi) = reach(&|l| l.src_stride);
        let (dlo, dhi) = reach(&|l| l.dst_stride);
        let src_offset = if s.action.is_fill() {
            0
        } else {
            s.slack.0 - slo
        };
        let dst_offset = s.slack.1 - dlo;
        src_len = src_len.max((src_offset + shi) as u64 + bytes);
        dst_len = dst_len.max((dst_offset + dhi) as u64 + bytes);
        stmts.push(LoopStmt {
            action: s.action,
            bytes,
            src_offset,
            dst_offset,
            loops: s.loops,
            window: None,
        });
    }
    LoopKernel {
        bands: Vec::new(),
        name: "random".into(),
        src: TensorType::new(dtype, [src_len.div_ceil(e)]),
        dst: TensorType::new(dtype, [dst_len.div_ceil(e)]),
        stmts,
    }
}

fn case() -> impl Strategy<Value = (LoopKernel, u64)> {
    (
        prop::sample::select(DType::ALL.to_vec()),
        prop::collection::vec(shape(), 1..4),
        any::<u64>(),
    )
        .prop_map(|(dtype, shapes, seed)| (kernel(dtype, shapes), seed))
}

fn bytes(len: u64, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn jit_matches_interpreter((k, seed) in case()) {
        let src = bytes(k.src.size_bytes().unwrap(), seed);
        let dst = bytes(k.dst.size_bytes().unwrap(), !seed);
        let mut want = dst.clone();
        interpret_loops(&k, &src, &mut want).unwrap();
        let code = JitCode::compile(&k).unwrap();
        let mut got = dst.clone();
        code.run(&src[..], &mut got[..], &|_, _| 1, &mut |s| assert_eq!(s.pieces, 1)).unwrap();
        prop_assert_eq!(&got, &want, "single-threaded\n{}", k);
        for pieces in [2usize, 3, 64] {
            let mut got = dst.clone();
            let mut ran = Vec::new();
            code.run(
                &src[..],
                &mut got[..],
                &|_, extent| pieces.min(extent as usize),
                &mut |s| ran.push(s),
            )
            .unwrap();
            prop_assert_eq!(&got, &want, "{} pieces\n{}", pieces, k);
            // Every statement ran, and one whose outer loop writes disjoint bytes ran in as
            // many pieces as asked (capped by its outer loop), or, when its wide variant (two
            // outer loops swapped) or its collapsed form gives more pieces, in as many as
            // that gives.
            // A statement that a helper runs is cut along the helper's nest (`threaded_cut`).
            prop_assert_eq!(ran.len(), k.stmts.len());
            let helpers = relayout_codegen::helper_kernel(&k).unwrap();
            for (i, (stmt, s)) in k.stmts.iter().zip(&ran).enumerate() {
                let (extent, disjoint) =
                    super::module::threaded_cut(stmt, helpers.as_ref().map(|runs| runs[i]));
                let own = if disjoint {
                    pieces.min(extent as usize).max(1)
                } else {
                    1
                };
                let wide = super::module::wide_variant(stmt)
                    .map(|w| (w.loops[0].extent, pieces.min(w.loops[0].extent as usize)))
                    .filter(|&(_, n)| n > own);
                let best = wide.map_or(own, |(_, n)| n);
                // The collapsed form (two outer loops as one) when it gives more still.
                let collapsed = super::module::collapsible(stmt)
                    .map(|(e0, e1)| (e0 * e1, pieces.min((e0 * e1) as usize)))
                    .filter(|&(_, n)| n > best);
                match collapsed.or(wide) {
                    Some((wide_extent, n)) => {
                        prop_assert_eq!(s.outer_extent, wide_extent, "{}", k);
                        prop_assert_eq!(s.pieces, n, "{}", k);
                    }
                    None => {
                        prop_assert_eq!(s.outer_extent, extent);
                        prop_assert_eq!(s.pieces, own, "{}", k);
                    }
                }
            }
        }
    }
}

/// A kernel of one statement whose outer loop has 2 iterations (a batch of 2) splits into 7
/// pieces through its wide variant, into 12 or 16 through its two outer loops collapsed into
/// one of 16 iterations, and computes what the interpreter computes.
#[test]
fn a_short_outer_loop_splits_through_the_wide_variant_or_collapsed() {
    let k = LoopKernel {
        name: "t".into(),
        src: TensorType::new(DType::U8, [2, 8, 4]),
        dst: TensorType::new(DType::U8, [2, 4, 8]),
        stmts: vec![LoopStmt {
            action: LoopAction::Copy,
            bytes: 1,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![
                Loop {
                    extent: 2,
                    src_stride: 32,
                    dst_stride: 32,
                },
                Loop {
                    extent: 8,
                    src_stride: 4,
                    dst_stride: 1,
                },
                Loop {
                    extent: 4,
                    src_stride: 1,
                    dst_stride: 8,
                },
            ],
            window: None,
        }],
        bands: vec![],
    };
    let src = bytes(64, 1);
    let mut want = bytes(64, 2);
    interpret_loops(&k, &src, &mut want).unwrap();
    let code = JitCode::compile(&k).unwrap();
    for (pieces, extent, ran_pieces) in [
        (2usize, 2u64, 2usize),
        (3, 8, 3),
        (7, 8, 7),
        (12, 16, 12),
        (64, 16, 16),
    ] {
        let mut got = bytes(64, 2);
        let mut ran = Vec::new();
        code.run(
            &src[..],
            &mut got[..],
            &|_, e| pieces.min(e as usize),
            &mut |s| ran.push(s),
        )
        .unwrap();
        assert_eq!(got, want, "{pieces} pieces");
        assert_eq!(
            (ran[0].outer_extent, ran[0].pieces),
            (extent, ran_pieces),
            "{pieces}"
        );
    }
}
