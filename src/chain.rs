//! Chains: a list of ops applied one after another, compiled into one kernel; and compiling
//! any kernel given as IR ([`compile_kernel`] for index-map IR, [`compile_loops`] for loop IR).
//!
//! Each op is lowered for the type the previous one produces, and the kernels are composed by
//! [`relayout_passes::Chain`]: where an op copies `mid[g(e)]`, the composed kernel does what
//! the previous op did at `g(e)` (copy `src[f(g(e))]`, or fill its value), one guarded
//! statement per statement of the previous op. So gathers (Transpose, Reshape, Slice, Tile,
//! DepthToSpace, SpaceToDepth, SpaceToBatch, BatchToSpace) and the piecewise Pads (constant
//! with any value, edge, reflect, wrap) all compose, and the normal pipeline simplifies the
//! result: DepthToSpace then SpaceToDepth with the same block becomes a single `copy` of
//! the whole tensor, and a Slice of the middle of a reflect Pad one plain copy.
//!
//! Col2Im is a scatter-add (overlapping blocks are summed), which has no gather form, so it
//! cannot be in a chain: the chain is refused with the op and the statement that breaks the
//! form. Im2Col's own lowering writes its output through a scatter of blocks; an Im2Col that
//! feeds the next op is lowered as a gather instead (`Op::lower_gather`: a zero fill, then a
//! copy that reads each output element's image position), so it composes like SpaceToBatch.

use crate::analysis::{self, Movement};
use crate::runner::Runner;
use crate::{Error, Op, OpError, Stages};
use relayout_ir::{Kernel, LoopKernel, TensorType, VerifyError};
use relayout_jit::CompiledKernel;
use relayout_passes::{Chain, ComposeError};
use std::sync::{Arc, OnceLock};

/// Why a chain could not be composed into one kernel.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// The chain has no op.
    #[error("cannot compose an empty chain of ops: give at least one")]
    EmptyChain,
    /// The op at `index` is invalid for the type the chain gives it.
    #[error("op {index} of the chain ({op}) is invalid for its input {input}: {source}")]
    Op {
        /// The op's position in the chain, from 0.
        index: usize,
        /// The op's name.
        op: &'static str,
        /// The type the chain gives the op.
        input: TensorType,
        /// Why the op is invalid for it.
        source: OpError,
    },
    /// The op at `index` cannot be composed with its neighbour: it accumulates (Col2Im), or
    /// its neighbour does not write every element it reads.
    #[error("op {index} of the chain ({op}) cannot be composed: {reason}")]
    NotComposable {
        /// The op's position in the chain, from 0.
        index: usize,
        /// The op's name.
        op: &'static str,
        /// Which part of the gather form its lowering breaks.
        reason: String,
    },
    /// Composing the op at `index` with the ops before it would make a kernel of more than
    /// `limit` statements (piecewise Pads multiply the pieces of what they read). The ops
    /// before `index` compose, so a graph optimizer can split the chain there: compose
    /// `ops[..index]` and `ops[index..]` separately (each may split again).
    #[error(
        "op {index} of the chain ({op}) would make the composed kernel {statements} \
         statements, more than {limit}: compose the ops before it and the ops from it on as \
         two chains (ops[..{index}] and ops[{index}..])"
    )]
    TooLarge {
        /// The op's position in the chain, from 1 (a single op is never too large).
        index: usize,
        /// The op's name.
        op: &'static str,
        /// How many statements the composed kernel would have.
        statements: usize,
        /// The limit they pass.
        limit: usize,
    },
    /// The composed kernel fails verification: a bug in the composition, never in the input.
    #[error("the composed kernel fails verification:\n{0}")]
    Verify(VerifyError),
}

impl ChainError {
    /// The conformance category of an invalid op in the chain (`not_divisible`, ...), or
    /// `None` for the other errors.
    pub fn category(&self) -> Option<&'static str> {
        match self {
            ChainError::Op { source, .. } => Some(source.category()),
            _ => None,
        }
    }
}

/// A chain of ops composed into one kernel (or any index-map kernel), compiled for one input
/// type: run it as often as you like, from any thread. The counterpart of [`CompiledOp`](crate::CompiledOp) for
/// kernels that are not one op. Cloning is cheap (the compiled code and the IR are shared).
#[derive(Clone)]
pub struct CompiledChain {
    inner: Arc<ChainInner>,
}

struct ChainInner {
    ops: Vec<Op>,
    stages: Stages,
    kernel: Arc<CompiledKernel>,
    /// [`CompiledChain::movement`], worked out on the first question (it may run two passes).
    movement: OnceLock<Movement>,
}

/// Composes `ops`, applied one after another to a tensor of type `input`, into one index-map
/// kernel: the `lowered` stage of [`compile_chain`]. The maps are canonicalized after each
/// step of the composition (which keeps them small), and nothing else is simplified.
///
/// Each op is validated against the type the previous op produces.
pub fn compose_chain(ops: &[Op], input: &TensorType) -> Result<Kernel, ChainError> {
    if ops.is_empty() {
        return Err(ChainError::EmptyChain);
    }
    let mut ty = input.clone();
    let mut chain: Option<Chain> = None;
    for (index, op) in ops.iter().enumerate() {
        // An op whose output the next op reads is lowered as a gather (Im2Col's own lowering
        // scatters its blocks); the last op as it compiles on its own.
        let lower = if index + 1 < ops.len() {
            Op::lower_gather
        } else {
            Op::lower
        };
        let kernel = lower(op, &ty).map_err(|source| ChainError::Op {
            index,
            op: op.name(),
            input: ty.clone(),
            source,
        })?;
        let next_ty = kernel.dst.clone();
        chain = Some(match chain {
            None => Chain::new(kernel).map_err(|e| not_composable(ops, index, e))?,
            Some(before) => before.then(&kernel).map_err(|e| {
                // The chain so far cannot feed the next op when its last op scatters or
                // leaves elements unwritten: that op is the one to name.
                let blamed = match e {
                    ComposeError::NotOutputForm { .. } | ComposeError::NotCovering { .. } => {
                        index - 1
                    }
                    _ => index,
                };
                not_composable(ops, blamed, e)
            })?,
        });
        ty = next_ty;
    }
    let name = ops
        .iter()
        .map(|op| op.kernel_name())
        .collect::<Vec<_>>()
        .join("_then_");
    let kernel = chain
        .map(Chain::into_kernel)
        .ok_or(ChainError::EmptyChain)?;
    Ok(Kernel { name, ..kernel })
}

fn not_composable(ops: &[Op], index: usize, e: ComposeError) -> ChainError {
    match e {
        ComposeError::Verify(v) => ChainError::Verify(v),
        // `Chain::new` takes one kernel whole, so only `then` (index >= 1) counts statements.
        ComposeError::TooManyStatements { stmts, limit } if index >= 1 => ChainError::TooLarge {
            index,
            op: ops[index].name(),
            statements: stmts,
            limit,
        },
        other => ChainError::NotComposable {
            index,
            op: ops[index].name(),
            reason: other.to_string(),
        },
    }
}

/// Composes `ops`, applied one after another to a tensor of type `input`, into one kernel and
/// compiles it: one pass over the data instead of one per op, and no intermediate tensors.
///
/// Every op but Col2Im can be in a chain; see the [module documentation](self). A chain that
/// cannot be composed is an [`Error::Chain`] that says why; simplifying or compiling the
/// composed kernel fails with the same errors as [`compile`](crate::compile).
///
/// ```
/// use relayout::{compile_chain, ir::{DType, TensorType}, DataFormat, DepthToSpaceMode, Movement, Op};
///
/// // DepthToSpace then SpaceToDepth with the same block is the identity: composed, nothing moves.
/// let d2s = Op::DepthToSpace {
///     block_size: 2,
///     data_format: DataFormat::Nhwc,
///     mode: DepthToSpaceMode::Dcr,
/// };
/// let s2d = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let input = TensorType::new(DType::F32, [1, 2, 3, 8]);
/// let chain = compile_chain(&[d2s, s2d], &input).unwrap();
/// assert_eq!(chain.output_type(), &input);
/// assert_eq!(chain.movement(), Movement::NoMovement);
///
/// let src: Vec<f32> = (0..48).map(|i| i as f32).collect();
/// let mut dst = vec![0.0f32; 48];
/// chain.run_typed(&src, &mut dst).unwrap();
/// assert_eq!(dst, src);
///
/// // Col2Im sums overlapping blocks: it has no gather map to compose.
/// let col2im = Op::Col2Im {
///     image_shape: vec![3, 3],
///     block_shape: vec![2, 2],
///     dilations: vec![1, 1],
///     pads: vec![0, 0, 0, 0],
///     strides: vec![1, 1],
/// };
/// let err = compile_chain(&[col2im], &TensorType::new(DType::F32, [1, 4, 4])).err().unwrap();
/// assert!(err.to_string().contains("scatter-add"));
/// assert!(matches!(err, relayout::Error::Chain(relayout::ChainError::NotComposable { index: 0, .. })));
/// ```
pub fn compile_chain(ops: &[Op], input: &TensorType) -> Result<CompiledChain, Error> {
    let kernel = compose_chain(ops, input)?;
    compile_composed(ops.to_vec(), kernel)
}

/// Simplifies, verifies and JIT-compiles any index-map kernel with the default pipeline, as
/// [`compile`](crate::compile) does for one op. The result's [`CompiledChain::ops`] is empty.
///
/// The machine code comes from the kernel cache when an equal loop kernel was compiled before
/// (by this function, [`compile_chain`] or [`compile`](crate::compile)), so compiling the same
/// chain twice generates code once.
pub fn compile_kernel(kernel: Kernel) -> Result<CompiledChain, Error> {
    compile_composed(Vec::new(), kernel)
}

/// Compiles a loop kernel as it is, with no pass: hand-written loop IR, or what `relayout opt`
/// printed. The verifier must prove every access in bounds first, as for every kernel.
///
/// ```
/// use relayout::compile_loops;
/// use relayout::ir::parse_loop_kernel;
///
/// // Swap the two 4-byte halves of an 8-byte tensor.
/// let loops = parse_loop_kernel(
///     "loops @swap(%src: tensor<2xf32>) -> (%dst: tensor<2xf32>) {\n\
///        copy 4 bytes %dst[4 - 4 * i0] = %src[0 + 4 * i0]\n\
///          for i0 in 0 to 2\n\
///      }\n",
/// )?;
/// let kernel = compile_loops(loops)?;
/// let src: Vec<u8> = (1..=8).collect();
/// assert_eq!(kernel.run_to_vec(&src)?, [5, 6, 7, 8, 1, 2, 3, 4]);
/// // The same run on elements of the kernel's type.
/// let mut swapped = [0.0f32; 2];
/// kernel.run_typed(&[1.5f32, -2.0], &mut swapped)?;
/// assert_eq!(swapped, [-2.0, 1.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compile_loops(loops: LoopKernel) -> Result<CompiledLoops, Error> {
    let kernel = crate::cache::code_for(&loops)?;
    Ok(CompiledLoops { loops, kernel })
}

/// A loop kernel compiled by [`compile_loops`]. Cloning is cheap.
#[derive(Clone)]
pub struct CompiledLoops {
    loops: LoopKernel,
    kernel: Arc<CompiledKernel>,
}

impl CompiledLoops {
    /// The loop kernel that was compiled.
    pub fn loops(&self) -> &LoopKernel {
        &self.loops
    }

    /// The type of the tensor the kernel reads.
    pub fn input_type(&self) -> &TensorType {
        &self.loops.src
    }

    /// The type of the tensor the kernel writes.
    pub fn output_type(&self) -> &TensorType {
        &self.loops.dst
    }

    /// The kernel and output type the `run*` methods run.
    fn runner(&self) -> Runner<'_> {
        Runner::new(&self.kernel, &self.loops.dst)
    }

    crate::runner::run_methods!();
}

impl std::fmt::Debug for CompiledLoops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledLoops")
            .field("loops", &self.loops)
            .finish()
    }
}

fn compile_composed(ops: Vec<Op>, kernel: Kernel) -> Result<CompiledChain, Error> {
    let (optimized, loops) = relayout_passes::optimize_and_lower(&kernel)?;
    let compiled = crate::cache::code_for(&loops)?;
    Ok(CompiledChain {
        inner: Arc::new(ChainInner {
            ops,
            stages: Stages {
                lowered: kernel,
                optimized,
                loops,
            },
            kernel: compiled,
            movement: OnceLock::new(),
        }),
    })
}

impl CompiledChain {
    /// The ops of the chain, in the order they apply (empty for [`compile_kernel`]).
    pub fn ops(&self) -> &[Op] {
        &self.inner.ops
    }

    /// The type of the chain's input.
    pub fn input_type(&self) -> &TensorType {
        &self.inner.stages.lowered.src
    }

    /// The type of the chain's output: the last op's.
    pub fn output_type(&self) -> &TensorType {
        &self.inner.stages.lowered.dst
    }

    /// The IR of every stage: `lowered` is the composed kernel before any pass.
    pub fn stages(&self) -> &Stages {
        &self.inner.stages
    }

    /// True when both run the same machine code: they simplified to the same loop kernel, and
    /// the second found the first's code in the kernel cache.
    pub fn shares_code_with(&self, other: &CompiledChain) -> bool {
        Arc::ptr_eq(&self.inner.kernel, &other.inner.kernel)
    }

    /// What the composed kernel does with the bytes of its input; see [`Movement`].
    pub fn movement(&self) -> Movement {
        self.inner
            .movement
            .get_or_init(|| analysis::movement_of(&self.inner.stages))
            .clone()
    }

    /// Bytes read plus bytes written by one run; see [`analysis::bytes_moved`].
    pub fn bytes_moved(&self) -> u64 {
        analysis::bytes_moved(&self.inner.stages.loops)
    }

    /// The kernel and output type the `run*` methods run.
    fn runner(&self) -> Runner<'_> {
        Runner::new(&self.inner.kernel, &self.inner.stages.lowered.dst)
    }

    crate::runner::run_methods!();
}

impl std::fmt::Debug for CompiledChain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledChain")
            .field("ops", &self.inner.ops)
            .field("kernel", &self.inner.stages.lowered)
            .finish()
    }
}
