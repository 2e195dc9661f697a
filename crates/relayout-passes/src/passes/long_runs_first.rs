//! `long-runs-first`: inside each fused band, moves the copies and fills with the longest runs
//! in front of those with shorter runs, where they commute, so that the destination lines of a
//! band iteration are first written by long runs in address order rather than by scattered
//! single elements.
//!
//! Why: a band iteration of Im2Col (one channel plane, 144 KiB of output that stays in L2 until
//! the next plane) writes each output row from up to three statements: a 248-byte copy, and a
//! 4-byte copy or zero for the element at either end. Each line is read from memory before its
//! first store (a read for ownership). When the 4-byte statements came first, they touched a
//! quarter of the lines one element at a time, 256 bytes apart across nine 16 KiB planes, and
//! each of those reads waited on memory; the copies that followed found those lines in cache
//! and read the rest in order, which the prefetchers follow. With the copies first, every line
//! is first touched in order and the 4-byte statements then find their lines in cache.
//! Measured with `relayout bench --ir` on im2col_conv3x3 (bench/suite_beyond.json, one thread,
//! three interleaved sittings): 4.03-4.47 ms (0.96-1.0x memcpy's time) as lowered, 2.75-3.08
//! ms (0.63-0.74x) with the members sorted by run length. The reflect Pad's band, whose
//! iterations are one row (a line or two, which the first store brings in anyway), did not
//! change (1.77-2.10 ms either way); nor did the constant Pad with its statements, which are
//! outside bands and each sweep the whole output, sorted the same way (0.48-0.73 ms either
//! way): statements outside bands stay as they are.
//!
//! What it does: for each band, the members are taken in order (those between two bands
//! nested in it apart from the others, and the members of each nested band among
//! themselves) and each is moved in front of
//! the members before it whose runs are shorter, as far as it commutes with every member it
//! passes (a stable sort by run length, descending, among what may move), and at most
//! [`WINDOW`] places. A member moves past
//! another only when both are copies or fills (accumulations stay in place: their order is
//! their meaning where they overlap, and Col2Im's cells are ordered by `output-stationary`) and
//! when `dependence::members_commute` proves that no destination byte is written by both
//! within one iteration of the band's shared loops (the source is never written). So every
//! destination byte receives the same writes in the same order, and the result is bit-exact.
//!
//! What it does not do: reorder statements outside bands, change loops or bands, or move
//! anything across an accumulation. Run it after `fuse-nests` and `reroll`: it reads the final
//! bands.

use super::reorder_members;
use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::dependence::members_commute;
use relayout_ir::{LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct LongRunsFirst;

impl LoopPass for LongRunsFirst {
    const NAME: &'static str = "long-runs-first";
    const KEEPS_BANDS: bool = true;

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        Ok(reorder_members(k, 2, sort_members))
    }
}

impl_pass!(loops LongRunsFirst);

/// A member moves at most this many places forward. Each place passed costs a
/// `members_commute` proof, so a band of `n` members costs up to `n * WINDOW` of them instead of
/// `n * n / 2`: the band of a padded 31x31 Im2Col of 1x8x56x56 f32 has some 900 members, whose
/// sort took 28 M of the passes' 83 M instructions (callgrind), and 17.5 M with the window
/// (the kernel's time did not change: 14.3-15.2 ms either way). Bands of up to `WINDOW`
/// members (every band of the benchmark suites' kernels) sort as without it.
const WINDOW: usize = 64;

/// The members of one band sharing `depth` loops, each moved in front of the shorter runs
/// before it as far as it commutes with them (see the module documentation).
fn sort_members(members: &[LoopStmt], depth: usize) -> Vec<LoopStmt> {
    let movable = |s: &LoopStmt| !s.action.is_accumulate();
    let mut out: Vec<LoopStmt> = Vec::with_capacity(members.len());
    for m in members {
        let mut at = out.len();
        let stop = at.saturating_sub(WINDOW);
        while at > stop {
            let before = &out[at - 1];
            let passes = movable(m)
                && movable(before)
                && before.bytes < m.bytes
                && members_commute(before, m, depth);
            if !passes {
                break;
            }
            at -= 1;
        }
        out.insert(at, m.clone());
    }
    out
}
