//! The Rust functions that generated code calls (see `relayout_codegen::Helper`). They are
//! registered with the JIT under their symbol names in `module.rs`. Four more,
//! `relayout_stream_transpose_nest`, `relayout_stream_every_other_nest`,
//! `relayout_deinterleave_nest` and `relayout_interleave_nest`, are called only by the JIT
//! itself (`helper_kernel.rs`), so they are not `Helper`s and have no symbols; nor are
//! the sums of `helpers/sum.rs`, which the JIT runs for kernels without generated code.

use half::{bf16, f16};
use relayout_codegen::Helper;
use relayout_ir::half_sum;

// Prefetching is x86-64 only: elsewhere the streaming helpers are plain copies.
#[cfg(target_arch = "x86_64")]
mod ahead;
mod byte_channels;
mod every_other;
mod moves;
mod stream;
mod sum;

pub use byte_channels::{relayout_deinterleave_nest, relayout_interleave_nest};
pub use every_other::relayout_stream_every_other_nest;
pub(crate) use moves::{fill_nest, move_nest};
pub use stream::{
    relayout_store_fence, relayout_stream_copy_nest, relayout_stream_transpose_nest,
    relayout_stream_zero_nest, StreamLoop,
};
pub(crate) use sum::{sum_nest, zero_nest, RowForm, SumNest, SumShape};

/// `acc + x` in f16, rounded once: the sum of two f16 values is exact in f32, so adding in
/// f32 and rounding is what `DType::F16.add_assign` does, bit for bit.
pub extern "C" fn relayout_f16_add(acc: u32, x: u32) -> u32 {
    let (a, b) = (f16::from_bits(acc as u16), f16::from_bits(x as u16));
    u32::from(f16::from_f32(half_sum(a.to_f32(), b.to_f32())).to_bits())
}

/// `acc + x` in bf16, rounded once, as `DType::BF16.add_assign` does.
pub extern "C" fn relayout_bf16_add(acc: u32, x: u32) -> u32 {
    let (a, b) = (bf16::from_bits(acc as u16), bf16::from_bits(x as u16));
    u32::from(bf16::from_f32(half_sum(a.to_f32(), b.to_f32())).to_bits())
}

/// The address of each helper, for the JIT's symbol table.
pub(crate) fn address(helper: Helper) -> *const u8 {
    match helper {
        Helper::F16Add => relayout_f16_add as *const u8,
        Helper::Bf16Add => relayout_bf16_add as *const u8,
        Helper::StreamCopy => stream::relayout_stream_copy_nest as *const u8,
        Helper::StreamZero => stream::relayout_stream_zero_nest as *const u8,
        Helper::StoreFence => stream::relayout_store_fence as *const u8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::DType;

    /// The helpers agree with the interpreter's arithmetic, including NaN and rounding.
    #[test]
    fn helpers_match_add_assign() {
        let samples: Vec<u16> = (0..=u16::MAX)
            .step_by(97)
            .chain([
                0x7c00, 0xfc00, 0x7e00, 0x8000, 0x3c00, 0x7f80, 0xff80, 0x7fc1,
            ])
            .collect();
        for &a in &samples {
            for &x in samples.iter().step_by(7) {
                for (dtype, f) in [
                    (
                        DType::F16,
                        relayout_f16_add as extern "C" fn(u32, u32) -> u32,
                    ),
                    (DType::BF16, relayout_bf16_add),
                ] {
                    let mut acc = a.to_le_bytes();
                    dtype.add_assign(&mut acc, &x.to_le_bytes());
                    let got = f(u32::from(a) | 0xdead_0000, u32::from(x));
                    assert_eq!(
                        got,
                        u32::from(u16::from_le_bytes(acc)),
                        "{dtype} {a:#x} + {x:#x}"
                    );
                }
            }
        }
    }
}
