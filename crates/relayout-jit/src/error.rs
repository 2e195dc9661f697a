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
        kernel: String,
        #[source]
        source: VerifyError,
    },
    /// A tensor type whose byte size does not fit in 63 bits.
    #[error(transparent)]
    Size(#[from] SizeOverflow),
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// Cranelift does not support this machine, or refused the ISA settings.
    #[error("cannot generate code for this machine: {0}")]
    Host(String),
    /// Cranelift failed on a function (its verifier, in debug builds) or while linking.
    #[error("Cranelift failed on kernel @{kernel}{}: {message}", stmt.map(|s| format!(" statement {s}")).unwrap_or_default())]
    Compile {
        kernel: String,
        stmt: Option<usize>,
        message: String,
    },
}

/// Which buffer of a kernel.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Operand {
    Source,
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
        kernel: String,
        operand: Operand,
        /// The tensor type, as printed in the IR.
        ty: String,
        got: u64,
        want: u64,
    },
    /// `run_typed` with an element type of the wrong size.
    #[error(
        "kernel @{kernel} moves {dtype} elements of {dtype_size} bytes, but `{element}` is \
         {element_size} bytes"
    )]
    ElementSize {
        kernel: String,
        dtype: relayout_ir::DType,
        dtype_size: u64,
        element: &'static str,
        element_size: u64,
    },
}
