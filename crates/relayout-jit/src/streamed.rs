//! Kernels that run without generated code of their own.
//!
//! When every statement of a kernel streams its whole nest through one helper call (a copy or
//! a fill of zeros into an output of 8 MiB or more, in runs of whole cache lines, a transpose
//! of 4- or 8-byte elements into such an output, in register blocks, or rows of every other
//! source element: see
//! `relayout_codegen::streamed_kernel`), its generated function would only lay out each
//! nest and call the helper. The JIT makes those calls itself instead, with the same loops,
//! strides and offsets, and compiles nothing: Cranelift's fixed cost and its register
//! allocator's work around the calls were most of such a kernel's compile time (a padded
//! SpaceToBatchND of ten statements took about 1 ms, almost all of it in Cranelift).
//!
//! The entries keep the contract of a kernel function (see `module.rs`): entry `k` runs
//! statement `k` over the iterations `[start, min(end, extent))` of its outer loop (a
//! statement without loops: its one run when `start < end`), `RUN_ALL` runs every statement in
//! order, and every call ends with a store fence, as the generated function does.

use crate::helpers::{
    relayout_store_fence, relayout_stream_copy_nest, relayout_stream_every_other_nest,
    relayout_stream_transpose_nest, relayout_stream_zero_nest, StreamLoop,
};
use relayout_codegen::{StreamedRuns, RUN_ALL};
use relayout_ir::LoopStmt;

/// One statement of a streamed kernel, as the helper reads its nest.
pub(crate) struct StreamedStmt {
    runs: StreamedRuns,
    bytes: u64,
    src_offset: i64,
    dst_offset: i64,
    /// The loops, outermost first, with their extents as counts (for a transpose, the nest
    /// of its register blocks; for a gather of every other element, the nest of its rows).
    loops: Vec<StreamLoop>,
}

impl StreamedStmt {
    pub(crate) fn new(stmt: &LoopStmt, runs: StreamedRuns) -> StreamedStmt {
        StreamedStmt {
            runs,
            bytes: stmt.bytes,
            src_offset: stmt.src_offset,
            dst_offset: stmt.dst_offset,
            loops: match runs {
                StreamedRuns::Transpose(blocks) => blocks.loops(stmt),
                StreamedRuns::EveryOther(rows) => rows.loops(stmt),
                StreamedRuns::Copy | StreamedRuns::Zero => stmt.loops.clone(),
            }
            .iter()
            .map(|l| StreamLoop {
                count: l.extent,
                dst_stride: l.dst_stride,
                src_stride: match runs {
                    StreamedRuns::Zero => 0,
                    StreamedRuns::Copy
                    | StreamedRuns::Transpose(_)
                    | StreamedRuns::EveryOther(_) => l.src_stride,
                },
            })
            .collect(),
        }
    }

    /// Runs the iterations `[start, min(end, extent))` of the outer loop.
    ///
    /// # Safety
    /// The statement comes from a verified kernel (every run of its nest lies inside its
    /// tensors), `src` and `dst` point to buffers of exactly the kernel's tensor sizes, which
    /// do not overlap, and no other thread touches the destination bytes of these iterations.
    unsafe fn run(&self, src: *const u8, dst: *mut u8, start: u64, end: u64) {
        if self.loops.iter().any(|l| l.count == 0) {
            // A nest with an empty loop has no points.
            return;
        }
        let (src, dst) = (
            src.wrapping_offset(self.src_offset as isize),
            dst.wrapping_offset(self.dst_offset as isize),
        );
        let Some(outer) = self.loops.first() else {
            if start < end {
                // SAFETY: the caller's contract; no loops, one run.
                unsafe { self.call(src, dst, &[]) };
            }
            return;
        };
        let end = end.min(outer.count);
        if start >= end {
            return;
        }
        if start == 0 && end == outer.count {
            // SAFETY: the caller's contract, for the whole nest.
            unsafe { self.call(src, dst, &self.loops) };
            return;
        }
        // A piece of the outer loop: the same nest from iteration `start`, `end - start` of
        // them. The offsets are inside the buffers by the caller's contract.
        let mut loops = self.loops.clone();
        loops[0].count = end - start;
        let (src, dst) = (
            src.wrapping_offset((start as i64).wrapping_mul(outer.src_stride) as isize),
            dst.wrapping_offset((start as i64).wrapping_mul(outer.dst_stride) as isize),
        );
        // SAFETY: the caller's contract, for these iterations.
        unsafe { self.call(src, dst, &loops) };
    }

    /// One helper call for the runs of `loops` from `src` and `dst`.
    ///
    /// # Safety
    /// As [`StreamedStmt::run`], for every point of `loops`.
    unsafe fn call(&self, src: *const u8, dst: *mut u8, loops: &[StreamLoop]) {
        let (nest, depth) = (loops.as_ptr(), loops.len() as u64);
        // SAFETY: the caller's contract: every run of the nest lies inside both buffers, which
        // do not overlap, and `nest` points to `depth` loops.
        unsafe {
            match self.runs {
                StreamedRuns::Copy => relayout_stream_copy_nest(dst, src, self.bytes, nest, depth),
                StreamedRuns::Zero => relayout_stream_zero_nest(dst, self.bytes, nest, depth),
                StreamedRuns::Transpose(blocks) => relayout_stream_transpose_nest(
                    dst,
                    src,
                    self.bytes,
                    [blocks.src_row, blocks.dst_row],
                    nest,
                    depth,
                ),
                StreamedRuns::EveryOther(rows) => {
                    relayout_stream_every_other_nest(dst, src, self.bytes, rows.count, nest, depth)
                }
            }
        }
    }
}

/// Runs entry `entry` of a streamed kernel (`RUN_ALL`: every statement in order) over
/// `[start, end)`, as its generated function would, then fences the streaming stores.
///
/// # Safety
/// As [`StreamedStmt::run`], for every statement run.
pub(crate) unsafe fn run_entry(
    stmts: &[StreamedStmt],
    src: *const u8,
    dst: *mut u8,
    entry: u64,
    start: u64,
    end: u64,
) {
    if entry == RUN_ALL {
        for stmt in stmts {
            // SAFETY: the caller's contract.
            unsafe { stmt.run(src, dst, start, end) };
        }
    } else if let Some(stmt) = usize::try_from(entry).ok().and_then(|k| stmts.get(k)) {
        // SAFETY: the caller's contract.
        unsafe { stmt.run(src, dst, start, end) };
    }
    relayout_store_fence();
}
