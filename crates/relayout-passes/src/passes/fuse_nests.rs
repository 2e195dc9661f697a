//! `fuse-nests`: fuses consecutive statements that share their outer loops into bands, so
//! that one sweep over those loops does the work of all of them (see `relayout_ir::Band`).
//! Col2Im is the case it is for: a fill of the output and one accumulation per kernel
//! position, each a full sweep over an output that does not fit in L2, become one sweep over
//! output planes, each plane staying in cache while all its contributions are added.
//!
//! Legality is MLIR affine-loop-fusion's, specialised to this IR: the only tensor written is
//! the destination, so fusing statements over shared loops is legal exactly when different
//! iterations of those loops touch disjoint destination bytes (then every byte is touched in
//! one iteration only, where the members run in statement order: each element sees the same
//! writes in the same order as before fusion, so results are bit-exact, float accumulation
//! order and -0.0 included). `relayout_ir::dependence::iterations_disjoint` decides it, the
//! same analysis the verifier's `bands` check and the JIT's threading use. Fusion that would
//! let a later statement's iteration run before an earlier statement's later iteration on the
//! same bytes (a write-after-write or an accumulation reordered) is refused.
//!
//! What it does:
//! - groups consecutive statements greedily: a statement joins the group before it when its
//!   outermost loop has the group's extent and destination stride and the grown group's
//!   iterations stay disjoint. A statement whose outermost loop is `k` of the group's
//!   iterations (`k` times the extent, a `k`-th of the stride: Im2Col's padding columns,
//!   whose loop over channels and kernel rows `coalesce` merged) is first split into the
//!   group's loop and one of `k`. A fill or copy without that loop whose run is exactly
//!   `extent * stride` contiguous bytes (Col2Im's whole-output fill) is first cut into
//!   `extent` runs of `stride` bytes along such a loop, which moves the same bytes;
//! - deepens each band while the members share the next loop too and stay disjoint;
//! - when only some members share the next loop but they do most of the work (a padded
//!   plane's rows between its top and bottom rows; a Col2Im's rows, whose edges come after
//!   its top row), makes them a deeper band, so each row is written whole in one sweep: nested
//!   in the band, between the other members (which have no loops inside the band but a sum's
//!   reduction loops), when those read the source; when they only write (fills), a band of
//!   its own after a band of the others. Members move before the run only when every band
//!   iteration has their bytes apart from those of the run's members before them (see
//!   [`deeper_run`] and `Run`), otherwise the band stays as it was;
//! - keeps a band only where it pays: an iteration must move at least [`MIN_ITERATION_BYTES`]
//!   bytes per member with loops inside the band other than a sum's reduction loops (each
//!   such member's nest is entered once per iteration; a member without is a few instructions
//!   in the band's loop) and touch at most
//!   [`MAX_ITERATION_FOOTPRINT`] destination bytes (what stays in cache between members), or
//!   [`MANY_MEMBERS_FOOTPRINT`] for a band of [`MANY_MEMBERS`] members or more (which would
//!   otherwise sweep the output that many times);
//!   [`FuseNests::always`] drops this condition, for tests.
//!
//! It runs after the other loop passes of the default pipeline but `reroll`: every loop pass
//! starts from the unfused kernel (the pass manager drops bands before it, which is always
//! correct) except `reroll`, which keeps the bands right itself.

use crate::pass::{impl_pass, LoopPass};
use crate::passes::output_stationary::reduction_split;
use crate::PassError;
use relayout_ir::dependence::{dst_footprint, iterations_disjoint};
use relayout_ir::{Band, Loop, LoopAction, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug)]
pub struct FuseNests {
    /// A band iteration must move at least this many bytes per member on average.
    pub min_iteration_bytes: u64,
    /// A band iteration may touch at most this many destination bytes.
    pub max_iteration_footprint: u64,
    /// ... or this many, when the band has 16 members or more (`MANY_MEMBERS`).
    pub max_many_members_footprint: u64,
}

/// Members from which a band's iteration may touch up to
/// [`FuseNests::max_many_members_footprint`] bytes. A padded Im2Col of a large kernel has a
/// statement or more per kernel position, each a sweep over the whole output: a 31x31 one of
/// 1x8x56x56 f32 has some 900, and one iteration of its band over channels writes 12 MB, more
/// than [`MAX_ITERATION_FOOTPRINT`]. Unfused, every piece of an output row (its body, its
/// padding) was written in another sweep over the 96 MB output, its line fetched from memory
/// again; fused, within 12 MB that the last-level cache holds: 20.4-20.7 -> 14.4-15.1 ms
/// (2.4-2.5x memcpy's time -> 1.9x), a 21x21 one of 1x16x56x56 19 -> 12 ms, a 15x15 one of
/// 1x32x56x56 16.6-16.8 -> 10.2-10.8 ms (2.4x -> 1.5x); with 16 members rather than 64, a
/// 7x7 one of 1x32x112x112 (31 statements, 2.5 MB a channel) 6.5-6.8 -> 5.0-5.1 ms (1.03-1.09x
/// -> 0.79-0.82x) and ResNet's 7x7 stem of stride 2 (24 statements, 2.4 MB a channel of
/// 8x3x224x224) 8.1-8.4 -> 7.3-7.4 ms, each compiling in 1.7-2.2 ms instead of 2.4-5.3. The
/// kernels of the benchmark suites have at most 13 statements, and no band of theirs changes.
pub const MANY_MEMBERS: usize = 16;

/// The default [`FuseNests::max_many_members_footprint`]: half the last-level cache of the
/// reference machine (32 MiB).
pub const MANY_MEMBERS_FOOTPRINT: u64 = 16 * 1024 * 1024;

/// The default [`FuseNests::min_iteration_bytes`]: below it, entering each member's code once
/// per iteration costs more than the cache saves.
pub const MIN_ITERATION_BYTES: u64 = 512;

/// The default [`FuseNests::max_iteration_footprint`]: about what stays in a core's share of
/// the last-level cache between the members. It was a core's L2 (512 KiB), which kept a 3-D
/// Im2Col (3x3x3 of 1x32x16x32x32 f32: 27 planes of 64 KiB per channel, 1.7 MiB) as 28
/// statements each sweeping the whole 54 MiB output, whose lines left the caches between the
/// statements that write them. Fused over channels it ran 0.82-1.16x memcpy's time against
/// 1.29-1.65x, and compiled in 35 M instead of 57 M instructions (`reroll` merges more pieces
/// inside a band); the constant Pad of bench/suite_beyond.json, which it also fuses (over rows),
/// stayed within noise (1.01-1.03x against 1.00-1.12x). One thread measured; with threads, each
/// runs its own band iteration.
pub const MAX_ITERATION_FOOTPRINT: u64 = 2 * 1024 * 1024;

impl Default for FuseNests {
    fn default() -> FuseNests {
        FuseNests {
            min_iteration_bytes: MIN_ITERATION_BYTES,
            max_iteration_footprint: MAX_ITERATION_FOOTPRINT,
            max_many_members_footprint: MANY_MEMBERS_FOOTPRINT,
        }
    }
}

impl FuseNests {
    /// Fuses every legal group, whether it pays or not: for tests, which need fusion on
    /// kernels too small to profit from it.
    pub fn always() -> FuseNests {
        FuseNests {
            min_iteration_bytes: 0,
            max_iteration_footprint: u64::MAX,
            max_many_members_footprint: u64::MAX,
        }
    }
}

impl LoopPass for FuseNests {
    const NAME: &'static str = "fuse-nests";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        let mut out = k.with_stmts(Vec::with_capacity(k.stmts.len()), k.bands.clone());
        // The group being grown (members as fused) and its statements as they were.
        let mut group = Group::default();
        let mut originals: &[LoopStmt] = &[];
        let elem = k.dst.dtype.size();
        for (i, stmt) in k.stmts.iter().enumerate() {
            if group.join(stmt, elem) {
                originals = &k.stmts[i + 1 - group.members.len()..=i];
                continue;
            }
            self.close(&mut out, &group.members, originals);
            group = Group::of(stmt);
            originals = &k.stmts[i..=i];
        }
        self.close(&mut out, &group.members, originals);
        Ok(out)
    }
}

impl_pass!(loops FuseNests);

/// A group being grown: its members as fused, and the destination bytes one iteration of
/// their shared outer loop writes (the union of their footprints, kept so that a statement
/// joins a group of `n` members in time independent of `n`: a 63x63 Im2Col has some 4,000
/// statements).
#[derive(Default)]
struct Group {
    members: Vec<LoopStmt>,
    span: (i128, i128),
}

impl Group {
    /// The group of one statement.
    fn of(stmt: &LoopStmt) -> Group {
        let members = vec![stmt.clone()];
        let span = Group::span_of(&members);
        Group { members, span }
    }

    fn span_of(members: &[LoopStmt]) -> (i128, i128) {
        members
            .iter()
            .map(|s| dst_footprint(s, 0))
            .fold((i128::MAX, i128::MIN), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            })
    }

    /// Grows the group by `next` when it can join (see [`join`]), and says whether it did.
    /// `elem`: the kernel's element size.
    fn join(&mut self, next: &LoopStmt, elem: u64) -> bool {
        if self.members.len() < 2 {
            // The first member may take `next`'s outer loop: the whole check.
            let Some(grown) = join(&self.members, next, elem) else {
                return false;
            };
            self.span = Group::span_of(&grown);
            self.members = grown;
            return true;
        }
        // Two members or more share the first's outer loop, and `iterations_disjoint` has
        // held for them: `join`'s checks of the others hold still, so only `next` is checked,
        // against the group's footprint (the check `iterations_disjoint` makes at depth 1).
        let outer = self.members[0].loops[0];
        let Some(new) = with_outer_loop(next, &outer, elem) else {
            return false;
        };
        if reduction_split(&new) == 0 {
            return false;
        }
        let (a, b) = dst_footprint(&new, 0);
        let span = (self.span.0.min(a), self.span.1.max(b));
        if outer.extent > 1 && span.1 - span.0 > i128::from(outer.dst_stride).abs() {
            return false;
        }
        debug_assert!({
            let mut grown = self.members.clone();
            grown.push(new.clone());
            iterations_disjoint(&grown, 1).is_ok()
        });
        self.members.push(new);
        self.span = span;
        true
    }
}

/// The group `group` grown by `next` (members possibly reshaped to share the outer loop), or
/// `None` when `next` cannot join. `elem`: the kernel's element size.
fn join(group: &[LoopStmt], next: &LoopStmt, elem: u64) -> Option<Vec<LoopStmt>> {
    let first = group.first()?;
    // The shared outer loop: the group's, or `next`'s when the group is one loopless statement.
    let outer = first
        .loops
        .first()
        .or_else(|| next.loops.first().filter(|_| group.len() == 1))?;
    let grown: Vec<LoopStmt> = group
        .iter()
        .chain([next])
        .map(|s| with_outer_loop(s, outer, elem))
        .collect::<Option<_>>()?;
    // A member's reduction loops are its body in code generation, never a shared loop.
    if grown.iter().any(|s| reduction_split(s) == 0) {
        return None;
    }
    iterations_disjoint(&grown, 1).ok()?;
    Some(grown)
}

/// `s` with `outer` as its outermost loop: itself when it already starts with a loop of that
/// extent and destination stride; its outermost loop split in two when that loop runs `k`
/// times as long with a `k` times smaller stride (one of `outer`'s iterations is `k` of its
/// own, as when `coalesce` merged two loops that another statement keeps apart); a fill or a
/// contiguous copy of exactly `extent * stride` bytes cut into `extent` runs along it, when
/// `stride` is a whole number of elements of `elem` bytes (a run is whole elements);
/// otherwise `None`.
fn with_outer_loop(s: &LoopStmt, outer: &Loop, elem: u64) -> Option<LoopStmt> {
    if let Some(l) = s.loops.first() {
        if l.extent == outer.extent && l.dst_stride == outer.dst_stride {
            return Some(s.clone());
        }
        return split_outer_loop(s, outer);
    }
    let stride = u64::try_from(outer.dst_stride)
        .ok()
        .filter(|&d| d > 0 && d.is_multiple_of(elem))?;
    if s.action.is_accumulate() || outer.extent.checked_mul(stride)? != s.bytes {
        return None;
    }
    Some(LoopStmt {
        bytes: stride,
        loops: vec![Loop {
            extent: outer.extent,
            src_stride: if s.action == LoopAction::Copy {
                outer.dst_stride
            } else {
                0
            },
            dst_stride: outer.dst_stride,
        }],
        ..s.clone()
    })
}

/// `s` with its outermost loop (extent `outer.extent * k`, destination stride `d`, `k >= 2`,
/// `outer.dst_stride == d * k`) split into a loop like `outer` around an inner one of `k`
/// iterations. The split re-indexes the same points in the same order, so it never changes
/// what the statement computes.
fn split_outer_loop(s: &LoopStmt, outer: &Loop) -> Option<LoopStmt> {
    let l = s.loops.first()?;
    if outer.extent < 2 || l.extent <= outer.extent || !l.extent.is_multiple_of(outer.extent) {
        return None;
    }
    let k = l.extent / outer.extent;
    let split = super::scaled(*l, outer.extent, k)?;
    if split.dst_stride != outer.dst_stride {
        return None;
    }
    let mut loops = Vec::with_capacity(s.loops.len() + 1);
    loops.push(split);
    loops.push(Loop { extent: k, ..*l });
    loops.extend_from_slice(&s.loops[1..]);
    Some(LoopStmt { loops, ..s.clone() })
}

/// Whether `a` and `b` both have a loop `d`, with the same extent and destination stride,
/// that is not one of their reduction loops (an accumulation's innermost loops of destination
/// stride 0, which code generation sums in registers as the body of the nest; one of extent
/// 1 passes every disjointness test, so it is refused here).
fn same_loop(a: &LoopStmt, b: &LoopStmt, d: usize) -> bool {
    match (a.loops.get(d), b.loops.get(d)) {
        (Some(x), Some(y)) => {
            (x.extent, x.dst_stride) == (y.extent, y.dst_stride)
                && d < reduction_split(a)
                && d < reduction_split(b)
        }
        _ => false,
    }
}

/// Whether all `members` have a loop `d` with the extent and destination stride of the first
/// member's.
fn shares_loop(members: &[LoopStmt], d: usize) -> bool {
    members.iter().all(|s| same_loop(&members[0], s, d))
}

/// The members of a band of `depth` loops that could share one more loop, when they do most
/// of its work: of the sets of members that share such a loop (the same extent and
/// destination stride) and stay disjoint, the one that moves the most bytes, if that is at
/// least [`DEEPER_RUN_WORK`] of the band's bytes, and not all of it, and two members or more.
/// A padded plane's rows are the case: the left edge, body and right edge of each row, 97% of
/// the bytes, written in one sweep over the rows instead of three; and a Col2Im's rows, whose
/// left and right edges come after the top row (see `Run` for what becomes of it and when the
/// others may move). The indices of the set's members, and the members.
fn deeper_run(members: &[LoopStmt], depth: usize) -> Option<(Vec<usize>, Vec<LoopStmt>)> {
    let work = |s: &LoopStmt| s.trip_count().saturating_mul(s.bytes);
    let total = members.iter().map(work).fold(0u64, u64::saturating_add);
    let mut best: Option<(u64, Vec<usize>, Vec<LoopStmt>)> = None;
    // `same_loop` is an equivalence on the members that have a loop `depth` outside their
    // reduction loops: each set is found once, from its first member.
    let mut found = vec![false; members.len()];
    for first in 0..members.len() {
        if found[first] {
            continue;
        }
        let run: Vec<usize> = (first..members.len())
            .filter(|&i| same_loop(&members[first], &members[i], depth))
            .collect();
        for &i in &run {
            found[i] = true;
        }
        if run.len() < 2 || run.len() == members.len() {
            continue;
        }
        let stmts: Vec<LoopStmt> = run.iter().map(|&i| members[i].clone()).collect();
        if iterations_disjoint(&stmts, depth + 1).is_err() {
            continue;
        }
        let w = run
            .iter()
            .map(|&i| work(&members[i]))
            .fold(0u64, u64::saturating_add);
        if best.as_ref().is_none_or(|(b, _, _)| w > *b) {
            best = Some((w, run, stmts));
        }
    }
    let (w, run, stmts) = best?;
    (w as f64 >= DEEPER_RUN_WORK * total as f64).then_some((run, stmts))
}

/// See [`deeper_run`].
const DEEPER_RUN_WORK: f64 = 0.9;

/// A run of a band's members that shares one more loop and does most of the work (a padded
/// plane's rows between its top and bottom rows; a Col2Im's rows, whose left and right edges
/// come after its top row), found by [`FuseNests::run_of`].
///
/// Where the others read the source (a reflect or edge Pad's top and bottom rows, a
/// Col2Im's), the run becomes a band nested in the band ([`FuseNests::push_nesting`]): each
/// row written whole, and the top and bottom rows in the same sweep over the planes, instead
/// of a second sweep that fetches a few lines per plane, far apart, which the prefetchers do
/// not follow, or (when the top and bottom rows are several, loops of their own) one sweep
/// per piece of the rows. Measured with `bench --op`, one thread, two interleaved rounds,
/// against the previous build, as kernel time / memcpy's: reflect Pad of 4x256x64x64 f32
/// 1.08-1.13 -> 0.86-0.87 (pads of 2: 1.05-1.06 -> 0.83); edge Pad of the same 1.11-1.14 ->
/// 0.86-0.89 (of 4x64x128x128, pads of 2: 1.02-1.05 -> 0.86-0.87); reflect Pads of planes of
/// 32x32 to 180x180 5-20% less time (76x76 1.06-1.12 -> 0.85-0.87); pads of 3 around
/// 8x3x256x256 1.24-1.26 -> 1.20-1.21; 1x64x512x512 the same. Where the others only write
/// (a constant Pad's top and bottom rows, one each), the run's band comes after a band of
/// the others, a second sweep over the planes that reads nothing: constant Pads of
/// 8x512x24x24 and 8x128x48x48 f32 took 5-9% more time nested (their many small planes),
/// 8x64x56x56 12% less, 8x64x112x112 and the suite's NHWC one the same.
///
/// Moving a member past a member of the run is legal when no byte is written by both (then
/// their order does not matter; the source is never written, and an accumulate reads only the
/// bytes it writes). Different iterations of the band touch disjoint bytes, so it is enough
/// that within one iteration their bytes lie apart.
struct Run {
    /// The indices of the run's members, in order.
    members: Vec<usize>,
    /// The indices of the band's other members, in order.
    others: Vec<usize>,
    /// The loops of the band the run is in.
    depth: usize,
    /// Whether the members outside the run have no loops inside the band but their
    /// reduction loops (a sum's terms, its body in code generation): a few instructions per
    /// iteration each, so that a band of them alone pays.
    light: bool,
}

impl Run {
    /// Whether the run becomes a band nested in the band of `members`: when the members
    /// outside it read the source (not [`Run::others_only_write`]), are light or none of the
    /// band's members sums (copies and fills only: a Pad's top rows, loops of their own when
    /// there are several; a stride-2 Col2Im's top rows, sums over loops of their own beside
    /// its rows, ran 2-4% slower nested), and those between the run's members may move before
    /// it.
    fn nests(&self, members: &[LoopStmt]) -> bool {
        !self.others_only_write(members)
            && (self.light || members.iter().all(|m| !m.action.is_accumulate()))
            && self.between_move_before(members)
    }

    /// Whether every member outside the run is a fill.
    fn others_only_write(&self, members: &[LoopStmt]) -> bool {
        self.others.iter().all(|&i| members[i].action.is_fill())
    }

    /// Whether `a` and `b` write bytes apart within one iteration of the band.
    fn apart(&self, a: &LoopStmt, b: &LoopStmt) -> bool {
        let (a, b) = (
            dst_footprint(a, self.depth - 1),
            dst_footprint(b, self.depth - 1),
        );
        a.1 <= b.0 || b.1 <= a.0
    }

    /// Whether the members outside the run that come after its first member may move before
    /// it (each apart from the run's members before it).
    fn others_move_before(&self, members: &[LoopStmt], upto: usize) -> bool {
        let first = self.members[0];
        self.others
            .iter()
            .filter(|&&i| first < i && i < upto)
            .all(|&i| {
                self.members
                    .iter()
                    .filter(|&&r| r < i)
                    .all(|&r| self.apart(&members[i], &members[r]))
            })
    }

    /// [`Run::others_move_before`] for all the members after the run's first.
    fn all_others_move_before(&self, members: &[LoopStmt]) -> bool {
        self.others_move_before(members, members.len())
    }

    /// [`Run::others_move_before`] for the members between the run's first and last.
    fn between_move_before(&self, members: &[LoopStmt]) -> bool {
        self.others_move_before(members, *self.members.last().unwrap_or(&0))
    }
}

/// How many loops a band of `members` shares, from `depth` on: as many as they all have,
/// while the band's iterations stay disjoint.
fn deepest(members: &[LoopStmt], mut depth: usize) -> usize {
    while shares_loop(members, depth) && iterations_disjoint(members, depth + 1).is_ok() {
        depth += 1;
    }
    depth
}

impl FuseNests {
    /// Appends a finished group to `out`: as a band when it has two or more members and fusing
    /// pays (deepened as far as the members allow, and where a run of them shares one more
    /// loop, with that run as a band nested in it or, when the other members only write, as
    /// a band of its own after theirs: see [`Run`]), else its statements as they were.
    fn close(&self, out: &mut LoopKernel, members: &[LoopStmt], originals: &[LoopStmt]) {
        if members.len() < 2 || !self.pays(members) {
            out.stmts.extend_from_slice(originals);
            return;
        }
        let depth = deepest(members, 1);
        if let Some(run) = self.run_of(members, depth) {
            if run.others_only_write(members) {
                if run.light && run.all_others_move_before(members) {
                    // The run's band after a band of the others.
                    let pick = |from: &[LoopStmt], which: &[usize]| -> Vec<LoopStmt> {
                        which.iter().map(|&i| from[i].clone()).collect()
                    };
                    self.close(
                        out,
                        &pick(members, &run.others),
                        &pick(originals, &run.others),
                    );
                    self.close(
                        out,
                        &pick(members, &run.members),
                        &pick(originals, &run.members),
                    );
                    return;
                }
            } else if run.nests(members) {
                self.push_nesting(out, members, depth, &run);
                return;
            }
        }
        out.bands.push(Band {
            first: out.stmts.len(),
            len: members.len(),
            depth,
        });
        out.stmts.extend_from_slice(members);
    }

    /// Appends `members`, a band of `depth` loops, with `run` as a band nested in it: the
    /// members before the run's last, other than the run's, then the run's band (itself
    /// with a band nested in it where its members allow), then the members after it.
    fn push_nesting(&self, out: &mut LoopKernel, members: &[LoopStmt], depth: usize, run: &Run) {
        out.bands.push(Band {
            first: out.stmts.len(),
            len: members.len(),
            depth,
        });
        let last = *run.members.last().unwrap_or(&0);
        out.stmts.extend(
            run.others
                .iter()
                .filter(|&&i| i < last)
                .map(|&i| members[i].clone()),
        );
        let inner: Vec<LoopStmt> = run.members.iter().map(|&i| members[i].clone()).collect();
        let inner_depth = deepest(&inner, depth + 1);
        match self.run_of(&inner, inner_depth) {
            Some(r) if r.nests(&inner) => self.push_nesting(out, &inner, inner_depth, &r),
            _ => {
                out.bands.push(Band {
                    first: out.stmts.len(),
                    len: inner.len(),
                    depth: inner_depth,
                });
                out.stmts.extend(inner);
            }
        }
        out.stmts.extend(
            run.others
                .iter()
                .filter(|&&i| i > last)
                .map(|&i| members[i].clone()),
        );
    }

    /// The run of `members` (a band of `depth` loops) that shares one more loop and does
    /// most of the work ([`deeper_run`]), when the run pays as a band of its own.
    fn run_of(&self, members: &[LoopStmt], depth: usize) -> Option<Run> {
        let (run, run_members) = deeper_run(members, depth)?;
        let others: Vec<usize> = (0..members.len()).filter(|i| !run.contains(i)).collect();
        let light = others
            .iter()
            .all(|&i| reduction_split(&members[i]) == depth);
        self.pays(&run_members).then_some(Run {
            members: run,
            others,
            depth,
            light,
        })
    }

    /// Whether a band of `members` over their outermost loop is worth it (see the module docs).
    fn pays(&self, members: &[LoopStmt]) -> bool {
        let extent = members[0].loops[0].extent.max(1);
        // Only members with loops inside the band are entered as nests; one without (a run
        // per band iteration) is a few instructions in the band's loop, cheaper than a loop
        // of its own, so it needs no minimum.
        // A sum's reduction loops are its body (unrolled terms), not a nest of its own.
        let nests: Vec<&LoopStmt> = members.iter().filter(|s| reduction_split(s) > 1).collect();
        let work: u64 = nests
            .iter()
            .map(|s| s.trip_count().saturating_mul(s.bytes))
            .fold(0, u64::saturating_add);
        let per_member = work / extent / nests.len().max(1) as u64;
        let per_member = if nests.is_empty() {
            u64::MAX
        } else {
            per_member
        };
        let (lo, hi) = members
            .iter()
            .map(|s| dst_footprint(s, 0))
            .fold((i128::MAX, i128::MIN), |(lo, hi), (a, b)| {
                (lo.min(a), hi.max(b))
            });
        let footprint = if members.len() >= MANY_MEMBERS {
            self.max_iteration_footprint
                .max(self.max_many_members_footprint)
        } else {
            self.max_iteration_footprint
        };
        per_member >= self.min_iteration_bytes && hi - lo <= i128::from(footprint)
    }
}
