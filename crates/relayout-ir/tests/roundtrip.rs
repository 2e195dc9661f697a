//! `parse(print(k)) == k` for both IRs: hand-picked kernels and random ones.

mod common;

use proptest::prelude::*;
use relayout_ir::{
    parse_any, parse_kernel, parse_loop_kernel, AffineExpr, AnyKernel, DType, Kernel, TensorType,
};

const SPACE_TO_DEPTH: &str = "\
kernel @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 2, d2 * 2 + d3 mod 2, 0]
      for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 2, d3 in 0 to 4
}
";

const PAD: &str = "\
kernel @pad(%src: tensor<2xf32>) -> (%dst: tensor<4xf32>) {
  copy %dst[d0] = %src[d0 - 1]
      for d0 in 0 to 4
      where 0 <= d0 - 1 < 2
  fill %dst[d0] = 0
      for d0 in 3 to 4
}
";

const LOOPS: &str = "\
loops @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {
  copy 4 bytes %dst[0 + 32 * i0 + 16 * i1] = %src[0 + 16 * i0 + 4 * i1]
      for i0 in 0 to 2, i1 in 0 to 2
  fill 8 bytes %dst[-8 - 4 * i0] = 0
      for i0 in 0 to 3
  accumulate 16 bytes %dst[0] += %src[4 + -9223372036854775808 * i0]
      for i0 in 0 to 0
}
";

#[test]
fn printed_examples_parse_back_to_the_same_text() {
    for text in [SPACE_TO_DEPTH, PAD] {
        let k = parse_kernel(text).unwrap_or_else(|e| panic!("{}", e.render(text)));
        assert_eq!(k.to_string(), text);
        assert_eq!(parse_any(text), Ok(AnyKernel::Index(k)));
    }
    let l = parse_loop_kernel(LOOPS).unwrap_or_else(|e| panic!("{}", e.render(LOOPS)));
    assert_eq!(l.to_string(), LOOPS);
    assert_eq!(l.stmts[2].loops[0].src_stride, i64::MIN);
    assert_eq!(parse_any(LOOPS), Ok(AnyKernel::Loops(l)));
}

#[test]
fn parses_the_space_to_depth_maps() {
    let k = parse_kernel(SPACE_TO_DEPTH).unwrap();
    let d = AffineExpr::dim;
    let stmt = relayout_ir::Stmt {
        domain: [1, 2, 2, 4].map(relayout_ir::DimRange::upto).to_vec(),
        guard: vec![],
        dst: (0..4).map(d).collect(),
        action: relayout_ir::Action::Copy {
            src: vec![
                d(0),
                d(1) * 2 + d(3).floor_div(2),
                d(2) * 2 + d(3).modulo(2),
                AffineExpr::constant(0),
            ],
        },
    };
    assert_eq!(k.stmts, vec![stmt]);
    assert_eq!(k.src, TensorType::new(DType::F32, [1, 4, 4, 1]));
}

#[test]
fn comments_and_any_whitespace_are_accepted() {
    let dumped = format!(
        "// -----// IR Dump After SplitDims (split-dims) //----- //\n{}// trailing\n",
        PAD.replace("for d0 in 0 to 4", "for d0 in 0 to 4 // the padded range")
    );
    assert_eq!(parse_kernel(&dumped), parse_kernel(PAD));
    let one_line = PAD.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(parse_kernel(&one_line), parse_kernel(PAD));
    // A newline between every two tokens.
    let spread = "kernel\n@pad\n(\n%src\n:\ntensor<2xf32>\n)\n->\n(\n%dst\n:\ntensor<4xf32>\n)\n{\ncopy\n%dst\n[\nd0\n]\n=\n%src\n[\nd0\n-\n1\n]\nfor\nd0\nin\n0\nto\n4\nwhere\n0\n<=\nd0\n-\n1\n<\n2\nfill %dst[d0] = 0 for d0 in 3 to 4\n}";
    assert_eq!(parse_kernel(spread), parse_kernel(PAD));
}

#[test]
fn tensor_types_of_every_shape_and_dtype() {
    for dtype in DType::ALL {
        for shape in [vec![], vec![7], vec![1, 4, 4, 1], vec![0, u64::MAX]] {
            let ty = TensorType::new(dtype, shape);
            let k = Kernel {
                name: "t".into(),
                src: ty.clone(),
                dst: ty,
                stmts: vec![],
            };
            assert_eq!(parse_kernel(&k.to_string()), Ok(k));
        }
    }
    let long_names =
        "kernel @t(%src: tensor<2xfloat32>) -> (%dst: tensor< 2 x complex< f64 > >) {}";
    let k = parse_kernel(long_names).unwrap();
    assert_eq!(k.src, TensorType::new(DType::F32, [2]));
    assert_eq!(k.dst, TensorType::new(DType::C128, [2]));
}

#[test]
fn extreme_constants_round_trip() {
    let d = AffineExpr::dim;
    let c = AffineExpr::constant;
    for e in [
        d(0) + c(i64::MIN),
        d(0) - i64::MAX,
        c(i64::MIN) * -1,
        c(-2) * 3,
        c(2) * 3,
        d(0).floor_div(-3).modulo(0),
        d(0) + (d(0) + c(-1)),
        (d(0) + c(-1)) * -1,
    ] {
        let k = Kernel {
            name: "e".into(),
            src: TensorType::new(DType::U8, []),
            dst: TensorType::new(DType::U8, [1]),
            stmts: vec![relayout_ir::Stmt {
                domain: vec![relayout_ir::DimRange::new(i64::MIN, i64::MAX)],
                guard: vec![],
                dst: vec![e],
                action: relayout_ir::Action::ZERO_FILL,
            }],
        };
        assert_eq!(parse_kernel(&k.to_string()), Ok(k));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn index_kernels_round_trip(k in common::any_kernel()) {
        let text = k.to_string();
        let parsed = parse_kernel(&text).map_err(|e| TestCaseError::fail(e.render(&text)))?;
        prop_assert_eq!(&parsed, &k);
        prop_assert_eq!(parse_any(&text), Ok(AnyKernel::Index(k)));
    }

    #[test]
    fn loop_kernels_round_trip(k in common::any_loop_kernel()) {
        let text = k.to_string();
        let parsed = parse_loop_kernel(&text).map_err(|e| TestCaseError::fail(e.render(&text)))?;
        prop_assert_eq!(&parsed, &k);
        prop_assert_eq!(parse_any(&text), Ok(AnyKernel::Loops(k)));
    }
}
