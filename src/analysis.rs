//! What a compiled op does to the bytes, in the terms a graph optimizer decides with: is it a
//! view (nothing moves), a slice or a pad of one contiguous block, a transpose, a strided view
//! (steps, reversals, broadcasts), or a general gather? See [`Movement`].
//!
//! The analysis reads loop IR only, so it lives with the IR
//! ([`relayout_ir::movement`], re-exported here); this module asks it of a compiled op's final
//! loop IR (`stages().loops`), after the passes have coalesced the loops, because that is where
//! two ops that describe the same data movement look the same, and, when that proves nothing
//! more specific than a gather, of the optimized index-map kernel lowered without the loop
//! passes that cut statements for code generation (see [`CompiledOp::movement`]).

use crate::{CompiledOp, Stages};
pub use relayout_ir::movement::{bytes_moved, movement, Movement, MAX_RUNS};
use relayout_passes::{PassManager, Pipeline};

/// What the kernel of `stages` does with the bytes of its input.
///
/// First read from the final loop IR. Code generation's loop passes cut a transpose whose
/// extents are not multiples of its register blocks into several statements (the whole blocks,
/// then the edges: `tile-transposes`), which the proofs over one kernel do not put back
/// together, so when the final loop IR proves only a gather, the answer is read again from the
/// optimized index-map kernel lowered with `linearize,coalesce` alone, where such a transpose
/// is still one statement. Both loop kernels compute the same function (every pass is checked
/// to keep it), so a proof over either describes the kernel; a gather's counts are the final
/// loop IR's.
pub(crate) fn movement_of(stages: &Stages) -> Movement {
    let last = movement(&stages.loops);
    if !matches!(last, Movement::Gather { .. }) {
        return last;
    }
    let uncut = Pipeline::parse("linearize,coalesce")
        .and_then(|p| PassManager::new(p).run_to_loops(&stages.optimized));
    match uncut.map(|loops| movement(&loops)) {
        Ok(m) if !matches!(m, Movement::Gather { .. }) => m,
        _ => last,
    }
}

impl CompiledOp {
    /// What this op does with the bytes of its input; see [`Movement`].
    ///
    /// ```
    /// use relayout::{compile, ir::{DType, TensorType}, DataFormat, DepthToSpaceMode, Movement, Op};
    ///
    /// // SpaceToDepth on the 4x4 image of TensorFlow's documentation is a transpose of the
    /// // axes (h, by, w, bx) into (h, w, by, bx).
    /// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
    /// let s2d = compile(&op, &TensorType::new(DType::F32, [1, 4, 4, 1])).unwrap();
    /// assert_eq!(
    ///     s2d.movement(),
    ///     Movement::Permutation { shape: vec![2, 2, 2, 2], perm: vec![0, 2, 1, 3] }
    /// );
    ///
    /// // SpaceToBatchND with blocks of 1 and no padding moves nothing: replace it by a view.
    /// let op = Op::SpaceToBatchNd { block_shape: vec![1, 1], paddings: vec![vec![0, 0]; 2] };
    /// let s2b = compile(&op, &TensorType::new(DType::F32, [2, 3, 4, 5])).unwrap();
    /// assert_eq!(s2b.movement(), Movement::NoMovement);
    /// assert_eq!(s2b.bytes_moved(), 2 * 480);
    ///
    /// // On a one-pixel image the block is the whole depth, already in output order.
    /// let op = Op::DepthToSpace {
    ///     block_size: 2,
    ///     data_format: DataFormat::Nhwc,
    ///     mode: DepthToSpaceMode::Dcr,
    /// };
    /// let d2s = compile(&op, &TensorType::new(DType::U8, [2, 1, 1, 12])).unwrap();
    /// assert_eq!(d2s.movement(), Movement::NoMovement);
    /// ```
    pub fn movement(&self) -> Movement {
        self.inner
            .movement
            .get_or_init(|| movement_of(self.stages()))
            .clone()
    }

    /// Bytes read plus bytes written by one run of the kernel; see [`bytes_moved`](fn@bytes_moved).
    pub fn bytes_moved(&self) -> u64 {
        bytes_moved(&self.stages().loops)
    }
}
