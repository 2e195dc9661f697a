//! Measures generated kernels against `std::ptr::copy_nonoverlapping` (memcpy) of the same
//! number of bytes, and compile times. Not a test: timings depend on the machine.
//!
//! ```text
//! cargo run --release -p relayout-jit --example measure [MiB]
//! ```
//!
//! Ratios are kernel time / memcpy time (lower is better; 1.0 is memory speed). Buffers are
//! 64-byte aligned: glibc's memcpy is much slower on misaligned pairs, which would flatter
//! the kernels.

use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::CompiledKernel;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// A 64-byte aligned window of `len` bytes into a larger vector.
struct Aligned {
    buf: Vec<u8>,
    at: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, fill: u8) -> Aligned {
        let buf = vec![fill; len + 64];
        let at = buf.as_ptr().align_offset(64);
        Aligned { buf, at, len }
    }
    fn get(&self) -> &[u8] {
        &self.buf[self.at..self.at + self.len]
    }
    fn get_mut(&mut self) -> &mut [u8] {
        &mut self.buf[self.at..self.at + self.len]
    }
}

/// The fastest of `reps` runs of `f` (after one warm-up run).
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    f();
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn stmt(bytes: u64, loops: Vec<Loop>) -> LoopStmt {
    LoopStmt {
        action: LoopAction::Copy,
        bytes,
        src_offset: 0,
        dst_offset: 0,
        loops,
    }
}

fn lp(extent: u64, src_stride: i64, dst_stride: i64) -> Loop {
    Loop {
        extent,
        src_stride,
        dst_stride,
    }
}

/// Copies `total` bytes as contiguous runs of `run` bytes, one per iteration of one loop.
fn rows(total: u64, run: u64) -> LoopKernel {
    LoopKernel {
        name: format!("rows_{run}"),
        src: TensorType::new(DType::U8, [total]),
        dst: TensorType::new(DType::U8, [total]),
        stmts: vec![stmt(run, vec![lp(total / run, run as i64, run as i64)])],
    }
}

/// An `n` x `n` transpose of 4-byte elements, destination rows outermost.
fn transpose(n: u64) -> LoopKernel {
    let row = 4 * n as i64;
    LoopKernel {
        name: "transpose".into(),
        src: TensorType::new(DType::F32, [n, n]),
        dst: TensorType::new(DType::F32, [n, n]),
        stmts: vec![stmt(4, vec![lp(n, 4, row), lp(n, row, 4)])],
    }
}

/// Interleaves two halves of `run`-byte elements (DepthToSpace with block 2 on a row):
/// `dst[2 i + h] = src[h][i]`.
fn interleave(total: u64, run: u64) -> LoopKernel {
    let half = total / 2;
    let n = half / run;
    LoopKernel {
        name: format!("interleave_{run}"),
        src: TensorType::new(DType::U8, [total]),
        dst: TensorType::new(DType::U8, [total]),
        stmts: vec![stmt(
            run,
            vec![
                lp(n, run as i64, 2 * run as i64),
                lp(2, half as i64, run as i64),
            ],
        )],
    }
}

fn main() {
    let mib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let total = mib << 20;
    let reps = 7;
    let src = Aligned::new(total as usize, 1);
    let mut dst = Aligned::new(total as usize, 2);
    let memcpy = best(reps, || {
        let (s, d) = (src.get(), dst.get_mut());
        d.copy_from_slice(black_box(s));
    });
    println!(
        "memcpy of {mib} MiB: {:.2} ms ({:.1} GB/s)",
        memcpy.as_secs_f64() * 1e3,
        total as f64 / memcpy.as_secs_f64() / 1e9
    );

    let side = ((total / 4) as f64).sqrt() as u64;
    let mut kernels: Vec<LoopKernel> = [
        4u64, 8, 16, 32, 64, 128, 192, 256, 384, 512, 1024, 4096, 65536,
    ]
    .iter()
    .map(|&run| rows(total, run))
    .collect();
    kernels.push(LoopKernel {
        name: "whole".into(),
        stmts: vec![stmt(total, vec![])],
        ..rows(total, total)
    });
    kernels.push(interleave(total, 4));
    kernels.push(interleave(total, 64));
    kernels.push(transpose(side));

    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>12}",
        "kernel", "1 thread", "2 threads", "compile", "bytes moved"
    );
    for k in &kernels {
        let bytes = k.dst.size_bytes().unwrap_or(0) as usize;
        let t = Instant::now();
        let compiled = match CompiledKernel::compile(k) {
            Ok(c) => c,
            Err(e) => {
                println!("{}: {e}", k.name);
                continue;
            }
        };
        let compile = t.elapsed();
        let (s, d) = (&src.get()[..bytes], &mut dst.get_mut()[..bytes]);
        let one = best(reps, || compiled.run(s, d).expect("run"));
        let two = best(reps, || compiled.run_threaded(s, d, 2).expect("run"));
        // Compare with a memcpy of the same number of bytes.
        let scale = bytes as f64 / total as f64;
        let reference = memcpy.as_secs_f64() * scale;
        println!(
            "{:<16} {:>10.3} {:>10.3} {:>8.0}us {:>12}",
            k.name,
            one.as_secs_f64() / reference,
            two.as_secs_f64() / reference,
            compile.as_secs_f64() * 1e6,
            bytes
        );
    }

    // Compile time of a typical kernel once the process is warm: a 4-deep nest.
    let nest = LoopKernel {
        name: "nest".into(),
        src: TensorType::new(DType::F32, [8, 8, 8, 8]),
        dst: TensorType::new(DType::F32, [8, 8, 8, 8]),
        stmts: vec![stmt(
            16,
            vec![
                lp(8, 2048, 16),
                lp(8, 16, 128),
                lp(8, 128, 1024),
                lp(2, 1024, 2048),
            ],
        )],
    };
    let n = 200;
    let t = Instant::now();
    for _ in 0..n {
        black_box(CompiledKernel::compile(&nest).expect("compile"));
    }
    println!(
        "compile + drop of a 4-deep nest, warm: {:.0} us per kernel",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
