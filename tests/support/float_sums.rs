//! Data for the tests of float sums (Col2Im), whose rounding shows the order of additions.

use relayout::ir::DType;

/// `count` f32 (for `DType::F32`), f16, bf16 or f64 values, deterministic from `seed`, whose
/// sums round differently in another order: large and tiny magnitudes of both signs mixed, and
/// runs of `run` -0.0 values every fifth run (a sum of only -0.0 terms from +0.0 is +0.0, but
/// -0.0 from its first term). The 16-bit types get magnitudes up to 2000, so that sums of up
/// to 27 terms stay finite.
pub fn values(dtype: DType, count: usize, seed: u64, run: usize) -> Vec<u8> {
    let mut x = seed;
    let mut out = Vec::with_capacity(count * dtype.size() as usize);
    for i in 0..count {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = x >> 33;
        let v: f64 = match (i / run) % 5 {
            0 => -0.0,
            1 => (r % 2001) as f64 - 1000.0,
            2 => ((r % 2001) as f64 - 1000.0) / 3.0 * 1e-7,
            3 => ((r % 2001) as f64 - 1000.0) * 1e7 + 0.1,
            _ => f64::from(r as u32) / 7.0 - 3e8,
        };
        let small = || match (i / run) % 5 {
            3 => ((r % 2001) as f64 - 1000.0) * 2.0 + 0.1,
            4 => (r % 4001) as f64 / 7.0 - 280.0,
            _ => v,
        };
        match dtype {
            DType::F32 => out.extend((v as f32).to_le_bytes()),
            DType::F16 => out.extend(half::f16::from_f64(small()).to_le_bytes()),
            DType::BF16 => out.extend(half::bf16::from_f64(small()).to_le_bytes()),
            _ => out.extend(v.to_le_bytes()),
        }
    }
    out
}
