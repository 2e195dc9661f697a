//! `tile-transposes`: strip-mines the source-contiguous loop of a true transpose into blocks
//! of a vector's width, so that codegen's shuffle planner (which needs a short *factor* loop
//! beside the destination-contiguous lane loop) can move square blocks through registers:
//! 2x2 f64, 4x4 f32, 8x8 16-bit and 16x16 8-bit elements, each a row of 16-byte loads, a
//! transpose in registers and a row of 16-byte stores, instead of one scalar move per element.
//!
//! What it does: for a copy of runs of `b` bytes with `f = 16 / b` of at least 2, whose
//! innermost loop is contiguous for the destination (stride `b`; a loop that is, further out,
//! is first moved innermost when the rest applies), it finds another loop contiguous for the
//! source (stride `b`) whose extent is a multiple of `f` and larger than it, and splits it
//! into an outer loop of `extent / f` iterations in its place and an inner one of `f` right
//! outside the lane loop. For `f` of 8 or 16 the lane loop must have at least `f` iterations
//! (a square block). Splitting a loop in place re-indexes the same points in the same order;
//! moving the inner one in, past loops between the two, reorders them, which, as the
//! reordering that codegen's blocks make, is harmless only for copies whose destination runs
//! are pairwise disjoint, the only statements this pass and codegen's blocks accept.
//!
//! Extents that are not multiples of the blocks are cut first: the statement becomes one
//! statement for the whole blocks and one for the rest, or, when the rest is half a block or
//! more, one whole block laid over the last (see [`tile_or_split`]: its first iterations
//! write again the same bytes from the same source, so statements of a kernel may overlap). A
//! source-contiguous loop that is already one block and outermost goes one loop in, so that
//! codegen's block loop has a count known at compile time (see [`outer_block_inward`]).
//!
//! A sum from +0.0 of one term per run (a Col2Im whose windows do not overlap, see
//! `relayout_ir::LoopStmt::is_one_term_sum`) is a copy but for its `+0.0 +` per element, which
//! codegen's blocks add to each vector before storing it: it is tiled like a copy.
//!
//! Run it after the last `coalesce`, which would merge the two halves back.
//!
//! A large plane (more than [`L2_PLANE`] bytes, the source loop right outside the lane loop)
//! is also cache-blocked, `[l/bl, x/r, l: bl/f, f, x: r]`: a block is `bl` destination rows
//! (source columns), and inside it the lane loop goes in groups of `r` source rows, `r` being
//! the elements of one 64-byte line. A group walks along its `r` source rows (all of their
//! lines used by consecutive micro-blocks, then never again) and writes one whole line of
//! each of the block's destination rows, each line by `r / f` consecutive micro-blocks. So no
//! line is reloaded from L2 however the rows alias in L1 (power-of-two strides map every row
//! to the same L1 sets), and every destination line is written at once. Walking a square
//! block column by column instead reread each source line from L2 once per micro-block column.
//! Blocking reorders the points, which the disjoint destination runs make harmless too.
//! A statement that runs from memory (more than [`MEMORY_BOUND`] bytes) with 128 to 512 lanes
//! is walked `f` whole destination rows at a time instead, `[l/f, x/r, f, x: r]`, which
//! writes the destination in address order (see [`walks_rows`]: NCHW -> NHWC of 128 to 512
//! channels, 1.1-2x faster).
//!
//! Loops between the source loop and the lane loop that step less than a block row on both
//! sides (a batch between the two axes that swap, as in `[2, 1, 0]` of a cube) go inside the
//! loops of blocks, right outside the register block: `[l/m, x/f, middle.., f, m]` (see
//! [`middle_inside`]). Strip-mined in place, such a transpose walked blocks along the lane
//! loop, whose rows alias like the source and destination rows do, and ran at 4-11x
//! memcpy's time.
//!
//! The forms [`tile`] makes, the first that applies in this order. `l` is the
//! source-contiguous loop, `x` the lane loop (destination-contiguous, innermost), `f` the
//! elements of a register row, `r` those of a 64-byte line; `[..]` lists the loops that
//! replace `l` to `x`, outermost first: `a*b` steps by `b` iterations of `a` (over `a`'s
//! extent / `b` steps, or the `n` of `a*b: n`), `a: n` is `n` iterations of `a`. A plane is *large* when `l` is right outside `x` and it
//! has more than [`L2_PLANE`] bytes (with enough lanes: [`MIN_BLOCK`], [`NARROW_PLANE`]).
//!
//! | form | when | loops | measured in |
//! |---|---|---|---|
//! | middle inside | loops between `l` and `x`, each stepping less than a block row on both sides | `[x*m, l*f, middle.., l: f, x: m]`, `m` = `2f` or `f` | [`middle_inside`] |
//! | outer inside | not large; loops right outside `l` stepping so, lane rows that do not fit L1 | the same, with those loops moved in | [`outer_inside`] |
//! | row walk | large; more than [`MEMORY_BOUND`] bytes written, 128 to 512 lanes | `[l*f, x*r, l: f, x: r]` | [`walks_rows`] |
//! | cache blocks | large; one of [`BLOCK_ROWS`] (`bl`) divides `l` | `[l*bl, x*r, l*f: bl/f, l: f, x: r]` | [`BLOCK_ROWS`] |
//! | lane blocks | large; `l` too short for blocks of rows, more than [`LANE_BLOCK`] lanes | `[x*64, l*f, l: f, x: 64]`, 1024 lanes for far, aliasing rows | [`LANE_BLOCK`], [`WIDE_LANE_BLOCK`] |
//! | line groups | not large; `f` to [`LINE_GROUP_LANES`] lanes whose rows do not fit L1 | `[l*r, x*f, l*f: r/f, l: f, x: f]` | [`LINE_GROUP_LANES`] |
//! | strip | otherwise | `[l*f, .., l: f, x]` | the first paragraph |

use super::{scaled, LINE};
use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::{Loop, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct TileTransposes;

impl LoopPass for TileTransposes {
    const NAME: &'static str = "tile-transposes";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        Ok(k.with_stmts(
            k.stmts.iter().flat_map(tile_stmt).collect(),
            k.bands.clone(),
        ))
    }
}

impl_pass!(loops TileTransposes);

/// Bytes of the vectors the shuffle blocks move.
const VECTOR: u64 = 16;

/// The statement tiled, as one statement, or two when the source-contiguous loop's extent is
/// not a multiple of the block (see [`tile_or_split`]); unchanged when nothing applies. A
/// sum of one term per run is tiled as a copy is.
fn tile_stmt(s: &LoopStmt) -> Vec<LoopStmt> {
    let b = s.bytes;
    if !s.moves_like_copy() || b == 0 || !VECTOR.is_multiple_of(b) || s.loops.len() < 2 {
        return vec![s.clone()];
    }
    let f = VECTOR / b;
    let run = b as i64;
    if f < 2 || !relayout_ir::dependence::points_disjoint(s, 0) {
        return vec![s.clone()];
    }
    if s.loops.last().is_some_and(|l| l.dst_stride == run) {
        return tile_or_split(s, f);
    }
    // The innermost loop is not the destination-contiguous one (`interchange` may order a
    // transpose to read row by row): move that loop innermost, which the disjoint runs allow,
    // when the statement then tiles; else leave it as it was.
    let Some(k) = s.loops.iter().position(|l| l.dst_stride == run) else {
        return vec![s.clone()];
    };
    let mut moved = s.clone();
    let lane = moved.loops.remove(k);
    moved.loops.push(lane);
    let tiled = tile_or_split(&moved, f);
    if tiled == [moved] {
        vec![s.clone()]
    } else {
        tiled
    }
}

/// [`tile`] for a statement whose innermost loop is destination-contiguous, after cutting it
/// where its extents are not multiples of the blocks (each cut gives two statements, see
/// [`cut`]):
/// - the source-contiguous loop (extent `e`, more than `f`) at `e - e % f`: whole register
///   blocks, and then, when `e % f` is at least `f / 2`, the last `f` iterations as one more
///   whole block, which writes again the last `f - e % f` iterations of the blocks before it:
///   the same bytes from the same source, since the statement is a copy (or a sum of one
///   term, as deterministic); a shorter rest as scalar runs. The same for the lane loop when
///   loops stand between the two. NCHW -> NHWC of a 7x7 feature map (49 positions) had no
///   register block at all and ran at 6-7x memcpy's time. With the rest as scalar runs, an
///   Im2Col of 16x16 f16 patches of 8x3x224x224 (14 patches a row: 8 in blocks, 6 scalar) ran
///   at 3.0-3.75x memcpy's time, with an overlapping block at 1.7-2.0x (f32, 12 and 2:
///   2.8-3.0x -> 2.4-2.7x); a rest of a quarter block (transpose_tiny's 5 = 4 + 1) ran 10%
///   slower overlapped.
/// - in a plane large enough for cache blocks, the lane loop at a multiple of the group of
///   source rows `r`, and the source-contiguous loop at a multiple of the largest of
///   [`BLOCK_ROWS`] when none of them divides it: most of the plane in cache blocks, the
///   edges strip-mined.
///
/// Each destination byte is written by one of the parts, or by two with the same value from
/// the same source byte, and the runs of a copy are disjoint, so running one part after the
/// other changes no result.
fn tile_or_split(s: &LoopStmt, f: u64) -> Vec<LoopStmt> {
    let run = s.bytes as i64;
    let last = s.loops.len() - 1;
    let x = s.loops[last];
    if x.dst_stride != run {
        // A part whose lane loop was cut down to one iteration (and removed).
        return vec![s.clone()];
    }
    // Elements of one or two bytes move only as whole square blocks (16x16 bytes, 8x8 16-bit
    // elements), which need as many lane iterations as rows; a shorter lane loop (a 4-way
    // interleave) is the shuffle planner's own case, better left unsplit.
    let square = f <= 4 || x.extent >= f;
    let Some(j) = s.loops[..last]
        .iter()
        .position(|l| l.src_stride == run && l.extent > f)
        .filter(|_| square)
    else {
        return vec![outer_block_inward(s, f)];
    };
    let l = s.loops[j];
    // A plane large enough for cache blocks: the source loop right outside the lane loop.
    let plane = l.extent.saturating_mul(x.extent).saturating_mul(s.bytes);
    let large = j + 1 == last
        && plane > L2_PLANE
        && (x.extent > MIN_BLOCK || x.extent > MIN_NARROW_BLOCK && plane > NARROW_PLANE);
    let walks = large && walks_rows(&x, plane, s.trip_count().saturating_mul(s.bytes));
    let tile_both = |(first, rest): (LoopStmt, LoopStmt)| {
        let mut parts = tile_or_split(&first, f);
        parts.extend(tile_or_split(&rest, f));
        parts
    };
    let parts = |k: usize, at: u64| cut(s, k, at).map(tile_both);
    // The whole blocks of loop `k` (more than `f` iterations, not a multiple of `f`), then the
    // rest: its last `f` iterations as one more whole block, which overlaps the last of them,
    // when the rest is at least half a block, else the rest alone (scalar runs).
    let overlapping = |k: usize| -> Option<Vec<LoopStmt>> {
        let n = s.loops[k].extent;
        if 2 * (n % f) < f {
            return parts(k, n - n % f);
        }
        let (whole, _) = cut(s, k, n - n % f)?;
        let (_, last_block) = cut(s, k, n - f)?;
        Some(tile_both((whole, last_block)))
    };
    let cuts = if !l.extent.is_multiple_of(f) {
        overlapping(j)
    } else if j + 1 < last && x.extent > f && !x.extent.is_multiple_of(f) {
        // Middle loops between the two (see [`tile`]): whole blocks of the lane loop too.
        overlapping(last)
    } else if large {
        let r = LINE / s.bytes;
        let lanes = lane_block(s, &l);
        if !x.extent.is_multiple_of(r) {
            parts(last, x.extent - x.extent % r)
        } else if walks {
            // Blocks of `f` rows: any multiple of `f` will do.
            None
        } else if block_rows(l.extent).is_none() && l.extent > BLOCK_ROWS[0] {
            parts(j, l.extent - l.extent % BLOCK_ROWS[0])
        } else if block_rows(l.extent).is_none()
            && x.extent > lanes
            && !x.extent.is_multiple_of(lanes)
        {
            parts(last, x.extent - x.extent % lanes)
        } else {
            None
        }
    } else {
        None
    };
    cuts.unwrap_or_else(|| vec![tile(s, f, j, large, walks)])
}

/// `s` with its outermost loop moved inside the next one when that loop is already one
/// register block (source-contiguous, `f` iterations) and another loop stands between it
/// and the lane loop; else `s`. Codegen would tile the outermost loop, whose count is only
/// known at run time (an entry runs a range of its iterations), so it would emit the blocks
/// in a loop and again every iteration as scalar moves for ranges that end inside a block:
/// transpose_tiny compiled 150 CLIF instructions instead of 93 and took 0.48-0.65 ms instead
/// of 0.33-0.44 ms, with the same kernel time. One loop further in, the block's count is
/// known. The destination runs are disjoint, so the order of the points is free.
fn outer_block_inward(s: &LoopStmt, f: u64) -> LoopStmt {
    let run = s.bytes as i64;
    match s.loops.as_slice() {
        [first, _, _, ..] if first.src_stride == run && first.extent == f => {
            let mut moved = s.clone();
            moved.loops.swap(0, 1);
            moved
        }
        _ => s.clone(),
    }
}

/// `s` cut at iteration `at` (0 < `at` < extent) of loop `k`: the first `at` iterations, and
/// the others with the offsets moved past them (a rest of one iteration loses the loop).
/// `None` when an offset would overflow.
fn cut(s: &LoopStmt, k: usize, at: u64) -> Option<(LoopStmt, LoopStmt)> {
    let l = s.loops[k];
    if at == 0 || at >= l.extent {
        return None;
    }
    let skip = i64::try_from(at).ok()?;
    let mut first = s.clone();
    first.loops[k].extent = at;
    let mut rest = s.clone();
    rest.loops[k].extent = l.extent - at;
    rest.src_offset = s.src_offset.checked_add(l.src_stride.checked_mul(skip)?)?;
    rest.dst_offset = s.dst_offset.checked_add(l.dst_stride.checked_mul(skip)?)?;
    if rest.loops[k].extent == 1 {
        rest.loops.remove(k);
    }
    Some((first, rest))
}

/// [`tile_or_split`]'s statement without cuts: loop `j` (source-contiguous, more than `f`
/// iterations) strip-mined by `f` beside the destination-contiguous innermost loop, and, in a
/// `large` plane (see [`tile_or_split`]), cache-blocked or, when it `walks` (see
/// [`walks_rows`]), walked by whole destination rows. Unchanged when `j`'s extent is not a
/// multiple of `f` (a cut that would have overflowed).
fn tile(s: &LoopStmt, f: u64, j: usize, large: bool, walks: bool) -> LoopStmt {
    let last = s.loops.len() - 1;
    let l = s.loops[j];
    let x = s.loops[last];
    if !l.extent.is_multiple_of(f) {
        return s.clone();
    }
    let inner = Loop { extent: f, ..l };
    if j + 1 < last {
        if let Some(out) = middle_inside(s, f, j) {
            return out;
        }
    } else if !large {
        if let Some(out) = outer_inside(s, f, j) {
            return out;
        }
    }
    // A large plane right inside (the source loop next to the lane loop): cache blocks of
    // `bl` destination rows (see [`block_rows`]), inside which the lane loop is cut into
    // groups of `r` source rows, one destination cache line (see the module documentation).
    let r = LINE / s.bytes;
    let blocked = large && x.extent.is_multiple_of(r);
    let cache_blocks = |bl: u64| {
        Some(vec![
            scaled(l, l.extent / bl, bl)?,
            scaled(x, x.extent / r, r)?,
            scaled(l, bl / f, f)?,
            inner,
            Loop { extent: r, ..x },
        ])
    };
    // A large plane whose source loop is too short for blocks of rows (NCHW -> NHWC of small
    // maps: 48 positions by 2048 channels) is blocked along the lane loop instead (see
    // [`LANE_BLOCK`]).
    let lanes = lane_block(s, &l);
    let lane_blocks = || {
        Some(vec![
            scaled(x, x.extent / lanes, lanes)?,
            scaled(l, l.extent / f, f)?,
            inner,
            Loop { extent: lanes, ..x },
        ])
    };
    // A large plane of a memory-bound statement with long destination rows: `f` whole
    // destination rows at a time, written in address order (see [`walks_rows`]).
    let row_walk = || {
        Some(vec![
            scaled(l, l.extent / f, f)?,
            scaled(x, x.extent / r, r)?,
            inner,
            Loop { extent: r, ..x },
        ])
    };
    // The strip: `f` rows of the source loop right outside the lane loop, the loops between
    // them (which `middle_inside` left where they were) outside the `f` rows. Code generation
    // moves the two loops of a register block inward anyway; in the IR they stay together
    // too, so that `fuse-nests` never shares the block's row loop as a band loop between the
    // pieces a cut made (it would leave each member a gather of one element per load: an
    // Im2Col of 16x16 patches of 8x3x224x224 f32 ran 0.56 ms so, 0.27-0.30 ms with the rows
    // inside).
    let strip = || {
        let mut loops = vec![scaled(l, l.extent / f, f)?];
        loops.extend_from_slice(&s.loops[j + 1..last]);
        loops.push(inner);
        loops.push(x);
        Some(loops)
    };
    // A short lane loop right inside: the blocks of one source line for `f` lanes at a time
    // (see [`LINE_GROUP_LANES`]).
    let line_groups = || {
        let mut loops = Vec::with_capacity(5);
        if l.extent > r {
            loops.push(scaled(l, l.extent / r, r)?);
        }
        loops.push(scaled(x, x.extent / f, f)?);
        loops.push(scaled(l, r / f, f)?);
        loops.push(inner);
        loops.push(Loop { extent: f, ..x });
        Some(loops)
    };
    let by_line = !blocked
        && j + 1 == last
        && x.extent > f
        && x.extent <= LINE_GROUP_LANES
        && x.extent.is_multiple_of(f)
        && r >= f
        && l.extent.is_multiple_of(r)
        && !rows_share_l1(x.src_stride, x.extent);
    // The loops from j on that are replaced, and their replacement; strides that overflow i64
    // when scaled leave the statement as it was.
    let by_lanes = blocked
        && block_rows(l.extent).is_none()
        && x.extent > lanes
        && x.extent.is_multiple_of(lanes);
    let (end, loops) = match (blocked && walks)
        .then(row_walk)
        .flatten()
        .or_else(|| {
            blocked
                .then(|| block_rows(l.extent))
                .flatten()
                .and_then(cache_blocks)
        })
        .or_else(|| by_lanes.then(lane_blocks).flatten())
    {
        Some(loops) => (last, loops),
        None => match by_line.then(line_groups).flatten() {
            Some(loops) => (last, loops),
            None => match strip() {
                Some(loops) => (last, loops),
                None => return s.clone(),
            },
        },
    };
    let mut out = s.clone();
    out.loops.splice(j..=end, loops);
    out
}

/// `s` with loops between its source-contiguous loop `j` (a multiple of `f` iterations) and
/// its lane loop (the innermost, a multiple of `f`): `[.., lane / m, j / f, middle.., f, m]`
/// with `m` = `2f` lane iterations when they divide the lane loop, else `f`. The register
/// blocks of one block row (`f` source rows) by one or two block columns step along the
/// middle loops, right outside the blocks, and the blocks of the plane go around them. In a
/// transpose such as `[2, 1, 0]` of a cube, the source rows of a block (`f` apart along the
/// lane loop) and the destination rows (along the source loop) are both whole planes apart:
/// with power-of-two extents every one of them maps to the same cache sets, and moving along
/// either of those loops from block to block, as `[.., j / f, f, middle.., lane]` did,
/// reloaded each line from L2 (or further) for each of the blocks that share it. Along the
/// middle loops, consecutive blocks read and write other lines (other sets), and the lines a
/// block row shares with its neighbours come back after one sweep of the middle loops.
/// Measured with `relayout bench` (1 thread, kernel against memcpy in one sitting):
/// `[2, 1, 0]` of 32^3 f32 20.8 -> 8.6 us, 64^3 317 -> 83 us, 128^3 3.28 -> 1.97 ms.
/// `None` when a stride overflows or the lane loop is not whole blocks.
fn middle_inside(s: &LoopStmt, f: u64, j: usize) -> Option<LoopStmt> {
    let last = s.loops.len() - 1;
    let (l, x) = (s.loops[j], s.loops[last]);
    if !x.extent.is_multiple_of(f) || x.extent < f || !l.extent.is_multiple_of(f) {
        return None;
    }
    if !s.loops[j + 1..last].iter().all(|m| within_rows(m, &l, &x)) {
        return None;
    }
    let m = if x.extent.is_multiple_of(2 * f) {
        2 * f
    } else {
        f
    };
    let mut loops = s.loops[..j].to_vec();
    // The loops of blocks, without a loop of one block.
    for (lp, by) in [(x, m), (l, f)] {
        if lp.extent > by {
            loops.push(scaled(lp, lp.extent / by, by)?);
        }
    }
    loops.extend_from_slice(&s.loops[j + 1..last]);
    loops.push(Loop { extent: f, ..l });
    loops.push(Loop { extent: m, ..x });
    Some(LoopStmt { loops, ..s.clone() })
}

/// Whether loop `m` steps less than a block row does on both sides: less than the lane loop
/// `x` at the source (its rows) and than the source loop `l` at the destination. Only such a
/// batch goes inside the loops of blocks: a loop as far apart as the rows aliases like them
/// (`[1, 3, 0, 2]` of 32^4 f32, whose middle loop steps planes at the source, ran 1.5x slower
/// so).
fn within_rows(m: &Loop, l: &Loop, x: &Loop) -> bool {
    m.src_stride.unsigned_abs() < x.src_stride.unsigned_abs()
        && m.dst_stride.unsigned_abs() < l.dst_stride.unsigned_abs()
}

/// [`middle_inside`] for the loops right outside the source loop `j` (right outside the lane
/// loop) that step less than a block row on both sides, when the lane rows do not fit L1
/// together ([`rows_share_l1`]): `interchange` may put such a batch outermost, `[y, x, z]` for
/// `[2, 1, 0]` of 128x64x32 f32, whose 8 KiB rows all map to one set; with the batch inside
/// the loops of blocks it ran 2.6x faster (`relayout bench --ir`, 216-262 -> 91-100 us). Where
/// the rows fit, the batch outside is the better order (64x40x36 f64, 11520-byte rows: 28-35
/// us outside, 51-54 inside), and it stays.
fn outer_inside(s: &LoopStmt, f: u64, j: usize) -> Option<LoopStmt> {
    let last = s.loops.len() - 1;
    let (l, x) = (s.loops[j], s.loops[last]);
    if j + 1 != last || rows_share_l1(x.src_stride, x.extent) {
        return None;
    }
    let batch = s.loops[..j]
        .iter()
        .rev()
        .take_while(|m| m.extent > 1 && within_rows(m, &l, &x))
        .count();
    if batch == 0 {
        return None;
    }
    let mut moved = s.loops[..j - batch].to_vec();
    moved.push(l);
    moved.extend_from_slice(&s.loops[j - batch..j]);
    moved.push(x);
    middle_inside(
        &LoopStmt {
            loops: moved,
            ..s.clone()
        },
        f,
        j - batch,
    )
}

/// The destination rows of a cache block: the first of [`BLOCK_ROWS`] that divides the
/// `extent` of the source-contiguous loop and is smaller than it.
fn block_rows(extent: u64) -> Option<u64> {
    BLOCK_ROWS
        .into_iter()
        .find(|&bl| extent > bl && extent.is_multiple_of(bl))
}

/// Whether a large plane (see [`tile_or_split`]) of `s`, whose lane loop is `x`, is walked
/// by `f` whole destination rows at a time, `[l/f, x/r, f, x: r]`, instead of in cache
/// blocks: when the statement writes more than [`MEMORY_BOUND`] bytes and has from
/// [`WALKED_MIN_LANES`] to [`WALKED_LANES`] lanes, and at least [`WALKED_NARROW_LANES`] of
/// them in a `plane` that fits L2 ([`L2_BYTES`]).
///
/// A cache block writes one line of each of its 256 destination rows per group of lanes:
/// lines a row apart, which the processor fetches for ownership one by one, with no stream
/// for its prefetchers to follow. Walking rows writes the destination in address order (the
/// prefetchers stream it) and reads one 16-byte column of every lane's source row per step,
/// each source line used by `r / f` consecutive steps. Measured with `relayout bench --ir` (1
/// thread, the two forms of each shape interleaved, milliseconds): NCHW -> NHWC f32 of
/// 8x512x28x28 4.66 -> 2.90, 8x384x28x28 3.35 -> 1.56, 8x256x56x56 (streamed) 6.83 -> 3.87,
/// 4x256x112x112 11.4 -> 8.6, 1x512x56x56 1.97 -> 1.10, 2x512x28x28 0.41 -> 0.24,
/// 8x192x56x56 3.28 -> 2.03, 8x128x56x56 1.97 -> 1.68, 4x128x56x56 1.25-1.30 -> 1.03-1.10;
/// f16 8x256x56x56 3.56 -> 3.18, 8x512x28x28 2.06 -> 1.49, 8x128x56x56 1.55-1.83 ->
/// 1.22-1.33, 4x128x112x112 3.5-4.1 -> 2.5-2.6, 8x192x56x56 2.2-2.8 -> 2.1-2.3; f64
/// 8x512x28x28 5.27 -> 4.10; u8 8x512x28x28 0.43-0.61 -> 0.38-0.39, 8x256x56x56 1.73-2.13 ->
/// 1.66-1.74. Where the data stays in the caches the blocks are faster (1x512x28x28 f32,
/// 1.6 MB: 88 against 106 us; 1x384x28x28 63 against 76), and so they are for 1024 lanes,
/// whose source lines no longer fit L1 together (8x1024x14x14 1.52 against 1.72 ms), and for
/// 64 lanes (8x64x112x112, 1x64x112x112 f32).
fn walks_rows(x: &Loop, plane: u64, bytes: u64) -> bool {
    (WALKED_MIN_LANES..=WALKED_LANES).contains(&x.extent)
        && (x.extent >= WALKED_NARROW_LANES || plane > L2_BYTES)
        && bytes > MEMORY_BOUND
}

/// Lanes below which rows are walked only in planes larger than L2: 8x128x28x28 f32 (401 KB
/// planes) ran 10-20% slower walked; 8x128x56x56 f32 (1.6 MB) and f16 (802 KB) 15-25%
/// faster.
const WALKED_NARROW_LANES: u64 = 256;

/// The level-2 cache of the reference machine (AMD Zen 3), and of many x86-64 cores.
const L2_BYTES: u64 = 512 << 10;

/// Bytes a statement writes above which its transposes run from memory rather than from the
/// caches (between the 1.6 MB and the 3.2 MB of the measurements of [`walks_rows`]).
const MEMORY_BOUND: u64 = 2 << 20;

/// The fewest lanes walked whole: 64 lanes (NCHW -> NHWC of 64 channels) measured faster in
/// cache blocks, 128 walked.
const WALKED_MIN_LANES: u64 = 128;

/// The most lanes walked whole: their source lines, one each, fit L1 together.
const WALKED_LANES: u64 = 512;

/// Destination rows per cache block, in order of preference (multiples of every factor
/// 2..=4). Measured on the 4096x4096 f32 transpose (1 thread, interleaved in one process):
/// 256 and 128 rows ran at 1.7-1.9x memcpy's time, 64 rows at 1.9-2.1x, and square blocks of
/// 64x64 walked column by column at 2.5-2.6x.
const BLOCK_ROWS: [u64; 3] = [256, 128, 64];

/// Planes whose lane loop has no more iterations than this are cache-blocked only when they
/// are larger than [`NARROW_PLANE`] (and their lane loop longer than [`MIN_NARROW_BLOCK`]).
/// Measured with `relayout bench --op` (1 thread, the two forms in one sitting, kernel /
/// memcpy): NCHW -> NHWC of 56x56 maps, 802 KB planes, ran slower blocked (8x64x56x56 f32
/// 1.58-1.69 -> 1.73-2.0, 8x48x56x56 1.82-2.03 -> 2.39-2.64, 32x64x56x56 streamed 1.18-1.20
/// -> 1.26-1.32).
const MIN_BLOCK: u64 = 64;

/// Lane iterations above which a plane of more than [`NARROW_PLANE`] bytes is cache-blocked.
const MIN_NARROW_BLOCK: u64 = 32;

/// Bytes above which a plane with a lane loop of at most [`MIN_BLOCK`] iterations is
/// cache-blocked: its source rows, walked whole for each block of lanes, no longer stay in
/// L2 (512 KiB) nor in a share of L3. Measured as for [`MIN_BLOCK`]: NCHW -> NHWC of
/// 1x64x112x112 f32 (3.2 MB planes) 2.05-2.47 -> 1.19-1.25, 1x48x128x128 f32 4.5-5.0 -> 1.8,
/// 8x64x112x112 f32 (streamed) 0.91-0.96 -> 0.85-0.87, 1x64x112x112 bf16 (1.6 MB) 1.82 ->
/// 1.58 and f64 2.16-2.33 -> 1.71-1.78, 1x40x96x96 f32 (1.5 MB) 5.9-6.3 -> 5.0-5.1.
const NARROW_PLANE: u64 = 1 << 20;

/// Lane iterations per block when a large plane's source loop is too short for blocks of rows
/// (`[x/64, l/f, f, x: 64]`): each block of source rows stays in L1 while all of its columns
/// are moved, and writes 64 elements of each destination row. NCHW -> NHWC of 32x2048x7x7 f32
/// (48 positions of 2048 channels a plane after the cut) ran 15-28% faster so in seven of
/// seven alternating runs (`relayout bench --ir`) than sweeping all 2048 channel rows for every
/// 4 positions, which reloaded each source line from L2 four times.
const LANE_BLOCK: u64 = 64;

/// Lane iterations per block instead of [`LANE_BLOCK`] for a statement that writes more than
/// [`WIDE_LANES_MIN_BYTES`] into destination rows a multiple of [`ALIASED_ROWS`] bytes apart
/// (NHWC -> NCHW of power-of-two maps, NCHW -> NHWC of 2048 channels). Such rows map to the
/// same few cache sets, and a block of 64 lanes writes 64 elements of each row in turn before
/// moving on; 1024 lanes write each row 16 times longer at a time (the block's source rows, 32 KiB
/// to 128 KiB, are read again from L2 for each group of rows). `relayout bench --op` and
/// `--ir`, two interleaved rounds each, kernel / memcpy time: NHWC -> NCHW of 8x224x224x32
/// f32 2.38-2.40 -> 1.74-1.78 (256 lanes: 1.97-2.05; all 50176 lanes at once: 2.87-2.96),
/// f16 1.96-1.97 -> 1.34, f64 (4x224x224x32) 2.49-2.62 -> 2.08-2.13, 16 channels f32
/// 1.35-1.38 -> 1.27, 8x128x128x64 f32 2.61-2.65 -> 1.78-1.79; NCHW -> NHWC of 32x2048x7x7
/// f32 2.61-2.66 -> 2.22-2.30. Where the rows are not so aligned, or the data stays in the
/// last-level cache, 1024 lanes measured slower (8x112x112x32 f32 1.4 -> 2.0, 8x2048x7x7 f32
/// 2.3 -> 2.6).
const WIDE_LANE_BLOCK: u64 = 1024;

/// See [`WIDE_LANE_BLOCK`]: rows this many bytes apart, or a multiple, alias in the caches.
const ALIASED_ROWS: i64 = 2048;

/// See [`WIDE_LANE_BLOCK`]: more than a core's share of the last-level cache.
const WIDE_LANES_MIN_BYTES: u64 = 8 << 20;

/// The lanes of a block of `s` blocked along its lane loop, `l` its source-contiguous loop
/// (whose destination stride is the distance between destination rows): see
/// [`LANE_BLOCK`] and [`WIDE_LANE_BLOCK`].
fn lane_block(s: &LoopStmt, l: &Loop) -> u64 {
    let far = s.trip_count().saturating_mul(s.bytes) > WIDE_LANES_MIN_BYTES;
    if far && l.dst_stride != 0 && l.dst_stride % ALIASED_ROWS == 0 {
        WIDE_LANE_BLOCK
    } else {
        LANE_BLOCK
    }
}

/// Lane loops of at most this many iterations right inside the source loop, in a plane not
/// cache-blocked, whose rows do not fit the level-1 cache together ([`rows_share_l1`]), are
/// walked by source lines: `[l/r, x/f, r/f, f, x: f]`, the register blocks of one source line
/// (`r` elements) for `f` lanes at a time, so that the `f` source lines a block reads are
/// used whole before the next lanes' lines. Strip-mined, `[l/f, f, x]`, each block read one
/// line of every lane row, and the next block the same lines again: with the rows a multiple
/// of 4 KiB apart (NCHW -> NHWC of power-of-two maps) they all map to the same L1 sets and
/// were fetched again for every block. Measured with `relayout bench --op` (1 thread, the two
/// forms in one sitting, kernel / memcpy): NCHW -> NHWC of 1x32x128x128 f32 4.4-4.6 ->
/// 1.9, 1x32x96x96 5.6-5.7 -> 1.8-2.0, 1x24x128x128 3.7-11 -> 1.7, 1x40x96x96 5.0-5.5 ->
/// 1.8-2.1, f16 1x32x128x128 4.8-7.0 -> 2.5, a 32x4096 f32 transpose 5.1-5.5 -> 1.9. Where
/// the rows do fit, the strip is faster (NCHW -> NHWC of 56x56 maps, 12544-byte rows over 16
/// sets: 8x64x56x56 f32 1.6 against 2.0-2.5 by lines).
const LINE_GROUP_LANES: u64 = 64;

/// Sets of the level-1 data cache (32 KiB of 8 ways of 64-byte lines, on the reference
/// machine and most x86-64 cores), and its ways.
const L1_SETS: u64 = 64;
const L1_WAYS: u64 = 8;

/// Whether `rows` rows `stride` bytes apart, one line of each, stay in the level-1 cache
/// together: the sets their lines map to hold that many lines. Rows a multiple of 4 KiB
/// apart all map to one set (8 lines); 12544 bytes apart (196 lines: 4 sets on) to 16.
fn rows_share_l1(stride: i64, rows: u64) -> bool {
    let stride = stride.unsigned_abs();
    if !stride.is_multiple_of(LINE) {
        return true;
    }
    let step = (stride / LINE) % L1_SETS;
    let sets = L1_SETS / gcd(step, L1_SETS);
    rows <= sets * L1_WAYS
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// Planes of more bytes than this are cache-blocked (half of a 512 KiB L2).
const L2_PLANE: u64 = 256 << 10;

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::{interpret_loops, verify_loop_kernel, LoopAction};

    fn lp(extent: u64, src_stride: i64, dst_stride: i64) -> Loop {
        Loop {
            extent,
            src_stride,
            dst_stride,
        }
    }

    /// A copy of `bytes`-byte runs over `loops`, at offset 0 on both sides.
    fn copy(bytes: u64, loops: Vec<Loop>) -> LoopStmt {
        LoopStmt {
            action: LoopAction::Copy,
            bytes,
            src_offset: 0,
            dst_offset: 0,
            loops,
            window: None,
        }
    }

    /// A kernel of the one statement `s` between tensors of `dtype` shaped `src` and `dst`.
    fn kernel_of<const S: usize, const D: usize>(
        s: LoopStmt,
        dtype: relayout_ir::DType,
        src: [u64; S],
        dst: [u64; D],
    ) -> LoopKernel {
        LoopKernel {
            name: "t".into(),
            src: relayout_ir::TensorType::new(dtype, src),
            dst: relayout_ir::TensorType::new(dtype, dst),
            stmts: vec![s],
            bands: vec![],
        }
    }

    #[test]
    fn a_2d_transpose_of_f32_gets_a_factor_loop_of_four() {
        let s = LoopStmt {
            action: LoopAction::Copy,
            bytes: 4,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![
                Loop {
                    extent: 12,
                    src_stride: 4,
                    dst_stride: 32,
                },
                Loop {
                    extent: 8,
                    src_stride: 48,
                    dst_stride: 4,
                },
            ],
            window: None,
        };
        let t = tile_stmt(&s).remove(0);
        assert_eq!(t.loops.len(), 3);
        assert_eq!((t.loops[0].extent, t.loops[0].src_stride), (3, 16));
        assert_eq!((t.loops[1].extent, t.loops[1].src_stride), (4, 4));
        let kernel = kernel_of(s, relayout_ir::DType::F32, [8, 12], [12, 8]);
        tiled_alike(&kernel);
    }

    /// The kernel tiled: verified, and writing the same bytes as before.
    fn tiled_alike(kernel: &LoopKernel) -> LoopKernel {
        let tiled = TileTransposes.run_loops(kernel).unwrap();
        verify_loop_kernel(&tiled).unwrap();
        let bytes = kernel.src.size_bytes().unwrap() as usize;
        let src: Vec<u8> = (0..=255u8).cycle().take(bytes).collect();
        let (mut a, mut b) = (vec![0xaa; bytes], vec![0xaa; bytes]);
        interpret_loops(kernel, &src, &mut a).unwrap();
        interpret_loops(&tiled, &src, &mut b).unwrap();
        assert_eq!(a, b);
        tiled
    }

    /// The whole blocks of transpose_tiny (perm [3, 1, 0, 2] of 2x3x4x5 f32): its outermost
    /// loop is one register block, which goes one loop in so that codegen tiles a loop of
    /// known count; the points stay the same. With nothing between it and the lane loop, it
    /// stays outermost.
    #[test]
    fn an_outermost_loop_of_one_block_goes_one_loop_in() {
        let s = copy(
            4,
            vec![lp(4, 4, 96), lp(3, 80, 32), lp(2, 240, 16), lp(4, 20, 4)],
        );
        let t = tile_stmt(&s);
        assert_eq!(t.len(), 1);
        let extents: Vec<(u64, i64)> = t[0]
            .loops
            .iter()
            .map(|l| (l.extent, l.src_stride))
            .collect();
        assert_eq!(extents, [(3, 80), (4, 4), (2, 240), (4, 20)]);
        let kernel = kernel_of(s, relayout_ir::DType::F32, [2, 3, 4, 5], [5, 3, 2, 4]);
        let tiled = tiled_alike(&kernel);

        let two = LoopStmt {
            loops: vec![lp(4, 4, 32), lp(8, 16, 4)],
            ..tiled.stmts[0].clone()
        };
        assert_eq!(tile_stmt(&two), [two]);
    }

    /// A transpose of `rows x cols` elements of `bytes` bytes as one statement, the lane loop
    /// innermost.
    fn transpose(rows: u64, cols: u64, bytes: u64) -> LoopKernel {
        let b = bytes as i64;
        let dtype = match bytes {
            1 => relayout_ir::DType::U8,
            2 => relayout_ir::DType::F16,
            8 => relayout_ir::DType::F64,
            _ => relayout_ir::DType::F32,
        };
        LoopKernel {
            name: "t".into(),
            src: relayout_ir::TensorType::new(dtype, [rows, cols]),
            dst: relayout_ir::TensorType::new(dtype, [cols, rows]),
            stmts: vec![LoopStmt {
                action: LoopAction::Copy,
                bytes,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![
                    Loop {
                        extent: cols,
                        src_stride: b,
                        dst_stride: b * rows as i64,
                    },
                    Loop {
                        extent: rows,
                        src_stride: b * cols as i64,
                        dst_stride: b,
                    },
                ],
                window: None,
            }],
            bands: vec![],
        }
    }

    /// The loop extents of every statement of `k`.
    fn extents(k: &LoopKernel) -> Vec<Vec<u64>> {
        k.stmts
            .iter()
            .map(|s| s.loops.iter().map(|l| l.extent).collect())
            .collect()
    }

    /// The (source, destination) strides of the loops of `kernel`'s first statement, tiled.
    fn strides(kernel: &LoopKernel) -> Vec<(i64, i64)> {
        let tiled = TileTransposes.run_loops(kernel).unwrap();
        tiled.stmts[0]
            .loops
            .iter()
            .map(|l| (l.src_stride, l.dst_stride))
            .collect()
    }

    /// `kernel` tiled into statements of these loop extents, writing the same bytes.
    fn tiles_to(kernel: LoopKernel, want: &[&[u64]]) {
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(extents(&tiled), want);
        same_result(&kernel, &tiled);
    }

    fn same_result(kernel: &LoopKernel, tiled: &LoopKernel) {
        verify_loop_kernel(tiled).unwrap();
        let n = kernel.src.size_bytes().unwrap() as usize;
        let src: Vec<u8> = (0..n).map(|i| (i * 7 + i / 251) as u8).collect();
        let (mut a, mut b) = (vec![0u8; n], vec![1u8; n]);
        interpret_loops(kernel, &src, &mut a).unwrap();
        interpret_loops(tiled, &src, &mut b).unwrap();
        assert!(a == b);
    }

    #[test]
    fn a_large_plane_is_blocked_by_destination_rows_and_source_line_groups() {
        // 512 KiB of f32: blocks of 256 destination rows, groups of 16 source rows.
        let kernel = transpose(256, 512, 4);
        tiles_to(kernel.clone(), &[&[2, 16, 64, 4, 16]]);
        assert_eq!(
            strides(&kernel),
            [
                (1024, 256 << 10),
                (16 << 11, 64),
                (16, 4 << 10),
                (4, 1 << 10),
                (2048, 4)
            ]
        );
        // f64: pairs, groups of 8 source rows; 384 columns take blocks of 128 rows.
        let kernel = transpose(192, 384, 8);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(extents, [3, 24, 64, 2, 8]);
        same_result(&kernel, &tiled);
    }

    #[test]
    fn memory_bound_planes_of_long_destination_rows_are_walked_by_rows() {
        // 512 lanes of f32 (2 KiB destination rows), 3.2 MB: 4 whole destination rows at a
        // time, in groups of 16 lanes (one source line each).
        let kernel = transpose(512, 1568, 4);
        tiles_to(kernel.clone(), &[&[392, 32, 4, 16]]);
        assert_eq!(
            strides(&kernel),
            [(16, 8 << 10), (16 * 1568 * 4, 64), (4, 2048), (1568 * 4, 4)]
        );
        // 16-bit elements, 3.2 MB: 8 rows at a time, groups of 32 lanes; no cut for the 6272
        // columns, which are no multiple of a cache block of 256 rows but are of 8.
        tiles_to(transpose(256, 6272, 2), &[&[784, 8, 8, 32]]);
        // Cache blocks where the data stays in the caches (1.6 MB), for 1024 lanes, and for
        // 128 lanes of planes of 401 KB, even in a memory-bound batch of eight.
        let kernel = transpose(512, 784, 4);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(extents(&tiled)[0], [3, 32, 64, 4, 16]);
        let kernel = transpose(1024, 1024, 4);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(extents(&tiled), [vec![4, 64, 64, 4, 16]]);
        let s = copy(
            4,
            vec![lp(8, 401408, 401408), lp(784, 4, 512), lp(128, 3136, 4)],
        );
        let tiled = tile_stmt(&s);
        assert_eq!(tiled[0].loops[1].extent, 3, "{tiled:?}");
        // The same batch of 1.6 MB planes (56x56 maps) is walked.
        let s = copy(
            4,
            vec![lp(8, 1605632, 1605632), lp(3136, 4, 512), lp(128, 12544, 4)],
        );
        let tiled = tile_stmt(&s);
        let walked: Vec<u64> = tiled[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(walked, [8, 784, 8, 4, 16]);
        let kernel = kernel_of(s, relayout_ir::DType::F32, [8, 128, 3136], [8, 3136, 128]);
        tiled_alike(&kernel);
        // 128 lanes of f16 (256-byte rows) in 802 KB planes, larger than L2: walked too.
        let s = copy(
            2,
            vec![lp(8, 802816, 802816), lp(3136, 2, 256), lp(128, 6272, 2)],
        );
        let walked: Vec<u64> = tile_stmt(&s)[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(walked, [8, 392, 4, 8, 32]);
        // 64 lanes keep the cache blocks (1x64x112x112 f32, 3.2 MB).
        tiles_to(transpose(64, 12544, 4), &[&[49, 4, 64, 4, 16]]);
    }

    #[test]
    fn small_elements_get_square_blocks_and_cache_blocks() {
        // 16-bit, 512 KiB: factor 8, blocks of 256 destination rows, groups of 32 rows.
        let kernel = transpose(256, 1024, 2);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(extents, [4, 8, 32, 8, 32]);
        same_result(&kernel, &tiled);
        // Bytes, a small plane: only the factor loop of 16.
        let kernel = transpose(48, 64, 1);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(extents, [4, 16, 48]);
        same_result(&kernel, &tiled);
        // A lane loop shorter than the square block (a 4-way byte interleave) is left whole.
        let kernel = transpose(4, 4096, 1);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(tiled, kernel);
    }

    #[test]
    fn a_source_loop_that_is_not_a_multiple_of_the_block_is_cut_in_two() {
        // NCHW -> NHWC of 7x7 maps, f32: the 49 positions become 48 in blocks of 4 and 1 left.
        let kernel = transpose(96, 49, 4);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(tiled.stmts.len(), 2);
        assert_eq!(extents(&tiled), [vec![12, 4, 96], vec![96]]);
        assert_eq!(tiled.stmts[1].src_offset, 48 * 4);
        assert_eq!(tiled.stmts[1].dst_offset, 48 * 96 * 4);
        same_result(&kernel, &tiled);
        // A loop of exactly one block plus leftovers (7 = 4 + 3), and 16-bit elements (8x8
        // blocks: 20 = 16 + 4).
        for (rows, cols, bytes) in [(16, 7, 4), (40, 20, 2)] {
            let kernel = transpose(rows, cols, bytes);
            let tiled = TileTransposes.run_loops(&kernel).unwrap();
            assert_eq!(tiled.stmts.len(), 2, "{rows}x{cols}x{bytes}");
            same_result(&kernel, &tiled);
        }
        // A large plane whose extents are not multiples of the cache block: 4096 of 4100
        // columns in cache blocks (256 destination rows, groups of 16 source rows), the last
        // 4 as one block of 4.
        tiles_to(transpose(80, 4100, 4), &[&[16, 5, 64, 4, 16], &[4, 80]]);
        // 200 source rows: 192 in groups of 16, the last 8 strip-mined.
        tiles_to(
            transpose(200, 1024, 4),
            &[&[4, 12, 64, 4, 16], &[256, 4, 8]],
        );
        // A large plane whose source loop is too short for row blocks (NCHW -> NHWC of 48
        // positions by 2048 channels): blocks of 64 lanes; 2050 channels, 2048 of them so
        // and the last 2 in a statement of their own.
        tiles_to(transpose(2048, 48, 4), &[&[32, 12, 4, 64]]);
        tiles_to(transpose(2050, 48, 4), &[&[32, 12, 4, 64], &[12, 4, 2]]);
        // The same from memory (12 MiB) into destination rows 256 KiB apart, which alias in
        // the caches: blocks of 1024 lanes; rows not a multiple of 2 KiB apart, or a kernel
        // that stays in the caches, keep blocks of 64.
        tiles_to(transpose(65536, 48, 4), &[&[64, 12, 4, 1024]]);
        tiles_to(transpose(65600, 48, 4), &[&[1025, 12, 4, 64]]);
        tiles_to(transpose(8192, 48, 4), &[&[128, 12, 4, 64]]);
        // Fewer iterations than a block, or a byte transpose whose lane loop is shorter than
        // 16: left alone.
        for (rows, cols, bytes) in [(16, 3, 4), (8, 40, 1)] {
            let kernel = transpose(rows, cols, bytes);
            assert_eq!(TileTransposes.run_loops(&kernel).unwrap(), kernel);
        }
    }

    #[test]
    fn short_lane_loops_and_small_planes_are_only_strip_mined() {
        for (rows, cols) in [(64, 3000), (128, 96)] {
            let kernel = transpose(rows, cols, 4);
            let tiled = TileTransposes.run_loops(&kernel).unwrap();
            let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
            assert_eq!(extents, [cols / 4, 4, rows], "{rows}x{cols}");
            same_result(&kernel, &tiled);
        }
    }

    /// A lane loop of 33 to 64 iterations (NCHW -> NHWC of 48 or 64 channels) is cache-blocked
    /// only in a plane of more than [`NARROW_PLANE`] bytes; 32 lanes never.
    #[test]
    fn narrow_planes_are_blocked_only_when_large() {
        for (rows, cols, want) in [
            (64, 12544, vec![49, 4, 64, 4, 16]),
            (48, 16384, vec![64, 3, 64, 4, 16]),
            (64, 3136, vec![784, 4, 64]),
            // A 1 MiB plane whose rows alias in L1: walked by source lines instead.
            (64, 4096, vec![256, 16, 4, 4, 4]),
            // 32 lanes are never blocked (these rows alias: walked by lines).
            (32, 65536, vec![4096, 8, 4, 4, 4]),
            (32, 65000, vec![16250, 4, 32]),
        ] {
            let kernel = transpose(rows, cols, 4);
            let tiled = TileTransposes.run_loops(&kernel).unwrap();
            let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
            assert_eq!(extents, want, "{rows}x{cols}");
        }
        same_result(
            &transpose(48, 16384, 4),
            &TileTransposes.run_loops(&transpose(48, 16384, 4)).unwrap(),
        );
    }

    /// A short lane loop whose rows all map to the same L1 sets (rows a multiple of 4 KiB
    /// apart) is walked by source lines, `f` lanes at a time; rows that spread over enough
    /// sets keep the strip. The points stay the same.
    #[test]
    fn aliasing_lane_rows_are_walked_by_source_lines() {
        // 32 lanes, rows 4096 bytes apart (1024 f32): blocks of one line for 4 lanes at a time.
        let kernel = transpose(32, 1024, 4);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(
            tiled.stmts[0].loops,
            [
                lp(64, 64, 2048),
                lp(8, 16384, 16),
                lp(4, 16, 512),
                lp(4, 4, 128),
                lp(4, 4096, 4)
            ]
        );
        same_result(&kernel, &tiled);
        // 16-bit elements: 8 lanes at a time.
        let extents = |k: &LoopKernel| -> Vec<u64> {
            let tiled = TileTransposes.run_loops(k).unwrap();
            same_result(k, &tiled);
            tiled.stmts[0].loops.iter().map(|l| l.extent).collect()
        };
        assert_eq!(extents(&transpose(32, 2048, 2)), [64, 4, 4, 8, 8]);
        // Rows 12544 bytes apart (3136 f32) spread over 16 sets, 128 lines: the strip.
        assert_eq!(extents(&transpose(32, 3136, 4)), [784, 4, 32]);
    }

    #[test]
    fn rows_share_l1_counts_the_sets_of_their_lines() {
        assert!(rows_share_l1(4096, 8));
        assert!(!rows_share_l1(4096, 9));
        assert!(!rows_share_l1(-65536, 9));
        assert!(rows_share_l1(2048, 16));
        assert!(!rows_share_l1(2048, 17));
        assert!(rows_share_l1(12544, 128));
        assert!(!rows_share_l1(12544, 129));
        assert!(rows_share_l1(64, 512));
        assert!(rows_share_l1(100, 100_000));
    }

    #[test]
    fn a_transpose_ordered_to_read_rows_gets_its_lane_loop_moved_innermost() {
        // `interchange` orders 8192x512 f32 by the source: [8192 (dst 4), 512 (src 4)].
        let mut kernel = transpose(8192, 512, 4);
        kernel.stmts[0].loops.swap(0, 1);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(extents, [2, 512, 64, 4, 16]);
        assert_eq!(tiled.stmts[0].loops[4].dst_stride, 4);
        same_result(&kernel, &tiled);
        // Small too: strip-mined only.
        let mut kernel = transpose(24, 20, 4);
        kernel.stmts[0].loops.swap(0, 1);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        let extents: Vec<u64> = tiled.stmts[0].loops.iter().map(|l| l.extent).collect();
        assert_eq!(extents, [5, 4, 24]);
        same_result(&kernel, &tiled);
        // Nothing to tile (the source-contiguous loop is no longer than a factor): unchanged.
        let mut kernel = transpose(24, 4, 4);
        kernel.stmts[0].loops.swap(0, 1);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        assert_eq!(tiled, kernel);
    }

    #[test]
    fn runs_of_a_vector_or_more_and_fills_are_left_alone() {
        let s = LoopStmt {
            action: LoopAction::Copy,
            bytes: 16,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![
                Loop {
                    extent: 8,
                    src_stride: 16,
                    dst_stride: 128,
                },
                Loop {
                    extent: 8,
                    src_stride: 128,
                    dst_stride: 16,
                },
            ],
            window: None,
        };
        assert_eq!(tile_stmt(&s), std::slice::from_ref(&s));
        let fill = LoopStmt {
            action: LoopAction::ZERO_FILL,
            bytes: 4,
            src_offset: 0,
            loops: s
                .loops
                .iter()
                .map(|l| Loop {
                    src_stride: 0,
                    dst_stride: l.dst_stride / 4,
                    ..*l
                })
                .collect(),
            ..s
        };
        assert_eq!(tile_stmt(&fill), std::slice::from_ref(&fill));
    }

    /// `[2, 1, 0]` of a cube: the middle loop (a batch between the two axes that swap, a
    /// smaller step than either's rows on both sides) goes inside the loops of blocks, right
    /// outside the register block, which takes two block columns where the lane loop has
    /// them; the points stay the same (the interpreter agrees).
    #[test]
    fn a_middle_loop_goes_inside_the_blocks() {
        let cube = |n: u64, dtype: relayout_ir::DType| {
            let (e, n_i) = (dtype.size() as i64, n as i64);
            let loops = vec![
                lp(n, e, e * n_i * n_i),
                lp(n, e * n_i, e * n_i),
                lp(n, e * n_i * n_i, e),
            ];
            kernel_of(copy(e as u64, loops), dtype, [n, n, n], [n, n, n])
        };
        // 64^3 f32, as the passes give it: blocks of 4 source rows by 8 lane elements.
        let t = tile_stmt(&cube(64, relayout_ir::DType::F32).stmts[0]);
        assert_eq!(t.len(), 1);
        assert_eq!(
            t[0].loops,
            [
                lp(8, 131072, 32),
                lp(16, 16, 65536),
                lp(64, 256, 256),
                lp(4, 4, 16384),
                lp(8, 16384, 4)
            ]
        );
        for (n, dtype) in [
            (16, relayout_ir::DType::F32),
            (12, relayout_ir::DType::F32),
            (16, relayout_ir::DType::F64),
            (16, relayout_ir::DType::F16),
            (32, relayout_ir::DType::U8),
        ] {
            let tiled = tiled_alike(&cube(n, dtype));
            let middle = tiled.stmts[0]
                .loops
                .iter()
                .position(|l| l.extent == n && l.src_stride == l.dst_stride && l.src_stride != 0);
            assert_eq!(
                middle,
                Some(tiled.stmts[0].loops.len() - 3),
                "{n}^3 {dtype}: {}",
                tiled.stmts[0]
            );
        }
        // 12 lane elements: one block column of 4 (12 is not a multiple of 8).
        let t = tile_stmt(&cube(12, relayout_ir::DType::F32).stmts[0]);
        assert_eq!(t[0].loops.last(), Some(&lp(4, 576, 4)));
    }

    /// A batch that `interchange` put outermost goes inside the loops of blocks too, when the
    /// lane rows do not fit L1 together; when they do, it stays outside.
    #[test]
    fn an_outer_batch_goes_inside_when_the_lane_rows_alias() {
        // `[2, 1, 0]` of 128x64x32 f32 as `interchange` orders it: [y, x, z].
        let s = copy(
            4,
            vec![lp(64, 128, 512), lp(32, 4, 32768), lp(128, 8192, 4)],
        );
        let t = tile_stmt(&s);
        assert_eq!(
            t[0].loops,
            [
                lp(16, 65536, 32),
                lp(8, 16, 131072),
                lp(64, 128, 512),
                lp(4, 4, 32768),
                lp(8, 8192, 4)
            ]
        );
        let kernel = kernel_of(s, relayout_ir::DType::F32, [128, 64, 32], [32, 64, 128]);
        tiled_alike(&kernel);
        // 64x40x36 f64: lane rows 11520 bytes apart spread over 16 sets; the batch stays out.
        let s = copy(
            8,
            vec![lp(40, 288, 512), lp(36, 8, 20480), lp(64, 11520, 8)],
        );
        assert_eq!(tile_stmt(&s)[0].loops[0], lp(40, 288, 512));
    }

    /// A loop between the two whose step is as large as a block row on one side (`[1, 3, 0, 2]`
    /// of 32^4 f32: it steps planes at the source) stays outside the blocks: the strip-mined
    /// form, the block's `f` rows right outside the lane loop.
    #[test]
    fn a_middle_loop_as_far_apart_as_the_rows_stays() {
        let s = copy(
            4,
            vec![
                lp(32, 4096, 131072),
                lp(32, 4, 4096),
                lp(32, 131072, 128),
                lp(32, 128, 4),
            ],
        );
        let t = tile_stmt(&s);
        assert_eq!(
            t[0].loops,
            [
                lp(32, 4096, 131072),
                lp(8, 16, 16384),
                lp(32, 131072, 128),
                lp(4, 4, 4096),
                lp(32, 128, 4)
            ]
        );
    }

    /// The two pieces of a strip-mined statement that a cut makes (an Im2Col of 16x16 patches
    /// of 224x224 maps: 12 whole blocks of patches and 2 left over) keep the block's rows
    /// right outside the lane loop, inside the loop of patch rows between them, so that the
    /// band `fuse-nests` makes of them shares only loops outside the blocks.
    #[test]
    fn cut_pieces_keep_the_block_rows_inside_the_middle_loops() {
        let s = copy(
            4,
            vec![
                lp(24, 200704, 200704),
                lp(16, 896, 12544),
                lp(16, 4, 784),
                lp(14, 14336, 56),
                lp(14, 64, 4),
            ],
        );
        let t = tile_stmt(&s);
        let rows = lp(4, 4, 784);
        assert_eq!(t.len(), 2);
        for piece in &t {
            let n = piece.loops.len();
            assert_eq!(piece.loops[n - 2], rows, "{piece:?}");
            assert_eq!(piece.loops[n - 3], lp(14, 14336, 56), "{piece:?}");
        }
        let kernel = kernel_of(s, relayout_ir::DType::F32, [24, 224, 224], [24, 256, 196]);
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        same_result(&kernel, &tiled);
        let fused = crate::passes::fuse_nests::FuseNests::default()
            .run_loops(&tiled)
            .unwrap();
        assert!(!fused.bands.is_empty(), "{fused}");
        assert!(fused.bands.iter().all(|b| b.depth <= 4), "{fused}");
    }

    /// A lane loop that is not a multiple of the block (16x16 f16 patches of 224x224 maps: 14
    /// patches a row for 8x8 blocks) ends with one more whole block laid over the last one,
    /// not with 6 columns of scalar runs; a rest of less than half a block stays a rest.
    #[test]
    fn the_rest_of_a_lane_loop_is_an_overlapping_block_when_it_is_half_a_block_or_more() {
        let patches = |px: u64| {
            copy(
                2,
                vec![
                    lp(24, 100352, 100352),
                    lp(16, 448, 6272),
                    lp(16, 2, 392),
                    lp(14, 7168, 28),
                    lp(px, 32, 2),
                ],
            )
        };
        let t = tile_stmt(&patches(14));
        assert_eq!(t.len(), 2, "{t:?}");
        assert!(
            t.iter().all(|s| s.loops.last() == Some(&lp(8, 32, 2))),
            "{t:?}"
        );
        assert_eq!((t[1].dst_offset, t[1].src_offset), (12, 192));
        let kernel = kernel_of(
            patches(14),
            relayout_ir::DType::F16,
            [24, 224, 224],
            [24, 256, 196],
        );
        same_result(&kernel, &TileTransposes.run_loops(&kernel).unwrap());
        // 9 = 8 + 1: the one column left is a statement of scalar runs.
        let t = tile_stmt(&patches(9));
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[0].loops.last(), Some(&lp(8, 32, 2)));
        assert_eq!((t[1].dst_offset, t[1].src_offset), (16, 256));
    }
}
