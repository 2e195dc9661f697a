//! `interchange`: orders the loops of each statement so that the innermost one is unit-stride
//! (its stride equals the run `bytes`) for the destination, or for the source when that makes
//! a longer contiguous run.
//!
//! What it does: for each statement it considers three orders: by decreasing destination
//! stride (writes in row-major order), by decreasing source stride (reads in row-major order),
//! and the current one. It keeps the one whose loops coalesce into the longest run, then the
//! fewest loops, then (for copies) the fewest strided passes over the same pages (see
//! `page_revisits`), then (for copies larger than the caches near the core, in orders that
//! write few streams at once) the fewest gapped passes over the source (see
//! `BEYOND_L2_BYTES`), preferring them in that order on ties. Run `coalesce` afterwards to
//! merge what the new order made adjacent (the default pipeline does).
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
//! Then it runs backwards each loop whose source stride is negative, so that the statement
//! reads forward (see `read_forwards`): a Slice of negative step, a reflected Pad border.
//! The same rule decides whether it may: reversing a loop reorders the writes too.
//!
//! What it does not do: tile, or change anything but the order and direction of the loops.

use crate::pass::{impl_pass, LoopPass};
use crate::passes::coalesce::coalesce_stmt;
use crate::passes::output_stationary::reduction_split;
use crate::passes::LINE;
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
    // A copy, an accumulate or a sum from +0.0 (here without its reduction loops) whose
    // points overlap depends on which point writes last, or adds first.
    if (matches!(s.action, LoopAction::Copy | LoopAction::Sum)
        || (s.action == LoopAction::Accumulate && rounding))
        && !relayout_ir::dependence::points_disjoint(s, 0)
    {
        return s.clone();
    }
    read_forwards(order_loops(s))
}

/// The best order of the loops of `s`, whose points may run in any order.
fn order_loops(s: &LoopStmt) -> LoopStmt {
    if s.loops.len() < 2 {
        return s.clone();
    }
    let key_dst = |l: &Loop| (l.dst_stride.unsigned_abs(), l.src_stride.unsigned_abs());
    let key_src = |l: &Loop| (l.src_stride.unsigned_abs(), l.dst_stride.unsigned_abs());
    let mut by_dst = s.clone();
    by_dst.loops.sort_by_key(|l| std::cmp::Reverse(key_dst(l)));
    let mut by_src = s.clone();
    by_src.loops.sort_by_key(|l| std::cmp::Reverse(key_src(l)));
    let copy = s.action == LoopAction::Copy;
    // A copy that moves more than the caches near the core hold reads from farther away,
    // where a source read in several passes costs more than a destination written so, as
    // long as the order writes few streams at once (see `BEYOND_L2_BYTES`).
    let far = s.trip_count().saturating_mul(s.bytes) > BEYOND_L2_BYTES;
    // Longest run, then fewest loops, then (a copy) fewest passes over the same pages, then
    // (a copy from far away, in an order of few write streams) fewest passes over the source.
    let key = |c: &LoopStmt| {
        let coalesced = coalesce_stmt(c).map(|m| (m.bytes, std::cmp::Reverse(m.loops.len())));
        let revisits = if copy { page_revisits(c) } else { 0 };
        let src_passes = if !(copy && far) {
            0
        } else if write_streams(c) <= MAX_WRITE_STREAMS {
            gapped_source_passes(c)
        } else {
            usize::MAX
        };
        (
            coalesced,
            std::cmp::Reverse(revisits),
            std::cmp::Reverse(src_passes),
        )
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

/// Runs backwards each loop of `s` whose source stride is negative (`i in 0 to n` as
/// `n - 1 - i`: both strides change sign, both offsets move to the last iteration), so that
/// every loop reads forward; `s`'s points may run in any order. Each run is read forward, so
/// a loop that steps back across the source (a Slice of step -1 over rows) mixes the two
/// directions in one read stream, which the prefetchers follow badly: reversing the rows of
/// 64x1024x256 f32 ran at 1.7x memcpy's time reading backwards and 0.63x reading forwards
/// (writing the rows backwards, with streaming stores), the elements of each row 2.3x and
/// 1.7x; cache-resident, 1.2x and 1.1x; the reflected borders of Pads of 3 and 8 the same
/// either way (within 5%). A loop stepping back on both sides then steps forward on both.
/// Loops of one iteration stay as they are.
fn read_forwards(mut s: LoopStmt) -> LoopStmt {
    for i in 0..s.loops.len() {
        if s.loops[i].src_stride < 0 && s.loops[i].extent > 1 {
            if let Some(reversed) = reverse_loop(&s, i) {
                s = reversed;
            }
        }
    }
    s
}

/// `s` with its loop `i` run backwards: the same points in the opposite order along that
/// loop. `None` if an offset or stride would overflow.
fn reverse_loop(s: &LoopStmt, i: usize) -> Option<LoopStmt> {
    let l = s.loops[i];
    let last = i64::try_from(l.extent.checked_sub(1)?).ok()?;
    let mut reversed = s.clone();
    reversed.src_offset = s.src_offset.checked_add(l.src_stride.checked_mul(last)?)?;
    reversed.dst_offset = s.dst_offset.checked_add(l.dst_stride.checked_mul(last)?)?;
    reversed.loops[i] = Loop {
        extent: l.extent,
        src_stride: l.src_stride.checked_neg()?,
        dst_stride: l.dst_stride.checked_neg()?,
    };
    Some(reversed)
}

/// Bytes a copy moves beyond which its source comes from the last-level cache or memory:
/// twice a core's L2 on the reference machine. There, of two loop orders with as many passes
/// over the same pages, the one that reads the source in fewer gapped passes (see
/// [`gapped_source_passes`]) wins when it writes at most [`MAX_WRITE_STREAMS`] streams at
/// once (`relayout bench --op`, kernel / memcpy time, three interleaved pairs of each): an
/// Im2Col 2x2 of stride 2 of 4x128x64x64 f32, each channel's rows read in order and written
/// as four streams, 1.54-1.58 against 1.91-2.14 reading the even rows, then the odd ones
/// (f16: 1.32-1.44 against 1.50-1.62, uint8 of 4x128x128x128: 1.39-1.48 against 1.78-2.46);
/// DepthToSpace NHWC of block 2, 8x112x112x64 f32, 0.87-0.95 against 1.14-1.20 (f64 of
/// 8x56x56x64: 0.67-1.01 against 0.90-0.99), of block 4, 8x56x56x256 f16, 1.09-1.46 against
/// 1.57-1.86. With nine streams (Im2Col 3x3 of stride 2 or 3) it ran 0-8% slower, and for
/// ViT's 16x16 patches it lost their register blocks; an Im2Col 2x2 of stride 1, whose
/// second pass reads the same lines shifted by one element, ran 10-15% slower. Those keep
/// the destination's order, as do kernels that stay in the caches.
const BEYOND_L2_BYTES: u64 = 1 << 20;

/// See [`BEYOND_L2_BYTES`].
const MAX_WRITE_STREAMS: u64 = 4;

/// How many places a loop order writes at once: for the outermost loop that steps the
/// destination by less than loops inside it, the iterations of those inner loops (each
/// writes its own stream, which the outer loop continues), or 1 if there is no such loop.
fn write_streams(s: &LoopStmt) -> u64 {
    let loops: Vec<&Loop> = s.loops.iter().filter(|l| l.extent > 1).collect();
    for (i, outer) in loops.iter().enumerate() {
        let streams = loops[i + 1..]
            .iter()
            .filter(|inner| inner.dst_stride.unsigned_abs() > outer.dst_stride.unsigned_abs())
            .fold(1u64, |n, inner| n.saturating_mul(inner.extent));
        if streams > 1 {
            return streams;
        }
    }
    1
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
    revisits(s, |l| l.src_stride, 0) + revisits(s, |l| l.dst_stride, 0)
}

/// The passes of [`page_revisits`] over the source that leave gaps of whole cache lines for
/// later ones (an outer loop stepping by a line or more: even rows, then odd rows), not those
/// that read the same lines again shifted by a few bytes (an Im2Col's kernel columns).
fn gapped_source_passes(s: &LoopStmt) -> usize {
    revisits(s, |l| l.src_stride, LINE)
}

/// Pairs of loops of `s` (of more than one iteration), the outer one stepping by at least
/// `min_outer` bytes but by less than the inner one, which steps by less than [`NEAR`];
/// `stride` picks the operand.
fn revisits(s: &LoopStmt, stride: fn(&Loop) -> i64, min_outer: u64) -> usize {
    let strides: Vec<u64> = s
        .loops
        .iter()
        .filter(|l| l.extent > 1)
        .map(|l| stride(l).unsigned_abs())
        .collect();
    let mut count = 0;
    for (i, &outer) in strides.iter().enumerate() {
        count += strides[i + 1..]
            .iter()
            .filter(|&&inner| min_outer <= outer && outer < inner && inner < NEAR)
            .count();
    }
    count
}
