//! The [`Pass`] trait and the two IR levels passes run on.

use crate::PassError;
use relayout_ir::{AnyKernel, Kernel, LoopKernel};
use std::fmt;

/// The level of an IR: index-map ([`Kernel`]) or loop ([`LoopKernel`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Level {
    /// The index-map IR ([`Kernel`]).
    Index,
    /// The loop IR ([`LoopKernel`]).
    Loops,
}

impl Level {
    /// The level of `ir`.
    pub fn of(ir: &AnyKernel) -> Level {
        match ir {
            AnyKernel::Index(_) => Level::Index,
            AnyKernel::Loops(_) => Level::Loops,
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Index => "index-map",
            Level::Loops => "loop",
        })
    }
}

/// A transformation of IR. Passes hold no state between runs: a pass is a unit struct, and
/// running it twice on the same input gives the same output.
pub trait Pass {
    /// The kebab-case name used in pipeline strings (`split-dims`).
    fn name(&self) -> &'static str;
    /// The level of IR the pass accepts.
    fn input_level(&self) -> Level;
    /// The level of IR the pass produces (differs from the input only for lowerings).
    fn output_level(&self) -> Level {
        self.input_level()
    }
    /// Runs the pass. Given IR of the wrong level, returns [`PassError::WrongLevel`].
    fn run(&self, ir: AnyKernel) -> Result<AnyKernel, PassError>;
}

/// A pass on index-map IR that keeps it at that level. It is given the kernel to keep: a
/// statement it leaves as it is moves to the output instead of being copied (each copy and
/// drop of a statement is a tree of boxed expressions, a measurable part of a compile).
pub(crate) trait IndexPass {
    const NAME: &'static str;
    fn run_index(&self, k: Kernel) -> Result<Kernel, PassError>;
}

/// A pass on loop IR that keeps it at that level.
pub(crate) trait LoopPass {
    const NAME: &'static str;
    /// Whether the pass reads the bands `fuse-nests` made and keeps them right itself;
    /// otherwise it is given the kernel without bands.
    const KEEPS_BANDS: bool = false;
    fn run_loops(&self, k: &LoopKernel) -> Result<LoopKernel, PassError>;
}

/// Implements [`Pass`] for an [`IndexPass`] or a [`LoopPass`].
macro_rules! impl_pass {
    (index $t:ty) => {
        impl $crate::Pass for $t {
            fn name(&self) -> &'static str {
                <$t as $crate::pass::IndexPass>::NAME
            }
            fn input_level(&self) -> $crate::Level {
                $crate::Level::Index
            }
            fn run(
                &self,
                ir: relayout_ir::AnyKernel,
            ) -> Result<relayout_ir::AnyKernel, $crate::PassError> {
                let k = $crate::pass::expect_index(self.name(), ir)?;
                $crate::pass::IndexPass::run_index(self, k).map(relayout_ir::AnyKernel::Index)
            }
        }
    };
    (loops $t:ty) => {
        impl $crate::Pass for $t {
            fn name(&self) -> &'static str {
                <$t as $crate::pass::LoopPass>::NAME
            }
            fn input_level(&self) -> $crate::Level {
                $crate::Level::Loops
            }
            fn run(
                &self,
                ir: relayout_ir::AnyKernel,
            ) -> Result<relayout_ir::AnyKernel, $crate::PassError> {
                // A loop pass starts from the unfused kernel unless it keeps bands right itself:
                // dropping bands never changes what a verified kernel computes, and only
                // `fuse-nests` makes them.
                let k = $crate::pass::expect_loops(self.name(), ir)?;
                let k = if <$t as $crate::pass::LoopPass>::KEEPS_BANDS {
                    k
                } else {
                    k.unfused()
                };
                $crate::pass::LoopPass::run_loops(self, &k).map(relayout_ir::AnyKernel::Loops)
            }
        }
    };
}
pub(crate) use impl_pass;

/// The index-map kernel, or the error a pass named `pass` returns for loop IR.
pub(crate) fn expect_index(pass: &'static str, ir: AnyKernel) -> Result<Kernel, PassError> {
    match ir {
        AnyKernel::Index(k) => Ok(k),
        AnyKernel::Loops(_) => Err(PassError::WrongLevel {
            pass,
            expected: Level::Index,
            given: Level::Loops,
        }),
    }
}

/// The loop kernel, or the error a pass named `pass` returns for index-map IR.
pub(crate) fn expect_loops(pass: &'static str, ir: AnyKernel) -> Result<LoopKernel, PassError> {
    match ir {
        AnyKernel::Loops(k) => Ok(k),
        AnyKernel::Index(_) => Err(PassError::WrongLevel {
            pass,
            expected: Level::Loops,
            given: Level::Index,
        }),
    }
}
