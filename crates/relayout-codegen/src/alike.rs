//! One body for a run of alike members of a band: consecutive sums that are the same
//! statement but for their offsets and the counts of some of their own loops
//! ([`LoopStmt::alike`], which the `group-alike` pass brings together) are emitted as one
//! nest, run once per member with the member's addresses and counts, instead of one copy of
//! the nest per member.
//!
//! Why: Cranelift's time grows with the machine instructions of a function (about 0.45 us
//! each on the reference machine, most of it register allocation), and a sum's body is long:
//! one load and add per term and vector. col2im_3d (bench/suite.json) had six such nests of
//! 9 or 6 terms, three of each kind; shared, its function holds two.
//!
//! The shape, at one iteration of the band's shared loops:
//!
//! ```text
//! head(j):   member j's case, or after the run when j is past the last member
//! case k:    jump run(src + delta_k, dst + delta_k, counts of member k)
//! run(s, d, counts..):  the first member's nest from s and d, with those counts
//!            jump head(j + 1)
//! ```
//!
//! Only sums of two terms or more share (a sum's body never takes shuffle blocks nor streams,
//! and its body is what is worth sharing), and only when each member does enough of them per
//! band iteration ([`MIN_SHARED_TERMS`]) for the dispatch not to show.

use crate::loops::{Count, Emitter};
use crate::mem::Addr;
use crate::{phases, sum, CodegenError};
use cranelift_codegen::ir::{types, Block, BlockArg, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, LoopKernel, LoopStmt, Unit};

/// A member shares its body only when it adds at least this many terms per iteration of its
/// band's shared loops (runs of its own loops times terms per run): the dispatch costs a few
/// instructions and a branch per member and band iteration. A guard rather than a measured
/// optimum: cache-resident 3-D Col2Ims whose members add 36-108 terms per band iteration
/// (image 4x5x6, 128 planes, f32) and 84-432 (8x8x8, i32) ran as fast shared as unshared
/// (32.1-34.9 against 32.4-32.7 us, 113.4-113.8 against 113.1-113.7 us, `relayout bench --op`,
/// three interleaved rounds).
pub(crate) const MIN_SHARED_TERMS: u64 = 32;

/// The statements at the start of `units` (a band's units from some point on, the band
/// sharing `depth` loops) that run through the body of the first: the first alone when it
/// shares with none, none when `units` starts with a band. See the module docs.
pub(crate) fn shared_run(kernel: &LoopKernel, units: &[Unit], depth: usize) -> Vec<usize> {
    let stmts: Vec<usize> = units
        .iter()
        .map_while(|u| match *u {
            Unit::Stmt(i) => Some(i),
            Unit::Band(_) => None,
        })
        .collect();
    let Some((&first_index, rest)) = stmts.split_first() else {
        return Vec::new();
    };
    let first = &kernel.stmts[first_index];
    let Some(nest) = summed_nest(first, kernel.dtype(), depth) else {
        return vec![first_index];
    };
    let shares = |s: &LoopStmt| {
        s.alike(first, depth)
            && s.loops[nest..]
                .iter()
                .zip(&first.loops[nest..])
                .all(|(a, b)| a.extent == b.extent)
            && summed_nest(s, kernel.dtype(), depth).is_some()
    };
    let others = rest.iter().take_while(|&&i| shares(&kernel.stmts[i]));
    std::iter::once(first_index)
        .chain(others.copied())
        .collect()
}

/// The statements that run through one body with statement `index` of `k` (itself included,
/// in order), when it shares its body with others: a run [`shared_run`] gives in its band.
pub(crate) fn shared_with(k: &LoopKernel, index: usize) -> Option<Vec<usize>> {
    let band = k.band_of(index)?;
    let units = k.units_in(band);
    let mut at = 0;
    while at < units.len() {
        let run = shared_run(k, &units[at..], band.depth);
        if run.contains(&index) {
            return (run.len() > 1).then_some(run);
        }
        // A nested band is one unit.
        at += run.len().max(1);
    }
    None
}

/// For a sum of two terms or more whose runs and terms per band iteration (the band sharing
/// `depth` loops) reach [`MIN_SHARED_TERMS`], not empty: the number of its loops that make
/// its nest (those outside the reduction loops and the rows its body sums whole, as `prepare`
/// splits it).
fn summed_nest(stmt: &LoopStmt, dtype: DType, depth: usize) -> Option<usize> {
    let split = sum::reduction_split(stmt)?;
    let nest = phases::nest_len(stmt, split, dtype);
    let extents = |from: usize, to: usize| {
        stmt.loops[from..to]
            .iter()
            .try_fold(1u64, |n, l| n.checked_mul(l.extent))
    };
    let terms = extents(split, stmt.loops.len())?;
    let work = extents(depth.min(nest), stmt.loops.len())?;
    (nest >= depth && terms >= 2 && work >= MIN_SHARED_TERMS).then_some(nest)
}

/// Emits `members` (statement indices, a run [`shared_run`] gave) at one iteration of
/// their band's `depth` shared loops: `nest` and `body` are the first member's as `prepare`
/// made them, `(s, d)` its addresses at this iteration. Leaves the builder after the run.
pub(crate) fn emit_shared(
    b: &mut FunctionBuilder,
    kernel: &LoopKernel,
    members: &[usize],
    depth: usize,
    emitter: Emitter<'_>,
    nest: &LoopStmt,
    (s, d): (Addr, Addr),
) -> Result<(), CodegenError> {
    let first = &kernel.stmts[members[0]];
    let stmts: Vec<&LoopStmt> = members.iter().map(|&m| &kernel.stmts[m]).collect();
    // The loops of the nest from the innermost shared one (run once) on; a loop whose count
    // differs between members takes it at run time, and its smallest as its extent.
    let mut loops = nest.loops[depth - 1..].to_vec();
    let varying: Vec<usize> = (depth..nest.loops.len())
        .filter(|&i| {
            stmts
                .iter()
                .any(|m| m.loops[i].extent != first.loops[i].extent)
        })
        .collect();
    for &i in &varying {
        loops[i + 1 - depth].extent = stmts.iter().map(|m| m.loops[i].extent).min().unwrap_or(1);
    }

    let ptr = b.func.dfg.value_type(s.base);
    let head = b.create_block();
    let j = b.append_block_param(head, types::I64);
    let run = b.create_block();
    let run_src = b.append_block_param(run, ptr);
    let run_dst = b.append_block_param(run, ptr);
    let run_counts: Vec<Value> = varying
        .iter()
        .map(|_| b.append_block_param(run, types::I64))
        .collect();
    let after = b.create_block();
    let zero = b.ins().iconst(types::I64, 0);
    b.ins().jump(head, &[zero.into()]);

    b.switch_to_block(head);
    let cases: Vec<Block> = stmts.iter().map(|_| b.create_block()).collect();
    crate::function::switch(b, j, &cases, after);
    for (m, &case) in stmts.iter().zip(&cases) {
        b.switch_to_block(case);
        b.seal_block(case);
        // Wrapping arithmetic is exact here: the result is an address inside the buffer.
        let moved = |b: &mut FunctionBuilder, base: Value, delta: i64| {
            if delta == 0 {
                base
            } else {
                b.ins().iadd_imm_s(base, delta)
            }
        };
        let src = moved(b, s.base, m.src_offset.wrapping_sub(first.src_offset));
        let dst = moved(b, d.base, m.dst_offset.wrapping_sub(first.dst_offset));
        let mut args: Vec<BlockArg> = vec![src.into(), dst.into()];
        for &i in &varying {
            args.push(b.ins().iconst(types::I64, m.loops[i].extent as i64).into());
        }
        b.ins().jump(run, &args);
    }
    b.seal_block(run);

    b.switch_to_block(run);
    let mut counts: Vec<Count> = loops.iter().map(|l| Count::Const(l.extent)).collect();
    counts[0] = Count::Const(1);
    for (&i, &count) in varying.iter().zip(&run_counts) {
        counts[i + 1 - depth] = Count::Dyn(count);
    }
    let src = Addr::new(run_src, s.offset);
    let dst = Addr::new(run_dst, d.offset);
    emitter.counted_nest(b, &loops, &counts, src, dst)?;
    let next = b.ins().iadd_imm_u(j, 1);
    b.ins().jump(head, &[next.into()]);
    b.seal_block(head);

    b.switch_to_block(after);
    b.seal_block(after);
    Ok(())
}
