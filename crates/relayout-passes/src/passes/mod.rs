//! One pass per file, each named after its pipeline name.

mod canonicalize;
mod coalesce;
mod drop_unit_dims;
mod fuse_nests;
mod group_alike;
mod interchange;
pub(crate) mod linearize;
mod long_runs_first;
mod output_stationary;
mod pair_phases;
mod peel_dims;
mod reroll;
mod split_dims;
mod split_guards;
mod tile_transposes;

pub use canonicalize::Canonicalize;
pub use coalesce::Coalesce;
pub use drop_unit_dims::DropUnitDims;
pub use fuse_nests::{FuseNests, MANY_MEMBERS, MAX_ITERATION_FOOTPRINT};
pub use group_alike::GroupAlike;
pub use interchange::Interchange;
pub use linearize::Linearize;
pub use long_runs_first::LongRunsFirst;
pub use output_stationary::OutputStationary;
pub use pair_phases::PairPhases;
pub use peel_dims::PeelDims;
pub use reroll::Reroll;
pub use split_dims::SplitDims;
pub use split_guards::SplitGuards;
pub use tile_transposes::TileTransposes;

use relayout_ir::{Band, Loop, LoopKernel, LoopStmt, Unit};

/// Bytes of a cache line on the machines the passes' measurements were made on (x86-64).
pub(crate) const LINE: u64 = 64;

/// `l` with `extent` iterations, each stepping `by` of its old iterations: the outer half of
/// a loop split in place (`tile-transposes`, `fuse-nests`), `None` if a stride overflows.
pub(crate) fn scaled(l: Loop, extent: u64, by: u64) -> Option<Loop> {
    Some(Loop {
        extent,
        src_stride: l.src_stride.checked_mul(i64::try_from(by).ok()?)?,
        dst_stride: l.dst_stride.checked_mul(i64::try_from(by).ok()?)?,
    })
}

/// `k` with the members of each of its bands reordered by `reorder`, which is given each run
/// of at least `min` consecutive members that are in no band nested in it (those before,
/// between and after its nested bands) with the band's shared loops, and returns them in
/// their new order; inside every nested band the same. The bands stay as they are: the
/// reordering of `long-runs-first` and `group-alike`, each of which only moves a member past
/// others it commutes with.
pub(crate) fn reorder_members(
    k: &LoopKernel,
    min: usize,
    reorder: fn(&[LoopStmt], usize) -> Vec<LoopStmt>,
) -> LoopKernel {
    let mut stmts = k.stmts.clone();
    let mut run = |from: usize, to: usize, depth: usize| {
        if to - from >= min {
            stmts[from..to].clone_from_slice(&reorder(&k.stmts[from..to], depth));
        }
    };
    for unit in k.units() {
        if let Unit::Band(band) = unit {
            member_runs(k, band, &mut run);
        }
    }
    k.with_stmts(stmts, k.bands.clone())
}

/// Calls `f(from, to, depth)` for each run `from..to` of consecutive members of `band` that
/// are in no band nested in it, `depth` being the band's shared loops, and the same inside
/// every band nested in it, in order.
fn member_runs(k: &LoopKernel, band: Band, f: &mut dyn FnMut(usize, usize, usize)) {
    let mut from = band.first;
    for unit in k.units_in(band) {
        if let Unit::Band(nested) = unit {
            f(from, nested.first, band.depth);
            member_runs(k, nested, f);
            from = nested.first + nested.len;
        }
    }
    f(from, band.first + band.len, band.depth);
}
