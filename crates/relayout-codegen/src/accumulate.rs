//! Contiguous runs for `accumulate`: `dst[k] += src[k]` for each element of the run, with the
//! arithmetic of `DType::add_assign`.
//!
//! Whole 16-byte chunks are added with one vector add each (`iadd` on `i8x16` .. `i64x2`,
//! `fadd` on `f32x4` / `f64x2`; complex numbers are pairs of floats, so they add as floats; bool
//! is `umin(a | b, 1)`), and the elements left over one at a time. f16 and bf16 call a
//! [`Helper`] per element: Cranelift's f16 support needs hardware conversions the baseline x86
//! target lacks, and bf16 has no CLIF type at all.
//!
//! Unlike copy, no element is touched twice: a second addition would change the result.

use crate::loops::{counted_loop, Count};
use crate::mem::{load, store, Addr};
use crate::sum::HalfFloat;
use crate::{CodegenError, Helper, Imports};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, FuncRef, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::DType;

/// Runs of up to this many 16-byte chunks are added straight-line; longer ones by a loop.
const INLINE_CHUNKS: u64 = 8;
/// Chunks per iteration of that loop.
const LOOP_CHUNKS: u64 = 4;
/// f16/bf16 runs of up to this many elements call the helper straight-line.
const INLINE_CALLS: u64 = 8;

/// How elements of one dtype are added.
#[derive(Clone, Copy)]
pub(crate) enum Adder {
    /// Wrapping integer addition on elements of this type.
    Int(Type),
    /// IEEE addition on elements of this type (also each part of a complex number).
    Float(Type),
    /// Logical or, stored as 0 or 1. Holds the `i8x16` splat of 1, made in the entry block.
    Bool(Value),
    /// A call per element (f16, bf16).
    Call(FuncRef),
    /// `+0.0 + x` of f16 or bf16 elements, the only addition of a sum from +0.0 of one term
    /// per run ([`Adder::zero_plus_half`]), on the bits: `x`, but +0.0 for -0.0 and a quiet
    /// NaN for a signalling one, as `DType::add_assign` makes them (relayout-jit's
    /// `tests/one_term_sums.rs` checks every one of the 65536 values of both types against
    /// the interpreter). No call, and whole vectors.
    HalfZeroPlus(HalfFloat),
}

impl Adder {
    /// Prepares the adder for `dtype` in the entry block.
    pub fn new(
        b: &mut FunctionBuilder,
        dtype: DType,
        imports: &mut dyn Imports,
    ) -> Result<Adder, CodegenError> {
        Ok(match dtype {
            DType::I8 | DType::U8 => Adder::Int(types::I8),
            DType::I16 | DType::U16 => Adder::Int(types::I16),
            DType::I32 | DType::U32 => Adder::Int(types::I32),
            DType::I64 | DType::U64 => Adder::Int(types::I64),
            DType::F32 | DType::C64 => Adder::Float(types::F32),
            DType::F64 | DType::C128 => Adder::Float(types::F64),
            DType::Bool => {
                let one = b.ins().iconst(types::I8, 1);
                Adder::Bool(b.ins().splat(types::I8X16, one))
            }
            DType::F16 => Adder::Call(imports.import(Helper::F16Add, b.func)?),
            DType::BF16 => Adder::Call(imports.import(Helper::Bf16Add, b.func)?),
        })
    }

    /// The adder of a sum from +0.0 of one term per run of `dtype` (its one addition is
    /// `+0.0 + x`), when it is f16 or bf16: [`Adder::HalfZeroPlus`].
    pub fn zero_plus_half(dtype: DType) -> Option<Adder> {
        HalfFloat::of(dtype).map(Adder::HalfZeroPlus)
    }

    /// Whether a run of `bytes` bytes is a single cheap operation (worth unrolling around).
    pub fn is_small(self, bytes: u64) -> bool {
        !matches!(self, Adder::Call(_)) && bytes <= 16
    }

    /// The scalar element type that travels through memory.
    pub fn lane(self) -> Type {
        match self {
            Adder::Int(t) | Adder::Float(t) => t,
            Adder::Bool(_) => types::I8,
            Adder::Call(_) | Adder::HalfZeroPlus(_) => types::I16,
        }
    }

    /// Adds one 16-byte chunk at `delta`.
    fn chunk(self, b: &mut FunctionBuilder, src: Addr, dst: Addr, delta: i64) {
        let ty = self.vector();
        let acc = load(b, ty, dst, delta);
        let x = load(b, ty, src, delta);
        let sum = self.add_vectors(b, acc, x);
        store(b, sum, dst, delta);
    }

    /// The 16-byte vector type that holds whole elements (not for f16 and bf16).
    pub fn vector(self) -> Type {
        let lane = self.lane();
        let Some(ty) = lane.by(16 / lane.bytes()) else {
            unreachable!("16-byte vector of {lane}");
        };
        ty
    }

    /// `acc + x` on two 16-byte vectors of [`Adder::vector`]'s type (for
    /// [`Adder::HalfZeroPlus`], `acc` is +0.0).
    pub fn add_vectors(self, b: &mut FunctionBuilder, acc: Value, x: Value) -> Value {
        match self {
            Adder::Int(_) => b.ins().iadd(acc, x),
            Adder::Float(_) => b.ins().fadd(acc, x),
            Adder::Bool(one) => {
                let any = b.ins().bor(acc, x);
                b.ins().umin(any, one)
            }
            Adder::Call(_) => unreachable!("f16 and bf16 are added element by element"),
            Adder::HalfZeroPlus(half) => {
                let splat = |b: &mut FunctionBuilder, bits: u16| {
                    let lane = b.ins().iconst(types::I16, i64::from(bits));
                    b.ins().splat(types::I16X8, lane)
                };
                let (nan, quiet) = half_bits(half);
                // A NaN's magnitude is above infinity's (as signed 16-bit lanes too, since the
                // magnitudes stay below 0x8000): set its quiet bit (a quiet NaN has it).
                let magnitude = splat(b, 0x7fff);
                let magnitude = b.ins().band(x, magnitude);
                let infinity = splat(b, nan);
                let is_nan = b.ins().icmp(IntCC::SignedGreaterThan, magnitude, infinity);
                let quiet = splat(b, quiet);
                let quiet = b.ins().band(is_nan, quiet);
                let y = b.ins().bor(x, quiet);
                // -0.0 becomes +0.0.
                let negative_zero = splat(b, 0x8000);
                let is_negative_zero = b.ins().icmp(IntCC::Equal, x, negative_zero);
                b.ins().band_not(y, is_negative_zero)
            }
        }
    }

    /// `acc + x` on two elements of [`Adder::lane`]'s type (for [`Adder::HalfZeroPlus`],
    /// `acc` is +0.0).
    pub fn add_elements(self, b: &mut FunctionBuilder, acc: Value, x: Value) -> Value {
        match self {
            Adder::Int(_) => b.ins().iadd(acc, x),
            Adder::Float(_) => b.ins().fadd(acc, x),
            Adder::Bool(_) => {
                let any = b.ins().bor(acc, x);
                b.ins().icmp_imm_u(IntCC::NotEqual, any, 0)
            }
            Adder::HalfZeroPlus(half) => {
                let (nan, quiet) = half_bits(half);
                let magnitude = b.ins().band_imm_u(x, 0x7fff);
                let is_nan =
                    b.ins()
                        .icmp_imm_s(IntCC::SignedGreaterThan, magnitude, i64::from(nan));
                let quieted = b.ins().bor_imm_u(x, i64::from(quiet));
                let y = b.ins().select(is_nan, quieted, x);
                let is_negative_zero = b.ins().icmp_imm_u(IntCC::Equal, x, 0x8000);
                let zero = b.ins().iconst(types::I16, 0);
                b.ins().select(is_negative_zero, zero, y)
            }
            Adder::Call(f) => {
                let acc = b.ins().uextend(types::I32, acc);
                let x = b.ins().uextend(types::I32, x);
                let call = b.ins().call(f, &[acc, x]);
                let sum = b.inst_results(call)[0];
                b.ins().ireduce(types::I16, sum)
            }
        }
    }

    /// Adds one element at `delta`.
    fn element(self, b: &mut FunctionBuilder, src: Addr, dst: Addr, delta: i64) {
        let ty = self.lane();
        let acc = load(b, ty, dst, delta);
        let x = load(b, ty, src, delta);
        let sum = self.add_elements(b, acc, x);
        store(b, sum, dst, delta);
    }
}

/// Emits `dst[..bytes] += src[..bytes]`; `bytes` is a positive multiple of the element size.
pub(crate) fn emit_run(
    b: &mut FunctionBuilder,
    adder: Adder,
    bytes: u64,
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    let size = u64::from(adder.lane().bytes());
    let (unit, count) = match adder {
        Adder::Call(_) => (size, bytes / size),
        _ => (16, bytes / 16),
    };
    let inline = match adder {
        Adder::Call(_) => INLINE_CALLS,
        _ => INLINE_CHUNKS,
    };
    let one = |b: &mut FunctionBuilder, s: Addr, d: Addr, delta: i64| match adder {
        Adder::Call(_) => adder.element(b, s, d, delta),
        _ => adder.chunk(b, s, d, delta),
    };
    let unit_i = unit as i64;
    // Units handled by the loop (if any); the rest are straight-line.
    let looped = if count > inline {
        let per_iteration = if matches!(adder, Adder::Call(_)) {
            1
        } else {
            LOOP_CHUNKS
        };
        let iterations = count / per_iteration;
        let step = unit_i * per_iteration as i64;
        counted_loop(
            b,
            Count::Const(iterations),
            src,
            dst,
            (step, step),
            &mut |b, s, d| {
                for k in 0..per_iteration as i64 {
                    one(b, s, d, k * unit_i);
                }
                Ok(())
            },
        )?;
        iterations * per_iteration
    } else {
        0
    };
    for k in looped..count {
        one(b, src, dst, k as i64 * unit_i);
    }
    // Elements after the last whole chunk.
    let mut at = count * unit;
    while at < bytes {
        adder.element(b, src, dst, at as i64);
        at += size;
    }
    Ok(())
}

/// The bits of `half`'s infinity (the largest magnitude that is no NaN) and of its quiet-NaN
/// bit (the top bit of the significand).
fn half_bits(half: HalfFloat) -> (u16, u16) {
    match half {
        HalfFloat::F16 => (0x7c00, 0x0200),
        HalfFloat::Bf16 => (0x7f80, 0x0040),
    }
}
