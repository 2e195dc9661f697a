//! Whether a [`Movement`] answer is true of a kernel's output: the check shared by the
//! analysis tests, which know each op's answer by hand, and the fuzz bodies, which ask it of
//! random ops and chains.

#![allow(dead_code)] // Each includer uses a different part of this file.

use relayout::Movement;

/// numpy's `input.reshape(shape).transpose(perm)`, flattened, on elements of `elem` bytes.
pub fn transpose(input: &[u8], elem: usize, shape: &[u64], perm: &[usize]) -> Vec<u8> {
    let mut in_strides = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        in_strides[k] = in_strides[k + 1] * shape[k + 1] as usize;
    }
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p] as usize).collect();
    let count: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(input.len());
    let mut index = vec![0usize; out_shape.len()];
    for _ in 0..count {
        let at: usize = index
            .iter()
            .zip(perm)
            .map(|(&o, &p)| o * in_strides[p])
            .sum();
        out.extend_from_slice(&input[at * elem..(at + 1) * elem]);
        for j in (0..index.len()).rev() {
            index[j] += 1;
            if index[j] < out_shape[j] {
                break;
            }
            index[j] = 0;
        }
    }
    out
}

/// Panics (naming `what`) unless `m` describes how `out` was made from `src`, elements of
/// `elem` bytes: the identity, one contiguous block with zeros around it, a permutation, or a
/// strided view. A gather claims nothing about the data but its counts: at most one fill per
/// statement. (What a gather's `bytes_moved` must be depends on the op: the analysis tests
/// check it where they know.)
pub fn assert_describes(m: &Movement, elem: usize, src: &[u8], out: &[u8], what: &str) {
    let what = format!("{what}: {m:?}");
    match m {
        Movement::NoMovement => assert!(out == src, "{what}"),
        Movement::ContiguousCopy {
            src_offset,
            dst_offset,
            bytes,
        } => {
            let (s, d, n) = (*src_offset as usize, *dst_offset as usize, *bytes as usize);
            assert!(out[d..d + n] == src[s..s + n], "{what}");
            assert!(out[..d].iter().all(|&b| b == 0), "{what}");
            assert!(out[d + n..].iter().all(|&b| b == 0), "{what}");
        }
        Movement::Permutation { shape, perm } => {
            assert!(perm.len() >= 2, "{what}");
            assert_ne!(*perm, (0..perm.len()).collect::<Vec<_>>(), "{what}");
            assert_eq!(
                shape.iter().product::<u64>() as usize * elem,
                src.len(),
                "{what}"
            );
            assert!(transpose(src, elem, shape, perm) == out, "{what}");
        }
        Movement::StridedView {
            offset,
            shape,
            strides,
        } => {
            assert_eq!(
                shape.iter().product::<u64>() as usize * elem,
                out.len(),
                "{what}"
            );
            // Walk the output in row-major order, keeping the input element it views.
            let mut index = vec![0u64; shape.len()];
            for o in 0..out.len() / elem {
                let at = index
                    .iter()
                    .zip(strides)
                    .fold(*offset as i64, |at, (&i, &s)| at + i as i64 * s);
                assert!(at >= 0, "{what}");
                let at = at as usize * elem;
                assert!(
                    out[o * elem..][..elem] == src[at..at + elem],
                    "{what}: element {o}"
                );
                for d in (0..shape.len()).rev() {
                    index[d] += 1;
                    if index[d] < shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
            }
        }
        Movement::Gather {
            statements, fills, ..
        } => assert!(fills <= statements, "{what}"),
        other => panic!("a movement this check does not know: {other:?}"),
    }
}
