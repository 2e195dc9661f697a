//! Sums from +0.0 of one term per run (`accumulate ... = 0 + ...` without reduction loops: a
//! Col2Im whose windows do not overlap) move like copies, but every element is `+0.0 + x`:
//! -0.0 becomes +0.0, and for f16 and bf16, whose addition generated code makes on the bits,
//! a signalling NaN becomes quiet. Every one of the 65536 values of f16 and bf16, and f32
//! and f64 values with -0.0 among them, through the three ways generated code moves such runs
//! (shuffle blocks of a transpose, whole vectors of long runs, single elements), JIT ==
//! interpreter bit for bit.

use relayout_ir::{interpret_loops, parse_loop_kernel, DType};
use relayout_jit::CompiledKernel;

/// Every 16-bit pattern, in order, as little-endian bytes.
fn all_halves() -> Vec<u8> {
    (0..=u16::MAX).flat_map(u16::to_le_bytes).collect()
}

/// `count` f32 or f64 values (by `size`), every third one -0.0, the others of both signs.
fn floats(size: usize, count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| {
            let v = if i % 3 == 0 {
                -0.0
            } else {
                (i as f64 - 1000.5) * 0.25
            };
            if size == 4 {
                (v as f32).to_le_bytes().to_vec()
            } else {
                v.to_le_bytes().to_vec()
            }
        })
        .collect()
}

/// The kernels of one term per run over `n` elements of `dtype` (`n` a multiple of 256): a
/// transpose of 16 x `n/16` (shuffle blocks), long runs of 200 bytes and a reversal of single
/// elements, in that order.
fn kernels(dtype: DType, n: u64) -> Vec<String> {
    let e = dtype.size();
    let ty = format!("tensor<{n}x{dtype}>");
    let (rows, cols) = (16, n / 16);
    let head = format!("loops @k(%src: {ty}) -> (%dst: {ty}) {{");
    let run = 200 / e * e;
    vec![
        format!(
            "{head}\n  accumulate {e} bytes %dst[0 + {} * i0 + {e} * i1] = 0 + %src[0 + {e} * i0 + {} * i1]\n      for i0 in 0 to {cols}, i1 in 0 to {rows}\n}}\n",
            rows * e,
            cols * e
        ),
        format!(
            "{head}\n  accumulate {run} bytes %dst[0 + {run} * i0] = 0 + %src[0 + {run} * i0]\n      for i0 in 0 to {}\n}}\n",
            n * e / run
        ),
        format!(
            "{head}\n  accumulate {e} bytes %dst[0 + {e} * i0] = 0 + %src[{} - {e} * i0]\n      for i0 in 0 to {n}\n}}\n",
            (n - 1) * e
        ),
    ]
}

#[test]
fn one_term_sums_are_plus_zero_plus_each_element_bit_for_bit() {
    let cases = [
        (DType::F16, all_halves()),
        (DType::BF16, all_halves()),
        (DType::F32, floats(4, 65536)),
        (DType::F64, floats(8, 65536)),
    ];
    let mut failures = Vec::new();
    for (dtype, src) in cases {
        for text in kernels(dtype, 65536) {
            let k = parse_loop_kernel(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let mut want = vec![0x5au8; src.len()];
            interpret_loops(&k, &src, &mut want).unwrap();
            let compiled = CompiledKernel::compile(&k).unwrap_or_else(|e| panic!("{e}\n{k}"));
            let mut got = vec![0x5au8; src.len()];
            compiled.run(&src, &mut got).unwrap();
            if let Some(i) = got.iter().zip(&want).position(|(a, b)| a != b) {
                failures.push(format!(
                    "byte {i}: {:#04x}, want {:#04x}\n{k}",
                    got[i], want[i]
                ));
            }
            // The copy would differ: -0.0 (and for 16-bit floats signalling NaNs) change.
            assert_ne!(want, src, "{k}");
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
