//! `reroll`: statements that are one statement moved by a constant step become that
//! statement with one more loop (the inverse of unrolling it; LLVM's loop reroll).
//!
//! Splitting guards cuts a padded or bordered box into pieces, and the pieces on opposite
//! sides are often the same nest moved: a constant Pad's top and bottom rows, its left and
//! right columns, a Col2Im's edges and four corners. Code generation would compile each piece
//! as a nest of its own; Cranelift's time grows with the code, so pieces that differ only in
//! their offsets cost compile time for nothing. One nest with a loop over the pieces runs the
//! same points.
//!
//! What it does: it walks the kernel's units (a statement alone, or a band of fused
//! statements). Inside a band it looks at the members between the bands nested in it (and
//! inside those in turn), outside at the statements between bands. From each statement it
//! collects a run: later statements (up to [`WINDOW`] on) with the same action, run length
//! and loops (extents and strides), each one's destination and source offsets a fixed step
//! from the previous one's, the destination step not zero. The
//! run becomes its first statement with a new loop (extent the run's length, strides the
//! steps) placed right inside the loops its band shares (outermost for a statement alone), in
//! the first statement's place. It repeats until nothing merges, so pieces on a grid (a
//! Col2Im's corners: two steps) become one statement with two new loops.
//!
//! Why the result is the same: the new loop sits outside all of the statement's own loops,
//! so the merged statement runs the first piece's points, then the second's, and so on, in
//! the order the pieces ran, inside each iteration of a band's shared loops. What changes is
//! only where the later pieces run relative to the statements that were between them: each
//! later piece moves in front of those, which is allowed only when
//! `dependence::members_commute` proves that no destination byte is written by both within
//! one iteration of the shared loops (the source is never written); float accumulations onto
//! the same bytes therefore never change order. A destination step of zero would make the new
//! loop a reduction loop of an `accumulate ... = 0 + ...`, whose meaning depends on which
//! loops reduce, so such runs are left alone; so is a run whose new loop would overflow a
//! stride. Outside bands, pieces merge only when the merged statement's new outer loop writes
//! disjoint bytes per iteration wherever the piece's own outer loop did, so that threads can
//! still cut it; and pieces whose points write disjoint bytes merge only into a statement
//! whose points do too (code generation's blocks reorder only such points). A band whose members all merge into one is dropped: the statement keeps the
//! band's loops and runs alone, which is the same order.
//!
//! Run it last: it reads the final loops and bands, and no later pass needs to see pieces
//! apart.

use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::dependence::{
    iterations_disjoint, members_commute, points_disjoint, stmts_disjoint,
};
use relayout_ir::{Band, Loop, LoopKernel, LoopStmt, Unit};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reroll;

/// How many statements after a run's first its later statements are looked for (bounds the
/// quadratic search; a Col2Im's border pieces lie a few statements apart).
const WINDOW: usize = 32;

impl LoopPass for Reroll {
    const NAME: &'static str = "reroll";
    const KEEPS_BANDS: bool = true;

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        let mut kernel = k.with_stmts(k.stmts.clone(), k.bands.clone());
        // Each round merges at least two statements into one, so this ends.
        while let Some(next) = reroll_once(&kernel) {
            kernel = next;
        }
        Ok(kernel)
    }
}

impl_pass!(loops Reroll);

/// The kernel with every run of translated statements merged once, or `None` if there is
/// none.
fn reroll_once(k: &LoopKernel) -> Option<LoopKernel> {
    let mut stmts = Vec::with_capacity(k.stmts.len());
    let mut bands = Vec::with_capacity(k.bands.len());
    let merged_any = reroll_units(k, &k.units(), 0, &mut stmts, &mut bands);
    merged_any.then(|| k.with_stmts(stmts, bands))
}

/// Appends the statements of `units` (the kernel's, or those inside a band of `depth` loops)
/// to `stmts`, each run of translates among the statements between bands merged with its
/// new loop at `depth`, and each band rerolled the same way ([`reroll_band`]). Whether any
/// merged.
fn reroll_units(
    k: &LoopKernel,
    units: &[Unit],
    depth: usize,
    stmts: &mut Vec<LoopStmt>,
    bands: &mut Vec<Band>,
) -> bool {
    let mut merged_any = false;
    // Statements outside bands, collected until the next band (or the end) closes the group.
    let mut group: Vec<&LoopStmt> = Vec::new();
    let flush = |group: &mut Vec<&LoopStmt>, stmts: &mut Vec<LoopStmt>| {
        let merged = merge_runs(group, depth);
        let any = merged.len() < group.len();
        stmts.extend(merged);
        group.clear();
        any
    };
    for &unit in units {
        match unit {
            Unit::Stmt(i) => group.push(&k.stmts[i]),
            Unit::Band(band) => {
                merged_any |= flush(&mut group, stmts);
                merged_any |= reroll_band(k, band, stmts, bands);
            }
        }
    }
    merged_any |= flush(&mut group, stmts);
    merged_any
}

/// Appends `band`'s statements to `stmts`, each run of translates among its members merged
/// (between the bands nested in it, which are rerolled the same way), and the band, when it
/// keeps two members or more, to `bands` before those nested in it. Whether any merged.
fn reroll_band(
    k: &LoopKernel,
    band: Band,
    stmts: &mut Vec<LoopStmt>,
    bands: &mut Vec<Band>,
) -> bool {
    let first = stmts.len();
    let at = bands.len();
    bands.push(band);
    let merged_any = reroll_units(k, &k.units_in(band), band.depth, stmts, bands);
    // Runs merge only between nested bands, so a band keeps more members than any band
    // nested in it, each of which keeps at least one. With fewer than two it is no band.
    let len = stmts.len() - first;
    if len >= 2 {
        bands[at] = Band {
            first,
            len,
            depth: band.depth,
        };
    } else {
        bands.remove(at);
    }
    merged_any
}

/// `group` (consecutive statements) with each run of translates merged into one statement
/// whose new loop sits at `depth`, in the place of the run's first statement. A run's later
/// statements may come from up to [`WINDOW`] statements further on, when each commutes with
/// every statement it moves in front of (`members_commute`: no byte written by both within
/// one iteration of the `depth` shared loops).
fn merge_runs(group: &[&LoopStmt], depth: usize) -> Vec<LoopStmt> {
    let mut taken = vec![false; group.len()];
    let mut out = Vec::with_capacity(group.len());
    for i in 0..group.len() {
        if taken[i] {
            continue;
        }
        taken[i] = true;
        let mut run = vec![i];
        let mut step = None;
        let end = group.len().min(i + 1 + WINDOW);
        for j in i + 1..end {
            if taken[j] {
                continue;
            }
            let last = group[run[run.len() - 1]];
            let Some(s) = translate(last, group[j], depth) else {
                continue;
            };
            if step.is_some_and(|step| step != s) {
                continue;
            }
            // `group[j]` moves in front of every statement between the first and it that
            // is not in the run.
            let free = (i + 1..j)
                .filter(|&m| !taken[m])
                .all(|m| members_commute(group[m], group[j], depth));
            if free {
                taken[j] = true;
                run.push(j);
                step = Some(s);
            }
        }
        let merged = step
            .and_then(|s| with_loop(group[i], depth, run.len(), s))
            .filter(|m| depth > 0 || splits_as_well(group[i], m))
            .filter(|_| pieces_apart(group[i], run[1..].iter().map(|&k| group[k])));
        match merged {
            Some(merged) => out.push(merged),
            None => {
                // Nothing merges: the others stay where they were.
                for &m in &run[1..] {
                    taken[m] = false;
                }
                out.push(group[i].clone());
            }
        }
    }
    out
}

/// The step `(dst, src)` from `a` to `b` when `b` is `a` moved by it: the same action, run,
/// loops and window, a destination step other than zero, and at least `depth` loops (a band
/// member's shared ones) to put the new loop inside.
fn translate(a: &LoopStmt, b: &LoopStmt, depth: usize) -> Option<(i64, i64)> {
    if a.action != b.action
        || a.bytes != b.bytes
        || a.loops != b.loops
        || a.window != b.window
        || a.loops.len() < depth
    {
        return None;
    }
    let dst = b.dst_offset.checked_sub(a.dst_offset)?;
    let src = b.src_offset.checked_sub(a.src_offset)?;
    (dst != 0).then_some((dst, src))
}

/// Whether `merged` (`piece` with a new outermost loop) can still be cut along its outer loop
/// for threads wherever `piece` could: the JIT cuts a statement alone only along an outer
/// loop whose iterations write disjoint bytes, and pieces that overlap one another would
/// otherwise turn a statement that ran on every thread into one that runs on one.
fn splits_as_well(piece: &LoopStmt, merged: &LoopStmt) -> bool {
    iterations_disjoint(std::slice::from_ref(merged), 1).is_ok()
        || iterations_disjoint(std::slice::from_ref(piece), 1).is_err()
}

/// Whether merging `first` with `others` (its translates) keeps each destination byte
/// written at most once wherever `first` did: each of the others writes bytes apart from
/// `first`'s (pieces `a` and `b` lie as `first` and the piece `b - a` steps on). Code
/// generation reorders the points of a copy (its shuffle and register blocks) only when they
/// write disjoint bytes, so pieces that overlap one another stay apart: a transpose's last
/// register block, which `tile-transposes` lays over the one before it, merged with the
/// blocks would leave the statement to scalar moves.
fn pieces_apart<'a>(first: &LoopStmt, mut others: impl Iterator<Item = &'a LoopStmt>) -> bool {
    others.all(|other| stmts_disjoint(first, other)) || !points_disjoint(first, 0)
}

/// `s` with a loop of `extent` iterations stepping `(dst, src)` inserted at `depth`, or
/// `None` if a stride overflows.
fn with_loop(
    s: &LoopStmt,
    depth: usize,
    extent: usize,
    (dst, src): (i64, i64),
) -> Option<LoopStmt> {
    let last = i64::try_from(extent - 1).ok()?;
    // The farthest piece must be addressable, as it was before the merge.
    dst.checked_mul(last)?;
    src.checked_mul(last)?;
    let mut loops = s.loops.clone();
    loops.insert(
        depth,
        Loop {
            extent: u64::try_from(extent).ok()?,
            src_stride: src,
            dst_stride: dst,
        },
    );
    Some(LoopStmt { loops, ..s.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::parse_loop_kernel;

    fn reroll(text: &str) -> String {
        let k = parse_loop_kernel(text).unwrap();
        Reroll.run_loops(&k).unwrap().to_string()
    }

    #[test]
    fn overlapping_blocks_stay_apart() {
        // Two register blocks of a transpose, the second laid over the first's last two
        // columns (as `tile-transposes` ends a lane loop of 6 = 4 + 2): each writes disjoint
        // bytes, merged they would not, and codegen's blocks need them to.
        let text = "loops @k(%src: tensor<4x6xf32>) -> (%dst: tensor<6x4xf32>) {
  copy 4 bytes %dst[0 + 4 * i0 + 16 * i1] = %src[0 + 24 * i0 + 4 * i1]
      for i0 in 0 to 4, i1 in 0 to 4
  copy 4 bytes %dst[32 + 4 * i0 + 16 * i1] = %src[8 + 24 * i0 + 4 * i1]
      for i0 in 0 to 4, i1 in 0 to 4
}";
        let out = reroll(text);
        assert_eq!(out.matches("copy").count(), 2, "{out}");
        // Apart by a whole block, the same two merge.
        let apart = text
            .replace("%dst[32 +", "%dst[64 +")
            .replace("%src[8 +", "%src[16 +");
        let apart = apart.replace("tensor<4x6xf32>", "tensor<4x8xf32>");
        let apart = apart.replace("tensor<6x4xf32>", "tensor<8x4xf32>");
        let out = reroll(&apart);
        assert_eq!(out.matches("copy").count(), 1, "{out}");
    }

    #[test]
    fn statements_on_a_grid_become_one_with_two_loops() {
        let out = reroll(
            "loops @k(%src: tensor<16x16xf32>) -> (%dst: tensor<16x16xf32>) {
  copy 4 bytes %dst[0] = %src[0]
  copy 4 bytes %dst[60] = %src[4]
  copy 4 bytes %dst[960] = %src[8]
  copy 4 bytes %dst[1020] = %src[12]
}",
        );
        assert!(
            out.contains(
                "copy 4 bytes %dst[0 + 960 * i0 + 60 * i1] = %src[0 + 8 * i0 + 4 * i1]\n      for i0 in 0 to 2, i1 in 0 to 2"
            ),
            "{out}"
        );
        assert_eq!(out.matches("copy").count(), 1, "{out}");
    }
}
