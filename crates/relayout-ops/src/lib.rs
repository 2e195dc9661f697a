//! # relayout-ops
//!
//! Op descriptions with TensorFlow's and ONNX's exact semantics: attribute parsing, validation
//! with typed errors ([`OpError`], whose [`OpError::category`] is one of the conformance
//! format's category strings), the output type, and lowering to the index-map IR
//! ([`relayout_ir::Kernel`]). Lowering is direct and unsimplified: the maps say what the op
//! documentation says, with `floordiv` and `mod` where it has them; the passes simplify.
//!
//! Copy ops lower to one gather statement over the output (`copy %dst[d0, ..] = %src[map]`),
//! preceded by a zero `fill` when there is padding, whose guard repeats the source index
//! expressions of the padded dims. Col2Im lowers to a `fill` and one guarded scatter
//! `accumulate` over (n, c, kernel position, block position).
//!
//! Code map: `op.rs` (the [`Op`] enum and dispatch), `from_attrs.rs` (attributes to ops),
//! `validate.rs` (checked sizes and shared checks), `lowering.rs` (map building blocks), and
//! one file per op family: `depth.rs`, `batch.rs`, `col2im.rs`, and the ops around them,
//! `transpose.rs`, `pad.rs`, `slice.rs`, `tile.rs`, `reshape.rs`, `im2col.rs`. All of them are
//! copies (gathers over boxes of the output) except Col2Im, and Im2Col, which scatters like
//! Col2Im in reverse.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attrs;
mod batch;
mod blocks;
mod col2im;
mod depth;
mod error;
mod from_attrs;
mod im2col;
mod lowering;
mod op;
mod pad;
mod reshape;
mod slice;
mod tile;
mod transpose;
mod validate;

pub use attrs::{AttrValue, Attrs};
pub use error::{ErrorCategory, OpError};
pub use from_attrs::{known_attributes, OP_NAMES};
pub use op::{DataFormat, DepthToSpaceMode, Op};
pub use pad::{PadMode, PadValue};
