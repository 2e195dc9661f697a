//! # relayout-capi
//!
//! relayout's C API: this crate builds `librelayout_capi.so` and `librelayout_capi.a`, whose
//! functions `include/relayout.h` declares. It is a thin layer over the `relayout` facade:
//!
//! - a *kernel* (`relayout_kernel_t`) is a [`relayout::CompiledOp`] behind an opaque pointer,
//!   compiled from the op syntax of the command line
//!   (`SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>`), or a [`relayout::CompiledChain`]
//!   of several ops composed into one kernel (`relayout_compile_chain`), runnable from any
//!   number of threads at once, freed with `relayout_kernel_free`;
//! - an *error* (`relayout_error_t`) is a message and, for an invalid op description, the
//!   conformance category string (`not_divisible`, `unknown_op`, ...), handed to the caller
//!   through an optional `relayout_error_t **` out-parameter and freed with
//!   `relayout_error_free`;
//! - strings that a function returns as `char *` belong to the caller, who frees them with
//!   `relayout_string_free`; strings returned as `const char *` belong to the object they were
//!   read from.
//!
//! No panic crosses the boundary: every function runs its body under
//! [`std::panic::catch_unwind`], and a caught panic becomes an error (or the documented
//! failure value of a function without an error parameter). Every pointer argument is checked
//! for NULL where the header says NULL is not allowed, and a NULL there is an error rather than
//! a crash.
//!
//! The library also exports, from [`runtime`], the helpers that objects written by
//! `relayout aot` may call; they are not in the header.
//!
//! The header is written by hand, with the ownership of every argument and result stated on
//! each declaration; `tests/header.rs` checks that it declares exactly the functions defined
//! here, with the same number of parameters.

#![warn(missing_docs)]

mod compiled;
pub mod runtime;

use compiled::Compiled;

use relayout::ir::TensorType;
use relayout::{Error, ErrorCategory, Op};
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// A compiled op: what `relayout_kernel_t *` points to. Created by [`relayout_compile`],
/// freed by [`relayout_kernel_free`].
#[allow(non_camel_case_types)]
pub struct relayout_kernel {
    op: Compiled,
    input_bytes: usize,
    output_bytes: usize,
    input_dims: Vec<i64>,
    output_dims: Vec<i64>,
}

/// An error: what `relayout_error_t *` points to. Created by the failing function, freed by
/// [`relayout_error_free`].
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct relayout_error {
    message: CString,
    category: Option<CString>,
}

impl relayout_error {
    /// An error with a message and no category.
    fn new(message: impl Into<String>) -> relayout_error {
        relayout_error {
            message: c_string(message.into()),
            category: None,
        }
    }

    /// An error with a message and a conformance category.
    fn with_category(message: impl Into<String>, category: &str) -> relayout_error {
        relayout_error {
            message: c_string(message.into()),
            category: Some(c_string(category.to_string())),
        }
    }

    /// The message, for the Rust tests.
    pub fn message(&self) -> &str {
        self.message.to_str().unwrap_or("")
    }

    /// The category, for the Rust tests.
    pub fn category(&self) -> Option<&str> {
        self.category.as_ref().and_then(|c| c.to_str().ok())
    }
}

impl From<Error> for relayout_error {
    /// The facade's error, typed: an invalid op description keeps its conformance category,
    /// and a buffer of the wrong length is `buffer_length`, the category a direct evaluation
    /// reports for the same mistake. Every other error is relayout's own failure and has none.
    fn from(e: Error) -> relayout_error {
        let category = match &e {
            // The byte API's only run error is a buffer length (the other is of `run_typed`).
            Error::Run(_) => Some(ErrorCategory::BufferLength.as_str()),
            other => other.category(),
        };
        match category {
            Some(c) => relayout_error::with_category(e.to_string(), c),
            None => relayout_error::new(e.to_string()),
        }
    }
}

/// `s` as a C string; an interior NUL (which no message of relayout contains) is replaced so
/// that the text is never lost.
fn c_string(s: String) -> CString {
    CString::new(s.replace('\0', "\\0")).expect("NULs were replaced")
}

/// Stores `e` in `*error` when `error` is not NULL; otherwise drops it.
///
/// # Safety
/// `error` is NULL or valid for a write of one pointer.
unsafe fn set_error(error: *mut *mut relayout_error, e: relayout_error) {
    if !error.is_null() {
        // SAFETY: the caller guarantees `error` is valid for writes when not NULL.
        unsafe { *error = Box::into_raw(Box::new(e)) };
    }
}

/// The text of a caught panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    format!("internal error in relayout (a bug; please report it): {what}")
}

/// Runs `body` so that no panic escapes: its error, or a caught panic turned into an error,
/// goes to `*error` and the function returns `failed`.
///
/// # Safety
/// `error` is NULL or valid for a write of one pointer.
unsafe fn guard<T>(
    error: *mut *mut relayout_error,
    failed: T,
    body: impl FnOnce() -> Result<T, relayout_error>,
) -> T {
    let e = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => return value,
        Ok(Err(e)) => e,
        Err(payload) => relayout_error::new(panic_message(payload.as_ref())),
    };
    // SAFETY: forwarded from the caller.
    unsafe { set_error(error, e) };
    failed
}

/// Runs `body` so that no panic escapes, for the functions without an error parameter: a
/// panic returns `failed`.
fn guard_value<T>(failed: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(failed)
}

/// Reads a NUL-terminated argument, or says which one was NULL or not UTF-8.
///
/// # Safety
/// `s` is NULL or points to a NUL-terminated string that lives for `'a`.
unsafe fn c_str_arg<'a>(s: *const c_char, what: &str) -> Result<&'a str, relayout_error> {
    if s.is_null() {
        return Err(relayout_error::new(format!("{what} is NULL")));
    }
    // SAFETY: not NULL, and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str()
        .map_err(|e| relayout_error::new(format!("{what} is not UTF-8: {e}")))
}

/// The dims of `ty` as `int64_t`s; a dim above `INT64_MAX` (possible only in an empty
/// tensor) is a size overflow.
fn dims_i64(ty: &TensorType) -> Result<Vec<i64>, relayout_error> {
    ty.shape
        .iter()
        .map(|&d| {
            i64::try_from(d).map_err(|_| {
                relayout_error::with_category(
                    format!("{ty}: dim {d} does not fit in an int64_t"),
                    ErrorCategory::SizeOverflow.as_str(),
                )
            })
        })
        .collect()
}

/// The byte size of `ty` as a `size_t`.
fn bytes_usize(ty: &TensorType) -> Result<usize, relayout_error> {
    let overflow =
        |what: String| relayout_error::with_category(what, ErrorCategory::SizeOverflow.as_str());
    let bytes = ty.size_bytes().map_err(|e| overflow(e.to_string()))?;
    usize::try_from(bytes).map_err(|_| overflow(format!("{ty} does not fit in memory")))
}

/// Compiles op text (`Name {attr = value, ...} : tensor<DIMSxTYPE>`) into a kernel.
fn compile_text(text: &str) -> Result<relayout_kernel, relayout_error> {
    let (op, input) = op_and_type(text)?;
    kernel(Compiled::Op(relayout::compile(&op, &input)?))
}

/// The op and input type of op text with a type.
fn op_and_type(text: &str) -> Result<(Op, TensorType), relayout_error> {
    let spec = relayout::parse_op_spec(text)
        .map_err(|e| relayout_error::new(format!("in the op text, {e}")))?;
    let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(Error::from)?;
    Ok((op, spec.input))
}

/// Composes and compiles a chain: the first op's text with its input type, the others
/// without (`DepthToSpace {block_size = 2}`).
fn compile_chain_texts(texts: &[&str]) -> Result<relayout_kernel, relayout_error> {
    let (first, rest) = texts
        .split_first()
        .ok_or_else(|| relayout_error::new("n_ops is 0: a chain needs at least one op"))?;
    let (op, input) = op_and_type(first)?;
    let mut ops = vec![op];
    for (i, text) in rest.iter().enumerate() {
        let (name, attrs) = relayout::parse_chained_op(text)
            .map_err(|e| relayout_error::new(format!("in ops[{}], {e}", i + 1)))?;
        ops.push(Op::from_attrs(&name, &attrs).map_err(Error::from)?);
    }
    kernel(Compiled::Chain(relayout::compile_chain(&ops, &input)?))
}

/// The handle of a compiled op or chain, with its sizes and dims.
fn kernel(compiled: Compiled) -> Result<relayout_kernel, relayout_error> {
    Ok(relayout_kernel {
        input_bytes: bytes_usize(compiled.input_type())?,
        output_bytes: bytes_usize(compiled.output_type())?,
        input_dims: dims_i64(compiled.input_type())?,
        output_dims: dims_i64(compiled.output_type())?,
        op: compiled,
    })
}

/// The text of one stage of a kernel's compilation.
fn ir_text(op: &Compiled, stage: &str) -> Result<String, relayout_error> {
    let stages = op.stages();
    Ok(match stage {
        "lowered" => stages.lowered.to_string(),
        "optimized" => stages.optimized.to_string(),
        "loops" => stages.loops.to_string(),
        "clif" => relayout::clif_text(&stages.loops)?,
        "vcode" => relayout::vcode_text(&stages.loops)?,
        "asm" => relayout::asm_text(&stages.loops)?,
        other => {
            return Err(relayout_error::new(format!(
                "unknown stage \"{other}\"; the stages are lowered, optimized, loops, clif, \
                 vcode and asm"
            )))
        }
    })
}

/// A buffer argument as a slice: NULL is allowed for an empty buffer only.
///
/// # Safety
/// `p` is NULL or valid for reads of `len` bytes for `'a`.
unsafe fn src_slice<'a>(p: *const u8, len: usize) -> Result<&'a [u8], relayout_error> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(relayout_error::new(format!(
            "src is NULL but src_bytes is {len}"
        )));
    }
    // SAFETY: not NULL, and valid for `len` bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Compiles an op (the command line's op syntax) for one input type. Returns the kernel, or
/// NULL with `*error` set (when `error` is not NULL).
///
/// # Safety
/// `op` is NULL or a NUL-terminated string; `error` is NULL or valid for a write of one
/// pointer.
#[no_mangle]
pub unsafe extern "C" fn relayout_compile(
    op: *const c_char,
    error: *mut *mut relayout_error,
) -> *mut relayout_kernel {
    // SAFETY: `error` and `op` as the caller guarantees.
    unsafe {
        guard(error, ptr::null_mut(), || {
            let text = c_str_arg(op, "op")?;
            Ok(Box::into_raw(Box::new(compile_text(text)?)))
        })
    }
}

/// Composes a chain of ops into one kernel and compiles it (`relayout::compile_chain`): one
/// pass over the data, no intermediate buffer. `ops[0]` is an op with its input type, as for
/// [`relayout_compile`]; `ops[1]` to `ops[n_ops - 1]` are written without a type, which the op
/// before each gives (`DepthToSpace {block_size = 2}`). Returns the kernel, or NULL with
/// `*error` set (when `error` is not NULL).
///
/// # Safety
/// `ops` is NULL or valid for reads of `n_ops` pointers, each NULL or a NUL-terminated
/// string; `error` is NULL or valid for a write of one pointer.
#[no_mangle]
pub unsafe extern "C" fn relayout_compile_chain(
    ops: *const *const c_char,
    n_ops: usize,
    error: *mut *mut relayout_error,
) -> *mut relayout_kernel {
    // SAFETY: `error`, `ops` and its strings as the caller guarantees.
    unsafe {
        guard(error, ptr::null_mut(), || {
            if ops.is_null() && n_ops > 0 {
                return Err(relayout_error::new(format!(
                    "ops is NULL but n_ops is {n_ops}"
                )));
            }
            let texts = (0..n_ops)
                .map(|i| c_str_arg(*ops.add(i), &format!("ops[{i}]")))
                .collect::<Result<Vec<&str>, _>>()?;
            Ok(Box::into_raw(Box::new(compile_chain_texts(&texts)?)))
        })
    }
}

/// Runs a kernel from `src` (`src_bytes` long) into `dst` (`dst_bytes` long); both lengths
/// must be the kernel's sizes. `threads` 0 or 1 runs on the calling thread; more splits the
/// work over up to that many threads of a process-wide pool. Returns 0, or -1 with `*error`
/// set.
///
/// # Safety
/// `k` is NULL or a live kernel; `src` is NULL or valid for reads of `src_bytes` bytes, `dst`
/// NULL or valid for writes of `dst_bytes` bytes, and `dst` is not written by anyone else
/// during the call; `error` is NULL or valid for a write of one pointer.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_run(
    k: *const relayout_kernel,
    src: *const std::ffi::c_void,
    src_bytes: usize,
    dst: *mut std::ffi::c_void,
    dst_bytes: usize,
    threads: usize,
    error: *mut *mut relayout_error,
) -> c_int {
    // SAFETY: every pointer as the caller guarantees.
    unsafe {
        guard(error, -1, || {
            let k = k
                .as_ref()
                .ok_or_else(|| relayout_error::new("kernel is NULL"))?;
            if dst_bytes > 0 && dst.is_null() {
                return Err(relayout_error::new(format!(
                    "dst is NULL but dst_bytes is {dst_bytes}"
                )));
            }
            // A `&mut [u8]` must not alias the `&[u8]`: overlapping buffers are refused
            // (the kernel's loops assume that what they read is never what they wrote).
            let (s, d) = (src as usize, dst as usize);
            if src_bytes > 0
                && dst_bytes > 0
                && s < d.saturating_add(dst_bytes)
                && d < s.saturating_add(src_bytes)
            {
                return Err(relayout_error::new(
                    "src and dst overlap; a kernel reads and writes different buffers",
                ));
            }
            let src = src_slice(src.cast(), src_bytes)?;
            let dst: &mut [u8] = if dst_bytes == 0 {
                &mut []
            } else {
                // SAFETY: not NULL, valid for `dst_bytes` bytes, disjoint from `src`.
                std::slice::from_raw_parts_mut(dst.cast(), dst_bytes)
            };
            k.op.run(src, dst, threads)?;
            Ok(0)
        })
    }
}

/// The byte size of a kernel's input, or 0 when `k` is NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_input_bytes(k: *const relayout_kernel) -> usize {
    // SAFETY: as the caller guarantees.
    guard_value(0, || unsafe { k.as_ref() }.map_or(0, |k| k.input_bytes))
}

/// The byte size of a kernel's output, or 0 when `k` is NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_output_bytes(k: *const relayout_kernel) -> usize {
    // SAFETY: as the caller guarantees.
    guard_value(0, || unsafe { k.as_ref() }.map_or(0, |k| k.output_bytes))
}

/// The rank of a kernel's input, or 0 when `k` is NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_input_rank(k: *const relayout_kernel) -> usize {
    // SAFETY: as the caller guarantees.
    guard_value(0, || {
        unsafe { k.as_ref() }.map_or(0, |k| k.input_dims.len())
    })
}

/// Dim `i` of a kernel's input, or -1 when `k` is NULL or `i` is not below the rank.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_input_dim(k: *const relayout_kernel, i: usize) -> i64 {
    // SAFETY: as the caller guarantees.
    guard_value(-1, || {
        unsafe { k.as_ref() }
            .and_then(|k| k.input_dims.get(i).copied())
            .unwrap_or(-1)
    })
}

/// The rank of a kernel's output, or 0 when `k` is NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_output_rank(k: *const relayout_kernel) -> usize {
    // SAFETY: as the caller guarantees.
    guard_value(0, || {
        unsafe { k.as_ref() }.map_or(0, |k| k.output_dims.len())
    })
}

/// Dim `i` of a kernel's output, or -1 when `k` is NULL or `i` is not below the rank.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_output_dim(k: *const relayout_kernel, i: usize) -> i64 {
    // SAFETY: as the caller guarantees.
    guard_value(-1, || {
        unsafe { k.as_ref() }
            .and_then(|k| k.output_dims.get(i).copied())
            .unwrap_or(-1)
    })
}

/// The text of one stage of a kernel's compilation: `"lowered"`, `"optimized"`, `"loops"`,
/// `"clif"`, `"vcode"` or `"asm"` (the last only in builds with the `disas` feature).
/// Returns a new string that the caller frees with [`relayout_string_free`], or NULL with
/// `*error` set.
///
/// # Safety
/// `k` is NULL or a live kernel; `stage` is NULL or a NUL-terminated string; `error` is NULL
/// or valid for a write of one pointer.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_ir(
    k: *const relayout_kernel,
    stage: *const c_char,
    error: *mut *mut relayout_error,
) -> *mut c_char {
    // SAFETY: every pointer as the caller guarantees.
    unsafe {
        guard(error, ptr::null_mut(), || {
            let k = k
                .as_ref()
                .ok_or_else(|| relayout_error::new("kernel is NULL"))?;
            let stage = c_str_arg(stage, "stage")?;
            Ok(c_string(ir_text(&k.op, stage)?).into_raw())
        })
    }
}

/// What `k` does with the bytes of its input, in one line, as a graph optimizer asks it
/// (`relayout::Movement`'s text: "no movement: ... (a view)", "contiguous copy: ...",
/// "permutation: input.reshape(...).transpose(...)", "strided view: as_strided(...)" or
/// "gather: ..."): a new string to free with [`relayout_string_free`], or NULL when `k` is
/// NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_movement(k: *const relayout_kernel) -> *mut c_char {
    // SAFETY: `k` as the caller guarantees.
    let Some(k) = (unsafe { k.as_ref() }) else {
        return ptr::null_mut();
    };
    guard_value(ptr::null_mut(), || {
        c_string(k.op.movement().to_string()).into_raw()
    })
}

/// The kind of [`relayout_kernel_movement`], to branch on: "view", "contiguous copy",
/// "permutation", "strided view" or "gather" (`Movement::kind`); a static string, not to be
/// freed. NULL when `k` is NULL.
///
/// # Safety
/// `k` is NULL or a live kernel.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_movement_kind(k: *const relayout_kernel) -> *const c_char {
    // SAFETY: `k` as the caller guarantees.
    let Some(k) = (unsafe { k.as_ref() }) else {
        return ptr::null();
    };
    guard_value(ptr::null(), || k.op.movement().kind_c().as_ptr())
}

/// Frees a string returned by [`relayout_kernel_ir`] or [`relayout_kernel_movement`]; NULL is
/// allowed and does nothing.
///
/// # Safety
/// `s` is NULL or a string returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn relayout_string_free(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: `s` came from `CString::into_raw` (the caller's contract).
        guard_value((), || drop(unsafe { CString::from_raw(s) }));
    }
}

/// Frees a kernel; NULL is allowed and does nothing. No other thread may be using it.
///
/// # Safety
/// `k` is NULL or a kernel returned by [`relayout_compile`] and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn relayout_kernel_free(k: *mut relayout_kernel) {
    if !k.is_null() {
        // SAFETY: `k` came from `Box::into_raw` (the caller's contract).
        guard_value((), || drop(unsafe { Box::from_raw(k) }));
    }
}

/// An error's message, owned by the error (valid until [`relayout_error_free`]), or NULL when
/// `e` is NULL.
///
/// # Safety
/// `e` is NULL or a live error.
#[no_mangle]
pub unsafe extern "C" fn relayout_error_message(e: *const relayout_error) -> *const c_char {
    // SAFETY: as the caller guarantees.
    guard_value(ptr::null(), || {
        unsafe { e.as_ref() }.map_or(ptr::null(), |e| e.message.as_ptr())
    })
}

/// An error's conformance category (`"not_divisible"`, `"unknown_op"`, `"buffer_length"`,
/// ...), owned by the error, or NULL when the error has none (bad syntax, a NULL argument,
/// relayout's own failures) or `e` is NULL.
///
/// # Safety
/// `e` is NULL or a live error.
#[no_mangle]
pub unsafe extern "C" fn relayout_error_category(e: *const relayout_error) -> *const c_char {
    // SAFETY: as the caller guarantees.
    guard_value(ptr::null(), || {
        unsafe { e.as_ref() }
            .and_then(|e| e.category.as_ref())
            .map_or(ptr::null(), |c| c.as_ptr())
    })
}

/// Frees an error; NULL is allowed and does nothing.
///
/// # Safety
/// `e` is NULL or an error returned by this library and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn relayout_error_free(e: *mut relayout_error) {
    if !e.is_null() {
        // SAFETY: `e` came from `Box::into_raw` (the caller's contract).
        guard_value((), || drop(unsafe { Box::from_raw(e) }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Takes the error a call stored, checking that there is one.
    fn take(e: *mut relayout_error) -> relayout_error {
        assert!(!e.is_null(), "no error was stored");
        *unsafe { Box::from_raw(e) }
    }

    #[test]
    fn a_panic_becomes_an_error() {
        let mut e = ptr::null_mut();
        let r: i32 = unsafe { guard(&mut e, -1, || panic!("boom")) };
        assert_eq!(r, -1);
        let e = take(e);
        assert!(e.message().contains("boom"), "{}", e.message());
        assert_eq!(e.category(), None);
        assert_eq!(guard_value(7, || panic!("boom")), 7);
    }

    #[test]
    fn compiles_runs_and_reports() {
        let op = c"SpaceToDepth {block_size = 2} : tensor<1x4x4x1xui8>";
        let mut e = ptr::null_mut();
        let k = unsafe { relayout_compile(op.as_ptr(), &mut e) };
        assert!(!k.is_null() && e.is_null());
        unsafe {
            assert_eq!(relayout_kernel_input_bytes(k), 16);
            assert_eq!(relayout_kernel_output_rank(k), 4);
            assert_eq!(
                (0..5)
                    .map(|i| relayout_kernel_output_dim(k, i))
                    .collect::<Vec<_>>(),
                [1, 2, 2, 4, -1]
            );
        }
        let src: Vec<u8> = (0..16).collect();
        let mut dst = [0u8; 16];
        let r = unsafe {
            relayout_kernel_run(
                k,
                src.as_ptr().cast(),
                16,
                dst.as_mut_ptr().cast(),
                15,
                1,
                &mut e,
            )
        };
        assert_eq!(r, -1);
        assert_eq!(take(e).category(), Some("buffer_length"));
        let r = unsafe {
            relayout_kernel_run(
                k,
                src.as_ptr().cast(),
                16,
                dst.as_mut_ptr().cast(),
                16,
                2,
                ptr::null_mut(),
            )
        };
        assert_eq!(r, 0);
        assert_eq!(&dst[..4], &[0, 1, 4, 5]);
        unsafe { relayout_kernel_free(k) };
    }
}
