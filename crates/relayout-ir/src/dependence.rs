//! Which destination bytes the iterations of a loop touch, and whether different iterations
//! touch disjoint bytes: the question behind fusing statements into a band (a later member's
//! iteration `p` then runs before an earlier member's iteration `q > p`), behind cutting a
//! loop into pieces for threads (pieces run at the same time), behind reordering a copy's
//! loops (`interchange`) and behind moving a copy's points in shuffled vectors (codegen): all
//! of them ask this module, so they cannot disagree on a statement.
//!
//! Only the destination matters: the source is never written. A statement's destination
//! footprint at one iteration of its loop `k` is an interval: the run, swept by every loop
//! inside `k` (each adds `min(0, stride * (extent - 1))` below and `max(0, ...)` above). Two
//! iterations of loop `k` that start `|stride_k|` bytes apart (or more) are disjoint when that
//! interval is at most `|stride_k|` long. For a band of several statements sharing loops
//! `0 .. depth` (same extents, same destination strides), the interval is the union over the
//! members, and the band's iterations are disjoint when this holds at every shared level:
//! two different iterations first differ at some level `k`, where the check separates them.
//!
//! The arithmetic is in `i128`, so no kernel that verifies can overflow it.

use crate::LoopStmt;

/// The destination bytes one iteration of loop `level` of `stmt` touches, as a half-open
/// interval relative to the offset its loops `0 .. level` (outside it) contribute. `level`
/// may be `stmt.loops.len()`: one point of the nest, the run itself.
pub fn dst_footprint(stmt: &LoopStmt, level: usize) -> (i128, i128) {
    swept(stmt, level + 1)
}

/// Whether every point of `stmt`'s loops `level..` writes its own destination bytes: no
/// two points of those loops touch a common byte. Then, in particular, different iterations
/// of loop `level` touch disjoint bytes, whatever the order of the loops. The check is the
/// nested-layout one: sorted by stride, each loop's stride must be at least the reach of the
/// run and all smaller-stride loops (loops of one iteration do not count). It proves what the
/// interval test cannot when a loop with a large stride sits inside one with a small stride
/// (a transposed nest with its outer loops swapped).
pub fn points_disjoint(stmt: &LoopStmt, level: usize) -> bool {
    let mut loops: Vec<(i128, i128)> = stmt
        .loops
        .iter()
        .skip(level)
        .filter(|l| l.extent > 1)
        .map(|l| (i128::from(l.dst_stride).abs(), i128::from(l.extent)))
        .collect();
    loops.sort_unstable();
    let mut span = i128::from(stmt.bytes);
    for (stride, extent) in loops {
        if stride < span {
            return false;
        }
        span += stride * (extent - 1);
    }
    true
}

/// Whether no destination byte is written by both `a` and `b`, in any order: what moving one
/// statement past another needs (`pair-phases`). Proven on a superset of both: the points of
/// `a`'s loops, each loop that moves the destination at the larger of the two statements'
/// extents, and the same again `b.dst_offset - a.dst_offset` bytes further, with the longer
/// run; when every point of that nest writes its own bytes ([`points_disjoint`]), so do any
/// point of `a` and any point of `b`. Loops of destination stride 0 (reduction loops) and of
/// one iteration do not move the destination and are left out. Statements whose moving loops
/// do not match stride for stride (one stride twice in a statement, or a stride only one of
/// them has but with its sign flipped in the other) still get a superset, of both loop sets,
/// so the answer stays sound; it is only more often `false`. Where the superset's points
/// overlap, the residues of both modulo a stride they share may still tell them apart (see
/// `residues_disjoint`), tried second because listing them costs more.
pub fn stmts_disjoint(a: &LoopStmt, b: &LoopStmt) -> bool {
    if a.loops.iter().chain(&b.loops).any(|l| l.extent == 0) {
        // A statement with an empty loop writes nothing.
        return true;
    }
    let moving = |s: &LoopStmt| -> Vec<(i64, u64)> {
        s.loops
            .iter()
            .filter(|l| l.extent > 1 && l.dst_stride != 0)
            .map(|l| (l.dst_stride, l.extent))
            .collect()
    };
    let (mut loops, other) = (moving(a), moving(b));
    // Each loop of `b` widens a loop of `a` with its stride that has not been matched yet, or
    // joins the superset as a loop of its own.
    let mut matched = vec![false; loops.len()];
    for (stride, extent) in other {
        match (0..matched.len()).find(|&i| !matched[i] && loops[i].0 == stride) {
            Some(i) => {
                matched[i] = true;
                loops[i].1 = loops[i].1.max(extent);
            }
            None => loops.push((stride, extent)),
        }
    }
    let Some(delta) = b.dst_offset.checked_sub(a.dst_offset) else {
        return residues_disjoint(a, b);
    };
    loops.push((delta, 2));
    let superset = LoopStmt {
        bytes: a.bytes.max(b.bytes),
        loops: loops
            .into_iter()
            .map(|(dst_stride, extent)| crate::Loop {
                extent,
                src_stride: 0,
                dst_stride,
            })
            .collect(),
        ..a.clone()
    };
    points_disjoint(&superset, 0) || residues_disjoint(a, b)
}

/// The most points of the loops a statement's residues are listed over
/// ([`residues_disjoint`]).
const RESIDUE_POINTS: u64 = 256;

/// Whether `a` and `b` write no common byte because, for some modulus `m` (a destination
/// stride of loops of both), the offsets of the bytes each writes fall in disjoint
/// residue classes mod `m`. A loop whose stride is a multiple of `m` leaves a byte's residue
/// as it is, so each statement's residues are its runs listed over its other loops only (at
/// most [`RESIDUE_POINTS`] points, else that modulus is not tried). This separates pieces
/// that interleave at a period: an Im2Col plane's rows (a run of 248 bytes from byte 4 of
/// each 256-byte row) from the elements at their ends (bytes 0 and 252 of every row), which
/// neither statement's bounding interval nor the superset of both can tell apart.
fn residues_disjoint(a: &LoopStmt, b: &LoopStmt) -> bool {
    fn moving(s: &LoopStmt) -> impl Iterator<Item = i128> + '_ {
        s.loops
            .iter()
            .filter(|l| l.extent > 1 && l.dst_stride != 0)
            .map(|l| i128::from(l.dst_stride).abs())
    }
    // The first and last runs of each: if one of `a`'s meets one of `b`'s mod `m`, the
    // residues meet, which rules out most moduli before any listing.
    let ends = |s: &LoopStmt| {
        let last = s.loops.iter().fold(i128::from(s.dst_offset), |at, l| {
            at + i128::from(l.dst_stride) * i128::from(l.extent.saturating_sub(1))
        });
        [i128::from(s.dst_offset), last]
    };
    let (a_ends, b_ends) = (ends(a), ends(b));
    let (a_run, b_run) = (i128::from(a.bytes), i128::from(b.bytes));
    let separates = |m: i128| {
        // Runs `[x, x + a_run)` and `[y, y + b_run)` meet mod `m` when one starts inside
        // the other, mod `m` (both are shorter than `m`).
        let meet =
            |x: i128, y: i128| (y - x).rem_euclid(m) < a_run || (x - y).rem_euclid(m) < b_run;
        if a_ends.iter().any(|&x| b_ends.iter().any(|&y| meet(x, y))) {
            return false;
        }
        match (residues(a, m), residues(b, m)) {
            (Some(x), Some(y)) => sorted_disjoint(&x, &y),
            _ => false,
        }
    };
    // The moduli: strides both statements step by (a row, a plane), where pieces that
    // interleave at a period separate; each tried once, the smallest (fewest points to list)
    // first.
    let mut moduli: Vec<i128> = moving(a)
        .filter(|&m| m > a_run.max(b_run) && moving(b).any(|x| x == m))
        .collect();
    moduli.sort_unstable();
    moduli.dedup();
    moduli.into_iter().any(separates)
}

/// Whether two lists of half-open intervals, each sorted by start and disjoint, share no
/// point.
fn sorted_disjoint(x: &[(u64, u64)], y: &[(u64, u64)]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let ((a_lo, a_hi), (b_lo, b_hi)) = (x[i], y[j]);
        if a_hi <= b_lo {
            i += 1;
        } else if b_hi <= a_lo {
            j += 1;
        } else {
            return false;
        }
    }
    true
}

/// The residues mod `m` of the bytes `s` writes, as disjoint half-open intervals inside
/// `[0, m)`, sorted; `None` when its loops whose stride is not a multiple of `m` have more
/// than [`RESIDUE_POINTS`] points. `m` is larger than the run.
///
/// Residues are below `m`, which is below 2^63 (an `i64` stride's magnitude), so they and
/// the sum of two of them fit a `u64`: each point's residue is the one a loop step before
/// it plus that step's, less `m` once if it passes `m` (no division per point).
fn residues(s: &LoopStmt, m: i128) -> Option<Vec<(u64, u64)>> {
    let modulus = u64::try_from(m).ok()?;
    let residue = |x: i128| x.rem_euclid(m) as u64;
    let steps: Vec<(u64, u64)> = s
        .loops
        .iter()
        .filter(|l| l.extent > 1)
        .map(|l| (residue(i128::from(l.dst_stride)), l.extent))
        .filter(|&(step, _)| step != 0)
        .collect();
    let points = steps
        .iter()
        .try_fold(1u64, |n, &(_, extent)| n.checked_mul(extent))
        .filter(|&n| n <= RESIDUE_POINTS)?;
    let mut starts: Vec<u64> = Vec::with_capacity(points as usize);
    starts.push(residue(i128::from(s.dst_offset)));
    for (step, extent) in steps {
        // Point `i * known + k` is point `(i - 1) * known + k` one step further.
        let known = starts.len();
        for at in known..known * extent as usize {
            let next = starts[at - known] + step;
            starts.push(if next >= modulus {
                next - modulus
            } else {
                next
            });
        }
    }
    let run = s.bytes;
    let mut intervals: Vec<(u64, u64)> = Vec::with_capacity(2 * starts.len());
    for at in starts {
        // A run that passes `m` wraps around to the start (`at + run < 2m`).
        let end = at + run;
        intervals.push((at, end.min(modulus)));
        if end > modulus {
            intervals.push((0, end - modulus));
        }
    }
    intervals.sort_unstable();
    // Merged, so that the intervals are disjoint and sorted by start and by end alike.
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(intervals.len());
    for (lo, hi) in intervals {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    Some(merged)
}

/// Whether `b` may run before `a` where it ran after it: as members of one band sharing
/// their `depth` outermost loops (then only within each iteration of those loops, whose order
/// stays), or, for `depth` 0, as whole statements. It holds when no destination byte is
/// written by both in one such iteration (the source is never written).
///
/// Proven by intervals first. Below the band's loops, the two may share `q` more outer loops
/// (same extents and destination strides); when different iterations of those touch
/// disjoint bytes ([`iterations_disjoint`] of the pair) and, at one iteration of them, the
/// intervals the remaining loops sweep do not overlap, no byte is written by both. This
/// separates, say, a bordered plane's bottom row from its left column (`q` = 0), or the
/// same in every depth slice of a volume (`q` = 1), which the superset of [`stmts_disjoint`]
/// (tried last, for the whole of both) mixes up.
pub fn members_commute(a: &LoopStmt, b: &LoopStmt, depth: usize) -> bool {
    let moving = |l: &crate::Loop| (l.extent, l.dst_stride);
    if a.loops.len() >= depth
        && b.loops.len() >= depth
        && a.loops[..depth]
            .iter()
            .map(moving)
            .eq(b.loops[..depth].iter().map(moving))
    {
        // At q = 0 (the whole of both at one iteration of the shared loops), the intervals
        // alone decide, without building the statements below the shared loops: the common
        // case of two members that write different rows.
        let (a_lo, a_hi) = swept(a, depth);
        let (b_lo, b_hi) = swept(b, depth);
        if a_hi <= b_lo || b_hi <= a_lo {
            return true;
        }
        let below = |s: &LoopStmt| LoopStmt {
            loops: s.loops[depth..].to_vec(),
            ..s.clone()
        };
        let pair = [below(a), below(b)];
        let common = pair[0]
            .loops
            .iter()
            .zip(&pair[1].loops)
            .take_while(|(x, y)| moving(x) == moving(y))
            .count();
        for q in 0..=common {
            let (a_lo, a_hi) = swept(&pair[0], q);
            let (b_lo, b_hi) = swept(&pair[1], q);
            if (a_hi <= b_lo || b_hi <= a_lo) && iterations_disjoint(&pair, q).is_ok() {
                return true;
            }
        }
    }
    stmts_disjoint(a, b)
}

/// The destination bytes `stmt`'s loops `from..` sweep from its offset (the run included), as
/// a half-open interval: [`dst_footprint`] at level `from - 1`, or the whole nest for 0.
fn swept(stmt: &LoopStmt, from: usize) -> (i128, i128) {
    let mut lo = i128::from(stmt.dst_offset);
    let mut hi = lo + i128::from(stmt.bytes);
    for l in stmt.loops.iter().skip(from) {
        let reach = i128::from(l.dst_stride) * i128::from(l.extent.saturating_sub(1));
        lo += reach.min(0);
        hi += reach.max(0);
    }
    (lo, hi)
}

/// Whether `stmts` (consecutive members of one band, or a single statement) can share their
/// `depth` outermost loops with different iterations of those loops touching disjoint
/// destination bytes. `Err` says why not, with the values involved. `depth` 0 is always
/// `Ok`; a statement with fewer than `depth` loops, or loops that differ between members in
/// extent or destination stride, is an error.
pub fn iterations_disjoint(stmts: &[LoopStmt], depth: usize) -> Result<(), String> {
    let Some(first) = stmts.first() else {
        return Ok(());
    };
    for (m, s) in stmts.iter().enumerate() {
        if s.loops.len() < depth {
            return Err(format!(
                "member {m} has {} loops, fewer than the {depth} shared ones",
                s.loops.len()
            ));
        }
        for k in 0..depth {
            let (a, b) = (&first.loops[k], &s.loops[k]);
            if (a.extent, a.dst_stride) != (b.extent, b.dst_stride) {
                return Err(format!(
                    "loop i{k} of member {m} (extent {}, dst stride {}) differs from member 0's \
                     (extent {}, dst stride {})",
                    b.extent, b.dst_stride, a.extent, a.dst_stride
                ));
            }
        }
    }
    for k in 0..depth {
        let l = &first.loops[k];
        if l.extent <= 1 {
            continue;
        }
        let (lo, hi) = stmts
            .iter()
            .map(|s| dst_footprint(s, k))
            .fold((i128::MAX, i128::MIN), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            });
        let step = i128::from(l.dst_stride).abs();
        if hi - lo > step && !(stmts.len() == 1 && points_disjoint(first, k)) {
            return Err(format!(
                "one iteration of i{k} writes {} destination bytes (offsets {lo} to {hi}), more \
                 than its stride of {step} bytes: iterations overlap",
                hi - lo
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Loop, LoopAction};
    use proptest::prelude::*;
    use std::collections::HashSet;

    fn stmt(bytes: u64, dst_offset: i64, loops: &[(u64, i64)]) -> LoopStmt {
        LoopStmt {
            action: LoopAction::ZERO_FILL,
            bytes,
            src_offset: 0,
            dst_offset,
            loops: loops
                .iter()
                .map(|&(extent, dst_stride)| Loop {
                    extent,
                    src_stride: 0,
                    dst_stride,
                })
                .collect(),
            window: None,
        }
    }

    /// The bytes member `s` touches at band iteration `outer` (values of loops `0..depth`).
    fn touched(s: &LoopStmt, outer: &[u64]) -> HashSet<i64> {
        let depth = outer.len();
        let base: i64 = s.dst_offset
            + outer
                .iter()
                .zip(&s.loops)
                .map(|(&i, l)| i as i64 * l.dst_stride)
                .sum::<i64>();
        let mut points = vec![base];
        for l in &s.loops[depth..] {
            points = points
                .iter()
                .flat_map(|&p| (0..l.extent as i64).map(move |i| p + i * l.dst_stride))
                .collect();
        }
        points.iter().flat_map(|&p| p..p + s.bytes as i64).collect()
    }

    /// Every iteration vector of `extents`.
    fn iterations(extents: &[u64]) -> Vec<Vec<u64>> {
        extents.iter().fold(vec![vec![]], |acc, &e| {
            acc.iter()
                .flat_map(|v| {
                    (0..e).map(move |i| {
                        let mut v = v.clone();
                        v.push(i);
                        v
                    })
                })
                .collect()
        })
    }

    #[test]
    fn col2im_planes_are_disjoint_and_overlapping_rows_are_not() {
        // A fill of one 16-byte plane and an accumulation into its rows, per plane.
        let fill = stmt(16, 0, &[(4, 16)]);
        let acc = stmt(4, 4, &[(4, 16), (3, 4)]);
        assert_eq!(iterations_disjoint(&[fill.clone(), acc.clone()], 1), Ok(()));
        // The same with a plane stride of 8: iteration i writes bytes 8i .. 8i + 16.
        let fill = stmt(16, 0, &[(4, 8)]);
        let acc = stmt(4, 4, &[(4, 8), (3, 4)]);
        assert!(iterations_disjoint(&[fill, acc], 1).is_err());
    }

    #[test]
    fn col2im_phases_and_columns_are_disjoint() {
        // Stride-2 Col2Im of 64x64 f32: the even and odd columns of one set of rows, and the
        // odd rows (256 bytes further), never share a byte.
        let even = stmt(4, 520, &[(30, 512), (31, 8)]);
        let odd = stmt(4, 516, &[(30, 512), (31, 8)]);
        let rows = stmt(4, 776, &[(30, 512), (31, 8)]);
        assert!(stmts_disjoint(&even, &odd));
        assert!(stmts_disjoint(&odd, &rows));
        // A single column (fewer loops) of another phase.
        assert!(stmts_disjoint(&even, &stmt(4, 264, &[(31, 8)])));
        // The same phase shifted by a whole step overlaps.
        assert!(!stmts_disjoint(&even, &stmt(4, 528, &[(30, 512), (31, 8)])));
        // Column 0 is disjoint from columns 2, 4, ...: the superset of the two cannot tell,
        // the residues mod the row stride can (bytes 0..4 of each 512-byte row against 8..252).
        assert!(stmts_disjoint(&even, &stmt(4, 512, &[(30, 512)])));
        // Column 0 against every column of the same rows: residues 0..4 in both.
        assert!(!stmts_disjoint(
            &stmt(4, 512, &[(30, 512), (32, 4)]),
            &stmt(4, 512, &[(30, 512)])
        ));
    }

    #[test]
    fn rows_and_the_elements_at_their_ends_are_told_apart_by_residues() {
        // An Im2Col plane of 64 rows of 256 bytes, per channel (147456 bytes): the rows'
        // 248 bytes from byte 4 (three kernel columns' planes of 16384 bytes, 62 rows each),
        // and the first and last elements of every row of the first and third planes.
        let rows = stmt(
            248,
            260,
            &[(256, 147456), (3, 49152), (62, 256), (3, 16384)],
        );
        let ends = stmt(4, 0, &[(256, 147456), (2, 33020), (3, 49152), (64, 256)]);
        assert!(stmts_disjoint(&rows, &ends));
        assert!(members_commute(&ends, &rows, 1));
        // Rows one element longer reach the last elements.
        let longer = stmt(
            252,
            260,
            &[(256, 147456), (3, 49152), (62, 256), (3, 16384)],
        );
        assert!(!stmts_disjoint(&longer, &ends));
        // A run longer than every stride of the two is never separated this way.
        assert!(!residues_disjoint(
            &stmt(512, 0, &[(4, 256)]),
            &stmt(4, 2048, &[])
        ));
    }

    #[test]
    fn a_planes_bottom_row_commutes_with_its_left_column() {
        // Col2Im 64x64 f32 planes of 16384 bytes: the left column (cells 1..63 of column 0)
        // and the bottom row (cells 1..63 of row 63), per plane.
        let left = stmt(4, 256, &[(256, 16384), (62, 256)]);
        let bottom = stmt(248, 16132, &[(256, 16384)]);
        assert!(members_commute(&left, &bottom, 1));
        assert!(members_commute(&bottom, &left, 1));
        // The superset of the two cannot tell (it widens the column to the row's 248 bytes);
        // the residues mod the plane (rows 1..62's first element, row 63's bytes 4..252) can.
        assert!(stmts_disjoint(&left, &bottom));
        // The same in every one of 15 depth slices of 1024 bytes: rows of 56 bytes and a
        // column of 4, both inside the slice's loop.
        let left = stmt(4, 64, &[(64, 16384), (15, 1024), (14, 64)]);
        let bottom = stmt(56, 964, &[(64, 16384), (15, 1024)]);
        assert!(members_commute(&left, &bottom, 1));
        // A row that runs into the column's last cell does not commute.
        let left = stmt(4, 256, &[(256, 16384), (62, 256)]);
        let low = stmt(248, 15876 - 8, &[(256, 16384)]);
        assert!(!members_commute(&left, &low, 1));
    }

    proptest! {
        /// Against brute force on small random bands: whenever the analysis says disjoint,
        /// no byte is touched by two different band iterations.
        #[test]
        fn disjoint_means_no_shared_byte(
            depth in 1usize..3,
            shared in prop::collection::vec((1u64..4, -24i64..24), 2),
            members in prop::collection::vec(
                (1u64..6, 0i64..40, prop::collection::vec((1u64..4, -12i64..12), 0..2)),
                1..4,
            ),
        ) {
            let shared = &shared[..depth];
            let stmts: Vec<LoopStmt> = members
                .iter()
                .map(|(bytes, off, inner)| {
                    let loops: Vec<(u64, i64)> = shared.iter().chain(inner).copied().collect();
                    stmt(*bytes, *off + 200, &loops)
                })
                .collect();
            let extents: Vec<u64> = shared.iter().map(|l| l.0).collect();
            let per_iteration: Vec<HashSet<i64>> = iterations(&extents)
                .iter()
                .map(|it| stmts.iter().flat_map(|s| touched(s, it)).collect())
                .collect();
            let mut overlap = false;
            for (a, x) in per_iteration.iter().enumerate() {
                for y in &per_iteration[a + 1..] {
                    overlap |= !x.is_disjoint(y);
                }
            }
            if iterations_disjoint(&stmts, depth).is_ok() {
                prop_assert!(!overlap, "said disjoint, but iterations share bytes: {stmts:?}");
            }
            // Every point of a statement's whole nest on its own bytes: no byte touched twice.
            for s in &stmts {
                if points_disjoint(s, 0) {
                    let mut seen = HashSet::new();
                    for it in iterations(&s.loops.iter().map(|l| l.extent).collect::<Vec<_>>()) {
                        let point: HashSet<i64> = touched(s, &it);
                        prop_assert!(
                            point.iter().all(|b| seen.insert(*b)),
                            "said disjoint, but points share bytes: {s:?}"
                        );
                    }
                }
            }
            // Two statements said disjoint share no byte.
            for (x, s) in stmts.iter().enumerate() {
                for t in &stmts[x + 1..] {
                    if stmts_disjoint(s, t) {
                        let all = |s: &LoopStmt| -> HashSet<i64> {
                            let e: Vec<u64> = s.loops.iter().map(|l| l.extent).collect();
                            iterations(&e).iter().flat_map(|it| touched(s, it)).collect()
                        };
                        prop_assert!(
                            all(s).is_disjoint(&all(t)),
                            "said disjoint, but the statements share bytes: {s:?} {t:?}"
                        );
                    }
                }
            }
            // Two members said to commute share no byte within any one band iteration, and
            // whole statements (depth 0) none at all.
            for (x, s) in stmts.iter().enumerate() {
                for t in &stmts[x + 1..] {
                    for d in [0, depth] {
                        if members_commute(s, t, d) {
                            for it in iterations(&extents[..d]) {
                                let all = |s: &LoopStmt| -> HashSet<i64> {
                                    let e: Vec<u64> =
                                        s.loops[d..].iter().map(|l| l.extent).collect();
                                    iterations(&e)
                                        .iter()
                                        .flat_map(|rest| {
                                            let point: Vec<u64> =
                                                it.iter().chain(rest).copied().collect();
                                            touched(s, &point)
                                        })
                                        .collect()
                                };
                                prop_assert!(
                                    all(s).is_disjoint(&all(t)),
                                    "said to commute at depth {d}, but share bytes: {s:?} {t:?}"
                                );
                            }
                        }
                    }
                }
            }
            // The single-statement, one-loop case is exact when the stride is at least the
            // run: then "overlap" and "not disjoint" agree.
            if depth == 1 && stmts.len() == 1 && stmts[0].loops.len() == 1 {
                prop_assert_eq!(iterations_disjoint(&stmts, 1).is_ok(), !overlap);
            }
        }
    }
}
