//! One Cranelift function per loop statement: the entry block, the outer range, the nest.

use crate::body::Body;
use crate::copy;
use crate::loops::{self, Count};
use crate::mem::Addr;
use crate::shuffle;
use crate::sum;
use crate::{CodegenError, Helper, Imports};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, Signature, UserFuncName};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use relayout_ir::{LoopKernel, LoopStmt};

/// The signature of every statement function:
/// `extern "C" fn(src: *const u8, dst: *mut u8, start: u64, end: u64)`.
pub fn stmt_signature(call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Translates every statement of `kernel`, in order.
pub fn translate_kernel(
    kernel: &LoopKernel,
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Vec<Function>, CodegenError> {
    (0..kernel.stmts.len())
        .map(|i| translate_stmt(kernel, i, config, imports))
        .collect()
}

/// Translates statement `index` of `kernel` into a function named `%<kernel>_<index>` (the
/// kernel name with characters other than ASCII letters, digits and `_` replaced by `_`).
pub fn translate_stmt(
    kernel: &LoopKernel,
    index: usize,
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Function, CodegenError> {
    if config.pointer_bits() != 64 {
        return Err(CodegenError::PointerWidth {
            bits: config.pointer_bits(),
        });
    }
    let stmt = kernel
        .stmts
        .get(index)
        .ok_or_else(|| CodegenError::NoStatement {
            kernel: kernel.name.clone(),
            index,
            count: kernel.stmts.len(),
        })?;
    if kernel.src.dtype != kernel.dst.dtype {
        return Err(CodegenError::ElementTypes {
            src: kernel.src.dtype,
            dst: kernel.dst.dtype,
        });
    }
    let dtype = kernel.dtype();
    if stmt.bytes == 0 || stmt.bytes % dtype.size() != 0 {
        return Err(CodegenError::BadRun {
            stmt: index,
            bytes: stmt.bytes,
            dtype,
            size: dtype.size(),
        });
    }
    if i64::try_from(stmt.bytes).is_err() {
        return Err(CodegenError::Overflow {
            stmt: index,
            what: "the run length",
        });
    }

    let name = format!("{}_{index}", sanitize(&kernel.name));
    let mut func = Function::with_name_signature(
        UserFuncName::testcase(name),
        stmt_signature(config.default_call_conv),
    );
    let mut ctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut ctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let &[src, dst, start, end] = b.block_params(entry) else {
        unreachable!("the statement signature has four parameters");
    };
    let dst_bytes = kernel
        .dst
        .size_bytes()
        .map_err(|_| CodegenError::Overflow {
            stmt: index,
            what: "the destination size",
        })?;
    // Within a fused band, members write interleaved runs of the same output lines in every
    // band iteration (a padded row's edge elements beside its body): non-temporal stores
    // mixed with ordinary ones on one line flush partial lines and ran 14x slower than
    // memcpy (reflect Pad of 4x256x64x64 f32). So a member streams only when all do.
    // And a statement streams only whole cache lines (runs, offset and strides multiples of
    // 64 bytes): a non-temporal run that starts or ends inside a line leaves that line to be
    // merged with the ordinary stores of its neighbours (the 4-byte edges of an edge Pad of
    // 4x256x64x64 f32 beside streamed 256-byte rows ran 12x slower than memcpy).
    let whole_lines = |s: &relayout_ir::LoopStmt| {
        let line = copy::STREAM_MIN_RUN as i64;
        s.bytes % copy::STREAM_MIN_RUN == 0
            && s.dst_offset % line == 0
            && s.loops.iter().all(|l| l.dst_stride % line == 0)
    };
    let streams =
        |s: &relayout_ir::LoopStmt| copy::streams(s.action, s.bytes, dst_bytes) && whole_lines(s);
    let stream = streams(stmt)
        && kernel
            .bands
            .iter()
            .find(|band| band.members().contains(&index))
            .is_none_or(|band| kernel.stmts[band.members()].iter().all(streams));
    // An accumulate with reduction loops sums in registers: the nest is the loops outside them.
    let summed = sum::reduction_split(stmt).and_then(|split| {
        let terms = sum::terms(&stmt.loops[split..])?;
        let outer = LoopStmt {
            loops: stmt.loops[..split].to_vec(),
            ..stmt.clone()
        };
        Some((outer, terms))
    });
    let (stmt, body) = match summed {
        Some((outer, terms)) => {
            let body = Body::sum(&mut b, dtype, stmt.bytes, terms, config, imports)?;
            (std::borrow::Cow::Owned(outer), body)
        }
        None => {
            let body = Body::new(
                &mut b,
                stmt.action,
                dtype,
                stmt.bytes,
                stream,
                config,
                imports,
            )?;
            (std::borrow::Cow::Borrowed(stmt), body)
        }
    };
    let stmt: &LoopStmt = &stmt;
    let exit = b.create_block();
    // A nest with an empty loop has no points; its function does nothing.
    if !stmt.loops.iter().any(|l| l.extent == 0) {
        emit_range(&mut b, index, stmt, &body, [src, dst, start, end], exit)?;
        if body.streams() {
            // Streaming stores are weakly ordered: fence them before the caller (or the
            // thread that joins this one) reads the destination.
            let fence = imports.import(Helper::StoreFence, b.func)?;
            b.ins().call(fence, &[]);
        }
    }
    b.ins().jump(exit, &[]);
    b.switch_to_block(exit);
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok(func)
}

/// Runs the iterations `[start, min(end, extent))` of the outermost loop, or the single point
/// of a statement without loops when `start < end`. Branches to `exit` when there is nothing
/// to do; otherwise leaves the builder in the block after the nest.
fn emit_range(
    b: &mut FunctionBuilder,
    index: usize,
    stmt: &LoopStmt,
    body: &Body,
    [src, dst, start, end]: [cranelift_codegen::ir::Value; 4],
    exit: cranelift_codegen::ir::Block,
) -> Result<(), CodegenError> {
    let work = b.create_block();
    let Some(outer) = stmt.loops.first() else {
        let any = b.ins().icmp(IntCC::UnsignedLessThan, start, end);
        b.ins().brif(any, work, &[], exit, &[]);
        b.seal_block(work);
        b.switch_to_block(work);
        let s = base(b, src, stmt.src_offset, None);
        let d = base(b, dst, stmt.dst_offset, None);
        return body.emit(b, s, d);
    };
    // Clamping `end` keeps a call with a too-large range inside the verified domain.
    let extent = b.ins().iconst(types::I64, outer.extent as i64);
    let end = b.ins().umin(end, extent);
    let any = b.ins().icmp(IntCC::UnsignedLessThan, start, end);
    b.ins().brif(any, work, &[], exit, &[]);
    b.seal_block(work);
    b.switch_to_block(work);
    let count = b.ins().isub(end, start);
    let src_stride = if body.reads_src() {
        outer.src_stride
    } else {
        0
    };
    let s = base(b, src, stmt.src_offset, Some((start, src_stride)));
    let d = base(b, dst, stmt.dst_offset, Some((start, outer.dst_stride)));
    if let Some(plan) = shuffle::plan(stmt) {
        return shuffle::nest(b, index, stmt, &plan, body, Count::Dyn(count), s, d);
    }
    loops::nest(b, index, body, &stmt.loops, Count::Dyn(count), s, d)
}

/// The address of an operand at the first iteration: `ptr + offset + start * stride`. An
/// offset that fits an immediate stays in the address, so that the loops do not carry it.
fn base(
    b: &mut FunctionBuilder,
    ptr: cranelift_codegen::ir::Value,
    offset: i64,
    start: Option<(cranelift_codegen::ir::Value, i64)>,
) -> Addr {
    let ptr = match start {
        Some((start, stride)) if stride != 0 => {
            // Wrapping arithmetic is exact here: the result is an address inside the buffer.
            let delta = b.ins().imul_imm_s(start, stride);
            b.ins().iadd(ptr, delta)
        }
        _ => ptr,
    };
    // Keep a margin below 2^31 for the offsets that unrolled bodies and run pieces add.
    if offset.unsigned_abs() < 1 << 30 {
        Addr::new(ptr, offset)
    } else {
        Addr::new(b.ins().iadd_imm_s(ptr, offset), 0)
    }
}

/// Function names are CLIF identifiers.
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
