//! Bands (fused statements) in the loop IR: printed, parsed back, verified, interpreted.

use relayout_ir::{interpret_loops, parse_loop_kernel, verify_loop_kernel, Band, LoopKernel};

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
            "inside or before",
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
