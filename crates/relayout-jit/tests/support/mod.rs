//! Helpers shared by the JIT's integration tests.

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
