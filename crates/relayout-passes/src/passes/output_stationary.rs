//! `output-stationary`: turns consecutive accumulations that share one loop structure (Col2Im's
//! one `accumulate` per kernel position) into accumulations over disjoint output *cells*, each
//! adding all of its contributions with innermost *reduction loops* (loops whose destination
//! stride is 0), so that code generation keeps the sum of a run in registers and writes it
//! once instead of reading and writing the output once per contribution.
//!
//! What it does: for a maximal group of two or more consecutive `accumulate` statements with
//! the same run length and the same loops but for their extents (same strides, level by
//! level), it places each statement's destination box in coordinates (the destination offset
//! decomposed over the strides, with the remainder as a *phase*), cuts every level at every
//! box boundary, and emits, for each cell that some boxes cover, one `accumulate` over the
//! cell whose reduction loops enumerate the covering statements' source runs, in statement
//! order. A cell whose contributions do not form such a nest of reduction loops (an affine
//! box of source offsets, enumerated in order) keeps them as one statement each, and so does
//! a group this pass cannot place in coordinates. A group with a cell of more than
//! [`MAX_TERMS`] contributions (a 3-D Col2Im's 27) is cut into consecutive chunks of at most
//! [`CHUNK_TERMS`] statements, each chunk summed per cell on its own (three sweeps of nine
//! terms, not 27 of one or one of 27), or left as it is when no chunk size nests. Cells are
//! emitted largest first.
//!
//! When the innermost level is contiguous in both tensors (a Col2Im's output rows), it is not
//! cut: each cell is a whole row, and each term adds only to the part of the row its statement
//! covers, a [`Window`] that slides with the innermost reduction loop (`within bytes ...`).
//! Code generation then sums the row as whole vectors, completing the few at a window's ends,
//! instead of summing the row's first and last elements as cells of their own, one element at
//! a time ([`windowed_cells`]; where the parts leave a gap or do not slide so, the row is cut).
//!
//! Legality: each destination element receives the same additions in the same order as
//! before. The coordinates are unique (strides sorted by size, each at least the next one
//! times the span of coordinates below it, phases apart by at least a run), so two cells never
//! share a byte, a cell holds exactly the elements that the same statements cover, and its
//! reduction loops add their runs in statement order. Results are bit-exact, float rounding,
//! -0.0 and NaN included: nothing is reordered per element.
//!
//! When the statement just before the group is a zero fill of one contiguous range of bytes
//! and the cells write exactly that range (each cell one statement, its runs inside the range,
//! their bytes adding up to its length; cells never share a byte), the fill is dropped and the
//! cells become sums from +0.0 (`accumulate N bytes %dst[...] = 0 + %src[...]`): each run is
//! `+0.0 + t0 + t1 + ...`, exactly what the fill and the additions computed, without writing
//! zeros first or reading the destination. Otherwise the fill stays and the sums start from
//! what the destination holds.
//!
//! A single accumulate (not a group) whose points write disjoint bytes and which writes
//! exactly the bytes of the zero fill just before it becomes such a sum from +0.0 too, of one
//! term per run, or for integers a copy (see [`lone_sum`]): a Col2Im whose windows do not
//! overlap.
//!
//! What it does not do: drop a fill that the cells cover only in part (no smaller fills for the
//! rest), reorder anything across cells of different groups, or run across a statement that
//! is not an accumulation. Run it right after `linearize`, where all
//! of Col2Im's accumulations still have one loop structure; `coalesce` and `interchange` keep
//! reduction loops innermost and in order.

use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::{windows_cover, DType, Loop, LoopAction, LoopKernel, LoopStmt, Window};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct OutputStationary;

/// A group is left alone when it would make more cells than this (code size: every cell is a
/// statement and a function).
const MAX_CELLS: usize = 512;

/// A group is left alone when one of its cells would add more contributions than this. Each
/// contribution is a read stream of its own (another source plane), and past about sixteen
/// concurrent streams the hardware prefetchers stop keeping up, while the statements left as
/// they are run plane by plane (`fuse-nests` bands them over the planes, so an output plane
/// stays in L1 across all kernel positions and each source plane is read in one sequential
/// sweep). Measured with `relayout bench --ir` on the two forms of the same Col2Im, one thread
/// (AMD EPYC): 9 (2-D 3x3), 12 (3-D 2x2x3) and 16 (2-D 4x4) contributions ran 1.1-1.7x faster
/// summed per cell; 25 (2-D 5x5) and 27 (3-D 3x3x3) ran 1.2-1.5x faster left alone. The
/// contributions are also unrolled in code generation, which this bounds. Such a group is cut
/// into chunks instead ([`CHUNK_TERMS`]).
const MAX_TERMS: usize = 20;

/// The most statements in one chunk of a group with too many terms per cell. Each chunk is a
/// sweep over the destination (kept in cache by `fuse-nests`' band over planes) that adds at
/// most this many read streams per cell. Measured with `relayout bench` on one thread (AMD
/// EPYC) against leaving the statements as they are: 3-D 3x3x3 (chunks of 9) 3.3 -> 2.1-2.4
/// ms, 2-D 5x5 (chunks of 5) 5.1 -> 3.6-3.8 ms, 3-D 4x4x4 (chunks of 8) 3.6-4.1 -> 2.5-2.8 ms;
/// chunks of 16 for the 4x4x4 ran 3.2-3.4 ms, and a 2-D 3x3 in chunks of 3 ran slower than its
/// 9 terms summed at once (2.9 vs 2.3 ms).
const CHUNK_TERMS: usize = 9;

impl LoopPass for OutputStationary {
    const NAME: &'static str = "output-stationary";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        // f16 and bf16 sums are the JIT's sum helper's, which adds whole runs: a statement
        // with a window would be generated code adding an element per call (a 3x3 Col2Im of
        // 4x576x4096 f16 ran 20 times slower so). Cutting each run at the windows' ends into
        // pieces, each a call of the helper over the whole nest, measured no faster than the
        // cut rows (f16 3x3 of 64x64 planes 7.1-7.4 -> 6.0 GB/s, 3x3x3 and 5x5 within noise:
        // the helper's conversions, not the rows' ends, bound these sums).
        let windows = !matches!(k.dtype(), DType::F16 | DType::BF16);
        let mut stmts = Vec::with_capacity(k.stmts.len());
        let mut i = 0;
        while i < k.stmts.len() {
            let mut j = i + 1;
            while j < k.stmts.len() && same_structure(&k.stmts[i], &k.stmts[j]) {
                j += 1;
            }
            let group = &k.stmts[i..j];
            if let Some(sum) = lone_sum(stmts.last(), group, k.dtype()) {
                // One accumulate that writes every byte of the zero fill just before it once:
                // drop the fill and sum each run from +0.0.
                stmts.pop();
                stmts.push(sum);
                i = j;
                continue;
            }
            match (group.len() >= 2).then(|| cells(group, windows)).flatten() {
                Some((mut cells, nests)) => {
                    if nests && stmts.last().is_some_and(|f| covers(f, &cells)) {
                        // The cells write every byte of the zero fill just before them, and
                        // only those: drop it and start their sums from +0.0.
                        stmts.pop();
                        for c in &mut cells {
                            c.action = LoopAction::Sum;
                        }
                    }
                    stmts.extend(cells)
                }
                None => match chunked_cells(group, windows) {
                    Some(cells) => stmts.extend(cells),
                    None => stmts.extend_from_slice(group),
                },
            }
            i = j;
        }
        Ok(k.with_stmts(stmts, Vec::new()))
    }
}

impl_pass!(loops OutputStationary);

/// Whether `b` may join a group started by `a`: both accumulate runs of the same length over
/// loops with the same strides, none of them a reduction loop already.
fn same_structure(a: &LoopStmt, b: &LoopStmt) -> bool {
    a.action == LoopAction::Accumulate
        && b.action == LoopAction::Accumulate
        && a.bytes == b.bytes
        && a.loops.len() == b.loops.len()
        && a.loops.iter().zip(&b.loops).all(|(x, y)| {
            x.src_stride == y.src_stride && x.dst_stride == y.dst_stride && x.dst_stride > 0
        })
}

/// The innermost loops of `s` whose destination stride is 0 (the reduction loops), as an index
/// into `s.loops`: `s.loops[split..]` are they. Only an accumulate has them.
pub(crate) fn reduction_split(s: &LoopStmt) -> usize {
    if !s.action.is_accumulate() {
        return s.loops.len();
    }
    s.loops.len()
        - s.loops
            .iter()
            .rev()
            .take_while(|l| l.dst_stride == 0)
            .count()
}

/// `group` as a sum from +0.0 when it is one accumulate, without reduction loops, that writes
/// exactly the bytes of the zero fill `fill` (see [`covers`]: its points write disjoint
/// bytes, so each element receives one addition): `+0.0 + t` per run, what the fill and the
/// addition computed; for integers, whose `0 + t` is `t`, a copy. A Col2Im whose windows do
/// not overlap (strides equal to the kernel, no padding) lowers to one accumulate of all its
/// kernel positions after the zero fill; so it writes its output once, never reading it, and
/// moves like the copy of the same permutation (see `relayout_ir::LoopStmt::is_one_term_sum`).
fn lone_sum(fill: Option<&LoopStmt>, group: &[LoopStmt], dtype: DType) -> Option<LoopStmt> {
    let [s] = group else {
        return None;
    };
    let action = if dtype.is_integer() {
        LoopAction::Copy
    } else {
        LoopAction::Sum
    };
    (s.action == LoopAction::Accumulate
        && s.reduction_loops() == 0
        && fill.is_some_and(|f| covers(f, group)))
    .then(|| LoopStmt {
        action,
        ..s.clone()
    })
}

/// Whether `fill` is a zero fill of one contiguous range of bytes (every one of its loops
/// steps by the run the loops inside it cover) that `cells` (disjoint accumulations, each
/// summing one run per point of its outer loops) write exactly: every cell's runs lie inside
/// the range, no two runs of a cell overlap, and their bytes add up to the range's length.
fn covers(fill: &LoopStmt, cells: &[LoopStmt]) -> bool {
    let LoopAction::Fill { value } = fill.action else {
        return false;
    };
    if !value.is_zero() || fill.loops.iter().any(|l| l.extent == 0) {
        return false;
    }
    let mut loops: Vec<&Loop> = fill.loops.iter().filter(|l| l.extent > 1).collect();
    loops.sort_by_key(|l| l.dst_stride);
    let mut len = fill.bytes;
    for l in loops {
        if u64::try_from(l.dst_stride).ok() != Some(len) {
            return false;
        }
        let Some(next) = len.checked_mul(l.extent) else {
            return false;
        };
        len = next;
    }
    let Some(end) = i64::try_from(len)
        .ok()
        .and_then(|n| fill.dst_offset.checked_add(n))
    else {
        return false;
    };
    let mut total = 0u64;
    for c in cells {
        let outer = LoopStmt {
            loops: c.loops[..c.loops.len() - c.reduction_loops()].to_vec(),
            ..c.clone()
        };
        if outer
            .loops
            .iter()
            .any(|l| l.dst_stride <= 0 || l.extent == 0)
            || !relayout_ir::dependence::points_disjoint(&outer, 0)
        {
            return false;
        }
        let last = outer.loops.iter().try_fold(outer.dst_offset, |acc, l| {
            acc.checked_add(
                l.dst_stride
                    .checked_mul(i64::try_from(l.extent).ok()? - 1)?,
            )
        });
        let fits = last
            .and_then(|last| last.checked_add(i64::try_from(c.bytes).ok()?))
            .is_some_and(|hi| outer.dst_offset >= fill.dst_offset && hi <= end);
        let Some(size) = outer.trip_count().checked_mul(c.bytes) else {
            return false;
        };
        if !fits || outer.trip_count() == u64::MAX {
            return false;
        }
        total = total.saturating_add(size);
    }
    total == len
}

/// A group whose cells would add more than [`MAX_TERMS`] contributions, cut into consecutive
/// chunks of at most [`CHUNK_TERMS`] statements, each chunk's cells in place of its
/// statements; `None` when no chunk size cuts the group into chunks whose cells all nest.
///
/// The chunks run one after the other, so each destination element still receives its
/// additions in statement order: a chunk's cells add to what the earlier chunks stored (the
/// fill before the group stays). Chunk sizes are tried from the largest divisor of the group's
/// length down, so a 3x3x3 kernel is cut by its outermost kernel dim (three chunks of 9) and a
/// 6x6 one, whose chunks of 9 would split a kernel row, into rows of 6.
fn chunked_cells(group: &[LoopStmt], windows: bool) -> Option<Vec<LoopStmt>> {
    if group.len() <= MAX_TERMS {
        return None;
    }
    (2..=CHUNK_TERMS)
        .rev()
        .filter(|&size| group.len().is_multiple_of(size))
        .find_map(|size| {
            group.chunks(size).try_fold(Vec::new(), |mut out, chunk| {
                let (cells, nests) = cells(chunk, windows)?;
                out.extend(cells);
                nests.then_some(out)
            })
        })
}

/// The cells of a group and whether each of them is one statement (not several kept in
/// statement order), or `None` when the group cannot be placed in coordinates or is not
/// worth it.
fn cells(group: &[LoopStmt], windows: bool) -> Option<(Vec<LoopStmt>, bool)> {
    let levels = group[0].loops.len();
    let bytes = i64::try_from(group[0].bytes).ok()?;
    // Levels by decreasing destination stride.
    let mut order: Vec<usize> = (0..levels).collect();
    order.sort_by_key(|&l| std::cmp::Reverse(group[0].loops[l].dst_stride));
    // Each statement's origin per level and phase.
    let mut origins: Vec<(Vec<i64>, i64)> = Vec::with_capacity(group.len());
    for s in group {
        let mut rest = s.dst_offset;
        if rest < 0 {
            return None;
        }
        let mut origin = vec![0i64; levels];
        for &l in &order {
            let stride = s.loops[l].dst_stride;
            origin[l] = rest / stride;
            rest %= stride;
        }
        origins.push((origin, rest));
    }
    // Unique coordinates: the smallest stride holds a run after every phase, and each stride is
    // at least the next smaller one times the span of coordinates at that level.
    let smallest = order
        .last()
        .map_or(i64::MAX, |&l| group[0].loops[l].dst_stride);
    let span = |l: usize| -> Option<i64> {
        group
            .iter()
            .zip(&origins)
            .map(|(s, (o, _))| o[l].checked_add(i64::try_from(s.loops[l].extent).ok()?))
            .try_fold(0i64, |m, e| Some(m.max(e?)))
    };
    // Every box end fits in an i64 (the cuts below add without checks).
    for l in 0..levels {
        span(l)?;
    }
    for w in order.windows(2) {
        let (outer, inner) = (
            group[0].loops[w[0]].dst_stride,
            group[0].loops[w[1]].dst_stride,
        );
        if inner.checked_mul(span(w[1])?)? > outer {
            return None;
        }
    }
    let mut phases: Vec<i64> = origins.iter().map(|o| o.1).collect();
    phases.sort_unstable();
    phases.dedup();
    if phases
        .iter()
        .any(|&p| p.checked_add(bytes).is_none_or(|end| end > smallest))
        || phases.windows(2).any(|w| w[1] - w[0] < bytes)
    {
        return None;
    }
    if let Some(rows) = windows
        .then(|| windowed_cells(group, &order, &origins, &phases))
        .flatten()
    {
        return Some((rows, true));
    }
    let mut out = Vec::new();
    let mut summed = false;
    let mut nests = true;
    for &phase in &phases {
        let members: Vec<usize> = (0..group.len())
            .filter(|&k| origins[k].1 == phase)
            .collect();
        let cuts: Vec<Vec<i64>> = (0..levels)
            .map(|l| cut_points(group, origins.as_slice(), &members, l))
            .collect();
        let count = cuts
            .iter()
            .try_fold(1usize, |n, c| n.checked_mul(c.len().saturating_sub(1)))?;
        if count > MAX_CELLS {
            return None;
        }
        // Every cell, levels in loop order, last level fastest.
        let all: Vec<usize> = (0..levels).collect();
        if count > 0 && crowded(group, origins.as_slice(), &members, &all, &cuts) {
            return None;
        }
        let mut index = vec![0usize; levels];
        loop {
            if cuts.iter().all(|c| c.len() >= 2) {
                let lo: Vec<i64> = (0..levels).map(|l| cuts[l][index[l]]).collect();
                let hi: Vec<i64> = (0..levels).map(|l| cuts[l][index[l] + 1]).collect();
                let covering = covering(group, origins.as_slice(), &members, &all, (&lo, &hi));
                if covering.len() > MAX_TERMS {
                    return None;
                }
                if !covering.is_empty() {
                    let dst_offset = dst_at(group, phase, &lo)?;
                    let terms: Vec<i64> = covering
                        .iter()
                        .map(|&k| src_at(group, origins.as_slice(), k, &lo))
                        .collect::<Option<_>>()?;
                    let loops: Vec<Loop> = (0..levels)
                        .map(|l| Loop {
                            extent: (hi[l] - lo[l]) as u64,
                            ..group[0].loops[l]
                        })
                        .collect();
                    match nest(&terms) {
                        Some((first, reductions)) => {
                            summed |= !reductions.is_empty();
                            out.push(LoopStmt {
                                action: LoopAction::Accumulate,
                                bytes: group[0].bytes,
                                src_offset: first,
                                dst_offset,
                                loops: loops.into_iter().chain(reductions).collect(),
                                window: None,
                            });
                        }
                        None => out.extend(terms.iter().map(|&t| {
                            nests = false;
                            LoopStmt {
                                action: LoopAction::Accumulate,
                                bytes: group[0].bytes,
                                src_offset: t,
                                dst_offset,
                                loops: loops.clone(),
                                window: None,
                            }
                        })),
                    }
                }
            }
            if !next_cell(&mut index, &all, &cuts) {
                break;
            }
        }
    }
    // The largest cells first: Col2Im's interior reads whole lines of every contribution, so
    // the thin edge cells after it find them in cache instead of sweeping the source in a
    // strided pass of their own. Cells are disjoint, so their order is free; a cell kept as
    // several statements has them all with one key, and the sort is stable.
    out.sort_by_key(|s| std::cmp::Reverse(s.trip_count().saturating_mul(s.bytes)));
    summed.then_some((out, nests))
}

/// The cells of a group whose innermost level is contiguous (one element per step in both
/// tensors) with that level left whole: each cell is a run over all of it, and each of its
/// terms adds to the part of the run its statement covers (a [`Window`]). A Col2Im's output
/// rows are then summed whole, instead of an interior and, at each end, cells of single
/// elements that add their few contributions one element at a time. Measured with `relayout
/// bench`, one thread, the build before and this one interleaved, kernel time / memcpy time
/// of the bytes read and written: a 3x3x3 Col2Im of 16x16x16 planes (rows of 16 elements)
/// 1.65-1.69 -> 1.32-1.38 (1.4-1.6 -> 1.0 ms), 5x5 of 28x28 planes 1.56-1.62 -> 1.36-1.37, a
/// dilated 3x3 of 32x32 1.35-1.60 -> 1.18-1.38, int32 3x3x3 of 8x8x8 1.65-1.69 -> 1.44-1.55;
/// 64x64 planes, whose rows' ends are a small part, and f64 as before. Compiles run fewer
/// instructions too (callgrind: 3x3x3 -22%, 5x5 -25%). Not for f16 and bf16 (see
/// `run_loops`). `None` when the level is not contiguous, the statements' parts of it leave a
/// gap, or in some cell the terms do not cover the whole row, do not nest, or their parts do
/// not slide with the innermost reduction loop as a window does.
fn windowed_cells(
    group: &[LoopStmt],
    order: &[usize],
    origins: &[(Vec<i64>, i64)],
    phases: &[i64],
) -> Option<Vec<LoopStmt>> {
    let (&row, others) = order.split_last()?;
    let esize = i64::try_from(group[0].bytes).ok()?;
    let step = group[0].loops[row];
    if phases.len() != 1 || step.dst_stride != esize || step.src_stride != esize {
        return None;
    }
    let phase = phases[0];
    let levels = group[0].loops.len();
    let members: Vec<usize> = (0..group.len())
        .filter(|&k| group[k].loops.iter().all(|l| l.extent > 0))
        .collect();
    let span = |k: usize| {
        let o = origins[k].0[row];
        (o, o + group[k].loops[row].extent as i64)
    };
    // The row: the union of the members' parts, without a gap.
    let mut parts: Vec<(i64, i64)> = members.iter().map(|&k| span(k)).collect();
    parts.sort_unstable();
    let (first, mut end) = *parts.first()?;
    for &(lo, hi) in &parts {
        if lo > end {
            return None;
        }
        end = end.max(hi);
    }
    let run = u64::try_from((end - first).checked_mul(esize)?).ok()?;
    // Cut points of the other levels.
    let mut cuts: Vec<Vec<i64>> = vec![Vec::new(); levels];
    for &l in others {
        cuts[l] = cut_points(group, origins, &members, l);
    }
    let count = others.iter().try_fold(1usize, |n, &l| {
        n.checked_mul(cuts[l].len().saturating_sub(1))
    })?;
    if count > MAX_CELLS || crowded(group, origins, &members, others, &cuts) {
        return None;
    }
    let mut out = Vec::new();
    let mut index = vec![0usize; levels];
    let mut windowed = false;
    loop {
        // The cell's corner and far corner, the row whole.
        let corner = |at: usize| -> Vec<i64> {
            (0..levels)
                .map(|l| {
                    if l == row {
                        [first, end][at]
                    } else {
                        cuts[l][index[l] + at]
                    }
                })
                .collect()
        };
        let (lo, hi) = (corner(0), corner(1));
        let covering = covering(group, origins, &members, others, (&lo, &hi));
        if covering.len() > MAX_TERMS {
            return None;
        }
        if !covering.is_empty() {
            let mut terms = Vec::with_capacity(covering.len());
            let mut windows = Vec::with_capacity(covering.len());
            for &k in &covering {
                let (a, b) = span(k);
                terms.push(src_at(group, origins, k, &lo)?);
                windows.push((
                    u64::try_from((a - first) * esize).ok()?,
                    u64::try_from((b - first) * esize).ok()?,
                ));
            }
            // The row is the union of every member's part, but a cell at the far edge of
            // another level may have members whose parts cover less of it: such a row would
            // leave bytes unwritten and run past the tensor's end, so the group keeps its cut
            // cells.
            if !windows_cover(&windows, run) {
                return None;
            }
            let (src_offset, reductions) = nest(&terms)?;
            let window = if windows.iter().all(|&w| w == (0, run)) {
                None
            } else {
                let inner = reductions.last()?.extent as usize;
                let window = fit_window(&windows[..inner], run)?;
                let slides = windows
                    .iter()
                    .enumerate()
                    .all(|(j, w)| window.at((j % inner) as u64, run) == Some(*w));
                if !slides {
                    return None;
                }
                windowed = true;
                Some(window)
            };
            let dst_offset = dst_at(group, phase, &lo)?;
            let loops = (0..levels)
                .filter(|&l| l != row)
                .map(|l| Loop {
                    extent: (hi[l] - lo[l]) as u64,
                    ..group[0].loops[l]
                })
                .chain(reductions)
                .collect();
            out.push(LoopStmt {
                action: LoopAction::Accumulate,
                bytes: run,
                src_offset,
                dst_offset,
                loops,
                window,
            });
        }
        if !next_cell(&mut index, others, &cuts) {
            break;
        }
    }
    if !windowed {
        // Every cell adds whole rows: the ordinary cells (and `coalesce`) make the same.
        return None;
    }
    out.sort_by_key(|s| std::cmp::Reverse(s.trip_count().saturating_mul(s.bytes)));
    Some(out)
}

/// The members whose boxes hold the cell `[lo, hi)` at `levels` (coordinates per level).
fn covering(
    group: &[LoopStmt],
    origins: &[(Vec<i64>, i64)],
    members: &[usize],
    levels: &[usize],
    (lo, hi): (&[i64], &[i64]),
) -> Vec<usize> {
    members
        .iter()
        .copied()
        .filter(|&k| {
            levels.iter().all(|&l| {
                let o = origins[k].0[l];
                o <= lo[l] && hi[l] <= o + group[k].loops[l].extent as i64
            })
        })
        .collect()
}

/// Whether the middle cell of `cuts` at `levels` (the middle interval of each level) has more
/// than [`MAX_TERMS`] members covering it, which makes the cell loops give up when they reach
/// it. Reason: a group with too many terms (a 3x3x3 Col2Im's 27) is turned down at its first
/// crowded cell, which for kernel positions is the interior, reached after the edge cells
/// before it have been built in vain; the middle cell is that interior, so asking it first
/// gives the same `None` without them (callgrind: a 3x3x3 Col2Im's compile -4%).
fn crowded(
    group: &[LoopStmt],
    origins: &[(Vec<i64>, i64)],
    members: &[usize],
    levels: &[usize],
    cuts: &[Vec<i64>],
) -> bool {
    let mut lo = vec![0i64; cuts.len()];
    let mut hi = vec![0i64; cuts.len()];
    for &l in levels {
        let middle = (cuts[l].len() - 1) / 2;
        (lo[l], hi[l]) = (cuts[l][middle], cuts[l][middle + 1]);
    }
    covering(group, origins, members, levels, (&lo, &hi)).len() > MAX_TERMS
}

/// The source offset of member `k`'s run at the cell corner `lo` (coordinates per level).
fn src_at(group: &[LoopStmt], origins: &[(Vec<i64>, i64)], k: usize, lo: &[i64]) -> Option<i64> {
    (0..lo.len()).try_fold(group[k].src_offset, |acc, l| {
        let d = lo[l] - origins[k].0[l];
        acc.checked_add(d.checked_mul(group[k].loops[l].src_stride)?)
    })
}

/// The destination offset of the cell corner `lo` in `phase`.
fn dst_at(group: &[LoopStmt], phase: i64, lo: &[i64]) -> Option<i64> {
    (0..lo.len()).try_fold(phase, |acc, l| {
        acc.checked_add(lo[l].checked_mul(group[0].loops[l].dst_stride)?)
    })
}

/// Moves `index` to the next cell of `cuts` at `levels`, the last level fastest; `false`
/// after the last cell.
fn next_cell(index: &mut [usize], levels: &[usize], cuts: &[Vec<i64>]) -> bool {
    for &l in levels.iter().rev() {
        index[l] += 1;
        if index[l] + 1 < cuts[l].len() {
            return true;
        }
        index[l] = 0;
    }
    false
}

/// Where the boxes of `members` begin and end at `level`, in coordinates: sorted, each once.
fn cut_points(
    group: &[LoopStmt],
    origins: &[(Vec<i64>, i64)],
    members: &[usize],
    level: usize,
) -> Vec<i64> {
    let mut cuts: Vec<i64> = members
        .iter()
        .flat_map(|&k| {
            let o = origins[k].0[level];
            [o, o + group[k].loops[level].extent as i64]
        })
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

/// The window that gives iteration `k` of the innermost reduction loop the run bytes
/// `windows[k]` in a run of `run` bytes, if one does: both ends sliding by the same step,
/// clamped to the run.
fn fit_window(windows: &[(u64, u64)], run: u64) -> Option<Window> {
    let w: Vec<(i64, i64)> = windows
        .iter()
        .map(|&(a, b)| Some((i64::try_from(a).ok()?, i64::try_from(b).ok()?)))
        .collect::<Option<_>>()?;
    let mut steps: Vec<i64> = w
        .windows(2)
        .flat_map(|p| [p[1].0 - p[0].0, p[1].1 - p[0].1])
        .collect();
    steps.push(0);
    steps.sort_unstable();
    steps.dedup();
    for step in steps {
        for (k, &(a, _)) in w.iter().enumerate() {
            for (k2, &(_, b)) in w.iter().enumerate() {
                let window = Window {
                    start: a - step * k as i64,
                    end: b - step * k2 as i64,
                    step,
                };
                if windows
                    .iter()
                    .enumerate()
                    .all(|(j, &x)| window.at(j as u64, run) == Some(x))
                {
                    return Some(window);
                }
            }
        }
    }
    None
}

/// `terms` as the first offset and reduction loops (outermost first) that enumerate exactly
/// these offsets in this order, or `None` when they are not such a nest.
fn nest(terms: &[i64]) -> Option<(i64, Vec<Loop>)> {
    let n = terms.len();
    if n == 1 {
        return Some((terms[0], Vec::new()));
    }
    // The innermost loop: `inner` terms stepping by `step`, largest first.
    for inner in (2..=n).rev().filter(|d| n.is_multiple_of(*d)) {
        let step = terms[1].checked_sub(terms[0])?;
        let chunks_match = terms
            .chunks(inner)
            .all(|c| c.windows(2).all(|w| w[1].checked_sub(w[0]) == Some(step)));
        if !chunks_match {
            continue;
        }
        let starts: Vec<i64> = terms.iter().step_by(inner).copied().collect();
        if let Some((first, mut loops)) = nest(&starts) {
            loops.push(Loop {
                extent: inner as u64,
                src_stride: step,
                dst_stride: 0,
            });
            return Some((first, loops));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::nest;

    #[test]
    fn nests_of_offsets() {
        let (first, loops) = nest(&[10, 13, 16, 110, 113, 116]).unwrap();
        assert_eq!(first, 10);
        assert_eq!(
            loops
                .iter()
                .map(|l| (l.extent, l.src_stride))
                .collect::<Vec<_>>(),
            [(2, 100), (3, 3)]
        );
        assert!(nest(&[0, 1, 3]).is_none());
        assert_eq!(nest(&[7]).unwrap(), (7, Vec::new()));
    }
}
