//! The verifier: hand-written kernels that must pass or fail with a given message, and
//! properties checked against the interpreter (the oracle): a verified index-map kernel never
//! leaves its tensors, and for loop kernels the verifier's verdict is exactly the
//! interpreter's.

mod common;

use proptest::prelude::*;
use relayout_ir::verify::Diagnostic;
use relayout_ir::{
    interpret, interpret_loops, parse_kernel, parse_loop_kernel, verify_kernel, verify_loop_kernel,
    Action, AffineExpr, DType, DimRange, Kernel, Loop, LoopAction, LoopKernel, LoopStmt, Stmt,
    TensorType, VerifyError,
};

fn kernel(text: &str) -> Kernel {
    parse_kernel(text).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

fn loops(text: &str) -> LoopKernel {
    parse_loop_kernel(text).unwrap_or_else(|e| panic!("{}", e.render(text)))
}

/// The verifier's error, which must exist.
#[track_caller]
fn rejected(r: Result<(), VerifyError>) -> VerifyError {
    match r {
        Ok(()) => panic!("the kernel was accepted"),
        Err(e) => e,
    }
}

/// The messages of the diagnostics of `check`.
fn messages(e: &VerifyError, check: &str) -> Vec<String> {
    e.of_check(check).map(|d| d.message.clone()).collect()
}

const SPACE_TO_DEPTH: &str = "\
kernel @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 2, d2 * 2 + d3 mod 2, 0]
      for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 2, d3 in 0 to 4
}
";

#[test]
fn space_to_depth_is_in_bounds() {
    assert_eq!(verify_kernel(&kernel(SPACE_TO_DEPTH)), Ok(()));
}

#[test]
fn space_to_depth_reading_one_row_too_far_is_rejected() {
    let bad = SPACE_TO_DEPTH.replace("d3 floordiv 2,", "d3 floordiv 2 + 1,");
    let e = rejected(verify_kernel(&kernel(&bad)));
    let message = "source index 1 (d1 * 2 + d3 floordiv 2 + 1) ranges over [1, 4] \
                   but dim 1 of tensor<1x4x4x1xf32> has size 4";
    assert_eq!(
        e.diagnostics,
        vec![Diagnostic {
            stmt: Some(0),
            check: "in-bounds",
            message: message.to_string(),
        }]
    );
    assert_eq!(
        e.diagnostics[0].to_string(),
        format!("statement 0: check in-bounds: {message}")
    );
    // The report is the printed kernel with the error under the offending statement.
    assert_eq!(
        e.to_string(),
        format!(
            "\
kernel @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {{
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 2 + 1, d2 * 2 + d3 mod 2, 0]
      for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 2, d3 in 0 to 4
  ; error: check in-bounds: {message}
}}
; 1 verifier error
"
        )
    );
}

#[test]
fn destination_out_of_bounds_names_the_destination() {
    let bad = SPACE_TO_DEPTH.replace(
        "for d0 in 0 to 1, d1 in 0 to 2",
        "for d0 in 0 to 2, d1 in 0 to 2",
    );
    let e = rejected(verify_kernel(&kernel(&bad)));
    assert_eq!(
        messages(&e, "in-bounds"),
        [
            "destination index 0 (d0) ranges over [0, 1] but dim 0 of tensor<1x2x2x4xf32> has size 1",
            "source index 0 (d0) ranges over [0, 1] but dim 0 of tensor<1x4x4x1xf32> has size 1",
        ]
    );
}

const PAD: &str = "\
kernel @pad(%src: tensor<2xf32>) -> (%dst: tensor<4xf32>) {
  copy %dst[d0] = %src[d0 - 1]
      for d0 in 0 to 4
      where 0 <= d0 - 1 < 2
  fill %dst[d0] = 0
      for d0 in 0 to 1
  fill %dst[d0] = 0
      for d0 in 3 to 4
}
";

#[test]
fn padding_with_a_guard_is_in_bounds() {
    assert_eq!(verify_kernel(&kernel(PAD)), Ok(()));
}

#[test]
fn padding_without_its_guard_is_rejected() {
    let bad = PAD.replace("      where 0 <= d0 - 1 < 2\n", "");
    let e = rejected(verify_kernel(&kernel(&bad)));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source index 0 (d0 - 1) ranges over [-1, 2] but dim 0 of tensor<2xf32> has size 2"]
    );
    assert_eq!(e.diagnostics[0].stmt, Some(0));
}

#[test]
fn guards_on_a_dim_narrow_the_dim() {
    let k = |guard: &str| {
        kernel(&format!(
            "kernel @g(%src: tensor<4xi8>) -> (%dst: tensor<8xi8>) {{\n  \
             copy %dst[d0] = %src[d0 * 1 floordiv 1]\n      for d0 in 0 to 8\n      where {guard}\n}}\n"
        ))
    };
    assert_eq!(verify_kernel(&k("0 <= d0 < 4")), Ok(()));
    assert_eq!(verify_kernel(&k("2 <= d0 + 2 < 6")), Ok(()));
    assert_eq!(verify_kernel(&k("-5 <= -5 + d0 < -1")), Ok(()));
    let e = rejected(verify_kernel(&k("0 <= d0 < 5")));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source index 0 (d0 * 1 floordiv 1) ranges over [0, 4] but dim 0 of tensor<4xi8> has size 4"]
    );
}

#[test]
fn guarded_subexpressions_are_narrowed() {
    // Space-to-batch style: the source row is a function of the guarded padded row.
    let text = "kernel @s(%src: tensor<4xf32>) -> (%dst: tensor<10xf32>) {
  copy %dst[d0] = %src[(d0 - 1) floordiv 2]
      for d0 in 0 to 10
      where 0 <= d0 - 1 < 8
}
";
    assert_eq!(verify_kernel(&kernel(text)), Ok(()));
    let e = rejected(verify_kernel(&kernel(&text.replace("< 8", "< 9"))));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source index 0 ((d0 - 1) floordiv 2) ranges over [0, 4] but dim 0 of tensor<4xf32> has size 4"]
    );
}

#[test]
fn empty_domains_and_unsatisfiable_guards_are_trivially_in_bounds() {
    let base = "kernel @e(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {
  copy %dst[d0 + 100] = %src[d0 * -7]
      for d0 in 5 to 5
}
";
    assert_eq!(verify_kernel(&kernel(base)), Ok(()));
    for guard in [
        "0 <= d0 < 0",
        "0 <= d0 * 0 + 3 < 3",
        "9 <= d0 < 100",
        "-9223372036854775808 <= d0 < -9223372036854775808",
    ] {
        let k = kernel(
            &base
                .replace("5 to 5", "0 to 4")
                .replace("}\n", &format!("      where {guard}\n}}\n")),
        );
        assert_eq!(verify_kernel(&k), Ok(()), "{guard}");
    }
}

const IDENTITY: &str = "kernel @ok(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {
  copy %dst[d0] = %src[d0]
      for d0 in 0 to 2
}
";

/// Asserts that `k` fails exactly one check, with this message.
#[track_caller]
fn fails_once(k: &Kernel, stmt: Option<usize>, check: &'static str, message: &str) {
    let e = rejected(verify_kernel(k));
    let want = Diagnostic {
        stmt,
        check,
        message: message.to_string(),
    };
    assert_eq!(e.diagnostics, [want], "{e}");
}

#[test]
fn structural_errors_name_their_check() {
    assert_eq!(verify_kernel(&kernel(IDENTITY)), Ok(()));
    let edited = |from: &str, to: &str| kernel(&IDENTITY.replacen(from, to, 1));
    fails_once(
        &edited("%src: tensor<2xf32>", "%src: tensor<2xi32>"),
        None,
        "element-types",
        "source tensor<2xi32> and destination tensor<2xf32> have different element types \
         (i32 and f32)",
    );
    fails_once(
        &edited("%dst[d0]", "%dst[]"),
        Some(0),
        "map-arity",
        "destination map has 0 indices but tensor<2xf32> has rank 1",
    );
    fails_once(
        &edited("%src[d0]", "%src[d0 mod 0]"),
        Some(0),
        "divisors",
        "source index 0 (d0 mod 0) divides by a non-positive constant in `d0 mod 0`",
    );
    fails_once(
        &edited("0 to 2", "2 to 1"),
        Some(0),
        "ranges",
        "range of d0 is 2 to 1: its lower bound exceeds its upper bound",
    );
    fails_once(
        &edited("tensor<2xf32>) {", "tensor<9223372036854775807xf32>) {"),
        None,
        "tensor-size",
        "destination: tensor tensor<9223372036854775807xf32> is too large: its byte size overflows \
         2^63 - 1",
    );
    // The parser refuses undeclared dims and bad names, so these are built in code.
    let mut k = kernel(IDENTITY);
    k.stmts[0].action = Action::Copy {
        src: vec![AffineExpr::dim(1)],
    };
    fails_once(
        &k,
        Some(0),
        "declared-dims",
        "source index 0 (d1) uses d1 but the domain declares d0 to d0",
    );
    let mut k = kernel(IDENTITY);
    k.name = "a-b".into();
    fails_once(
        &k,
        None,
        "name",
        "kernel name \"a-b\" must be non-empty ASCII letters, digits and `_`",
    );
}

#[test]
fn guard_checks() {
    let text = "kernel @g(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {
  fill %dst[0] = 0
      for d0 in 0 to 2
      where 3 <= d0 < 1, 0 <= d0 * 9223372036854775807 + 9223372036854775807 < 1
}
";
    let e = rejected(verify_kernel(&kernel(text)));
    assert_eq!(
        messages(&e, "guard-bounds"),
        ["guard constraint 0 (3 <= d0 < 1) has its lower bound above its upper bound"]
    );
    let text = text.replace("3 <= d0 < 1", "0 <= d0 < 1");
    let e = rejected(verify_kernel(&kernel(&text)));
    assert_eq!(
        messages(&e, "overflow"),
        ["guard constraint 1 (d0 * 9223372036854775807 + 9223372036854775807) may overflow i64 on the domain"]
    );
}

#[test]
fn every_error_is_reported_under_its_statement() {
    let text = "kernel @two(%src: tensor<2xf32>) -> (%dst: tensor<2xf64>) {
  copy %dst[d0] = %src[d0 + 1]
      for d0 in 0 to 2
  fill %dst[d0] = 0
      for d0 in 0 to 2
  accumulate %dst[d0] += %src[d0 - 2]
      for d0 in 0 to 2
}
";
    let e = rejected(verify_kernel(&kernel(text)));
    assert_eq!(
        e.to_string(),
        "\
kernel @two(%src: tensor<2xf32>) -> (%dst: tensor<2xf64>) {
  ; error: check element-types: source tensor<2xf32> and destination tensor<2xf64> have different element types (f32 and f64)
  copy %dst[d0] = %src[d0 + 1]
      for d0 in 0 to 2
  ; error: check in-bounds: source index 0 (d0 + 1) ranges over [1, 2] but dim 0 of tensor<2xf32> has size 2
  fill %dst[d0] = 0
      for d0 in 0 to 2
  accumulate %dst[d0] += %src[d0 - 2]
      for d0 in 0 to 2
  ; error: check in-bounds: source index 0 (d0 - 2) ranges over [-2, -1] but dim 0 of tensor<2xf32> has size 2
}
; 3 verifier errors
"
    );
    assert_eq!(e.message, e.to_string());
}

#[test]
fn overflowing_indices_cannot_be_proven() {
    let text = "kernel @o(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {
  copy %dst[d0] = %src[d0 * 9223372036854775807 * 2]
      for d0 in 0 to 2
}
";
    let e = rejected(verify_kernel(&kernel(text)));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source index 0 (d0 * 9223372036854775807 * 2) cannot be bounded: its interval overflows i64"]
    );
}

#[test]
fn too_deep_expressions_are_rejected_without_recursing() {
    let mut e = AffineExpr::dim(0);
    for _ in 0..300 {
        e = e + 1;
    }
    let k = Kernel {
        name: "deep".into(),
        src: TensorType::new(DType::U8, [4]),
        dst: TensorType::new(DType::U8, [4]),
        stmts: vec![Stmt {
            domain: vec![DimRange::upto(4)],
            guard: vec![],
            dst: vec![AffineExpr::dim(0)],
            action: Action::Copy { src: vec![e] },
        }],
    };
    let err = rejected(verify_kernel(&k));
    assert_eq!(
        messages(&err, "expr-depth"),
        ["source index 0 is nested deeper than 256 levels"]
    );
    assert!(err
        .message
        .contains("<statement 0: an expression is too deep to print>"));
}

// ---------------------------------------------------------------------------------------------
// Loop kernels

const TRANSPOSE: &str = "\
loops @t(%src: tensor<2x2xf32>) -> (%dst: tensor<2x2xf32>) {
  copy 4 bytes %dst[0 + 8 * i0 + 4 * i1] = %src[0 + 4 * i0 + 8 * i1]
      for i0 in 0 to 2, i1 in 0 to 2
}
";

#[test]
fn loop_transpose_is_in_bounds() {
    assert_eq!(verify_loop_kernel(&loops(TRANSPOSE)), Ok(()));
    let reversed = TRANSPOSE.replace("%src[0 + 4 * i0 + 8 * i1]", "%src[12 - 4 * i0 - 8 * i1]");
    assert_eq!(verify_loop_kernel(&loops(&reversed)), Ok(()));
}

#[test]
fn loop_off_by_one_offsets_are_rejected() {
    let e = rejected(verify_loop_kernel(&loops(
        &TRANSPOSE.replace("%dst[0 +", "%dst[4 +"),
    )));
    assert_eq!(
        e.diagnostics,
        [Diagnostic {
            stmt: Some(0),
            check: "in-bounds",
            message: "destination runs of 4 bytes start at byte offsets [4, 16], so the last ends \
                      at 20, past the 16 bytes of tensor<2x2xf32>"
                .into(),
        }]
    );
    assert!(e.to_string().contains(
        "      for i0 in 0 to 2, i1 in 0 to 2\n  ; error: check in-bounds: destination runs"
    ));
    let e = rejected(verify_loop_kernel(&loops(
        &TRANSPOSE.replace("%src[0 +", "%src[-4 +"),
    )));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source runs start at byte offsets [-4, 8], below 0"]
    );
    let e = rejected(verify_loop_kernel(&loops(
        &TRANSPOSE.replace("4 bytes", "8 bytes"),
    )));
    assert_eq!(e.of_check("in-bounds").count(), 2);
}

#[test]
fn loop_structural_errors() {
    let run = |bytes: u64| {
        let k = loops(&TRANSPOSE.replace("4 bytes", &format!("{bytes} bytes")));
        verify_loop_kernel(&k).map_err(|e| messages(&e, "run-bytes"))
    };
    assert_eq!(
        run(6),
        Err(vec![
            "run of 6 bytes is not a positive multiple of the element size 4 of f32".to_string()
        ])
    );
    assert_eq!(
        run(0),
        Err(vec![
            "run of 0 bytes is not a positive multiple of the element size 4 of f32".to_string()
        ])
    );
    let huge = loops(&TRANSPOSE.replace("i1 in 0 to 2", "i1 in 0 to 18446744073709551615"));
    let e = rejected(verify_loop_kernel(&huge));
    assert_eq!(
        messages(&e, "extents"),
        ["extent 18446744073709551615 of i1 does not fit in i64"]
    );
    let overflow = loops(&TRANSPOSE.replace("8 * i1]", "9223372036854775807 * i1]"));
    let e = rejected(verify_loop_kernel(&overflow));
    assert_eq!(
        messages(&e, "in-bounds"),
        ["source byte offsets overflow i64"]
    );
}

#[test]
fn fills_do_not_read_the_source() {
    let fill = "loops @f(%src: tensor<f32>) -> (%dst: tensor<8xf32>) {
  fill 16 bytes %dst[0 + 16 * i0] = 0
      for i0 in 0 to 2
}
";
    assert_eq!(verify_loop_kernel(&loops(fill)), Ok(()));
    let mut k = loops(fill);
    k.stmts[0].src_offset = 4;
    let e = rejected(verify_loop_kernel(&k));
    assert_eq!(e.diagnostics.len(), 1);
    assert_eq!(e.diagnostics[0].check, "fill-source");
}

#[test]
fn empty_nests_are_trivially_in_bounds() {
    let k = LoopKernel {
        bands: Vec::new(),
        name: "empty".into(),
        src: TensorType::new(DType::F32, [1]),
        dst: TensorType::new(DType::F32, [1]),
        stmts: vec![LoopStmt {
            action: LoopAction::Accumulate,
            bytes: 4,
            src_offset: i64::MIN,
            dst_offset: i64::MAX,
            loops: vec![
                Loop {
                    extent: 3,
                    src_stride: i64::MAX,
                    dst_stride: i64::MIN,
                },
                Loop {
                    extent: 0,
                    src_stride: 1,
                    dst_stride: 1,
                },
            ],
            window: None,
        }],
    };
    assert_eq!(verify_loop_kernel(&k), Ok(()));
}

// ---------------------------------------------------------------------------------------------
// Properties against the interpreter

/// A zeroed buffer for `ty`, or `None` when its size overflows.
fn buffer(ty: &TensorType) -> Option<Vec<u8>> {
    Some(vec![0u8; usize::try_from(ty.size_bytes().ok()?).ok()?])
}

/// Every access index of every statement guarded by its own bounds: `0 <= e < size`.
fn self_guarded(mut k: Kernel) -> Kernel {
    let (src, dst) = (k.src.shape.clone(), k.dst.shape.clone());
    for s in &mut k.stmts {
        let mut guard = Vec::new();
        let src_map = s.action.src_map().unwrap_or(&[]);
        for (map, shape) in [(&s.dst[..], &dst), (src_map, &src)] {
            for (e, &n) in map.iter().zip(shape) {
                guard.push(relayout_ir::Constraint {
                    expr: e.clone(),
                    lo: 0,
                    hi: n as i64,
                });
            }
        }
        s.guard = guard;
    }
    k
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Soundness: a verified kernel runs in the interpreter without leaving its tensors.
    #[test]
    fn verified_kernels_stay_in_bounds(k in common::small_kernel()) {
        if verify_kernel(&k).is_ok() {
            let src = buffer(&k.src).unwrap();
            let mut dst = buffer(&k.dst).unwrap();
            prop_assert_eq!(interpret(&k, &src, &mut dst), Ok(()), "{}", k);
        }
    }

    /// Completeness where the guard says it all: an access guarded by its own bounds is proven.
    #[test]
    fn self_guarded_kernels_verify(k in common::small_kernel()) {
        let k = self_guarded(k);
        prop_assert_eq!(verify_kernel(&k), Ok(()));
        let src = buffer(&k.src).unwrap();
        let mut dst = buffer(&k.dst).unwrap();
        prop_assert_eq!(interpret(&k, &src, &mut dst), Ok(()));
    }

    /// The loop proof is exact: the verifier accepts exactly what the interpreter runs.
    #[test]
    fn loop_verdicts_match_the_interpreter(k in common::small_loop_kernel()) {
        let src = buffer(&k.src).unwrap();
        let mut dst = buffer(&k.dst).unwrap();
        let verified = verify_loop_kernel(&k);
        let ran = interpret_loops(&k, &src, &mut dst);
        prop_assert_eq!(verified.is_ok(), ran.is_ok(), "{:?}\n{:?}", verified, ran);
    }

    #[test]
    fn verifier_never_panics(k in common::any_kernel(), l in common::any_loop_kernel()) {
        let _ = verify_kernel(&k);
        let _ = verify_loop_kernel(&l);
    }
}

#[test]
fn random_small_kernels_are_often_verified() {
    // Guards against a vacuous soundness property: a fair share of the generated kernels must
    // pass the verifier.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = common::small_kernel();
    let n = 1000;
    let passed = (0..n)
        .filter(|_| {
            let k = strategy.new_tree(&mut runner).unwrap().current();
            verify_kernel(&k).is_ok()
        })
        .count();
    assert!(passed * 20 > n, "only {passed} of {n} verified");
}
