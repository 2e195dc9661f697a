//! Test support shared by relayout's tests and fuzz targets, as rust-analyzer keeps its test
//! helpers in a dev-only crate: [`Input`], a reader of fuzzer bytes (a stand-in for
//! `arbitrary::Unstructured`, so that `cargo test` needs no extra dependency), and the one
//! generator of small valid ops of every kind ([`small_valid_op`], and [`op_for`] for an op
//! that a given tensor can feed, to build chains). Every byte string decodes: the reader gives
//! zeros once the bytes run out.
//!
//! Users: the fuzz bodies (tests/support/fuzz_bodies.rs, run by `cargo test` and by cargo-fuzz),
//! the race and stress tests, and relayout-passes' property test that the default pipeline
//! keeps the meaning of random ops.

#![forbid(unsafe_code)]

mod input;
mod ops;

pub use input::{Input, EDGE_I64, EDGE_U64};
pub use ops::{image_shape, op_for, small_valid_op};
