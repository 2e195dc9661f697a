//! Fusing a chain of copy ops into one kernel, and compiling any kernel given as IR
//! ([`compile_kernel`] for index-map IR, [`compile_loops`] for loop IR).
//!
//! Most ops lower to a *gather* over their output: an optional zero fill of the whole output,
//! then one copy `dst[d] = src[f(d)]`, guarded by `lo <= c(d) < hi` where the source index
//! falls into padding. A zero-constant Pad's copy of a box of the output, with zero fills
//! around it, is read as the same form (the box becomes guards on the output dims). Gathers compose: if B reads A's output at `g(e)`, then B
//! after A reads the input at `f(g(e))`, wherever B's guard holds and A's guard holds at
//! `g(e)`. Everywhere else the chain produces a zero (B's padding, or A's padding read by B),
//! so a fill of the whole output first covers it. The composed kernel is one statement pair
//! whatever the chain's length, and the normal pipeline simplifies it: DepthToSpace then
//! SpaceToDepth with the same block becomes a single `copy` of the whole tensor.
//!
//! Col2Im is a scatter-add (overlapping blocks are summed), which has no gather form, so it
//! cannot be fused. Nor can the piecewise ops (Pad in edge, reflect or wrap mode: one copy
//! per region), a Pad with a non-zero constant, or Im2Col (a scatter copy): the chain is
//! refused with the statement that breaks the form.

use crate::analysis::{self, Movement};
use crate::{Element, Error, Op, OpError, Stages};
use relayout_ir::{
    Action, AffineExpr, Constraint, Kernel, LoopKernel, Stmt, TensorType, VerifyError,
};
use relayout_jit::CompiledKernel;
use std::sync::Arc;

/// Why a chain could not be fused.
#[derive(Debug, thiserror::Error)]
pub enum FuseError {
    /// The chain has no op.
    #[error("cannot fuse an empty chain of ops: give at least one")]
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
    /// The op at `index` does not lower to a gather (Col2Im), so its map cannot be composed.
    #[error("op {index} of the chain ({op}) cannot be fused: {reason}")]
    NotFusable {
        /// The op's position in the chain, from 0.
        index: usize,
        /// The op's name.
        op: &'static str,
        /// Which part of the gather form its lowering breaks.
        reason: String,
    },
    /// The composed kernel fails verification: a bug in the composition, never in the input.
    #[error("the fused kernel fails verification:\n{0}")]
    Verify(VerifyError),
}

impl FuseError {
    /// The conformance category of an invalid op in the chain (`not_divisible`, ...), or
    /// `None` for the other errors.
    pub fn category(&self) -> Option<&'static str> {
        match self {
            FuseError::Op { source, .. } => Some(source.category()),
            _ => None,
        }
    }
}

/// A fused chain of ops (or any index-map kernel) compiled for one input type: run it as often
/// as you like, from any thread. The counterpart of [`CompiledOp`](crate::CompiledOp) for
/// kernels that are not one op. Cloning is cheap (the compiled code and the IR are shared).
#[derive(Clone)]
pub struct FusedOp {
    inner: Arc<FusedInner>,
}

struct FusedInner {
    ops: Vec<Op>,
    stages: Stages,
    kernel: Arc<CompiledKernel>,
}

/// Composes `ops`, applied one after another to a tensor of type `input`, into one index-map
/// kernel: the `lowered` stage of [`compile_chain`]. The maps are canonicalized after each
/// step of the composition (which keeps them small), and nothing else is simplified.
///
/// Each op is validated against the type the previous op produces.
pub fn fuse_chain(ops: &[Op], input: &TensorType) -> Result<Kernel, FuseError> {
    if ops.is_empty() {
        return Err(FuseError::EmptyChain);
    }
    let mut ty = input.clone();
    let mut chain: Option<Gather> = None;
    for (index, op) in ops.iter().enumerate() {
        if matches!(op, Op::Col2Im { .. }) {
            return Err(FuseError::NotFusable {
                index,
                op: op.name(),
                reason: "Col2Im is a scatter-add (overlapping blocks are summed), which has no \
                         gather map to compose"
                    .into(),
            });
        }
        let kernel = op.lower(&ty).map_err(|source| FuseError::Op {
            index,
            op: op.name(),
            input: ty.clone(),
            source,
        })?;
        let step = Gather::of(&kernel).map_err(|reason| FuseError::NotFusable {
            index,
            op: op.name(),
            reason,
        })?;
        chain = Some(match chain {
            None => step,
            Some(before) => before.then(step).simplified(input, &kernel.dst),
        });
        ty = kernel.dst;
    }
    let name = ops
        .iter()
        .map(|op| op.kernel_name())
        .collect::<Vec<_>>()
        .join("_then_");
    let kernel = chain
        .unwrap_or_else(|| Gather::zeros(false))
        .into_kernel(name, input, &ty);
    relayout_ir::verify_kernel(&kernel).map_err(FuseError::Verify)?;
    Ok(kernel)
}

/// Fuses `ops`, applied one after another to a tensor of type `input`, into one kernel and
/// compiles it: one pass over the data instead of one per op, and no intermediate tensors.
///
/// Ops in gather form can be fused; see the [module documentation](self). A chain that cannot
/// be fused is an [`Error::Chain`] that says why; simplifying or compiling the fused kernel
/// fails with the same errors as [`compile`](crate::compile).
///
/// ```
/// use relayout::{compile_chain, ir::{DType, TensorType}, DataFormat, DepthToSpaceMode, Movement, Op};
///
/// // DepthToSpace then SpaceToDepth with the same block is the identity: fused, nothing moves.
/// let d2s = Op::DepthToSpace {
///     block_size: 2,
///     data_format: DataFormat::Nhwc,
///     mode: DepthToSpaceMode::Dcr,
/// };
/// let s2d = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let input = TensorType::new(DType::F32, [1, 2, 3, 8]);
/// let fused = compile_chain(&[d2s, s2d], &input).unwrap();
/// assert_eq!(fused.output_type(), &input);
/// assert_eq!(fused.movement(), Movement::NoMovement);
///
/// let src: Vec<f32> = (0..48).map(|i| i as f32).collect();
/// let mut dst = vec![0.0f32; 48];
/// fused.run_typed(&src, &mut dst).unwrap();
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
/// assert!(matches!(err, relayout::Error::Chain(relayout::FuseError::NotFusable { index: 0, .. })));
/// ```
pub fn compile_chain(ops: &[Op], input: &TensorType) -> Result<FusedOp, Error> {
    let kernel = fuse_chain(ops, input)?;
    compile_fused(ops.to_vec(), kernel)
}

/// Simplifies, verifies and JIT-compiles any index-map kernel with the default pipeline, as
/// [`compile`](crate::compile) does for one op. The result's [`FusedOp::ops`] is empty.
///
/// The machine code comes from the kernel cache when an equal loop kernel was compiled before
/// (by this function, [`compile_chain`] or [`compile`](crate::compile)), so compiling the same
/// chain twice generates code once.
pub fn compile_kernel(kernel: Kernel) -> Result<FusedOp, Error> {
    compile_fused(Vec::new(), kernel)
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

    /// Runs the kernel on little-endian bytes. Both lengths are checked against the types.
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        Ok(self.kernel.run(src, dst)?)
    }

    /// Runs the kernel splitting the work over `threads` threads of a shared pool.
    pub fn run_threaded(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), Error> {
        Ok(self.kernel.run_threaded(src, dst, threads)?)
    }

    /// Runs the kernel into a new buffer.
    pub fn run_to_vec(&self, src: &[u8]) -> Result<Vec<u8>, Error> {
        let mut dst = crate::zeroed_buffer(self.output_type())?;
        self.run(src, &mut dst)?;
        Ok(dst)
    }
}

impl std::fmt::Debug for CompiledLoops {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledLoops")
            .field("loops", &self.loops)
            .finish()
    }
}

fn compile_fused(ops: Vec<Op>, kernel: Kernel) -> Result<FusedOp, Error> {
    let (optimized, loops) = relayout_passes::optimize_and_lower(&kernel)?;
    let compiled = crate::cache::code_for(&loops)?;
    Ok(FusedOp {
        inner: Arc::new(FusedInner {
            ops,
            stages: Stages {
                lowered: kernel,
                optimized,
                loops,
            },
            kernel: compiled,
        }),
    })
}

impl FusedOp {
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
    pub fn shares_code_with(&self, other: &FusedOp) -> bool {
        Arc::ptr_eq(&self.inner.kernel, &other.inner.kernel)
    }

    /// What the fused kernel does with the bytes of its input; see [`Movement`].
    pub fn movement(&self) -> Movement {
        analysis::movement(&self.inner.stages.loops)
    }

    /// Bytes read plus bytes written by one run; see [`analysis::bytes_moved`].
    pub fn bytes_moved(&self) -> u64 {
        analysis::bytes_moved(&self.inner.stages.loops)
    }

    /// Runs the kernel on little-endian bytes. Both lengths are checked against the types.
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        Ok(self.inner.kernel.run(src, dst)?)
    }

    /// Runs the kernel splitting the work over `threads` threads of a shared pool.
    pub fn run_threaded(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), Error> {
        Ok(self.inner.kernel.run_threaded(src, dst, threads)?)
    }

    /// Runs the kernel with each statement cut as `split` says, reporting how it ran (see
    /// [`CompiledOp::run_split`](crate::CompiledOp::run_split)).
    pub fn run_split(
        &self,
        src: &[u8],
        dst: &mut [u8],
        split: crate::Split,
    ) -> Result<crate::SplitReport, Error> {
        Ok(self.inner.kernel.run_split(src, dst, split)?)
    }

    /// Runs the kernel on element slices; the element type must have the kernel's element size.
    pub fn run_typed<T: Element>(&self, src: &[T], dst: &mut [T]) -> Result<(), Error> {
        Ok(self.inner.kernel.run_typed(src, dst)?)
    }

    /// Runs the kernel into a new buffer.
    pub fn run_to_vec(&self, src: &[u8]) -> Result<Vec<u8>, Error> {
        let mut dst = crate::zeroed_buffer(self.output_type())?;
        self.run(src, &mut dst)?;
        Ok(dst)
    }
}

impl std::fmt::Debug for FusedOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FusedOp")
            .field("ops", &self.inner.ops)
            .field("kernel", &self.inner.stages.lowered)
            .finish()
    }
}

/// A kernel in gather form over its output box: whether it zero-fills the whole output
/// first, and the one copy that follows (`None` when the output is all zeros or empty).
#[derive(Clone)]
struct Gather {
    fill: bool,
    copy: Option<GuardedMap>,
}

/// `dst[d] = src[src(d)]` at every point `d` of the output where every constraint holds.
#[derive(Clone)]
struct GuardedMap {
    guard: Vec<Constraint>,
    src: Vec<AffineExpr>,
}

impl Gather {
    fn zeros(fill: bool) -> Gather {
        Gather { fill, copy: None }
    }

    /// Reads a lowered op in gather form, or says which part of the form it breaks.
    fn of(kernel: &Kernel) -> Result<Gather, String> {
        let mut out = Gather::zeros(false);
        for (i, stmt) in kernel.stmts.iter().enumerate() {
            // A zero Pad: zero fills of the slabs around a copy of a sub-box. The sub-box is
            // the whole output with guards `lo <= d_i < hi`, and the slabs are what a zero
            // fill of the whole output leaves unwritten by that copy (a lowered op writes its
            // whole output).
            let boxed = in_output_box(stmt, &kernel.dst);
            if !over_output(stmt, &kernel.dst) && boxed.is_none() {
                return Err(format!(
                    "statement {i} does not range over (a box of) the output with an identity \
                     destination map: {stmt}"
                ));
            }
            let box_guard = boxed.unwrap_or_default();
            match &stmt.action {
                Action::Fill { value }
                    if value.is_zero() && stmt.guard.is_empty() && out.copy.is_none() =>
                {
                    out.fill = true
                }
                Action::Copy { src } if out.copy.is_none() && !box_guard.is_empty() => {
                    if !stmt.guard.is_empty() || !out.fill {
                        return Err(format!(
                            "statement {i} copies a box of the output without a zero fill \
                             before it: {stmt}"
                        ));
                    }
                    out.copy = Some(GuardedMap {
                        guard: box_guard,
                        src: src.clone(),
                    });
                }
                Action::Copy { src } if out.copy.is_none() => {
                    if !stmt.guard.is_empty() && !out.fill {
                        return Err(format!(
                            "statement {i} is a guarded copy with no fill before it, so some \
                             output bytes are never written: {stmt}"
                        ));
                    }
                    out.copy = Some(GuardedMap {
                        guard: stmt.guard.clone(),
                        src: src.clone(),
                    });
                }
                _ => {
                    return Err(format!(
                        "only an unguarded zero fill followed by one copy can be composed, and \
                         statement {i} is {}: {stmt}",
                        stmt.action.keyword()
                    ))
                }
            }
        }
        Ok(out)
    }

    /// `self`, then `next` on its output.
    fn then(self, next: Gather) -> Gather {
        let copy = match (self.copy, next.copy) {
            (Some(first), Some(second)) => {
                // `first` is written over its output dims, which `second` reads at `at(j)`.
                let at = |j: usize| second.src.get(j).cloned().unwrap_or(AffineExpr::Const(0));
                let mut guard = second.guard;
                // The guard and the index it protects are substituted alike, so the verifier
                // still sees the guarded expression inside the index and proves it in bounds.
                guard.extend(first.guard.iter().map(|c| Constraint {
                    expr: c.expr.substitute(&at),
                    lo: c.lo,
                    hi: c.hi,
                }));
                let src: Vec<AffineExpr> = first.src.iter().map(|e| e.substitute(&at)).collect();
                Some(GuardedMap { guard, src })
            }
            _ => None,
        };
        // Zeros come from either op's padding, or from reading an all-zero tensor.
        let fill = self.fill || next.fill || copy.is_none();
        Gather { fill, copy }
    }

    /// `self` with its maps canonicalized, read back in gather form; `self` unchanged when
    /// that fails.
    ///
    /// Composition substitutes a map into each use of a dim, and an op's map uses a dim
    /// several times (`d3 floordiv 4`, `d3 floordiv 2 mod 2`, `d3 mod 2`), so without
    /// simplifying between steps the maps grow exponentially with the chain's length.
    /// `canonicalize` folds them back (DepthToSpace then SpaceToDepth becomes the identity
    /// map) and leaves the fill, the domain and the destination map as they are.
    fn simplified(self, src: &TensorType, dst: &TensorType) -> Gather {
        let Ok(pipeline) = relayout_passes::Pipeline::parse("canonicalize") else {
            return self;
        };
        let kernel = self.clone().into_kernel("fusing".into(), src, dst);
        relayout_passes::PassManager::new(pipeline)
            .verify_each(true)
            .run_index(&kernel)
            .ok()
            .and_then(|k| Gather::of(&k).ok())
            .unwrap_or(self)
    }

    fn into_kernel(self, name: String, src: &TensorType, dst: &TensorType) -> Kernel {
        let copy = self
            .copy
            .map(|c| c.without_unit_dims(dst).with_index_bounds(src));
        let empty = dst.num_elements().map_or(true, |n| n == 0);
        let domain: Vec<_> = dst
            .shape
            .iter()
            .map(|&n| relayout_ir::DimRange::upto(n))
            .collect();
        let identity: Vec<_> = (0..dst.rank()).map(AffineExpr::dim).collect();
        let mut stmts = Vec::new();
        if !empty && self.fill {
            stmts.push(Stmt {
                domain: domain.clone(),
                guard: Vec::new(),
                dst: identity.clone(),
                action: Action::ZERO_FILL,
            });
        }
        if let (false, Some(copy)) = (empty, copy) {
            stmts.push(Stmt {
                domain,
                guard: copy.guard,
                dst: identity,
                action: Action::Copy { src: copy.src },
            });
        }
        Kernel {
            name,
            src: src.clone(),
            dst: dst.clone(),
            stmts,
        }
    }
}

impl GuardedMap {
    /// Replaces every dim of the output box that has one value by that value, 0.
    ///
    /// Composition leaves sums such as `(d2 + d3) floordiv 2` where `d3` is a unit dim of the
    /// output (one channel), and `canonicalize` runs before `drop-unit-dims`, so it keeps the
    /// sum and `peel-dims` later splits the statement into one per value of `d2`. With the 0
    /// in place, `canonicalize` sees `d2 floordiv 2` and the kernel stays one statement.
    fn without_unit_dims(self, dst: &TensorType) -> GuardedMap {
        let unit = |i: usize| dst.shape.get(i) == Some(&1);
        let zero = |i: usize| {
            if unit(i) {
                AffineExpr::Const(0)
            } else {
                AffineExpr::Dim(i)
            }
        };
        GuardedMap {
            guard: self
                .guard
                .iter()
                .map(|c| Constraint {
                    expr: c.expr.substitute(&zero),
                    lo: c.lo,
                    hi: c.hi,
                })
                .collect(),
            src: self.src.iter().map(|e| e.substitute(&zero)).collect(),
        }
    }

    /// Adds `0 <= src[i] < size` for every source index, when the copy is guarded.
    ///
    /// Each such constraint holds wherever the others do (each op was proven in bounds under its
    /// own guard), so it changes nothing but the proof. After composition an op's guarded
    /// expression sits inside the next op's `floordiv` or `mod`, where the verifier still finds
    /// it, but `canonicalize` rewrites the index around it (`(x * 2 + y - 1) floordiv 2` becomes
    /// `x + (y + 1) floordiv 2 - 1`) and the link is lost. A guard on the whole index is
    /// rewritten exactly as the index is, so the verifier keeps finding it.
    fn with_index_bounds(mut self, src: &TensorType) -> GuardedMap {
        if self.guard.is_empty() {
            return self;
        }
        for (e, &n) in self.src.iter().zip(&src.shape) {
            let Ok(hi) = i64::try_from(n) else { continue };
            let bound = Constraint {
                expr: e.clone(),
                lo: 0,
                hi,
            };
            if !matches!(e, AffineExpr::Const(_) | AffineExpr::Dim(_))
                && !self.guard.contains(&bound)
            {
                self.guard.push(bound);
            }
        }
        self
    }
}

/// Whether `stmt` ranges over the whole output box `[0, n)` per dim and writes `dst[d]` at
/// point `d`.
/// For a statement over a strict sub-box of the output with an identity destination map, the
/// guards `lo <= d_i < hi` of the dims where the box is narrower than the output.
fn in_output_box(stmt: &Stmt, dst: &TensorType) -> Option<Vec<Constraint>> {
    let identity = stmt.domain.len() == dst.rank()
        && stmt.dst.len() == dst.rank()
        && stmt
            .dst
            .iter()
            .enumerate()
            .all(|(i, e)| *e == AffineExpr::Dim(i));
    if !identity {
        return None;
    }
    let mut guard = Vec::new();
    for (i, (r, &n)) in stmt.domain.iter().zip(&dst.shape).enumerate() {
        let n = i64::try_from(n).ok()?;
        if r.lo < 0 || r.hi > n {
            return None;
        }
        if r.lo > 0 || r.hi < n {
            guard.push(Constraint {
                expr: AffineExpr::Dim(i),
                lo: r.lo,
                hi: r.hi,
            });
        }
    }
    (!guard.is_empty()).then_some(guard)
}

fn over_output(stmt: &Stmt, dst: &TensorType) -> bool {
    stmt.domain.len() == dst.rank()
        && stmt.dst.len() == dst.rank()
        && stmt
            .domain
            .iter()
            .zip(&dst.shape)
            .all(|(r, &n)| r.lo == 0 && u64::try_from(r.hi) == Ok(n))
        && stmt
            .dst
            .iter()
            .enumerate()
            .all(|(i, e)| *e == AffineExpr::Dim(i))
}
