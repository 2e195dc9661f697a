//! Software prefetch for the streamed copies: the source of the run a few runs ahead.
//!
//! A streamed nest of short runs that are not back to back at the source (a Slice that takes
//! every other row, rows read in reverse, a crop) gives the hardware prefetchers a stream they
//! follow badly: each run is a few lines, then a jump. Code generation decides which nests
//! are prefetched and how far ahead (`relayout_codegen::prefetch_runs`, with the numbers
//! measured), and says so in its listing; this cursor walks the nest that far ahead of the
//! copy, so that it only ever prefetches where a run of the nest starts. x86-64 only: other
//! targets' streaming helpers are plain copies.

use super::StreamLoop;

const LINE: usize = 64;

/// The longest gap between a run and the next that is prefetched along with the run, as a
/// multiple of the run's length plus [`GAP_PAST_RUN`] bytes: the source is then read as one
/// stream, the skipped bytes included, which the memory system serves faster than runs with
/// holes between them, even though those holes are prefetched ahead. Measured (`bench --op`,
/// one thread, two interleaved rounds, against prefetching the runs only): a stride-2 Slice of
/// 8x64x128x128 f32 on both axes (rows of 508 bytes read out of every other 512-byte row)
/// 4.0-4.1 -> 2.2x memcpy's time, of 4x64x256x256 f16 4.0 -> 2.0-2.1x; every other row of the
/// f32 one 2.0-2.1 -> 1.1-1.2x, every third row 2.2-2.5 -> 1.85-1.9x (against holes of one
/// run's length only); every fourth row (holes of three runs) the same either way, so such
/// holes are not read; a crop and a reversal with steps the same.
const GAP_RUNS: usize = 2;

/// See [`GAP_RUNS`].
const GAP_PAST_RUN: usize = 2 * LINE;

/// The source addresses of a nest's runs, in the order `each_run` visits them, starting some
/// runs ahead of the first.
pub(super) struct Ahead<'a> {
    loops: &'a [StreamLoop],
    /// The iteration of each loop (outermost first) of the run at `at`.
    index: Vec<u64>,
    at: *const u8,
    /// Runs from `at` to the end of the nest, `at`'s included.
    left: u64,
}

impl<'a> Ahead<'a> {
    /// The cursor for a copy of runs of `len` bytes over `loops` from `src`, as far ahead as
    /// code generation decides (`relayout_codegen::prefetch_runs`); `None` when such a copy
    /// is not prefetched.
    pub(super) fn for_copy(src: *const u8, loops: &'a [StreamLoop], len: usize) -> Option<Self> {
        let total = loops.iter().fold(1u64, |n, l| n.saturating_mul(l.count));
        let runs = relayout_codegen::prefetch_runs(len as u64, total)?;
        Some(Ahead::new(src, loops, runs, total))
    }

    /// A cursor `runs` runs after the first run of `loops` (`total` runs) from `src`.
    fn new(src: *const u8, loops: &'a [StreamLoop], runs: u64, total: u64) -> Ahead<'a> {
        let mut ahead = Ahead {
            loops,
            index: vec![0; loops.len()],
            at: src,
            left: total,
        };
        for _ in 0..runs.min(total) {
            ahead.step();
        }
        ahead
    }

    /// The source address of the next run ahead, and moves on; `None` past the nest's end.
    pub(super) fn next(&mut self) -> Option<*const u8> {
        if self.left == 0 {
            return None;
        }
        let at = self.at;
        self.step();
        Some(at)
    }

    /// Moves `at` to the next run: the innermost loop's next iteration, carrying outwards as
    /// an odometer does.
    fn step(&mut self) {
        self.left -= 1;
        for (l, i) in self.loops.iter().zip(self.index.iter_mut()).rev() {
            // `wrapping_offset`: the address of a run ahead, or past the nest's end, is only
            // prefetched, never read.
            *i += 1;
            if *i < l.count {
                self.at = self.at.wrapping_offset(l.src_stride as isize);
                return;
            }
            let back = (l.count as isize - 1).wrapping_mul(l.src_stride as isize);
            self.at = self.at.wrapping_offset(back.wrapping_neg());
            *i = 0;
        }
    }

    /// Prefetches the lines of the next run ahead (`len` bytes), if there is one, and those
    /// up to the run after it when the gap is short (see [`GAP_RUNS`]).
    #[inline(always)]
    pub(super) fn prefetch_next(&mut self, len: usize) {
        let Some(at) = self.next() else { return };
        let first = at as usize & !(LINE - 1);
        // The bytes between the run's end and the next run's start (huge when the next run
        // comes before it, or past the nest's end: `self.at` is then only an address).
        let gap = (self.at as usize).wrapping_sub(at as usize + len);
        let end = at as usize
            + if gap <= GAP_RUNS * len + GAP_PAST_RUN {
                len + gap
            } else {
                len
            };
        let mut line = first;
        while line < end {
            // SAFETY: a prefetch is a hint: it reads nothing into the program and never
            // faults, whatever the address.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(line as *const i8)
            };
            line += LINE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cursor visits the runs of the nest in `each_run`'s order, `runs` ahead.
    #[test]
    fn the_cursor_walks_the_nest_runs_ahead() {
        let l = |count: u64, src_stride: i64| StreamLoop {
            count,
            dst_stride: 0,
            src_stride,
        };
        for loops in [
            vec![],
            vec![l(5, 70)],
            vec![l(3, -1024), l(4, 96)],
            vec![l(2, 1000), l(1, 0), l(3, -100)],
        ] {
            let mut visited = Vec::new();
            super::super::stream::each_run(
                std::ptr::null_mut(),
                4096 as *const u8,
                &loops,
                &mut |_, s| visited.push(s as usize),
            );
            for runs in [0, 1, 2, 7, 100] {
                let total = visited.len() as u64;
                let mut ahead = Ahead::new(4096 as *const u8, &loops, runs, total);
                let seen: Vec<usize> =
                    std::iter::from_fn(|| ahead.next().map(|p| p as usize)).collect();
                let skip = (runs as usize).min(visited.len());
                assert_eq!(seen, visited[skip..], "loops {loops:?} runs {runs}");
            }
        }
    }

    /// A copy is prefetched as code generation says for the runs of the whole nest: short
    /// runs in a nest of several runs (counted over every loop), not long runs or a single run.
    #[test]
    fn only_short_runs_of_a_nest_are_prefetched() {
        let l = |count: u64| StreamLoop {
            count,
            dst_stride: 0,
            src_stride: 0,
        };
        let src = 4096 as *const u8;
        let prefetched =
            |loops: &[StreamLoop], len: usize| Ahead::for_copy(src, loops, len).is_some();
        assert!(prefetched(&[l(4)], 512));
        assert!(prefetched(&[l(1), l(4)], 1000));
        assert!(!prefetched(&[l(4)], 4096));
        assert!(!prefetched(&[l(1)], 512));
        assert!(!prefetched(&[], 512));
    }
}
