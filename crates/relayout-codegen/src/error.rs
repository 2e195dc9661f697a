//! The one error type of code generation.

use relayout_ir::DType;

/// Why a loop kernel could not be translated. A kernel that passed
/// `relayout_ir::verify_loop_kernel` only meets `Import` (a module refusing a declaration) and
/// `PointerWidth` (a target that is not 64-bit).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum CodegenError {
    /// `translate_stmt` was asked for a statement the kernel does not have.
    #[error("kernel @{kernel} has {count} statements, so statement {index} does not exist")]
    NoStatement {
        /// The kernel's name.
        kernel: String,
        /// The statement asked for.
        index: usize,
        /// The number of statements the kernel has.
        count: usize,
    },
    /// The source and destination element types differ; the loop IR moves one type.
    #[error("source element type {src} and destination element type {dst} differ")]
    ElementTypes {
        /// The source's element type.
        src: DType,
        /// The destination's element type.
        dst: DType,
    },
    /// A run that is empty or not made of whole elements.
    #[error(
        "statement {stmt}: a run of {bytes} bytes is not a positive multiple of the size \
         ({size} bytes) of {dtype}"
    )]
    BadRun {
        /// The statement's index.
        stmt: usize,
        /// The run's length in bytes.
        bytes: u64,
        /// The element type.
        dtype: DType,
        /// Its size in bytes.
        size: u64,
    },
    /// An offset or stride product that does not fit in 64-bit signed arithmetic.
    #[error("statement {stmt}: {what} overflows 64-bit signed arithmetic")]
    Overflow {
        /// The statement's index.
        stmt: usize,
        /// What overflows (`the run length`, ...).
        what: &'static str,
    },
    /// A sum from +0.0, or an accumulation with a window, whose reduction loops have more
    /// points than code generation unrolls (`relayout_ir::MAX_SUM_TERMS`; the verifier's
    /// `sum-terms` check).
    #[error(
        "statement {stmt}: a sum from +0.0 or with a window adds more than {} terms per run",
        relayout_ir::MAX_SUM_TERMS
    )]
    SumTerms {
        /// The statement's index.
        stmt: usize,
    },
    /// A band member whose nest (after code generation took its reduction loops into the
    /// body) has fewer loops than the band shares; the verifier's band check excludes it.
    #[error("statement {stmt}: {loops} loops outside its body, fewer than the band's {depth}")]
    BandDepth {
        /// The statement's index.
        stmt: usize,
        /// The loops of its nest.
        loops: usize,
        /// The loops its band shares.
        depth: usize,
    },
    /// The generated code does its address arithmetic on 64-bit pointers.
    #[error(
        "relayout generates code for 64-bit targets only; this target has {bits}-bit pointers"
    )]
    PointerWidth {
        /// The target's pointer width.
        bits: u8,
    },
    /// The module refused to declare a helper function.
    #[error("cannot declare helper function `{symbol}`: {message}")]
    Import {
        /// The helper's symbol.
        symbol: &'static str,
        /// The module's error.
        message: String,
    },
}
