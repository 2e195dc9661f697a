//! The Rust side of threaded runs under contention: the process-wide pool, the cutting of
//! outer loops into pieces, and the kernel cache while threads compile, hit and evict at once.
//! Every result is checked against the reference implementation, and every forced split must
//! report that it split.
//!
//! `cargo test` runs this on stable. Run under ThreadSanitizer, which reports a data race in
//! the pool, the range cutting or the cache even when the results happen to come out right
//! (the machine code the JIT generates is not instrumented; that it writes only its own piece
//! is what the forced-split tests check):
//!
//! ```sh
//! RUSTFLAGS="-Zsanitizer=thread" CARGO_TARGET_DIR=target/tsan cargo +nightly test \
//!     -Zbuild-std --target x86_64-unknown-linux-gnu -p relayout --test races
//! ```
//!
//! (nightly with its `rust-src` component; `-Zbuild-std` builds the standard library with
//! the sanitizer too, without which TSan reports false races inside std's own sync code.)

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::{byte_len, random_bytes, small_valid_op, Input};
use relayout::ir::TensorType;
use relayout::{compile, set_cache_capacity, CompiledOp, Op, Split, DEFAULT_CAPACITY};
use std::sync::Mutex;

/// Both tests change the process-wide cache capacity; they take turns.
static SERIAL: Mutex<()> = Mutex::new(());

const THREADS: u64 = 4;

/// The `i`-th small random valid op of thread `t`.
fn op(t: u64, i: u64) -> (Op, TensorType) {
    let data = random_bytes(48, t << 32 | i);
    small_valid_op(&mut Input::new(&data))
}

/// Runs `kernel` forced into `pieces` pieces from a garbage output and checks it against the
/// reference. Returns whether any statement ran in more than one piece.
fn run_and_check(
    op: &Op,
    input: &TensorType,
    kernel: &CompiledOp,
    pieces: usize,
    seed: u64,
) -> bool {
    let src = random_bytes(byte_len(input), seed);
    let want = relayout_reference::reference(op, input, &src)
        .unwrap_or_else(|e| panic!("reference refused {op:?} on {input}: {e}"));
    let mut got = random_bytes(byte_len(kernel.output_type()), !seed);
    let report = kernel
        .run_split(&src, &mut got, Split::Pieces(pieces))
        .unwrap_or_else(|e| panic!("{e}"));
    report
        .check_forced(pieces)
        .unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
    assert!(
        got == want,
        "{op:?} on {input} in {pieces} pieces differs from the reference"
    );
    report.split()
}

#[test]
fn threads_run_forced_splits_on_the_shared_pool_at_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let split = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let split = &split;
            scope.spawn(move || {
                for i in 0..40 {
                    let (op, input) = op(t, i);
                    let kernel = compile(&op, &input).unwrap_or_else(|e| panic!("{op:?}: {e}"));
                    let pieces = [2, 3, 7][(i % 3) as usize];
                    if run_and_check(&op, &input, &kernel, pieces, t << 32 | i) {
                        split.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    // Many small ops have nothing to cut (one iteration, or a Reshape's single run), so a
    // third of the runs splitting shows the pool in use.
    let split = split.into_inner();
    assert!(
        split >= (THREADS * 40 / 3) as usize,
        "only {split} of {} runs split: the pool was hardly used",
        THREADS * 40
    );
}

#[test]
fn the_cache_compiles_hits_and_evicts_under_contention() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Capacity 0: every thread compiles the same op at the same time (no cache to hide
    // behind), then a tiny cache that every insert overflows, while one thread keeps
    // changing the capacity.
    for capacity in [0, 2] {
        set_cache_capacity(capacity);
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                scope.spawn(move || {
                    for i in 0..30 {
                        // Half the ops are shared by every thread, half are the thread's own.
                        let (op, input) = if i % 2 == 0 { op(99, i % 6) } else { op(t, i) };
                        let kernel = compile(&op, &input).unwrap_or_else(|e| panic!("{op:?}: {e}"));
                        run_and_check(&op, &input, &kernel, 2, t << 32 | i);
                    }
                });
            }
            scope.spawn(|| {
                for i in 0..60 {
                    set_cache_capacity([1, 0, 3][i % 3]);
                    std::thread::yield_now();
                }
            });
        });
    }
    set_cache_capacity(DEFAULT_CAPACITY);
}
