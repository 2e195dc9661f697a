//! # relayout-ops
//!
//! Op descriptions with TensorFlow's and ONNX's exact semantics: attribute parsing, validation
//! with typed errors ([`OpError`], whose [`OpError::category`] is one of the conformance
//! format's category strings), the output type, and lowering to the index-map IR
//! ([`relayout_ir::Kernel`]). Lowering is direct and unsimplified: the maps say what the op
//! documentation says, with `floordiv` and `mod` where it has them; the passes simplify.

mod attrs;
mod error;
mod op;

pub use attrs::{AttrValue, Attrs};
pub use error::{ErrorCategory, OpError};
pub use op::{DataFormat, DepthToSpaceMode, Op};
