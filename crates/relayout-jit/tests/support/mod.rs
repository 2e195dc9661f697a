//! Helpers shared by the JIT's integration tests and its `measure` example.

#![allow(dead_code)] // Each includer uses a different part of this file.

use relayout_ir::Loop;

/// Deterministic pseudo-random bytes (xorshift), so failures reproduce.
pub fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// A loop of `extent` iterations with the given byte strides.
pub fn lp(extent: u64, src_stride: i64, dst_stride: i64) -> Loop {
    Loop {
        extent,
        src_stride,
        dst_stride,
    }
}

// The DepthToSpace / SpaceToDepth statements of the benchmark suite, as loop nests whose
// extents are parameters: the shuffle tests run them small, the `measure` example at 256 KiB
// to 1 MiB. Strides are in bytes; each function says its element type and run length.

/// Pixel shuffle, NCHW CRD, block 4, f32 (4-byte runs): in [16, h, w], out [4 h, 4 w].
pub fn pixel_shuffle_b4_f32(h: i64, w: i64) -> Vec<Loop> {
    let plane = h * w * 4;
    vec![
        lp(h as u64, 4 * w, 64 * w),
        lp(4, 4 * plane, 16 * w),
        lp(w as u64, 4, 16),
        lp(4, plane, 4),
    ]
}

/// DepthToSpace NCHW DCR, block 4, u8 (1-byte runs): in [16, h, w], out [4 h, 4 w].
pub fn dcr_b4_u8(h: i64, w: i64) -> Vec<Loop> {
    vec![
        lp(h as u64, w, 16 * w),
        lp(4, 4 * h * w, 4 * w),
        lp(w as u64, 1, 4),
        lp(4, h * w, 1),
    ]
}

/// SpaceToDepth NCHW, block 2, with 4-byte runs (f32, the YOLO focus layer; or i8 in
/// NCHW_VECT_C): in [c, 2 h, 2 w], out [4, c, h, w].
pub fn s2d_nchw_b2_4_byte(c: i64, h: i64, w: i64) -> Vec<Loop> {
    vec![
        lp(c as u64, 16 * h * w, 4 * h * w),
        lp(2, 8 * w, 2 * c * h * w * 4),
        lp(2, 4, c * h * w * 4),
        lp(h as u64, 16 * w, 4 * w),
        lp(w as u64, 8, 4),
    ]
}

/// DepthToSpace NHWC, block 2, f16 with 12-byte runs (C = 6 per block cell).
pub fn d2s_nhwc_b2_f16_12(h: i64, w: i64) -> Vec<Loop> {
    vec![
        lp(h as u64, 24 * w, 24 * w),
        lp(2, 12, 12 * w),
        lp(w as u64, 24, 12),
    ]
}

/// DepthToSpace NCHW DCR, block 2, f32 (4-byte runs) on the suite's [1, 64, 32, 32], with `n`
/// of its 512 outer iterations.
pub fn dcr_b2_f32(n: u64) -> Vec<Loop> {
    vec![
        lp(n, 128, 512),
        lp(2, 131072, 256),
        lp(32, 4, 8),
        lp(2, 65536, 4),
    ]
}
