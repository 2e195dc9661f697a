//! The verifier.
use crate::{Kernel, LoopKernel};

#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{message}")]
pub struct VerifyError {
    pub message: String,
}

pub fn verify_kernel(kernel: &Kernel) -> Result<(), VerifyError> {
    todo!("{}", kernel.name)
}

pub fn verify_loop_kernel(kernel: &LoopKernel) -> Result<(), VerifyError> {
    todo!("{}", kernel.name)
}
