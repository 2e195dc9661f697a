//! Measures generated kernels against `std::ptr::copy_nonoverlapping` (memcpy) of the same
//! number of bytes, and compile times. Not a test: timings depend on the machine.
//!
//! ```text
//! cargo run --release -p relayout-jit --example measure [SIZE [REPS [FILTER]]]
//! ```
//!
//! FILTER keeps only the kernels whose name contains it: `depth` selects the DepthToSpace /
//! SpaceToDepth statements of the benchmark suite, scaled to 256 KiB-1 MiB whatever SIZE is.
//!
//! SIZE is the bytes each kernel writes, with a `k` or `m` suffix (default `64m`); a size
//! that fits in L2 (`256k`) shows the cost of the code rather than of the memory.
//!
//! Ratios are kernel time / memcpy time (lower is better; 1.0 is memory speed). Buffers are
//! 64-byte aligned: glibc's memcpy is much slower on misaligned pairs, which would flatter
//! the kernels.

use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::CompiledKernel;
use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "../tests/support/mod.rs"]
mod support;

use support::{
    d2s_nhwc_b2_f16_12, dcr_b2_f32, dcr_b4_u8, lp, pixel_shuffle_b4_f32, s2d_nchw_b2_4_byte,
};

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

fn stmt(bytes: u64, loops: Vec<Loop>) -> LoopStmt {
    LoopStmt {
        action: LoopAction::Copy,
        bytes,
        src_offset: 0,
        dst_offset: 0,
        loops,
        window: None,
    }
}

/// Copies `total` bytes as contiguous runs of `run` bytes, one per iteration of one loop.
fn rows(total: u64, run: u64) -> LoopKernel {
    LoopKernel {
        bands: Vec::new(),
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
        bands: Vec::new(),
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
        bands: Vec::new(),
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

/// A copy statement at offset 0 over 1-D tensors just long enough for its reach (all strides
/// are non-negative here).
fn strided(name: &str, dtype: DType, bytes: u64, loops: Vec<Loop>) -> LoopKernel {
    let reach = |f: &dyn Fn(&Loop) -> i64| {
        loops
            .iter()
            .map(|l| f(l) as u64 * (l.extent - 1))
            .sum::<u64>()
            + bytes
    };
    let e = dtype.size();
    LoopKernel {
        bands: Vec::new(),
        name: name.into(),
        src: TensorType::new(dtype, [reach(&|l| l.src_stride).div_ceil(e)]),
        dst: TensorType::new(dtype, [reach(&|l| l.dst_stride).div_ceil(e)]),
        stmts: vec![stmt(bytes, loops)],
    }
}

/// The slow statements of the benchmark suite (DepthToSpace / SpaceToDepth), with their
/// stride structure kept and their extents scaled down to 256 KiB-1 MiB.
fn depth_cases() -> Vec<LoopKernel> {
    let pixel = strided(
        "depth_pixel_f32_b4",
        DType::F32,
        4,
        pixel_shuffle_b4_f32(32, 120),
    );
    let dcr_u8 = strided("depth_dcr_u8_b4", DType::U8, 1, dcr_b4_u8(64, 256));
    let yolo = strided(
        "depth_s2d_f32_b2",
        DType::F32,
        4,
        s2d_nchw_b2_4_byte(2, 64, 128),
    );
    let vect_c = strided(
        "depth_s2d_vectc_i8",
        DType::I8,
        4,
        s2d_nchw_b2_4_byte(2, 256, 64),
    );
    let nhwc = strided(
        "depth_nhwc_f16_12",
        DType::F16,
        12,
        d2s_nhwc_b2_f16_12(40, 512),
    );
    let dcr_f32 = strided("depth_dcr_f32_b2", DType::F32, 4, dcr_b2_f32(512));
    vec![pixel, dcr_u8, yolo, vect_c, nhwc, dcr_f32]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let total = args.get(1).and_then(|a| parse_size(a)).unwrap_or(64 << 20);
    let reps: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(15);
    let src = Aligned::new(total as usize, 1);
    let mut dst = Aligned::new(total as usize, 2);

    let side = ((total / 4) as f64).sqrt() as u64;
    let mut kernels: Vec<LoopKernel> = [
        4u64, 8, 16, 32, 64, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536,
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
    kernels.extend(depth_cases());
    if let Some(filter) = args.get(3) {
        kernels.retain(|k| k.name.contains(filter.as_str()));
    }

    println!(
        "{} KiB per kernel; ratio = kernel time / memcpy time of the same bytes, best of {reps}",
        total >> 10
    );
    println!(
        "{:<20} {:>8} {:>9} {:>10} {:>11}",
        "kernel", "1 thread", "2 threads", "memcpy us", "compile us"
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
        let src_bytes = k.src.size_bytes().unwrap_or(0) as usize;
        if bytes > src.len || src_bytes > src.len {
            println!("{}: needs buffers of {bytes} and {src_bytes} bytes", k.name);
            continue;
        }
        let (s, d) = (&src.get()[..src_bytes], &mut dst.get_mut()[..bytes]);
        // Alternate the kernel and the reference, so that both see the same machine load.
        let (mut one, mut two, mut memcpy) = (Duration::MAX, Duration::MAX, Duration::MAX);
        for _ in 0..reps {
            one = one.min(time(|| compiled.run(s, d).expect("run")));
            two = two.min(time(|| compiled.run_threaded(s, d, 2).expect("run")));
            let n = s.len().min(d.len());
            memcpy = memcpy.min(time(|| d[..n].copy_from_slice(black_box(&s[..n]))));
        }
        println!(
            "{:<20} {:>8.3} {:>9.3} {:>10.2} {:>11.0}",
            k.name,
            one.as_secs_f64() / memcpy.as_secs_f64(),
            two.as_secs_f64() / memcpy.as_secs_f64(),
            memcpy.as_secs_f64() * 1e6,
            compile.as_secs_f64() * 1e6,
        );
    }

    // Compile time of typical kernels once the process is warm.
    let nest = LoopKernel {
        bands: Vec::new(),
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
    for k in [&nest, &transpose(64), &rows(1 << 20, 4096)] {
        let mut times: Vec<Duration> = (0..101)
            .map(|_| time(|| drop(black_box(CompiledKernel::compile(k).expect("compile")))))
            .collect();
        times.sort();
        println!(
            "compile + drop of @{}, warm: median {:.0} us, best {:.0} us",
            k.name,
            times[times.len() / 2].as_secs_f64() * 1e6,
            times[0].as_secs_f64() * 1e6
        );
    }
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// `64m`, `256k` or a plain number of bytes.
fn parse_size(arg: &str) -> Option<u64> {
    let arg = arg.to_ascii_lowercase();
    let (digits, shift) = match arg.as_bytes().last()? {
        b'k' => (&arg[..arg.len() - 1], 10),
        b'm' => (&arg[..arg.len() - 1], 20),
        _ => (&arg[..], 0),
    };
    digits.parse::<u64>().ok().map(|n| n << shift)
}
