//! One Cranelift function per loop statement: the entry block, the outer range, the nest.

use crate::alike;
use crate::body::Body;
use crate::byte_channels::{Deinterleave, Interleave};
use crate::copy;
use crate::every_other::EveryOther;
use crate::loops::{Count, Emitter, IndexLoop};
use crate::mem::Addr;
use crate::phases;
use crate::shuffle;
use crate::sum::{self, SumRuns};
use crate::transpose::TransposeBlocks;
use crate::{CodegenError, Helper, Imports};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, Block, Function, InstBuilder, Signature, UserFuncName, Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use relayout_ir::{Band, Loop, LoopAction, LoopKernel, LoopStmt, Unit};
use std::borrow::Cow;

/// The signature of every statement function:
/// `extern "C" fn(src: *const u8, dst: *mut u8, start: u64, end: u64)`.
pub fn stmt_signature(call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..4 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// The signature of a kernel function ([`translate_kernel_fn`]):
/// `extern "C" fn(src: *const u8, dst: *mut u8, entry: u64, start: u64, end: u64)`.
pub fn kernel_signature(call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..5 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Builds a function named `name` with `signature`: `body` gets a builder in the function's
/// entry block (sealed, with one parameter per parameter of `signature`) and those
/// parameters, and leaves the builder in the block that returns. The function returns no
/// value; every block is sealed and the function is finalized for `config`.
///
/// The setup shared by [`translate_stmt`], [`translate_kernel_fn`] and the entry points of
/// the JIT's ahead-of-time objects.
pub fn build_function<const N: usize, T, E>(
    name: UserFuncName,
    signature: Signature,
    config: TargetFrontendConfig,
    body: impl FnOnce(&mut FunctionBuilder, [Value; N]) -> Result<T, E>,
) -> Result<(Function, T), E> {
    let mut func = Function::with_name_signature(name, signature);
    let mut ctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut ctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    b.seal_block(entry);
    let params: [Value; N] = b
        .block_params(entry)
        .try_into()
        .unwrap_or_else(|_| panic!("the signature has {N} parameters"));
    let value = body(&mut b, params)?;
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(config);
    Ok((func, value))
}

/// Refuses targets whose pointers are not 64 bits wide: the generated code does its address
/// arithmetic in 64-bit integers.
fn check_pointer_width(config: TargetFrontendConfig) -> Result<(), CodegenError> {
    if config.pointer_bits() != 64 {
        return Err(CodegenError::PointerWidth {
            bits: config.pointer_bits(),
        });
    }
    Ok(())
}

/// The `entry` argument of a kernel function that runs every unit of the schedule in order,
/// each over its whole outer loop (pass `start = 0` and `end = u64::MAX`).
pub const RUN_ALL: u64 = u64::MAX;

/// Translates a whole kernel into one function with [`kernel_signature`], named
/// `%<kernel>` (sanitised as in [`translate_stmt`]). Its *entries* are the units of the
/// kernel's schedule (`LoopKernel::units`: a statement alone or a band), in order, then the
/// statements of `variants`: `(index, stmt)` runs `stmt` in place of statement `index` (a
/// reordering of its loops that the caller has verified, such as the JIT's wide variants; it
/// must not be in a band). A call with `entry = e` runs entry `e` over the iterations `[start,
/// min(end, extent))` of its outermost loop (a band: of the loop its members share, every
/// member in order at each iteration), and a call with [`RUN_ALL`] runs the units one after
/// the other from `start`. A statement without loops runs when `start < end`; an entry out of
/// range does nothing.
///
/// One function per kernel rather than per statement: Cranelift's fixed cost per function
/// (contexts, register allocation set-up, one more symbol to link) was most of the compile
/// time of small kernels, and a band's iterations become a loop around its members' code
/// instead of a call per member and iteration.
pub fn translate_kernel_fn(
    kernel: &LoopKernel,
    variants: &[(usize, LoopStmt)],
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Function, CodegenError> {
    translate_entries(kernel, &kernel.units(), variants, config, imports)
}

/// A function with [`kernel_signature`] whose entries are only `variants` (entry `k` runs
/// variant `k`, as in [`translate_kernel_fn`]); [`RUN_ALL`] does nothing. The JIT compiles
/// its wide variants this way, when a threaded run first needs them.
pub fn translate_variants_fn(
    kernel: &LoopKernel,
    variants: &[(usize, LoopStmt)],
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Function, CodegenError> {
    translate_entries(kernel, &[], variants, config, imports)
}

/// A kernel function whose entries are `units`, then `variants`.
fn translate_entries(
    kernel: &LoopKernel,
    units: &[Unit],
    variants: &[(usize, LoopStmt)],
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Function, CodegenError> {
    check_pointer_width(config)?;
    for (index, stmt) in kernel.stmts.iter().enumerate() {
        check_stmt(kernel, index, stmt)?;
    }
    for (index, stmt) in variants {
        if *index >= kernel.stmts.len() {
            return Err(CodegenError::NoStatement {
                kernel: kernel.name.clone(),
                index: *index,
                count: kernel.stmts.len(),
            });
        }
        check_stmt(kernel, *index, stmt)?;
    }
    let src_bytes = src_bytes(kernel);
    let name = UserFuncName::testcase(sanitize(&kernel.name));
    let signature = kernel_signature(config.default_call_conv);
    let (func, ()) = build_function(
        name,
        signature,
        config,
        |b, [src, dst, which, start, end]| {
            // Each body's constants and imports are made at the top of its entry's block,
            // which dominates all their uses: made in the function's entry block instead, they
            // would be live across every other entry (and its calls), which costs the
            // register allocator time.
            let mut streams = false;

            let count = units.len() + variants.len();
            let blocks: Vec<_> = (0..count).map(|_| b.create_block()).collect();
            let exit = b.create_block();
            let all = b.ins().icmp_imm_u(IntCC::Equal, which, RUN_ALL as i64);
            emit_dispatch(b, which, all, &blocks, units.len(), exit);

            for (k, &block) in blocks.iter().enumerate() {
                b.switch_to_block(block);
                // Run-all goes on to the next unit; the variants are never part of it. An
                // entry with no next unit is done at the exit.
                let next = blocks.get(k + 1).copied().filter(|_| k + 1 < units.len());
                let done = if next.is_some() {
                    b.create_block()
                } else {
                    exit
                };
                let args = [src, dst, start, end];
                match (units.get(k), variants.get(k.wrapping_sub(units.len()))) {
                    (Some(&Unit::Stmt(i)), _) => {
                        let (stmt, body) =
                            prepare(b, kernel, i, &kernel.stmts[i], config, imports)?;
                        streams |= body.streams();
                        emit_unit_stmt(b, i, &stmt, &body, src_bytes, args, done)?
                    }
                    (Some(&Unit::Band(band)), _) => {
                        emit_band(b, kernel, band, src_bytes, args, &mut |b, i| {
                            let (stmt, body) =
                                prepare(b, kernel, i, &kernel.stmts[i], config, imports)?;
                            streams |= body.streams();
                            Ok((stmt, body))
                        })?
                    }
                    (None, Some((i, stmt))) => {
                        let (stmt, body) = prepare(b, kernel, *i, stmt, config, imports)?;
                        streams |= body.streams();
                        emit_unit_stmt(b, *i, &stmt, &body, src_bytes, args, done)?
                    }
                    (None, None) => unreachable!("one block per entry"),
                }
                b.ins().jump(done, &[]);
                if let Some(next) = next {
                    b.switch_to_block(done);
                    b.ins().brif(all, next, &[], exit, &[]);
                }
            }
            b.switch_to_block(exit);
            if streams {
                // Streaming stores are weakly ordered: fence them before the caller (or the thread
                // that joins this one) reads the destination.
                let fence = imports.import(Helper::StoreFence, b.func)?;
                b.ins().call(fence, &[]);
            }
            Ok(())
        },
    )?;
    Ok(func)
}

/// Entries of a kernel function up to this many are found by comparisons, more by a jump
/// table. A table's edges (split where their target has other predecessors) cost Cranelift
/// more blocks than a few compares.
const COMPARED_ENTRIES: usize = 4;

/// Branches from the function's entry block to `blocks[which]`, or to `blocks[0]` when `all`
/// (`which` is [`RUN_ALL`] and the first `units` blocks are units, which run-all runs in
/// order), or to `exit` when `which` is out of range.
fn emit_dispatch(
    b: &mut FunctionBuilder,
    which: Value,
    all: Value,
    blocks: &[Block],
    units: usize,
    exit: Block,
) {
    if blocks.is_empty() {
        // A kernel without statements (an empty tensor).
        b.ins().jump(exit, &[]);
        return;
    }
    let first = blocks.first().copied().filter(|_| units > 0);
    if let (Some(first), 1) = (first, blocks.len()) {
        // One entry, which run-all runs too.
        let zero = b.ins().icmp_imm_u(IntCC::Equal, which, 0);
        let run = b.ins().bor(all, zero);
        b.ins().brif(run, first, &[], exit, &[]);
        return;
    }
    let dispatch = b.create_block();
    match first {
        Some(first) => b.ins().brif(all, first, &[], dispatch, &[]),
        // Nothing to run all of: `RUN_ALL` is out of range.
        None => b.ins().jump(dispatch, &[]),
    };
    b.switch_to_block(dispatch);
    switch(b, which, blocks, exit);
}

/// Branches to `blocks[which]`, or to `exit` when `which` is out of range: by comparisons
/// for a few blocks, else by a jump table.
pub(crate) fn switch(b: &mut FunctionBuilder, which: Value, blocks: &[Block], exit: Block) {
    if blocks.len() <= COMPARED_ENTRIES {
        for (k, &block) in blocks.iter().enumerate() {
            let is_k = b.ins().icmp_imm_u(IntCC::Equal, which, k as i64);
            let next = if k + 1 < blocks.len() {
                b.create_block()
            } else {
                exit
            };
            b.ins().brif(is_k, block, &[], next, &[]);
            if next != exit {
                b.switch_to_block(next);
            }
        }
        return;
    }
    let table: Vec<_> = blocks
        .iter()
        .map(|&block| b.func.dfg.block_call(block, &[]))
        .collect();
    let default = b.func.dfg.block_call(exit, &[]);
    let jt = b
        .func
        .create_jump_table(cranelift_codegen::ir::JumpTableData::new(default, &table));
    // `br_table` takes a 32-bit index: larger entries go to the default.
    let small = b
        .ins()
        .icmp_imm_u(IntCC::UnsignedLessThan, which, blocks.len() as i64);
    let in_table = b.create_block();
    b.ins().brif(small, in_table, &[], exit, &[]);
    b.switch_to_block(in_table);
    let index32 = b.ins().ireduce(types::I32, which);
    b.ins().br_table(index32, jt);
}

/// One statement's range, as [`translate_stmt`] runs it; leaves the builder in a block that
/// falls through to `done`.
fn emit_unit_stmt(
    b: &mut FunctionBuilder,
    index: usize,
    stmt: &LoopStmt,
    body: &Body,
    src_bytes: u64,
    args: [cranelift_codegen::ir::Value; 4],
    done: cranelift_codegen::ir::Block,
) -> Result<(), CodegenError> {
    // A nest with an empty loop has no points.
    if stmt.loops.iter().any(|l| l.extent == 0) {
        return Ok(());
    }
    emit_range(b, index, stmt, body, src_bytes, args, done)
}

/// Makes a band member's body and nest (see [`prepare`]) at the builder's point.
type Prepare<'a, 'k> =
    dyn FnMut(&mut FunctionBuilder, usize) -> Result<(Cow<'k, LoopStmt>, Body), CodegenError> + 'a;

/// A band: for each iteration `i` of `[start, min(end, extent))` of the outermost of its
/// shared loops and every iteration of the others, every unit inside it at that point, in
/// order (see [`emit_band_units`]). Leaves the builder in the block after the loops.
///
/// `prepare` makes a member's body and nest (see [`prepare`]) where the member's nest starts,
/// inside the band's loops. Made before the loops, a body's constants (a fill's pattern
/// vector) would be live across every other member's loops, which costs the register
/// allocator a little (in instructions of a compile: 1.1% of col2im_3d's and of a constant
/// Pad's, 1.6% of an 11x11 Im2Col's).
fn emit_band<'k>(
    b: &mut FunctionBuilder,
    kernel: &'k LoopKernel,
    band: Band,
    src_bytes: u64,
    [src, dst, start, end]: [Value; 4],
    prepare: &mut Prepare<'_, 'k>,
) -> Result<(), CodegenError> {
    let shared = band_loops(kernel, band, 0)?;
    // Members share their outer loops, so an empty loop anywhere empties only that member.
    let limit = b.ins().iconst(types::I64, shared[0].extent as i64);
    let end = b.ins().umin(end, limit);
    let mut index: Vec<IndexLoop> = Vec::with_capacity(band.depth);
    index.push(IndexLoop::open(b, start, end));
    index.extend(shared[1..].iter().map(|l| whole_loop(b, l)));
    emit_band_units(b, kernel, band, &mut index, src_bytes, [src, dst], prepare)?;
    close_index_loops(b, index);
    Ok(())
}

/// The shared loops of `band` from loop `from` on (those of the bands it is nested in come
/// before): its first member's, which its prepared nest keeps.
fn band_loops(kernel: &LoopKernel, band: Band, from: usize) -> Result<&[Loop], CodegenError> {
    let loops = &kernel.stmts[band.first].loops;
    let depth = band.depth.max(1);
    loops
        .get(from..depth)
        .filter(|shared| !shared.is_empty())
        .ok_or(CodegenError::BandDepth {
            stmt: band.first,
            loops: loops.len(),
            depth,
        })
}

/// Opens a loop over all of `l`'s iterations (a band's shared loop inside its outermost).
fn whole_loop(b: &mut FunctionBuilder, l: &Loop) -> IndexLoop {
    let from = b.ins().iconst(types::I64, 0);
    let to = b.ins().iconst(types::I64, l.extent as i64);
    IndexLoop::open(b, from, to)
}

/// Closes the loops of `index`, innermost first, each advancing its index by one.
fn close_index_loops(b: &mut FunctionBuilder, index: Vec<IndexLoop>) {
    for level in index.into_iter().rev() {
        let next = b.ins().iadd_imm_u(level.index, 1);
        level.close(b, next);
    }
}

/// The units inside `band` at the point `index` of its shared loops (one index per loop),
/// in order: a member's nest inside them, from pointers advanced by every shared index; a
/// band nested in it inside loops over its further shared loops.
fn emit_band_units<'k>(
    b: &mut FunctionBuilder,
    kernel: &'k LoopKernel,
    band: Band,
    index: &mut Vec<IndexLoop>,
    src_bytes: u64,
    [src, dst]: [Value; 2],
    prepare: &mut Prepare<'_, 'k>,
) -> Result<(), CodegenError> {
    let depth = index.len();
    let units = kernel.units_in(band);
    let mut at = 0;
    while at < units.len() {
        let member = match units[at] {
            Unit::Stmt(member) => member,
            Unit::Band(nested) => {
                at += 1;
                let further = band_loops(kernel, nested, depth)?;
                let opened: Vec<IndexLoop> = further.iter().map(|l| whole_loop(b, l)).collect();
                index.extend(opened);
                emit_band_units(b, kernel, nested, index, src_bytes, [src, dst], prepare)?;
                let opened = index.split_off(depth);
                close_index_loops(b, opened);
                continue;
            }
        };
        let run = alike::shared_run(kernel, &units[at..], depth);
        at += run.len();
        let (stmt, body) = prepare(b, member)?;
        let (stmt, body): (&LoopStmt, &Body) = (&stmt, &body);
        if stmt.loops.len() < depth {
            return Err(CodegenError::BandDepth {
                stmt: member,
                loops: stmt.loops.len(),
                depth,
            });
        }
        if stmt.loops.iter().any(|l| l.extent == 0) {
            continue;
        }
        // The member's nest at this point of the band's outer loops: its loops from the
        // innermost shared one on (that one run once, `Count::Const(1)`).
        let (s, d) = band_bases(b, stmt, body, index, src, dst);
        if run.len() > 1 {
            let emitter = Emitter { stmt: member, body };
            alike::emit_shared(b, kernel, &run, depth, emitter, stmt, (s, d))?;
            continue;
        }
        let (inner, proven) = band_nest(stmt, depth, src_bytes);
        emit_nest(b, member, &inner, body, proven, Count::Const(1), (s, d))?;
    }
    Ok(())
}

/// The addresses of `stmt`'s operands at the band point `index` (one value per shared loop).
fn band_bases(
    b: &mut FunctionBuilder,
    stmt: &LoopStmt,
    body: &Body,
    index: &[IndexLoop],
    src: Value,
    dst: Value,
) -> (Addr, Addr) {
    let mut advance = |ptr: Value, strides: &mut dyn Iterator<Item = i64>| {
        index.iter().zip(strides).fold(ptr, |ptr, (level, stride)| {
            if stride == 0 {
                return ptr;
            }
            // Wrapping arithmetic is exact here: the result is an address inside the buffer.
            let delta = b.ins().imul_imm_s(level.index, stride);
            b.ins().iadd(ptr, delta)
        })
    };
    let reads = body.reads_src();
    let s = advance(
        src,
        &mut stmt
            .loops
            .iter()
            .map(|l| if reads { l.src_stride } else { 0 }),
    );
    let d = advance(dst, &mut stmt.loops.iter().map(|l| l.dst_stride));
    (
        base(b, s, stmt.src_offset, None),
        base(b, d, stmt.dst_offset, None),
    )
}

/// A band member's nest as [`emit_band`] emits it inside a band of `depth` shared loops: its
/// loops from the innermost shared one on, and the source bytes its loads may be proven
/// against ([`src_bytes_inside`]).
fn band_nest(stmt: &LoopStmt, depth: usize, src_bytes: u64) -> (LoopStmt, u64) {
    let inner = LoopStmt {
        loops: stmt.loops[depth.clamp(1, stmt.loops.len().max(1)) - 1..].to_vec(),
        ..stmt.clone()
    };
    (inner, src_bytes_inside(stmt, depth, src_bytes))
}

/// Statement `index` of `k` (`stmt`) as its nest is emitted: inside its band, if it has one
/// ([`band_nest`]), else whole, with the source bytes its loads are proven against.
pub(crate) fn nest_in_band(k: &LoopKernel, index: usize, stmt: &LoopStmt) -> (LoopStmt, u64) {
    // The innermost band's loops are the ones the nest runs inside.
    let depth = k.band_of(index).map_or(1, |band| band.depth);
    band_nest(stmt, depth, src_bytes(k))
}

/// The source bytes within which a member's nest from shared loop `depth - 1` on may be
/// proven to load (see `shuffle::plan`): what the shared loops outside it can add to its
/// addresses is taken off the end, so that a load proven inside at their first iteration is
/// inside at every one. 0 (nothing proven, no wide loads) when one of them steps backwards.
fn src_bytes_inside(stmt: &LoopStmt, depth: usize, src_bytes: u64) -> u64 {
    let outer = &stmt.loops[..(depth.max(1) - 1).min(stmt.loops.len())];
    let shift = outer.iter().try_fold(0u64, |acc, l| {
        let stride = u64::try_from(l.src_stride).ok()?;
        acc.checked_add(stride.checked_mul(l.extent.checked_sub(1)?)?)
    });
    shift.map_or(0, |shift| src_bytes.saturating_sub(shift))
}

/// Translates statement `index` of `kernel` into a function named `%<kernel>_<index>` (the
/// kernel name with characters other than ASCII letters, digits and `_` replaced by `_`).
pub fn translate_stmt(
    kernel: &LoopKernel,
    index: usize,
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<Function, CodegenError> {
    check_pointer_width(config)?;
    let stmt = kernel
        .stmts
        .get(index)
        .ok_or_else(|| CodegenError::NoStatement {
            kernel: kernel.name.clone(),
            index,
            count: kernel.stmts.len(),
        })?;
    check_stmt(kernel, index, stmt)?;
    let name = format!("{}_{index}", sanitize(&kernel.name));
    let signature = stmt_signature(config.default_call_conv);
    let (func, ()) = build_function(
        UserFuncName::testcase(name),
        signature,
        config,
        |b, [src, dst, start, end]| {
            let (stmt, body) = prepare(b, kernel, index, stmt, config, imports)?;
            let stmt: &LoopStmt = &stmt;
            let exit = b.create_block();
            // A nest with an empty loop has no points; its function does nothing.
            if !stmt.loops.iter().any(|l| l.extent == 0) {
                let src_bytes = src_bytes(kernel);
                emit_range(
                    b,
                    index,
                    stmt,
                    &body,
                    src_bytes,
                    [src, dst, start, end],
                    exit,
                )?;
                if body.streams() {
                    // Streaming stores are weakly ordered: fence them before the caller (or the
                    // thread that joins this one) reads the destination.
                    let fence = imports.import(Helper::StoreFence, b.func)?;
                    b.ins().call(fence, &[]);
                }
            }
            b.ins().jump(exit, &[]);
            b.switch_to_block(exit);
            Ok(())
        },
    )?;
    Ok(func)
}

/// The body of statement `index` (or of a variant of it) and the nest it runs in. An
/// accumulate with innermost reduction loops (destination stride 0) sums its contributions in
/// registers (`sum.rs`): its nest is the loops outside them.
fn prepare<'s>(
    b: &mut FunctionBuilder,
    kernel: &LoopKernel,
    index: usize,
    stmt: &'s LoopStmt,
    config: TargetFrontendConfig,
    imports: &mut dyn Imports,
) -> Result<(Cow<'s, LoopStmt>, Body), CodegenError> {
    let summed = sum::reduction_split(stmt).and_then(|split| {
        let terms = sum::terms(&stmt.loops[split..])?;
        // A row of every other element (of one phase or two) is the body; its nest is the
        // loops outside it.
        let row = phases::row(stmt, split, kernel.dtype());
        let nest = phases::nest_len(stmt, split, kernel.dtype());
        // A window belongs to the body's terms; without its windows (they overflow, which
        // the verifier rules out) the statement is not summed at all (the error below).
        let windows = match stmt.window {
            Some(_) => Some(sum::term_windows(stmt, split)?),
            None => None,
        };
        let outer = LoopStmt {
            loops: stmt.loops[..nest].to_vec(),
            window: None,
            ..stmt.clone()
        };
        Some((outer, terms, row, windows))
    });
    if let Some((outer, terms, row, windows)) = summed {
        let zero = stmt.action == LoopAction::Sum;
        let body = Body::sum(b, zero, kernel.dtype(), stmt.bytes, terms, config, imports)?;
        let body = body.in_rows(row).with_windows(windows);
        return Ok((Cow::Owned(outer), body));
    }
    if stmt.action == LoopAction::Sum || stmt.window.is_some() {
        return Err(CodegenError::SumTerms { stmt: index });
    }
    let stream = streams_in(kernel, index, stmt)?;
    let body = Body::new(
        b,
        stmt.action,
        kernel.dtype(),
        stmt.bytes,
        stream,
        config,
        imports,
    )?;
    Ok((Cow::Borrowed(stmt), body))
}

/// The checks every statement passes before it is translated: the kernel's element types
/// agree, and the run is a positive multiple of the element size that fits an `i64`.
fn check_stmt(kernel: &LoopKernel, index: usize, stmt: &LoopStmt) -> Result<(), CodegenError> {
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
    Ok(())
}

/// Which precompiled helper of the JIT runs a statement's whole nest, in a kernel that needs
/// no generated code (see [`helper_kernel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HelperRuns {
    /// [`Helper::StreamCopy`]: the runs are copied from the source with streaming stores.
    Copy,
    /// [`Helper::StreamZero`]: the runs are zeroed with streaming stores.
    Zero,
    /// The runs are zeroed with ordinary stores, which keep them in the caches for the sums
    /// that follow (a Col2Im's output plane, before contributions are added onto it).
    Clear,
    /// Register transposes of 4- or 8-byte elements with streaming stores (see
    /// [`TransposeBlocks`]), by the JIT's transpose helper; generated code has no call of it.
    Transpose(TransposeBlocks),
    /// Rows gathered from every other source element, with streaming stores (see
    /// [`EveryOther`]), by the JIT's gather helper; generated code has no call of it.
    EveryOther(EveryOther),
    /// Sums of f16 or bf16 contributions (see [`SumRuns`]), by the JIT's sum helper, eight
    /// elements at a time, with the same additions in the same order as generated code.
    Sum(SumRuns),
    /// Rows of pixels of three byte channels into three planes (see [`Deinterleave`]), by the
    /// JIT's deinterleave helper; generated code has no call of it.
    Deinterleave(Deinterleave),
    /// Rows of pixels of three byte channels from three planes (see [`Interleave`]), by the
    /// JIT's interleave helper; generated code has no call of it.
    Interleave(Interleave),
    /// The runs are copied with ordinary stores by the JIT's nest helper: a copy of a kernel
    /// of [`MANY_STATEMENTS`] or more that no other helper runs.
    Move,
    /// The runs are filled with ordinary stores of the fill value's pattern (the value
    /// repeated over 16 bytes) by the JIT's nest helper, as [`HelperRuns::Move`] copies.
    Fill(u128),
}

/// Kernels of this many statements or more run every copy and fill in the JIT's nest helpers
/// ([`HelperRuns::Move`] and [`HelperRuns::Fill`]) when their other statements have helpers
/// too, and compile no code. A padded Im2Col takes about one statement per kernel position
/// (its borders), and Cranelift's time grows faster than its code: in instructions of
/// `relayout lower OP --timings` (callgrind; two compiles), a 7x7 Im2Col's 31 statements took
/// 62 M, an 11x11's 74 statements 141 M, and a 31x31's 949 statements 7.0 G (0.2 s a compile;
/// 0.21 G with the helpers). The helpers' kernels run 1-23% slower than generated code (23% on
/// stride-2 gathers, which generated code shuffles as vectors), so kernels of fewer statements
/// keep it. All kernels of the benchmark suites have fewer (at most 13, col2im_3d's).
pub const MANY_STATEMENTS: usize = 256;

/// `Some` when every statement of `kernel` has its whole nest run by a precompiled helper of
/// the JIT, with the helper of each; `None` when some statement needs code of its own. The
/// helpers: copies and fills of zeros whose runs stream (see [`copy::streams`]; in a band,
/// only when every member streams, as in generated code), sums of f16 and bf16 contributions
/// (see [`SumRuns`]) and the fills of zeros in a kernel of such sums, and, outside bands,
/// transposes of 4- or 8-byte elements (see [`TransposeBlocks`]), rows of every other
/// source element (see [`EveryOther`]) and pixels of three byte channels into planes and
/// back (see [`Deinterleave`] and [`Interleave`]), and, in a kernel of [`MANY_STATEMENTS`] or
/// more, every other copy and fill, with ordinary stores ([`HelperRuns::Move`],
/// [`HelperRuns::Fill`]). A band's shared loops are run by the JIT around its
/// members' helpers. The statement checks of [`translate_kernel_fn`] apply, so such a kernel
/// may be run by calling the helpers directly, with the same result as its generated
/// function; Cranelift's fixed cost and its register allocation, most of a compile, are not
/// paid.
pub fn helper_kernel(kernel: &LoopKernel) -> Result<Option<Vec<HelperRuns>>, CodegenError> {
    let mut runs = Vec::with_capacity(kernel.stmts.len());
    let many = kernel.stmts.len() >= MANY_STATEMENTS;
    for (index, stmt) in kernel.stmts.iter().enumerate() {
        check_stmt(kernel, index, stmt)?;
        let band = kernel.bands.iter().find(|b| b.members().contains(&index));
        if band.is_none() {
            if let Some(blocks) = transposed_in(kernel, stmt) {
                runs.push(HelperRuns::Transpose(blocks));
                continue;
            }
            if let Some(rows) = gathered_in(kernel, stmt) {
                runs.push(HelperRuns::EveryOther(rows));
                continue;
            }
            if let Some(rows) = Deinterleave::of(stmt) {
                runs.push(HelperRuns::Deinterleave(rows));
                continue;
            }
            if let Some(rows) = Interleave::of(stmt) {
                runs.push(HelperRuns::Interleave(rows));
                continue;
            }
        }
        let dtype = kernel.dtype();
        let helper = match stmt.action {
            LoopAction::Accumulate | LoopAction::Sum => match SumRuns::of(stmt, dtype) {
                // The JIT runs a band's shared loops itself: a row whose loops are among them
                // is summed element by element.
                Some(sums)
                    if band.is_some_and(|b| {
                        sums.row
                            .is_some_and(|row| sums.split - row.loops() < b.depth)
                    }) =>
                {
                    HelperRuns::Sum(SumRuns { row: None, ..sums })
                }
                Some(sums) => HelperRuns::Sum(sums),
                None => return Ok(None),
            },
            // `Body::new`'s choice of mover.
            _ if streams_in(kernel, index, stmt)? => match stmt.action {
                LoopAction::Copy => HelperRuns::Copy,
                LoopAction::Fill { value } if value.is_zero() => HelperRuns::Zero,
                _ => return Ok(None),
            },
            // The planes that a kernel's sums add onto (if its sums have no helper, the kernel
            // has none either).
            LoopAction::Fill { value }
                if value.is_zero() && kernel.stmts.iter().any(|s| s.action.is_accumulate()) =>
            {
                HelperRuns::Clear
            }
            LoopAction::Copy if many => HelperRuns::Move,
            LoopAction::Fill { value } if many => {
                HelperRuns::Fill(copy::fill_pattern(value, dtype))
            }
            _ => return Ok(None),
        };
        runs.push(helper);
    }
    Ok(Some(runs))
}

/// The transpose blocks of `stmt`, a statement of `kernel` outside any band, when the JIT's
/// transpose helper runs it (see [`TransposeBlocks`]).
pub(crate) fn transposed_in(kernel: &LoopKernel, stmt: &LoopStmt) -> Option<TransposeBlocks> {
    TransposeBlocks::of(stmt, kernel.dst.size_bytes().ok()?)
}

/// The rows of `stmt`, a statement of `kernel` outside any band, when the JIT's gather helper
/// runs it (see [`EveryOther`]).
fn gathered_in(kernel: &LoopKernel, stmt: &LoopStmt) -> Option<EveryOther> {
    EveryOther::of(stmt, kernel.dst.size_bytes().ok()?)
}

/// Whether `stmt`, statement `index` of `kernel` (or a variant of it with the same runs and
/// strides), writes with streaming stores.
pub(crate) fn streams_in(
    kernel: &LoopKernel,
    index: usize,
    stmt: &LoopStmt,
) -> Result<bool, CodegenError> {
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
    Ok(streams(stmt)
        && kernel
            .bands
            .iter()
            .find(|band| band.members().contains(&index))
            .is_none_or(|band| kernel.stmts[band.members()].iter().all(streams)))
}

/// Runs the iterations `[start, min(end, extent))` of the outermost loop, or the single point
/// of a statement without loops when `start < end`. Branches to `exit` when there is nothing
/// to do; otherwise leaves the builder in the block after the nest.
fn emit_range(
    b: &mut FunctionBuilder,
    index: usize,
    stmt: &LoopStmt,
    body: &Body,
    src_bytes: u64,
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
    emit_nest(b, index, stmt, body, src_bytes, Count::Dyn(count), (s, d))
}

/// The statement's nest (loops not empty) from `src` and `dst`, its outer loop running
/// `count` times: with shuffle blocks when the planner finds them (it is told the source
/// tensor's size, `src_bytes`, to prove its vector loads inside it), else as plain loops.
fn emit_nest(
    b: &mut FunctionBuilder,
    index: usize,
    stmt: &LoopStmt,
    body: &Body,
    src_bytes: u64,
    count: Count,
    (s, d): (Addr, Addr),
) -> Result<(), CodegenError> {
    let emitter = Emitter { stmt: index, body };
    if let Some(plan) = shuffle::plan(stmt, src_bytes).filter(|_| body.takes_blocks()) {
        return emitter.shuffle_nest(b, stmt, &plan, count, s, d);
    }
    emitter.nest(b, &stmt.loops, count, s, d)
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

/// The source tensor's size in bytes, which the shuffle planner proves its vector loads
/// against; 0 (no vector loads proven, so none made) if it overflows, which a verified kernel's
/// does not.
pub(crate) fn src_bytes(kernel: &LoopKernel) -> u64 {
    kernel.src.size_bytes().unwrap_or(0)
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
