//! `pair-phases`: merges two sums from +0.0 that write every other element of the same rows,
//! one the even and one the odd elements (the column phases of a stride-2 Col2Im), into one
//! sum with an extra loop of two iterations that steps by one element, so that code
//! generation can sum each phase as whole source vectors and store the two interleaved as
//! whole destination vectors (`relayout-codegen`'s `phases.rs`), instead of one element at a
//! time.
//!
//! What it does: for each `accumulate N bytes ... = 0 + ...` (`LoopAction::Sum`) whose run
//! is one element and whose innermost loop outside the reduction loops steps the source by
//! one element and the destination by two, it looks for a later sum with the same loops
//! (extents and strides) whose destination starts one element before or after. The two
//! become one statement at the place of the first: the loops outside the reduction loops,
//! then the new loop (extent 2, destination stride one element, source stride the
//! difference of the two source offsets), then the reduction loops, from the offsets of the
//! one that starts lower in the destination. Each element gets the same terms in the same
//! order, from +0.0, so the result is bit-exact.
//!
//! Legality, checked with `relayout_ir::dependence` rather than assumed: the merged
//! statement's points write disjoint bytes (so the two halves may interleave), and the later
//! statement writes no byte that a statement it moves in front of writes
//! (`stmts_disjoint`); the source is never written, so only the destination matters.
//!
//! What it does not do: pair anything but sums from +0.0 of one element per run, reorder
//! loops, or look more than [`WINDOW`] statements ahead. Run it after the loop passes that
//! reorder or merge loops (`coalesce` would see nothing to merge in the new loop; `interchange`
//! might move it), right before `fuse-nests`.

use crate::pass::{impl_pass, LoopPass};
use crate::passes::output_stationary::reduction_split;
use crate::PassError;
use relayout_ir::dependence::{points_disjoint, stmts_disjoint};
use relayout_ir::{Loop, LoopAction, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct PairPhases;

/// How many statements after a sum its partner is looked for (`output-stationary` emits the
/// phases of a Col2Im's interior a few statements apart; this bounds the quadratic search).
const WINDOW: usize = 64;

impl LoopPass for PairPhases {
    const NAME: &'static str = "pair-phases";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        let size = k.dtype().size();
        let mut stmts: Vec<Option<LoopStmt>> = k.stmts.iter().cloned().map(Some).collect();
        for i in 0..stmts.len() {
            let Some(a) = stmts[i].clone() else { continue };
            if !candidate(&a, size) {
                continue;
            }
            let end = stmts.len().min(i + 1 + WINDOW);
            for j in i + 1..end {
                let Some(b) = &stmts[j] else { continue };
                let Some(merged) = merge(&a, b) else { continue };
                // `b` moves in front of every statement between the two.
                let free = stmts[i + 1..j]
                    .iter()
                    .flatten()
                    .all(|s| stmts_disjoint(s, b));
                if free {
                    stmts[i] = Some(merged);
                    stmts[j] = None;
                    break;
                }
            }
        }
        Ok(k.with_stmts(stmts.into_iter().flatten().collect(), Vec::new()))
    }
}

impl_pass!(loops PairPhases);

/// Whether `s` is a sum from +0.0 of one element per run whose innermost loop outside the
/// reduction loops reads one element further and writes two elements further per iteration.
fn candidate(s: &LoopStmt, size: u64) -> bool {
    let split = reduction_split(s);
    let (Ok(size), true) = (i64::try_from(size), s.bytes == size) else {
        return false;
    };
    s.action == LoopAction::Sum
        && s.window.is_none()
        && split >= 1
        && s.loops[split - 1].src_stride == size
        && s.loops[split - 1].dst_stride == 2 * size
}

/// `a` and `b` as one statement (see the module documentation), when `b` is `a`'s partner
/// and the merged statement's points write disjoint bytes.
fn merge(a: &LoopStmt, b: &LoopStmt) -> Option<LoopStmt> {
    if b.action != a.action || b.bytes != a.bytes || b.loops != a.loops {
        return None;
    }
    let size = i64::try_from(a.bytes).ok()?;
    let (lo, hi) = match b.dst_offset.checked_sub(a.dst_offset)? {
        d if d == size => (a, b),
        d if d == -size => (b, a),
        _ => return None,
    };
    let split = reduction_split(a);
    let mut loops = lo.loops.clone();
    loops.insert(
        split,
        Loop {
            extent: 2,
            src_stride: hi.src_offset.checked_sub(lo.src_offset)?,
            dst_stride: size,
        },
    );
    let merged = LoopStmt {
        loops,
        ..lo.clone()
    };
    let outer = LoopStmt {
        loops: merged.loops[..=split].to_vec(),
        ..merged.clone()
    };
    points_disjoint(&outer, 0).then_some(merged)
}
