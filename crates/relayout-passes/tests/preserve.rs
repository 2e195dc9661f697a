//! Every pass, on its own and in the default pipeline, preserves the meaning of a broad set of
//! hand-written kernels: the interpreter computes the same bytes before and after, on random
//! data, starting from the same random destination.

mod common;

use common::check_every_pass;
use relayout_ir::parse_kernel;

/// Parses and checks one kernel.
fn check(text: &str) {
    let k = parse_kernel(text).unwrap_or_else(|e| panic!("{}\n{text}", e.render(text)));
    check_every_pass(&k);
}

#[test]
fn transpose() {
    check(
        "kernel @t(%src: tensor<3x5xf32>) -> (%dst: tensor<5x3xf32>) {
  copy %dst[d0, d1] = %src[d1, d0]
      for d0 in 0 to 5, d1 in 0 to 3
}",
    );
}

#[test]
fn space_to_depth_by_hand() {
    check(
        "kernel @s2d(%src: tensor<2x4x6x3xi16>) -> (%dst: tensor<2x2x3x12xi16>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 6, d2 * 2 + d3 floordiv 3 mod 2, d3 mod 3]
      for d0 in 0 to 2, d1 in 0 to 2, d2 in 0 to 3, d3 in 0 to 12
}",
    );
}

#[test]
fn padding_fill_then_guarded_copy() {
    check(
        "kernel @pad(%src: tensor<5xui8>) -> (%dst: tensor<9xui8>) {
  fill %dst[d0] = 0
      for d0 in 0 to 9
  copy %dst[d0] = %src[d0 - 3]
      for d0 in 0 to 9
      where 0 <= d0 - 3 < 5
}",
    );
}

#[test]
fn two_dim_guard() {
    check(
        "kernel @g(%src: tensor<4x6xf32>) -> (%dst: tensor<3x2x5xf32>) {
  fill %dst[d0, d1, d2] = 0
      for d0 in 0 to 3, d1 in 0 to 2, d2 in 0 to 5
  copy %dst[d0, d1, d2] = %src[d0 + d1 - 1, d2 * 2 + d1 - 2]
      for d0 in 0 to 3, d1 in 0 to 2, d2 in 0 to 5
      where 0 <= d0 + d1 - 1 < 4, 0 <= d2 * 2 + d1 - 2 < 6
}",
    );
}

#[test]
fn accumulate_with_guard() {
    check(
        "kernel @c2i(%src: tensor<2x3x4xi32>) -> (%dst: tensor<2x7xi32>) {
  fill %dst[d0, d1] = 0
      for d0 in 0 to 2, d1 in 0 to 7
  accumulate %dst[d0, d2 * 2 + d1 * 2 - 1] += %src[d0, d1, d2]
      for d0 in 0 to 2, d1 in 0 to 3, d2 in 0 to 4
      where 0 <= d2 * 2 + d1 * 2 - 1 < 7
}",
    );
}

#[test]
fn colliding_writes_keep_the_last() {
    // Two points write each destination element; the later one must win after every pass.
    check(
        "kernel @c(%src: tensor<3x8xi32>) -> (%dst: tensor<4x3xi32>) {
  copy %dst[d1 floordiv 2, d0] = %src[d0, d1]
      for d0 in 0 to 3, d1 in 0 to 8
}",
    );
    check(
        "kernel @c(%src: tensor<3x8xi32>) -> (%dst: tensor<3x3xi32>) {
  copy %dst[d1 mod 3, d0] = %src[d0, d1]
      for d0 in 0 to 3, d1 in 0 to 8
      where 1 <= d1 + d0 < 9
}",
    );
}

#[test]
fn floordiv_that_must_not_fold() {
    check(
        "kernel @f(%src: tensor<5x2xf32>) -> (%dst: tensor<5x5xf32>) {
  copy %dst[d0, d1] = %src[(d0 * 4 + d1) floordiv 4, (d0 * 4 + d1) mod 4 floordiv 2]
      for d0 in 0 to 4, d1 in 0 to 5
}",
    );
}

#[test]
fn negative_coefficients_and_offsets() {
    check(
        "kernel @r(%src: tensor<7xi64>) -> (%dst: tensor<7xi64>) {
  copy %dst[d0 - 2] = %src[8 - d0 * 1]
      for d0 in 2 to 9
}",
    );
    check(
        "kernel @m(%src: tensor<4x3xf32>) -> (%dst: tensor<12xf32>) {
  copy %dst[d0] = %src[(d0 + 3) mod 12 floordiv 3, (d0 - 5) mod 3]
      for d0 in 0 to 12
}",
    );
}

#[test]
fn empty_and_false_statements_disappear() {
    check(
        "kernel @e(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {
  copy %dst[d0] = %src[d0]
      for d0 in 0 to 4
  copy %dst[d0] = %src[d0]
      for d0 in 2 to 2
  fill %dst[d0] = 0
      for d0 in 0 to 4
      where 5 <= d0 * 2 + 1 < 6
  fill %dst[d0] = 0
      for d0 in 0 to 4
      where 9 <= d0 + 1 < 20
}",
    );
}

#[test]
fn scalars_and_unit_dims() {
    check(
        "kernel @s(%src: tensor<f64>) -> (%dst: tensor<1x1xf64>) {
  copy %dst[0, 0] = %src[]
}",
    );
    check(
        "kernel @u(%src: tensor<1x3x1xf32>) -> (%dst: tensor<3x1xf32>) {
  copy %dst[d1, d0] = %src[d0, d1, d2]
      for d0 in 0 to 1, d1 in 0 to 3, d2 in 0 to 1
}",
    );
}

#[test]
fn unread_dims() {
    // A copy may drop a dim it does not read; an accumulate adds once per value of it.
    check(
        "kernel @b(%src: tensor<3xi32>) -> (%dst: tensor<3xi32>) {
  copy %dst[d1] = %src[d1]
      for d0 in 0 to 4, d1 in 0 to 3
  accumulate %dst[d1] += %src[d1]
      for d0 in 0 to 4, d1 in 0 to 3
}",
    );
}

#[test]
fn broadcast_source() {
    check(
        "kernel @b(%src: tensor<3xcomplex<f64>>) -> (%dst: tensor<4x3xcomplex<f64>>) {
  copy %dst[d0, d1] = %src[d1]
      for d0 in 0 to 4, d1 in 0 to 3
}",
    );
}

#[test]
fn fill_shrinks_only_to_later_writes() {
    check(
        "kernel @f(%src: tensor<4x4xui8>) -> (%dst: tensor<6x6xui8>) {
  copy %dst[d0 + 1, d1] = %src[d0, d1]
      for d0 in 0 to 4, d1 in 0 to 4
  fill %dst[d0, d1] = 0
      for d0 in 0 to 6, d1 in 0 to 6
  accumulate %dst[d0, d1 + 2] += %src[d0, d1]
      for d0 in 0 to 4, d1 in 0 to 4
  copy %dst[d0 + 2, d1 + 1] = %src[d0, d1]
      for d0 in 0 to 4, d1 in 0 to 4
}",
    );
}

#[test]
fn vect_c_with_channels_not_a_multiple_of_four() {
    check(
        "kernel @v(%src: tensor<6x2xf32>) -> (%dst: tensor<3x4x2xf32>) {
  copy %dst[d0, d1, d2] = %src[(d0 * 4 + d1) mod 6, ((d0 * 4 + d1) floordiv 6 + d2) mod 2]
      for d0 in 0 to 3, d1 in 0 to 4, d2 in 0 to 2
}",
    );
}

#[test]
fn nested_div_mod() {
    check(
        "kernel @n(%src: tensor<2x3x4xbf16>) -> (%dst: tensor<24xbf16>) {
  copy %dst[d0] = %src[d0 floordiv 4 floordiv 3, d0 mod 12 floordiv 4, d0 mod 12 mod 4]
      for d0 in 0 to 24
}",
    );
}

#[test]
fn batch_to_space_like_offsets() {
    check(
        "kernel @b(%src: tensor<4x3x1xi8>) -> (%dst: tensor<1x9x1xi8>) {
  copy %dst[d0, d1, d2] = %src[(d1 + 2) mod 4 + d0, (d1 + 2) floordiv 4, d2]
      for d0 in 0 to 1, d1 in 0 to 9, d2 in 0 to 1
}",
    );
}

#[test]
fn guards_with_div_mod() {
    check(
        "kernel @g(%src: tensor<10xui16>) -> (%dst: tensor<3x8xui16>) {
  fill %dst[d0, d1] = 0
      for d0 in 0 to 3, d1 in 0 to 8
  copy %dst[d0, d1] = %src[d1 floordiv 2 * 3 + d0 - 2]
      for d0 in 0 to 3, d1 in 0 to 8
      where 0 <= d1 floordiv 2 * 3 + d0 - 2 < 10, 0 <= d1 mod 3 < 2
}",
    );
}

#[test]
fn empty_tensors_with_huge_dims() {
    // A tensor with a zero dim has no element, however large its other dims are (here their
    // product does not fit in 64 bits): no statement can address it, so no pass may need its
    // row-major strides.
    check(
        "kernel @e(%src: tensor<0x4611686018427387904x4611686018427387904xui8>) -> (%dst: tensor<3xui8>) {
  fill %dst[d0] = 0
      for d0 in 0 to 3
  copy %dst[d1] = %src[d0, d1, d1]
      for d0 in 0 to 0, d1 in 0 to 3
}",
    );
    check(
        "kernel @e(%src: tensor<0x4611686018427387904x4611686018427387904xf32>) -> (%dst: tensor<0x4611686018427387904x4611686018427387904xf32>) {
  copy %dst[d0, d2, d1] = %src[d0, d1, d2]
      for d0 in 0 to 0, d1 in 0 to 4611686018427387904, d2 in 0 to 4611686018427387904
}",
    );
}

#[test]
fn constants_far_outside_the_tensor() {
    // Each index is small, but its constant alone times the index's byte stride does not fit
    // in i64: the offset of the first point has to be the index there times the stride.
    check(
        "kernel @far(%src: tensor<4x3xi32>) -> (%dst: tensor<3x4xi32>) {
  copy %dst[d1, d0 - 4611686018427387904] = %src[d0 - 4611686018427387904, d1]
      for d0 in 4611686018427387904 to 4611686018427387908, d1 in 0 to 3
}",
    );
    // The same with a coefficient, as BatchToSpace's crops give (`d0 * 3 + d2 - c`), and a
    // negative direction.
    check(
        "kernel @far(%src: tensor<12x2xi16>) -> (%dst: tensor<2x12xi16>) {
  copy %dst[d1, d0 * 3 + d2 - 9223372036854775794] = %src[9223372036854775805 - d0 * 3 - d2, d1]
      for d0 in 3074457345618258598 to 3074457345618258602, d1 in 0 to 2, d2 in 0 to 3
}",
    );
}

#[test]
fn unit_dims_with_huge_coefficients() {
    // A dim with one value may have any coefficient: its loop runs once, so linearize (here on
    // its own, before drop-unit-dims would remove it) gives it stride 0 when its byte stride
    // does not fit in i64.
    let text = "kernel @u(%src: tensor<3x4xui16>) -> (%dst: tensor<4x3xui16>) {
  copy %dst[d0, d1 + d2 * 4611686018427387904] = %src[d1 - d2 * 4611686018427387904, d0]
      for d0 in 0 to 4, d1 in 0 to 3, d2 in 0 to 1
}";
    let k = parse_kernel(text).unwrap_or_else(|e| panic!("{}\n{text}", e.render(text)));
    let out = common::check_preserves("linearize", &k);
    let relayout_ir::AnyKernel::Loops(loops) = &out else {
        panic!("linearize gave index IR")
    };
    let unit = loops.stmts[0].loops[2];
    assert_eq!((unit.extent, unit.src_stride, unit.dst_stride), (1, 0, 0));
    common::check_preserves("linearize,coalesce,interchange,coalesce", &k);
    check_every_pass(&k);
}
