//! The one parser of both IRs: the inverse of `print`.
use crate::{Kernel, LoopKernel};

/// Either level of IR, as read from text.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum AnyKernel {
    Index(Kernel),
    Loops(LoopKernel),
}

/// A parse error with the 1-based line and column where it was found.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

pub fn parse_kernel(text: &str) -> Result<Kernel, ParseError> {
    todo!("{text}")
}

pub fn parse_loop_kernel(text: &str) -> Result<LoopKernel, ParseError> {
    todo!("{text}")
}

pub fn parse_any(text: &str) -> Result<AnyKernel, ParseError> {
    todo!("{text}")
}
