//! `coalesce`: merges loops that are contiguous for every operand (HPTT and XLA's
//! TransposePlan do this first; it is where most of the speed of a relayout comes from).
//!
//! What it does, per statement, until nothing changes:
//! - removes loops of extent 1 (they move nothing), and statements with a loop of extent 0;
//! - merges an outer loop with the loop just inside it when, for every operand read or
//!   written, `outer.stride == inner.stride * inner.extent`. Reason: the offsets
//!   `o * inner.stride * inner.extent + i * inner.stride` are `(o * inner.extent + i) *
//!   inner.stride`, the same offsets in the same order as one loop of the product extent;
//! - merges the innermost loop into the run when its stride is `bytes` for every operand:
//!   `extent` runs of `bytes` bytes at stride `bytes` are one run of `extent * bytes` bytes;
//! - in a copy or a fill, removes a loop whose strides are all 0: it rewrites the same run
//!   with the same bytes, and the last write is unchanged;
//! - in an accumulate, sets its innermost reduction loops (destination stride 0, see
//!   `output-stationary`) aside and coalesces the loops outside them, which keeps every
//!   element's additions in their order: merging the loop around them into the run only
//!   moves the additions into other elements, which are disjoint, in between.
//!
//! What it does not do: reorder loops (`interchange` does), merge loops that are contiguous
//! for one operand only, or merge anything whose merged extent or run would overflow.

use crate::pass::{impl_pass, LoopPass};
use crate::passes::output_stationary::reduction_split;
use crate::PassError;
use relayout_ir::{Loop, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coalesce;

impl LoopPass for Coalesce {
    const NAME: &'static str = "coalesce";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        Ok(k.with_stmts(
            k.stmts.iter().filter_map(coalesce_stmt).collect(),
            k.bands.clone(),
        ))
    }
}

impl_pass!(loops Coalesce);

/// The coalesced statement, or `None` when it moves nothing.
pub(crate) fn coalesce_stmt(s: &LoopStmt) -> Option<LoopStmt> {
    if s.loops.iter().any(|l| l.extent == 0) {
        return None;
    }
    let reads = !s.action.is_fill();
    let original = s;
    let mut s = s.clone();
    let reductions = s.loops.split_off(reduction_split(&s));
    let reduction_count = reductions.len();
    s.loops.retain(|l| l.extent != 1);
    if !s.action.is_accumulate() {
        s.loops
            .retain(|l| l.dst_stride != 0 || (reads && l.src_stride != 0));
    }
    // A window is a part of the run: the run stays as it is.
    while merge_adjacent(&mut s, reads) || (s.window.is_none() && merge_into_run(&mut s, reads)) {}
    s.loops.extend(reductions);
    if s.loops.len() - reduction_split(&s) != reduction_count {
        // A loop of extent 1 that was removed separated outer loops of destination stride 0
        // from the reduction loops, which they would now join: more terms per sum than the
        // statement had (and than the verifier lets code generation unroll). Found by the
        // fuzz target `loop_passes_keep_random_loop_kernels`.
        return Some(original.clone());
    }
    Some(s)
}

/// Merges the first mergeable pair of adjacent loops; false when there is none.
fn merge_adjacent(s: &mut LoopStmt, reads: bool) -> bool {
    for i in 0..s.loops.len().saturating_sub(1) {
        let (outer, inner) = (s.loops[i], s.loops[i + 1]);
        let inner_extent = i64::try_from(inner.extent).ok();
        let continues = |o: i64, n: i64| {
            inner_extent
                .and_then(|e| n.checked_mul(e))
                .is_some_and(|v| v == o)
        };
        let contiguous = continues(outer.dst_stride, inner.dst_stride)
            && (!reads || continues(outer.src_stride, inner.src_stride));
        let Some(extent) = outer.extent.checked_mul(inner.extent) else {
            continue;
        };
        if contiguous && i64::try_from(extent).is_ok() {
            s.loops[i] = Loop { extent, ..inner };
            s.loops.remove(i + 1);
            return true;
        }
    }
    false
}

/// Merges the innermost loop into the run; false when it cannot be.
fn merge_into_run(s: &mut LoopStmt, reads: bool) -> bool {
    let Some(last) = s.loops.last().copied() else {
        return false;
    };
    let bytes = i64::try_from(s.bytes).ok();
    let unit = |stride: i64| Some(stride) == bytes;
    if !unit(last.dst_stride) || (reads && !unit(last.src_stride)) {
        return false;
    }
    let Some(run) = s.bytes.checked_mul(last.extent) else {
        return false;
    };
    if i64::try_from(run).is_err() {
        return false;
    }
    s.bytes = run;
    s.loops.pop();
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::{interpret_loops, parse_loop_kernel, verify_loop_kernel};

    #[test]
    fn a_unit_loop_before_the_reductions_keeps_them_apart() {
        // `i2` (one value) separates `i1` (destination stride 0) from the reduction loops
        // `i3` and `i4`: removed, `i1` would join them, 150 terms per sum instead of 30.
        let text = "loops @tight(%src: tensor<276xf32>) -> (%dst: tensor<12xf32>) {
  accumulate 4 bytes %dst[8 + 12 * i0 - 16 * i2] += %src[0 + 276 * i0 + 48 * i1 - 36 * i2 + 16 * i3] within bytes -12 + 4 * i4 to 0 + 4 * i4
      for i0 in 0 to 4, i1 in 0 to 5, i2 in 0 to 1, i3 in 0 to 6, i4 in 0 to 5
}";
        let k = parse_loop_kernel(text).unwrap();
        verify_loop_kernel(&k).unwrap();
        let out = Coalesce.run_loops(&k).unwrap();
        verify_loop_kernel(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(out.stmts[0].reduction_loops(), 2, "{out}");
        let src: Vec<u8> = (0..276 * 4).map(|i| (i * 7 + 3) as u8).collect();
        let (mut want, mut got) = (vec![0u8; 48], vec![0u8; 48]);
        interpret_loops(&k, &src, &mut want).unwrap();
        interpret_loops(&out, &src, &mut got).unwrap();
        assert_eq!(want, got);
    }
}
