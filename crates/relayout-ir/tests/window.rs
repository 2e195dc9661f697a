//! Accumulations with a window (`... += %src[...] within bytes A + S * iN to B + S * iN`): the
//! text round-trips, the interpreter adds each term only over its window (reading nothing
//! outside it), and the verifier checks the window's form, that the windows cover the run, and
//! that the source is in bounds over the windows only.

use relayout_ir::{interpret_loops, parse_loop_kernel, verify_loop_kernel, Window};

/// A one-dimensional Col2Im: three kernel positions (rows of the source) shifted by one element
/// each against an output row of 8, padding 1: `dst[w] = sum over kw of src[kw][w - kw + 1]`
/// where that index is in the row. The first term has nothing for the last element, the last
/// term nothing for the first.
const ROW: &str = "\
loops @k(%src: tensor<3x8xf32>) -> (%dst: tensor<8xf32>) {
  accumulate 32 bytes %dst[0] = 0 + %src[4 + 28 * i0] within bytes -4 + 4 * i0 to 28 + 4 * i0
      for i0 in 0 to 3
}
";

fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn expected_row(src: &[f32]) -> Vec<f32> {
    let mut dst = vec![0.0f32; 8];
    for kw in 0..3 {
        for (w, d) in dst.iter_mut().enumerate() {
            let from = w as i64 - kw as i64 + 1;
            if (0..8).contains(&from) {
                *d += src[kw * 8 + from as usize];
            }
        }
    }
    dst
}

#[test]
fn window_text_round_trips() {
    let k = parse_loop_kernel(ROW).unwrap();
    assert_eq!(
        k.stmts[0].window,
        Some(Window {
            start: -4,
            end: 28,
            step: 4
        })
    );
    assert_eq!(k.to_string(), ROW);
    verify_loop_kernel(&k).unwrap();
    // A negative step prints with a minus, a step of 0 without a counter.
    for text in [
        ROW.replace("-4 + 4 * i0 to 28 + 4 * i0", "4 - 4 * i0 to 36 - 4 * i0"),
        ROW.replace("-4 + 4 * i0 to 28 + 4 * i0", "0 to 32"),
    ] {
        let k = parse_loop_kernel(&text).unwrap();
        assert_eq!(k.to_string(), text);
    }
    // The two ends step together, with the innermost loop's counter.
    let unequal = ROW.replace("to 28 + 4 * i0", "to 28 + 8 * i0");
    let e = parse_loop_kernel(&unequal).unwrap_err();
    assert!(e.message.contains("same bytes"), "{e:?}");
    // A counter other than the innermost loop's.
    let two_loops = ROW
        .replace("28 * i0]", "28 * i1]")
        .replace("for i0 in 0 to 3", "for i0 in 0 to 1, i1 in 0 to 3");
    let e = parse_loop_kernel(&two_loops).unwrap_err();
    assert!(e.message.contains("i1"), "{e:?}");
    parse_loop_kernel(&two_loops.replace("4 * i0 to 28 + 4 * i0", "4 * i1 to 28 + 4 * i1"))
        .unwrap();
}

#[test]
fn each_term_adds_only_over_its_window() {
    let k = parse_loop_kernel(ROW).unwrap();
    let values: Vec<f32> = (0..24).map(|i| i as f32 * 1.5 - 7.0).collect();
    let mut dst = f32s(&[f32::NAN; 8]);
    interpret_loops(&k, &f32s(&values), &mut dst).unwrap();
    assert_eq!(dst, f32s(&expected_row(&values)));
    // An accumulation onto the destination: the same additions after what it holds.
    let onto = parse_loop_kernel(&ROW.replace("= 0 + %src", "+= %src")).unwrap();
    verify_loop_kernel(&onto).unwrap();
    let mut dst = f32s(&[100.0; 8]);
    interpret_loops(&onto, &f32s(&values), &mut dst).unwrap();
    let want: Vec<f32> = expected_row(&values).iter().map(|x| 100.0 + x).collect();
    assert_eq!(dst, f32s(&want));
}

#[test]
fn verifier_checks_windows() {
    let check = |text: &str, needle: &str| {
        let k = parse_loop_kernel(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let e = verify_loop_kernel(&k).expect_err(text);
        assert!(
            e.diagnostics
                .iter()
                .any(|d| d.message.contains(needle) || d.check == needle),
            "{needle}: {e}"
        );
    };
    // The row the other way round, `dst[w] = sum over kw of src[kw][w + kw - 1]`: the first
    // term's window starts at the row's second element, whose source is the first element of
    // the source; without the window, its run would start 4 bytes before the source.
    let mirrored = ROW.replace(
        "%src[4 + 28 * i0] within bytes -4 + 4 * i0 to 28 + 4 * i0",
        "%src[-4 + 36 * i0] within bytes 4 - 4 * i0 to 36 - 4 * i0",
    );
    verify_loop_kernel(&parse_loop_kernel(&mirrored).unwrap()).unwrap();
    check(
        &mirrored.replace(" within bytes 4 - 4 * i0 to 36 - 4 * i0", ""),
        "below 0",
    );
    // Windows that read past the source: the last term's window ends 4 bytes after it.
    check(
        &ROW.replace("%src[4 + 28 * i0]", "%src[12 + 28 * i0]"),
        "outside the",
    );
    // A gap: the first two elements are in no window.
    check(
        &ROW.replace("-4 + 4 * i0 to 28 + 4 * i0", "8 + 4 * i0 to 28 + 4 * i0"),
        "uncovered",
    );
    // Not whole elements.
    check(
        &ROW.replace("-4 + 4 * i0 to 28 + 4 * i0", "-2 + 4 * i0 to 28 + 4 * i0"),
        "whole elements",
    );
    // The innermost loop must be a reduction loop.
    check(
        "loops @k(%src: tensor<8xf32>) -> (%dst: tensor<8xf32>) {\n  accumulate 4 bytes \
         %dst[0 + 4 * i0] += %src[0 + 4 * i0] within bytes 0 to 4\n      for i0 in 0 to 8\n}\n",
        "reduction loop",
    );
    // Code generation unrolls every reduction loop of a windowed sum: at most 64 terms, not
    // 3 * 5 * 5 (the innermost loop alone has 5). The fuzz bodies found the verifier passing
    // this and the JIT refusing it.
    check(
        "loops @k(%src: tensor<19xf32>) -> (%dst: tensor<1xf32>) {\n  accumulate 4 bytes \
         %dst[0] += %src[0 + 0 * i0 + 0 * i1 + 0 * i2] within bytes 0 to 4\n      \
         for i0 in 0 to 3, i1 in 0 to 5, i2 in 0 to 5\n}\n",
        "sum-terms",
    );
}
