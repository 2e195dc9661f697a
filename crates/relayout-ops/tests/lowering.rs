//! The lowering conventions the passes rely on: gather form for the copy ops (one copy whose
//! domain is the output box and whose destination is the identity), an unguarded fill before a
//! guarded copy for padding with the guard repeating the source expressions, crops without
//! guards, and Col2Im as fill + one scatter accumulate whose guard repeats the destination
//! expressions. Printed examples pin the formulas themselves.

mod support;

use proptest::prelude::*;
use relayout_ir::{Action, DType, DimRange, Kernel, TensorType};
use relayout_ops::{DataFormat, DepthToSpaceMode, Op};

fn lower(op: Op, shape: &[u64]) -> String {
    op.lower(&TensorType::new(DType::F32, shape.to_vec()))
        .unwrap()
        .to_string()
}

#[test]
fn space_to_depth_nhwc_is_the_documented_formula() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    };
    assert_eq!(
        lower(op, &[1, 4, 6, 3]),
        "kernel @space_to_depth(%src: tensor<1x4x6x3xf32>) -> (%dst: tensor<1x2x3x12xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 6, d2 * 2 + d3 floordiv 3 mod 2, d3 mod 3]
      for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 3, d3 in 0 to 12
}
"
    );
}

#[test]
fn vect_c_decomposes_the_logical_channel() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::NchwVectC,
    };
    assert_eq!(
        lower(op, &[1, 2, 4, 6, 4]),
        "kernel @space_to_depth(%src: tensor<1x2x4x6x4xf32>) -> (%dst: tensor<1x8x2x3x4xf32>) {
  copy %dst[d0, d1, d2, d3, d4] = %src[d0, (d1 * 4 + d4) mod 8 floordiv 4, d2 * 2 + (d1 * 4 + d4) floordiv 16, d3 * 2 + (d1 * 4 + d4) floordiv 8 mod 2, (d1 * 4 + d4) mod 8 mod 4]
      for d0 in 0 to 1, d1 in 0 to 8, d2 in 0 to 2, d3 in 0 to 3, d4 in 0 to 4
}
"
    );
}

#[test]
fn depth_to_space_modes() {
    let dcr = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Dcr,
    };
    assert_eq!(
        lower(dcr, &[1, 12, 2, 3]),
        "kernel @depth_to_space(%src: tensor<1x12x2x3xf32>) -> (%dst: tensor<1x3x4x6xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, (d2 mod 2 * 2 + d3 mod 2) * 3 + d1, d2 floordiv 2, d3 floordiv 2]
      for d0 in 0 to 1, d1 in 0 to 3, d2 in 0 to 4, d3 in 0 to 6
}
"
    );
    let crd = Op::DepthToSpace {
        block_size: 2,
        data_format: DataFormat::Nchw,
        mode: DepthToSpaceMode::Crd,
    };
    assert_eq!(
        lower(crd, &[1, 12, 2, 3]),
        "kernel @depth_to_space(%src: tensor<1x12x2x3xf32>) -> (%dst: tensor<1x3x4x6xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 4 + d2 mod 2 * 2 + d3 mod 2, d2 floordiv 2, d3 floordiv 2]
      for d0 in 0 to 1, d1 in 0 to 3, d2 in 0 to 4, d3 in 0 to 6
}
"
    );
}

#[test]
fn padding_is_a_fill_then_a_guarded_copy() {
    let op = Op::SpaceToBatchNd {
        block_shape: vec![2, 3],
        paddings: vec![vec![1, 1], vec![0, 0]],
    };
    assert_eq!(
        lower(op, &[2, 4, 6, 5]),
        "kernel @space_to_batch_nd(%src: tensor<2x4x6x5xf32>) -> (%dst: tensor<12x3x2x5xf32>) {
  fill %dst[d0, d1, d2, d3] = 0
      for d0 in 0 to 12, d1 in 0 to 3, d2 in 0 to 2, d3 in 0 to 5
  copy %dst[d0, d1, d2, d3] = %src[d0 mod 2, d1 * 2 + d0 floordiv 2 floordiv 3 mod 2 - 1, d2 * 3 + d0 floordiv 2 mod 3, d3]
      for d0 in 0 to 12, d1 in 0 to 3, d2 in 0 to 2, d3 in 0 to 5
      where 0 <= d1 * 2 + d0 floordiv 2 floordiv 3 mod 2 - 1 < 4
}
"
    );
    // Without padding there is nothing to fill or guard.
    let op = Op::SpaceToBatch {
        block_size: 2,
        paddings: vec![vec![0, 0], vec![0, 0]],
    };
    assert_eq!(
        lower(op, &[1, 2, 2, 1]),
        "kernel @space_to_batch(%src: tensor<1x2x2x1xf32>) -> (%dst: tensor<4x1x1x1xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0 mod 1, d1 * 2 + d0 floordiv 1 floordiv 2 mod 2, d2 * 2 + d0 floordiv 1 mod 2, d3]
      for d0 in 0 to 4, d1 in 0 to 1, d2 in 0 to 1, d3 in 0 to 1
}
"
    );
}

#[test]
fn crops_only_shift_the_source() {
    let op = Op::BatchToSpaceNd {
        block_shape: vec![2, 3],
        crops: vec![vec![1, 0], vec![0, 2]],
    };
    assert_eq!(
        lower(op, &[12, 4, 6, 5]),
        "kernel @batch_to_space_nd(%src: tensor<12x4x6x5xf32>) -> (%dst: tensor<2x7x16x5xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[(d1 + 1) mod 2 * 6 + d2 mod 3 * 2 + d0, (d1 + 1) floordiv 2, d2 floordiv 3, d3]
      for d0 in 0 to 2, d1 in 0 to 7, d2 in 0 to 16, d3 in 0 to 5
}
"
    );
}

#[test]
fn col2im_is_a_fill_then_a_guarded_scatter() {
    let op = Op::Col2Im {
        image_shape: vec![5, 6],
        block_shape: vec![2, 3],
        dilations: vec![1, 2],
        pads: vec![1, 0, 1, 0],
        strides: vec![2, 1],
    };
    assert_eq!(
        lower(op, &[2, 12, 6]),
        "kernel @col2im(%src: tensor<2x12x6xf32>) -> (%dst: tensor<2x2x5x6xf32>) {
  fill %dst[d0, d1, d2, d3] = 0
      for d0 in 0 to 2, d1 in 0 to 2, d2 in 0 to 5, d3 in 0 to 6
  accumulate %dst[d0, d1, d4 * 2 - 1 + d2 * 1, d5 * 1 + d3 * 2] += %src[d0, d1 * 6 + d2 * 3 + d3, d4 * 2 + d5]
      for d0 in 0 to 2, d1 in 0 to 2, d2 in 0 to 2, d3 in 0 to 3, d4 in 0 to 3, d5 in 0 to 2
      where 0 <= d4 * 2 - 1 + d2 * 1 < 5
}
"
    );
}

#[test]
fn zero_sized_tensors() {
    // Nothing to write: no statements.
    let op = Op::SpaceToBatchNd {
        block_shape: vec![2],
        paddings: vec![vec![1, 1]],
    };
    let k = op.lower(&TensorType::new(DType::F32, [0, 2, 3])).unwrap();
    assert!(k.stmts.is_empty());
    assert_eq!(k.dst, TensorType::new(DType::F32, [0, 2, 3]));
    // Nothing to read, but padding to write: the fill only.
    let k = op.lower(&TensorType::new(DType::F32, [2, 0, 3])).unwrap();
    assert_eq!(k.dst, TensorType::new(DType::F32, [4, 1, 3]));
    assert_eq!(k.stmts.len(), 1);
    assert!(k.stmts[0].action.is_fill(), "{k}");
}

/// Checks every convention on a lowered kernel.
fn check_conventions(op: &Op, input: &TensorType, k: &Kernel) {
    let out = op.output_type(input).unwrap();
    assert_eq!(k.src, *input);
    assert_eq!(k.dst, out);
    assert_eq!(k.name, op.kernel_name());
    if out.num_elements().unwrap() == 0 {
        assert!(k.stmts.is_empty(), "{k}");
        return;
    }
    let whole: Vec<DimRange> = out.shape.iter().map(|&n| DimRange::upto(n)).collect();
    let identity: Vec<_> = (0..out.rank()).map(relayout_ir::AffineExpr::dim).collect();
    let (fills, rest): (Vec<_>, Vec<_>) = k.stmts.iter().partition(|s| s.action.is_fill());
    for f in &fills {
        assert_eq!(f.domain, whole, "{k}");
        assert!(f.guard.is_empty(), "{k}");
        assert_eq!(f.dst, identity, "{k}");
    }
    assert!(fills.len() <= 1, "{k}");
    if let Some(f) = fills.first() {
        assert_eq!(&k.stmts[0], *f, "the fill comes first\n{k}");
    }
    if input.num_elements().unwrap() == 0 {
        assert!(rest.is_empty(), "{k}");
        return;
    }
    assert_eq!(rest.len(), 1, "{k}");
    let s = rest[0];
    match (op, &s.action) {
        (Op::Col2Im { .. }, Action::Accumulate { .. }) => {
            assert_eq!(fills.len(), 1, "{k}");
            for c in &s.guard {
                assert_eq!(c.lo, 0);
                let i = s
                    .dst
                    .iter()
                    .position(|e| *e == c.expr)
                    .expect("guard repeats a dst index");
                assert_eq!(c.hi as u64, out.shape[i], "{k}");
            }
            assert!(s
                .dst
                .iter()
                .chain(s.action.src_map().unwrap())
                .all(|e| !e.has_div_or_mod()));
        }
        (_, Action::Copy { src }) => {
            assert_eq!(s.domain, whole, "{k}");
            assert_eq!(s.dst, identity, "{k}");
            assert_eq!(src.len(), input.rank(), "{k}");
            // A guard only with padding, and then after a fill.
            assert_eq!(s.guard.is_empty(), fills.is_empty(), "{k}");
            for c in &s.guard {
                assert_eq!(c.lo, 0);
                let i = src
                    .iter()
                    .position(|e| *e == c.expr)
                    .expect("guard repeats a src index");
                assert_eq!(c.hi as u64, input.shape[i], "{k}");
            }
        }
        _ => panic!("unexpected statement for {op:?}: {k}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn lowerings_follow_the_conventions((op, input) in support::valid_op()) {
        let k = op.lower(&input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
        check_conventions(&op, &input, &k);
    }
}

/// Im2Col's gather form (what a chain lowers an Im2Col that feeds the next op to) follows the
/// gather conventions (one unguarded fill first when padded, one copy at `dst[d]` guarded on
/// its source indices) and writes what the scatter form writes, in 1-D to 3-D, padded or not,
/// with dilations, strides and empty tensors; for every other op it is `lower`'s kernel.
#[test]
fn im2col_gather_form_matches_the_scatter_form() {
    let im2col = |block: &[i64], dil: &[i64], pads: &[i64], strides: &[i64]| Op::Im2Col {
        block_shape: block.to_vec(),
        dilations: Some(dil.to_vec()),
        pads: Some(pads.to_vec()),
        strides: Some(strides.to_vec()),
    };
    let cases = [
        (
            im2col(&[3, 3], &[1, 1], &[1, 1, 1, 1], &[1, 1]),
            vec![1, 2, 5, 6],
        ),
        (
            im2col(&[3, 3], &[1, 1], &[0, 0, 0, 0], &[1, 1]),
            vec![2, 1, 4, 4],
        ),
        (
            im2col(&[2, 3], &[2, 1], &[1, 0, 2, 1], &[2, 1]),
            vec![1, 3, 5, 4],
        ),
        (im2col(&[3], &[2], &[2, 1], &[2]), vec![2, 2, 7]),
        (
            im2col(&[2, 1, 2], &[1, 1, 2], &[1, 0, 0, 0, 1, 1], &[1, 2, 1]),
            vec![1, 2, 3, 4, 3],
        ),
        (
            im2col(&[1, 1], &[1, 1], &[0, 0, 0, 0], &[1, 1]),
            vec![1, 3, 2, 2],
        ),
        (
            im2col(&[2, 2], &[1, 1], &[1, 1, 1, 1], &[1, 1]),
            vec![0, 2, 3, 3],
        ),
        (
            im2col(&[2, 2], &[1, 1], &[1, 1, 1, 1], &[1, 1]),
            vec![1, 0, 3, 3],
        ),
        // An empty image whose padding still holds blocks: zeros only.
        (
            im2col(&[2, 2], &[1, 1], &[1, 1, 1, 1], &[1, 1]),
            vec![1, 2, 0, 3],
        ),
    ];
    for (op, shape) in cases {
        let input = TensorType::new(DType::I32, shape);
        let gather = op.lower_gather(&input).unwrap();
        check_conventions(&op, &input, &gather);
        let scatter = op.lower(&input).unwrap();
        let src: Vec<u8> = (0..input.size_bytes().unwrap())
            .map(|i| (i * 7 + 1) as u8)
            .collect();
        let out_len = gather.dst.size_bytes().unwrap() as usize;
        let run = |k: &Kernel| {
            let mut out = vec![0xAB; out_len];
            relayout_ir::interpret(k, &src, &mut out).unwrap();
            out
        };
        assert_eq!(run(&gather), run(&scatter), "{op:?} on {input}\n{gather}");
    }
    let transpose = Op::Transpose { perm: None };
    let input = TensorType::new(DType::F32, [2, 3]);
    assert_eq!(transpose.lower_gather(&input), transpose.lower(&input));
}
