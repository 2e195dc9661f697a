//! Interleave, deinterleave, small transposes and strided gathers of short runs with 16-byte
//! shuffles.
//!
//! A copy whose run is shorter than a vector (a single f32 in DepthToSpace / SpaceToDepth, a
//! Slice with steps) would otherwise move one run per point. Here a *lane* loop X of the
//! statement is picked, and optionally a short *factor* loop F (2 to 4 iterations). A *block*
//! is F complete times a tile of T iterations of X, chosen so that the bytes it writes are
//! whole 16-byte vectors (e.g. pixel shuffle: four source rows of four f32 each, one 64-byte
//! destination run). Its reads are covered by 16-byte source vectors: exactly when they are
//! whole vectors too, else (a read with gaps, such as a stride-2 Slice's every other element)
//! by vectors that also hold bytes the statement skips, which are junk to the result and never
//! stored. The block's byte permutation is found by simulating the two loops on byte offsets,
//! so no mask is written by hand and one mechanism serves interleave, deinterleave, strided
//! and reversed gathers and every element size; each destination vector is then built from
//! the source vectors it draws on with `shuffle`s (see [`build`]).
//!
//! Loading skipped bytes must never leave the source tensor, which the verifier cannot see:
//! it proved in bounds only the bytes the statement reads. So a plan is used only when the
//! extremes of every vector load over the whole iteration space are proven inside the source
//! from the shapes (see [`loads_in_bounds`]). Of the ways to place the vectors (see
//! [`Placement`]), one keeps them between the first and last bytes each block reads, so a
//! gather that reads the very ends of its source can still be planned; when that way costs
//! more than the scalar moves, the statement keeps the ordinary nest.
//!
//! The other loops stay ordinary loops around the block and the statement's outermost loop
//! stays outermost (its range is what threads split). Moving F and X inward reorders the
//! points, which is only harmless for a copy whose destination runs are pairwise disjoint, so
//! that is all this path accepts (not fill, whose runs are not small enough to need it here,
//! and never accumulate), and the sum from +0.0 of one term per run that moves like one (a
//! Col2Im whose windows do not overlap): each of its destination vectors is added to +0.0
//! before it is stored ([`Body::finish_vector`]). The X iterations that do not fill a tile
//! run as scalar runs.

use crate::body::Body;
use crate::loops::{counted_loop, grouped_loop, Count, Emitter, LoopBody, Part};
use crate::mem::{load, store, Addr};
use crate::CodegenError;
use cranelift_codegen::ir::{types, ConstantData, InstBuilder, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{Loop, LoopStmt};
use std::collections::HashMap;
use std::rc::Rc;

/// Bytes of a vector.
const V: usize = 16;
/// The most source vectors one destination vector may draw on: more makes the shuffle tree
/// deeper than the scalar moves it replaces.
const MAX_SOURCES: usize = 4;
/// Blocks hold at most this many vectors per side, to bound code size and register pressure.
const MAX_VECTORS: usize = 12;
/// A square register transpose (see [`transpose_network`]) may have up to this many vectors
/// per side: 16x16 bytes.
const MAX_NETWORK: usize = 16;
/// The tile loop is unrolled until an iteration stores about this many vectors.
const UNROLL_VECTORS: usize = 8;

/// How a statement is vectorised.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Index of the lane loop X and of the factor loop F, if any, in the statement's loops.
    x: usize,
    f: Option<usize>,
    /// X iterations per block (a power of two).
    tile: u64,
    /// Offsets of the block's source vectors from its source address (at the tile's first X
    /// iteration and F = 0).
    src_vectors: Vec<i64>,
    /// The block's destination vectors: offset from its destination address, and how to
    /// compute it from the source vectors.
    dst_vectors: Vec<(i64, Node)>,
    /// Whether the source vectors hold bytes the statement skips (see [`Placement`]).
    skipped: bool,
}

/// A vector computed in a block.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
enum Node {
    /// Source vector number i, as loaded.
    Src(usize),
    /// `shuffle a b mask`: lane p is lane `mask[p]` of `a ++ b`.
    Shuffle(Rc<Node>, Rc<Node>, [u8; V]),
}

/// What a lane of a vector in the tree holds: a lane of a source vector, or something the
/// result does not need.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slot {
    Byte(usize, usize),
    Junk,
}

type Lanes = [Slot; V];

/// A half-result of the search: a vector made from one or two source vectors by at most one
/// shuffle, and its cost in instructions. Plain data: the search combines and discards
/// thousands of these, and building a tree (allocations) for each was most of a transpose's
/// compile time; [`Half::node`] builds one for the winner only. What its lanes hold follows
/// from the mask ([`Half::lanes`]) and is not stored, which keeps a candidate small to copy.
#[derive(Clone, Copy, Debug)]
struct Half {
    /// The source vectors shuffled (`a == b` for a one-source shuffle).
    a: usize,
    b: usize,
    /// `None`: source `a` as loaded.
    mask: Option<[u8; V]>,
    cost: u32,
}

impl Half {
    /// What its lanes hold.
    fn lanes(&self) -> Lanes {
        match self.mask {
            None => source_lanes(self.a),
            Some(mask) => std::array::from_fn(|p| match mask[p] as usize {
                i if i < V => Slot::Byte(self.a, i),
                i => Slot::Byte(self.b, i - V),
            }),
        }
    }

    fn node(&self) -> Rc<Node> {
        let src = |s| Rc::new(Node::Src(s));
        match self.mask {
            None => src(self.a),
            Some(mask) => Rc::new(Node::Shuffle(src(self.a), src(self.b), mask)),
        }
    }
}

impl Plan {
    /// Whether the block's source vectors hold bytes the statement does not read (a gather
    /// with gaps, such as a Slice with steps).
    pub(crate) fn reads_skipped_bytes(&self) -> bool {
        self.skipped
    }
}

/// Chooses how to vectorise `stmt`, whose source tensor is `src_bytes` long, or `None` when
/// this path does not apply: then the ordinary nest runs it.
pub(crate) fn plan(stmt: &LoopStmt, src_bytes: u64) -> Option<Plan> {
    if !stmt.moves_like_copy()
        || stmt.bytes >= V as u64
        || !relayout_ir::dependence::points_disjoint(stmt, 0)
    {
        return None;
    }
    let run = stmt.bytes;
    // The smallest tile whose X runs fill whole vectors when X is contiguous on one side.
    let tile = (V as u64) / gcd(run, V as u64);
    // No factor loop, or one of 2 to 4 iterations (never the outermost loop); for elements
    // of one or two bytes also one of 16 / run, the rows of a square register transpose.
    let factors = std::iter::once(None).chain(
        (1..stmt.loops.len())
            .filter(|&f| {
                let e = stmt.loops[f].extent;
                (2..=4).contains(&e) || (run <= 2 && e == V as u64 / run)
            })
            .map(Some),
    );
    let mut best: Option<(u64, u64, Plan)> = None;
    let mut built = Built::default();
    for f in factors {
        for x in 0..stmt.loops.len() {
            if Some(x) == f || stmt.loops[x].extent < tile {
                continue;
            }
            let Some((plan, cost)) = block(stmt, x, f, tile, src_bytes, &mut built) else {
                continue;
            };
            let extent = stmt.loops[x].extent;
            // Cheapest per destination vector, then the longest X (fewest scalar leftovers).
            let per_vector = cost / plan.dst_vectors.len() as u64;
            let key = (per_vector, std::cmp::Reverse(extent));
            if best
                .as_ref()
                .is_none_or(|(c, e, _)| key < (*c, std::cmp::Reverse(*e)))
            {
                best = Some((per_vector, extent, plan));
            }
        }
    }
    // Worth it when a destination vector (its shuffles, its store and its loads) costs fewer
    // instructions than its 16 / run scalar runs of one or two moves each, a load and a store.
    let moves = if run.is_power_of_two() { 1 } else { 2 };
    let scalar = 2 * moves * 64 * V as u64 / run;
    best.filter(|(c, _, _)| *c < scalar).map(|(_, _, p)| p)
}

/// The destination vectors [`build`] has searched for while planning one statement, with its
/// answer. Different choices of the lane and factor loops often ask for the same vectors (a
/// small transpose: 27 searches of 9 distinct vectors), and the searches are most of the
/// planning time. The key is each lane's [`slot_index`], which fits a byte.
#[derive(Default)]
struct Built(HashMap<[u8; V], Option<(Node, u32)>>);

impl Built {
    /// [`build`] of `target`, searched once per distinct target. Only for blocks of at most
    /// [`MAX_VECTORS`] source vectors, as [`build`] itself.
    fn build(&mut self, target: &Lanes) -> Option<(Node, u32)> {
        let key = target.map(|slot| slot_index(slot) as u8);
        self.0.entry(key).or_insert_with(|| build(target)).clone()
    }
}

/// The block of loops `x` (tiled by `tile`) and `f` (if any), if its writes are whole vectors,
/// its vector loads are proven inside the source of `src_bytes` bytes, and each destination
/// vector draws on few enough source vectors, with its cost in 64ths of an instruction: one
/// per shuffle, store and load, except that the loads beyond one per destination vector
/// (those of skipped bytes) count a half, as two loads issue per cycle. Reads with gaps have
/// three ways to place their vectors (see [`Placement`]): the cheapest one proven in bounds.
fn block(
    stmt: &LoopStmt,
    x: usize,
    f: Option<usize>,
    tile: u64,
    src_bytes: u64,
    built: &mut Built,
) -> Option<(Plan, u64)> {
    let lx = &stmt.loops[x];
    let lf = factor_loop(stmt, f);
    // The offsets of the block's runs, in the order of its points ((t, j) of the tile and
    // the factor loop), then of their bytes. The destination's first, as most choices of the
    // loops fail there (writes that are not whole vectors).
    let runs = |(sx, sf): (i64, i64)| -> Option<Vec<i64>> {
        let mut out = Vec::with_capacity((tile * lf.extent) as usize);
        for t in 0..tile as i64 {
            for j in 0..lf.extent as i64 {
                out.push(sx.checked_mul(t)?.checked_add(sf.checked_mul(j)?)?);
            }
        }
        Some(out)
    };
    let dst_runs = runs((lx.dst_stride, lf.dst_stride))?;
    let dst_vectors = vectors(&sorted_bytes(&dst_runs, stmt.bytes)?)?;
    let src_runs = runs((lx.src_stride, lf.src_stride))?;
    // Sorted once for every placement: this planning runs for every choice of X and F.
    let src_sorted = sorted_bytes(&src_runs, stmt.bytes)?;
    let placements = match vectors(&src_sorted) {
        Some(exact) => vec![(exact, false)],
        None => [Placement::Up, Placement::Down, Placement::Inside]
            .into_iter()
            .filter_map(|p| Some((covering(&src_sorted, p)?, true)))
            .collect(),
    };
    let (src, dst) = (bytes(&src_runs, stmt.bytes)?, bytes(&dst_runs, stmt.bytes)?);
    let mut best: Option<(Plan, u64)> = None;
    for (src_vectors, skipped) in placements {
        let Some((plan, cost)) =
            block_from((x, f, tile), (&src, &dst), src_vectors, &dst_vectors, built)
        else {
            continue;
        };
        let plan = Plan { skipped, ..plan };
        if loads_in_bounds(stmt, &plan, src_bytes) && best.as_ref().is_none_or(|b| cost < b.1) {
            best = Some((plan, cost));
        }
    }
    best
}

/// The factor loop `f` of `stmt`, or without one a loop of a single iteration.
fn factor_loop(stmt: &LoopStmt, f: Option<usize>) -> Loop {
    f.map_or(
        Loop {
            extent: 1,
            src_stride: 0,
            dst_stride: 0,
        },
        |f| stmt.loops[f],
    )
}

/// The block whose bytes `src` and `dst` (offsets from the block's addresses, in the same
/// order) are read from `src_vectors` and written as `dst_vectors`, with its cost (see
/// [`block`]), its destination vectors built by `built` (loops `x` and `f`, X tiled by `tile`).
fn block_from(
    (x, f, tile): (usize, Option<usize>, u64),
    (src, dst): (&[i64], &[i64]),
    src_vectors: Vec<i64>,
    dst_vectors: &[i64],
    built: &mut Built,
) -> Option<(Plan, u64)> {
    if src_vectors.len() > MAX_NETWORK {
        return None;
    }
    // Where each destination byte comes from: (source vector, lane), by destination vector.
    let mut targets = vec![[Slot::Junk; V]; dst_vectors.len()];
    for (&s, &d) in src.iter().zip(dst) {
        let (sv, sl) = locate(&src_vectors, s)?;
        let (dv, dl) = locate(dst_vectors, d)?;
        targets[dv][dl] = Slot::Byte(sv, sl);
    }
    let mut shuffles = 0;
    let mut nodes = Vec::with_capacity(dst_vectors.len());
    if let Some((network, cost)) = transpose_network(&targets, src_vectors.len()) {
        shuffles = cost;
        nodes.extend(dst_vectors.iter().copied().zip(network));
    } else {
        if src_vectors.len() > MAX_VECTORS {
            return None;
        }
        for (target, &offset) in targets.iter().zip(dst_vectors) {
            let (node, cost) = built.build(target)?;
            shuffles += u64::from(cost);
            nodes.push((offset, node));
        }
    }
    let (loads, stores) = (src_vectors.len() as u64, dst_vectors.len() as u64);
    let extra_loads = loads.saturating_sub(stores);
    let cost = 64 * (shuffles + stores + (loads - extra_loads)) + 32 * extra_loads;
    let plan = Plan {
        x,
        f,
        tile,
        src_vectors,
        dst_vectors: nodes,
        skipped: false,
    };
    Some((plan, cost))
}

/// Where the source vectors of a read with gaps go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placement {
    /// Each starts at the lowest byte not yet held: the last may reach up to 15 bytes past
    /// the block's highest read, which [`loads_in_bounds`] must prove inside the source.
    Up,
    /// Each ends at the highest byte not yet held (the mirror image, for reversed reads or
    /// reads that end at the source's end): the last may reach below the block's lowest
    /// read.
    Down,
    /// As `Up`, but a vector that would reach past the highest read is moved down to end
    /// there (it may then overlap the one before it), so that every vector lies between the
    /// first and the last byte the block reads, two bytes the verifier proved inside the
    /// source: always in bounds, at the price of shuffles when the lanes no longer line up.
    Inside,
}

/// Starts of 16-byte vectors, in increasing order, that together hold every byte of
/// `sorted` (a block's reads in increasing order, which may repeat and leave gaps), placed as
/// `placement` says; `None` when `Inside` finds the span of the reads shorter than a vector.
fn covering(sorted: &[i64], placement: Placement) -> Option<Vec<i64>> {
    if placement == Placement::Down {
        // The mirror image of `Up`: a vector of the negated offsets starting at -o ends at o.
        let mirrored: Vec<i64> = sorted.iter().rev().map(|&o| -o).collect();
        let starts = covering(&mirrored, Placement::Up)?;
        return starts
            .iter()
            .rev()
            .map(|&s| s.checked_add(V as i64 - 1).map(|e| -e))
            .collect();
    }
    let (&lo, &hi) = (sorted.first()?, sorted.last()?);
    let last_start = if placement == Placement::Inside {
        hi.checked_sub(V as i64 - 1).filter(|&s| s >= lo)?
    } else {
        i64::MAX
    };
    let mut starts: Vec<i64> = Vec::new();
    for &o in sorted {
        if starts.last().is_some_and(|&s| o < s + V as i64) {
            continue;
        }
        // `lo <= min(o, last_start) <= o`, so the vector holds `o`; `Inside` ends it at or
        // before `hi`.
        starts.push(o.min(last_start));
    }
    Some(starts)
}

/// Whether every source vector `plan` loads lies inside the source tensor of `src_bytes`
/// bytes at every block the nest runs: the lowest and highest block addresses are those of
/// the loops at their extreme values (the addresses are affine in the indices, strides of
/// any sign), X ranging over the first iterations of the tiles it can start (any iteration up
/// to `extent - tile` for the outermost loop, whose tiles start wherever a thread's range
/// does; multiples of the tile otherwise).
fn loads_in_bounds(stmt: &LoopStmt, plan: &Plan, src_bytes: u64) -> bool {
    let (Some(&first), Some(&last)) = (plan.src_vectors.first(), plan.src_vectors.last()) else {
        return false;
    };
    let mut lo = i128::from(stmt.src_offset);
    let mut hi = lo;
    for (i, l) in stmt.loops.iter().enumerate() {
        // F's iterations are part of the block (in its vector offsets).
        if Some(i) == plan.f {
            continue;
        }
        let top = if i == plan.x {
            if l.extent < plan.tile {
                return false;
            }
            if i == 0 {
                l.extent - plan.tile
            } else {
                (l.extent / plan.tile - 1) * plan.tile
            }
        } else {
            l.extent.saturating_sub(1)
        };
        let reach = i128::from(l.src_stride) * i128::from(top);
        lo += reach.min(0);
        hi += reach.max(0);
    }
    lo + i128::from(first) >= 0 && hi + i128::from(last) + V as i128 <= i128::from(src_bytes)
}

/// The starts of the 16-byte vectors that exactly cover `sorted` (offsets in increasing
/// order), in increasing order, or `None` when the offsets repeat or do not fill whole
/// vectors.
fn vectors(sorted: &[i64]) -> Option<Vec<i64>> {
    if sorted.windows(2).any(|w| w[0] == w[1]) || sorted.len() % V != 0 {
        return None;
    }
    // Sorted and distinct, so a chunk of 16 spanning 15 bytes is contiguous.
    sorted
        .chunks_exact(V)
        .map(|c| (c[V - 1] - c[0] == V as i64 - 1).then_some(c[0]))
        .collect()
}

/// The offsets of the bytes of runs of `len` bytes that start at `starts`, run by run.
fn bytes(starts: &[i64], len: u64) -> Option<Vec<i64>> {
    let mut out = Vec::with_capacity(starts.len() * len as usize);
    for &s in starts {
        for c in 0..len as i64 {
            out.push(s.checked_add(c)?);
        }
    }
    Some(out)
}

/// [`bytes`] in increasing order: the runs sorted by start (a few, where the bytes are many),
/// then the bytes sorted only if runs overlap.
fn sorted_bytes(starts: &[i64], len: u64) -> Option<Vec<i64>> {
    let mut starts = starts.to_vec();
    starts.sort_unstable();
    let mut out = bytes(&starts, len)?;
    if !out.is_sorted() {
        out.sort_unstable();
    }
    Some(out)
}

/// The vector and lane of byte `offset`.
fn locate(starts: &[i64], offset: i64) -> Option<(usize, usize)> {
    let i = starts.partition_point(|&s| s <= offset).checked_sub(1)?;
    let lane = usize::try_from(offset - starts[i])
        .ok()
        .filter(|&l| l < V)?;
    Some((i, lane))
}

/// The cheapest way found to build a destination vector whose lanes `target` name source
/// bytes.
///
/// The sources it draws on are split in two halves; each half is either one source vector,
/// or two combined by an unpack (`punpck{l,h}{bw,wd,dq,qdq}`, one instruction, which keeps
/// the bytes wherever the unpack puts them), or gathered into their final lanes by a general
/// shuffle (two `pshufb` and a `por`). The halves are then merged by one shuffle (one
/// instruction when Cranelift recognises the mask, else three). Lanes cannot be zeroed on
/// the way: the verifier rejects the out-of-range mask indices that would zero them. The classic 4x4 transpose (two
/// levels of unpacks) comes out of this search without being written down.
fn build(target: &Lanes) -> Option<(Node, u32)> {
    let mut sources: Vec<usize> = Vec::new();
    for slot in target {
        if let Slot::Byte(s, _) = *slot {
            if !sources.contains(&s) {
                sources.push(s);
            }
        }
    }
    if sources.is_empty() || sources.len() > MAX_SOURCES {
        return None;
    }
    if sources.len() == 1 {
        // `half` offers the source as loaded too, which holds the bytes but maybe not in
        // their lanes: only a candidate with every needed byte in place is a result.
        let in_place = |c: &Half| {
            c.lanes()
                .iter()
                .zip(target)
                .all(|(have, want)| *want == Slot::Junk || have == want)
        };
        return half(&sources, target)
            .into_iter()
            .filter(in_place)
            .min_by_key(|c| c.cost)
            .map(|c| (Rc::unwrap_or_clone(c.node()), c.cost));
    }
    let (a, b) = sources.split_at(sources.len().div_ceil(2));
    let (left, right) = (half(a, target), half(b, target));
    // This double loop is most of the compile time of an interleave kernel: look lanes up
    // in tables, and remember only the best pair so far.
    let right_lanes: Vec<LaneTable> = right.iter().map(|r| lane_table(&r.lanes())).collect();
    let mut best: Option<(&Half, &Half, [u8; V], u32)> = None;
    for l in &left {
        let l_lanes = lane_table(&l.lanes());
        for (r, r_lanes) in right.iter().zip(&right_lanes) {
            // Even a one-instruction merge would not beat the best so far: skip the mask.
            if best.is_some_and(|(_, _, _, c)| l.cost + r.cost + 1 >= c) {
                continue;
            }
            let Some(mask) = merge_mask(&l_lanes, r_lanes, target) else {
                continue;
            };
            let cost = l.cost + r.cost + if single_instruction(&mask) { 1 } else { 3 };
            if best.is_none_or(|(_, _, _, c)| cost < c) {
                best = Some((l, r, mask, cost));
            }
        }
    }
    best.map(|(l, r, mask, cost)| (Node::Shuffle(l.node(), r.node(), mask), cost))
}

/// Where each slot first occurs in a vector's lanes (`u8::MAX`: nowhere), indexed by
/// [`slot_index`].
type LaneTable = [u8; SLOTS];

/// Slots a lane can hold: a byte of one of at most [`MAX_VECTORS`] source vectors, or junk.
const SLOTS: usize = MAX_VECTORS * V + 1;

fn slot_index(slot: Slot) -> usize {
    match slot {
        Slot::Byte(v, l) => v * V + l,
        Slot::Junk => MAX_VECTORS * V,
    }
}

fn lane_table(lanes: &Lanes) -> LaneTable {
    let mut table = [u8::MAX; SLOTS];
    for (p, &slot) in lanes.iter().enumerate().rev() {
        table[slot_index(slot)] = p as u8;
    }
    table
}

/// Ways to hold every byte of `target` that comes from `sources` (one or two vectors).
fn half(sources: &[usize], target: &Lanes) -> Vec<Half> {
    // One or, for two sources, both orders of the eight unpacks and a general shuffle.
    let mut out = Vec::with_capacity(2 * UNPACKS.len() + 1);
    match *sources {
        [s] => {
            let whole = Half {
                a: s,
                b: s,
                mask: None,
                cost: 0,
            };
            if source_lanes(s) == *target {
                // Already in place: the destination vector is the source vector.
                return vec![whole];
            }
            out.push(whole);
            // A `pshufb` that puts the bytes of `target` the source holds into their lanes
            // (the other lanes keep their own byte, which is junk to the result).
            out.push(shuffled(
                s,
                s,
                gather_mask(&source_lanes(s), None, target),
                1,
            ));
        }
        [s, t] => {
            for (x, y) in [(s, t), (t, s)] {
                // The lanes of `x ++ y` that `target` needs, as a bit set like `UNPACK_HELD`.
                let needed = target.iter().fold(0u32, |set, slot| match *slot {
                    Slot::Byte(v, l) if v == x => set | 1 << l,
                    Slot::Byte(v, l) if v == y => set | 1 << (V + l),
                    _ => set,
                });
                for (mask, held) in UNPACKS.iter().zip(UNPACK_HELD.iter()) {
                    if needed & !held == 0 {
                        out.push(shuffled(x, y, *mask, 1));
                    }
                }
            }
            // A general shuffle that puts the bytes of `target` they hold into their lanes.
            let mask = gather_mask(&source_lanes(s), Some(&source_lanes(t)), target);
            out.push(shuffled(s, t, mask, 3));
        }
        _ => {}
    }
    out
}

/// The mask that moves each byte of `target` held in `a` (else in `b`) to its lane; a lane
/// whose byte neither holds keeps lane p of `a`.
fn gather_mask(a: &Lanes, b: Option<&Lanes>, target: &Lanes) -> [u8; V] {
    let in_a = lane_table(a);
    let in_b = b.map(lane_table);
    std::array::from_fn(|p| {
        let i = slot_index(target[p]);
        match (in_a[i], in_b.as_ref().map_or(u8::MAX, |t| t[i])) {
            (u8::MAX, u8::MAX) => p as u8,
            (u8::MAX, j) => V as u8 + j,
            (j, _) => j,
        }
    })
}

/// `shuffle a b mask` of source vectors `a` and `b`, costing `cost` instructions.
fn shuffled(a: usize, b: usize, mask: [u8; V], cost: u32) -> Half {
    Half {
        a,
        b,
        mask: Some(mask),
        cost,
    }
}

/// The lanes of source vector `s` as loaded.
fn source_lanes(s: usize) -> Lanes {
    std::array::from_fn(|l| Slot::Byte(s, l))
}

/// The mask of the final step, lanes of `l` and `r` (given by their lane tables) into
/// `target`'s order: each lane from the first place `l` holds it, else from `r`.
fn merge_mask(l: &LaneTable, r: &LaneTable, target: &Lanes) -> Option<[u8; V]> {
    let mut mask = [0u8; V];
    for (m, &t) in mask.iter_mut().zip(target) {
        let i = slot_index(t);
        *m = match (l[i], r[i]) {
            (u8::MAX, u8::MAX) => return None,
            (u8::MAX, j) => V as u8 + j,
            (j, _) => j,
        };
    }
    Some(mask)
}

/// Whether Cranelift lowers a two-operand mask to one instruction on x86-64 (the forms this
/// module aims for: unpacks, `shufps`, word blends); a guess used only to rank candidates.
fn single_instruction(mask: &[u8; V]) -> bool {
    if UNPACKS.contains(mask) {
        return true;
    }
    let dwords: Option<Vec<u8>> = (0..4)
        .map(|d| {
            let w = &mask[4 * d..4 * d + 4];
            (w[0] % 4 == 0 && (1..4).all(|k| w[k] == w[0] + k as u8)).then_some(w[0] / 4)
        })
        .collect();
    if let Some(d) = dwords {
        // shufps: two lanes from the first operand, then two from the second.
        if d[0] < 4 && d[1] < 4 && (4..8).contains(&d[2]) && (4..8).contains(&d[3]) {
            return true;
        }
    }
    // pblendw: each word stays in its lane, from either operand.
    (0..8).all(|w| {
        let (lo, hi) = (mask[2 * w], mask[2 * w + 1]);
        hi == lo + 1 && (lo as usize % V) == 2 * w
    })
}

/// `punpck{l,h}{bw,wd,dq,qdq} a b` as shuffle masks.
static UNPACKS: std::sync::LazyLock<Vec<[u8; V]>> = std::sync::LazyLock::new(|| {
    [1, 2, 4, 8]
        .into_iter()
        .flat_map(|width| [false, true].map(|high| unpack_mask(width, high)))
        .collect()
});

/// The lanes of `a ++ b` each of [`UNPACKS`] keeps, as bit sets (bit `i`: lane `i`).
static UNPACK_HELD: std::sync::LazyLock<Vec<u32>> = std::sync::LazyLock::new(|| {
    UNPACKS
        .iter()
        .map(|mask| mask.iter().fold(0u32, |set, &i| set | 1 << i))
        .collect()
});

/// `punpck{l,h}` of units of `width` bytes: the low (or high) halves of `a` and `b`,
/// interleaved unit by unit.
pub(crate) fn unpack_mask(width: usize, high: bool) -> [u8; V] {
    let base = if high { V / 2 } else { 0 };
    std::array::from_fn(|p| {
        let unit = p / width;
        let from_b = unit % 2 == 1;
        let lane = base + (unit / 2) * width + p % width;
        (lane + if from_b { V } else { 0 }) as u8
    })
}

/// The classic register transpose, when the block is one: `k` source vectors of `k`
/// elements of `w = 16 / k` bytes each, destination vector `c` holding element `c` of every
/// source in source order (`targets[c]` lane `p` = source `p / w`, lane `c * w + p % w`).
/// Then destination vector `c` is the root of `log2 k` levels of unpacks: a level-`L`
/// vector holds, for a group of `2^L` consecutive sources, the elements of a block of
/// `k / 2^L` columns, interleaved column by column; two level-`L` vectors of sibling groups
/// make the level-`L+1` vectors of the low and high halves of their columns by `punpckl` and
/// `punpckh` of units of `2^L * w` bytes. The `k * log2 k` distinct nodes are shared between
/// the destination vectors (codegen emits each once), so 8x8 16-bit elements take 24 unpacks
/// and 16x16 bytes 64: what a hand-written SSE2 transpose does. The search of [`build`]
/// finds the 4x4 32-bit case itself but cannot combine more than [`MAX_SOURCES`] vectors.
fn transpose_network(targets: &[Lanes], sources: usize) -> Option<(Vec<Node>, u64)> {
    let k = targets.len();
    if k < 2 || !k.is_power_of_two() || sources != k || V % k != 0 {
        return None;
    }
    let w = V / k;
    let square = targets.iter().enumerate().all(|(c, t)| {
        t.iter()
            .enumerate()
            .all(|(p, slot)| *slot == Slot::Byte(p / w, c * w + p % w))
    });
    if !square {
        return None;
    }
    fn column(first: usize, level: u32, q: usize, w: usize) -> Rc<Node> {
        if level == 0 {
            return Rc::new(Node::Src(first));
        }
        let half = 1 << (level - 1);
        let a = column(first, level - 1, q >> 1, w);
        let b = column(first + half, level - 1, q >> 1, w);
        Rc::new(Node::Shuffle(a, b, unpack_mask(half * w, q & 1 == 1)))
    }
    let levels = k.trailing_zeros();
    let nodes = (0..k)
        .map(|c| Rc::unwrap_or_clone(column(0, levels, c, w)))
        .collect();
    Some((nodes, k as u64 * u64::from(levels)))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Emitter<'_> {
    /// Emits the statement's nest with the block innermost; `count` iterations of the
    /// outermost loop run from `src` and `dst`.
    pub(crate) fn shuffle_nest(
        &self,
        b: &mut FunctionBuilder,
        stmt: &LoopStmt,
        plan: &Plan,
        count: Count,
        src: Addr,
        dst: Addr,
    ) -> Result<(), CodegenError> {
        let overflow = || self.overflow("a shuffle block offset");
        let others: Vec<Loop> = stmt
            .loops
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != plan.x && Some(i) != plan.f)
            .map(|(_, l)| *l)
            .collect();
        let lx = stmt.loops[plan.x];
        let lf = factor_loop(stmt, plan.f);
        // The scalar runs of one X iteration: all of F.
        let mut leftover = |b: &mut FunctionBuilder, s: Addr, d: Addr| {
            for j in 0..lf.extent as i64 {
                let s = lf.src_stride.checked_mul(j).and_then(|o| s.plus(o));
                let d = lf.dst_stride.checked_mul(j).and_then(|o| d.plus(o));
                self.body
                    .emit(b, s.ok_or_else(overflow)?, d.ok_or_else(overflow)?)?;
            }
            Ok(())
        };
        // The block's instructions are the same in every tile: work out their order once.
        let steps = Steps::of(plan);
        let mut block = |b: &mut FunctionBuilder, s: Addr, d: Addr| {
            emit_block(b, plan, &steps, self.body, (s, d), overflow)
        };
        // Blocks per iteration of the tile loop: about [`UNROLL_VECTORS`] destination vectors.
        let unroll = (UNROLL_VECTORS / plan.dst_vectors.len().max(1)).max(1) as u64;
        if plan.x == 0 {
            // X is the outermost loop, whose count is only known at run time: tile it, and put
            // the other loops inside both the tiles and the leftover iterations.
            self.tiled(
                b,
                &lx,
                (plan.tile, 1),
                count,
                (src, dst),
                Tiles {
                    block: &mut |b, s, d| around(b, &others, None, s, d, &mut block),
                    single: &mut |b, s, d| around(b, &others, None, s, d, &mut leftover),
                },
            )
        } else {
            around(b, &others, Some(count), src, dst, &mut |b, s, d| {
                self.tiled(
                    b,
                    &lx,
                    (plan.tile, unroll),
                    Count::Const(lx.extent),
                    (s, d),
                    Tiles {
                        block: &mut block,
                        single: &mut leftover,
                    },
                )
            })
        }
    }

    /// `count` iterations of loop `l` from `src` and `dst`: whole tiles of `tile` iterations
    /// by `block`, then the remaining iterations one by one by `single`. With a known count,
    /// up to `unroll` blocks (a power of two) run per loop iteration.
    fn tiled(
        &self,
        b: &mut FunctionBuilder,
        l: &Loop,
        (tile, unroll): (u64, u64),
        count: Count,
        (src, dst): (Addr, Addr),
        Tiles { block, single }: Tiles<'_, '_>,
    ) -> Result<(), CodegenError> {
        let overflow = || self.overflow("a shuffle block offset");
        match count {
            Count::Const(n) => {
                let main = n / tile;
                // Cranelift does not unroll: a loop of one small block spends as many
                // instructions on the loop as on the block. So up to `unroll` blocks per
                // iteration, and the leftover blocks one by one.
                let u = if main == 0 {
                    1
                } else {
                    1u64 << (63 - unroll.min(main).leading_zeros())
                };
                let big = (
                    l.src_stride.checked_mul(tile as i64).ok_or_else(overflow)?,
                    l.dst_stride.checked_mul(tile as i64).ok_or_else(overflow)?,
                );
                grouped_loop(
                    b,
                    Count::Const(main),
                    u,
                    (src, dst),
                    big,
                    &mut |b, s, d, part| {
                        let blocks = if part == Part::Group { u } else { 1 };
                        for k in 0..blocks as i64 {
                            let s = big.0.checked_mul(k).and_then(|o| s.plus(o));
                            let d = big.1.checked_mul(k).and_then(|o| d.plus(o));
                            block(b, s.ok_or_else(overflow)?, d.ok_or_else(overflow)?)?;
                        }
                        Ok(())
                    },
                    &overflow,
                )?;
                for j in main * tile..n {
                    let s = l.src_stride.checked_mul(j as i64).and_then(|o| src.plus(o));
                    let d = l.dst_stride.checked_mul(j as i64).and_then(|o| dst.plus(o));
                    single(b, s.ok_or_else(overflow)?, d.ok_or_else(overflow)?)?;
                }
                Ok(())
            }
            Count::Dyn(_) => grouped_loop(
                b,
                count,
                tile,
                (src, dst),
                (l.src_stride, l.dst_stride),
                &mut |b, s, d, part| match part {
                    Part::Group => block(b, s, d),
                    Part::One => single(b, s, d),
                },
                &overflow,
            ),
        }
    }
}

/// What [`Emitter::tiled`] runs: a whole tile (`block`), and one leftover iteration
/// (`single`).
struct Tiles<'a, 'b> {
    block: &'a mut LoopBody<'b>,
    single: &'a mut LoopBody<'b>,
}

/// The ordinary loops `loops` (outermost first) around `inner`; the first runs `count` times
/// when given, else its extent.
fn around(
    b: &mut FunctionBuilder,
    loops: &[Loop],
    count: Option<Count>,
    src: Addr,
    dst: Addr,
    inner: &mut LoopBody<'_>,
) -> Result<(), CodegenError> {
    let Some((l, rest)) = loops.split_first() else {
        return inner(b, src, dst);
    };
    let count = count.unwrap_or(Count::Const(l.extent));
    counted_loop(
        b,
        count,
        src,
        dst,
        (l.src_stride, l.dst_stride),
        &mut |b, s, d| around(b, rest, None, s, d, inner),
    )
}

/// A block's instructions in the order to emit them (see [`emit_block`]), worked out once
/// per nest: each step's value is the one of that index.
struct Steps {
    steps: Vec<Step>,
    /// Each destination vector: its offset and the step computing it.
    stores: Vec<(i64, usize)>,
}

/// One instruction of a block.
enum Step {
    /// Load source vector i.
    Load(usize),
    /// `shuffle x y mask` of the values of steps x and y.
    Shuffle(usize, usize, [u8; V]),
}

/// A node with its operands replaced by their numbers among the distinct nodes: equal
/// trees get equal numbers without hashing or comparing whole trees.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Flat {
    Src(usize),
    Shuffle(usize, usize, [u8; V]),
}

/// The distinct nodes of a block's trees, numbered in the order first met (operands before
/// the node, left before right), each listed under its height.
#[derive(Default)]
struct Distinct {
    nodes: Vec<Flat>,
    numbers: HashMap<Flat, usize>,
    levels: Vec<Vec<usize>>,
}

impl Distinct {
    /// The number and height of `node` (sources 0, a shuffle one more than its operands).
    fn add(&mut self, node: &Node) -> (usize, usize) {
        let (flat, h) = match node {
            Node::Src(i) => (Flat::Src(*i), 0),
            Node::Shuffle(x, y, mask) => {
                let (x, hx) = self.add(x);
                let (y, hy) = self.add(y);
                (Flat::Shuffle(x, y, *mask), 1 + hx.max(hy))
            }
        };
        if let Some(&n) = self.numbers.get(&flat) {
            return (n, h);
        }
        let n = self.nodes.len();
        self.nodes.push(flat);
        self.numbers.insert(flat, n);
        if self.levels.len() <= h {
            self.levels.resize(h + 1, Vec::new());
        }
        self.levels[h].push(n);
        (n, h)
    }
}

impl Steps {
    fn of(plan: &Plan) -> Steps {
        // Destination vectors share intermediate shuffles (the first levels of a transpose):
        // each distinct node is emitted once, in `schedule`'s order, and each source vector
        // is loaded right before its first use. The machine code keeps this order, and in it
        // a 16x16 byte transpose keeps about one level's vectors live (emitted tree by tree,
        // with every load first, most of it was spilled).
        let mut distinct = Distinct::default();
        let roots: Vec<usize> = plan
            .dst_vectors
            .iter()
            .map(|(_, n)| distinct.add(n).0)
            .collect();
        let order = schedule(&distinct);
        let mut step_of = vec![usize::MAX; distinct.nodes.len()];
        for (k, &n) in order.iter().enumerate() {
            step_of[n] = k;
        }
        let steps = order
            .iter()
            .map(|&n| match distinct.nodes[n] {
                Flat::Src(i) => Step::Load(i),
                Flat::Shuffle(x, y, mask) => Step::Shuffle(step_of[x], step_of[y], mask),
            })
            .collect();
        let stores = plan
            .dst_vectors
            .iter()
            .zip(roots)
            .map(|((o, _), n)| (*o, step_of[n]))
            .collect();
        Steps { steps, stores }
    }
}

/// One block: load the source vectors, build and store the destination vectors, as `steps`
/// (those of `plan`) say; each destination vector as `body` finishes it (a sum of one term
/// adds it to +0.0).
fn emit_block(
    b: &mut FunctionBuilder,
    plan: &Plan,
    steps: &Steps,
    body: &Body,
    (src, dst): (Addr, Addr),
    overflow: impl Fn() -> CodegenError,
) -> Result<(), CodegenError> {
    let mut values: Vec<Value> = Vec::with_capacity(steps.steps.len());
    for step in &steps.steps {
        let v = match *step {
            Step::Load(i) => {
                let at = src.plus(plan.src_vectors[i]).ok_or_else(&overflow)?;
                load(b, types::I8X16, at, 0)
            }
            Step::Shuffle(x, y, ref mask) => {
                let (x, y) = (values[x], values[y]);
                let imm = b.func.dfg.immediates.push(ConstantData::from(&mask[..]));
                b.ins().shuffle(x, y, imm)
            }
        };
        values.push(v);
    }
    for &(o, i) in &steps.stores {
        let v = body.finish_vector(b, values[i]);
        store(b, v, dst.plus(o).ok_or_else(&overflow)?, 0);
    }
    Ok(())
}

/// The numbers of the `distinct` nodes in an order to emit them: by height (sources, then
/// shuffles of sources, then shuffles of those, ...), and within a height by the positions
/// of their operands in the order so far, so that the two results of a pair of operands
/// (an unpack's low and high halves) come together and the operands can die after them.
fn schedule(distinct: &Distinct) -> Vec<usize> {
    let nodes = &distinct.nodes;
    let mut position = vec![usize::MAX; nodes.len()];
    let mut order = Vec::with_capacity(nodes.len());
    for level in &distinct.levels {
        let mut level = level.clone();
        let key = |n: usize| match nodes[n] {
            Flat::Src(i) => (i, 0),
            Flat::Shuffle(x, y, _) => {
                let (a, b) = (position[x], position[y]);
                (a.min(b), a.max(b))
            }
        };
        // Stable: nodes with the same operands keep their first-use order.
        level.sort_by_key(|&n| key(n));
        for n in level {
            position[n] = order.len();
            order.push(n);
        }
    }
    // Sources are loaded where first used: right before the first shuffle that reads them.
    let mut out = Vec::with_capacity(order.len());
    let mut loaded = vec![false; nodes.len()];
    for &n in &order {
        if let Flat::Shuffle(x, y, _) = nodes[n] {
            for operand in [x, y] {
                if matches!(nodes[operand], Flat::Src(_)) && !loaded[operand] {
                    loaded[operand] = true;
                    out.push(operand);
                }
            }
            out.push(n);
        }
    }
    // A source no shuffle reads: a destination vector that is a source as loaded.
    out.extend(
        order
            .iter()
            .copied()
            .filter(|&n| matches!(nodes[n], Flat::Src(_)) && !loaded[n]),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::lp;
    use relayout_ir::LoopAction;

    /// A Slice with `step` (negative: reversed) over the last axis of `rows` rows of `width`
    /// elements of `e` bytes, from element `start`, `n` elements a row; and its source size.
    fn slice(e: u64, rows: u64, width: u64, start: i64, step: i64, n: u64) -> (LoopStmt, u64) {
        let e64 = e as i64;
        let stmt = LoopStmt {
            action: LoopAction::Copy,
            bytes: e,
            src_offset: start * e64,
            dst_offset: 0,
            loops: vec![
                lp(rows, width as i64 * e64, n as i64 * e64),
                lp(n, step * e64, e64),
            ],
            window: None,
        };
        (stmt, rows * width * e)
    }

    #[test]
    fn covering_stays_inside_the_bytes_read() {
        // Every other f32 of 16 bytes... 28 bytes: the second vector moves down to end at 27.
        let reads: Vec<i64> = [0i64, 8, 16, 24].iter().flat_map(|&s| s..s + 4).collect();
        assert_eq!(covering(&reads, Placement::Inside), Some(vec![0, 12]));
        assert_eq!(covering(&reads, Placement::Up), Some(vec![0, 16]));
        assert_eq!(covering(&reads, Placement::Down), Some(vec![-4, 12]));
        // Reversed: the same bytes in the other order.
        let rev: Vec<i64> = reads.iter().map(|&o| -o).collect();
        let mut rev = rev;
        rev.sort_unstable();
        let starts = covering(&rev, Placement::Inside).unwrap();
        assert!(
            starts.iter().all(|&s| s >= -27 && s + 15 <= 0),
            "{starts:?}"
        );
        // A span shorter than a vector cannot be covered inside it.
        assert_eq!(covering(&[0, 3, 6, 9], Placement::Inside), None);
        assert_eq!(covering(&[0, 3, 6, 9], Placement::Up), Some(vec![0]));
        assert_eq!(covering(&[0, 3, 6, 9], Placement::Down), Some(vec![-6]));
    }

    #[test]
    fn strided_gathers_of_every_element_size_and_step() {
        for e in [1u64, 2, 4, 8] {
            for step in [2i64, 3, 4, -1, -2, -3, -4] {
                let width = 64 * step.unsigned_abs() + 1;
                let start = if step < 0 { width as i64 - 1 } else { 0 };
                let (stmt, size) = slice(e, 3, width, start, step, 64);
                let plan = plan(&stmt, size);
                let plan = plan.unwrap_or_else(|| panic!("no plan for {e}-byte step {step}"));
                assert_eq!(
                    plan.reads_skipped_bytes(),
                    step != -1,
                    "{e} {step}: {plan:?}"
                );
            }
        }
    }

    /// Every vector load of every block the nest can run, by brute force: the other loops at
    /// every value, X at every iteration a tile can start at (any for the outermost loop,
    /// whose tiles start where a thread's range does; else the multiples of the tile).
    fn loads_inside(stmt: &LoopStmt, plan: &Plan, size: u64) -> bool {
        let mut bases = vec![stmt.src_offset];
        for (i, l) in stmt.loops.iter().enumerate() {
            let (top, every) = match i {
                _ if Some(i) == plan.f => (0, 1),
                0 if i == plan.x => (l.extent - plan.tile, 1),
                _ if i == plan.x => (l.extent - plan.tile, plan.tile as usize),
                _ => (l.extent - 1, 1),
            };
            bases = bases
                .iter()
                .flat_map(|&b| {
                    (0..=top as i64)
                        .step_by(every)
                        .map(move |k| b + k * l.src_stride)
                })
                .collect();
        }
        bases.iter().all(|&b| {
            plan.src_vectors
                .iter()
                .all(|&o| b + o >= 0 && b + o + V as i64 <= size as i64)
        })
    }

    /// Gathers that read the first and last elements of their source, where some placements
    /// of the vectors would load outside it: a plan is found only when proven, and brute force
    /// agrees that it stays inside.
    #[test]
    fn plans_load_inside_the_source() {
        let mut planned = 0;
        for e in [1u64, 2, 4, 8] {
            for step in [2i64, 3, 4, -2, -3, -4] {
                let s = step.unsigned_abs();
                for n in [8u64, 16, 17, 31, 32, 33] {
                    for lead in [0u64, 1] {
                        let width = lead + (n - 1) * s + 1;
                        let start = if step > 0 { lead } else { width - 1 - lead } as i64;
                        let (stmt, size) = slice(e, 2, width, start, step, n);
                        for stmt in [stmt.clone(), swapped(&stmt)] {
                            if let Some(plan) = plan(&stmt, size) {
                                planned += 1;
                                assert!(loads_inside(&stmt, &plan, size), "{stmt:?}\n{plan:?}");
                            }
                        }
                    }
                }
            }
        }
        assert!(planned > 200, "{planned}");
    }

    fn swapped(stmt: &LoopStmt) -> LoopStmt {
        let mut s = stmt.clone();
        s.loops.swap(0, 1);
        s
    }

    /// What a node's lanes hold, by simulating its shuffles.
    fn lanes_of(node: &Node) -> Lanes {
        match node {
            Node::Src(i) => std::array::from_fn(|l| Slot::Byte(*i, l)),
            Node::Shuffle(x, y, mask) => {
                let (a, b) = (lanes_of(x), lanes_of(y));
                std::array::from_fn(|p| match mask[p] as usize {
                    i if i < V => a[i],
                    i => b[i - V],
                })
            }
        }
    }

    /// The square blocks of 1- and 2-byte elements are planned as the unpack network, which
    /// puts every byte where the transpose needs it, with `k log2 k` distinct shuffles.
    #[test]
    fn square_blocks_of_small_elements_are_unpack_networks() {
        for e in [1u64, 2] {
            let k = (V as u64 / e) as i64;
            let e64 = e as i64;
            // Destination rows in blocks of k (F), k source rows (X) per block.
            let stmt = LoopStmt {
                action: LoopAction::Copy,
                bytes: e,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![
                    lp(2, k * e64, k * 2 * k * e64),
                    lp(k as u64, e64, 2 * k * e64),
                    lp(2 * k as u64, 2 * k * e64, e64),
                ],
                window: None,
            };
            let size = (2 * k * 2 * k * e64) as u64;
            let plan = plan(&stmt, size).expect("a plan");
            assert_eq!((plan.x, plan.f, plan.tile), (2, Some(1), k as u64));
            assert_eq!(plan.src_vectors.len(), k as usize);
            assert_eq!(plan.dst_vectors.len(), k as usize);
            let mut distinct = std::collections::HashSet::new();
            fn walk<'a>(n: &'a Node, seen: &mut std::collections::HashSet<&'a Node>) {
                if let Node::Shuffle(x, y, _) = n {
                    if seen.insert(n) {
                        walk(x, seen);
                        walk(y, seen);
                    }
                }
            }
            for (c, (_, node)) in plan.dst_vectors.iter().enumerate() {
                walk(node, &mut distinct);
                let w = e as usize;
                let want: Lanes = std::array::from_fn(|p| Slot::Byte(p / w, c * w + p % w));
                assert_eq!(lanes_of(node), want, "{e}-byte column {c}");
            }
            assert_eq!(distinct.len(), k as usize * k.trailing_zeros() as usize);
        }
    }
}
