//! # relayout
//!
//! relayout compiles tensor relayout ops (TensorFlow's SpaceToDepth, DepthToSpace,
//! SpaceToBatch(ND), BatchToSpace(ND), ONNX's DepthToSpace and Col2Im, and the ops around them:
//! Transpose, Pad, Slice, Tile, Reshape and Im2Col) into machine code specialised for one fixed
//! shape and element type, and can show every step on the way.
//!
//! ## The model
//!
//! An op description ([`Op`] plus the input [`TensorType`]) goes through four
//! stages, each of which prints as text:
//!
//! 1. **Lowering** ([`Op::lower`]): the op becomes an *index-map kernel* ([`ir::Kernel`]): for
//!    every point of a box of integer points, move one element from `%src[map]` to `%dst[map]`,
//!    with affine maps written as MLIR writes them (`d1 * 2 + d3 floordiv 4`). This is the
//!    op's documented semantics, unsimplified ([`Stages::lowered`]).
//! 2. **Simplification**: range-aware passes rewrite the maps until no `floordiv`, `mod` or
//!    guard is left: SpaceToDepth becomes the 6-D transpose its documentation describes
//!    ([`Stages::optimized`]).
//! 3. **Linearisation and loop passes**: the kernel becomes a *loop kernel*
//!    ([`ir::LoopKernel`]): per statement, a loop nest with byte strides that moves a
//!    contiguous run of bytes at each point ([`Stages::loops`]).
//! 4. **Code generation**: after the verifier has proven every access in bounds, the loop
//!    kernel becomes one Cranelift function, with an entry per statement or fused band
//!    ([`clif_text`]), which Cranelift compiles to machine code for this machine
//!    ([`vcode_text`], [`asm_text`]).
//!
//! The loop IR is also where the graph-level questions are answered ([`Movement`]: is the op
//! a view, a contiguous copy, a transpose, a strided view or a gather?), and chains of ops can
//! be composed into one index-map kernel before stage 2 ([`compile_chain`]; "fusion" means only
//! the loop fusion of stage 3, `fuse-nests`). IR text, hand-written or printed by a pass
//! ([`opt`]), compiles too: index-map IR with [`compile_kernel`], loop IR as it is with
//! [`compile_loops`].
//!
//! ## The API
//!
//! [`compile`] runs all four stages and returns a [`CompiledOp`], cached by op and input type,
//! which runs on byte slices ([`CompiledOp::run`]) or typed slices ([`CompiledOp::run_typed`])
//! and keeps the IR of every stage ([`CompiledOp::stages`]):
//!
//! ```
//! use relayout::ir::{DType, TensorType};
//! use relayout::{compile, DataFormat, Op};
//!
//! // The 4x4 example of TensorFlow's SpaceToDepth documentation.
//! let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
//! let kernel = compile(&op, &TensorType::new(DType::F32, [1, 4, 4, 1]))?;
//! assert_eq!(kernel.output_type(), &TensorType::new(DType::F32, [1, 2, 2, 4]));
//!
//! let src: Vec<f32> = [1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16]
//!     .map(|v| v as f32)
//!     .to_vec();
//! let mut dst = vec![0.0f32; 16];
//! kernel.run_typed(&src, &mut dst)?;
//! assert_eq!(dst, (1..=16).map(|v| v as f32).collect::<Vec<_>>());
//!
//! // The IR of every stage prints as text; the loop IR is what was compiled.
//! let stages = kernel.stages();
//! assert!(stages.lowered.to_string().contains("floordiv"));
//! assert!(!stages.optimized.to_string().contains("floordiv"));
//! println!("{}", stages.loops);
//! assert!(stages.loops.to_string().starts_with("loops @space_to_depth"));
//! // ... and so do the Cranelift IR and the machine code.
//! assert!(relayout::clif_text(&stages.loops)?.contains("function %space_to_depth("));
//! assert!(relayout::vcode_text(&stages.loops)?.contains("ret"));
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! Ops are built with the TensorFlow and ONNX attribute names, either as typed values (the
//! variants of [`Op`]) or from a name and attributes with the documented defaults
//! ([`Op::from_attrs`], [`attrs_from_json`], [`parse_op_spec`]). An invalid description is an
//! [`Error`] whose [`category`](Error::category) is the conformance format's category string:
//!
//! ```
//! use relayout::ir::{DType, TensorType};
//! use relayout::{compile, parse_op_spec, Op};
//!
//! let spec = parse_op_spec(r#"DepthToSpace {block_size = 2, mode = "CRD"} : tensor<1x8x3x3xf32>"#)?;
//! let op = Op::from_attrs(&spec.name, &spec.attrs)?;
//! // CRD needs NCHW, and data_format defaults to NHWC, as in TensorFlow.
//! let err = compile(&op, &spec.input).err().unwrap();
//! assert_eq!(err.category(), Some("bad_mode"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A graph optimizer asks [`CompiledOp::movement`] what an op does with the bytes, and
//! [`CompiledOp::bytes_moved`] what it costs:
//!
//! ```
//! use relayout::ir::{DType, TensorType};
//! use relayout::{compile, DataFormat, DepthToSpaceMode, Movement, Op};
//!
//! let d2s = |format| Op::DepthToSpace { block_size: 2, data_format: format, mode: DepthToSpaceMode::Dcr };
//!
//! // On a one-pixel NHWC image the block is the whole depth, already in output order: a view.
//! let one_pixel = compile(&d2s(DataFormat::Nhwc), &TensorType::new(DType::F32, [1, 1, 1, 8]))?;
//! assert_eq!(one_pixel.movement(), Movement::NoMovement);
//!
//! // In NCHW, the channels (by, bx, c) become (c, by, bx): a transpose.
//! let nchw = compile(&d2s(DataFormat::Nchw), &TensorType::new(DType::F32, [1, 8, 1, 1]))?;
//! assert_eq!(nchw.movement(), Movement::Permutation { shape: vec![4, 2], perm: vec![1, 0] });
//! assert_eq!(nchw.movement().to_string(), "permutation: input.reshape(4, 2).transpose(1, 0)");
//! assert_eq!(nchw.bytes_moved(), 2 * 32);
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! [`compile_chain`] composes ops applied one after another into one kernel: one pass over the
//! data and no intermediate tensor. The result is a [`CompiledChain`], with the same methods:
//!
//! ```
//! use relayout::ir::{DType, TensorType};
//! use relayout::{compile_chain, DataFormat, Op};
//!
//! // Pad each spatial dim by one on both sides, split into 2x2 blocks, then fold each
//! // block's pixels into the channels.
//! let s2b = Op::SpaceToBatchNd { block_shape: vec![2, 2], paddings: vec![vec![1, 1]; 2] };
//! let s2d = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
//! let input = TensorType::new(DType::U8, [1, 6, 6, 1]);
//! let chain = compile_chain(&[s2b, s2d], &input)?;
//! assert_eq!(chain.output_type(), &TensorType::new(DType::U8, [4, 2, 2, 4]));
//!
//! let src: Vec<u8> = (1..=36).collect();
//! let out = chain.run_to_vec(&src)?;
//! // Batch 0 holds the even rows and columns of the padded image, so its first output pixel
//! // folds the padded image at (0, 0), (0, 2), (2, 0) and (2, 2): three zeros of padding,
//! // then input (1, 1), which is 8.
//! assert_eq!(&out[..4], &[0, 0, 0, 8]);
//! println!("{}", chain.stages().loops);
//! # Ok::<(), relayout::Error>(())
//! ```
//!
//! Everything is safe to call from any thread: compiled code is shared behind an `Arc`, and
//! [`CompiledOp::run_threaded`] splits one run over a process-wide thread pool.
//!
//! ## Cargo features
//!
//! - `disas` (off by default): [`asm_text`] disassembles the generated machine code with
//!   capstone (through Cranelift's own `disas` feature). capstone is a C library, so this
//!   feature needs a C compiler. Without it, [`asm_text`] returns an error that says so, and
//!   [`vcode_text`] gives Cranelift's listing of the same instructions.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod analysis;
mod cache;
pub mod chain;
pub mod conformance;
pub mod explain;
mod op_syntax;
mod runner;
mod tensor_text;
mod timing;

pub use analysis::Movement;
pub use cache::{cache_len, set_cache_capacity, DEFAULT_CAPACITY};
pub use chain::{
    compile_chain, compile_kernel, compile_loops, compose_chain, ChainError, CompiledChain,
    CompiledLoops,
};
pub use explain::{explain_svg, MAX_DRAWN_ELEMENTS};

/// The name [`CompiledChain`] had before "fusion" came to mean only loop fusion (`fuse-nests`).
#[deprecated(since = "0.1.0", note = "renamed `CompiledChain`")]
pub type FusedOp = CompiledChain;
/// The name [`ChainError`] had before "fusion" came to mean only loop fusion (`fuse-nests`).
#[deprecated(since = "0.1.0", note = "renamed `ChainError`")]
pub type FuseError = ChainError;
/// The name [`compose_chain`] had before "fusion" came to mean only loop fusion (`fuse-nests`).
#[deprecated(since = "0.1.0", note = "renamed `compose_chain`")]
pub fn fuse_chain(ops: &[Op], input: &TensorType) -> Result<Kernel, ChainError> {
    compose_chain(ops, input)
}
pub use op_syntax::{parse_chained_op, parse_op_spec, parse_tensor_type, OpSpec, SyntaxError};
pub use relayout_codegen::Helper;
/// The two IRs (index-map [`Kernel`], loop [`LoopKernel`]),
/// element and tensor types, the printer, parser, verifier and interpreter: the crate
/// `relayout-ir`, documented here so that `cargo doc -p relayout --no-deps` shows it.
#[doc(inline)]
pub use relayout_ir as ir;
pub use relayout_jit::{
    AotObject, Element, Split, SplitReport, StageTiming, StmtSplit, HAS_DISASSEMBLER,
};
pub use relayout_ops::{
    known_attributes, AttrValue, Attrs, DataFormat, DepthToSpaceMode, ErrorCategory, Op, OpError,
    PadMode, PadValue, OP_NAMES,
};
/// The passes, their registry, pipeline strings and the pass manager: the crate
/// `relayout-passes`, documented here as [`ir`] is.
#[doc(inline)]
pub use relayout_passes as passes;
pub use tensor_text::{format_element, format_tensor};
pub use timing::{Timing, Timings};

use relayout_ir::{Kernel, LoopKernel, TensorType};

// The README's Rust example runs as a doctest, so that what a new user copies first compiles
// and does what the README says.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
use relayout_jit::CompiledKernel;
use runner::Runner;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Anything that can go wrong between an op description and its result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The op description is invalid for this input (the conformance error categories).
    #[error(transparent)]
    Op(#[from] OpError),
    /// A pass failed or its output did not verify: a bug in relayout, never in the input,
    /// except for [`relayout_passes::PassError::TooManyStatements`], a valid op that the loop
    /// IR would need more statements to express than the passes make (a padded Im2Col or
    /// Col2Im whose kernel has thousands of positions).
    #[error(transparent)]
    Pass(#[from] relayout_passes::PassError),
    /// Code generation or the JIT failed, including a kernel the verifier could not prove in
    /// bounds.
    #[error(transparent)]
    Jit(#[from] relayout_jit::JitError),
    /// `run` was given buffers of the wrong length or type.
    #[error(transparent)]
    Run(#[from] relayout_jit::RunError),
    /// Translating the loop IR to Cranelift IR failed: a bug in relayout, never in the input.
    #[error(transparent)]
    Codegen(#[from] relayout_codegen::CodegenError),
    /// Options of a printing function are invalid (an unknown pass name in
    /// [`PrintAfter::passes`]).
    #[error("{0}")]
    Options(String),
    /// IR text given to [`opt`] does not parse.
    #[error(transparent)]
    Parse(#[from] relayout_ir::ParseError),
    /// [`compile_chain`] was given a chain it cannot compose, or an op of the chain is invalid for
    /// the type the chain gives it ([`Error::category`] is then the op's category).
    #[error(transparent)]
    Chain(#[from] ChainError),
}

/// Why [`opt`] or [`opt_with`] failed: the error, and the IR dumps printed before it (empty
/// when no dump was selected). It displays as the dumps followed by the error, which is what
/// `relayout opt` prints.
///
/// ```
/// use relayout::{opt, Error};
///
/// let err = opt("kernel @k(", None, false).unwrap_err();
/// assert!(matches!(err.error, Error::Parse(_)) && err.output.is_empty());
/// let err = opt("kernel @k(", Some("no-such-pass"), false).unwrap_err();
/// assert!(matches!(err.error, Error::Parse(_)), "the text is read first");
/// # Ok::<(), relayout::OptError>(())
/// ```
#[derive(Debug)]
pub struct OptError {
    /// The selected dumps up to the failure.
    pub output: String,
    /// What failed: bad IR text ([`Error::Parse`]), a bad pipeline or a failing pass
    /// ([`Error::Pass`]), or bad options ([`Error::Options`]).
    pub error: Error,
}

impl std::fmt::Display for OptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.output, self.error)
    }
}

impl std::error::Error for OptError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<E: Into<Error>> From<E> for OptError {
    fn from(e: E) -> OptError {
        OptError {
            output: String::new(),
            error: e.into(),
        }
    }
}

impl Error {
    /// The conformance category of an invalid op description (`not_divisible`, ...), or `None`
    /// for errors that are not about the op description.
    pub fn category(&self) -> Option<&'static str> {
        match self {
            Error::Op(e) => Some(e.category()),
            Error::Chain(e) => e.category(),
            _ => None,
        }
    }
}

/// Every printable stage of one op's compilation.
#[derive(Clone, Debug)]
pub struct Stages {
    /// The op's semantics as an index-map kernel, before any pass.
    pub lowered: Kernel,
    /// The index-map kernel after the index-level passes of the default pipeline.
    pub optimized: Kernel,
    /// The final loop kernel.
    pub loops: LoopKernel,
}

/// Lowers `op` for `input` and runs the default pipeline, without generating code.
pub fn lower(op: &Op, input: &TensorType) -> Result<Stages, Error> {
    let lowered = op.lower(input)?;
    let (optimized, loops) = relayout_passes::optimize_and_lower(&lowered)?;
    Ok(Stages {
        lowered,
        optimized,
        loops,
    })
}

/// The Cranelift IR of a loop kernel's function (the one the JIT compiles), as text, after the
/// kernel's schedule as `;` comments: what each entry runs, and what code generation made of
/// each statement ([`codegen_notes`]). The text is the same on every machine (it
/// is generated for a fixed 64-bit System V target), so it is fit for snapshot tests.
pub fn clif_text(loops: &LoopKernel) -> Result<String, Error> {
    Ok(relayout_codegen::clif_text(loops)?)
}

/// One line per statement of `loops` on what code generation makes of it: 16-byte shuffle
/// blocks, streaming stores, vector runs, libc calls or scalar moves (what `relayout lower
/// --emit clif` prints as a `; codegen:` comment under each statement).
///
/// ```
/// use relayout::ir::{DType, TensorType};
/// use relayout::{lower, DataFormat, Op};
///
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let stages = lower(&op, &TensorType::new(DType::F32, [1, 4, 4, 1]))?;
/// // Its runs of 8 bytes are interleaved in registers.
/// assert!(relayout::codegen_notes(&stages.loops)[0].contains("shuffle blocks"));
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn codegen_notes(loops: &LoopKernel) -> Vec<String> {
    (0..loops.stmts.len())
        .filter_map(|i| relayout_codegen::describe(loops, i))
        .collect()
}

/// Cranelift's listing of the machine instructions the function of a loop kernel compiles
/// to on this machine (its VCode, after register allocation): real registers and mnemonics in
/// Cranelift's notation, available in every build. See [`asm_text`] for the disassembly.
pub fn vcode_text(loops: &LoopKernel) -> Result<String, Error> {
    Ok(relayout_jit::machine_code_text(
        loops,
        relayout_jit::Listing::VCode,
    )?)
}

/// The disassembly (AT&T syntax, by capstone) of the machine code the function of a loop
/// kernel compiles to on this machine: the instructions [`CompiledOp::run`] executes, with
/// calls shown as relocations.
///
/// Only builds with the `disas` feature have a disassembler ([`HAS_DISASSEMBLER`]); in the
/// others this returns an error that says how to get one, and [`vcode_text`] lists the same
/// instructions in Cranelift's notation.
///
/// ```
/// use relayout::ir::{DType, TensorType};
/// use relayout::{lower, DataFormat, Op};
///
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let stages = lower(&op, &TensorType::new(DType::F32, [1, 4, 4, 1]))?;
/// match relayout::asm_text(&stages.loops) {
///     Ok(asm) => assert!(relayout::HAS_DISASSEMBLER && asm.contains("ret")),
///     Err(e) => assert!(!relayout::HAS_DISASSEMBLER && e.to_string().contains("disas")),
/// }
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn asm_text(loops: &LoopKernel) -> Result<String, Error> {
    Ok(relayout_jit::machine_code_text(
        loops,
        relayout_jit::Listing::Asm,
    )?)
}

/// Compiles `op` for `input` ahead of time into an object file for this machine that defines
/// `symbol(src, dst)` and `symbol_range(src, dst, start, end)` (what `relayout aot` writes).
/// The loop IR is the one [`compile`] would JIT, verified before any code is generated, and
/// it becomes the same function the JIT compiles; [`AotObject::header`] gives the
/// C header, and [`AotObject::helpers`] the helpers the program must get from
/// librelayout_capi (none for most kernels).
///
/// ```
/// use relayout::ir::{DType, TensorType};
/// use relayout::{compile_aot, DataFormat, Op};
///
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let aot = compile_aot(&op, &TensorType::new(DType::F32, [1, 4, 4, 1]), "s2d")?;
/// assert!(aot.helpers.is_empty());
/// assert!(aot.header("SpaceToDepth").contains("void s2d_range(const void *src, void *dst"));
/// # Ok::<(), relayout::Error>(())
/// ```
pub fn compile_aot(op: &Op, input: &TensorType, symbol: &str) -> Result<AotObject, Error> {
    op.output_type(input)?;
    let stages = lower(op, input)?;
    Ok(relayout_jit::aot_object(&stages.loops, symbol)?)
}

/// An op compiled for one input type: run it as often as you like, from any thread. Cloning is
/// cheap (the compiled code is shared).
#[derive(Clone)]
pub struct CompiledOp {
    inner: Arc<CompiledInner>,
}

/// What a compiled op holds; shared between clones and with the kernel cache.
pub(crate) struct CompiledInner {
    op: Op,
    input: TensorType,
    output: TensorType,
    stages: Stages,
    kernel: Arc<CompiledKernel>,
    /// [`CompiledOp::movement`], worked out on the first question (it may run two passes).
    movement: OnceLock<Movement>,
}

/// Validates, lowers, simplifies, verifies and JIT-compiles `op` for `input`, or returns the
/// kernel compiled earlier for the same op and input type (see [`set_cache_capacity`]).
pub fn compile(op: &Op, input: &TensorType) -> Result<CompiledOp, Error> {
    if let Some(inner) = cache::lookup_op(op, input) {
        return Ok(CompiledOp { inner });
    }
    let output = op.output_type(input)?;
    let stages = lower(op, input)?;
    let kernel = cache::code_for(&stages.loops)?;
    let inner = Arc::new(CompiledInner {
        op: op.clone(),
        input: input.clone(),
        output,
        stages,
        kernel,
        movement: OnceLock::new(),
    });
    cache::insert_op(op, input, inner.clone());
    Ok(CompiledOp { inner })
}

/// [`compile`] without the kernel cache (neither read nor filled), with where the time went:
/// validation, lowering, every pass of the pipeline (and the verification after it, in builds
/// that verify after every pass), and the JIT's stages (see
/// [`CompiledKernel::compile_timings`](relayout_jit::CompiledKernel::compile_timings)). This
/// is what `relayout lower --timings` prints.
pub fn compile_timed(op: &Op, input: &TensorType) -> Result<(CompiledOp, Timings), Error> {
    let mut timings = Timings::default();
    let clock = Instant::now();
    let output = op.output_type(input)?;
    timings.push("Validation", 0, clock.elapsed());
    let clock = Instant::now();
    let lowered = op.lower(input)?;
    timings.push("Lowering", 0, clock.elapsed());
    let (optimized, loops, passes) = relayout_passes::optimize_and_lower_timed(&lowered)?;
    timings.push_pipeline(0, &passes);
    let kernel = CompiledKernel::compile(&loops)?;
    let stages = kernel.compile_timings();
    let jit = stages.iter().filter(|s| s.depth == 0).map(|s| s.time).sum();
    timings.push("JIT", 0, jit);
    for s in stages {
        timings.push(s.stage, 1 + s.depth, s.time);
    }
    let inner = Arc::new(CompiledInner {
        op: op.clone(),
        input: input.clone(),
        output,
        stages: Stages {
            lowered,
            optimized,
            loops,
        },
        kernel: Arc::new(kernel),
        movement: OnceLock::new(),
    });
    Ok((CompiledOp { inner }, timings))
}

impl CompiledOp {
    /// The op this was compiled from.
    pub fn op(&self) -> &Op {
        &self.inner.op
    }

    /// The input type this was compiled for: [`run`](Self::run) takes exactly its bytes.
    pub fn input_type(&self) -> &TensorType {
        &self.inner.input
    }

    /// The op's output type for that input: [`run`](Self::run) writes exactly its bytes.
    pub fn output_type(&self) -> &TensorType {
        &self.inner.output
    }

    /// True when both run the same machine code (one came from the cache, or both ops
    /// simplified to the same loop kernel).
    pub fn shares_code_with(&self, other: &CompiledOp) -> bool {
        Arc::ptr_eq(&self.inner.kernel, &other.inner.kernel)
    }

    /// The IR of every stage.
    pub fn stages(&self) -> &Stages {
        &self.inner.stages
    }

    /// The kernel and output type the `run*` methods run.
    fn runner(&self) -> Runner<'_> {
        Runner::new(&self.inner.kernel, &self.inner.output)
    }

    runner::run_methods!();
}

impl std::fmt::Debug for CompiledOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CompiledOp({:?} : {} -> {})",
            self.inner.op, self.inner.input, self.inner.output
        )
    }
}

/// Which IR dumps a pipeline run prints, as MLIR's `--mlir-print-ir-after-all`,
/// `--mlir-print-ir-after-change` and `--mlir-print-ir-after=PASS`. A dump is printed when any
/// selector picks it; the default picks none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrintAfter {
    /// After every pass.
    pub all: bool,
    /// After every pass that changed the IR.
    pub changed: bool,
    /// After every run of these passes (registered pass names).
    pub passes: Vec<String>,
}

impl PrintAfter {
    /// After every pass.
    pub fn all() -> PrintAfter {
        PrintAfter {
            all: true,
            ..PrintAfter::default()
        }
    }

    /// True when no dump is selected.
    pub fn is_none(&self) -> bool {
        !self.all && !self.changed && self.passes.is_empty()
    }

    /// An unknown pass name in `passes` is an error that lists the known ones.
    fn check(&self) -> Result<(), String> {
        for name in &self.passes {
            if relayout_passes::find_pass(name).is_none() {
                let known: Vec<&str> = relayout_passes::PASSES.iter().map(|p| p.name).collect();
                return Err(format!(
                    "--print-after: unknown pass `{name}`; known passes: {}",
                    known.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The selected dumps of `run`, each after its MLIR-style header; `before` is the IR the
    /// pipeline started from (what the first pass's "change" is measured against).
    fn render(
        &self,
        before: &relayout_ir::AnyKernel,
        run: &relayout_passes::PipelineRun,
    ) -> String {
        let mut out = String::new();
        let mut previous = before;
        for dump in &run.dumps {
            let changed = dump.ir != *previous;
            if self.all || (self.changed && changed) || self.passes.iter().any(|p| p == dump.pass) {
                out.push_str(&format!("{dump}\n"));
            }
            previous = &dump.ir;
        }
        out
    }
}

/// The IR of `op` after every pass of the default pipeline, each with an MLIR-style header
/// (`// -----// IR Dump After SplitDims (split-dims) //----- //`), starting with the lowered IR.
/// When a pass fails, the text ends with the IR it produced and the error is returned.
pub fn print_after_all(op: &Op, input: &TensorType) -> Result<String, Error> {
    print_after(op, input, &PrintAfter::all()).map_err(|(_, e)| e)
}

/// The lowered IR of `op` (with a `Lowering` header), then the dumps of the default pipeline
/// that `print` selects. On failure, the text so far comes with the error.
pub fn print_after(
    op: &Op,
    input: &TensorType,
    print: &PrintAfter,
) -> Result<String, (String, Error)> {
    print
        .check()
        .map_err(|e| (String::new(), Error::Options(e)))?;
    let lowered = op.lower(input).map_err(|e| (String::new(), e.into()))?;
    let mut out = format!(
        "// -----// IR Dump After Lowering ({}) //----- //\n{lowered}\n",
        op.name()
    );
    let before = relayout_ir::AnyKernel::Index(lowered);
    let run = relayout_passes::PassManager::new(relayout_passes::default_pipeline())
        .run_collect(before.clone());
    out.push_str(&print.render(&before, &run));
    match run.result {
        Ok(_) => Ok(out),
        Err(e) => Err((out, e.into())),
    }
}

/// What `relayout opt` does: parses IR text (either level), runs `passes` with verification
/// after every pass, and prints the result, or the IR after every pass when `print_after_all`
/// is set. When `passes` is `None`, the default pipeline runs on index-map IR, and its loop
/// passes ([`passes::default_loop_pipeline`]) on loop IR.
pub fn opt(text: &str, passes: Option<&str>, print_after_all: bool) -> Result<String, OptError> {
    let print = if print_after_all {
        PrintAfter::all()
    } else {
        PrintAfter::default()
    };
    opt_with(text, passes, &print)
}

/// [`opt`] with any selection of dumps. When some are selected, the output is the dumps only
/// (the last of them is the result when the last pass is selected); otherwise it is the
/// resulting IR.
pub fn opt_with(text: &str, passes: Option<&str>, print: &PrintAfter) -> Result<String, OptError> {
    opt_timed(text, passes, print).map(|(out, _)| out)
}

/// [`opt_with`], with where the time went: parsing, then every pass and the verification
/// after it (`relayout opt` verifies after every pass). This is what `relayout opt --timings`
/// prints.
pub fn opt_timed(
    text: &str,
    passes: Option<&str>,
    print: &PrintAfter,
) -> Result<(String, Timings), OptError> {
    print.check().map_err(Error::Options)?;
    let mut timings = Timings::default();
    let clock = Instant::now();
    let ir = relayout_ir::parse_any(text)?;
    timings.push("Parsing", 0, clock.elapsed());
    let pipeline = match (passes, &ir) {
        (Some(p), _) => relayout_passes::Pipeline::parse(p)?,
        (None, relayout_ir::AnyKernel::Index(_)) => relayout_passes::default_pipeline(),
        (None, relayout_ir::AnyKernel::Loops(_)) => relayout_passes::default_loop_pipeline(),
    };
    let run = relayout_passes::PassManager::new(pipeline)
        .verify_each(true)
        .run_collect(ir.clone());
    timings.push_pipeline(0, &run.timings);
    let out = print.render(&ir, &run);
    let dumping = !print.is_none();
    let result = run.result.map_err(|e| OptError {
        output: if dumping { out.clone() } else { String::new() },
        error: e.into(),
    })?;
    if dumping {
        return Ok((out, timings));
    }
    Ok((result.to_string(), timings))
}

/// Converts a JSON attribute object (as in the conformance cases and bench/suite.json:
/// `{"block_size": 2, "paddings": [[1, 2], [1, 2]]}`) to [`Attrs`]. Something that is not
/// attributes (a value that is `null` or an object, or JSON that is not an object) is an
/// [`OpError`] of category `bad_attribute`.
///
/// ```
/// use relayout::{attrs_from_json, AttrValue};
///
/// let attrs = attrs_from_json(&serde_json::json!({"block_size": 2}))?;
/// assert_eq!(attrs["block_size"], AttrValue::Int(2));
/// let err = attrs_from_json(&serde_json::json!({"block_size": null})).unwrap_err();
/// assert_eq!(err.category(), "bad_attribute");
/// # Ok::<(), relayout::OpError>(())
/// ```
pub fn attrs_from_json(value: &serde_json::Value) -> Result<Attrs, OpError> {
    let bad = |message: String| OpError::new(ErrorCategory::BadAttribute, message);
    fn convert(key: &str, v: &serde_json::Value) -> Result<AttrValue, String> {
        match v {
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => Ok(AttrValue::Int(i)),
                (None, Some(u), _) => Ok(AttrValue::UInt(u)),
                (None, None, Some(x)) => Ok(AttrValue::Float(x)),
                _ => Err(format!("attribute {key}: {n} is not a number")),
            },
            serde_json::Value::Bool(b) => Ok(AttrValue::Bool(*b)),
            serde_json::Value::String(s) => Ok(AttrValue::Str(s.clone())),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| convert(key, i))
                .collect::<Result<_, _>>()
                .map(AttrValue::List),
            other => Err(format!(
                "attribute {key}: expected a number, a bool, a string or a list, found {other}"
            )),
        }
    }
    let obj = value
        .as_object()
        .ok_or_else(|| bad(format!("attributes must be a JSON object, found {value}")))?;
    obj.iter()
        .map(|(k, v)| Ok((k.clone(), convert(k, v).map_err(bad)?)))
        .collect()
}
