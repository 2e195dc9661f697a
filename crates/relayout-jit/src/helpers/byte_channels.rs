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
    // SAFETY: the caller's contract.
    unsafe { run_rows(Direction::IntoPlanes, dst, src, count, plane, loops, depth) }
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
    // SAFETY: the caller's contract.
    unsafe { run_rows(Direction::IntoPixels, dst, src, count, plane, loops, depth) }
}

/// Which way a row's bytes move.
#[derive(Clone, Copy, Debug)]
enum Direction {
    /// Interleaved pixels into three planes ([`relayout_deinterleave_nest`]).
    IntoPlanes,
    /// Three planes into interleaved pixels ([`relayout_interleave_nest`]).
    IntoPixels,
}

/// One row of `count` pixels between the pixels' side and the planes' side (planes `plane`
/// bytes apart), from `src` to `dst`, in one [`Direction`].
///
/// # Safety
/// As the entry of its direction, for one row.
type Row = unsafe fn(dst: *mut u8, src: *const u8, count: usize, plane: isize);

/// The row functions of `direction` that this processor runs, named, fastest first: AVX2,
/// SSSE3 (each where the processor has it), then bytes. The entries take the first; the tests
/// check them all.
fn row_paths(direction: Direction) -> Vec<(&'static str, Row)> {
    let mut paths: Vec<(&'static str, Row)> = Vec::with_capacity(3);
    #[cfg(target_arch = "x86_64")]
    {
        let (avx2, ssse3): (Row, Row) = match direction {
            Direction::IntoPlanes => (x86::row_avx2, x86::row_ssse3),
            Direction::IntoPixels => (x86::merge_row_avx2, x86::merge_row_ssse3),
        };
        if std::arch::is_x86_feature_detected!("avx2") {
            paths.push(("avx2", avx2));
        }
        if std::arch::is_x86_feature_detected!("ssse3") {
            paths.push(("ssse3", ssse3));
        }
    }
    let bytes: Row = match direction {
        Direction::IntoPlanes => row_bytes,
        Direction::IntoPixels => merge_row_bytes,
    };
    paths.push(("bytes", bytes));
    paths
}

/// The fastest row function of `direction` (the first of [`row_paths`]), found once.
fn best_row(direction: Direction) -> Row {
    static BEST: std::sync::OnceLock<[Row; 2]> = std::sync::OnceLock::new();
    let best = BEST
        .get_or_init(|| [Direction::IntoPlanes, Direction::IntoPixels].map(|d| row_paths(d)[0].1));
    best[direction as usize]
}

/// Every row of the nest in `direction`, by the fastest row function. A row is at least
/// `relayout_codegen::byte_channels::MIN_PIXELS` pixels: one call of the row function each is
/// a small part of it.
///
/// # Safety
/// As the entry of `direction`.
unsafe fn run_rows(
    direction: Direction,
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
    let row = best_row(direction);
    // SAFETY: the caller's contract for every row; the row function runs on this processor.
    each_run(dst, src, loops, &mut |d, s| unsafe {
        row(d, s, count, plane)
    });
}

/// One row into planes, byte by byte.
///
/// # Safety
/// As [`relayout_deinterleave_nest`], for one row.
unsafe fn row_bytes(d: *mut u8, s: *const u8, count: usize, plane: isize) {
    // SAFETY: the caller's contract.
    unsafe { pixels(d, s, 0..count, plane) }
}

/// One row from planes, byte by byte.
///
/// # Safety
/// As [`relayout_interleave_nest`], for one row.
unsafe fn merge_row_bytes(d: *mut u8, s: *const u8, count: usize, plane: isize) {
    // SAFETY: the caller's contract.
    unsafe { merged_pixels(d, s, 0..count, plane) }
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

    /// Rows of `count` pixels at every point of `loops` in `direction` (planes `plane` bytes
    /// apart), from a random source, by every path the processor has (AVX2, SSSE3, bytes)
    /// and by the entry: the destination holds exactly each byte where it belongs, and
    /// nothing around it is written.
    fn check(direction: Direction, count: usize, plane: usize, loops: &[StreamLoop]) {
        let rows: usize = loops.iter().map(|l| l.count as usize).product();
        let src_stride = loops.last().map_or(0, |l| l.src_stride as usize);
        let dst_stride = loops.last().map_or(0, |l| l.dst_stride as usize);
        // Byte `c` of pixel `x` on the pixels' side and on the planes' side of a row.
        let pixel_byte = |x: usize, c: usize| C * x + c;
        let plane_byte = |x: usize, c: usize| c * plane + x;
        type At<'a> = &'a dyn Fn(usize, usize) -> usize;
        let (src_at, dst_at): (At, At) = match direction {
            Direction::IntoPlanes => (&pixel_byte, &plane_byte),
            Direction::IntoPixels => (&plane_byte, &pixel_byte),
        };
        let src_len = (rows - 1) * src_stride + src_at(count - 1, C - 1) + 1;
        let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
        let dst_len = 32 + (rows - 1) * dst_stride + dst_at(count - 1, C - 1) + 1 + 32;
        let mut want = vec![0xa5u8; dst_len];
        for r in 0..rows {
            for x in 0..count {
                for c in 0..C {
                    want[32 + r * dst_stride + dst_at(x, c)] = src[r * src_stride + src_at(x, c)];
                }
            }
        }
        let what = format!("{direction:?}: {count} pixels, planes {plane} apart, {loops:?}");
        for (name, row) in row_paths(direction) {
            let mut dst = vec![0xa5u8; dst_len];
            // SAFETY: every row's loads and stores are inside the two vectors.
            each_run(
                dst.as_mut_ptr().wrapping_add(32),
                src.as_ptr(),
                loops,
                &mut |d, s| unsafe { row(d, s, count, plane as isize) },
            );
            assert_eq!(dst, want, "{name}: {what}");
        }
        let entry = match direction {
            Direction::IntoPlanes => relayout_deinterleave_nest,
            Direction::IntoPixels => relayout_interleave_nest,
        };
        let mut dst = vec![0xa5u8; dst_len];
        // SAFETY: as above.
        unsafe {
            entry(
                dst.as_mut_ptr().add(32),
                src.as_ptr(),
                count as u64,
                plane as i64,
                loops.as_ptr(),
                loops.len() as u64,
            )
        };
        assert_eq!(dst, want, "entry: {what}");
    }

    /// Row lengths around the steps of 16 and 32 pixels, planes packed and apart, one row and
    /// three rows of a loop (whose strides leave gaps between rows), in both directions.
    #[test]
    fn every_path_moves_each_channel_to_its_place() {
        for direction in [Direction::IntoPlanes, Direction::IntoPixels] {
            for count in [1, 15, 16, 17, 31, 32, 33, 47, 48, 64, 95, 100, 1000] {
                for plane in [count, count + 5, 3 * count + 64] {
                    check(direction, count, plane, &[]);
                    let (pixel_row, planes_row) = ((C * count + 7) as i64, (3 * plane + 1) as i64);
                    let (src_stride, dst_stride) = match direction {
                        Direction::IntoPlanes => (pixel_row, planes_row),
                        Direction::IntoPixels => (planes_row, pixel_row),
                    };
                    let row = StreamLoop {
                        count: 3,
                        src_stride,
                        dst_stride,
                    };
                    check(direction, count, plane, &[row]);
                }
            }
        }
    }
}
