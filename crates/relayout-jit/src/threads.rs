//! The thread pool of threaded runs, and how finely a statement is split.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::OnceLock;

/// A statement is split only into pieces that move at least this many bytes: below that the
/// cost of waking a thread (a few microseconds) is more than the copy saves.
pub(crate) const MIN_PIECE_BYTES: u64 = 256 * 1024;

/// One pool for the process, with a thread per core, created by the first threaded run. Kernels
/// share it, so threaded runs neither create threads nor compete with rayon's global pool.
/// `None` when the threads could not be started; runs then stay on the calling thread.
pub(crate) fn pool() -> Option<&'static ThreadPool> {
    static POOL: OnceLock<Option<ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("relayout-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// How many pieces to cut a statement that moves `work` bytes over `extent` outer iterations
/// into, for a run on at most `threads` threads.
pub(crate) fn pieces(threads: usize, work: u64, extent: u64) -> usize {
    let by_size = work / MIN_PIECE_BYTES;
    let cap = by_size.min(extent).min(threads as u64);
    (cap as usize).max(1)
}

/// The pieces of a forced split into `n`: `n`, but no more than the outer loop has
/// iterations, and at least one.
pub(crate) fn exact_pieces(n: usize, extent: u64) -> usize {
    (n as u64).min(extent).max(1) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_work_stays_on_one_thread() {
        assert_eq!(pieces(8, 1000, 1000), 1);
        assert_eq!(pieces(8, 64 << 20, 1), 1);
        assert_eq!(pieces(2, 64 << 20, 1000), 2);
        assert_eq!(pieces(0, 64 << 20, 1000), 1);
        assert_eq!(pieces(8, 3 * MIN_PIECE_BYTES, 1000), 3);
    }

    #[test]
    fn forced_splits_ignore_size_but_not_the_loop() {
        assert_eq!(exact_pieces(7, 1000), 7);
        assert_eq!(exact_pieces(7, 3), 3);
        assert_eq!(exact_pieces(0, 3), 1);
        assert_eq!(exact_pieces(2, 0), 1);
    }
}
