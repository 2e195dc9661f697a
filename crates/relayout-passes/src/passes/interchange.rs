//! `interchange`: orders the loops of each statement so that the innermost one is unit-stride
//! (its stride equals the run `bytes`) for the destination, or for the source when that makes
//! a longer contiguous run.
//!
//! What it does: for each statement it considers three orders: by decreasing destination
//! stride (writes in row-major order), by decreasing source stride (reads in row-major order),
//! and the current one. It keeps the one whose loops coalesce into the longest run, then the
//! fewest loops, then (for copies) the fewest strided passes over the same pages (see
//! `page_revisits`), preferring them in that order on ties. Run `coalesce` afterwards to merge what
//! the new order made adjacent (the default pipeline does).
//!
//! Reordering loops changes the order of the writes, so it is done only when that cannot change
//! the result: for a fill (it writes one value), an accumulate of integers whose runs start on
//! element boundaries (they wrap the same way in any order; runs that straddle elements
//! differently, which hand-written loop IR allows, do not commute), or a copy or a float
//! accumulate whose runs never write the same destination byte twice
//! (`dependence::points_disjoint`). A float accumulate whose points add into the
//! same element keeps its order: float additions round in their order, and Col2Im's results
//! stay bit-exact (a Col2Im without padding has all its kernel positions in one statement).
//! A sum from +0.0 (`accumulate ... = 0 + ...`) starts its runs over at each point of its
//! outer loops, so the same holds for its outer loops.
//!
//! The innermost reduction loops of an accumulate (destination stride 0, see
//! `output-stationary`) stay innermost and in their order: they fix the order in which each
//! element's contributions are added, which that pass promises to keep exact. Only the loops
//! outside them are ordered.
//!
//! What it does not do: tile, or change anything but the order of the loops.

use crate::pass::{impl_pass, LoopPass};
use crate::passes::coalesce::coalesce_stmt;
use crate::passes::output_stationary::reduction_split;
use crate::stmt::additions_round;
use crate::PassError;
use relayout_ir::{Loop, LoopAction, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Interchange;

impl LoopPass for Interchange {
    const NAME: &'static str = "interchange";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        let rounding = additions_round(k.dst.dtype);
        let size = k.dtype().size();
        Ok(k.with_stmts(
            k.stmts
                .iter()
                .map(|s| interchange_stmt(s, rounding || !element_aligned(s, size)))
                .collect(),
            k.bands.clone(),
        ))
    }
}

impl_pass!(loops Interchange);

/// Whether every destination run of `s` starts on an element boundary (offset and strides
/// multiples of the element `size`). Then overlapping runs add into the same elements, and
/// integer additions commute. Runs that straddle elements differently (hand-written loop IR
/// may step by any number of bytes) do not: each is a read-modify-write of other elements, and
/// a carry out of one byte lands in the next one only in one of the two orders.
fn element_aligned(s: &LoopStmt, size: u64) -> bool {
    let Ok(size) = i64::try_from(size) else {
        return false;
    };
    s.dst_offset % size == 0 && s.loops.iter().all(|l| l.dst_stride % size == 0)
}

/// `rounding`: the order of the statement's additions shows in its result (they round, see
/// `stmt::additions_round`, or its runs straddle elements, see [`element_aligned`]).
fn interchange_stmt(s: &LoopStmt, rounding: bool) -> LoopStmt {
    let split = reduction_split(s);
    if split < s.loops.len() {
        let mut outer = s.clone();
        let reductions = outer.loops.split_off(split);
        let mut done = interchange_stmt(&outer, rounding);
        done.loops.extend(reductions);
        return done;
    }
    if s.loops.len() < 2
        // A copy, an accumulate or a sum from +0.0 (here without its reduction loops) whose
        // points overlap depends on which point writes last, or adds first.
        || ((matches!(s.action, LoopAction::Copy | LoopAction::Sum)
            || (s.action == LoopAction::Accumulate && rounding))
            && !relayout_ir::dependence::points_disjoint(s, 0))
    {
        return s.clone();
    }
    let key_dst = |l: &Loop| (l.dst_stride.unsigned_abs(), l.src_stride.unsigned_abs());
    let key_src = |l: &Loop| (l.src_stride.unsigned_abs(), l.dst_stride.unsigned_abs());
    let mut by_dst = s.clone();
    by_dst.loops.sort_by_key(|l| std::cmp::Reverse(key_dst(l)));
    let mut by_src = s.clone();
    by_src.loops.sort_by_key(|l| std::cmp::Reverse(key_src(l)));
    let copy = s.action == LoopAction::Copy;
    // Longest run, then fewest loops, then (a copy) fewest passes over the same pages.
    let key = |c: &LoopStmt| {
        let coalesced = coalesce_stmt(c).map(|m| (m.bytes, std::cmp::Reverse(m.loops.len())));
        let revisits = if copy { page_revisits(c) } else { 0 };
        (coalesced, std::cmp::Reverse(revisits))
    };
    // The first of the best keys wins: ties keep the destination's order.
    let mut best = (key(&by_dst), by_dst);
    for c in [by_src, s.clone()] {
        let k = key(&c);
        if k > best.0 {
            best = (k, c);
        }
    }
    best.1
}

/// Strides below this count as the same region of memory (see [`page_revisits`]): a few
/// pages, which is closer than the hardware prefetchers keep separate streams apart.
const NEAR: u64 = 16 << 10;

/// How many times a loop order sweeps the same pages again: pairs of loops, for either
/// operand, where an outer loop steps by less than an inner one that itself steps by less
/// than [`NEAR`]. Such an order reads (or writes) every page in several strided passes, each
/// taking a part of it. Measured on the reference machine: 1.5-4x memcpy's time
/// (SpaceToBatchND block 8 read in 8 passes, DepthToSpace NHWC read in 2, BatchToSpaceND
/// written in 4, the YOLO focus SpaceToDepth reading even then odd rows), against 0.8-1.1x
/// for the same copies in an order that sweeps both sides once with a few sequential streams
/// each (inner strides of 32 KiB and more, which the prefetchers follow as separate streams).
fn page_revisits(s: &LoopStmt) -> usize {
    let loops: Vec<&Loop> = s.loops.iter().filter(|l| l.extent > 1).collect();
    let mut count = 0;
    for stride in [
        |l: &Loop| l.src_stride.unsigned_abs(),
        |l: &Loop| l.dst_stride.unsigned_abs(),
    ] {
        for (i, outer) in loops.iter().enumerate() {
            count += loops[i + 1..]
                .iter()
                .filter(|inner| stride(outer) < stride(inner) && stride(inner) < NEAR)
                .count();
        }
    }
    count
}
