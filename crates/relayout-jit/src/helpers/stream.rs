//! Copies, fills and transposes with non-temporal (streaming) stores, which CLIF cannot
//! express.
//!
//! Generated code calls the copies and fills for the long runs of kernels with large outputs
//! (see `relayout_codegen::streams`); the JIT itself calls them and the transposes for kernels
//! that need no generated code (`helper_kernel.rs`). Streaming stores skip the read of each destination line that
//! an ordinary store does first, and do not evict the working set from the caches. They are
//! weakly ordered, so every function that calls them ends with `relayout_store_fence`.
//!
//! Only aligned 16- or 32-byte blocks are streamed; the unaligned head and tail of a run are
//! written with ordinary unaligned stores (a transpose whose destination rows are not all
//! 16-byte aligned stores them all with ordinary stores). On targets other than x86-64 the
//! functions are plain copies, fills and transposes.

#[cfg(target_arch = "x86_64")]
use super::ahead::Ahead;

/// One loop of a streamed nest, as generated code lays it out (three 8-byte words):
/// `count` iterations, stepping `dst_stride` bytes at the destination and `src_stride` at
/// the source (unused by the zeroing helper).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLoop {
    /// Iterations of the loop.
    pub count: u64,
    /// Bytes between iterations at the destination.
    pub dst_stride: i64,
    /// Bytes between iterations at the source.
    pub src_stride: i64,
}

/// What a walk over a nest does at each point (see [`walk`]): a closure, or a helper's run.
pub(super) trait Visit {
    /// Visits the point whose runs start at `dst` and `src`.
    ///
    /// # Safety
    /// The implementor's contract for the point (for a closure, none: it is safe to call).
    unsafe fn visit(&mut self, dst: *mut u8, src: *const u8);
}

impl<F: FnMut(*mut u8, *const u8)> Visit for F {
    #[inline(always)]
    unsafe fn visit(&mut self, dst: *mut u8, src: *const u8) {
        self(dst, src)
    }
}

/// The most loops around the innermost one that [`walk`] counts itself; a deeper nest's
/// outer loops go through [`walk_deep`].
const WALK_DEPTH: usize = 8;

/// Calls `v.visit(dst, src)` for every point of `loops` (outermost first), with both pointers
/// advanced by the strides; once when `loops` is empty. The innermost loop bumps the pointers
/// in a plain loop, which is where the runs are counted by the million, and the loops around
/// it are an odometer rather than recursion: everything, `v` included, is inlined into the
/// function that calls it, and so compiled with its target features (the sum helper's
/// instances with F16C or AVX2; a closure would be a function of its own, without them).
///
/// # Safety
/// `v.visit`'s, for every point of the nest.
#[inline(always)]
pub(super) unsafe fn walk<V: Visit>(dst: *mut u8, src: *const u8, loops: &[StreamLoop], v: &mut V) {
    let Some((inner, outer)) = loops.split_last() else {
        // SAFETY: the caller's contract.
        return unsafe { v.visit(dst, src) };
    };
    if outer.len() > WALK_DEPTH {
        // SAFETY: the caller's contract.
        return unsafe { walk_deep(dst, src, loops, v) };
    }
    if outer.iter().any(|l| l.count == 0) {
        return;
    }
    // `wrapping_offset` computes the address of an iteration (in bounds, by the callers'
    // contract) without asserting it on the way.
    let mut point = [0u64; WALK_DEPTH];
    let (mut d, mut s) = (dst, src);
    loop {
        let (mut di, mut si) = (d, s);
        for _ in 0..inner.count {
            // SAFETY: the caller's contract.
            unsafe { v.visit(di, si) };
            di = di.wrapping_offset(inner.dst_stride as isize);
            si = si.wrapping_offset(inner.src_stride as isize);
        }
        // The next point of the outer loops, the innermost of them fastest.
        let mut k = outer.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            let l = &outer[k];
            point[k] += 1;
            d = d.wrapping_offset(l.dst_stride as isize);
            s = s.wrapping_offset(l.src_stride as isize);
            if point[k] < l.count {
                break;
            }
            // Back to the loop's first iteration.
            point[k] = 0;
            let back = (l.count as i64).wrapping_neg();
            d = d.wrapping_offset(back.wrapping_mul(l.dst_stride) as isize);
            s = s.wrapping_offset(back.wrapping_mul(l.src_stride) as isize);
        }
    }
}

/// [`walk`] of a nest deeper than it counts itself: its outermost loop here, the rest there.
///
/// # Safety
/// As [`walk`].
unsafe fn walk_deep<V: Visit>(dst: *mut u8, src: *const u8, loops: &[StreamLoop], v: &mut V) {
    let Some((l, inner)) = loops.split_first() else {
        // SAFETY: the caller's contract.
        return unsafe { v.visit(dst, src) };
    };
    let (mut d, mut s) = (dst, src);
    for _ in 0..l.count {
        // SAFETY: the caller's contract.
        unsafe { walk(d, s, inner, v) };
        d = d.wrapping_offset(l.dst_stride as isize);
        s = s.wrapping_offset(l.src_stride as isize);
    }
}

/// Calls `run(dst, src)` for every point of `loops`, as [`walk`] does.
pub(super) fn each_run(
    dst: *mut u8,
    src: *const u8,
    loops: &[StreamLoop],
    run: &mut impl FnMut(*mut u8, *const u8),
) {
    // SAFETY: a closure's visit is a call of the closure, which is safe.
    unsafe { walk(dst, src, loops, run) }
}

/// Whether every point of `loops` from `dst` is 16-byte aligned, as streaming stores of 16-byte
/// vectors need (a loop of one iteration does not move).
#[cfg(target_arch = "x86_64")]
pub(super) fn rows_aligned(dst: *mut u8, loops: &[StreamLoop]) -> bool {
    (dst as usize) % 16 == 0 && loops.iter().all(|l| l.dst_stride % 16 == 0 || l.count == 1)
}

/// The loops of a nest from the pointer generated code passes.
///
/// # Safety
/// `loops` points to `depth` readable `StreamLoop`s (any pointer when `depth` is 0).
pub(super) unsafe fn nest<'a>(loops: *const StreamLoop, depth: u64) -> &'a [StreamLoop] {
    if depth == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(loops, depth as usize) }
}

/// Copies a run of `len` bytes from `src` to `dst` with streaming stores at every point of a
/// loop nest of `depth` loops (`loops`, outermost first; one run when `depth` is 0). One call
/// moves the whole nest of a statement, so that generated code holds no loops around calls.
///
/// # Safety
/// `loops` points to `depth` `StreamLoop`s; every run is valid for reads at the source and
/// for writes at the destination, and the source and destination do not overlap. Generated
/// code passes the loops of a verified kernel, inside buffers whose lengths the JIT checked,
/// which the caller guarantees do not overlap.
pub unsafe extern "C" fn relayout_stream_copy_nest(
    dst: *mut u8,
    src: *const u8,
    len: u64,
    loops: *const StreamLoop,
    depth: u64,
) {
    let len = len as usize;
    // SAFETY: the caller's contract, for the loops.
    let loops = unsafe { nest(loops, depth) };
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the caller's contract for every run; the CPU has AVX.
            copy_runs(dst, src, loops, len, |d, s| unsafe {
                x86::copy_avx(d, s, len)
            });
        } else {
            // SAFETY: the caller's contract for every run.
            copy_runs(dst, src, loops, len, |d, s| unsafe {
                x86::copy_sse2(d, s, len)
            });
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's contract for every run.
    each_run(dst, src, loops, &mut |d, s| unsafe {
        std::ptr::copy_nonoverlapping(s, d, len)
    });
}

/// `copy` of every run of `loops`, with the source of the run a few runs ahead prefetched
/// where code generation says so (see `ahead.rs`). Each copy function is its own instance, so
/// that the copy inlines into the innermost loop.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn copy_runs(
    dst: *mut u8,
    src: *const u8,
    loops: &[StreamLoop],
    len: usize,
    copy: impl Fn(*mut u8, *const u8),
) {
    match Ahead::for_copy(src, loops, len) {
        None => each_run(dst, src, loops, &mut |d, s| copy(d, s)),
        Some(mut ahead) => each_run(dst, src, loops, &mut |d, s| {
            ahead.prefetch_next(len);
            copy(d, s)
        }),
    }
}

/// Zeroes a run of `len` bytes with streaming stores at every point of a loop nest, as
/// [`relayout_stream_copy_nest`] copies (the loops' source strides are not used).
///
/// # Safety
/// `loops` points to `depth` `StreamLoop`s, and every run is valid for writes.
pub unsafe extern "C" fn relayout_stream_zero_nest(
    dst: *mut u8,
    len: u64,
    loops: *const StreamLoop,
    depth: u64,
) {
    let len = len as usize;
    // SAFETY: the caller's contract, for the loops and for every run.
    each_run(
        dst,
        std::ptr::null(),
        unsafe { nest(loops, depth) },
        &mut |d, _| {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the caller's contract; SSE2 is part of x86-64.
            unsafe {
                x86::zero_sse2(d, len)
            }
            #[cfg(not(target_arch = "x86_64"))]
            // SAFETY: the caller's contract.
            unsafe {
                std::ptr::write_bytes(d, 0, len)
            }
        },
    );
}

/// Transposes square blocks of 16-byte rows at every point of a loop nest of `depth` loops
/// (`loops`, outermost first; one block when `depth` is 0): with `size`-byte elements (4 or
/// 8), a block is `n = 16 / size` rows of `n` elements, `src_row` bytes apart at `src`, and
/// lands at `dst` as `n` rows `dst_row` bytes apart, row `k` holding element `k` of each
/// source row. Rows are written with streaming stores when every row of the nest is 16-byte
/// aligned (checked here), else with ordinary ones. Called by the JIT for kernels that need
/// no generated code (see `relayout_codegen::TransposeBlocks`); generated code has no call of
/// it.
///
/// # Safety
/// `size` is 4 or 8; `loops` points to `depth` `StreamLoop`s; at every point of the nest,
/// the `n` source rows of 16 bytes are valid for reads and the `n` destination rows for
/// writes, and the source and destination do not overlap.
pub unsafe fn relayout_stream_transpose_nest(
    dst: *mut u8,
    src: *const u8,
    size: u64,
    [src_row, dst_row]: [i64; 2],
    loops: *const StreamLoop,
    depth: u64,
) {
    // SAFETY: the caller's contract, for the loops.
    let loops = unsafe { nest(loops, depth) };
    #[cfg(target_arch = "x86_64")]
    {
        let aligned = rows_aligned(dst, loops) && dst_row % 16 == 0;
        // One instance of `each_run` per element size and store kind, so that the block
        // inlines into the innermost loop.
        macro_rules! blocks {
            ($n:literal) => {{
                let ahead = transpose_ahead(loops, $n);
                if aligned {
                    // SAFETY: the caller's contract for every block; every row is aligned.
                    each_run(dst, src, loops, &mut |d, s| unsafe {
                        x86::prefetch_rows::<$n>(s, src_row, ahead);
                        x86::transpose::<$n, true>(d, s, src_row, dst_row)
                    })
                } else {
                    // SAFETY: the caller's contract for every block.
                    each_run(dst, src, loops, &mut |d, s| unsafe {
                        x86::prefetch_rows::<$n>(s, src_row, ahead);
                        x86::transpose::<$n, false>(d, s, src_row, dst_row)
                    })
                }
            }};
        }
        match size {
            4 => blocks!(4),
            8 => blocks!(2),
            _ => unreachable!("transpose blocks of {size}-byte elements"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let n = 16 / size as isize;
        // SAFETY: the caller's contract for every block.
        each_run(dst, src, loops, &mut |d, s| unsafe {
            for k in 0..n {
                for j in 0..n {
                    std::ptr::copy_nonoverlapping(
                        s.wrapping_offset(j * src_row as isize + k * size as isize),
                        d.wrapping_offset(k * dst_row as isize + j * size as isize),
                        size as usize,
                    );
                }
            }
        });
    }
}

/// Source bytes that [`relayout_stream_transpose_nest`] prefetches ahead of the blocks it
/// transposes, counted over all the source rows it reads in turn (see [`transpose_ahead`]).
/// The hardware prefetchers follow the many short row segments of a transpose badly: its
/// loads were most of the helper's time (`perf annotate`). Measured on the reference machine
/// (`relayout bench --op`, two interleaved rounds, kernel time; distances per row tried from
/// 16 to 2048 bytes), about 4 KiB over all rows was best or near it for each shape: NCHW ->
/// NHWC of 8x64x112x112 f32 (16 rows in turn, 256 bytes ahead on each) 2.38-2.52 -> 1.47-1.58
/// ms, a 2000x2000 f32 transpose (16 rows) 1.39-1.51 -> 0.96-1.04 ms (8 KiB: 1.18 ms, 12 KiB:
/// 1.51-1.57 ms), NHWC -> NCHW of 8x28x28x512 f32 1.10-1.25 -> 0.77-0.83 ms, NCHW -> NHWC of
/// 8x256x56x56 f32 (256 rows, 16 bytes ahead on each) 2.13-2.20 -> 1.97-2.01 ms (64 KiB:
/// 2.44-2.46 ms).
const TRANSPOSE_AHEAD: i64 = 4096;

/// How far ahead along its source rows each block of a transpose nest prefetches, in bytes:
/// [`TRANSPOSE_AHEAD`] shared among the rows the nest reads before its next step along them
/// (the `n` rows of a block times the iterations of the loops inside the innermost loop that
/// steps one block along the rows, 16 bytes at the source), at least one block and at most
/// 256 bytes; 0 (no prefetch) when no loop steps along the rows.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn transpose_ahead(loops: &[StreamLoop], n: i64) -> isize {
    let Some(along) = loops
        .iter()
        .rposition(|l| l.src_stride == 16 && l.count > 1)
    else {
        return 0;
    };
    let rows = loops[along + 1..].iter().fold(n, |rows, l| {
        rows.saturating_mul(l.count.try_into().unwrap_or(i64::MAX))
    });
    let ahead = (TRANSPOSE_AHEAD / rows.max(1)).clamp(16, 256);
    (ahead - ahead % 16) as isize
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
    /// As `relayout_stream_copy_nest`, and the CPU supports AVX.
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
    /// As `relayout_stream_copy_nest`.
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

    /// Prefetches the `N` source rows of a block (`src_row` bytes apart from `src`) `ahead`
    /// bytes further along them; nothing when `ahead` is 0.
    #[inline(always)]
    pub(super) fn prefetch_rows<const N: usize>(src: *const u8, src_row: i64, ahead: isize) {
        if ahead == 0 {
            return;
        }
        for j in 0..N as isize {
            let line = src.wrapping_offset(j * src_row as isize + ahead);
            // SAFETY: a prefetch is a hint: it reads nothing into the program and never
            // faults, whatever the address (`wrapping_offset` computes it without asserting
            // that it is inside the source: past a row's end it is only prefetched).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.cast()) }
        }
    }

    /// One block of `relayout_stream_transpose_nest`: `N` rows of `N` elements of `16 / N`
    /// bytes, streamed when `STREAM` (then every destination row is 16-byte aligned).
    ///
    /// # Safety
    /// As `relayout_stream_transpose_nest`, for this block; `N` is 2 or 4.
    #[inline(always)]
    pub(super) unsafe fn transpose<const N: usize, const STREAM: bool>(
        dst: *mut u8,
        src: *const u8,
        src_row: i64,
        dst_row: i64,
    ) {
        let (sr, dr) = (src_row as isize, dst_row as isize);
        // SAFETY (whole function): the rows are inside the buffers by the caller's contract,
        // and aligned when streamed; the unpacks have no preconditions (SSE2 is part of
        // x86-64).
        unsafe {
            let r: [__m128i; N] = std::array::from_fn(|j| {
                _mm_loadu_si128(src.wrapping_offset(j as isize * sr).cast())
            });
            // The unpack networks: each stage interleaves units twice as wide as the last,
            // pairing rows so that row k of the result holds element k of every source row.
            let rows: [__m128i; N] = match N {
                2 => std::array::from_fn(|k| {
                    if k == 0 {
                        _mm_unpacklo_epi64(r[0], r[1])
                    } else {
                        _mm_unpackhi_epi64(r[0], r[1])
                    }
                }),
                4 => {
                    let t = [
                        _mm_unpacklo_epi32(r[0], r[1]),
                        _mm_unpacklo_epi32(r[2], r[3]),
                        _mm_unpackhi_epi32(r[0], r[1]),
                        _mm_unpackhi_epi32(r[2], r[3]),
                    ];
                    std::array::from_fn(|k| {
                        let (a, b) = (t[2 * (k / 2)], t[2 * (k / 2) + 1]);
                        if k % 2 == 0 {
                            _mm_unpacklo_epi64(a, b)
                        } else {
                            _mm_unpackhi_epi64(a, b)
                        }
                    })
                }
                _ => unreachable!("blocks of {N} rows"),
            };
            for (k, row) in rows.into_iter().enumerate() {
                let at = dst.wrapping_offset(k as isize * dr).cast::<__m128i>();
                if STREAM {
                    _mm_stream_si128(at, row);
                } else {
                    _mm_storeu_si128(at, row);
                }
            }
        }
    }

    /// # Safety
    /// As `relayout_stream_zero_nest`.
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

    /// A loop of `count` iterations with these strides.
    fn stream_loop(count: u64, dst_stride: i64, src_stride: i64) -> StreamLoop {
        StreamLoop {
            count,
            dst_stride,
            src_stride,
        }
    }

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
                    relayout_stream_copy_nest(
                        dst.as_mut_ptr().add(at),
                        src.as_ptr().add(1),
                        len as u64,
                        std::ptr::null(),
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
                unsafe {
                    relayout_stream_zero_nest(
                        dst.as_mut_ptr().add(at),
                        len as u64,
                        std::ptr::null(),
                        0,
                    )
                };
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

    /// The (destination, source) offsets of every point of `loops` from `(d0, s0)`, in the
    /// order of the loops.
    fn points(d0: usize, s0: usize, loops: &[StreamLoop]) -> Vec<(i64, i64)> {
        let mut points = vec![(d0 as i64, s0 as i64)];
        for l in loops {
            points = points
                .iter()
                .flat_map(|&(d, s)| {
                    (0..l.count as i64).map(move |k| (d + k * l.dst_stride, s + k * l.src_stride))
                })
                .collect();
        }
        points
    }

    /// A nest of transposes puts element k of source row j at destination row k, place j, for
    /// every block and element size, with aligned (streamed) and misaligned (ordinary)
    /// destinations and negative strides.
    #[test]
    fn transposes_prefetch_about_four_kib_ahead_over_the_rows_they_read_in_turn() {
        let l = stream_loop;
        // NCHW -> NHWC of 8x64x112x112 f32: 16 channels (4 blocks of 4 rows) a step along
        // the pixels, 256 bytes ahead on each.
        let nchw_to_nhwc_64 = [
            l(8, 3211264, 3211264),
            l(49, 65536, 1024),
            l(4, 64, 802816),
            l(64, 1024, 16),
            l(1, 1024, 16),
            l(4, 16, 200704),
        ];
        assert_eq!(transpose_ahead(&nchw_to_nhwc_64, 4), 256);
        // Of 8x256x56x56: 256 channels a step, one block ahead on each.
        let nchw_to_nhwc_256 = [
            l(8, 3211264, 3211264),
            l(784, 4096, 16),
            l(16, 64, 200704),
            l(1, 4096, 16),
            l(4, 16, 50176),
        ];
        assert_eq!(transpose_ahead(&nchw_to_nhwc_256, 4), 16);
        // 128 channels: 32 bytes; 2x2 blocks of f64 rows, 8 rows a step: at most 256.
        let nchw_to_nhwc_128 = [l(784, 2048, 16), l(8, 64, 200704), l(4, 16, 50176)];
        assert_eq!(transpose_ahead(&nchw_to_nhwc_128, 4), 32);
        assert_eq!(transpose_ahead(&[l(32, 1024, 16), l(4, 16, 50176)], 2), 256);
        // Rows that are one block long (no loop steps along them), or no loops: no prefetch.
        assert_eq!(transpose_ahead(&[l(1, 64, 16), l(4, 16, 50176)], 4), 0);
        assert_eq!(transpose_ahead(&[], 4), 0);
    }

    #[test]
    fn transpose_blocks_follow_the_strides() {
        let src: Vec<u8> = (0..8192u32).map(|i| (i * 29 + 11) as u8).collect();
        let l = stream_loop;
        for size in [4i64, 8] {
            let n = 16 / size;
            for (src_row, dst_row, loops) in [
                (64i64, 64i64, vec![]),
                (100, 48, vec![l(3, 16, 800)]),
                (-96, 256, vec![l(2, -2048, 16), l(4, 16, -100 * n)]),
            ] {
                for misalign in [0usize, 4] {
                    let mut storage = vec![0u8; 8192 + 32];
                    let at = (16 - storage.as_ptr() as usize % 16) % 16 + misalign;
                    let dst = &mut storage[at..at + 8192];
                    let (d0, s0) = (4096usize, 4096usize);
                    // SAFETY: every block's rows lie inside both 8192-byte buffers, which are
                    // distinct, and `loops` holds `loops.len()` loops.
                    unsafe {
                        relayout_stream_transpose_nest(
                            dst.as_mut_ptr().add(d0),
                            src.as_ptr().add(s0),
                            size as u64,
                            [src_row, dst_row],
                            loops.as_ptr(),
                            loops.len() as u64,
                        );
                    }
                    relayout_store_fence();
                    let mut want = vec![0u8; 8192];
                    for (d, s) in points(d0, s0, &loops) {
                        for (j, k) in (0..n).flat_map(|j| (0..n).map(move |k| (j, k))) {
                            let from = (s + j * src_row + size * k) as usize;
                            let to = (d + k * dst_row + size * j) as usize;
                            let size = size as usize;
                            want[to..to + size].copy_from_slice(&src[from..from + size]);
                        }
                    }
                    assert_eq!(
                        dst,
                        &want[..],
                        "size {size} rows {src_row} {dst_row} loops {loops:?} +{misalign}"
                    );
                }
            }
        }
    }

    /// The runs of a nest of one or two loops, with positive and negative strides, land
    /// where the strides say, in the order of the loops.
    #[test]
    fn streaming_nests_follow_the_strides() {
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 13 + 5) as u8).collect();
        let l = stream_loop;
        for (len, loops) in [
            (64usize, vec![l(5, 100, 70)]),
            (65, vec![l(4, -80, 300)]),
            (200, vec![l(3, 256, -256)]),
            (64, vec![l(3, 700, -500), l(4, 80, 90)]),
            (96, vec![l(2, -1000, 1200), l(1, 0, 0), l(3, 100, -100)]),
        ] {
            let mut dst = vec![0u8; 4096];
            let (d0, s0) = (2000usize, 2000usize);
            // SAFETY: every run lies inside both 4096-byte buffers, which are distinct, and
            // `loops` holds `loops.len()` loops.
            unsafe {
                relayout_stream_copy_nest(
                    dst.as_mut_ptr().add(d0),
                    src.as_ptr().add(s0),
                    len as u64,
                    loops.as_ptr(),
                    loops.len() as u64,
                );
            }
            relayout_store_fence();
            let mut want = vec![0u8; 4096];
            for (d, s) in points(d0, s0, &loops) {
                let (d, s) = (d as usize, s as usize);
                want[d..d + len].copy_from_slice(&src[s..s + len]);
            }
            assert_eq!(dst, want, "len {len} loops {loops:?}");

            // SAFETY: as above, for the destination.
            unsafe {
                relayout_stream_zero_nest(
                    dst.as_mut_ptr().add(d0),
                    len as u64,
                    loops.as_ptr(),
                    loops.len() as u64,
                )
            };
            relayout_store_fence();
            assert!(
                dst.iter().all(|&x| x == 0),
                "zero len {len} loops {loops:?}"
            );
        }
    }
}
