//! # relayout-codegen
//!
//! Translates a loop kernel ([`relayout_ir::LoopKernel`]) into Cranelift IR: one function for
//! the whole kernel ([`translate_kernel_fn`], what the JIT compiles and [`clif_text`] prints:
//! an entry per unit of the schedule, see [`kernel_signature`] and [`RUN_ALL`]), or one
//! function per statement ([`translate_stmt`]: the same nests, for tests and tools that look
//! at one statement), with the signature
//!
//! ```text
//! extern "C" fn(src: *const u8, dst: *mut u8, start: u64, end: u64)
//! ```
//!
//! The function runs the iterations `[start, end)` of the statement's outermost loop (clamped
//! to the loop's extent), so one function serves any split of the statement across threads. A
//! statement without loops runs its single point when `start < end` (callers pass `0, 1`).
//!
//! The generator does what Cranelift does not: loop state lives in block parameters (a
//! down-counter and one pointer per operand that moves), so no index arithmetic is left in the
//! loops; small inner loops are unrolled completely and the innermost remaining loop is
//! unrolled when each run is a single move (see `loops.rs`); contiguous runs are
//! moved with 16-byte vectors (an overlapping last vector covers odd lengths), by a vector
//! loop for medium runs and by a `memcpy`/`memset` call for long runs; `accumulate` adds 16
//! bytes at a time with vector adds for every type but f16 and bf16, which call the
//! [`Helper`] functions that the JIT provides; an `accumulate` with innermost reduction loops
//! (destination stride 0) sums its contributions in registers and stores each run once, and
//! consecutive band members that are alike sums (`relayout_ir::LoopStmt::alike`) share one nest,
//! run once per member with its addresses and counts. Kernels with at least [`STREAM_MIN_DST`] bytes
//! of output write their runs of at least [`STREAM_MIN_RUN`] bytes through the streaming
//! (non-temporal store) helpers instead, one call per loop nest, and fence before they
//! return; the copy helper prefetches the source of short runs a few runs ahead
//! ([`prefetch_runs`]).
//!
//! This crate has no `unsafe` and owns no executable memory: it builds
//! [`cranelift_codegen::ir::Function`]s for a given [`TargetFrontendConfig`]. External
//! functions are named through the [`Imports`] trait, so the same code serves the JIT (which
//! declares them in its module, see [`ModuleImports`]) and the text printer ([`clif_text`]).
//!
//! The generated code trusts the kernel: it must have passed
//! `relayout_ir::verify_loop_kernel`, and the caller must pass buffers of the kernel's sizes
//! that do not overlap. Checking that is the JIT's job.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod accumulate;
mod alike;
mod body;
mod byte_channels;
mod copy;
mod describe;
mod error;
mod every_other;
mod function;
mod imports;
mod loops;
mod mem;
mod phases;
mod shuffle;
mod sum;
mod transpose;

pub use byte_channels::{Deinterleave, Interleave};
pub use copy::{
    prefetch_runs, streams, PREFETCH_DISTANCE, PREFETCH_RUN_MAX, STREAM_MIN_DST, STREAM_MIN_RUN,
};
pub use describe::describe;
pub use error::CodegenError;
pub use every_other::EveryOther;
pub use function::{
    build_function, helper_kernel, kernel_signature, stmt_signature, translate_kernel_fn,
    translate_stmt, translate_variants_fn, HelperRuns, MANY_STATEMENTS, RUN_ALL,
};
pub use imports::{Helper, Imports, ModuleImports, TextImports};
pub use loops::IndexLoop;
pub use sum::{HalfFloat, SumRow, SumRuns};
pub use transpose::TransposeBlocks;

use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use relayout_ir::LoopKernel;
use std::fmt::Write;

/// The target configuration used by [`clif_text`]: 64-bit pointers and the System V calling
/// convention, whatever the host is, so that printed CLIF is the same on every machine.
pub fn text_target_config() -> TargetFrontendConfig {
    TargetFrontendConfig {
        default_call_conv: CallConv::SystemV,
        pointer_width: target_lexicon::PointerWidth::U64,
        page_size_align_log2: 12,
    }
}

/// The CLIF of the kernel's function ([`translate_kernel_fn`], what the JIT compiles), preceded
/// by [`kernel_comments`]. The text depends only on the kernel (see [`text_target_config`]),
/// so it is fit for snapshot tests.
pub fn clif_text(k: &LoopKernel) -> Result<String, CodegenError> {
    let func = translate_kernel_fn(k, &[], text_target_config(), &mut TextImports)?;
    let mut out = kernel_comments(k);
    out.push_str(&func.display().to_string());
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// The schedule of `k` as `;` comment lines, for the listings of its function: what each
/// entry runs (a statement, or a fused band and its members, as the loop IR prints them) and,
/// under it, what code generation makes of each statement ([`describe`]).
pub fn kernel_comments(k: &LoopKernel) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "; @{}: entry e runs unit e below over iterations [start, end) of its outer loop; \
         entry -1 runs them all in order",
        k.name
    );
    for (e, unit) in k.units().into_iter().enumerate() {
        let _ = writeln!(out, "; entry {e}:");
        let text = k.unit_text_with(unit, |i| describe(k, i).map(|n| format!("codegen: {n}")));
        for line in text.lines() {
            let _ = writeln!(out, ";   {line}");
        }
    }
    out
}

/// What the unit tests of several modules build nests from.
#[cfg(test)]
mod test_support {
    use relayout_ir::Loop;

    /// A loop of `extent` iterations with these strides.
    pub(crate) fn lp(extent: u64, src_stride: i64, dst_stride: i64) -> Loop {
        Loop {
            extent,
            src_stride,
            dst_stride,
        }
    }
}
