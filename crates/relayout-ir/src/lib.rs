//! # relayout-ir
//!
//! The two intermediate representations of relayout and everything that reads them without
//! changing them.
//!
//! **The index-map IR** ([`Kernel`]) is the semantic level. A kernel moves elements from one
//! source tensor to one destination tensor, both of fixed [`TensorType`]. It is a list of
//! statements run in order; each statement ranges over a box of integer points (its domain of
//! dims `d0..dn`, each with a half-open range), may be restricted by a guard, and at each point
//! copies, zero-fills or accumulates one element. Indices are affine maps of the dims written
//! as MLIR writes them (`d0 * 2 + d1 floordiv 4`). Ranges on every dim are what let the passes
//! simplify `floordiv` and `mod`.
//!
//! **The loop IR** ([`LoopKernel`]) is what code generation consumes: per statement a perfect
//! loop nest with byte strides per operand, moving a contiguous run of bytes at each point.
//!
//! Both have one printer (`Display`, and `Debug` prints the same text) and one parser, which
//! round-trip; a [`verify`] module that proves every access in bounds; and an [`interp`]reter
//! on byte buffers that is the oracle for every stage after it. Two analyses read loop IR for
//! the crates above: [`dependence`] (what one iteration of a band writes and reads, and whether
//! iterations are disjoint: fusion, threading and the verifier's band check) and [`movement`]
//! (what a kernel does with the bytes, in a graph optimizer's terms).
//!
//! This crate knows nothing of ops, passes or Cranelift.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod affine;
mod any;
mod dtype;
mod index_map;
mod loops;
mod scalar;
mod tensor;

pub mod dependence;
pub mod interp;
pub mod movement;
pub mod parse;
pub mod print;
pub mod verify;

pub use affine::{AffineExpr, Interval};
pub use any::AnyKernel;
pub use dtype::{half_sum, DType};
pub use index_map::{Action, Constraint, DimRange, Kernel, Stmt};
pub use interp::{interpret, interpret_loops, InterpError};
pub use loops::{
    windows_cover, Band, Loop, LoopAction, LoopKernel, LoopStmt, Unit, Window, MAX_SUM_TERMS,
};
pub use movement::Movement;
pub use parse::{parse_any, parse_kernel, parse_loop_kernel, ParseError};
pub use scalar::Scalar;
pub use tensor::{SizeOverflow, TensorType};
pub use verify::{verify_kernel, verify_loop_kernel, VerifyError};
