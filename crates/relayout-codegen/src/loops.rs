//! Loop nests with pointer-bumping induction variables.
//!
//! Every loop is a single block whose parameters are the loop state: a down-counter and one
//! pointer per operand that moves (an operand with stride 0, or the source of a fill, keeps
//! its pointer from outside). Loops are bottom-tested, so the count must be at least one on
//! entry; the nest is skipped as a whole when an extent is zero. Cranelift does no strength
//! reduction, so this shape is what keeps multiplications out of the loops.

use crate::body::Body;
use crate::mem::Addr;
use crate::CodegenError;
use cranelift_codegen::ir::{types, BlockArg, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::Loop;

/// An iteration count: known when the loop is not the outermost, else computed from the
/// function's `start` and `end` arguments.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Count {
    Const(u64),
    /// A runtime count that is at least one.
    Dyn(Value),
}

/// What the loop body is given: the operands' addresses at this iteration.
pub(crate) type LoopBody<'a> =
    dyn FnMut(&mut FunctionBuilder, Addr, Addr) -> Result<(), CodegenError> + 'a;

/// Emits `count` iterations of `body`, moving the source by `src_step` and the destination by
/// `dst_step` bytes per iteration. Leaves the builder in the block after the loop.
pub(crate) fn counted_loop(
    b: &mut FunctionBuilder,
    count: Count,
    src: Addr,
    dst: Addr,
    (src_step, dst_step): (i64, i64),
    body: &mut LoopBody<'_>,
) -> Result<(), CodegenError> {
    let n = match count {
        Count::Const(0) => return Ok(()),
        // One iteration needs no loop.
        Count::Const(1) => return body(b, src, dst),
        Count::Const(n) => b.ins().iconst(types::I64, n as i64),
        Count::Dyn(n) => n,
    };
    let ptr = b.func.dfg.value_type(src.base);
    let header = b.create_block();
    let exit = b.create_block();
    let counter = b.append_block_param(header, types::I64);
    let mut args: Vec<BlockArg> = vec![n.into()];
    let src_in = if src_step != 0 {
        args.push(src.base.into());
        Addr::new(b.append_block_param(header, ptr), src.offset)
    } else {
        src
    };
    let dst_in = if dst_step != 0 {
        args.push(dst.base.into());
        Addr::new(b.append_block_param(header, ptr), dst.offset)
    } else {
        dst
    };
    b.ins().jump(header, &args);

    b.switch_to_block(header);
    body(b, src_in, dst_in)?;
    let next = b.ins().iadd_imm_s(counter, -1);
    let mut back: Vec<BlockArg> = vec![next.into()];
    if src_step != 0 {
        back.push(b.ins().iadd_imm_s(src_in.base, src_step).into());
    }
    if dst_step != 0 {
        back.push(b.ins().iadd_imm_s(dst_in.base, dst_step).into());
    }
    b.ins().brif(next, header, &back, exit, &[]);
    b.seal_block(header);
    b.switch_to_block(exit);
    b.seal_block(exit);
    Ok(())
}

/// Emits the loop nest `loops` (outermost first, none empty) around `body`, the outermost
/// running `count` times.
pub(crate) fn nest(
    b: &mut FunctionBuilder,
    stmt: usize,
    body: &Body,
    loops: &[Loop],
    count: Count,
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    let Some((l, inner)) = loops.split_first() else {
        return body.emit(b, src, dst);
    };
    let steps = (src_stride(body, l), l.dst_stride);
    if inner.is_empty() && body.unroll() > 1 && l.extent >= body.unroll() {
        return unrolled(b, stmt, body, l, count, src, dst);
    }
    counted_loop(b, count, src, dst, steps, &mut |b, s, d| {
        let count = Count::Const(inner.first().map_or(1, |l| l.extent));
        nest(b, stmt, body, inner, count, s, d)
    })
}

/// A fill never reads its source, so its source pointer never moves.
fn src_stride(body: &Body, l: &Loop) -> i64 {
    if body.reads_src() {
        l.src_stride
    } else {
        0
    }
}

/// The innermost loop, unrolled: `U` bodies per iteration at immediate offsets, then the
/// remaining `count mod U` iterations (straight-line when the count is known, else a loop).
fn unrolled(
    b: &mut FunctionBuilder,
    stmt: usize,
    body: &Body,
    l: &Loop,
    count: Count,
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    let u = body.unroll();
    let overflow = || CodegenError::Overflow {
        stmt,
        what: "the unrolled loop's step",
    };
    let (ss, ds) = (src_stride(body, l), l.dst_stride);
    // `u <= extent`, and a verified kernel keeps `(extent - 1) * stride` inside its tensor,
    // so these only fail on kernels that were not verified.
    let big = (
        ss.checked_mul(u as i64).ok_or_else(overflow)?,
        ds.checked_mul(u as i64).ok_or_else(overflow)?,
    );
    let mut unrolled_body = |b: &mut FunctionBuilder, s: Addr, d: Addr| {
        for j in 0..u as i64 {
            let s = s.plus(j * ss).ok_or_else(overflow)?;
            let d = d.plus(j * ds).ok_or_else(overflow)?;
            body.emit(b, s, d)?;
        }
        Ok(())
    };
    match count {
        Count::Const(n) => {
            let main = n / u;
            counted_loop(b, Count::Const(main), src, dst, big, &mut unrolled_body)?;
            for j in main * u..n {
                let at = |a: Addr, stride: i64| {
                    let delta = stride.checked_mul(j as i64)?;
                    a.plus(delta)
                };
                let s = at(src, ss).ok_or_else(overflow)?;
                let d = at(dst, ds).ok_or_else(overflow)?;
                body.emit(b, s, d)?;
            }
            Ok(())
        }
        Count::Dyn(n) => {
            let shift = i64::from(u.trailing_zeros());
            let main = b.ins().ushr_imm_u(n, shift);
            let rest = b.ins().band_imm_u(n, (u - 1) as i64);
            let main_block = b.create_block();
            let after_main = b.create_block();
            b.ins().brif(main, main_block, &[], after_main, &[]);
            b.seal_block(main_block);

            b.switch_to_block(main_block);
            counted_loop(b, Count::Dyn(main), src, dst, big, &mut unrolled_body)?;
            b.ins().jump(after_main, &[]);
            b.seal_block(after_main);

            b.switch_to_block(after_main);
            let rest_block = b.create_block();
            let done = b.create_block();
            b.ins().brif(rest, rest_block, &[], done, &[]);
            b.seal_block(rest_block);

            b.switch_to_block(rest_block);
            // The remainder starts `main * U` iterations in.
            let skip = |b: &mut FunctionBuilder, a: Addr, step: i64| {
                if step == 0 {
                    a
                } else {
                    let delta = b.ins().imul_imm_s(main, step);
                    Addr::new(b.ins().iadd(a.base, delta), a.offset)
                }
            };
            let s = skip(b, src, big.0);
            let d = skip(b, dst, big.1);
            counted_loop(b, Count::Dyn(rest), s, d, (ss, ds), &mut |b, s, d| {
                body.emit(b, s, d)
            })?;
            b.ins().jump(done, &[]);
            b.seal_block(done);
            b.switch_to_block(done);
            Ok(())
        }
    }
}
