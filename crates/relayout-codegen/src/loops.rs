//! Loop nests with pointer-bumping induction variables.
//!
//! Every loop starts at a header block whose parameters are the loop state: a down-counter and
//! one pointer per operand that moves (an operand with stride 0, or the source of a fill,
//! keeps its pointer from outside). Loops are bottom-tested, so the count must be at least one
//! on entry; the nest is skipped as a whole when an extent is zero. Cranelift does no strength
//! reduction, so this shape is what keeps multiplications out of the loops.
//!
//! Cranelift does not unroll either. When a run is a single move or vector add, inner loops of
//! a few iterations are unrolled completely into a *pattern* of runs at constant offsets, and
//! the innermost loop left is unrolled until an iteration does four runs; the pattern's
//! offsets become the immediates of the loads and stores.

use crate::body::Body;
use crate::mem::Addr;
use crate::CodegenError;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, Block, BlockArg, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::Loop;

/// A top-tested loop `for index in from..to` over an `i64` index, for loops whose body uses
/// the index itself (a band's shared loops, an AOT entry's loop over a band) rather than
/// pointers it bumps.
pub struct IndexLoop {
    /// The index at this iteration.
    pub index: Value,
    header: Block,
    after: Block,
}

impl IndexLoop {
    /// Opens the loop, leaving the builder at the top of its body.
    pub fn open(b: &mut FunctionBuilder, from: Value, to: Value) -> IndexLoop {
        let header = b.create_block();
        let index = b.append_block_param(header, types::I64);
        let work = b.create_block();
        let after = b.create_block();
        b.ins().jump(header, &[from.into()]);
        b.switch_to_block(header);
        let more = b.ins().icmp(IntCC::UnsignedLessThan, index, to);
        b.ins().brif(more, work, &[], after, &[]);
        b.switch_to_block(work);
        IndexLoop {
            index,
            header,
            after,
        }
    }

    /// Ends the body with `next` (the index plus one) as the next iteration's index, leaving
    /// the builder after the loop.
    pub fn close(self, b: &mut FunctionBuilder, next: Value) {
        b.ins().jump(self.header, &[next.into()]);
        b.switch_to_block(self.after);
    }
}

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
    steps: (i64, i64),
    body: &mut LoopBody<'_>,
) -> Result<(), CodegenError> {
    rebasing_loop(b, count, (src, dst), steps, &mut |b, s, d| {
        body(b, s, d)?;
        Ok((s, d))
    })?;
    Ok(())
}

/// The body of a [`rebasing_loop`]: given the operands' addresses at this iteration, it
/// returns the same two addresses written with the last values that hold them (an inner
/// loop's pointers after its last iteration, with the offset that brings them back), or
/// simply its arguments.
pub(crate) type RebasingBody<'a> =
    dyn FnMut(&mut FunctionBuilder, Addr, Addr) -> Result<(Addr, Addr), CodegenError> + 'a;

/// [`counted_loop`] for bodies that are loops themselves. An iteration's next pointers are
/// computed from the addresses the body returns, so a pointer of this loop is dead once the
/// loop inside has taken it over, instead of living across that loop only to be bumped at the
/// end. Returns `src` and `dst` written with values defined after the loop when its count is
/// known (the pointers of its last iteration, moved by one step), else as given. Which loops
/// of a nest take their pointers so is [`Emitter::levels`]' choice.
pub(crate) fn rebasing_loop(
    b: &mut FunctionBuilder,
    count: Count,
    (src, dst): (Addr, Addr),
    (src_step, dst_step): (i64, i64),
    body: &mut RebasingBody<'_>,
) -> Result<(Addr, Addr), CodegenError> {
    let n = match count {
        Count::Const(0) => return Ok((src, dst)),
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
    let (src_out, dst_out) = body(b, src_in, dst_in)?;
    let next = b.ins().iadd_imm_s(counter, -1);
    let mut back: Vec<BlockArg> = vec![next.into()];
    // The next iteration's pointer: `out` holds this iteration's address, `step` further.
    let advance = |b: &mut FunctionBuilder, at: Addr, out: Addr, step: i64| {
        let moved = out.offset.wrapping_sub(at.offset).wrapping_add(step);
        if moved == 0 {
            out.base
        } else {
            b.ins().iadd_imm_s(out.base, moved)
        }
    };
    let mut src_next = None;
    if src_step != 0 {
        let v = advance(b, src_in, src_out, src_step);
        src_next = Some(v);
        back.push(v.into());
    }
    let mut dst_next = None;
    if dst_step != 0 {
        let v = advance(b, dst_in, dst_out, dst_step);
        dst_next = Some(v);
        back.push(v.into());
    }
    b.ins().brif(next, header, &back, exit, &[]);
    b.seal_block(header);
    b.switch_to_block(exit);
    b.seal_block(exit);
    // The values of the last iteration are available here: the exit's only predecessor is
    // the block that computed them. A moving pointer ended `count` steps past its start.
    let after = |given: Addr, out: Addr, next: Option<Value>, step: i64| match (next, count) {
        (None, _) => out,
        (Some(v), Count::Const(n)) => (n as i64)
            .checked_mul(step)
            .and_then(|moved| given.offset.checked_sub(moved))
            .map_or(given, |offset| Addr::new(v, offset)),
        (Some(_), Count::Dyn(_)) => given,
    };
    Ok((
        after(src, src_out, src_next, src_step),
        after(dst, dst_out, dst_next, dst_step),
    ))
}

/// Inner loops with constant extents are unrolled completely while the body then holds at
/// most this many runs, when each run is a single move or vector add. This keeps a loop of 2
/// or 4 iterations (DepthToSpace blocks, small channel counts) from paying a loop per point.
const MAX_PATTERN: usize = 8;
/// The innermost loop that remains is unrolled until an iteration does this many small runs.
/// Four was as fast as eight on the reference machine and keeps code small.
const UNROLL_RUNS: usize = 4;

/// The runs of one unrolled body, as (source, destination) byte offsets from its addresses, in
/// execution order.
type Pattern = [(i64, i64)];

/// What every emitter of one statement's nest needs besides the builder: the statement's
/// index (for errors) and the body its innermost loop runs. The builder stays an argument of
/// each method because the loop bodies, which are closures, are handed it back.
#[derive(Clone, Copy)]
pub(crate) struct Emitter<'a> {
    pub stmt: usize,
    pub body: &'a Body,
}

impl Emitter<'_> {
    /// The overflow error of this statement, for `what`.
    pub fn overflow(&self, what: &'static str) -> CodegenError {
        CodegenError::Overflow {
            stmt: self.stmt,
            what,
        }
    }

    /// A fill never reads its source, so its source pointer never moves.
    fn src_stride(&self, l: &Loop) -> i64 {
        if self.body.reads_src() {
            l.src_stride
        } else {
            0
        }
    }

    /// Emits the loop nest `loops` (outermost first, none empty) around the body, the
    /// outermost running `count` times.
    pub fn nest(
        &self,
        b: &mut FunctionBuilder,
        loops: &[Loop],
        count: Count,
        src: Addr,
        dst: Addr,
    ) -> Result<(), CodegenError> {
        // A streaming body moves the whole nest in one helper call: Cranelift's register
        // allocator spends more on loops around calls (every loop's counter and pointers live
        // across them) than on the rest of such a kernel, and the helper's loops cost nothing
        // next to the cache lines each run streams.
        if self.body.emit_stream_nest(b, loops, count, src, dst) {
            return Ok(());
        }
        let mut counts = vec![count];
        counts.extend(loops.iter().skip(1).map(|l| Count::Const(l.extent)));
        self.counted_nest(b, loops, &counts, src, dst)
    }

    /// [`Emitter::nest`] with a count for every loop (`counts[i]` for `loops[i]`): a runtime
    /// count runs that loop in place of its extent, which must then be at most the count
    /// (the unrolling is chosen by it). Code generation runs alike members of a band through
    /// one nest so, each with its own counts. Not for streaming bodies.
    pub fn counted_nest(
        &self,
        b: &mut FunctionBuilder,
        loops: &[Loop],
        counts: &[Count],
        src: Addr,
        dst: Addr,
    ) -> Result<(), CodegenError> {
        let overflow = || self.overflow("an unrolled offset");
        // Fold small innermost loops into the pattern. The outermost loop is never folded:
        // its count is only known at run time; nor is any other with a runtime count.
        let mut pattern = vec![(0i64, 0i64)];
        let mut depth = loops.len();
        while self.body.is_small() && depth > 1 && matches!(counts[depth - 1], Count::Const(_)) {
            let l = &loops[depth - 1];
            let runs = usize::try_from(l.extent)
                .ok()
                .and_then(|e| e.checked_mul(pattern.len()))
                .filter(|&runs| runs <= MAX_PATTERN);
            if runs.is_none() {
                break;
            }
            let ss = self.src_stride(l);
            let mut folded = Vec::with_capacity(MAX_PATTERN);
            for j in 0..l.extent as i64 {
                for &(s, d) in &pattern {
                    let s = ss.checked_mul(j).and_then(|o| o.checked_add(s));
                    let d = l.dst_stride.checked_mul(j).and_then(|o| o.checked_add(d));
                    folded.push((s.ok_or_else(overflow)?, d.ok_or_else(overflow)?));
                }
            }
            pattern = folded;
            depth -= 1;
        }
        self.levels(b, &loops[..depth], &counts[..depth], &pattern, src, dst)?;
        Ok(())
    }

    /// The loops that were not folded, around the pattern, each running its count of
    /// `counts`. Returns `src` and `dst` as [`rebasing_loop`] does.
    fn levels(
        &self,
        b: &mut FunctionBuilder,
        loops: &[Loop],
        counts: &[Count],
        pattern: &Pattern,
        src: Addr,
        dst: Addr,
    ) -> Result<(Addr, Addr), CodegenError> {
        let (Some((l, inner)), Some((&count, inner_counts))) =
            (loops.split_first(), counts.split_first())
        else {
            self.emit_pattern(b, pattern, src, dst)?;
            return Ok((src, dst));
        };
        let steps = (self.src_stride(l), l.dst_stride);
        if inner.is_empty() && self.body.is_small() {
            let u = unroll_factor(pattern);
            // A runtime count below the unroll factor would never enter the unrolled loop.
            let worth = match count {
                Count::Const(_) => true,
                Count::Dyn(_) => l.extent >= u,
            };
            if u > 1 && worth {
                self.unrolled(b, pattern, l, count, src, dst)?;
                return Ok((src, dst));
            }
        }
        // A loop with two loops or more inside takes its next pointers from them (see
        // `rebasing_loop`): in a deep nest, only the outer loops' counters then live across
        // the innermost loop, and Cranelift's register allocator, most of a compile, spends
        // less (im2col_conv3x3: 17% less, its compile 0.475 -> 0.444 ms). The next iteration's
        // addresses then wait for the inner loops' last step: not taken through the
        // innermost loop, nor by a statement's outermost loop (a runtime count, the whole
        // kernel for a small one), where a 2x2 SpaceToDepth of an 8x8 map ran 10% slower.
        let rebase = matches!(count, Count::Const(_)) && inner.len() >= 2;
        rebasing_loop(b, count, (src, dst), steps, &mut |b, s, d| {
            let out = self.levels(b, inner, inner_counts, pattern, s, d)?;
            Ok(if rebase { out } else { (s, d) })
        })
    }

    /// Every run of `pattern`, in order.
    fn emit_pattern(
        &self,
        b: &mut FunctionBuilder,
        pattern: &Pattern,
        src: Addr,
        dst: Addr,
    ) -> Result<(), CodegenError> {
        let overflow = || self.overflow("an unrolled offset");
        for &(s, d) in pattern {
            self.body.emit(
                b,
                src.plus(s).ok_or_else(overflow)?,
                dst.plus(d).ok_or_else(overflow)?,
            )?;
        }
        Ok(())
    }

    /// The innermost loop, unrolled: [`unroll_factor`] patterns per iteration at immediate
    /// offsets, then the remaining iterations (straight-line when the count is known, else a
    /// loop).
    fn unrolled(
        &self,
        b: &mut FunctionBuilder,
        pattern: &Pattern,
        l: &Loop,
        count: Count,
        src: Addr,
        dst: Addr,
    ) -> Result<(), CodegenError> {
        let u = unroll_factor(pattern);
        let overflow = || self.overflow("the unrolled loop's step");
        let (ss, ds) = (self.src_stride(l), l.dst_stride);
        grouped_loop(
            b,
            count,
            u,
            (src, dst),
            (ss, ds),
            &mut |b, s, d, part| {
                let n = match part {
                    Part::Group => u as i64,
                    Part::One => 1,
                };
                for j in 0..n {
                    let s = s.plus(j * ss).ok_or_else(overflow)?;
                    let d = d.plus(j * ds).ok_or_else(overflow)?;
                    self.emit_pattern(b, pattern, s, d)?;
                }
                Ok(())
            },
            &overflow,
        )
    }
}

/// How many patterns an iteration of the unrolled innermost loop runs: about
/// [`UNROLL_RUNS`] runs, as a power of two, so that the runtime split of the count is a shift
/// and a mask.
fn unroll_factor(pattern: &Pattern) -> u64 {
    let raw = (UNROLL_RUNS / pattern.len()).max(1) as u64;
    1u64 << (63 - raw.leading_zeros())
}

/// A loop over pieces of a run that may overlap: iteration `k` runs `body` at byte offsets
/// `min(k * steps.0, lasts.0)` of the source and `min(k * steps.1, lasts.1)` of the
/// destination, until both reach their last offset (the source reaches it when the destination
/// does, `lasts` being a pair of offsets of one iteration). A run that is not a whole number of
/// pieces then needs no second body for its tail: the last piece ends at the run's end,
/// overlapping the one before it, which is only correct for bodies that never read the
/// destination (the bytes written twice get the same value). Leaves the builder after the loop.
pub(crate) fn clamped_loop(
    b: &mut FunctionBuilder,
    (src, dst): (Addr, Addr),
    steps: (i64, i64),
    lasts: (i64, i64),
    body: &mut dyn FnMut(&mut FunctionBuilder, Addr, Addr),
) {
    let header = b.create_block();
    let exit = b.create_block();
    let dst_at = b.append_block_param(header, types::I64);
    // The source's offset: the destination's when they move alike, none when it stays.
    let shared = steps.0 == steps.1 && lasts.0 == lasts.1;
    let src_at = if shared || steps.0 == 0 {
        None
    } else {
        Some(b.append_block_param(header, types::I64))
    };
    let zero = b.ins().iconst(types::I64, 0);
    let mut args: Vec<BlockArg> = vec![zero.into()];
    args.extend(src_at.map(|_| BlockArg::from(zero)));
    b.ins().jump(header, &args);

    b.switch_to_block(header);
    let s = match (shared, src_at) {
        (true, _) => Addr::new(b.ins().iadd(src.base, dst_at), src.offset),
        (false, Some(at)) => Addr::new(b.ins().iadd(src.base, at), src.offset),
        (false, None) => src,
    };
    let d = Addr::new(b.ins().iadd(dst.base, dst_at), dst.offset);
    body(b, s, d);
    let done = b.ins().icmp_imm_s(IntCC::Equal, dst_at, lasts.1);
    let mut next = |at: Value, step: i64, last: i64| {
        let moved = b.ins().iadd_imm_s(at, step);
        let limit = b.ins().iconst(types::I64, last);
        BlockArg::from(b.ins().umin(moved, limit))
    };
    let mut back = vec![next(dst_at, steps.1, lasts.1)];
    back.extend(src_at.map(|at| next(at, steps.0, lasts.0)));
    b.ins().brif(done, exit, &[], header, &back);
    b.seal_block(header);
    b.seal_block(exit);
    b.switch_to_block(exit);
}

/// What a [`GroupedBody`] emits: `group` consecutive iterations, or one.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Part {
    Group,
    One,
}

/// The body of a [`grouped_loop`], given the addresses of the first iteration it covers.
pub(crate) type GroupedBody<'a> =
    dyn FnMut(&mut FunctionBuilder, Addr, Addr, Part) -> Result<(), CodegenError> + 'a;

/// `count` iterations from `src` and `dst` stepping by `steps`, run `group` (a power of two)
/// at a time by
/// `body(.., Part::Group)` in a loop, then the remaining `count mod group` one at a time by
/// `body(.., Part::One)`: straight-line when the count is known, else behind a branch (a
/// loop unless only one can remain). Unrolled loops and shuffle tiles both take this shape.
/// Leaves the builder in the block after the loop.
pub(crate) fn grouped_loop(
    b: &mut FunctionBuilder,
    count: Count,
    group: u64,
    (src, dst): (Addr, Addr),
    steps: (i64, i64),
    body: &mut GroupedBody<'_>,
    overflow: &dyn Fn() -> CodegenError,
) -> Result<(), CodegenError> {
    // `group <= extent`, and a verified kernel keeps `(extent - 1) * stride` inside its
    // tensor, so these only fail on kernels that were not verified.
    let big = (
        steps.0.checked_mul(group as i64).ok_or_else(overflow)?,
        steps.1.checked_mul(group as i64).ok_or_else(overflow)?,
    );
    match count {
        Count::Const(n) => {
            let main = n / group;
            counted_loop(b, Count::Const(main), src, dst, big, &mut |b, s, d| {
                body(b, s, d, Part::Group)
            })?;
            for j in main * group..n {
                let at = |a: Addr, stride: i64| a.plus(stride.checked_mul(j as i64)?);
                let s = at(src, steps.0).ok_or_else(overflow)?;
                let d = at(dst, steps.1).ok_or_else(overflow)?;
                body(b, s, d, Part::One)?;
            }
            Ok(())
        }
        Count::Dyn(n) => {
            let shift = i64::from(group.trailing_zeros());
            let main = b.ins().ushr_imm_u(n, shift);
            let rest = b.ins().band_imm_u(n, (group - 1) as i64);
            let main_block = b.create_block();
            let after_main = b.create_block();
            b.ins().brif(main, main_block, &[], after_main, &[]);
            b.seal_block(main_block);

            b.switch_to_block(main_block);
            counted_loop(b, Count::Dyn(main), src, dst, big, &mut |b, s, d| {
                body(b, s, d, Part::Group)
            })?;
            b.ins().jump(after_main, &[]);
            b.seal_block(after_main);

            b.switch_to_block(after_main);
            let rest_block = b.create_block();
            let done = b.create_block();
            b.ins().brif(rest, rest_block, &[], done, &[]);
            b.seal_block(rest_block);

            b.switch_to_block(rest_block);
            // The remainder starts `main * group` iterations in.
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
            if group == 2 {
                // The remainder is a single iteration.
                body(b, s, d, Part::One)?;
            } else {
                counted_loop(b, Count::Dyn(rest), s, d, steps, &mut |b, s, d| {
                    body(b, s, d, Part::One)
                })?;
            }
            b.ins().jump(done, &[]);
            b.seal_block(done);
            b.switch_to_block(done);
            Ok(())
        }
    }
}
