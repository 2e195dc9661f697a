//! The one error type of this crate. Every variant names the pass (or pipeline element) it
//! concerns and the values involved.

use crate::Level;
use relayout_ir::VerifyError;

/// Why a pipeline could not be parsed or run.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum PassError {
    /// A pipeline string names a pass that is not in [`crate::PASSES`].
    #[error("unknown pass `{name}` in pipeline `{pipeline}`; known passes: {known}")]
    UnknownPass {
        /// The unknown name.
        name: String,
        /// The whole pipeline string.
        pipeline: String,
        /// The known pass names, comma-separated.
        known: String,
    },
    /// A pipeline string has an empty element (`canonicalize,,split-dims`).
    #[error("empty pass name at position {position} of pipeline `{pipeline}`")]
    EmptyPassName {
        /// The whole pipeline string.
        pipeline: String,
        /// The element's position, from 0.
        position: usize,
    },
    /// A pass was given IR of the other level.
    #[error("pass `{pass}` runs on {expected} IR but was given {given} IR")]
    WrongLevel {
        /// The pass.
        pass: &'static str,
        /// The level it runs on.
        expected: Level,
        /// The level it was given.
        given: Level,
    },
    /// A pipeline ended at a level other than the one its caller needs.
    #[error("pipeline `{pipeline}` produces {got} IR, but {want} IR was needed")]
    WrongOutputLevel {
        /// The pipeline, as a string.
        pipeline: String,
        /// The level the caller needs.
        want: Level,
        /// The level the pipeline produced.
        got: Level,
    },
    /// A pass could not transform its input, for the reason given.
    #[error("pass `{pass}` failed: {message}")]
    Failed {
        /// The pass.
        pass: &'static str,
        /// Why it failed, with the values involved.
        message: String,
    },
    /// A pass would need more statements than its budget to express a valid kernel in the
    /// loop IR, whose loops are boxes: not a bug, a limit. A padded Im2Col or Col2Im takes
    /// about one statement per kernel position for its borders (the rows of each position
    /// start and end at other output columns), so a kernel of more than a few thousand
    /// positions (128x128) can pass the budget.
    #[error("pass `{pass}` failed: {stmt} needs more than {limit} statements to remove its floordiv, mod and guards")]
    TooManyStatements {
        /// The pass.
        pass: &'static str,
        /// The statement it was cutting, printed with its index.
        stmt: String,
        /// The budget of statements per kernel.
        limit: usize,
    },
    /// A pass was given an access that leaves its tensor, found while lowering it: an offset
    /// or a stride that does not fit in `i64`, or an access to a tensor with no element. The
    /// verifier rejects such a kernel (`in-bounds`), so only an unverified input gets here;
    /// for a kernel whose accesses are in bounds these values always fit.
    #[error("pass `{pass}` failed: {message}")]
    OutOfBounds {
        /// The pass.
        pass: &'static str,
        /// Which access, with the values involved.
        message: String,
    },
    /// The input of the pipeline failed verification.
    #[error("the input IR fails verification:\n{error}")]
    InvalidInput {
        /// What the verifier found.
        error: VerifyError,
    },
    /// The output of a pass failed verification: a bug in that pass.
    #[error("the IR after pass `{pass}` fails verification:\n{error}")]
    Verification {
        /// The pass whose output is wrong.
        pass: &'static str,
        /// What the verifier found.
        error: VerifyError,
    },
}
