//! Bands (fused statements) in the loop IR: printed, parsed back, verified, interpreted.

use relayout_ir::{interpret_loops, parse_loop_kernel, verify_loop_kernel, Band, LoopKernel, Unit};

/// A Col2Im-like kernel: per 16-byte plane, a fill and two accumulations, fused.
const FUSED: &str = "\
loops @k(%src: tensor<32xf32>) -> (%dst: tensor<16xf32>) {
  fused for i0 in 0 to 4 {
    fill 16 bytes %dst[0 + 16 * i0] = 0
        for i0 in 0 to 4
    accumulate 8 bytes %dst[0 + 16 * i0 + 8 * i1] += %src[0 + 32 * i0 + 4 * i1]
        for i0 in 0 to 4, i1 in 0 to 2
    accumulate 12 bytes %dst[4 + 16 * i0] += %src[16 + 32 * i0]
        for i0 in 0 to 4
  }
}
";

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(37) ^ seed)
        .collect()
}

#[test]
fn a_band_prints_parses_back_and_verifies() {
    let k = parse_loop_kernel(FUSED).unwrap_or_else(|e| panic!("{}", e.render(FUSED)));
    assert_eq!(
        k.bands,
        [Band {
            first: 0,
            len: 3,
            depth: 1
        }]
    );
    assert_eq!(k.to_string(), FUSED);
    verify_loop_kernel(&k).unwrap();
    // Unfused, the same statements print as today, without the band.
    let plain = k.unfused().to_string();
    assert!(!plain.contains("fused"), "{plain}");
    assert_eq!(parse_loop_kernel(&plain).unwrap(), k.unfused());
}

#[test]
fn a_legal_band_computes_what_its_statements_compute() {
    let k = parse_loop_kernel(FUSED).unwrap();
    let src = data(128, 1);
    let (mut fused, mut plain) = (data(64, 2), data(64, 2));
    interpret_loops(&k, &src, &mut fused).unwrap();
    interpret_loops(&k.unfused(), &src, &mut plain).unwrap();
    assert_eq!(fused, plain);
}

#[test]
fn the_interpreter_runs_members_per_iteration() {
    // Not a legal band, built by hand to see the order: iteration i copies byte i (first
    // statement) and byte i + 1 (second), so a later iteration of the first statement
    // overwrites what an earlier iteration of the second wrote. The verifier refuses it.
    let k = LoopKernel {
        bands: vec![Band {
            first: 0,
            len: 2,
            depth: 1,
        }],
        ..parse_loop_kernel(
            "loops @k(%src: tensor<8xui8>) -> (%dst: tensor<4xui8>) {
  copy 1 bytes %dst[0 + 1 * i0] = %src[0 + 1 * i0]
      for i0 in 0 to 3
  copy 1 bytes %dst[1 + 1 * i0] = %src[4 + 1 * i0]
      for i0 in 0 to 3
}
",
        )
        .unwrap()
    };
    let err = verify_loop_kernel(&k).unwrap_err();
    assert_eq!(err.of_check("bands").count(), 1, "{err}");
    assert!(err.to_string().contains("iterations overlap"), "{err}");
    let src = [10, 11, 12, 13, 20, 21, 22, 23];
    let (mut fused, mut plain) = ([0u8; 4], [0u8; 4]);
    interpret_loops(&k, &src, &mut fused).unwrap();
    interpret_loops(&k.unfused(), &src, &mut plain).unwrap();
    assert_eq!(plain, [10, 20, 21, 22], "statement by statement");
    assert_eq!(fused, [10, 11, 12, 22], "iteration by iteration");
}

#[test]
fn malformed_bands_are_errors() {
    let cases = [
        (
            FUSED.replace(
                "fill 16 bytes %dst[0 + 16 * i0] = 0\n        for i0 in 0 to 4",
                "fill 16 bytes %dst[0 + 16 * i0] = 0\n        for i0 in 0 to 3",
            ),
            "must start with the band's loops",
        ),
        (
            "loops @k(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {
  fused for i0 in 0 to 4 {
    fill 4 bytes %dst[0 + 4 * i0] = 0
        for i0 in 0 to 4
  }
}
"
            .to_string(),
            "at least two statements",
        ),
    ];
    for (text, needle) in cases {
        let e = parse_loop_kernel(&text).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}\n{text}");
    }
    // Bands that parse (or are built) but do not verify.
    let k = parse_loop_kernel(FUSED).unwrap();
    for (bands, needle) in [
        (
            vec![Band {
                first: 0,
                len: 1,
                depth: 1,
            }],
            "at least two",
        ),
        (
            vec![Band {
                first: 0,
                len: 3,
                depth: 0,
            }],
            "depth 0",
        ),
        (
            vec![Band {
                first: 1,
                len: 3,
                depth: 1,
            }],
            "past the last statement",
        ),
        (
            vec![
                Band {
                    first: 0,
                    len: 2,
                    depth: 1,
                },
                Band {
                    first: 1,
                    len: 2,
                    depth: 1,
                },
            ],
            "not nested in it",
        ),
        (
            vec![Band {
                first: 0,
                len: 3,
                depth: 2,
            }],
            "fewer than the 2 shared",
        ),
    ] {
        let bad = LoopKernel { bands, ..k.clone() };
        let e = verify_loop_kernel(&bad).unwrap_err();
        assert!(
            e.of_check("bands").any(|d| d.message.contains(needle)),
            "{needle}: {e}"
        );
    }
}

/// A padded plane's kernel: per plane, the top and bottom rows, a band over the rows between
/// (each row's body, then its left and right edges), then a corner written again.
const NESTED: &str = "\
loops @pad(%src: tensor<2x3x4xui8>) -> (%dst: tensor<2x5x6xui8>) {
  fused for i0 in 0 to 2 {
    fill 6 bytes %dst[0 + 30 * i0 + 24 * i1] = 0
        for i0 in 0 to 2, i1 in 0 to 2
    fused for i0 in 0 to 2, i1 in 0 to 3 {
      copy 4 bytes %dst[7 + 30 * i0 + 6 * i1] = %src[0 + 12 * i0 + 4 * i1]
          for i0 in 0 to 2, i1 in 0 to 3
      fill 1 bytes %dst[6 + 30 * i0 + 6 * i1 + 5 * i2] = 0
          for i0 in 0 to 2, i1 in 0 to 3, i2 in 0 to 2
    }
    copy 1 bytes %dst[29 + 30 * i0] = %src[11 + 12 * i0]
        for i0 in 0 to 2
  }
}
";

#[test]
fn a_nested_band_prints_parses_back_verifies_and_runs_per_row() {
    let k = parse_loop_kernel(NESTED).unwrap_or_else(|e| panic!("{}", e.render(NESTED)));
    let (outer, inner) = (
        Band {
            first: 0,
            len: 4,
            depth: 1,
        },
        Band {
            first: 1,
            len: 2,
            depth: 2,
        },
    );
    assert_eq!(k.bands, [outer, inner]);
    assert_eq!(k.to_string(), NESTED);
    verify_loop_kernel(&k).unwrap();
    assert_eq!(k.units(), [Unit::Band(outer)]);
    assert_eq!(
        k.units_in(outer),
        [Unit::Stmt(0), Unit::Band(inner), Unit::Stmt(3)]
    );
    assert_eq!(k.units_in(inner), [Unit::Stmt(1), Unit::Stmt(2)]);
    assert_eq!(k.band_of(2), Some(inner));
    assert_eq!(k.band_of(3), Some(outer));
    // The same bytes with both bands, with the outer one only, and with none.
    let src = data(24, 3);
    let run = |k: &LoopKernel| {
        let mut dst = data(60, 4);
        interpret_loops(k, &src, &mut dst).unwrap();
        dst
    };
    let only_outer = LoopKernel {
        bands: vec![outer],
        ..k.clone()
    };
    verify_loop_kernel(&only_outer).unwrap();
    let want = run(&k.unfused());
    assert_eq!(run(&k), want);
    assert_eq!(run(&only_outer), want);
    // Plane 0, row 1: its left edge, the source's first row, its right edge.
    assert_eq!(want[6..12], [0, src[0], src[1], src[2], src[3], 0]);
    assert_eq!(want[29], src[11], "the corner written last");
}

/// The order the interpreter runs a nested band in: at each row, the body and then the
/// edges. Here the edge fill of each row writes only the second byte of the row after next, which
/// that row's body writes again in a later iteration: unfused, every body runs before every
/// fill. The verifier refuses such a band (built by hand to see the order).
#[test]
fn a_nested_band_runs_its_members_row_by_row_and_overlap_is_refused() {
    let text = NESTED.replace(
        "fill 1 bytes %dst[6 + 30 * i0 + 6 * i1 + 5 * i2] = 0
          for i0 in 0 to 2, i1 in 0 to 3, i2 in 0 to 2",
        "fill 1 bytes %dst[13 + 30 * i0 + 6 * i1] = 0
          for i0 in 0 to 2, i1 in 0 to 3",
    );
    let k = parse_loop_kernel(&text).unwrap();
    let err = verify_loop_kernel(&k).unwrap_err();
    assert!(
        err.of_check("bands")
            .any(|d| d.message.contains("band 1 cannot be fused")),
        "{err}"
    );
    let src = data(24, 3);
    let (mut fused, mut plain) = (data(60, 4), data(60, 4));
    interpret_loops(&k, &src, &mut fused).unwrap();
    interpret_loops(&k.unfused(), &src, &mut plain).unwrap();
    // Byte 13, row 2's second byte: row 0's fill, then (fused) row 1's body over it.
    assert_eq!(plain[13], 0, "the fill after every body");
    assert_eq!(fused[13], src[4], "row 1's body after row 0's fill");
}

#[test]
fn malformed_nested_bands_are_errors() {
    for (from, to, needle) in [
        (
            "fused for i0 in 0 to 2, i1 in 0 to 3 {",
            "fused for i0 in 0 to 3, i1 in 0 to 3 {",
            "must share the other's loops and more",
        ),
        (
            "fused for i0 in 0 to 2, i1 in 0 to 3 {",
            "fused for i0 in 0 to 2 {",
            "must share the other's loops and more",
        ),
    ] {
        let text = NESTED.replace(from, to);
        let e = parse_loop_kernel(&text).unwrap_err();
        assert!(e.to_string().contains(needle), "{e}\n{text}");
    }
    let all = "loops @k(%src: tensor<8xui8>) -> (%dst: tensor<8xui8>) {
  fused for i0 in 0 to 2 {
    fused for i0 in 0 to 2, i1 in 0 to 2 {
      copy 2 bytes %dst[0 + 4 * i0 + 2 * i1] = %src[0 + 4 * i0 + 2 * i1]
          for i0 in 0 to 2, i1 in 0 to 2
      fill 1 bytes %dst[1 + 4 * i0 + 2 * i1] = 0
          for i0 in 0 to 2, i1 in 0 to 2
    }
  }
}
";
    let e = parse_loop_kernel(all).unwrap_err();
    assert!(e.to_string().contains("has all of them"), "{e}");
    let k = parse_loop_kernel(NESTED).unwrap();
    for (bands, needle) in [
        // Not deeper than the band it starts in.
        (
            vec![
                Band {
                    first: 0,
                    len: 4,
                    depth: 1,
                },
                Band {
                    first: 1,
                    len: 2,
                    depth: 1,
                },
            ],
            "not nested in it",
        ),
        // Past the end of the band it starts in.
        (
            vec![
                Band {
                    first: 0,
                    len: 2,
                    depth: 1,
                },
                Band {
                    first: 1,
                    len: 2,
                    depth: 2,
                },
            ],
            "not nested in it",
        ),
        // Listed before the band it is nested in.
        (
            vec![
                Band {
                    first: 1,
                    len: 2,
                    depth: 2,
                },
                Band {
                    first: 0,
                    len: 4,
                    depth: 1,
                },
            ],
            "inside or before",
        ),
    ] {
        let bad = LoopKernel { bands, ..k.clone() };
        let e = verify_loop_kernel(&bad).unwrap_err();
        assert!(
            e.of_check("bands").any(|d| d.message.contains(needle)),
            "{needle}: {e}"
        );
    }
}
