//! What a kernel handle holds: one compiled op, or a chain of ops composed into one kernel
//! (`relayout_compile_chain`). Both run, print their stages and answer the movement question
//! the same way; this enum forwards to whichever it is.

use relayout::ir::TensorType;
use relayout::{CompiledChain, CompiledOp, Error, Movement, Stages};

/// A compiled op or chain.
pub(crate) enum Compiled {
    Op(CompiledOp),
    Chain(CompiledChain),
}

impl Compiled {
    pub(crate) fn input_type(&self) -> &TensorType {
        match self {
            Compiled::Op(k) => k.input_type(),
            Compiled::Chain(k) => k.input_type(),
        }
    }

    pub(crate) fn output_type(&self) -> &TensorType {
        match self {
            Compiled::Op(k) => k.output_type(),
            Compiled::Chain(k) => k.output_type(),
        }
    }

    pub(crate) fn stages(&self) -> &Stages {
        match self {
            Compiled::Op(k) => k.stages(),
            Compiled::Chain(k) => k.stages(),
        }
    }

    pub(crate) fn movement(&self) -> Movement {
        match self {
            Compiled::Op(k) => k.movement(),
            Compiled::Chain(k) => k.movement(),
        }
    }

    /// Runs on the calling thread (`threads` 0 or 1) or split over up to `threads` threads.
    pub(crate) fn run(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), Error> {
        match (self, threads) {
            (Compiled::Op(k), 0 | 1) => k.run(src, dst),
            (Compiled::Op(k), n) => k.run_threaded(src, dst, n),
            (Compiled::Chain(k), 0 | 1) => k.run(src, dst),
            (Compiled::Chain(k), n) => k.run_threaded(src, dst, n),
        }
    }
}
