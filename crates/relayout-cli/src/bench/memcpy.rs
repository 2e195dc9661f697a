//! The memcpy reference: libc memcpy (what `copy_from_slice` compiles to) of the output bytes,
//! split over threads the way the JIT splits a kernel.
//!
//! With `--threads N` the kernel may use N cores, so a one-core memcpy would flatter it: the
//! reference copies on up to N threads of its own persistent pool (a fresh thread per copy would
//! add tens of microseconds to every copy) and, like the JIT, keeps copies below
//! `MIN_PIECE_BYTES` per thread on one thread, where waking a thread costs more than it saves.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::hint::black_box;

/// The JIT's threshold (relayout-jit's `threads::MIN_PIECE_BYTES`), repeated here because it is
/// private there; both sides of the ratio should split work by the same rule.
const MIN_PIECE_BYTES: usize = 256 * 1024;
/// Pieces start on cache-line boundaries, so no line is written by two threads.
const PIECE_ALIGN: usize = 64;

pub struct Memcpy {
    threads: usize,
    /// `None` for one thread: the copy then runs on the calling thread, like `CompiledOp::run`.
    pool: Option<ThreadPool>,
}

impl Memcpy {
    pub fn new(threads: usize) -> Result<Memcpy, String> {
        let pool = if threads > 1 {
            let pool = ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("bench-memcpy-{i}"))
                .build()
                .map_err(|e| format!("cannot start the memcpy threads: {e}"))?;
            Some(pool)
        } else {
            None
        };
        Ok(Memcpy { threads, pool })
    }

    /// Copies `src` into `dst` (of equal length).
    pub fn copy(&self, src: &[u8], dst: &mut [u8]) {
        // black_box: the copied bytes are never read, and a copy whose result is unused (or that
        // repeats the previous one) could otherwise be removed by the optimiser.
        let (src, dst) = (black_box(src), black_box(dst));
        let pieces = pieces(self.threads, dst.len());
        match &self.pool {
            Some(pool) if pieces > 1 => {
                let chunk = dst.len().div_ceil(pieces).next_multiple_of(PIECE_ALIGN);
                pool.scope(|scope| {
                    for (d, s) in dst.chunks_mut(chunk).zip(src.chunks(chunk)) {
                        scope.spawn(move |_| d.copy_from_slice(s));
                    }
                });
            }
            _ => dst.copy_from_slice(src),
        }
    }
}

fn pieces(threads: usize, bytes: usize) -> usize {
    (bytes / MIN_PIECE_BYTES).min(threads).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_the_jit() {
        assert_eq!(pieces(2, 1000), 1);
        assert_eq!(pieces(2, 64 << 20), 2);
        assert_eq!(pieces(1, 64 << 20), 1);
    }

    #[test]
    fn copies_every_byte() {
        let src: Vec<u8> = (0..3 * MIN_PIECE_BYTES + 5).map(|i| i as u8).collect();
        for threads in [1, 2, 3] {
            let mut dst = vec![0u8; src.len()];
            Memcpy::new(threads).unwrap().copy(&src, &mut dst);
            assert!(dst == src, "threads {threads}");
        }
    }
}
