//! `tile-transposes`: strip-mines the source-contiguous loop of a true transpose of small
//! elements into blocks of a vector's width, so that codegen's shuffle planner (which needs a
//! short *factor* loop of 2 to 4 iterations beside the destination-contiguous lane loop) can
//! move 4x4 blocks of f32 (2x2 of f64) through registers: four 16-byte loads, a transpose
//! in registers, four 16-byte stores, instead of sixteen scalar moves.
//!
//! What it does: for a copy of runs of `b` bytes with `16 / b` in 2..=4, whose innermost loop
//! is contiguous for the destination (stride `b`), it finds another loop contiguous for the
//! source (stride `b`) whose extent is a multiple of `f = 16 / b` and larger than it, and
//! splits it into an outer loop of `extent / f` iterations and an inner one of `f`, right
//! after it. Splitting a loop in place re-indexes the same points in the same order, so it is
//! always legal; the reordering happens in codegen, which accepts it only for copies whose
//! destination runs are pairwise disjoint (and so does this pass).
//!
//! Run it after the last `coalesce`, which would merge the two halves back. It does not tile
//! for the caches: the blocks of the outer loop reuse the source lines of their neighbours
//! from L2, which is what bounds the transposes it helps.

use crate::pass::{impl_pass, LoopPass};
use crate::PassError;
use relayout_ir::{Loop, LoopAction, LoopKernel, LoopStmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct TileTransposes;

impl LoopPass for TileTransposes {
    const NAME: &'static str = "tile-transposes";

    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError> {
        Ok(LoopKernel {
            stmts: k.stmts.iter().map(tile_stmt).collect(),
            ..k.clone()
        })
    }
}

impl_pass!(loops TileTransposes);

/// Bytes of the vectors the shuffle blocks move.
const VECTOR: u64 = 16;

fn tile_stmt(s: &LoopStmt) -> LoopStmt {
    let b = s.bytes;
    if s.action != LoopAction::Copy || b == 0 || !VECTOR.is_multiple_of(b) || s.loops.len() < 2 {
        return s.clone();
    }
    let f = VECTOR / b;
    let run = b as i64;
    if !(2..=4).contains(&f)
        || s.loops.last().is_none_or(|l| l.dst_stride != run)
        || !relayout_ir::dependence::points_disjoint(s, 0)
    {
        return s.clone();
    }
    let last = s.loops.len() - 1;
    let Some(j) = s.loops[..last]
        .iter()
        .position(|l| l.src_stride == run && l.extent > f && l.extent % f == 0)
    else {
        return s.clone();
    };
    let l = s.loops[j];
    let x = s.loops[last];
    let inner = Loop { extent: f, ..l };
    // A large plane right inside (the source loop next to the lane loop): cache blocks of
    // CACHE_BLOCK x CACHE_BLOCK elements, so that a block's source and destination lines (and
    // pages) stay in L1 while it is transposed.
    let b = CACHE_BLOCK;
    let blocked = j + 1 == last
        && l.extent > b
        && l.extent.is_multiple_of(b)
        && x.extent > b
        && x.extent.is_multiple_of(b)
        && l.extent.saturating_mul(x.extent).saturating_mul(s.bytes) > L2_PLANE;
    let cache_blocks = || {
        Some(vec![
            scaled(l, l.extent / b, b)?,
            scaled(x, x.extent / b, b)?,
            scaled(l, b / f, f)?,
            inner,
            Loop { extent: b, ..x },
        ])
    };
    let strip = || Some(vec![scaled(l, l.extent / f, f)?, inner]);
    // The loops from j on that are replaced, and their replacement; strides that overflow i64
    // when scaled leave the statement as it was.
    let (end, loops) = match blocked.then(cache_blocks).flatten() {
        Some(loops) => (last, loops),
        None => match strip() {
            Some(loops) => (j, loops),
            None => return s.clone(),
        },
    };
    let mut out = s.clone();
    out.loops.splice(j..=end, loops);
    out
}

/// `l` with `extent` iterations, each stepping `by` of its old iterations.
fn scaled(l: Loop, extent: u64, by: u64) -> Option<Loop> {
    Some(Loop {
        extent,
        src_stride: l.src_stride.checked_mul(i64::try_from(by).ok()?)?,
        dst_stride: l.dst_stride.checked_mul(i64::try_from(by).ok()?)?,
    })
}

/// Side of the square cache blocks, in elements (a multiple of every factor 2..=4).
const CACHE_BLOCK: u64 = 64;

/// Planes of more bytes than this are cache-blocked (half of a 512 KiB L2).
const L2_PLANE: u64 = 256 << 10;

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::{interpret_loops, verify_loop_kernel};

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
        };
        let t = tile_stmt(&s);
        assert_eq!(t.loops.len(), 3);
        assert_eq!((t.loops[0].extent, t.loops[0].src_stride), (3, 16));
        assert_eq!((t.loops[1].extent, t.loops[1].src_stride), (4, 4));
        let kernel = LoopKernel {
            name: "t".into(),
            src: relayout_ir::TensorType::new(relayout_ir::DType::F32, [8, 12]),
            dst: relayout_ir::TensorType::new(relayout_ir::DType::F32, [12, 8]),
            stmts: vec![s],
            bands: vec![],
        };
        let tiled = TileTransposes.run_loops(&kernel).unwrap();
        verify_loop_kernel(&tiled).unwrap();
        let src: Vec<u8> = (0..=255u8).cycle().take(384).collect();
        let (mut a, mut b) = (vec![0u8; 384], vec![1u8; 384]);
        interpret_loops(&kernel, &src, &mut a).unwrap();
        interpret_loops(&tiled, &src, &mut b).unwrap();
        assert_eq!(a, b);
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
        };
        assert_eq!(tile_stmt(&s), s);
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
        assert_eq!(tile_stmt(&fill), fill);
    }
}
