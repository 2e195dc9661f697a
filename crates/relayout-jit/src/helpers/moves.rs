//! Copies and fills with ordinary stores over a statement's whole loop nest: the helpers of
//! kernels of many statements (see `relayout_codegen::MANY_STATEMENTS`), whose generated code
//! would take Cranelift longer to compile than such a kernel takes to run many times over.
//!
//! A statement's runs all have one length, so the way a run is moved is chosen once per call,
//! outside the nest: runs of up to [`INLINE_RUN`] bytes are moved inline, as 16-byte vectors
//! whose last one ends at the run's end, or as two overlapping scalars for runs shorter than a
//! vector (a call of `memcpy` or `memset` per run cost more than the copy of an Im2Col's
//! 4-byte edges and 200-byte rows); longer runs by `memcpy`.

use super::stream::{each_run, StreamLoop};

/// Runs up to this long are moved inline, longer ones by `memcpy` (or `memset`).
const INLINE_RUN: usize = 8192;

/// Copies the run of `bytes` bytes at every point of `loops` from `src` to `dst`, with
/// ordinary stores.
///
/// # Safety
/// Every run is valid for reads at the source and for writes at the destination, the two do
/// not overlap, and no other thread touches the destination runs.
pub(crate) unsafe fn move_nest(dst: *mut u8, src: *const u8, bytes: usize, loops: &[StreamLoop]) {
    /// One unaligned load and store of a `T` at `d` from `s`.
    ///
    /// # Safety
    /// Both lie inside a run of the caller's contract.
    #[inline(always)]
    unsafe fn move_one<T: Copy>(d: *mut u8, s: *const u8) {
        // SAFETY: the caller's contract.
        unsafe { (d as *mut T).write_unaligned((s as *const T).read_unaligned()) }
    }
    // SAFETY: the caller's contract, for every run.
    unsafe {
        match bytes {
            0 => {}
            1 => small_runs::<u8>(dst, src, bytes, loops, |d, s| move_one::<u8>(d, s)),
            2..4 => small_runs::<u16>(dst, src, bytes, loops, |d, s| move_one::<u16>(d, s)),
            4..8 => small_runs::<u32>(dst, src, bytes, loops, |d, s| move_one::<u32>(d, s)),
            8..16 => small_runs::<u64>(dst, src, bytes, loops, |d, s| move_one::<u64>(d, s)),
            16..=INLINE_RUN => each_run(dst, src, loops, &mut |d, s| {
                vectors(bytes, |at| move_one::<u128>(d.add(at), s.add(at)))
            }),
            _ => each_run(dst, src, loops, &mut |d, s| {
                std::ptr::copy_nonoverlapping(s, d, bytes)
            }),
        }
    }
}

/// `one(d, s)` for a `T` at the start of every run of `bytes` bytes of `loops` (`d` in the
/// destination, `s` in the source, which a fill does not read) and, when the run is longer
/// than a `T` (`size_of::<T>() < bytes < 2 * size_of::<T>()`), again for the `T` that ends
/// at the run's end, overlapping the first; each way its own loop, so that no run tests which.
///
/// # Safety
/// `one` is safe to call for a `T` inside any run of `loops`.
#[inline(always)]
unsafe fn small_runs<T>(
    dst: *mut u8,
    src: *const u8,
    bytes: usize,
    loops: &[StreamLoop],
    mut one: impl FnMut(*mut u8, *const u8),
) {
    let last = bytes - size_of::<T>();
    if last == 0 {
        return each_run(dst, src, loops, &mut one);
    }
    each_run(dst, src, loops, &mut |d, s| {
        one(d, s);
        one(d.wrapping_add(last), s.wrapping_add(last));
    });
}

/// Calls `store(at)` for 16-byte pieces at `at` covering `bytes` (at least 16): every 16
/// bytes, and the last piece ending at `bytes` (it may overlap the one before it).
#[inline(always)]
fn vectors(bytes: usize, mut store: impl FnMut(usize)) {
    let mut at = 0;
    while at + 16 < bytes {
        store(at);
        at += 16;
    }
    store(bytes - 16);
}

/// Fills the run of `bytes` bytes at every point of `loops` from `dst` with `pattern`, the
/// fill value repeated over 16 bytes (`relayout_codegen`'s fill pattern), with ordinary
/// stores. A run's length and its pieces' offsets are multiples of the element size, which
/// divides 16 (and every power of two from it up), so each piece is the pattern's start.
///
/// # Safety
/// Every run is valid for writes at the destination, and no other thread touches it.
pub(crate) unsafe fn fill_nest(dst: *mut u8, pattern: u128, bytes: usize, loops: &[StreamLoop]) {
    /// One unaligned store of `value` at `d`.
    ///
    /// # Safety
    /// It lies inside a run of the caller's contract.
    #[inline(always)]
    unsafe fn store<T: Copy>(d: *mut u8, value: T) {
        // SAFETY: the caller's contract.
        unsafe { (d as *mut T).write_unaligned(value) }
    }
    let none = std::ptr::null();
    let same_bytes = pattern
        .to_le_bytes()
        .iter()
        .all(|&x| x as u128 == pattern & 0xff);
    // SAFETY: the caller's contract, for every run.
    unsafe {
        match bytes {
            0 => {}
            1 => small_runs::<u8>(dst, none, bytes, loops, |d, _| store(d, pattern as u8)),
            2..4 => small_runs::<u16>(dst, none, bytes, loops, |d, _| store(d, pattern as u16)),
            4..8 => small_runs::<u32>(dst, none, bytes, loops, |d, _| store(d, pattern as u32)),
            8..16 => small_runs::<u64>(dst, none, bytes, loops, |d, _| store(d, pattern as u64)),
            _ if bytes > INLINE_RUN && same_bytes => each_run(dst, none, loops, &mut |d, _| {
                d.write_bytes(pattern as u8, bytes)
            }),
            _ => each_run(dst, none, loops, &mut |d, _| {
                vectors(bytes, |at| store(d.add(at), pattern))
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

    /// Every kind of run length (each way of moving a run, at its bounds) against a plain
    /// model, for copies and for fills of every element size, with gaps between the runs that
    /// must stay untouched.
    #[test]
    fn moves_and_fills_write_exactly_their_runs() {
        let lengths = [
            1usize, 2, 3, 4, 6, 7, 8, 12, 15, 16, 17, 20, 24, 31, 32, 36, 48, 100, 8192, 8208, 9000,
        ];
        for bytes in lengths {
            let step = bytes as i64 + 5;
            let loops = nest(&[
                (3, 7 * step, 3 * bytes as i64),
                (5, step, bytes as i64 / 2 + 1),
            ]);
            let len = 20 * (bytes + 5);
            let points = || (0..3i64).flat_map(move |i| (0..5i64).map(move |j| (i, j)));
            let dst_at =
                |i: i64, j: i64| (i * loops[0].dst_stride + j * loops[1].dst_stride) as usize;
            let src_at =
                |i: i64, j: i64| (i * loops[0].src_stride + j * loops[1].src_stride) as usize;
            let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut dst = vec![0xeeu8; len];
            let mut expected = dst.clone();
            for (i, j) in points() {
                let (d, s) = (dst_at(i, j), src_at(i, j));
                expected[d..d + bytes].copy_from_slice(&src[s..s + bytes]);
            }
            // SAFETY: every run lies inside both vectors (checked by the model's slicing).
            unsafe { move_nest(dst.as_mut_ptr(), src.as_ptr(), bytes, &loops) };
            assert!(dst == expected, "move of {bytes} bytes");

            for elem in [1usize, 2, 4, 8, 16] {
                if bytes % elem != 0 {
                    continue;
                }
                // An element of distinct bytes, and one of equal bytes (memset's case).
                for value in [
                    0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0180u128,
                    0x8080_8080_8080_8080_8080_8080_8080_8080,
                ] {
                    let element = &value.to_le_bytes()[..elem];
                    let pattern = (0..16 / elem).fold(0u128, |p, k| {
                        p | (value & (u128::MAX >> (128 - 8 * elem as u32))) << (8 * elem * k)
                    });
                    let mut dst = vec![0xeeu8; len];
                    let mut expected = dst.clone();
                    for (i, j) in points() {
                        let d = dst_at(i, j);
                        for e in (d..d + bytes).step_by(elem) {
                            expected[e..e + elem].copy_from_slice(element);
                        }
                    }
                    // SAFETY: every run lies inside the vector.
                    unsafe { fill_nest(dst.as_mut_ptr(), pattern, bytes, &loops) };
                    assert!(
                        dst == expected,
                        "fill of {bytes} bytes of {elem}-byte {value:#x}"
                    );
                }
            }
        }
    }
}
