//! Criterion benchmarks of a few compiled kernels, each next to a memcpy of its output bytes.
//! `relayout bench` measures the whole suite; this is for quick A/B comparisons while
//! working on code generation (`cargo bench -p relayout-cli`). The large suite cases are
//! scaled down so the whole run takes seconds.
//!
//! Each op is compiled once, outside the measurement: only `CompiledOp::run` is timed.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

/// (name, op in the command line syntax).
const CASES: [(&str, &str); 3] = [
    ("s2d_tiny", "SpaceToDepth {block_size = 2, data_format = \"NHWC\"} : tensor<1x8x8x4xf32>"),
    // The suite's d2s_nhwc_b2 with batch 1 instead of 8 (4 MiB instead of 32 MiB).
    ("d2s_nhwc_b2_small", "DepthToSpace {block_size = 2, data_format = \"NHWC\"} : tensor<1x64x64x256xf32>"),
    // The suite's col2im_conv3x3 on a 32x32 image of one batch (2.25 MiB in, 256 KiB out).
    (
        "col2im_conv3x3_small",
        "Col2Im {image_shape = [32, 32], block_shape = [3, 3], dilations = [1, 1], pads = [1, 1, 1, 1], strides = [1, 1]} : tensor<1x576x1024xf32>",
    ),
];

/// A byte buffer starting on a 64-byte boundary: glibc's memcpy is much slower for some sizes
/// when source and destination are misaligned relative to each other, which would make the
/// memcpy reference meaningless. Filled with a non-zero pattern so no page is a shared zero page.
struct Aligned {
    storage: Vec<u8>,
    offset: usize,
    len: usize,
}

impl Aligned {
    fn new(len: usize, seed: u8) -> Aligned {
        let mut storage: Vec<u8> = (0..len + 64)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
            .collect();
        let offset = storage.as_mut_ptr().align_offset(64);
        Aligned {
            storage,
            offset,
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.offset..self.offset + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.offset..self.offset + self.len]
    }
}

fn compile(text: &str) -> relayout::CompiledOp {
    let spec = relayout::parse_op_spec(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let op =
        relayout::Op::from_attrs(&spec.name, &spec.attrs).unwrap_or_else(|e| panic!("{text}: {e}"));
    relayout::compile(&op, &spec.input).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn size(ty: &relayout::ir::TensorType) -> usize {
    ty.size_bytes().expect("a benchmark type fits in memory") as usize
}

fn kernels(c: &mut Criterion) {
    for (name, text) in CASES {
        let kernel = compile(text);
        let (in_len, out_len) = (size(kernel.input_type()), size(kernel.output_type()));
        let src = Aligned::new(in_len, 1);
        let mut dst = Aligned::new(out_len, 2);
        let copy_src = Aligned::new(out_len, 3);
        let mut copy_dst = Aligned::new(out_len, 4);

        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Bytes(out_len as u64));
        group.bench_function(BenchmarkId::new("kernel", out_len), |b| {
            b.iter(|| {
                kernel
                    .run(black_box(src.bytes()), black_box(dst.bytes_mut()))
                    .expect("the buffers have the op's sizes")
            })
        });
        group.bench_function(BenchmarkId::new("memcpy", out_len), |b| {
            b.iter(|| black_box(copy_dst.bytes_mut()).copy_from_slice(black_box(copy_src.bytes())))
        });
        group.finish();
    }
}

criterion_group!(benches, kernels);
criterion_main!(benches);
