//! Copies and fills with non-temporal (streaming) stores, which CLIF cannot express.
//!
//! Generated code calls these for the long runs of kernels with large outputs (see
//! `relayout_codegen::streams`). Streaming stores skip the read of each destination line that
//! an ordinary store does first, and do not evict the working set from the caches. They are
//! weakly ordered, so every function that calls them ends with `relayout_store_fence`.
//!
//! Only aligned 16- or 32-byte blocks are streamed; the unaligned head and tail of a run are
//! written with ordinary unaligned stores. On targets other than x86-64 the functions are
//! plain copies and fills.

/// Copies `count` runs of `len` bytes from `src` to `dst` with streaming stores, run `k` at
/// `k * src_stride` from `src` and `k * dst_stride` from `dst`.
///
/// # Safety
/// Every run must be valid for reads at the source and for writes at the destination, and
/// the source and destination must not overlap. Generated code passes the runs of an
/// innermost loop of a verified kernel inside buffers whose lengths the JIT checked, which
/// the caller guarantees do not overlap.
pub unsafe extern "C" fn relayout_stream_copy(
    dst: *mut u8,
    src: *const u8,
    len: u64,
    count: u64,
    dst_stride: i64,
    src_stride: i64,
) {
    let len = len as usize;
    #[cfg(target_arch = "x86_64")]
    let copy: unsafe fn(*mut u8, *const u8, usize) = if std::arch::is_x86_feature_detected!("avx") {
        x86::copy_avx
    } else {
        x86::copy_sse2
    };
    #[cfg(not(target_arch = "x86_64"))]
    let copy: unsafe fn(*mut u8, *const u8, usize) = |d, s, n| unsafe {
        // SAFETY: the caller's contract.
        std::ptr::copy_nonoverlapping(s, d, n)
    };
    for k in 0..count as isize {
        // SAFETY: the caller's contract: run `k` lies inside both buffers (`wrapping_offset`
        // computes its address, which is in bounds, without asserting it on the way), and
        // the AVX variant is chosen only when the CPU has AVX.
        unsafe {
            copy(
                dst.wrapping_offset(k * dst_stride as isize),
                src.wrapping_offset(k * src_stride as isize),
                len,
            )
        }
    }
}

/// Zeroes `count` runs of `len` bytes, run `k` at `k * dst_stride` from `dst`, with
/// streaming stores.
///
/// # Safety
/// Every run must be valid for writes.
pub unsafe extern "C" fn relayout_stream_zero(dst: *mut u8, len: u64, count: u64, dst_stride: i64) {
    let len = len as usize;
    for k in 0..count as isize {
        let at = dst.wrapping_offset(k * dst_stride as isize);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract; SSE2 is part of x86-64.
        unsafe {
            x86::zero_sse2(at, len)
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: the caller's contract.
        unsafe {
            std::ptr::write_bytes(at, 0, len)
        }
    }
}

/// Orders the streaming stores made so far before any later store.
pub extern "C" fn relayout_store_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no preconditions (SSE is part of x86-64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    }
    #[cfg(not(target_arch = "x86_64"))]
    std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// The bytes from `dst` to the next multiple of `align` (at most `len`).
    fn head(dst: *mut u8, align: usize, len: usize) -> usize {
        dst.align_offset(align).min(len)
    }

    /// # Safety
    /// As `relayout_stream_copy`, and the CPU supports AVX.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn copy_avx(dst: *mut u8, src: *const u8, len: usize) {
        let h = head(dst, 32, len);
        // SAFETY (whole function): every access is inside `[0, len)` of both buffers, and the
        // streamed addresses `dst + h + 32k` are 32-byte aligned.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, h);
            let mut i = h;
            while i + 128 <= len {
                let a = _mm256_loadu_si256(src.add(i).cast());
                let b = _mm256_loadu_si256(src.add(i + 32).cast());
                let c = _mm256_loadu_si256(src.add(i + 64).cast());
                let d = _mm256_loadu_si256(src.add(i + 96).cast());
                _mm256_stream_si256(dst.add(i).cast(), a);
                _mm256_stream_si256(dst.add(i + 32).cast(), b);
                _mm256_stream_si256(dst.add(i + 64).cast(), c);
                _mm256_stream_si256(dst.add(i + 96).cast(), d);
                i += 128;
            }
            while i + 32 <= len {
                let a = _mm256_loadu_si256(src.add(i).cast());
                _mm256_stream_si256(dst.add(i).cast(), a);
                i += 32;
            }
            std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
        }
    }

    /// # Safety
    /// As `relayout_stream_copy`.
    pub(super) unsafe fn copy_sse2(dst: *mut u8, src: *const u8, len: usize) {
        let h = head(dst, 16, len);
        // SAFETY (whole function): as in `copy_avx`, with 16-byte alignment.
        unsafe {
            std::ptr::copy_nonoverlapping(src, dst, h);
            let mut i = h;
            while i + 16 <= len {
                let a = _mm_loadu_si128(src.add(i).cast());
                _mm_stream_si128(dst.add(i).cast(), a);
                i += 16;
            }
            std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), len - i);
        }
    }

    /// # Safety
    /// As `relayout_stream_zero`.
    pub(super) unsafe fn zero_sse2(dst: *mut u8, len: usize) {
        let h = head(dst, 16, len);
        // SAFETY (whole function): every access is inside `[0, len)` of `dst`, and the
        // streamed addresses are 16-byte aligned.
        unsafe {
            std::ptr::write_bytes(dst, 0, h);
            let zero = _mm_setzero_si128();
            let mut i = h;
            while i + 16 <= len {
                _mm_stream_si128(dst.add(i).cast(), zero);
                i += 16;
            }
            std::ptr::write_bytes(dst.add(i), 0, len - i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length and misalignment around the block sizes copies and zeroes exactly the
    /// bytes asked for, and nothing beside them.
    #[test]
    fn streaming_moves_exactly_the_run() {
        let src: Vec<u8> = (0..600u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in [
            0usize, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 200, 511,
        ] {
            for at in 0..40usize {
                let mut dst = vec![0xeeu8; 600];
                // SAFETY: `at + len + 1 <= 600` for both buffers, which are distinct.
                unsafe {
                    relayout_stream_copy(
                        dst.as_mut_ptr().add(at),
                        src.as_ptr().add(1),
                        len as u64,
                        1,
                        0,
                        0,
                    )
                };
                relayout_store_fence();
                assert!(
                    dst[..at].iter().all(|&x| x == 0xee),
                    "len {len} at {at}: head"
                );
                assert_eq!(&dst[at..at + len], &src[1..1 + len], "len {len} at {at}");
                assert!(
                    dst[at + len..].iter().all(|&x| x == 0xee),
                    "len {len} at {at}: tail"
                );

                // SAFETY: `at + len <= 600`.
                unsafe { relayout_stream_zero(dst.as_mut_ptr().add(at), len as u64, 1, 0) };
                relayout_store_fence();
                assert!(
                    dst[at..at + len].iter().all(|&x| x == 0),
                    "zero len {len} at {at}"
                );
                assert!(
                    dst[at + len..].iter().all(|&x| x == 0xee),
                    "zero len {len} at {at}: tail"
                );
            }
        }
    }

    /// Several runs per call, with positive and negative strides, land where the strides say.
    #[test]
    fn streaming_rows_follow_the_strides() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 5) as u8).collect();
        for (len, count, ds, ss) in [
            (64usize, 5usize, 100isize, 70isize),
            (65, 4, -80, 300),
            (200, 3, 256, -256),
        ] {
            let mut dst = vec![0u8; 4096];
            let (d0, s0) = (2000usize, 2000usize);
            // SAFETY: every run lies inside both 4096-byte buffers, which are distinct.
            unsafe {
                relayout_stream_copy(
                    dst.as_mut_ptr().add(d0),
                    src.as_ptr().add(s0),
                    len as u64,
                    count as u64,
                    ds as i64,
                    ss as i64,
                );
            }
            relayout_store_fence();
            let mut want = vec![0u8; 4096];
            for k in 0..count as isize {
                let d = (d0 as isize + k * ds) as usize;
                let s = (s0 as isize + k * ss) as usize;
                want[d..d + len].copy_from_slice(&src[s..s + len]);
            }
            assert_eq!(dst, want, "len {len} count {count} strides {ds} {ss}");

            // SAFETY: as above, for the destination.
            unsafe {
                relayout_stream_zero(
                    dst.as_mut_ptr().add(d0),
                    len as u64,
                    count as u64,
                    ds as i64,
                )
            };
            relayout_store_fence();
            assert!(
                dst.iter().all(|&x| x == 0),
                "zero rows len {len} count {count}"
            );
        }
    }
}
