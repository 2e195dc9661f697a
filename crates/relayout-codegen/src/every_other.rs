//! Every other element of the source, into large outputs: rows gathered by 16-byte shuffles,
//! written with streaming (non-temporal) stores while the source rows ahead are prefetched,
//! by a helper that runs the whole nest.
//!
//! A Slice with step 2 on its last axis (YOLO's Focus layer, a strided downsample) reads each
//! destination row from every other element of a source row. The shuffle blocks of
//! `shuffle.rs` gather it in generated code (two source vectors, one shuffle, one store), but
//! CLIF has neither a non-temporal store nor a prefetch, and such a kernel is limited by the
//! source stream: rows of a few hundred bytes with a gap as long between them, which the
//! hardware prefetchers follow badly, plus a read of every destination line before it is
//! written. A C model of slice_focus_step2 (bench/suite_beyond.json, 8x64x128x128 f32, steps
//! [2, 2]) ran 2.8-4.0 ms with the generated code's loads, shuffles and stores, 2.1-3.0 ms with
//! the source prefetched 4 KiB ahead, and 1.7-2.9 ms with streaming stores as well (interleaved
//! runs on the 2-core reference machine). So a statement of this form, in a kernel whose output
//! has at least [`STREAM_MIN_DST`] bytes, is run by `relayout_jit`'s gather helper when every
//! statement of its kernel is a helper call (see [`crate::helper_kernel`]); elsewhere the
//! generated shuffle blocks serve it.
//!
//! The form: a copy of 1-, 2-, 4- or 8-byte runs (elements) whose innermost loop G reads every
//! other element (source stride: twice the element size) and writes consecutive ones
//! (destination stride: the element size). A row is G's whole extent, or, when G is the only
//! loop (a whole axis taken, coalesced with the axes before it), a few KiB of it, so that
//! threads can split the rows. The helper loads a row as 16-byte vectors from its first
//! element on, the last vector one element early, so it reads nothing past the row's last
//! element, which the verifier proved inside the source (the odd elements of an even axis end
//! at the source's last byte). Streaming stores pay off only for whole 64-byte lines, so every
//! row is a whole number of lines, at least [`MIN_ROW`] bytes, and every row starts on a line
//! (the destination offset and the other loops' strides are multiples of 64). The order of the
//! points is the statement's own: a row is written from its first element to its last, rows in
//! nest order.

use crate::copy::{prefetch_runs, STREAM_MIN_DST};
use relayout_ir::{Loop, LoopAction, LoopStmt};

/// Bytes of a cache line.
const LINE: i64 = 64;

/// Destination bytes of the rows a statement of one loop is cut into, the first that divides
/// it.
const ROW_CUTS: [u64; 5] = [4096, 2048, 1024, 512, 256];

/// The shortest row the helper takes, in destination bytes. Each row costs the helper a call
/// of its row function and a step of the prefetch cursor, which the generated code's loops do
/// not pay: with rows of 128 bytes the helper ran no faster than the generated shuffles (a
/// stride-2 Slice of 32x64x64x64 f32, 1.98-2.33x against 2.17-2.45x memcpy's time) or slower
/// (Im2Col 2x2 stride 2 of 4x128x64x64 f32, whose source stays in cache: 0.91-0.98 against
/// 1.07-1.17 ms); with rows of 256 bytes and more it ran faster (above; rows of 1 KiB: a
/// stride-2 Slice of 2x64x256x256 f32, 2.86-3.04x -> 2.35-2.84x).
const MIN_ROW: i64 = 256;

/// A statement run as rows gathered from every other source element (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EveryOther {
    /// Elements of a destination row: the extent of the innermost loop.
    pub count: u64,
}

impl EveryOther {
    /// The rows of `stmt` (a statement of a kernel whose output has `dst_bytes` bytes), if it
    /// has the form described in the module documentation.
    pub fn of(stmt: &LoopStmt, dst_bytes: u64) -> Option<EveryOther> {
        let elem = stmt.bytes as i64;
        if stmt.action != LoopAction::Copy
            || ![1, 2, 4, 8].contains(&elem)
            || dst_bytes < STREAM_MIN_DST
            || stmt.dst_offset % LINE != 0
        {
            return None;
        }
        let (g, outer) = stmt.loops.split_last()?;
        let count = if outer.is_empty() {
            // One loop (the whole axis taken, coalesced with the axes before it): cut into
            // rows of a few KiB for the threads to split (and a row of at least 4 KiB is
            // followed well by the hardware prefetchers, so it is not prefetched).
            ROW_CUTS
                .iter()
                .map(|&bytes| bytes / elem as u64)
                .find(|&count| g.extent % count == 0)?
        } else {
            g.extent
        };
        let row_bytes = i64::try_from(count).ok()?.checked_mul(elem)?;
        let gathers = g.src_stride == 2 * elem && g.dst_stride == elem;
        let whole_lines = row_bytes >= MIN_ROW
            && row_bytes % LINE == 0
            && outer
                .iter()
                .all(|l| l.extent == 1 || l.dst_stride % LINE == 0);
        (gathers && whole_lines).then_some(EveryOther { count })
    }

    /// The nest of rows: the statement's loops without the innermost one (a statement of one
    /// loop: the rows it is cut into).
    pub fn loops(&self, stmt: &LoopStmt) -> Vec<Loop> {
        match stmt.loops.as_slice() {
            [g] => vec![Loop {
                extent: g.extent / self.count,
                src_stride: g.src_stride * self.count as i64,
                dst_stride: g.dst_stride * self.count as i64,
            }],
            loops => loops[..loops.len().saturating_sub(1)].to_vec(),
        }
    }

    /// Bytes of source a row's loads cover (from its first element to the end of its last),
    /// which is what the helper prefetches ahead.
    pub fn src_row_bytes(&self, elem: u64) -> u64 {
        self.count
            .saturating_mul(2)
            .saturating_sub(1)
            .saturating_mul(elem)
    }

    /// How many rows ahead the helper prefetches the source of the rows of `stmt`, by the rule
    /// of the streamed copies ([`prefetch_runs`]); `None` when it does not.
    pub fn prefetch_rows(&self, stmt: &LoopStmt) -> Option<u64> {
        let rows = stmt.trip_count() / self.count;
        prefetch_runs(self.src_row_bytes(stmt.bytes), rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::lp;

    /// slice_focus_step2 as the passes leave it: 32768 rows of 64 f32, source rows 1 KiB apart.
    fn focus() -> LoopStmt {
        LoopStmt {
            action: LoopAction::Copy,
            bytes: 4,
            dst_offset: 0,
            src_offset: 0,
            loops: vec![lp(32768, 1024, 256), lp(64, 8, 4)],
            window: None,
        }
    }

    const BIG: u64 = STREAM_MIN_DST;

    #[test]
    fn every_other_element_rows_are_gathered() {
        let stmt = focus();
        let rows = EveryOther::of(&stmt, BIG).expect("slice_focus_step2");
        assert_eq!(rows, EveryOther { count: 64 });
        assert_eq!(rows.loops(&stmt), vec![lp(32768, 1024, 256)]);
        // From the first element to the end of the 64th.
        assert_eq!(rows.src_row_bytes(4), 508);
        // 4 KiB ahead: nine rows of 508 source bytes.
        assert_eq!(rows.prefetch_rows(&stmt), Some(9));
        // Every element size; the odd elements (offset one element) as well.
        for elem in [1, 2, 8] {
            let sized = LoopStmt {
                bytes: elem,
                src_offset: elem as i64,
                loops: vec![
                    lp(1024, 1024, 256),
                    lp(256 / elem, 2 * elem as i64, elem as i64),
                ],
                ..focus()
            };
            assert_eq!(
                EveryOther::of(&sized, BIG),
                Some(EveryOther { count: 256 / elem }),
                "{elem}-byte elements"
            );
        }
        // The gather as the only loop (every other element of a whole axis, coalesced with
        // the axes before it): cut into rows of 4 KiB.
        let alone = LoopStmt {
            loops: vec![lp(1 << 21, 8, 4)],
            ..focus()
        };
        let rows = EveryOther::of(&alone, BIG).expect("one loop");
        assert_eq!(rows, EveryOther { count: 1024 });
        assert_eq!(rows.loops(&alone), vec![lp(2048, 8192, 4096)]);
        assert_eq!(rows.prefetch_rows(&alone), None);
        let bytes = LoopStmt {
            bytes: 1,
            loops: vec![lp(8 << 20, 2, 1)],
            ..focus()
        };
        assert_eq!(
            EveryOther::of(&bytes, BIG),
            Some(EveryOther { count: 4096 })
        );
    }

    #[test]
    fn other_forms_are_not_gathered() {
        let stmt = focus();
        // A small output stays in cache: the generated shuffle blocks serve it.
        assert_eq!(EveryOther::of(&stmt, BIG - 1), None);
        // Every third element, or consecutive ones, or a fill.
        let mut third = stmt.clone();
        third.loops[1].src_stride = 12;
        assert_eq!(EveryOther::of(&third, BIG), None);
        let mut plain = stmt.clone();
        plain.loops[1].src_stride = 4;
        assert_eq!(EveryOther::of(&plain, BIG), None);
        let fill = LoopStmt {
            action: LoopAction::Fill {
                value: relayout_ir::Scalar(0),
            },
            ..focus()
        };
        assert_eq!(EveryOther::of(&fill, BIG), None);
        // Rows of 72 elements (288 bytes): lines shared by two rows.
        let shared = LoopStmt {
            loops: vec![lp(32768, 1024, 288), lp(72, 8, 4)],
            ..focus()
        };
        assert_eq!(EveryOther::of(&shared, BIG), None);
        // Rows of 32 elements (128 bytes): whole lines, but too short to pay for the helper.
        let short = LoopStmt {
            loops: vec![lp(65536, 512, 128), lp(32, 8, 4)],
            ..focus()
        };
        assert_eq!(EveryOther::of(&short, BIG), None);
        // A destination offset inside a line.
        let inside = LoopStmt {
            dst_offset: 16,
            ..focus()
        };
        assert_eq!(EveryOther::of(&inside, BIG), None);
        // The gather as the only loop, of a length no row cut divides (as rows of 128 bytes).
        let ragged = LoopStmt {
            loops: vec![lp((1 << 21) + 32, 8, 4)],
            ..focus()
        };
        assert_eq!(EveryOther::of(&ragged, BIG + 128), None);
        // 16-byte runs are whole vectors already.
        let wide = LoopStmt {
            bytes: 16,
            loops: vec![lp(32768, 1024, 256), lp(16, 32, 16)],
            ..focus()
        };
        assert_eq!(EveryOther::of(&wide, BIG), None);
    }
}
