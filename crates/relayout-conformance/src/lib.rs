//! # relayout-conformance
//!
//! The conformance cases of relayout (`tests/conformance/<op>/<name>.json`, described in
//! `tests/conformance/FORMAT.md`) as typed values: [`load_case`] reads one file into a
//! [`Case`] whose tensors are exact little-endian bytes (all 15 dtypes, NaN and infinities,
//! full-range 64-bit integers), [`compare`] checks an output the way the format says (NaN
//! matches NaN, `-0.0` is not `0.0`, optional `rtol`/`atol`), and [`find_cases`] lists a
//! folder's cases in a stable order.
//!
//! This crate only reads and compares; running a case (lowering, interpreting, compiling) is
//! the caller's business, so the same cases can check every stage.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod case;
mod compare;
mod data;
mod error;
mod find;

pub use case::{load_case, parse_case, Case, Expected};
pub use compare::{compare, Mismatch};
pub use data::{element_to_string, encode};
pub use error::{LoadError, LoadErrorKind};
pub use find::find_cases;
