//! Typed errors of compiling and running kernels.

use relayout_codegen::CodegenError;
use relayout_ir::{SizeOverflow, VerifyError};
use std::fmt;

/// Why a kernel was not compiled.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum JitError {
    /// The verifier could not prove every access in bounds (or found the kernel malformed).
    /// Such a kernel is never compiled: the bounds proof is what makes running it safe.
    #[error("kernel @{kernel} was not compiled because it does not verify: {source}")]
    Verify {
        /// The kernel's name.
        kernel: String,
        /// What the verifier found.
        #[source]
        source: VerifyError,
    },
    /// A tensor type whose byte size does not fit in 63 bits.
    #[error(transparent)]
    Size(#[from] SizeOverflow),
    /// The loop kernel could not be translated to Cranelift IR.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// Cranelift does not support this machine, or refused the ISA settings.
    #[error("cannot generate code for this machine: {0}")]
    Host(String),
    /// Cranelift failed on a function (its verifier, in debug builds) or while linking.
    #[error("Cranelift failed on kernel @{kernel}{}: {message}", stmt.map(|s| format!(" statement {s}")).unwrap_or_default())]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// The statement whose function failed, or `None` when linking failed.
        stmt: Option<usize>,
        /// Cranelift's error.
        message: String,
    },
    /// [`Listing::Asm`](crate::Listing::Asm) was asked of a build without the disassembler.
    #[error(
        "this build of relayout has no disassembler: build it with the `disas` feature \
         (it needs a C compiler), or ask for Cranelift's VCode listing instead"
    )]
    NoDisassembler,
    /// An ahead-of-time compilation was asked for something an object file cannot hold (a
    /// symbol that is not a C identifier).
    #[error("{0}")]
    Aot(String),
}

/// Which buffer of a kernel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operand {
    /// The buffer the kernel reads.
    Source,
    /// The buffer the kernel writes.
    Destination,
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operand::Source => "source",
            Operand::Destination => "destination",
        })
    }
}

/// Why a compiled kernel was not run. Nothing was written to the destination.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum RunError {
    /// A buffer whose length is not the byte size of its tensor type.
    #[error("the {operand} buffer of kernel @{kernel} is {got} bytes but {ty} is {want} bytes")]
    Length {
        /// The kernel's name.
        kernel: String,
        /// Which buffer.
        operand: Operand,
        /// The tensor type, as printed in the IR.
        ty: String,
        /// The buffer's length in bytes.
        got: u64,
        /// The tensor type's size in bytes.
        want: u64,
    },
    /// `run_typed` with an element type of the wrong size.
    #[error(
        "kernel @{kernel} moves {dtype} elements of {dtype_size} bytes, but `{element}` is \
         {element_size} bytes"
    )]
    ElementSize {
        /// The kernel's name.
        kernel: String,
        /// The kernel's element type.
        dtype: relayout_ir::DType,
        /// Its size in bytes.
        dtype_size: u64,
        /// The Rust type given, as `std::any::type_name` spells it.
        element: &'static str,
        /// Its size in bytes.
        element_size: u64,
    },
}
