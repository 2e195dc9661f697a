//! Contiguous runs for `copy` and `fill`.
//!
//! A run of `bytes` bytes is moved, by length:
//! - 1, 2, 4, 8 or 16 bytes: one load and one store (16 bytes as an `i8x16` vector);
//! - other lengths below 16: two moves of the largest power of two below the length, the
//!   second one ending at the end of the run (the two overlap);
//! - up to [`INLINE_MAX`]: 16-byte vectors, the last one again ending at the end of the run;
//! - up to [`CALL_MIN`]: a loop moving 64 bytes (four vectors) per iteration, then the tail;
//! - from [`CALL_MIN`] on: a call to `memcpy` (`memset` for fill), whose large-copy paths use
//!   what CLIF cannot express (non-temporal stores, 256-bit vectors, `rep movsb`).
//!
//! A streaming mover ([`Mover::StreamCopy`], [`Mover::StreamZero`], chosen per kernel by
//! [`streams`]) instead calls a helper that writes with non-temporal stores, for runs of at
//! least [`STREAM_MIN_RUN`] bytes; one call moves the runs of a statement's whole loop nest
//! ([`emit_stream_nest`]).
//!
//! Overlapping moves write some destination bytes twice with the same value, which is only
//! correct because copy and fill never read the destination and the source and destination
//! buffers are distinct. `accumulate` therefore has its own emitter.

use crate::loops::{counted_loop, Count};
use crate::mem::{load, move_type, store, Addr};
use crate::CodegenError;
use cranelift_codegen::ir::{
    types, ConstantData, FuncRef, InstBuilder, StackSlotData, StackSlotKind, Value,
};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, Loop, Scalar};

/// Longest run moved by straight-line vector moves.
pub(crate) const INLINE_MAX: u64 = 128;
/// Shortest run moved by a libc call. Measured on the reference machine (Zen 3) with the data
/// in L2: the 64-byte vector loop ran at 0.96-0.98x memcpy's time for runs of 256 B to 64 KiB,
/// a memcpy call per run at 1.01-1.03x (from DRAM, shared/notes/cranelift.md has both at
/// 0.96-0.99x; this machine was too loaded to tell them apart). Calls are
/// kept for runs long enough that their overhead vanishes and libc's large-copy paths (`rep
/// movsb`, non-temporal stores for huge runs) can pay off.
pub(crate) const CALL_MIN: u64 = 64 << 10;

/// Bytes moved per iteration of the in-run vector loop.
const LOOP_STEP: u64 = 64;

/// Kernels whose destination has at least this many bytes write their long runs with
/// non-temporal stores: the output cannot stay in cache for its consumer anyway, and ordinary
/// stores first read every destination line (a third more memory traffic). Measured on the
/// reference machine (Zen 3, 32 MiB L3) with 512-byte runs: streaming took 0.81-0.92x
/// memcpy's time from 8 MiB of output on, ordinary stores 1.34-1.46x; at 4 MiB and below
/// ordinary stores won (1.0x against 1.24x), the data staying in cache between calls.
pub const STREAM_MIN_DST: u64 = 8 << 20;

/// The shortest run that is streamed: a whole cache line, so that the write-combining buffers
/// flush full lines (partial lines are slower than ordinary stores).
pub const STREAM_MIN_RUN: u64 = 64;

/// Streamed copies of runs shorter than this prefetch their source ahead of the copy (see
/// [`prefetch_runs`]); longer runs, a few pages each, the hardware prefetchers follow well.
pub const PREFETCH_RUN_MAX: u64 = 4096;

/// How far ahead of the copy a streamed copy prefetches, in bytes of runs.
pub const PREFETCH_DISTANCE: u64 = 4096;

/// How many runs ahead the streaming copy helper prefetches the source of a nest of runs of
/// `bytes` bytes that has `runs` runs: `None` when it does not (runs of at least
/// [`PREFETCH_RUN_MAX`] bytes, or a single run). A nest of short runs that are not back to
/// back at the source (rows read in reverse, every other row) gives the hardware prefetchers a
/// stream they follow badly: a few lines, then a jump. Measured (runs of 256 B to 1 KiB out
/// of 32 to 64 MiB sources): 1.5-2.2x memcpy's time without, 1.0-1.4x with the runs
/// [`PREFETCH_DISTANCE`] bytes ahead prefetched as each run is copied. Where the next run
/// starts soon after a run ends (every other or third row), the helpers prefetch the bytes
/// between them too, so that the source is read as one stream (the JIT's `helpers/ahead.rs`, with
/// its measurements). (On x86-64; elsewhere the helper copies without prefetching.)
pub fn prefetch_runs(bytes: u64, runs: u64) -> Option<u64> {
    (bytes > 0 && bytes < PREFETCH_RUN_MAX && runs > 1).then(|| PREFETCH_DISTANCE.div_ceil(bytes))
}

/// Whether a statement moving runs of `bytes` bytes (by `action`) into a destination of
/// `dst_bytes` bytes writes them with streaming stores.
pub fn streams(action: relayout_ir::LoopAction, bytes: u64, dst_bytes: u64) -> bool {
    !action.is_accumulate() && bytes >= STREAM_MIN_RUN && dst_bytes >= STREAM_MIN_DST
}

/// What one piece of a run does: copy it or fill it.
#[derive(Clone, Copy)]
pub(crate) enum Mover {
    Copy,
    /// Stores a 16-byte pattern: the fill value repeated (see [`fill_pattern`]), made once in
    /// the entry block as an `i8x16` vector. A piece of fewer bytes stores the pattern's low
    /// bytes, which is the value repeated too, since pieces start at multiples of the element
    /// size (a run's length is a multiple of it, and pieces are powers of two at least that
    /// large, placed from either end of the run).
    Fill {
        vector: Value,
        pattern: u128,
    },
    /// Copies through the [`Helper::StreamCopy`](crate::Helper::StreamCopy) function.
    StreamCopy(FuncRef),
    /// Zeroes through the [`Helper::StreamZero`](crate::Helper::StreamZero) function.
    StreamZero(FuncRef),
}

/// The fill value of `dtype` repeated over 16 bytes (every dtype's size divides 16).
pub(crate) fn fill_pattern(value: Scalar, dtype: DType) -> u128 {
    let size = dtype.size() as u32;
    let mut pattern = value.0;
    let mut width = size * 8;
    while width < 128 {
        pattern |= pattern << width;
        width *= 2;
    }
    pattern
}

impl Mover {
    /// A fill mover storing `pattern`, with its vector made at the current point (the entry
    /// block).
    pub(crate) fn fill(b: &mut FunctionBuilder, pattern: u128) -> Mover {
        // A constant; zero bytes lower to one register-zeroing `pxor` (no constant-pool load,
        // where a splat of a zero scalar would clear a general register, move and broadcast).
        let handle = b
            .func
            .dfg
            .constants
            .insert(ConstantData::from(pattern.to_le_bytes().to_vec()));
        let vector = b.ins().vconst(types::I8X16, handle);
        Mover::Fill { vector, pattern }
    }

    /// The byte every byte of the pattern is, when they are all the same (then `memset` can
    /// write it).
    fn memset_byte(self) -> Option<u8> {
        match self {
            Mover::Fill { pattern, .. } => {
                let bytes = pattern.to_le_bytes();
                bytes.iter().all(|&x| x == bytes[0]).then_some(bytes[0])
            }
            _ => None,
        }
    }

    /// Moves `size` (1, 2, 4, 8 or 16) bytes at `delta` from both addresses.
    fn piece(self, b: &mut FunctionBuilder, size: u64, src: Addr, dst: Addr, delta: u64) {
        let Some(ty) = move_type(size) else {
            // The callers only ask for power-of-two sizes up to 16.
            unreachable!("piece of {size} bytes");
        };
        let delta = delta as i64;
        let value = match self {
            Mover::Copy | Mover::StreamCopy(_) => load(b, ty, src, delta),
            Mover::Fill { vector, .. } if size == 16 => vector,
            // The low `size` bytes, zero-extended, as Cranelift's verifier wants immediates of
            // narrow integer types.
            Mover::Fill { pattern, .. } => {
                let low = (pattern as u64) & (u64::MAX >> (64 - 8 * size));
                b.ins().iconst(ty, low as i64)
            }
            Mover::StreamZero(_) => b.ins().iconst(ty, 0),
        };
        store(b, value, dst, delta);
    }

    fn call(
        self,
        b: &mut FunctionBuilder,
        cfg: TargetFrontendConfig,
        bytes: u64,
        src: Addr,
        dst: Addr,
    ) {
        let size = b.ins().iconst(types::I64, bytes as i64);
        let d = dst.value(b, 0);
        match self {
            Mover::Copy => {
                let s = src.value(b, 0);
                b.call_memcpy(cfg, d, s, size);
            }
            Mover::Fill { .. } => {
                let byte = self.memset_byte().unwrap_or(0);
                let byte = b.ins().iconst(types::I8, i64::from(byte));
                b.call_memset(cfg, d, byte, size);
            }
            Mover::StreamCopy(_) | Mover::StreamZero(_) => {
                emit_stream_nest(b, self, bytes, &[], Count::Const(1), src, dst);
            }
        }
    }
}

/// For a streaming mover: the run of `bytes` bytes at every point of `loops` (outermost
/// first, the outermost running `count` times; one run without loops), in one helper call.
/// The nest is written to a stack slot as the helper reads it: per loop, the count and the
/// destination and source strides, three 8-byte words.
pub(crate) fn emit_stream_nest(
    b: &mut FunctionBuilder,
    mover: Mover,
    bytes: u64,
    loops: &[Loop],
    count: Count,
    src: Addr,
    dst: Addr,
) {
    let ptr = b.func.dfg.value_type(dst.base);
    let depth = b.ins().iconst(types::I64, loops.len() as i64);
    let nest = if loops.is_empty() {
        b.ins().iconst(ptr, 0)
    } else {
        let slot = b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            24 * loops.len() as u32,
            3,
        ));
        let nest = b.ins().stack_addr(ptr, slot, 0);
        for (k, l) in loops.iter().enumerate() {
            let n = match (k, count) {
                (0, Count::Dyn(n)) => n,
                (0, Count::Const(n)) => b.ins().iconst(types::I64, n as i64),
                _ => b.ins().iconst(types::I64, l.extent as i64),
            };
            let src_stride = match mover {
                Mover::StreamCopy(_) => l.src_stride,
                _ => 0,
            };
            let dst_stride = b.ins().iconst(types::I64, l.dst_stride);
            let src_stride = b.ins().iconst(types::I64, src_stride);
            let at = 24 * k as i64;
            let at = Addr::new(nest, at);
            store(b, n, at, 0);
            store(b, dst_stride, at, 8);
            store(b, src_stride, at, 16);
        }
        nest
    };
    let size = b.ins().iconst(types::I64, bytes as i64);
    let d = dst.value(b, 0);
    match mover {
        Mover::StreamCopy(f) => {
            let s = src.value(b, 0);
            b.ins().call(f, &[d, s, size, nest, depth]);
        }
        Mover::StreamZero(f) => {
            b.ins().call(f, &[d, size, nest, depth]);
        }
        Mover::Copy | Mover::Fill { .. } => unreachable!("only streaming movers call a nest"),
    }
}

/// Emits a run of `bytes` bytes (at least one) at `src` and `dst`.
pub(crate) fn emit_run(
    b: &mut FunctionBuilder,
    cfg: TargetFrontendConfig,
    mover: Mover,
    bytes: u64,
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    // A streaming mover exists only for runs of at least `STREAM_MIN_RUN` (see `streams`).
    let streaming = matches!(mover, Mover::StreamCopy(_) | Mover::StreamZero(_));
    // A fill whose bytes differ (most non-zero values) cannot use memset: it stays on the
    // vector loop below, however long the run.
    let callable = !matches!(mover, Mover::Fill { .. }) || mover.memset_byte().is_some();
    if (bytes >= CALL_MIN && callable) || streaming {
        mover.call(b, cfg, bytes, src, dst);
    } else if bytes > INLINE_MAX {
        let iterations = bytes / LOOP_STEP;
        let step = LOOP_STEP as i64;
        let src_step = if matches!(mover, Mover::Copy | Mover::StreamCopy(_)) {
            step
        } else {
            0
        };
        counted_loop(
            b,
            Count::Const(iterations),
            src,
            dst,
            (src_step, step),
            &mut |b, s, d| {
                for k in 0..LOOP_STEP / 16 {
                    mover.piece(b, 16, s, d, 16 * k);
                }
                Ok(())
            },
        )?;
        vectors(b, mover, src, dst, iterations * LOOP_STEP, bytes);
    } else if bytes >= 16 {
        vectors(b, mover, src, dst, 0, bytes);
    } else if bytes.is_power_of_two() {
        mover.piece(b, bytes, src, dst, 0);
    } else if bytes > 0 {
        let size = 1u64 << (63 - bytes.leading_zeros());
        mover.piece(b, size, src, dst, 0);
        mover.piece(b, size, src, dst, bytes - size);
    }
    Ok(())
}

/// Moves bytes `from..bytes` (with `bytes >= 16`) as 16-byte vectors, the last one ending at
/// `bytes` and overlapping its predecessor when the length is not a multiple of 16.
fn vectors(b: &mut FunctionBuilder, mover: Mover, src: Addr, dst: Addr, from: u64, bytes: u64) {
    let whole = (bytes - from) / 16;
    for k in 0..whole {
        mover.piece(b, 16, src, dst, from + 16 * k);
    }
    let tail = (bytes - from) % 16;
    if tail != 0 {
        mover.piece(b, 16, src, dst, bytes - 16);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short runs of a nest of several runs are prefetched whole runs ahead, at least
    /// `PREFETCH_DISTANCE` bytes; long runs and single runs are not.
    #[test]
    fn short_runs_are_prefetched_whole_runs_ahead() {
        assert_eq!(prefetch_runs(512, 4), Some(8));
        assert_eq!(prefetch_runs(1000, 4), Some(5));
        assert_eq!(prefetch_runs(4096, 4), None);
        assert_eq!(prefetch_runs(512, 1), None);
    }
}
