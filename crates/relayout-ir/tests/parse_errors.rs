//! Parse errors: the right line, column, message and offending token, and no panic on any
//! input (random text, token soup, and random edits of printed kernels).

mod common;

use proptest::prelude::*;
use relayout_ir::{parse_any, parse_kernel, parse_loop_kernel, ParseError};

const HEADER: &str = "kernel @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n";
const LOOP_HEADER: &str = "loops @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {\n";

/// Parses `HEADER + body` and returns the error, which must exist.
fn err(body: &str) -> ParseError {
    let text = format!("{HEADER}{body}");
    match parse_kernel(&text) {
        Ok(k) => panic!("parsed:\n{text}\ninto\n{k}"),
        Err(e) => e,
    }
}

fn loop_err(body: &str) -> ParseError {
    let text = format!("{LOOP_HEADER}{body}");
    match parse_loop_kernel(&text) {
        Ok(k) => panic!("parsed:\n{text}\ninto\n{k}"),
        Err(e) => e,
    }
}

/// Asserts the position and offending token, and that the message contains `needle`.
#[track_caller]
fn check(e: ParseError, line: usize, col: usize, found: &str, needle: &str) {
    assert_eq!((e.line, e.col, e.found.as_str()), (line, col, found), "{e}");
    assert!(e.message.contains(needle), "{e:?} lacks {needle:?}");
}

#[test]
fn empty_input_and_wrong_keyword() {
    check(
        parse_kernel("").unwrap_err(),
        1,
        1,
        "end of input",
        "expected `kernel`",
    );
    check(
        parse_any("  // only a comment\n  kernels").unwrap_err(),
        2,
        3,
        "kernels",
        "expected `kernel` or `loops`",
    );
    check(
        parse_loop_kernel(HEADER).unwrap_err(),
        1,
        1,
        "kernel",
        "expected `loops`",
    );
}

#[test]
fn product_of_dims_is_not_affine() {
    let e = err("  copy %dst[d0] = %src[d0 * d0]\n      for d0 in 0 to 4\n}\n");
    check(e, 2, 27, "*", "not affine");
    let e = err("  copy %dst[d0] = %src[d0 mod (d0 + 1)]\n      for d0 in 0 to 4\n}\n");
    check(e, 2, 27, "mod", "must be an integer constant");
}

#[test]
fn undeclared_dims_are_errors() {
    let e = err("  copy %dst[d1] = %src[d0]\n      for d0 in 0 to 4\n}\n");
    check(
        e,
        2,
        13,
        "d1",
        "d1 is not declared: the `for` clause declares only d0",
    );
    let e = err("  fill %dst[0] = 0\n      where 0 <= d2 < 3\n}\n");
    check(e, 3, 18, "d2", "the statement has no `for` clause");
    let e = err("  fill %dst[d0] = 0\n      for d1 in 0 to 4\n}\n");
    check(e, 3, 11, "d1", "expected `d0`");
}

#[test]
fn integers_that_do_not_fit_are_errors() {
    let e = err("  fill %dst[d0] = 0\n      for d0 in 0 to 99999999999999999999\n}\n");
    check(e, 3, 22, "99999999999999999999", "does not fit in 64 bits");
    let e = err("  fill %dst[9223372036854775808] = 0\n}\n");
    check(
        e,
        2,
        13,
        "9223372036854775808",
        "does not fit in a signed 64-bit",
    );
    let e = err("  fill %dst[0 - -9223372036854775808] = 0\n}\n");
    check(e, 2, 15, "-", "negating -9223372036854775808 overflows");
    let e = parse_kernel("kernel @k(%src: tensor<18446744073709551616xf32>)").unwrap_err();
    check(e, 1, 24, "18446744073709551616", "does not fit in 64 bits");
    // The most negative i64 is fine.
    assert!(parse_kernel(&format!(
        "{HEADER}  fill %dst[-9223372036854775808] = 0\n}}\n"
    ))
    .is_ok());
}

#[test]
fn bad_types_are_errors() {
    let e = parse_kernel("kernel @k(%src: tensor<4xf33>) -> (%dst: tensor<f32>) {}").unwrap_err();
    check(e, 1, 26, "f33", "unknown element type `f33`");
    let e = parse_kernel("kernel @k(%src: tensor<4x4>) -> (%dst: tensor<f32>) {}").unwrap_err();
    check(e, 1, 27, ">)", "expected `x`");
    let e = parse_kernel("kernel @k(%src: tensor<4xf32) -> (%dst: tensor<f32>) {}").unwrap_err();
    check(e, 1, 29, ")", "expected `>`");
    let e = parse_kernel("kernel @k(%src: f32) -> (%dst: tensor<f32>) {}").unwrap_err();
    check(e, 1, 17, "f32", "a tensor type");
}

#[test]
fn structural_errors_point_at_the_token() {
    let e = err("  copy %dst[d0 = %src[d0]\n      for d0 in 0 to 4\n}\n");
    check(e, 2, 16, "=", "expected `,` or `]`");
    let e = err("  copy %dst[d0] += %src[d0]\n      for d0 in 0 to 4\n}\n");
    check(e, 2, 17, "+=", "expected `=`");
    // A fill value must be a value of the destination's dtype (f32 here), exactly.
    let e = err("  fill %dst[0] = true\n}\n");
    check(e, 2, 18, "true", "is not a value of f32");
    let e = err("  fill %dst[0] = 0.1\n}\n");
    check(e, 2, 18, "0.1", "is not a value of f32");
    let e = err("  fill %dst[0] = %src\n}\n");
    check(e, 2, 18, "%src", "expected a fill value");
    let e = err("  move %dst[0] = 0\n}\n");
    check(e, 2, 3, "move", "a statement");
    let e = err("  fill %dst[0] = 0\n}\n}\n");
    check(e, 4, 1, "}", "end of input");
    let e = err("  fill %dst[0] = 0\n");
    check(e, 3, 1, "end of input", "or `}`");
    let e = err("  fill %dst[0] = 0 # comment\n}\n");
    check(e, 2, 20, "#", "unexpected character `#`");
    let e = err("  fill %dst[(d0] = 0\n      for d0 in 0 to 4\n}\n");
    check(e, 2, 16, "]", "expected `)`");
    let e = err("  fill %dst[] = 0 where 0 <= 1 <= 2\n}\n");
    check(e, 2, 32, "<=", "expected `<`");
}

#[test]
fn loop_errors() {
    let e = loop_err("  copy 4 bytes %dst[0 + 4 * i1] = %src[0]\n      for i0 in 0 to 4\n}\n");
    check(e, 2, 29, "i1", "i1 is not declared");
    let e = loop_err("  copy 4 bytes %dst[0] = %src[0]\n      for i0 in 1 to 4\n}\n");
    check(e, 3, 17, "1", "loops start at 0");
    let e =
        loop_err("  copy 4 bytes %dst[0 + 4 * i0 - 4 * i0] = %src[0]\n      for i0 in 0 to 4\n}\n");
    check(e, 2, 38, "i0", "i0 appears twice");
    let e = loop_err("  copy 4 %dst[0] = %src[0]\n}\n");
    check(e, 2, 10, "%dst", "expected `bytes`");
    let e = loop_err("  copy 4 bytes %dst[0 + 4 * d0] = %src[0]\n}\n");
    check(e, 2, 29, "d0", "a loop counter");
    let e = loop_err(
        "  fill 4 bytes %dst[0 - 9223372036854775808 * i0] = 0\n      for i0 in 0 to 1\n}\n",
    );
    // The printer writes that stride as `+ -9223372036854775808 * i0`.
    check(
        e,
        2,
        25,
        "9223372036854775808",
        "does not fit in a signed 64-bit",
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let n = 100_000;
    let parens = format!("{}d0{}", "(".repeat(n), ")".repeat(n));
    let minuses = format!("{}d0", "-".repeat(n));
    let chain = vec!["d0"; n].join(" + ");
    let muls = format!("d0{}", " * 2".repeat(n));
    for expr in [parens, minuses, chain, muls] {
        let e = err(&format!(
            "  fill %dst[{expr}] = 0\n      for d0 in 0 to 4\n}}\n"
        ));
        assert!(e.message.contains("nested deeper than 256"), "{e}");
    }
    // A long flat list is fine: only depth is limited.
    let wide = format!(
        "kernel @k(%src: tensor<f32>) -> (%dst: tensor<{}f32>) {{ fill %dst[{}] = 0 }}",
        "1x".repeat(5000),
        vec!["0"; 5000].join(", ")
    );
    assert!(parse_kernel(&wide).is_ok());
}

#[test]
fn render_shows_the_line_and_a_caret() {
    let text = format!("{HEADER}  copy %dst[d0] = %src[d0 * d0]\n      for d0 in 0 to 4\n}}\n");
    let e = parse_kernel(&text).unwrap_err();
    assert_eq!(
        e.render(&text),
        "error: 2:27: `d0 * d0` is not affine: one side of `*` must be an integer constant\n  |   copy %dst[d0] = %src[d0 * d0]\n  |                           ^\n"
    );
}

/// Pieces of the syntax, to build random token soups from.
const TOKENS: &[&str] = &[
    "kernel",
    "loops",
    "@k",
    "(",
    ")",
    "%src",
    "%dst",
    ":",
    "->",
    "{",
    "}",
    "[",
    "]",
    ",",
    "=",
    "+=",
    "+",
    "-",
    "*",
    "<",
    "<=",
    ">",
    "tensor<",
    "tensor<4x",
    "f32",
    "xf32>",
    "complex<",
    "copy",
    "fill",
    "accumulate",
    "bytes",
    "for",
    "where",
    "in",
    "to",
    "floordiv",
    "mod",
    "d0",
    "d1",
    "d99999999999999999999",
    "i0",
    "i1",
    "0",
    "1",
    "-1",
    "4",
    "9223372036854775808",
    "18446744073709551616",
    "//",
    "\n",
    " ",
    "é",
    "\t",
];

/// Applies `edits` (position, kind, token) to `text`: delete a span, insert a token, or
/// duplicate a span. Positions are taken modulo the length and snapped to char boundaries.
fn mutate(text: &str, edits: &[(usize, u8, usize)]) -> String {
    let mut s = text.to_string();
    for &(pos, kind, tok) in edits {
        let mut at = if s.is_empty() { 0 } else { pos % (s.len() + 1) };
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + 1 + pos % 7).min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        match kind % 3 {
            0 => s.replace_range(at..end, ""),
            1 => s.insert_str(at, TOKENS[tok % TOKENS.len()]),
            _ => {
                let span = s[at..end].to_string();
                s.insert_str(at, &span);
            }
        }
    }
    s
}

/// Whatever parses must print back to text that parses to the same kernel.
fn parses_consistently(text: &str) -> Result<(), TestCaseError> {
    if let Ok(k) = parse_any(text) {
        let printed = k.to_string();
        prop_assert_eq!(parse_any(&printed), Ok(k));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn random_text_never_panics(text in any::<String>()) {
        parses_consistently(&text)?;
    }

    #[test]
    fn token_soup_never_panics(toks in prop::collection::vec(0..TOKENS.len(), 0..60)) {
        let text: Vec<&str> = toks.iter().map(|&i| TOKENS[i]).collect();
        parses_consistently(&text.join(" "))?;
        parses_consistently(&text.concat())?;
    }

    #[test]
    fn mutated_index_kernels_never_panic(
        k in common::any_kernel(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..4),
    ) {
        parses_consistently(&mutate(&k.to_string(), &edits))?;
    }

    #[test]
    fn mutated_loop_kernels_never_panic(
        k in common::any_loop_kernel(),
        edits in prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..4),
    ) {
        parses_consistently(&mutate(&k.to_string(), &edits))?;
    }
}

/// `TensorType: FromStr`, the one grammar of types (the op syntax reads its type with it):
/// every printed type reads back, the short unsigned names are accepted, and errors point at
/// the offending part.
#[test]
fn tensor_types_parse_alone() {
    use relayout_ir::{DType, TensorType};
    for dtype in DType::ALL {
        for shape in [vec![], vec![3], vec![1, 4, 4, 2]] {
            let ty = TensorType::new(dtype, shape);
            assert_eq!(ty.to_string().parse::<TensorType>().unwrap(), ty);
        }
    }
    assert_eq!(
        " tensor<2 x 3 x u16> ".parse::<TensorType>().unwrap(),
        TensorType::new(DType::U16, [2, 3])
    );
    assert_eq!(
        "tensor<2xfloat32>".parse::<TensorType>().unwrap(),
        TensorType::new(DType::F32, [2])
    );
    let e = |text: &str| text.parse::<TensorType>().unwrap_err();
    check(e("tensor<1x?xf32>"), 1, 10, "?xf32>", "dim 1 is dynamic");
    check(e("tensor<1xq7>"), 1, 10, "q7", "the element types are f32");
    check(
        e("tensor<1xf32"),
        1,
        13,
        "",
        "expected `>` to close `tensor<`",
    );
    check(
        e("tensor<1xf32> x"),
        1,
        15,
        "x",
        "unexpected text after the tensor type",
    );
    check(
        e("tensr<1xf32>"),
        1,
        1,
        "tensr<1xf32>",
        "expected a tensor type",
    );
}
