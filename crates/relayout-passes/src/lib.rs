//! # relayout-passes
//!
//! Everything between a lowered op and code generation: passes on the index-map IR that
//! remove `floordiv`, `mod` and guards, the lowering of index maps to loop nests, passes on
//! the loop IR, and the machinery to run them.
//!
//! ## The model
//!
//! A pass is a pure function from IR to IR ([`Pass`]); IR flows as
//! [`relayout_ir::AnyKernel`], either level. Passes are registered in one table, [`PASSES`]
//! (name, one-line summary, constructor), and composed into a [`Pipeline`], written as a
//! string such as `canonicalize,split-dims,drop-unit-dims` that prints back to itself. A
//! [`PassManager`] runs a pipeline, verifies the IR after every pass (on by default in debug
//! builds and tests), and can hand back the IR after every pass with MLIR's header for
//! `--print-after-all`.
//!
//! The default pipeline ([`DEFAULT_PIPELINE`]) turns every lowered op into a loop kernel:
//!
//! 1. `canonicalize` simplifies every map with the ranges of the dims
//!    (`(d0 * 4 + d1) floordiv 4 -> d0` when `d1` is in `[0, 4)`);
//! 2. `split-dims` replaces dims read through `floordiv` and `mod` by their digits, which
//!    turns SpaceToDepth into a strided 6-D transpose;
//! 3. `split-guards` turns guarded statements (padding, Col2Im's borders) into guard-free
//!    ones over sub-boxes, and shrinks the padding fill to what no copy overwrites;
//! 4. `peel-dims` removes whatever `floordiv`, `mod` or guard is left, by brute force;
//! 5. `drop-unit-dims` removes dims with one value;
//! 6. `linearize` lowers to loop nests with byte strides;
//! 7. `output-stationary` turns consecutive accumulations (Col2Im's kernel positions) into one
//!    accumulation per output cell that adds all of the cell's contributions, in order, over
//!    innermost reduction loops, which code generation sums in registers;
//! 8. `coalesce`, `interchange`, `coalesce` merge contiguous loops and put a unit-stride loop
//!    innermost (reduction loops stay innermost and in order), and run the loops that step
//!    back across the source backwards, so that every loop reads forward;
//! 9. `tile-transposes` strip-mines (and for large planes cache-blocks) the source-contiguous
//!    loop of true transposes of 4- and 8-byte elements, for codegen's register transposes;
//! 10. `pair-phases` merges the even- and odd-element phases of sums from +0.0 (a stride-2
//!     Col2Im's columns) into one sum with a loop of two phases, which code generation sums
//!     as whole vectors and stores interleaved;
//! 11. `fuse-nests` shares the outer loops of consecutive statements;
//! 12. `reroll` merges statements that are one statement moved by a constant step (the pieces
//!     on opposite sides of a padded or bordered box) into one with a loop over the steps,
//!     which compiles once instead of once per piece;
//! 13. `long-runs-first` moves, inside each band, the copies and fills with the longest runs
//!     in front of shorter ones they commute with, so that a band iteration's lines are first
//!     written in address order (Im2Col's rows before their edge elements);
//! 14. `group-alike` moves, inside each band, each member next to the last one before it that
//!     is the same statement but for its offsets and the counts of its own loops, where they
//!     commute, so that code generation runs such a group through one body (a 3-D
//!     Col2Im's sums of the three kernel depths).
//!
//! Every pass preserves the meaning of the kernel as the interpreter
//! ([`relayout_ir::interpret`]) defines it, which the tests check on random data for every
//! pass, on hand-written kernels, on every op lowering and on random kernels. The one
//! liberty: passes that reorder the points of an `accumulate` treat addition as commutative,
//! which is exact for integers and changes only the rounding for floats.
//!
//! ```
//! use relayout_passes::{default_pipeline, Pipeline};
//!
//! let p = Pipeline::parse("canonicalize,split-dims,drop-unit-dims").unwrap();
//! assert_eq!(p.to_string(), "canonicalize,split-dims,drop-unit-dims");
//! assert!(Pipeline::parse("canonicalise").is_err());
//! assert_eq!(Pipeline::parse(&default_pipeline().to_string()).unwrap(), default_pipeline());
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod boxes;
pub mod compose;
mod error;
mod manager;
mod pass;
pub mod passes;
mod pipeline;
mod registry;
mod simplify;
mod stmt;
mod sum;

pub use compose::{Chain, ComposeError};
pub use error::PassError;
pub use manager::{IrDump, PassManager, PassTiming, PipelineRun};
pub use pass::{Level, Pass};
pub use passes::{FuseNests, GroupAlike, LongRunsFirst, OutputStationary, Reroll};
pub use pipeline::{default_loop_pipeline, default_pipeline, Pipeline, DEFAULT_PIPELINE};
pub use registry::{find_pass, PassInfo, PASSES};

use relayout_ir::{Kernel, LoopKernel};

/// Runs the index-map part of the default pipeline (everything before `linearize`): the
/// kernel that `lower_to_loops` linearizes.
pub fn optimize_index(k: &Kernel) -> Result<Kernel, PassError> {
    PassManager::new(default_pipeline().index_prefix()).run_index(k)
}

/// Runs the whole default pipeline: index-map passes, `linearize`, loop passes.
pub fn lower_to_loops(k: &Kernel) -> Result<LoopKernel, PassError> {
    PassManager::new(default_pipeline()).run_to_loops(k)
}

/// Runs the whole default pipeline once and returns both what [`optimize_index`] and what
/// [`lower_to_loops`] return, without running the index-map passes twice.
pub fn optimize_and_lower(k: &Kernel) -> Result<(Kernel, LoopKernel), PassError> {
    optimize_and_lower_timed(k).map(|(optimized, loops, _)| (optimized, loops))
}

/// [`optimize_and_lower`], with how long each pass took.
pub fn optimize_and_lower_timed(
    k: &Kernel,
) -> Result<(Kernel, LoopKernel, Vec<PassTiming>), PassError> {
    use relayout_ir::AnyKernel;
    let pipeline = default_pipeline();
    let wrong = |want, got| PassError::WrongOutputLevel {
        pipeline: pipeline.to_string(),
        want,
        got,
    };
    let index = PassManager::new(pipeline.index_prefix());
    let (optimized, mut timings) = index.run_timed(AnyKernel::Index(k.clone()));
    let optimized = match optimized? {
        AnyKernel::Index(k) => k,
        AnyKernel::Loops(_) => return Err(wrong(Level::Index, Level::Loops)),
    };
    // The last index pass verified its output, which is this pipeline's input.
    let rest = PassManager::new(pipeline.after_index_prefix()).verify_input(false);
    let (loops, more) = rest.run_timed(AnyKernel::Index(optimized.clone()));
    timings.extend(more);
    match loops? {
        AnyKernel::Loops(loops) => Ok((optimized, loops, timings)),
        AnyKernel::Index(_) => Err(wrong(Level::Loops, Level::Index)),
    }
}
