//! The helpers that generated code calls (f16/bf16 adds, streaming stores and their fence),
//! exported under their symbols (`relayout_codegen::Helper::symbol`) so that an object file
//! written by `relayout aot` that calls them links against librelayout_capi. They are not
//! part of the API in `relayout.h`: the header of such an object says that the program must
//! link the library, and the object calls them itself.
//!
//! Each one forwards to the function the JIT calls (`relayout_jit::runtime`), so AOT and
//! JIT code compute the same bits. None of them panics, so no unwinding guard is needed (and
//! the adds run once per element, where a guard would cost).

use relayout_jit::runtime;

/// The f16 sum of the low 16 bits of both arguments, rounded once.
#[no_mangle]
pub extern "C" fn relayout_f16_add(acc: u32, x: u32) -> u32 {
    runtime::relayout_f16_add(acc, x)
}

/// The bf16 sum of the low 16 bits of both arguments, rounded once.
#[no_mangle]
pub extern "C" fn relayout_bf16_add(acc: u32, x: u32) -> u32 {
    runtime::relayout_bf16_add(acc, x)
}

/// Copies a run of `len` bytes with streaming stores at every point of a nest of `depth`
/// loops.
///
/// # Safety
/// As `relayout_jit::runtime::relayout_stream_copy_nest`: `loops` points to `depth` loops,
/// every run is valid for reads at the source and writes at the destination, and they do
/// not overlap. Generated code guarantees it for a verified kernel on buffers of the right
/// sizes.
#[no_mangle]
pub unsafe extern "C" fn relayout_stream_copy_nest(
    dst: *mut u8,
    src: *const u8,
    len: u64,
    loops: *const runtime::StreamLoop,
    depth: u64,
) {
    // SAFETY: forwarded from the caller.
    unsafe { runtime::relayout_stream_copy_nest(dst, src, len, loops, depth) }
}

/// Zeroes a run of `len` bytes with streaming stores at every point of a nest of `depth`
/// loops.
///
/// # Safety
/// `loops` points to `depth` loops, and every run is valid for writes.
#[no_mangle]
pub unsafe extern "C" fn relayout_stream_zero_nest(
    dst: *mut u8,
    len: u64,
    loops: *const runtime::StreamLoop,
    depth: u64,
) {
    // SAFETY: forwarded from the caller.
    unsafe { runtime::relayout_stream_zero_nest(dst, len, loops, depth) }
}

/// Orders the streaming stores made so far before any later store.
#[no_mangle]
pub extern "C" fn relayout_store_fence() {
    runtime::relayout_store_fence()
}
