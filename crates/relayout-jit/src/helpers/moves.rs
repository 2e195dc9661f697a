//! Copies and fills with ordinary stores over a statement's whole loop nest: the helpers of
//! kernels of many statements (see `relayout_codegen::MANY_STATEMENTS`), whose generated code
//! would take Cranelift longer to compile than such a kernel takes to run many times over.
//!
//! Each run is moved by a loop specialised for its length when the length is a small power
//! of two (a 4-byte element of an Im2Col's edge), else by `copy_nonoverlapping` (a row).

use super::stream::{each_run, StreamLoop};

/// Copies the run of `bytes` bytes at every point of `loops` from `src` to `dst`, with
/// ordinary stores.
///
/// # Safety
/// Every run is valid for reads at the source and for writes at the destination, the two do
/// not overlap, and no other thread touches the destination runs.
pub(crate) unsafe fn move_nest(dst: *mut u8, src: *const u8, bytes: usize, loops: &[StreamLoop]) {
    /// Every run as one unaligned load and store of `T`.
    ///
    /// # Safety
    /// As `move_nest`, with runs of `size_of::<T>()` bytes.
    unsafe fn runs_of<T: Copy>(dst: *mut u8, src: *const u8, loops: &[StreamLoop]) {
        each_run(dst, src, loops, &mut |d, s| {
            // SAFETY: the caller's contract, for this point's run.
            unsafe { (d as *mut T).write_unaligned((s as *const T).read_unaligned()) }
        });
    }
    // SAFETY: the caller's contract, for every run.
    unsafe {
        match bytes {
            1 => runs_of::<u8>(dst, src, loops),
            2 => runs_of::<u16>(dst, src, loops),
            4 => runs_of::<u32>(dst, src, loops),
            8 => runs_of::<u64>(dst, src, loops),
            16 => runs_of::<u128>(dst, src, loops),
            // Rows of an Im2Col or a Pad: a call of `memcpy` per run cost more than the copy.
            17..=INLINE_RUN => each_run(dst, src, loops, &mut |d, s| copy_vectors(d, s, bytes)),
            _ => each_run(dst, src, loops, &mut |d, s| {
                std::ptr::copy_nonoverlapping(s, d, bytes)
            }),
        }
    }
}

/// Runs up to this long are copied inline, longer ones by `memcpy`.
const INLINE_RUN: usize = 8192;

/// Copies `bytes` (more than 16) bytes as 16-byte unaligned loads and stores, the last one
/// ending at the run's end (overlapping the one before it: the bytes it writes again are the
/// same).
///
/// # Safety
/// The run is valid for reads at `s` and for writes at `d`, and the two do not overlap.
#[inline(always)]
unsafe fn copy_vectors(d: *mut u8, s: *const u8, bytes: usize) {
    let vector = |at: usize| {
        // SAFETY: `at + 16 <= bytes`: inside the run.
        unsafe {
            (d.add(at) as *mut u128).write_unaligned((s.add(at) as *const u128).read_unaligned())
        }
    };
    let mut at = 0;
    while at + 16 < bytes {
        vector(at);
        at += 16;
    }
    vector(bytes - 16);
}

/// Fills the run of `bytes` bytes at every point of `loops` from `dst` with `pattern`, the
/// fill value repeated over 16 bytes (`relayout_codegen`'s fill pattern; a run's length is a
/// multiple of the element size, which divides 16, so a run is the pattern repeated and then
/// cut), with ordinary stores.
///
/// # Safety
/// Every run is valid for writes at the destination, and no other thread touches it.
pub(crate) unsafe fn fill_nest(dst: *mut u8, pattern: u128, bytes: usize, loops: &[StreamLoop]) {
    let pattern = pattern.to_le_bytes();
    // SAFETY (of each closure): the caller's contract, for this point's run.
    unsafe {
        match bytes {
            1 => each_run(dst, std::ptr::null(), loops, &mut |d, _| {
                d.write(pattern[0])
            }),
            2 | 4 | 8 | 16 => each_run(dst, std::ptr::null(), loops, &mut |d, _| {
                std::ptr::copy_nonoverlapping(pattern.as_ptr(), d, bytes)
            }),
            _ if pattern.iter().all(|&x| x == pattern[0]) => {
                each_run(dst, std::ptr::null(), loops, &mut |d, _| {
                    d.write_bytes(pattern[0], bytes)
                })
            }
            _ => each_run(dst, std::ptr::null(), loops, &mut |d, _| {
                let mut at = 0;
                while at < bytes {
                    let n = (bytes - at).min(16);
                    std::ptr::copy_nonoverlapping(pattern.as_ptr(), d.add(at), n);
                    at += n;
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(loops: &[(u64, i64, i64)]) -> Vec<StreamLoop> {
        loops
            .iter()
            .map(|&(count, dst_stride, src_stride)| StreamLoop {
                count,
                dst_stride,
                src_stride,
            })
            .collect()
    }

    /// Every run length, the specialised ones and the others, against a plain model.
    #[test]
    fn moves_and_fills_write_exactly_their_runs() {
        for bytes in [1usize, 2, 3, 4, 6, 8, 12, 16, 20, 32, 36, 100] {
            // Two loops, the inner stepping past the run so that the gaps must stay untouched.
            let loops = nest(&[
                (3, 7 * (bytes as i64 + 5), 3 * bytes as i64),
                (5, bytes as i64 + 5, bytes as i64 / 2 + 1),
            ]);
            let src: Vec<u8> = (0..4096).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![0xeeu8; 4096];
            let mut expected = dst.clone();
            for i in 0..3i64 {
                for j in 0..5i64 {
                    let d = (i * loops[0].dst_stride + j * loops[1].dst_stride) as usize;
                    let s = (i * loops[0].src_stride + j * loops[1].src_stride) as usize;
                    expected[d..d + bytes].copy_from_slice(&src[s..s + bytes]);
                }
            }
            // SAFETY: every run lies inside both vectors (checked by the model's slicing).
            unsafe { move_nest(dst.as_mut_ptr(), src.as_ptr(), bytes, &loops) };
            assert_eq!(dst, expected, "move of {bytes} bytes");

            // A fill of 4-byte elements (a pattern of repeated bytes and one of others).
            for value in [0x3f00_0000u32, 0x0101_0101] {
                if bytes % 4 != 0 {
                    continue;
                }
                let pattern = (0..4).fold(0u128, |p, k| p | (value as u128) << (32 * k));
                let mut dst = vec![0xeeu8; 4096];
                let mut expected = dst.clone();
                for i in 0..3i64 {
                    for j in 0..5i64 {
                        let d = (i * loops[0].dst_stride + j * loops[1].dst_stride) as usize;
                        for e in (d..d + bytes).step_by(4) {
                            expected[e..e + 4].copy_from_slice(&value.to_le_bytes());
                        }
                    }
                }
                // SAFETY: every run lies inside the vector.
                unsafe { fill_nest(dst.as_mut_ptr(), pattern, bytes, &loops) };
                assert_eq!(dst, expected, "fill of {bytes} bytes with {value:#x}");
            }
        }
    }
}
