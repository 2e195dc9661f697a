//! Three interleaved byte channels into three planes and back (NHWC <-> NCHW transposes of
//! 8-bit RGB images), by helpers that run the whole nest with 32-byte shuffles.
//!
//! The shuffle blocks of `shuffle.rs` move such pixels in generated code, but CLIF's vectors
//! are 128 bits wide and its shuffles cannot zero lanes, so each 16-byte destination vector
//! takes four byte shuffles and two ors on top of its share of the loads and the store: 24
//! instructions for 16 pixels (48 bytes). The JIT's helpers (`relayout_jit`'s
//! `helpers/byte_channels.rs`) make each destination vector from the three source vectors
//! with one shuffle each (zeroing the lanes it does not supply) and two ors, on 32-byte AVX2
//! registers whose two 128-bit lanes hold 16 pixels each: 24 instructions for 32 pixels. A
//! model of transpose_image_u8 (bench/suite_beyond.json, 16x224x224x3 u8 into planes, whose
//! source and destination stay in the level-3 cache) on the reference machine: memcpy of its
//! bytes 73-76 us, the SSSE3 form of the helper (16 pixels a step) 128-130 us, the AVX2 form
//! 76-79 us; the generated blocks ran at 1.6-1.9x memcpy's time in `relayout bench`. Without
//! AVX2 the helpers take 16 pixels a step (SSSE3), and without SSSE3 one byte at a time.
//!
//! The forms: a copy of 1-byte runs whose two innermost loops, in either order, are X, over
//! the pixels, and F, the three channels. Into planes ([`Deinterleave`]): X reads every third
//! byte and writes consecutive ones (source stride 3, destination stride 1), F reads
//! consecutive bytes (source stride 1) and writes a plane apart (any destination stride).
//! Into pixels ([`Interleave`]): the mirror image (X source stride 1, destination stride 3; F
//! destination stride 1, any source stride). No two points may write the same byte (so the
//! helpers' order, all three channels of a few pixels at a time, gives the same bytes). A row
//! is X's whole extent, at least [`MIN_PIXELS`] pixels, or, when X and F are the statement's
//! only loops (a single image, its height and width coalesced), the row cuts of [`ROW_CUTS`]
//! (the first that divides X's extent), so that the nest has an outer loop for threads to cut
//! (the JIT cuts a helper's nest, not the statement's loops: pieces of rows, not of channels,
//! whichever of X and F is outside). Each row's loads
//! cover exactly the bytes the statement reads for it and its stores the bytes it writes, both
//! proven inside the tensors by the verifier: the pixels after the last whole step are moved
//! one by one.
//!
//! Not (yet) of these forms: four channels (RGBA) and wider elements (f32 RGB: the generated
//! 4x4 blocks serve them).

use relayout_ir::{Loop, LoopAction, LoopStmt};

/// Channels of a pixel.
const CHANNELS: u64 = 3;

/// The shortest row the helper takes, in pixels: a row costs a call of the row function and
/// its setup, which generated loops do not pay.
pub const MIN_PIXELS: u64 = 64;

/// Pixels of the rows a statement of X and F alone is cut into, the first that divides X.
const ROW_CUTS: [u64; 5] = [4096, 2048, 1024, 512, 256];

/// A statement run as rows of pixels whose three byte channels go to three planes (see the
/// module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deinterleave {
    /// Pixels of a row.
    pub count: u64,
    /// Bytes between the planes in the destination: F's destination stride.
    pub plane: i64,
    /// Whether F is the innermost loop (else X is).
    f_inner: bool,
}

/// A statement run as rows of pixels whose three byte channels come from three planes (see
/// the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interleave {
    /// Pixels of a row.
    pub count: u64,
    /// Bytes between the planes in the source: F's source stride.
    pub plane: i64,
    /// Whether F is the innermost loop (else X is).
    f_inner: bool,
}

/// The rows of `stmt` in either form: `into_planes` says which. Its pixels' side has stride 3
/// along X and 1 along F, its planes' side stride 1 along X and the plane along F. Returns
/// the row length, the plane and whether F is the innermost loop.
fn rows(stmt: &LoopStmt, into_planes: bool) -> Option<(u64, i64, bool)> {
    if stmt.action != LoopAction::Copy || stmt.bytes != 1 {
        return None;
    }
    let [outer @ .., a, b] = stmt.loops.as_slice() else {
        return None;
    };
    // (pixel side, plane side) strides of a loop.
    let sides = |l: &Loop| {
        if into_planes {
            (l.src_stride, l.dst_stride)
        } else {
            (l.dst_stride, l.src_stride)
        }
    };
    let is_x = |l: &Loop| sides(l) == (CHANNELS as i64, 1);
    let is_f = |l: &Loop| l.extent == CHANNELS && sides(l).0 == 1;
    let (x, f, f_inner) = if is_x(a) && is_f(b) {
        (a, b, true)
    } else if is_f(a) && is_x(b) {
        (b, a, false)
    } else {
        return None;
    };
    let count = if outer.is_empty() {
        // X alone is cut into rows, the nest's outer loop (the loop threads cut).
        ROW_CUTS.into_iter().find(|&cut| x.extent % cut == 0)?
    } else {
        x.extent
    };
    let disjoint = relayout_ir::dependence::points_disjoint(stmt, 0);
    (count >= MIN_PIXELS && disjoint).then_some((count, sides(f).1, f_inner))
}

/// The nest of rows of `count` pixels: the statement's loops without X and F (a statement of
/// those two alone: the rows X is cut into).
fn row_nest(stmt: &LoopStmt, count: u64, f_inner: bool) -> Vec<Loop> {
    let n = stmt.loops.len();
    if n == 2 {
        let x = stmt.loops[usize::from(!f_inner)];
        return vec![Loop {
            extent: x.extent / count,
            src_stride: x.src_stride * count as i64,
            dst_stride: x.dst_stride * count as i64,
        }];
    }
    stmt.loops[..n.saturating_sub(2)].to_vec()
}

impl Deinterleave {
    /// The rows of `stmt`, if it has the form described in the module documentation.
    pub fn of(stmt: &LoopStmt) -> Option<Deinterleave> {
        let (count, plane, f_inner) = rows(stmt, true)?;
        Some(Deinterleave {
            count,
            plane,
            f_inner,
        })
    }

    /// The nest of rows: the statement's loops without X and F (a statement of those two
    /// alone: the rows X is cut into).
    pub fn loops(&self, stmt: &LoopStmt) -> Vec<Loop> {
        row_nest(stmt, self.count, self.f_inner)
    }
}

impl Interleave {
    /// The rows of `stmt`, if it has the form described in the module documentation.
    pub fn of(stmt: &LoopStmt) -> Option<Interleave> {
        let (count, plane, f_inner) = rows(stmt, false)?;
        Some(Interleave {
            count,
            plane,
            f_inner,
        })
    }

    /// The nest of rows, as [`Deinterleave::loops`].
    pub fn loops(&self, stmt: &LoopStmt) -> Vec<Loop> {
        row_nest(stmt, self.count, self.f_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::lp;

    /// transpose_image_u8 as the passes leave it: 16 images of 50176 pixels, F innermost.
    fn images() -> LoopStmt {
        LoopStmt {
            action: LoopAction::Copy,
            bytes: 1,
            src_offset: 0,
            dst_offset: 0,
            loops: vec![lp(16, 150528, 150528), lp(50176, 3, 1), lp(3, 1, 50176)],
            window: None,
        }
    }

    #[test]
    fn pixels_of_three_byte_channels_are_deinterleaved() {
        let stmt = images();
        let rows = Deinterleave::of(&stmt).expect("transpose_image_u8");
        assert_eq!((rows.count, rows.plane), (50176, 50176));
        assert_eq!(rows.loops(&stmt), vec![lp(16, 150528, 150528)]);
        // The channel loop outside the pixel loop.
        let swapped = LoopStmt {
            loops: vec![stmt.loops[0], stmt.loops[2], stmt.loops[1]],
            ..images()
        };
        assert_eq!(
            Deinterleave::of(&swapped),
            Some(Deinterleave {
                f_inner: false,
                ..rows
            })
        );
        // One image: its pixels cut into rows of 4096 (50176 = 12.25 * 4096, so 1024).
        let one = LoopStmt {
            loops: vec![lp(50176, 3, 1), lp(3, 1, 50176)],
            ..images()
        };
        let rows = Deinterleave::of(&one).expect("one image");
        assert_eq!(rows.count, 1024);
        assert_eq!(rows.loops(&one), vec![lp(49, 3072, 1024)]);
        // The channel loop outside: the same rows (the JIT's threads cut the rows' loop, not
        // the statement's outer loop of channels).
        let one_swapped = LoopStmt {
            loops: vec![lp(3, 1, 50176), lp(50176, 3, 1)],
            ..images()
        };
        let rows = Deinterleave::of(&one_swapped).expect("one image, channels outside");
        assert_eq!((rows.count, rows.f_inner), (1024, false));
        assert_eq!(rows.loops(&one_swapped), vec![lp(49, 3072, 1024)]);
    }

    /// The same statements with source and destination swapped are interleaves.
    #[test]
    fn planes_of_three_byte_channels_are_interleaved() {
        let mirrored = |stmt: &LoopStmt| LoopStmt {
            loops: stmt
                .loops
                .iter()
                .map(|l| lp(l.extent, l.dst_stride, l.src_stride))
                .collect(),
            ..stmt.clone()
        };
        let stmt = mirrored(&images());
        assert_eq!(Deinterleave::of(&stmt), None);
        let rows = Interleave::of(&stmt).expect("NCHW -> NHWC of 16 images");
        assert_eq!((rows.count, rows.plane), (50176, 50176));
        assert_eq!(rows.loops(&stmt), vec![lp(16, 150528, 150528)]);
        let one = mirrored(&LoopStmt {
            loops: vec![lp(50176, 3, 1), lp(3, 1, 50176)],
            ..images()
        });
        let rows = Interleave::of(&one).expect("one image");
        assert_eq!(rows.count, 1024);
        assert_eq!(rows.loops(&one), vec![lp(49, 1024, 3072)]);
        let one_swapped = mirrored(&LoopStmt {
            loops: vec![lp(3, 1, 50176), lp(50176, 3, 1)],
            ..images()
        });
        let rows = Interleave::of(&one_swapped).expect("one image, channels outside");
        assert_eq!(rows.loops(&one_swapped), vec![lp(49, 1024, 3072)]);
        // Interleaves of other kinds: two-byte elements, images written over each other.
        assert_eq!(
            Interleave::of(&LoopStmt {
                bytes: 2,
                ..stmt.clone()
            }),
            None
        );
        let mut overlapping = stmt.clone();
        overlapping.loops[0].dst_stride = 100;
        assert_eq!(Interleave::of(&overlapping), None);
    }

    #[test]
    fn other_forms_are_not_deinterleaved() {
        let stmt = images();
        // Two-byte elements, four channels, a fill.
        let wide = LoopStmt {
            bytes: 2,
            ..images()
        };
        assert_eq!(Deinterleave::of(&wide), None);
        let rgba = LoopStmt {
            loops: vec![lp(16, 200704, 200704), lp(50176, 4, 1), lp(4, 1, 50176)],
            ..images()
        };
        assert_eq!(Deinterleave::of(&rgba), None);
        let fill = LoopStmt {
            action: LoopAction::Fill {
                value: relayout_ir::Scalar(0),
            },
            ..images()
        };
        assert_eq!(Deinterleave::of(&fill), None);
        // Rows too short to pay for the helper's call.
        let short = LoopStmt {
            loops: vec![lp(4096, 96, 96), lp(32, 3, 1), lp(3, 1, 32)],
            ..images()
        };
        assert_eq!(Deinterleave::of(&short), None);
        // Planes that overlap: channel c's row is written over by channel c + 1's.
        let mut overlapping = stmt.clone();
        overlapping.loops[2].dst_stride = 100;
        assert_eq!(Deinterleave::of(&overlapping), None);
        // One image whose pixels no row cut divides.
        let ragged = LoopStmt {
            loops: vec![lp(50177, 3, 1), lp(3, 1, 50177)],
            ..images()
        };
        assert_eq!(Deinterleave::of(&ragged), None);
    }
}
