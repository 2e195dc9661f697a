//! Concurrency and memory: kernels compiled and run from many threads at once give the
//! reference's results, and compiling and dropping thousands of kernels does not make the
//! process grow (each kernel's JIT module, with its code pages, is freed on drop).

#![cfg(target_os = "linux")]

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::{byte_len, random_bytes, small_valid_op, Input};
use relayout::ir::{DType, TensorType};
use relayout::{compile, CompiledOp, DataFormat, Op};
use std::sync::Mutex;

/// A compiled op is shared by reference between threads and moved into them: both must stay
/// possible. This fails to compile, rather than at run time, if either is lost.
const _: fn() = || {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledOp>();
};

/// The tests of this file measure the process's memory, so they do not run at the same time as
/// each other: one test's buffers would count as the other's growth.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const THREADS: usize = 8;

/// Runs `kernel` (compiled for `op` on `input`) on random data and compares with the
/// reference implementation, on one thread or split over `threads`.
fn run_and_check(op: &Op, input: &TensorType, kernel: &CompiledOp, seed: u64, threads: usize) {
    let src = random_bytes(byte_len(input), seed);
    let want = relayout_reference::reference(op, input, &src)
        .unwrap_or_else(|e| panic!("reference refused {op:?} on {input}: {e}"));
    let mut got = random_bytes(byte_len(kernel.output_type()), !seed);
    kernel
        .run_threaded(&src, &mut got, threads)
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        got == want,
        "{op:?} on {input} ({threads} threads) differs from the reference"
    );
}

#[test]
fn eight_threads_compile_and_run_at_once() {
    let _serial = serial();
    // One kernel shared by every thread, large enough that `run_threaded` splits it over the
    // process-wide pool while eight threads are doing the same.
    let shared_op = Op::from_attrs(
        "SpaceToBatchND",
        &relayout::attrs_from_json(&serde_json::json!({
            "block_shape": [2, 2], "paddings": [[1, 2], [1, 2]]
        }))
        .unwrap(),
    )
    .unwrap();
    let shared_input = TensorType::new(DType::F32, [2, 61, 61, 32]);
    let shared = compile(&shared_op, &shared_input).unwrap();
    let same_op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nchw,
    };
    let same_input = TensorType::new(DType::U16, [2, 3, 8, 6]);

    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (shared, shared_op, shared_input) = (&shared, &shared_op, &shared_input);
            let (same_op, same_input) = (&same_op, &same_input);
            scope.spawn(move || {
                for i in 0..25u64 {
                    let seed = (t as u64) << 32 | i;
                    // The same op, compiled by every thread at once.
                    let k = compile(same_op, same_input).unwrap();
                    run_and_check(same_op, same_input, &k, seed, 1);
                    // A different op in every thread and iteration.
                    let data = random_bytes(48, seed);
                    let (op, input) = small_valid_op(&mut Input::new(&data));
                    let k = compile(&op, &input).unwrap_or_else(|e| panic!("{op:?}: {e}"));
                    run_and_check(&op, &input, &k, seed, 1 + i as usize % 2);
                    // The shared kernel, on the calling thread and on the pool.
                    if i % 5 == 0 {
                        run_and_check(shared_op, shared_input, shared, seed, 1 + i as usize % 3);
                    }
                }
            });
        }
    });
}

#[test]
fn kernels_move_between_threads() {
    let _serial = serial();
    // Compiled on one thread, run and dropped on others.
    let kernels: Vec<(Op, TensorType, CompiledOp)> = (0..THREADS as u64)
        .map(|seed| {
            let data = random_bytes(48, seed + 1000);
            let (op, input) = small_valid_op(&mut Input::new(&data));
            let k = compile(&op, &input).unwrap();
            (op, input, k)
        })
        .collect();
    let handles: Vec<_> = kernels
        .into_iter()
        .enumerate()
        .map(|(i, (op, input, k))| {
            std::thread::spawn(move || run_and_check(&op, &input, &k, i as u64, 2))
        })
        .collect();
    for h in handles {
        h.join().expect("a thread panicked");
    }
}

/// The resident set size of this process, in KiB.
fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

/// The number of memory mappings of this process: leaked JIT code pages would show here even
/// where they are too few to move the resident set size.
fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps")
        .expect("/proc/self/maps")
        .lines()
        .count()
}

/// The `i`-th of more than 10,000 distinct SpaceToDepth inputs.
fn distinct_input(i: u64) -> TensorType {
    let (h, w, c) = (1 + i % 25, 1 + (i / 25) % 20, 1 + i / 500);
    TensorType::new(DType::F32, [1, 2 * h, 2 * w, c])
}

#[test]
fn compiling_and_dropping_many_kernels_keeps_memory_bounded() {
    let _serial = serial();
    // A debug build compiles a kernel in one to two milliseconds, so 10,000 would make this
    // one test take 10-20 s of every `cargo test`; it does a fifth of them there, and
    // `cargo test --release` does them all.
    let count: u64 = if cfg!(debug_assertions) {
        2_000
    } else {
        10_000
    };
    const WARM_UP: u64 = 500;
    const BOUND_KIB: u64 = 64 << 10;
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: DataFormat::Nhwc,
    };
    let compile_and_run = |i: u64| {
        let input = distinct_input(i);
        let k = compile(&op, &input).unwrap_or_else(|e| panic!("{input}: {e}"));
        // Run a few of them, so that running leaves nothing behind either.
        if i % 50 == 0 {
            run_and_check(&op, &input, &k, i, 1);
        }
    };
    // The warm-up fills the allocator's caches and the JIT's one-time state.
    for i in 0..WARM_UP {
        compile_and_run(i);
    }
    let (rss_before, maps_before) = (vm_rss_kib(), mappings());
    let start = std::time::Instant::now();
    for i in WARM_UP..WARM_UP + count {
        compile_and_run(i);
    }
    let elapsed = start.elapsed();
    let (rss_after, maps_after) = (vm_rss_kib(), mappings());
    println!(
        "{count} kernels compiled and dropped in {:.2} s ({:.0} us each): VmRSS {rss_before} -> \
         {rss_after} KiB, {maps_before} -> {maps_after} mappings",
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / count as f64
    );
    let growth = rss_after.saturating_sub(rss_before);
    assert!(
        growth < BOUND_KIB,
        "VmRSS grew by {growth} KiB over {count} kernels (bound {BOUND_KIB} KiB)"
    );
    // The fixed bound alone would let a leak of one 4 KiB code page per kernel through when
    // only 2,000 kernels are compiled; half a page per kernel on average would not.
    assert!(
        growth < count * 2,
        "VmRSS grew by {growth} KiB over {count} kernels: more than 2 KiB per kernel"
    );
    assert!(
        maps_after < maps_before + 256,
        "the process gained {} mappings over {count} kernels: code pages are not freed",
        maps_after.saturating_sub(maps_before)
    );
}
