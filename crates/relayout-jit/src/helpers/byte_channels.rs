//! Pixels of three byte channels into three planes and back (see `relayout_codegen`'s
//! `Deinterleave` and `Interleave` for the forms and the measurements). Called by the JIT for
//! kernels that need no generated code (`helper_kernel.rs`); generated code has no call of
//! them.

use super::stream::{each_run, nest, StreamLoop};

/// Channels of a pixel.
const C: usize = 3;

/// At every point of a loop nest of `depth` loops (`loops`, outermost first; one row when
/// `depth` is 0), writes the `count` pixels of three bytes from the source point as three
/// rows of `count` bytes, channel `c` from `dst + c * plane`, pixel after pixel: the rows of 32
/// pixels a step with AVX2 where the processor has it, else of 16 with SSSE3, else byte by
/// byte; the pixels after the last whole step one by one.
///
/// # Safety
/// `loops` points to `depth` `StreamLoop`s; at every point of the nest, the `3 * count` bytes
/// from the source point are valid for reads and the `count` bytes from each `dst + c *
/// plane` (`c` = 0, 1, 2) for writes, and the source and destination do not overlap.
pub unsafe fn relayout_deinterleave_nest(
    dst: *mut u8,
    src: *const u8,
    count: u64,
    plane: i64,
    loops: *const StreamLoop,
    depth: u64,
) {
    // SAFETY: the caller's contract, for the loops.
    let loops = unsafe { nest(loops, depth) };
    let (count, plane) = (count as usize, plane as isize);
    #[cfg(target_arch = "x86_64")]
    {
        // A row is at least `relayout_codegen::deinterleave::MIN_PIXELS` pixels: one call of
        // the row function each is a small part of it.
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the caller's contract for every row; the processor has AVX2.
            each_run(dst, src, loops, &mut |d, s| unsafe {
                x86::row_avx2(d, s, count, plane)
            });
            return;
        }
        if std::arch::is_x86_feature_detected!("ssse3") {
            // SAFETY: the caller's contract for every row; the processor has SSSE3.
            each_run(dst, src, loops, &mut |d, s| unsafe {
                x86::row_ssse3(d, s, count, plane)
            });
            return;
        }
    }
    // SAFETY: the caller's contract for every row.
    each_run(dst, src, loops, &mut |d, s| unsafe {
        pixels(d, s, 0..count, plane)
    });
}

/// At every point of a loop nest of `depth` loops (`loops`, outermost first; one row when
/// `depth` is 0), writes `count` pixels of three bytes from the three rows of `count` bytes at
/// the source point, channel `c` from `src + c * plane`: the mirror image of
/// [`relayout_deinterleave_nest`], on the same paths.
///
/// # Safety
/// `loops` points to `depth` `StreamLoop`s; at every point of the nest, the `count` bytes from
/// each `src + c * plane` (`c` = 0, 1, 2) are valid for reads and the `3 * count` bytes from
/// the destination point for writes, and the source and destination do not overlap.
pub unsafe fn relayout_interleave_nest(
    dst: *mut u8,
    src: *const u8,
    count: u64,
    plane: i64,
    loops: *const StreamLoop,
    depth: u64,
) {
    // SAFETY: the caller's contract, for the loops.
    let loops = unsafe { nest(loops, depth) };
    let (count, plane) = (count as usize, plane as isize);
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the caller's contract for every row; the processor has AVX2.
            each_run(dst, src, loops, &mut |d, s| unsafe {
                x86::merge_row_avx2(d, s, count, plane)
            });
            return;
        }
        if std::arch::is_x86_feature_detected!("ssse3") {
            // SAFETY: the caller's contract for every row; the processor has SSSE3.
            each_run(dst, src, loops, &mut |d, s| unsafe {
                x86::merge_row_ssse3(d, s, count, plane)
            });
            return;
        }
    }
    // SAFETY: the caller's contract for every row.
    each_run(dst, src, loops, &mut |d, s| unsafe {
        merged_pixels(d, s, 0..count, plane)
    });
}

/// Pixels `range` of a row from the planes, byte by byte.
///
/// # Safety
/// As [`relayout_interleave_nest`], for a row of at least `range.end` pixels.
#[inline(always)]
unsafe fn merged_pixels(d: *mut u8, s: *const u8, range: std::ops::Range<usize>, plane: isize) {
    for x in range {
        for c in 0..C {
            // SAFETY: pixel `x` of the row: byte `x` of plane `c` and destination byte `3x + c`.
            unsafe { *d.add(C * x + c) = *s.offset(c as isize * plane).add(x) };
        }
    }
}

/// Pixels `range` of a row, byte by byte.
///
/// # Safety
/// As [`relayout_deinterleave_nest`], for a row of at least `range.end` pixels.
#[inline(always)]
unsafe fn pixels(d: *mut u8, s: *const u8, range: std::ops::Range<usize>, plane: isize) {
    for x in range {
        for c in 0..C {
            // SAFETY: pixel `x` of the row: source byte `3x + c` and byte `x` of plane `c`.
            unsafe { *d.offset(c as isize * plane).add(x) = *s.add(C * x + c) };
        }
    }
}

/// `MASKS[c][k]`: the byte shuffle that moves channel `c` of pixels 0..16, held in the three
/// 16-byte vectors `k` = 0, 1, 2 of their 48 bytes, from vector `k` into its lane (pixel
/// `i`'s byte `3i + c` lies in vector `(3i + c) / 16`), and zeroes the lanes vector `k` does
/// not hold (index 0x80), so that the three shuffles of a channel or together.
const MASKS: [[[u8; 16]; C]; C] = masks();

const fn masks() -> [[[u8; 16]; C]; C] {
    let mut m = [[[0x80u8; 16]; C]; C];
    let mut c = 0;
    while c < C {
        let mut i = 0;
        while i < 16 {
            let byte = C * i + c;
            m[c][byte / 16][i] = (byte % 16) as u8;
            i += 1;
        }
        c += 1;
    }
    m
}

/// `MERGE_MASKS[k][c]`: the byte shuffle that moves, from a vector of channel `c` of pixels
/// 0..16, the bytes of vector `k` = 0, 1, 2 of their 48 interleaved bytes into its lanes
/// (lane `p` of vector `k` is byte `16k + p`: channel `(16k + p) % 3` of pixel
/// `(16k + p) / 3`), zeroing the lanes of the other channels, so that the three shuffles of a
/// vector or together.
const MERGE_MASKS: [[[u8; 16]; C]; C] = merge_masks();

const fn merge_masks() -> [[[u8; 16]; C]; C] {
    let mut m = [[[0x80u8; 16]; C]; C];
    let mut k = 0;
    while k < C {
        let mut p = 0;
        while p < 16 {
            let byte = 16 * k + p;
            m[k][byte % C][p] = (byte / C) as u8;
            p += 1;
        }
        k += 1;
    }
    m
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{merged_pixels, pixels, C, MASKS, MERGE_MASKS};
    use std::arch::x86_64::*;

    /// One row with AVX2: 32 pixels a step, each 128-bit lane of the three 32-byte vectors
    /// holding 16 pixels (the lanes' results are then the plane's 32 consecutive bytes), then
    /// a step of 16 with the 128-bit shuffles, then the rest byte by byte.
    ///
    /// # Safety
    /// As `relayout_deinterleave_nest`, for this row; the processor has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn row_avx2(d: *mut u8, s: *const u8, count: usize, plane: isize) {
        // SAFETY (whole block): the masks are 16-byte arrays; a step at pixel `x` with
        // `x + 32 <= count` loads source bytes `[3x, 3x + 96)` and stores bytes `[x, x + 32)`
        // of each plane's row, inside the row's bytes.
        unsafe {
            let masks = MASKS.map(|channel| {
                channel.map(|m| _mm256_broadcastsi128_si256(_mm_loadu_si128(m.as_ptr().cast())))
            });
            let mut x = 0;
            while x + 32 <= count {
                let p = s.add(C * x);
                let v = [
                    _mm256_loadu2_m128i(p.add(48).cast(), p.cast()),
                    _mm256_loadu2_m128i(p.add(64).cast(), p.add(16).cast()),
                    _mm256_loadu2_m128i(p.add(80).cast(), p.add(32).cast()),
                ];
                for (c, m) in masks.iter().enumerate() {
                    let plane_bytes = _mm256_or_si256(
                        _mm256_or_si256(
                            _mm256_shuffle_epi8(v[0], m[0]),
                            _mm256_shuffle_epi8(v[1], m[1]),
                        ),
                        _mm256_shuffle_epi8(v[2], m[2]),
                    );
                    _mm256_storeu_si256(d.offset(c as isize * plane).add(x).cast(), plane_bytes);
                }
                x += 32;
            }
            // AVX2 includes SSSE3.
            let x = steps_ssse3(d, s, x, count, plane);
            pixels(d, s, x..count, plane);
        }
    }

    /// One row from the planes with AVX2: 32 pixels a step, each 128-bit lane of the three
    /// 32-byte plane vectors holding 16 pixels, whose 48 interleaved bytes each lane makes and
    /// stores; then a step of 16 with the 128-bit shuffles, then the rest byte by byte.
    ///
    /// # Safety
    /// As `relayout_interleave_nest`, for this row; the processor has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn merge_row_avx2(d: *mut u8, s: *const u8, count: usize, plane: isize) {
        // SAFETY (whole block): the masks are 16-byte arrays; a step at pixel `x` with
        // `x + 32 <= count` loads bytes `[x, x + 32)` of each plane's row and stores
        // destination bytes `[3x, 3x + 96)`, inside the row's bytes.
        unsafe {
            let masks = MERGE_MASKS.map(|vector| {
                vector.map(|m| _mm256_broadcastsi128_si256(_mm_loadu_si128(m.as_ptr().cast())))
            });
            let mut x = 0;
            while x + 32 <= count {
                let v = [0, 1, 2].map(|c| _mm256_loadu_si256(s.offset(c * plane).add(x).cast()));
                let p = d.add(C * x);
                for (k, m) in masks.iter().enumerate() {
                    let bytes = _mm256_or_si256(
                        _mm256_or_si256(
                            _mm256_shuffle_epi8(v[0], m[0]),
                            _mm256_shuffle_epi8(v[1], m[1]),
                        ),
                        _mm256_shuffle_epi8(v[2], m[2]),
                    );
                    // The low lane's 16 bytes of vector k, and the high lane's 48 bytes on.
                    _mm256_storeu2_m128i(p.add(48 + 16 * k).cast(), p.add(16 * k).cast(), bytes);
                }
                x += 32;
            }
            // AVX2 includes SSSE3.
            let x = merge_steps_ssse3(d, s, x, count, plane);
            merged_pixels(d, s, x..count, plane);
        }
    }

    /// One row from the planes with SSSE3: 16 pixels a step, then the rest byte by byte.
    ///
    /// # Safety
    /// As `relayout_interleave_nest`, for this row; the processor has SSSE3.
    #[target_feature(enable = "ssse3")]
    pub(super) unsafe fn merge_row_ssse3(d: *mut u8, s: *const u8, count: usize, plane: isize) {
        // SAFETY: the caller's contract; the processor has SSSE3.
        unsafe {
            let x = merge_steps_ssse3(d, s, 0, count, plane);
            merged_pixels(d, s, x..count, plane);
        }
    }

    /// The steps of 16 pixels of a row from the planes from pixel `x` on; returns the first
    /// pixel after them.
    ///
    /// # Safety
    /// As `relayout_interleave_nest`, for this row; the processor has SSSE3.
    #[target_feature(enable = "ssse3")]
    unsafe fn merge_steps_ssse3(
        d: *mut u8,
        s: *const u8,
        mut x: usize,
        count: usize,
        plane: isize,
    ) -> usize {
        // SAFETY (whole block): the masks are 16-byte arrays; a step at pixel `x` with
        // `x + 16 <= count` loads bytes `[x, x + 16)` of each plane's row and stores
        // destination bytes `[3x, 3x + 48)`, inside the row's bytes.
        unsafe {
            let masks =
                MERGE_MASKS.map(|vector| vector.map(|m| _mm_loadu_si128(m.as_ptr().cast())));
            while x + 16 <= count {
                let v = [0, 1, 2].map(|c| _mm_loadu_si128(s.offset(c * plane).add(x).cast()));
                let p = d.add(C * x);
                for (k, m) in masks.iter().enumerate() {
                    let bytes = _mm_or_si128(
                        _mm_or_si128(_mm_shuffle_epi8(v[0], m[0]), _mm_shuffle_epi8(v[1], m[1])),
                        _mm_shuffle_epi8(v[2], m[2]),
                    );
                    _mm_storeu_si128(p.add(16 * k).cast(), bytes);
                }
                x += 16;
            }
        }
        x
    }

    /// One row with SSSE3: 16 pixels a step, then the rest byte by byte.
    ///
    /// # Safety
    /// As `relayout_deinterleave_nest`, for this row; the processor has SSSE3.
    #[target_feature(enable = "ssse3")]
    pub(super) unsafe fn row_ssse3(d: *mut u8, s: *const u8, count: usize, plane: isize) {
        // SAFETY: the caller's contract; the processor has SSSE3.
        unsafe {
            let x = steps_ssse3(d, s, 0, count, plane);
            pixels(d, s, x..count, plane);
        }
    }

    /// The steps of 16 pixels of a row from pixel `x` on; returns the first pixel after them.
    ///
    /// # Safety
    /// As `relayout_deinterleave_nest`, for this row; the processor has SSSE3.
    #[target_feature(enable = "ssse3")]
    unsafe fn steps_ssse3(
        d: *mut u8,
        s: *const u8,
        mut x: usize,
        count: usize,
        plane: isize,
    ) -> usize {
        // SAFETY (whole block): the masks are 16-byte arrays; a step at pixel `x` with
        // `x + 16 <= count` loads source bytes `[3x, 3x + 48)` and stores bytes `[x, x + 16)`
        // of each plane's row, inside the row's bytes.
        unsafe {
            let masks = MASKS.map(|channel| channel.map(|m| _mm_loadu_si128(m.as_ptr().cast())));
            while x + 16 <= count {
                let p = s.add(C * x);
                let v = [
                    _mm_loadu_si128(p.cast()),
                    _mm_loadu_si128(p.add(16).cast()),
                    _mm_loadu_si128(p.add(32).cast()),
                ];
                for (c, m) in masks.iter().enumerate() {
                    let plane_bytes = _mm_or_si128(
                        _mm_or_si128(_mm_shuffle_epi8(v[0], m[0]), _mm_shuffle_epi8(v[1], m[1])),
                        _mm_shuffle_epi8(v[2], m[2]),
                    );
                    _mm_storeu_si128(d.offset(c as isize * plane).add(x).cast(), plane_bytes);
                }
                x += 16;
            }
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of `count` pixels at every point of `loops` from a random source, by every path
    /// the processor has (AVX2, SSSE3, bytes): the planes hold exactly each channel, and
    /// nothing around them is written.
    fn check(count: usize, plane: usize, loops: &[StreamLoop]) {
        let rows: usize = loops.iter().map(|l| l.count as usize).product();
        let src_stride = loops.last().map_or(0, |l| l.src_stride as usize);
        let dst_stride = loops.last().map_or(0, |l| l.dst_stride as usize);
        let src_len = (rows - 1) * src_stride + C * count;
        let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
        let dst_len = 32 + (rows - 1) * dst_stride + 2 * plane + count + 32;
        let mut want = vec![0xa5u8; dst_len];
        for r in 0..rows {
            for x in 0..count {
                for c in 0..C {
                    want[32 + r * dst_stride + c * plane + x] = src[r * src_stride + C * x + c];
                }
            }
        }
        type Row = unsafe fn(*mut u8, *const u8, usize, isize);
        let mut paths: Vec<(&str, Row)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                paths.push(("avx2", x86::row_avx2));
            }
            if std::arch::is_x86_feature_detected!("ssse3") {
                paths.push(("ssse3", x86::row_ssse3));
            }
        }
        fn bytes(d: *mut u8, s: *const u8, count: usize, plane: isize) {
            // SAFETY: as the callers below, for one row.
            unsafe { pixels(d, s, 0..count, plane) }
        }
        paths.push(("bytes", bytes));
        for (name, row) in paths {
            let mut dst = vec![0xa5u8; dst_len];
            // SAFETY: every row's loads and stores are inside the two vectors.
            each_run(
                dst.as_mut_ptr().wrapping_add(32),
                src.as_ptr(),
                loops,
                &mut |d, s| unsafe { row(d, s, count, plane as isize) },
            );
            assert_eq!(
                dst, want,
                "{name}: {count} pixels, planes {plane} apart, {loops:?}"
            );
        }
        // And the entry, on whatever path it takes.
        let mut dst = vec![0xa5u8; dst_len];
        // SAFETY: as above.
        unsafe {
            relayout_deinterleave_nest(
                dst.as_mut_ptr().add(32),
                src.as_ptr(),
                count as u64,
                plane as i64,
                loops.as_ptr(),
                loops.len() as u64,
            )
        };
        assert_eq!(dst, want, "entry: {count} pixels, planes {plane} apart");
    }

    /// The mirror image of [`check`]: rows of `count` pixels made from three planes `plane`
    /// bytes apart, by every path, and by the entry.
    fn check_merge(count: usize, plane: usize, loops: &[StreamLoop]) {
        let rows: usize = loops.iter().map(|l| l.count as usize).product();
        let src_stride = loops.last().map_or(0, |l| l.src_stride as usize);
        let dst_stride = loops.last().map_or(0, |l| l.dst_stride as usize);
        let src_len = (rows - 1) * src_stride + 2 * plane + count;
        let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
        let dst_len = 32 + (rows - 1) * dst_stride + C * count + 32;
        let mut want = vec![0xa5u8; dst_len];
        for r in 0..rows {
            for x in 0..count {
                for c in 0..C {
                    want[32 + r * dst_stride + C * x + c] = src[r * src_stride + c * plane + x];
                }
            }
        }
        type Row = unsafe fn(*mut u8, *const u8, usize, isize);
        let mut paths: Vec<(&str, Row)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                paths.push(("avx2", x86::merge_row_avx2));
            }
            if std::arch::is_x86_feature_detected!("ssse3") {
                paths.push(("ssse3", x86::merge_row_ssse3));
            }
        }
        fn bytes(d: *mut u8, s: *const u8, count: usize, plane: isize) {
            // SAFETY: as the callers below, for one row.
            unsafe { merged_pixels(d, s, 0..count, plane) }
        }
        paths.push(("bytes", bytes));
        for (name, row) in paths {
            let mut dst = vec![0xa5u8; dst_len];
            // SAFETY: every row's loads and stores are inside the two vectors.
            each_run(
                dst.as_mut_ptr().wrapping_add(32),
                src.as_ptr(),
                loops,
                &mut |d, s| unsafe { row(d, s, count, plane as isize) },
            );
            assert_eq!(
                dst, want,
                "{name}: {count} pixels, planes {plane} apart, {loops:?}"
            );
        }
        let mut dst = vec![0xa5u8; dst_len];
        // SAFETY: as above.
        unsafe {
            relayout_interleave_nest(
                dst.as_mut_ptr().add(32),
                src.as_ptr(),
                count as u64,
                plane as i64,
                loops.as_ptr(),
                loops.len() as u64,
            )
        };
        assert_eq!(dst, want, "entry: {count} pixels, planes {plane} apart");
    }

    #[test]
    fn pixels_hold_each_plane() {
        for count in [1, 15, 16, 17, 31, 32, 33, 47, 48, 64, 95, 100, 1000] {
            for plane in [count, count + 5, 3 * count + 64] {
                check_merge(count, plane, &[]);
                let row = StreamLoop {
                    count: 3,
                    src_stride: (3 * plane + 1) as i64,
                    dst_stride: (C * count + 7) as i64,
                };
                check_merge(count, plane, &[row]);
            }
        }
    }

    #[test]
    fn planes_hold_each_channel() {
        for count in [1, 15, 16, 17, 31, 32, 33, 47, 48, 64, 95, 100, 1000] {
            for plane in [count, count + 5, 3 * count + 64] {
                check(count, plane, &[]);
                let row = StreamLoop {
                    count: 3,
                    src_stride: (C * count + 7) as i64,
                    dst_stride: (3 * plane + 1) as i64,
                };
                check(count, plane, &[row]);
            }
        }
    }
}
