//! # relayout
//!
//! relayout compiles tensor relayout ops (SpaceToDepth, DepthToSpace, SpaceToBatch(ND),
//! BatchToSpace(ND), Col2Im) into machine code specialised for one fixed shape and element type.
//!
//! ## The model
//!
//! An op description ([`Op`] plus the input [`TensorType`]) goes through four stages, each of
//! which can be printed:
//!
//! 1. **Lowering** ([`Op::lower`]): the op becomes an *index-map kernel* ([`ir::Kernel`]): for
//!    every point of a box of integer points, move one element from `%src[map]` to `%dst[map]`,
//!    with affine maps written as MLIR writes them (`d1 * 2 + d3 floordiv 4`). This is the
//!    op's documented semantics, unsimplified.
//! 2. **Simplification** (`relayout_passes`): range-aware passes rewrite the maps until no
//!    `floordiv`, `mod` or guard is left: SpaceToDepth becomes the 6-D transpose its
//!    documentation describes.
//! 3. **Linearisation and loop passes**: the kernel becomes a *loop kernel* ([`ir::LoopKernel`]):
//!    per statement, a loop nest with byte strides that moves contiguous runs.
//! 4. **Code generation**: Cranelift turns each loop nest into machine code, after the verifier
//!    has proven every access in bounds.
//!
//! [`compile`] runs all four and returns a [`CompiledOp`] you can run on byte slices.
//!
//! ```
//! use relayout::{compile, ir::{DType, TensorType}, Op, DataFormat};
//!
//! let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
//! let kernel = compile(&op, &TensorType::new(DType::F32, [1, 2, 2, 1])).unwrap();
//! assert_eq!(kernel.output_type(), &TensorType::new(DType::F32, [1, 1, 1, 4]));
//!
//! let src = [1.0f32, 2.0, 3.0, 4.0];
//! let mut dst = [0.0f32; 4];
//! kernel.run_typed(&src, &mut dst).unwrap();
//! assert_eq!(dst, [1.0, 2.0, 3.0, 4.0]);
//! ```

pub mod analysis;
mod cache;
pub mod conformance;
pub mod fuse;
mod op_syntax;
mod tensor_text;

pub use analysis::Movement;
pub use cache::{cache_len, set_cache_capacity, DEFAULT_CAPACITY};
pub use fuse::{compile_chain, compile_kernel, fuse_chain, FuseError, FusedOp};
pub use op_syntax::{parse_op_spec, parse_tensor_type, OpSpec, SyntaxError};
pub use relayout_ir as ir;
pub use relayout_jit::Element;
pub use relayout_ops::{
    AttrValue, Attrs, DataFormat, DepthToSpaceMode, ErrorCategory, Op, OpError,
};
pub use tensor_text::{format_element, format_tensor};

use relayout_ir::{Kernel, LoopKernel, TensorType};
use relayout_jit::CompiledKernel;
use std::sync::Arc;

/// Anything that can go wrong between an op description and its result.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The op description is invalid for this input (the conformance error categories).
    #[error(transparent)]
    Op(#[from] OpError),
    /// A pass failed or its output did not verify: a bug in relayout, never in the input.
    #[error(transparent)]
    Pass(#[from] relayout_passes::PassError),
    /// Code generation or the JIT failed, including a kernel the verifier could not prove in
    /// bounds.
    #[error(transparent)]
    Jit(#[from] relayout_jit::JitError),
    /// `run` was given buffers of the wrong length or type.
    #[error(transparent)]
    Run(#[from] relayout_jit::RunError),
    #[error(transparent)]
    Codegen(#[from] relayout_codegen::CodegenError),
}

impl Error {
    /// The conformance category of an invalid op description (`not_divisible`, ...), or `None`
    /// for errors that are not about the op description.
    pub fn category(&self) -> Option<&'static str> {
        match self {
            Error::Op(e) => Some(e.category()),
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
    let optimized = relayout_passes::optimize_index(&lowered)?;
    let loops = relayout_passes::lower_to_loops(&lowered)?;
    Ok(Stages {
        lowered,
        optimized,
        loops,
    })
}

/// The Cranelift IR of every function of a loop kernel, as text.
pub fn clif_text(loops: &LoopKernel) -> Result<String, Error> {
    Ok(relayout_codegen::clif_text(loops)?)
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
    });
    cache::insert_op(op, input, inner.clone());
    Ok(CompiledOp { inner })
}

impl CompiledOp {
    pub fn op(&self) -> &Op {
        &self.inner.op
    }

    pub fn input_type(&self) -> &TensorType {
        &self.inner.input
    }

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

    /// Runs the kernel on little-endian bytes. Both lengths are checked against the types.
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        Ok(self.inner.kernel.run(src, dst)?)
    }

    /// Runs the kernel splitting the work over `threads` threads of a shared pool.
    pub fn run_threaded(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), Error> {
        Ok(self.inner.kernel.run_threaded(src, dst, threads)?)
    }

    /// Runs the kernel on element slices; the element type must have the op's element size.
    pub fn run_typed<T: Element>(&self, src: &[T], dst: &mut [T]) -> Result<(), Error> {
        Ok(self.inner.kernel.run_typed(src, dst)?)
    }

    /// Runs the kernel into a new buffer.
    pub fn run_to_vec(&self, src: &[u8]) -> Result<Vec<u8>, Error> {
        // The size was checked when the op was validated, so it fits in memory terms of u64.
        let len = self
            .inner
            .output
            .size_bytes()
            .map_err(|e| OpError::new(ErrorCategory::SizeOverflow, e.to_string()))?;
        let len = usize::try_from(len).map_err(|_| {
            OpError::new(
                ErrorCategory::SizeOverflow,
                format!("{} does not fit in memory", self.inner.output),
            )
        })?;
        let mut dst = vec![0u8; len];
        self.run(src, &mut dst)?;
        Ok(dst)
    }
}

/// The IR of `op` after every pass of the default pipeline, each with an MLIR-style header
/// (`// -----// IR Dump After SplitDims (split-dims) //----- //`), starting with the lowered IR.
/// When a pass fails, the text ends with the IR it produced and the error is returned.
pub fn print_after_all(op: &Op, input: &TensorType) -> Result<String, Error> {
    let lowered = op.lower(input)?;
    let mut out = format!(
        "// -----// IR Dump After Lowering ({}) //----- //\n{lowered}\n",
        op.name()
    );
    let run = relayout_passes::PassManager::new(relayout_passes::default_pipeline())
        .run_collect(relayout_ir::AnyKernel::Index(lowered));
    for dump in &run.dumps {
        out.push_str(&format!("{dump}\n"));
    }
    run.result?;
    Ok(out)
}

/// What `relayout opt` does: parses IR text (either level), runs `passes` (the default
/// pipeline when `None`) with verification after every pass, and prints the result, or the IR
/// after every pass when `print_after_all` is set.
pub fn opt(text: &str, passes: Option<&str>, print_after_all: bool) -> Result<String, String> {
    let ir = relayout_ir::parse_any(text).map_err(|e| e.to_string())?;
    let pipeline = match passes {
        Some(p) => relayout_passes::Pipeline::parse(p).map_err(|e| e.to_string())?,
        None => relayout_passes::default_pipeline(),
    };
    let run = relayout_passes::PassManager::new(pipeline)
        .verify_each(true)
        .run_collect(ir);
    let mut out = String::new();
    if print_after_all {
        for dump in &run.dumps {
            out.push_str(&format!("{dump}\n"));
        }
    }
    let result = run.result.map_err(|e| {
        if print_after_all {
            format!("{out}{e}")
        } else {
            e.to_string()
        }
    })?;
    if !print_after_all {
        match result {
            relayout_ir::AnyKernel::Index(k) => out.push_str(&k.to_string()),
            relayout_ir::AnyKernel::Loops(k) => out.push_str(&k.to_string()),
        }
    }
    Ok(out)
}

/// Converts a JSON attribute object (as in the conformance cases and bench/suite.json:
/// `{"block_size": 2, "paddings": [[1, 2], [1, 2]]}`) to [`Attrs`].
pub fn attrs_from_json(value: &serde_json::Value) -> Result<Attrs, String> {
    fn convert(key: &str, v: &serde_json::Value) -> Result<AttrValue, String> {
        match v {
            serde_json::Value::Number(n) => n
                .as_i64()
                .map(AttrValue::Int)
                .ok_or_else(|| format!("attribute {key}: {n} is not a 64-bit integer")),
            serde_json::Value::String(s) => Ok(AttrValue::Str(s.clone())),
            serde_json::Value::Array(items) => items
                .iter()
                .map(|i| convert(key, i))
                .collect::<Result<_, _>>()
                .map(AttrValue::List),
            other => Err(format!(
                "attribute {key}: expected an integer, a string or a list, found {other}"
            )),
        }
    }
    let obj = value
        .as_object()
        .ok_or_else(|| format!("attributes must be a JSON object, found {value}"))?;
    obj.iter()
        .map(|(k, v)| Ok((k.clone(), convert(k, v)?)))
        .collect()
}
