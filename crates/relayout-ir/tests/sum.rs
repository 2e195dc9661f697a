//! `accumulate N bytes %dst[...] = 0 + %src[...]` (`LoopAction::Sum`, a sum from +0.0): its text
//! round-trips, the interpreter starts every run of the outer loops from +0.0 and adds the
//! terms in loop order, and the verifier bounds its terms.

use relayout_ir::{
    interpret_loops, parse_loop_kernel, verify_loop_kernel, LoopAction, MAX_SUM_TERMS,
};

const SUM: &str = "\
loops @k(%src: tensor<8xf32>) -> (%dst: tensor<3xf32>) {
  accumulate 8 bytes %dst[0 + 4 * i0] = 0 + %src[0 + 8 * i0 + 16 * i1]
      for i0 in 0 to 2, i1 in 0 to 2
  accumulate 4 bytes %dst[8] = 0 + %src[4]
}
";

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bits(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn sum_text_round_trips() {
    let k = parse_loop_kernel(SUM).unwrap();
    assert_eq!(k.stmts[0].action, LoopAction::Sum);
    assert_eq!(k.stmts[1].action, LoopAction::Sum);
    assert_eq!(k.to_string(), SUM);
    assert_eq!(parse_loop_kernel(&k.to_string()).unwrap(), k);
    verify_loop_kernel(&k).unwrap();
    let bad = SUM.replace("= 0 + %src[4]", "= 1 + %src[4]");
    assert!(parse_loop_kernel(&bad).is_err());
}

#[test]
fn sum_starts_each_outer_run_from_positive_zero() {
    let k = parse_loop_kernel(SUM).unwrap();
    // Outer runs overlap by one element (destination stride 4, runs of 8 bytes): the second
    // run starts over from +0.0, so element 1 holds only the second run's sum.
    let src = f32s(&[1.0, -0.0, 0.25, 3.0, 10.0, -0.0, 0.5, 30.0]);
    let mut dst = f32s(&[f32::NAN, 7.0, 9.0]);
    interpret_loops(&k, &src, &mut dst).unwrap();
    let want = [
        (0.0f32 + 1.0 + 10.0).to_bits(),
        (0.0f32 + 0.25 + 0.5).to_bits(),
        (0.0f32 + 3.0 + 30.0).to_bits(),
    ];
    // Element 2 is written by statement 1 last: +0.0 + -0.0 is +0.0.
    assert_eq!(bits(&dst)[..2], want[..2]);
    assert_eq!(bits(&dst)[2], 0.0f32.to_bits());
}

#[test]
fn sum_terms_are_bounded() {
    let n = MAX_SUM_TERMS + 1;
    let text = format!(
        "loops @k(%src: tensor<{n}xf32>) -> (%dst: tensor<1xf32>) {{\n  accumulate 4 bytes \
         %dst[0] = 0 + %src[0 + 4 * i0]\n      for i0 in 0 to {n}\n}}\n"
    );
    let k = parse_loop_kernel(&text).unwrap();
    let err = verify_loop_kernel(&k).unwrap_err();
    assert_eq!(err.of_check("sum-terms").count(), 1, "{}", err.message);
    let ok = text.replace(&format!("to {n}"), &format!("to {MAX_SUM_TERMS}"));
    let ok = ok.replace(
        &format!("tensor<{n}xf32>"),
        &format!("tensor<{MAX_SUM_TERMS}xf32>"),
    );
    verify_loop_kernel(&parse_loop_kernel(&ok).unwrap()).unwrap();
}
