//! True transposes of 4- and 8-byte elements into large outputs: 4x4 (2x2) register
//! transposes whose rows are written with streaming (non-temporal) stores, by a helper that
//! runs the whole nest.
//!
//! The shuffle blocks of `shuffle.rs` make the same register transposes in generated code, but
//! CLIF has no non-temporal store, so every 16-byte store there first reads its destination
//! line (a read for ownership): a transpose into an output too large for the caches moves a
//! third more memory than it must. A C model of an NCHW -> NHWC transpose of 8x64x112x112 f32
//! with the same 4x4 SSE blocks ran at 1.13-1.46x memcpy's time with ordinary stores and at
//! 0.85-1.14x with streaming ones (memcpy streams at this size too). So a statement of this
//! form, in a kernel whose output has at least [`STREAM_MIN_DST`] bytes, is run by
//! `relayout_jit`'s transpose helper instead, and the kernel needs no generated code at all
//! when every statement is a helper call (see [`crate::helper_kernel`]).
//!
//! The form: a copy of 4- or 8-byte runs (elements) with a loop X that reads consecutive
//! elements (source stride: the element size) and a loop F that writes consecutive elements
//! (destination stride: the element size), both of a multiple of `n` iterations, where `n` =
//! 16 bytes / the element size (4 or 2) is the elements of a register row, and neither the
//! outermost loop (the one threads split). A block is `n` iterations of each: it loads `n`
//! source vectors (rows F = 0..n, each holding X = 0..n), transposes them in registers, and
//! stores `n` destination vectors (rows X = 0..n, each holding F = 0..n). The block nest is
//! the statement's loops in their order, with X and F stepping a block at a time.
//!
//! Streaming stores pay off only when they fill whole 64-byte lines before the write-combining
//! buffers let go of them (a partial line costs more than an ordinary store), so the form
//! also asks that every line the statement writes is filled by consecutive blocks: each
//! destination row is a whole number of lines along F (X's destination stride a multiple of
//! 64 and F of a multiple of 16 iterations) and F, stepping by blocks, is the innermost loop
//! of more than one iteration. The other loops and the destination offset must keep lines
//! whole (multiples of 64 bytes). The helper checks the destination's alignment at run time
//! and falls back to ordinary stores for a buffer that is not 16-byte aligned.
//!
//! Tried and left out: transposing four blocks along F together and storing each destination
//! row's 64-byte line whole, one line at a time in the write-combining buffers instead of
//! one per row. It made rows a multiple of 2 KiB apart no worse than the generated blocks
//! (below), but no better either, and NCHW -> NHWC of 8x64x112x112 f32 ran 1.23-1.42x
//! memcpy's time against 0.99-1.24x for the blocks stored as they come (five interleaved
//! pairs); elsewhere the two were even.
//!
//! Where streaming lost, measured on the reference machine (2-core Zen, `relayout bench`,
//! kernel / memcpy time, streamed against the generated shuffle blocks in one sitting): when
//! a block's destination rows are a multiple of 2 KiB apart (2-D transposes of 1536, 2048 and
//! 4096 square f32: 3.0-4.1 against 1.9-2.9; NCHW -> NHWC of 512 channels, 6.3 against 2.7;
//! of 1024, even), and when a block's rows lie side by side as one line (DepthToSpace CRD of
//! block 4: 1.23 against 1.01). Those keep the generated blocks. Elsewhere streaming won:
//! NCHW -> NHWC of 64, 128, 192 and 256 channels 1.1-1.9 against 1.5-2.9, NHWC -> NCHW of 64
//! and 512 channels 1.5 and 1.3 against 1.8 and 2.4, a 2000x2000 f32 transpose 1.3 against
//! 2.8; with 8-byte elements (2x2 blocks, two sittings each) NCHW -> NHWC of 64 channels
//! 1.3-1.4 against 1.8-1.9, NHWC -> NCHW of 256 and 384 channels 1.4-1.8 against 1.6-2.1,
//! 2000x2000 and 1000x3000 f64 1.3-1.5 against 1.5-1.9. 2-byte elements (8x8 blocks, eight
//! rows in flight) are not streamed: the same sweeps of f16 and bf16 NCHW <-> NHWC ran at
//! 1.2-1.5 in one sitting and 7-8 in the next against a steady 1.6-2.7.

use crate::copy::STREAM_MIN_DST;
use relayout_ir::{Loop, LoopAction, LoopStmt};

/// Bytes of a register row.
const ROW: i64 = 16;
/// Bytes of a cache line.
const LINE: i64 = 64;
/// Destination rows a multiple of this many bytes apart are not streamed (see the module
/// documentation).
const SLOW_ROW_DISTANCE: i64 = 2048;

/// A statement run as register transposes with streaming stores: which loops are X and F.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeBlocks {
    /// Index of the loop that reads consecutive elements (source stride: the element size).
    pub x: usize,
    /// Index of the loop that writes consecutive elements (destination stride: the element
    /// size).
    pub f: usize,
    /// Rows of a block, and elements of a row: 16 bytes / the element size (4 or 2).
    pub n: u64,
    /// Bytes between the block's source rows (F's source stride).
    pub src_row: i64,
    /// Bytes between the block's destination rows (X's destination stride).
    pub dst_row: i64,
}

impl TransposeBlocks {
    /// The blocks of `stmt` (a statement of a kernel whose output has `dst_bytes` bytes), if it
    /// has the form described in the module documentation.
    pub fn of(stmt: &LoopStmt, dst_bytes: u64) -> Option<TransposeBlocks> {
        if stmt.action != LoopAction::Copy
            || ![4, 8].contains(&stmt.bytes)
            || dst_bytes < STREAM_MIN_DST
            || stmt.dst_offset % LINE != 0
        {
            return None;
        }
        let elem = stmt.bytes as i64;
        let n = ROW as u64 / stmt.bytes;
        let blocks_of = |l: &Loop| l.extent >= n && l.extent % n == 0;
        let (x, lx) = stmt
            .loops
            .iter()
            .enumerate()
            .skip(1)
            .find(|(_, l)| l.src_stride == elem && blocks_of(l))?;
        let (f, lf) = stmt
            .loops
            .iter()
            .enumerate()
            .skip(1)
            .find(|&(i, l)| i != x && l.dst_stride == elem && blocks_of(l))?;
        let others_keep_lines = stmt
            .loops
            .iter()
            .enumerate()
            .all(|(i, l)| i == x || i == f || l.extent == 1 || l.dst_stride % LINE == 0);
        // Loops after F that still run more than once step a block of F at a time otherwise.
        let f_innermost = stmt.loops[f + 1..]
            .iter()
            .enumerate()
            .all(|(k, l)| f + 1 + k == x && l.extent == n || l.extent == 1);
        let whole_lines =
            lx.dst_stride % LINE == 0 && (lf.extent as i64 * elem) % LINE == 0 && f_innermost;
        // Measured: see the module documentation.
        let rows_apart_well = lx.dst_stride % SLOW_ROW_DISTANCE != 0;
        // The block reorders the points of X and F, which is harmless only for a copy whose
        // points write disjoint bytes (as for the shuffle blocks).
        (others_keep_lines
            && whole_lines
            && rows_apart_well
            && lx.dst_stride != 0
            && lf.src_stride != 0
            && relayout_ir::dependence::points_disjoint(stmt, 0))
        .then_some(TransposeBlocks {
            x,
            f,
            n,
            src_row: lf.src_stride,
            dst_row: lx.dst_stride,
        })
    }

    /// The nest of blocks: the statement's loops in order, X and F stepping a block (`n`
    /// iterations) at a time.
    pub fn loops(&self, stmt: &LoopStmt) -> Vec<Loop> {
        stmt.loops
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i == self.x || i == self.f {
                    Loop {
                        extent: l.extent / self.n,
                        src_stride: self.n as i64 * l.src_stride,
                        dst_stride: self.n as i64 * l.dst_stride,
                    }
                } else {
                    *l
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::lp;

    fn copy(loops: Vec<Loop>) -> LoopStmt {
        LoopStmt {
            action: LoopAction::Copy,
            bytes: 4,
            dst_offset: 0,
            src_offset: 0,
            loops,
            window: None,
        }
    }

    const BIG: u64 = STREAM_MIN_DST;

    /// NCHW -> NHWC of 8x64x112x112 f32 as the passes leave it: X the 4 pixels of a group, F
    /// the 64 channels.
    fn nchw_to_nhwc() -> LoopStmt {
        copy(vec![
            lp(8, 3211264, 3211264),
            lp(3136, 16, 1024),
            lp(4, 4, 256),
            lp(64, 50176, 4),
        ])
    }

    #[test]
    fn channel_transposes_and_pixel_shuffles_are_blocks() {
        let stmt = nchw_to_nhwc();
        let blocks = TransposeBlocks::of(&stmt, BIG).expect("NCHW -> NHWC");
        assert_eq!(
            blocks,
            TransposeBlocks {
                x: 2,
                f: 3,
                n: 4,
                src_row: 50176,
                dst_row: 256
            }
        );
        assert_eq!(
            blocks.loops(&stmt),
            vec![
                lp(8, 3211264, 3211264),
                lp(3136, 16, 1024),
                lp(1, 16, 1024),
                lp(16, 200704, 16),
            ]
        );
        // A 2000x2000 transpose as the passes tile it.
        let square = copy(vec![
            lp(7, 1024, 2048000),
            lp(125, 128000, 64),
            lp(64, 16, 32000),
            lp(4, 4, 8000),
            lp(16, 8000, 4),
        ]);
        assert_eq!(
            TransposeBlocks::of(&square, BIG),
            Some(TransposeBlocks {
                x: 3,
                f: 4,
                n: 4,
                src_row: 8000,
                dst_row: 8000
            })
        );
        // NCHW -> NHWC of 4x64x112x112 f64: 2x2 blocks.
        let wide = LoopStmt {
            bytes: 8,
            ..copy(vec![
                lp(4, 6422528, 6422528),
                lp(6272, 16, 1024),
                lp(2, 8, 512),
                lp(64, 100352, 8),
            ])
        };
        let blocks = TransposeBlocks::of(&wide, BIG).expect("f64 NCHW -> NHWC");
        assert_eq!(
            blocks,
            TransposeBlocks {
                x: 2,
                f: 3,
                n: 2,
                src_row: 100352,
                dst_row: 512
            }
        );
        assert_eq!(
            blocks.loops(&wide)[2..],
            [lp(1, 16, 1024), lp(32, 200704, 16)]
        );
    }

    #[test]
    fn other_forms_are_not_blocks() {
        let stmt = nchw_to_nhwc();
        // A small output stays in cache: the generated shuffle blocks serve it.
        assert_eq!(TransposeBlocks::of(&stmt, BIG - 1), None);
        // Not 4- or 8-byte elements, or not a copy.
        let mut half = stmt.clone();
        half.bytes = 2;
        half.loops[2].src_stride = 2;
        half.loops[3].dst_stride = 2;
        assert_eq!(TransposeBlocks::of(&half, BIG), None);
        let mut fill = stmt.clone();
        fill.action = LoopAction::Fill {
            value: relayout_ir::Scalar(0),
        };
        assert_eq!(TransposeBlocks::of(&fill, BIG), None);
        // F of 66 iterations: not whole blocks.
        let mut ragged = stmt.clone();
        ragged.loops[3].extent = 66;
        assert_eq!(TransposeBlocks::of(&ragged, BIG), None);
        // F of 8 channels (32 bytes a row): rows of half lines.
        let mut half_lines = stmt.clone();
        half_lines.loops[3].extent = 8;
        assert_eq!(TransposeBlocks::of(&half_lines, BIG), None);
        // F, stepping by blocks, outside another loop: lines filled far apart in time.
        let outside = copy(vec![
            lp(8, 3211264, 3211264),
            lp(64, 50176, 4),
            lp(3136, 16, 1024),
            lp(4, 4, 256),
        ]);
        assert_eq!(TransposeBlocks::of(&outside, BIG), None);
        // X as the outermost loop (threads split it, in its own iterations).
        let outer_x = copy(vec![lp(4, 4, 256), lp(3136, 16, 1024), lp(64, 50176, 4)]);
        assert_eq!(TransposeBlocks::of(&outer_x, BIG), None);
        // DepthToSpace CRD with block 4 (pixel shuffle): a block is one 64-byte line.
        let shuffle = copy(vec![
            lp(64, 1048576, 1048576),
            lp(128, 512, 8192),
            lp(4, 262144, 2048),
            lp(32, 16, 64),
            lp(4, 4, 16),
            lp(4, 65536, 4),
        ]);
        assert_eq!(TransposeBlocks::of(&shuffle, BIG), None);
        // Destination rows 2 KiB apart (NCHW -> NHWC of 512 channels), or 16 KiB (4096x4096).
        let channels_512 = copy(vec![
            lp(8, 1605632, 1605632),
            lp(3, 1024, 524288),
            lp(32, 50176, 64),
            lp(64, 16, 8192),
            lp(4, 4, 2048),
            lp(16, 3136, 4),
        ]);
        assert_eq!(TransposeBlocks::of(&channels_512, BIG), None);
        let square_4096 = copy(vec![
            lp(16, 1024, 4194304),
            lp(256, 262144, 64),
            lp(64, 16, 65536),
            lp(4, 4, 16384),
            lp(16, 16384, 4),
        ]);
        assert_eq!(TransposeBlocks::of(&square_4096, BIG), None);
        // A destination offset inside a line.
        let mut offset = stmt.clone();
        offset.dst_offset = 16;
        assert_eq!(TransposeBlocks::of(&offset, BIG), None);
        // Points that write the same bytes (a broadcast along X) must keep their order.
        let mut broadcast = stmt;
        broadcast.loops[1].dst_stride = 0;
        assert_eq!(TransposeBlocks::of(&broadcast, BIG), None);
    }
}
