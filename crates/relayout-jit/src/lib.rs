//! # relayout-jit
//!
//! Turns a loop kernel into machine code for this machine and runs it safely.
//!
//! [`CompiledKernel::compile`] verifies the kernel (`relayout_ir::verify_loop_kernel` must
//! prove every access in bounds, or nothing is compiled), translates the whole kernel with
//! relayout-codegen into one function (an entry per unit of its schedule), and compiles it into
//! a Cranelift JIT module of its own, which is freed when the `CompiledKernel` is dropped. [`CompiledKernel::run`] checks both buffer lengths against
//! the kernel's tensor types before any machine code runs; [`CompiledKernel::run_typed`] does
//! the same on slices of an [`Element`] type; [`CompiledKernel::run_threaded`] splits each
//! statement's outermost loop over a process-wide thread pool. [`aot_object`] compiles the
//! same statements ahead of time into an object file instead, for programs that link their
//! kernels.
//!
//! ```
//! use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
//! use relayout_jit::CompiledKernel;
//!
//! // Transpose a 2x3 byte matrix.
//! let kernel = LoopKernel {
//!     name: "t".into(),
//!     src: TensorType::new(DType::U8, [2, 3]),
//!     dst: TensorType::new(DType::U8, [3, 2]),
//!     bands: vec![],
//!     stmts: vec![LoopStmt {
//!         action: LoopAction::Copy,
//!         bytes: 1,
//!         src_offset: 0,
//!         dst_offset: 0,
//!         loops: vec![
//!             Loop { extent: 3, src_stride: 1, dst_stride: 2 },
//!             Loop { extent: 2, src_stride: 3, dst_stride: 1 },
//!         ],
//!         window: None,
//!     }],
//! };
//! let compiled = CompiledKernel::compile(&kernel)?;
//! let mut dst = [0u8; 6];
//! compiled.run(&[0, 1, 2, 3, 4, 5], &mut dst)?;
//! assert_eq!(dst, [0, 3, 1, 4, 2, 5]);
//! assert!(compiled.run(&[0, 1, 2], &mut dst).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`machine_code_text`] lists the machine code a kernel compiles to: Cranelift's VCode
//! listing in every build, and the real disassembly ([`Listing::Asm`]) when the crate is
//! built with its `disas` feature, which adds capstone (a C library built with the system's
//! C compiler) and is off by default.
//!
//! This is the only crate of relayout with `unsafe` code, and all of it is in `module.rs`,
//! whose documentation argues why it is sound.

#![warn(missing_docs)]

mod aot;
mod cranelift_timing;
mod element;
mod error;
mod helper_kernel;
mod helpers;
mod isa;
mod kernel;
mod listing;
mod module;
mod threads;

#[cfg(test)]
mod random_tests;

pub use aot::{aot_object, AotObject};

/// The functions generated code calls ([`relayout_codegen::Helper`]), as Rust functions: the
/// JIT registers them in its modules, and librelayout_capi exports them under their symbols
/// for ahead-of-time objects that call them. None of them panics.
pub mod runtime {
    pub use crate::helpers::{
        relayout_bf16_add, relayout_f16_add, relayout_store_fence, relayout_stream_copy_nest,
        relayout_stream_zero_nest, StreamLoop,
    };
}
pub use element::Element;
pub use error::{JitError, Operand, RunError};
pub use kernel::{CompiledKernel, Split, SplitReport, StmtSplit};
pub use listing::{machine_code_text, Listing, HAS_DISASSEMBLER};
pub use module::StageTiming;
