//! Rows of every other source element, gathered by 16-byte shuffles and written with
//! streaming stores while the source rows ahead are prefetched (see
//! `relayout_codegen::EveryOther` for the form and the measurements). Called by the JIT for
//! kernels that need no generated code (`helper_kernel.rs`); generated code has no call of it.

use super::stream::{each_run, nest, StreamLoop};

/// Gathers, at every point of a loop nest of `depth` loops (`loops`, outermost first; one row
/// when `depth` is 0), a row of `count` elements of `elem` bytes from every other element at
/// `src` into consecutive elements at `dst`. Rows are written with streaming stores when every
/// row of the nest is 16-byte aligned (checked here), else with ordinary ones, and the source
/// rows a few rows ahead are prefetched where `relayout_codegen::prefetch_runs` says so.
/// Streaming stores are weakly ordered: the caller fences (`relayout_store_fence`).
///
/// # Safety
/// `elem` is 1, 2, 4 or 8; `loops` points to `depth` `StreamLoop`s; at every point of the
/// nest, the `(2 * count - 1) * elem` bytes from the source point (from the row's first
/// element to the end of its last) are valid for reads and the `count * elem` bytes from the
/// destination point for writes, and the source and destination do not overlap.
pub unsafe fn relayout_stream_every_other_nest(
    dst: *mut u8,
    src: *const u8,
    elem: u64,
    count: u64,
    loops: *const StreamLoop,
    depth: u64,
) {
    // SAFETY: the caller's contract, for the loops.
    let loops = unsafe { nest(loops, depth) };
    let (elem, count) = (elem as usize, count as usize);
    #[cfg(target_arch = "x86_64")]
    {
        let aligned = super::stream::rows_aligned(dst, loops);
        // One instance per element size and store kind, so that the row inlines into the
        // innermost loop of `each_run`.
        macro_rules! rows {
            ($elem:literal) => {
                if aligned {
                    // SAFETY: the caller's contract for every row; every row is aligned.
                    x86::rows::<$elem, true>(dst, src, loops, count)
                } else {
                    // SAFETY: the caller's contract for every row.
                    x86::rows::<$elem, false>(dst, src, loops, count)
                }
            };
        }
        // SAFETY (each arm): the caller's contract.
        unsafe {
            match elem {
                1 => rows!(1),
                2 => rows!(2),
                4 => rows!(4),
                8 => rows!(8),
                _ => unreachable!("rows of {elem}-byte elements"),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract for every row.
    each_run(dst, src, loops, &mut |d, s| unsafe {
        for k in 0..count {
            std::ptr::copy_nonoverlapping(s.add(2 * k * elem), d.add(k * elem), elem);
        }
    });
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::ahead::Ahead;
    use super::{each_run, StreamLoop};
    use std::arch::x86_64::*;

    /// The even elements of `a`, then those of `b` (`ODD`: its odd elements), of `E` bytes
    /// each, as one vector.
    #[inline(always)]
    fn pick<const E: usize, const ODD: bool>(a: __m128i, b: __m128i) -> __m128i {
        // SAFETY (each arm): SSE2 is part of x86-64, and these are SSE2 instructions.
        unsafe {
            match (E, ODD) {
                // Each 16-bit lane's low (high) byte, zero-extended, packs back to it exactly.
                (1, false) => {
                    let low = _mm_set1_epi16(0xff);
                    _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low))
                }
                (1, true) => {
                    let low = _mm_set1_epi16(0xff);
                    _mm_packus_epi16(_mm_and_si128(a, low), _mm_srli_epi16::<8>(b))
                }
                // Each 32-bit lane's low (high) half, sign-extended, packs back to it exactly.
                (2, false) => _mm_packs_epi32(
                    _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(a)),
                    _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(b)),
                ),
                (2, true) => _mm_packs_epi32(
                    _mm_srai_epi32::<16>(_mm_slli_epi32::<16>(a)),
                    _mm_srai_epi32::<16>(b),
                ),
                (4, false) => _mm_castps_si128(_mm_shuffle_ps::<0b10_00_10_00>(
                    _mm_castsi128_ps(a),
                    _mm_castsi128_ps(b),
                )),
                (4, true) => _mm_castps_si128(_mm_shuffle_ps::<0b11_01_10_00>(
                    _mm_castsi128_ps(a),
                    _mm_castsi128_ps(b),
                )),
                (_, false) => _mm_unpacklo_epi64(a, b),
                (_, true) => _mm_castpd_si128(_mm_shuffle_pd::<0b10>(
                    _mm_castsi128_pd(a),
                    _mm_castsi128_pd(b),
                )),
            }
        }
    }

    /// One row: `count` elements of `E` bytes from every other element at `s` to `d`, whole
    /// vectors first (streamed when `STREAM`), the elements after the last whole vector one by
    /// one. Each vector is made of two source vectors; the last one's second source vector is
    /// loaded one element early and its odd elements taken, so that no load reaches past the
    /// row's last element (which may be the last of the source).
    ///
    /// # Safety
    /// As `relayout_stream_every_other_nest`, for this row; with `STREAM`, `d` is 16-byte
    /// aligned.
    #[inline(always)]
    unsafe fn row<const E: usize, const STREAM: bool>(d: *mut u8, s: *const u8, count: usize) {
        let vectors = count * E / 16;
        let put = |k: usize, v: __m128i| {
            // SAFETY: destination bytes `[16k, 16k + 16)`, inside the `count * E` writable
            // ones; with `STREAM`, `d + 16k` is 16-byte aligned.
            unsafe {
                if STREAM {
                    _mm_stream_si128(d.add(16 * k).cast(), v);
                } else {
                    _mm_storeu_si128(d.add(16 * k).cast(), v);
                }
            }
        };
        // SAFETY (whole block): vector `k` loads source bytes `[32k, 32k + 32)`, and the last
        // one `[32k, 32k + 32 - E)`, inside the `(2 * count - 1) * E` readable ones (`32 *
        // vectors <= 2 * count * E`); the elements after them are read and written one by one
        // at their own places.
        unsafe {
            if vectors > 0 {
                for k in 0..vectors - 1 {
                    let a = _mm_loadu_si128(s.add(32 * k).cast());
                    let b = _mm_loadu_si128(s.add(32 * k + 16).cast());
                    put(k, pick::<E, false>(a, b));
                }
                let k = vectors - 1;
                let a = _mm_loadu_si128(s.add(32 * k).cast());
                let b = _mm_loadu_si128(s.add(32 * k + 16 - E).cast());
                put(k, pick::<E, true>(a, b));
            }
            for i in vectors * 16 / E..count {
                std::ptr::copy_nonoverlapping(s.add(2 * i * E), d.add(i * E), E);
            }
        }
    }

    /// Every row of `loops`, the source of the rows ahead prefetched where code generation
    /// says so.
    ///
    /// # Safety
    /// As `relayout_stream_every_other_nest`; with `STREAM`, every row is 16-byte aligned.
    #[inline(always)]
    pub(super) unsafe fn rows<const E: usize, const STREAM: bool>(
        dst: *mut u8,
        src: *const u8,
        loops: &[StreamLoop],
        count: usize,
    ) {
        // The bytes a row's loads cover, by code generation's rule (which its listing reports).
        let len = relayout_codegen::EveryOther {
            count: count as u64,
        }
        .src_row_bytes(E as u64) as usize;
        match Ahead::for_copy(src, loops, len) {
            // SAFETY: the caller's contract for every row.
            None => each_run(dst, src, loops, &mut |d, s| unsafe {
                row::<E, STREAM>(d, s, count)
            }),
            Some(mut ahead) => each_run(dst, src, loops, &mut |d, s| {
                ahead.prefetch_next(len);
                // SAFETY: the caller's contract for every row.
                unsafe { row::<E, STREAM>(d, s, count) }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every element size, row length (whole vectors and a tail), nest shape, and alignment
    /// of the destination: the rows hold exactly the even elements, and nothing around them is
    /// written. The source ends with the last row's last element; that no load passes it is
    /// what the guard-page tests check (`every_other_element_rows_in_guarded_buffers`).
    #[test]
    fn rows_hold_every_other_element() {
        for elem in [1usize, 2, 4, 8] {
            for count in [1usize, 3, 16 / elem, 64 / elem + 1, 256 / elem] {
                for (rows, src_row, dst_row) in [(1usize, 0usize, 0usize), (5, 3, 1), (4, 2, 2)] {
                    for misalign in [0usize, elem] {
                        let src_stride = (2 * count + src_row) * elem;
                        let dst_stride = (count + dst_row) * elem;
                        let src_len = (rows - 1) * src_stride + (2 * count - 1) * elem;
                        let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
                        let mut dst = vec![0xa5u8; 48 + rows * dst_stride + 32];
                        let base = dst.as_ptr().align_offset(16) + 16 + misalign;
                        let loops = [StreamLoop {
                            count: rows as u64,
                            dst_stride: dst_stride as i64,
                            src_stride: src_stride as i64,
                        }];
                        // SAFETY: every row's loads and stores are inside the two vectors.
                        unsafe {
                            relayout_stream_every_other_nest(
                                dst.as_mut_ptr().add(base),
                                src.as_ptr(),
                                elem as u64,
                                count as u64,
                                loops.as_ptr(),
                                1,
                            )
                        };
                        let mut want = vec![0xa5u8; dst.len()];
                        for r in 0..rows {
                            for k in 0..count {
                                let from = r * src_stride + 2 * k * elem;
                                let to = base + r * dst_stride + k * elem;
                                want[to..to + elem].copy_from_slice(&src[from..from + elem]);
                            }
                        }
                        assert_eq!(
                            dst, want,
                            "{elem}-byte elements, {count} a row, {rows} rows, misaligned \
                             by {misalign}"
                        );
                    }
                }
            }
        }
    }
}
