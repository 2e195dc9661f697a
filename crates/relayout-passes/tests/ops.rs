//! Every pass preserves the meaning of real op lowerings, over a sweep of op variants: every
//! data format and mode, block sizes 1 to 4, odd sizes, paddings larger than the data, crops,
//! M = 1..3 spatial dims, Col2Im in 2-D to 4-D with pads, strides and dilations. The default
//! pipeline must turn each of them into a loop kernel.

mod common;

use common::{check_every_pass, check_preserves};
use relayout_ir::{AnyKernel, DType, Kernel, TensorType};
use relayout_ops::{DataFormat, DepthToSpaceMode, Op, PadMode, PadValue};
use relayout_passes::{default_pipeline, PassManager, DEFAULT_PIPELINE};

/// Lowers `op` on `shape`, or `None` when the op rejects the shape.
fn lower(op: &Op, dtype: DType, shape: &[u64]) -> Option<Kernel> {
    op.lower(&TensorType::new(dtype, shape.to_vec())).ok()
}

/// Checks every pass on the variant, and returns whether `peel-dims` had anything to do.
fn check_variant(op: &Op, dtype: DType, shape: &[u64]) -> Option<bool> {
    let k = lower(op, dtype, shape)?;
    check_every_pass(&k);
    // The pipeline run once, split at the lowering, gives what the two public entry points
    // give when each runs its part from the start.
    let (optimized, loops) = relayout_passes::optimize_and_lower(&k)
        .unwrap_or_else(|e| panic!("{op:?} on {shape:?}: {e}"));
    assert_eq!(Ok(optimized), relayout_passes::optimize_index(&k));
    assert_eq!(Ok(loops), relayout_passes::lower_to_loops(&k));
    let run = PassManager::new(default_pipeline()).run_collect(AnyKernel::Index(k));
    run.result
        .unwrap_or_else(|e| panic!("{op:?} on {shape:?}: {e}"));
    let after = |name: &str| {
        run.dumps
            .iter()
            .find(|d| d.pass == name)
            .map(|d| d.ir.clone())
    };
    Some(after("split-guards") != after("peel-dims"))
}

/// Checks the variants, and that at least `min_valid` of them were valid ops; returns how many
/// needed `peel-dims`.
fn sweep(variants: &[(Op, DType, Vec<u64>)], min_valid: usize) -> Vec<String> {
    let mut valid = 0;
    let mut peeled = Vec::new();
    for (op, dtype, shape) in variants {
        if let Some(p) = check_variant(op, *dtype, shape) {
            valid += 1;
            if p {
                peeled.push(format!("{op:?} {shape:?}"));
            }
        }
    }
    assert!(valid >= min_valid, "only {valid} valid variants");
    peeled
}

fn depth_variants() -> Vec<(Op, DType, Vec<u64>)> {
    let mut out = Vec::new();
    for b in 2..=3u64 {
        for (h, w, c) in [(1, 1, 1), (2, 3, 3), (1, 2, 5)] {
            let (hb, wb) = (h * b, w * b);
            out.push((
                Op::SpaceToDepth {
                    block_size: b as i64,
                    data_format: DataFormat::Nhwc,
                },
                DType::F32,
                vec![2, hb, wb, c],
            ));
            out.push((
                Op::SpaceToDepth {
                    block_size: b as i64,
                    data_format: DataFormat::Nchw,
                },
                DType::U8,
                vec![1, c, hb, wb],
            ));
            out.push((
                Op::SpaceToDepth {
                    block_size: b as i64,
                    data_format: DataFormat::NchwVectC,
                },
                DType::I16,
                vec![1, c, hb, wb, 4],
            ));
            for mode in [DepthToSpaceMode::Dcr, DepthToSpaceMode::Crd] {
                out.push((
                    Op::DepthToSpace {
                        block_size: b as i64,
                        data_format: DataFormat::Nchw,
                        mode,
                    },
                    DType::C64,
                    vec![2, c * b * b, h, w],
                ));
            }
            out.push((
                Op::DepthToSpace {
                    block_size: b as i64,
                    data_format: DataFormat::Nhwc,
                    mode: DepthToSpaceMode::Dcr,
                },
                DType::F64,
                vec![1, h, w, c * b * b],
            ));
            out.push((
                Op::DepthToSpace {
                    block_size: b as i64,
                    data_format: DataFormat::NchwVectC,
                    mode: DepthToSpaceMode::Dcr,
                },
                DType::BF16,
                vec![1, c * b * b, h, w, 4],
            ));
        }
    }
    out
}

#[test]
fn space_to_depth_and_depth_to_space() {
    let peeled = sweep(&depth_variants(), 40);
    assert!(peeled.is_empty(), "peel-dims fired on {peeled:#?}");
}

/// Transpose, Pad (every mode, crops, axes), Slice (negative steps, clamping), Tile,
/// Reshape and Im2Col (pads, strides, dilations) over small shapes of ranks 1 to 4.
fn beyond_variants() -> Vec<(Op, DType, Vec<u64>)> {
    let mut out = Vec::new();
    let shapes: [&[u64]; 5] = [&[5], &[3, 4], &[2, 3, 4], &[2, 1, 3, 2], &[4, 0, 2]];
    for shape in shapes {
        let r = shape.len() as i64;
        let dtype = [DType::U8, DType::I16, DType::F32, DType::C128][shape.len() % 4];
        let mut perms: Vec<Option<Vec<i64>>> = vec![None, Some((0..r).collect())];
        perms.push(Some((1..r).chain([0]).collect()));
        for perm in perms {
            out.push((Op::Transpose { perm }, dtype, shape.to_vec()));
        }
        for mode in [
            PadMode::Constant,
            PadMode::Reflect,
            PadMode::Edge,
            PadMode::Wrap,
        ] {
            for (b, e) in [(1, 2), (2, 0), (-1, 1), (0, -1), (3, -2)] {
                let mut pads = vec![b; shape.len()];
                pads.extend(vec![e; shape.len()]);
                out.push((
                    Op::Pad {
                        pads,
                        mode,
                        constant_value: PadValue::Int(7),
                        axes: None,
                    },
                    dtype,
                    shape.to_vec(),
                ));
            }
            out.push((
                Op::Pad {
                    pads: vec![1, 2],
                    mode,
                    constant_value: PadValue::float(-0.0),
                    axes: Some(vec![-1]),
                },
                DType::F32,
                shape.to_vec(),
            ));
        }
        for (start, end, step) in [(0, 3, 1), (-1, i64::MIN, -1), (1, i64::MAX, 2), (4, -9, -2)] {
            out.push((
                Op::Slice {
                    starts: vec![start; shape.len()],
                    ends: vec![end; shape.len()],
                    axes: None,
                    steps: Some(vec![step; shape.len()]),
                },
                dtype,
                shape.to_vec(),
            ));
        }
        for k in [1, 2, 3] {
            let mut repeats = vec![1; shape.len()];
            repeats[0] = k;
            *repeats.last_mut().unwrap() = 4 - k;
            out.push((Op::Tile { repeats }, dtype, shape.to_vec()));
        }
        for target in [vec![-1], vec![1, -1], vec![0, -1]] {
            out.push((
                Op::Reshape {
                    shape: target,
                    allowzero: false,
                },
                dtype,
                shape.to_vec(),
            ));
        }
        if shape.len() >= 3 {
            let m = shape.len() - 2;
            for (k, s, d, p) in [(1, 1, 1, 0), (2, 1, 1, 1), (2, 2, 1, 0), (2, 1, 2, 1)] {
                out.push((
                    Op::Im2Col {
                        block_shape: vec![k; m],
                        dilations: Some(vec![d; m]),
                        pads: Some(vec![p; 2 * m]),
                        strides: Some(vec![s; m]),
                    },
                    dtype,
                    shape.to_vec(),
                ));
            }
        }
    }
    out
}

#[test]
fn ops_beyond_the_seeds() {
    let peeled = sweep(&beyond_variants(), 120);
    assert!(peeled.is_empty(), "peel-dims fired on {peeled:#?}");
}

fn batch_variants() -> Vec<(Op, DType, Vec<u64>)> {
    let mut out = Vec::new();
    let pads_1d: [[i64; 2]; 5] = [[0, 0], [1, 1], [2, 0], [0, 3], [7, 9]];
    for block in 1..=3i64 {
        for p in pads_1d {
            for n in [3u64, 4, 5] {
                out.push((
                    Op::SpaceToBatchNd {
                        block_shape: vec![block],
                        paddings: vec![p.to_vec()],
                    },
                    DType::I32,
                    vec![2, n, 3],
                ));
                out.push((
                    Op::BatchToSpaceNd {
                        block_shape: vec![block],
                        crops: vec![p.to_vec()],
                    },
                    DType::I32,
                    vec![2 * block as u64, n, 2],
                ));
            }
        }
    }
    for (block, pads, shape) in [
        (vec![2, 2], vec![vec![1, 1], vec![2, 0]], vec![2, 4, 4, 3]),
        (vec![2, 3], vec![vec![0, 0], vec![1, 2]], vec![1, 4, 3]),
        (
            vec![1, 2],
            vec![vec![5, 6], vec![0, 1]],
            vec![3, 2, 3, 1, 2],
        ),
        (
            vec![2, 2, 2],
            vec![vec![1, 1], vec![0, 0], vec![1, 3]],
            vec![1, 2, 4, 2, 2],
        ),
        (
            vec![3, 1, 2],
            vec![vec![1, 2], vec![0, 0], vec![0, 0]],
            vec![2, 3, 2, 4],
        ),
    ] {
        out.push((
            Op::SpaceToBatchNd {
                block_shape: block.clone(),
                paddings: pads.clone(),
            },
            DType::F16,
            shape.clone(),
        ));
        let batch = shape[0] * block.iter().product::<i64>() as u64;
        let mut bshape = shape.clone();
        bshape[0] = batch;
        out.push((
            Op::BatchToSpaceNd {
                block_shape: block,
                crops: pads
                    .iter()
                    .map(|p| vec![p[0].min(1), p[1].min(1)])
                    .collect(),
            },
            DType::F16,
            bshape,
        ));
    }
    out.push((
        Op::SpaceToBatch {
            block_size: 2,
            paddings: vec![vec![1, 1], vec![0, 2]],
        },
        DType::Bool,
        vec![1, 2, 2, 3],
    ));
    out.push((
        Op::BatchToSpace {
            block_size: 2,
            crops: vec![vec![1, 0], vec![0, 1]],
        },
        DType::Bool,
        vec![4, 2, 2, 3],
    ));
    out
}

#[test]
fn space_to_batch_and_batch_to_space() {
    let peeled = sweep(&batch_variants(), 70);
    // Crops and paddings that are not multiples of the block leave partial blocks, which
    // split-dims cuts off; nothing should be left for peel-dims.
    assert!(peeled.is_empty(), "peel-dims fired on {peeled:#?}");
}

fn col2im_variants() -> Vec<(Op, DType, Vec<u64>)> {
    let mut out = Vec::new();
    // (image, block, dilation, pads begin/end, stride) per spatial dim.
    let dims: [(i64, i64, i64, [i64; 2], i64); 6] = [
        (5, 3, 1, [1, 1], 2),
        (4, 2, 1, [0, 0], 1),
        (6, 2, 2, [1, 0], 3),
        (3, 3, 1, [2, 2], 1),
        (7, 1, 1, [0, 1], 2),
        (2, 2, 3, [3, 2], 1),
    ];
    let combos: [&[usize]; 6] = [
        &[0, 1],
        &[2, 3],
        &[4, 5],
        &[0, 3, 5],
        &[1, 2, 4],
        &[1, 5, 0, 4],
    ];
    for combo in combos {
        let mut image = Vec::new();
        let mut block = Vec::new();
        let mut dil = Vec::new();
        let mut pads = vec![0; 2 * combo.len()];
        let mut strides = Vec::new();
        let mut l = 1u64;
        for (j, &i) in combo.iter().enumerate() {
            let (img, k, d, p, s) = dims[i];
            image.push(img);
            block.push(k);
            dil.push(d);
            pads[j] = p[0];
            pads[j + combo.len()] = p[1];
            strides.push(s);
            let eff = d * (k - 1) + 1;
            l *= ((img + p[0] + p[1] - eff) / s + 1) as u64;
        }
        let kk: i64 = block.iter().product();
        for (dtype, c) in [(DType::I32, 2u64), (DType::U8, 1)] {
            out.push((
                Op::Col2Im {
                    image_shape: image.clone(),
                    block_shape: block.clone(),
                    dilations: dil.clone(),
                    pads: pads.clone(),
                    strides: strides.clone(),
                },
                dtype,
                vec![2, c * kk as u64, l],
            ));
        }
    }
    out
}

#[test]
fn col2im() {
    let peeled = sweep(&col2im_variants(), 12);
    assert!(peeled.is_empty(), "peel-dims fired on {peeled:#?}");
}

#[test]
fn float_col2im_pipeline_runs() {
    // Float accumulation may be reordered (see the crate docs), so this checks only that the
    // pipeline succeeds and agrees on data where the sums are exact (small integers in f32).
    for (op, _, shape) in col2im_variants() {
        let Some(k) = lower(&op, DType::F32, &shape) else {
            continue;
        };
        let loops = relayout_passes::lower_to_loops(&k).unwrap();
        let n = k.src.num_elements().unwrap() as usize;
        let src: Vec<u8> = (0..n)
            .flat_map(|i| ((i % 7) as f32).to_le_bytes())
            .collect();
        let dst0 = vec![0u8; k.dst.size_bytes().unwrap() as usize];
        let want = common::run_any(&AnyKernel::Index(k.clone()), &src, &dst0);
        let got = common::run_any(&AnyKernel::Loops(loops), &src, &dst0);
        assert_eq!(want, got, "{op:?}");
    }
}

#[test]
fn optimize_index_leaves_no_div_mod_or_guard() {
    for (op, dtype, shape) in depth_variants()
        .into_iter()
        .chain(batch_variants())
        .chain(col2im_variants())
    {
        let Some(k) = lower(&op, dtype, &shape) else {
            continue;
        };
        let opt = relayout_passes::optimize_index(&k).unwrap();
        for s in &opt.stmts {
            assert!(s.guard.is_empty(), "{op:?}:\n{opt}");
            assert!(
                !s.to_string().contains("floordiv") && !s.to_string().contains(" mod "),
                "{op:?}:\n{opt}"
            );
        }
        check_preserves(DEFAULT_PIPELINE, &k);
    }
}

/// The final loop IR of one variant of each op family, for review.
#[test]
fn final_loop_ir() {
    let cases: [(&str, Op, DType, Vec<u64>); 5] = [
        (
            "space_to_depth_nhwc_b2_c3",
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::Nhwc,
            },
            DType::F32,
            vec![1, 4, 6, 3],
        ),
        (
            "depth_to_space_nchw_dcr_b2",
            Op::DepthToSpace {
                block_size: 2,
                data_format: DataFormat::Nchw,
                mode: DepthToSpaceMode::Dcr,
            },
            DType::F32,
            vec![1, 8, 2, 3],
        ),
        (
            "depth_to_space_vect_c_b2",
            Op::DepthToSpace {
                block_size: 2,
                data_format: DataFormat::NchwVectC,
                mode: DepthToSpaceMode::Dcr,
            },
            DType::I8,
            vec![1, 4, 2, 3, 4],
        ),
        (
            "space_to_batch_nd_2x2_padded",
            Op::SpaceToBatchNd {
                block_shape: vec![2, 2],
                paddings: vec![vec![1, 1], vec![2, 0]],
            },
            DType::F32,
            vec![2, 4, 4, 3],
        ),
        (
            "col2im_2d_pad1_stride2",
            Op::Col2Im {
                image_shape: vec![5, 5],
                block_shape: vec![3, 3],
                dilations: vec![1, 1],
                pads: vec![1, 1, 1, 1],
                strides: vec![2, 2],
            },
            DType::F32,
            vec![1, 18, 9],
        ),
    ];
    for (name, op, dtype, shape) in cases {
        let k = lower(&op, dtype, &shape).unwrap();
        let loops = relayout_passes::lower_to_loops(&k).unwrap();
        insta::assert_snapshot!(name, format!("{k}\n{loops}"));
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 600,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Every random op (the shared generator's small valid ops of all thirteen kinds, any
    /// dtype) keeps its meaning through every pass on its own, the default pipeline and the
    /// index passes alone.
    #[test]
    fn random_ops_lower_to_loops(seed in proptest::prelude::any::<u64>()) {
        let bytes = common::random_bytes(64, seed);
        let (op, input) = relayout_testkit::small_valid_op(&mut relayout_testkit::Input::new(&bytes));
        let k = op.lower(&input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
        check_every_pass(&k);
        check_preserves("canonicalize,split-dims,split-guards", &k);
    }
}

/// A staircase of guard bands (an Im2Col whose huge block meets a huge pad: the bands of
/// `0 <= w + kw - pad < W` over 2^32 output columns) is split into thousands of pieces, each
/// cut again. Split by recursion, the chain of cuts overflowed a 2 MiB thread stack, a test
/// thread's (a fuzz target found it): `split-guards` must finish on such a thread, and the
/// pipeline lower the op or refuse it with its budget's error (today it refuses: a band of a
/// 2^20-wide block needs a piece per block column, which boxes cannot avoid), not crash.
#[test]
fn a_staircase_of_guard_bands_splits_on_a_small_stack() {
    let op = Op::Im2Col {
        block_shape: vec![3, 1048579],
        dilations: None,
        pads: Some(vec![0, 2147483647, 1, 1]),
        strides: Some(vec![1, 1]),
    };
    let k = lower(&op, DType::I64, &[2, 2, 4, 2147483649]).expect("a valid op");
    let (split, lowered) = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let pipeline = relayout_passes::Pipeline::parse("canonicalize,split-dims,split-guards");
            let split = PassManager::new(pipeline.unwrap()).run(AnyKernel::Index(k.clone()));
            (split, relayout_passes::lower_to_loops(&k))
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    match split {
        Ok(AnyKernel::Index(split)) => {
            assert!(split.stmts.len() > 1000, "{} statements", split.stmts.len())
        }
        other => panic!("split-guards: {other:?}"),
    }
    if let Err(error) = lowered {
        let message = error.to_string();
        assert!(
            message.contains("needs more than 16384 statements"),
            "{message}"
        );
    }
}
