//! `group-alike`: inside each fused band, moves each member next to the last member before it
//! that is the same statement but for its offsets and the extent of its first own loop
//! ([`LoopStmt::alike`]), where it commutes with every member it passes, so that code
//! generation runs each group of alike members through one body (given each member's
//! addresses and count in turn) instead of emitting one copy of the body per member.
//!
//! Why: compile time is Cranelift's, about 0.45 us per machine instruction on the reference
//! machine. A 3-D Col2Im of a 3x3x3 kernel (col2im_3d, bench/suite.json) sums, for each of
//! the three kernel depths, the interior rows of a volume (9 terms a row) and its top and
//! bottom rows (6 terms): six members, three of each kind, which `output-stationary` leaves
//! in kernel-depth order (interior, edge, interior, edge, ...). The interior rows of the
//! three depths are alike (the first and last depth miss one plane of the volume, so only the
//! count of planes differs), and so are the edge rows; grouped, the kernel's function holds
//! two bodies of sums instead of six.
//!
//! What it does: for each band, the members are taken in order (those between two bands
//! nested in it apart from the others, and the members of each nested band among
//! themselves); a member with an alike member before it, at most [`WINDOW`] places back,
//! moves to just after the last such member when `dependence::members_commute` proves that no
//! destination byte is written both by it and by any member it passes, within one iteration
//! of the band's shared loops (the source is never written). Alike members keep their order
//! among themselves, nothing crosses a nested band, and every destination byte receives the
//! same writes in the same order: the result is bit-exact, accumulations included.
//!
//! What it does not do: change loops or bands, reorder statements outside bands, or decide
//! whether a group shares a body (code generation's choice, by the work per member). Run it
//! last: `long-runs-first` would pull a group apart again.

use super::reorder_members;
use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::dependence::members_commute;
use relayout_ir::{LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupAlike;

impl LoopPass for GroupAlike {
    const NAME: &'static str = "group-alike";
    const KEEPS_BANDS: bool = true;

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        // Two members are as grouped as they can be.
        Ok(reorder_members(k, 3, group_members))
    }
}

impl_pass!(loops GroupAlike);

/// A member looks this many places back for an alike one, and passes at most as many. Each
/// place costs an `alike` comparison and each member passed a `members_commute` proof, so a
/// band of `n` members costs `O(n * WINDOW)` of them (bands of hundreds of members: padded
/// Im2Col of large kernels).
const WINDOW: usize = 64;

/// The members of one band sharing `depth` loops, each moved to just after the last alike
/// member before it where it commutes with the members between (see the module docs).
fn group_members(members: &[LoopStmt], depth: usize) -> Vec<LoopStmt> {
    let mut out: Vec<LoopStmt> = Vec::with_capacity(members.len());
    for m in members {
        let back = out.len().saturating_sub(WINDOW);
        let last_alike = (back..out.len()).rev().find(|&i| out[i].alike(m, depth));
        let at = match last_alike {
            Some(i) if out[i + 1..].iter().all(|p| members_commute(p, m, depth)) => i + 1,
            _ => out.len(),
        };
        out.insert(at, m.clone());
    }
    out
}
