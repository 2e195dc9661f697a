//! [`AnyKernel`]: a kernel of either IR level, as read from text by [`parse_any`] or handled by
//! tools that accept both (`relayout opt`, the pass manager).
//!
//! [`parse_any`]: crate::parse_any

use crate::{verify_kernel, verify_loop_kernel, Kernel, LoopKernel, TensorType, VerifyError};
use std::fmt;

/// Either level of IR.
#[derive(Clone, PartialEq, Eq)]
pub enum AnyKernel {
    /// An index-map kernel (`kernel @name ...`).
    Index(Kernel),
    /// A loop kernel (`loops @name ...`).
    Loops(LoopKernel),
}

impl AnyKernel {
    /// The kernel's name (without the `@`).
    pub fn name(&self) -> &str {
        match self {
            AnyKernel::Index(k) => &k.name,
            AnyKernel::Loops(k) => &k.name,
        }
    }

    /// The type of the tensor the kernel reads.
    pub fn src(&self) -> &TensorType {
        match self {
            AnyKernel::Index(k) => &k.src,
            AnyKernel::Loops(k) => &k.src,
        }
    }

    /// The type of the tensor the kernel writes.
    pub fn dst(&self) -> &TensorType {
        match self {
            AnyKernel::Index(k) => &k.dst,
            AnyKernel::Loops(k) => &k.dst,
        }
    }

    /// The index-map kernel, if this is one.
    pub fn as_index(&self) -> Option<&Kernel> {
        match self {
            AnyKernel::Index(k) => Some(k),
            AnyKernel::Loops(_) => None,
        }
    }

    /// The loop kernel, if this is one.
    pub fn as_loops(&self) -> Option<&LoopKernel> {
        match self {
            AnyKernel::Loops(k) => Some(k),
            AnyKernel::Index(_) => None,
        }
    }

    /// The level's name as the printer's keyword says it: `kernel` or `loops`.
    pub fn keyword(&self) -> &'static str {
        match self {
            AnyKernel::Index(_) => "kernel",
            AnyKernel::Loops(_) => "loops",
        }
    }

    /// Verifies the kernel with its level's verifier.
    pub fn verify(&self) -> Result<(), VerifyError> {
        match self {
            AnyKernel::Index(k) => verify_kernel(k),
            AnyKernel::Loops(k) => verify_loop_kernel(k),
        }
    }
}

impl From<Kernel> for AnyKernel {
    fn from(k: Kernel) -> AnyKernel {
        AnyKernel::Index(k)
    }
}

impl From<LoopKernel> for AnyKernel {
    fn from(k: LoopKernel) -> AnyKernel {
        AnyKernel::Loops(k)
    }
}

/// The printer's text of the kernel, which [`parse_any`](crate::parse_any) reads back.
impl fmt::Display for AnyKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyKernel::Index(k) => fmt::Display::fmt(k, f),
            AnyKernel::Loops(k) => fmt::Display::fmt(k, f),
        }
    }
}

/// The printed IR, as for [`Kernel`] and [`LoopKernel`]: one writer for both.
impl fmt::Debug for AnyKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AnyKernel::Index(k) => fmt::Debug::fmt(k, f),
            AnyKernel::Loops(k) => fmt::Debug::fmt(k, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_any;

    #[test]
    fn accessors_and_text() {
        let text = "kernel @k(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {\n  copy %dst[d0] = %src[d0]\n      for d0 in 0 to 2\n}\n";
        let k = parse_any(text).unwrap();
        assert_eq!((k.name(), k.keyword()), ("k", "kernel"));
        assert_eq!(k.src().to_string(), "tensor<2xf32>");
        assert_eq!(k.dst().to_string(), "tensor<2xf32>");
        assert!(k.as_index().is_some() && k.as_loops().is_none());
        assert_eq!(k.to_string(), text);
        assert_eq!(format!("{k:?}"), format!("{:?}", k.as_index().unwrap()));
        k.verify().unwrap();
    }
}
