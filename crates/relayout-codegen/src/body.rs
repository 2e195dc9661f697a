//! The body of a statement's loop nest: one run of its action.

use crate::accumulate::{self, Adder};
use crate::copy::{self, Mover};
use crate::loops::Count;
use crate::mem::Addr;
use crate::phases::{self, Row};
use crate::sum;
use crate::{CodegenError, Helper, Imports};

use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, Loop, LoopAction};

pub(crate) struct Body {
    op: Op,
    bytes: u64,
    config: TargetFrontendConfig,
    /// For [`Op::Sum`]: the source offsets of the contributions, relative to the first.
    terms: Vec<i64>,
    /// For [`Op::Sum`]: the sums start from +0.0, not from the destination.
    zero: bool,
    /// For [`Op::Sum`]: a run is a row of every other element, of one phase or two (see
    /// `phases.rs`).
    row: Option<Row>,
    /// For [`Op::Sum`] with a window: the run bytes each term adds (see `sum.rs`).
    windows: Option<Vec<(u64, u64)>>,
}

#[derive(Clone, Copy)]
enum Op {
    Move(Mover),
    Add(Adder),
    /// Several contributions summed in registers (see `sum.rs`).
    Sum(Adder),
}

impl Body {
    /// Prepares the body in the entry block (constants, helper imports). With `stream`, runs
    /// are written by the streaming helpers (see `copy::streams`).
    pub fn new(
        b: &mut FunctionBuilder,
        action: LoopAction,
        dtype: DType,
        bytes: u64,
        stream: bool,
        config: TargetFrontendConfig,
        imports: &mut dyn Imports,
    ) -> Result<Body, CodegenError> {
        let op = match (action, stream) {
            (LoopAction::Copy, false) => Op::Move(Mover::Copy),
            (LoopAction::Copy, true) => Op::Move(Mover::StreamCopy(
                imports.import(Helper::StreamCopy, b.func)?,
            )),
            (LoopAction::Fill { value }, true) if value.is_zero() => Op::Move(Mover::StreamZero(
                imports.import(Helper::StreamZero, b.func)?,
            )),
            // Other values are not streamed: the helper writes zeros only, and a constant
            // Pad's fills are its borders, not the bulk of its output.
            (LoopAction::Fill { value }, _) => {
                Op::Move(Mover::fill(b, copy::fill_pattern(value, dtype)))
            }
            (LoopAction::Accumulate, _) => Op::Add(Adder::new(b, dtype, imports)?),
            // A sum from +0.0 is always summed by `Body::sum` (see `prepare`).
            (LoopAction::Sum, _) => unreachable!("a sum from +0.0 without Body::sum"),
        };
        Ok(Body {
            op,
            bytes,
            config,
            terms: Vec::new(),
            zero: false,
            row: None,
            windows: None,
        })
    }

    /// Prepares the body of an accumulate whose reduction loops (see `sum.rs`) have their
    /// points at `terms`, source offsets relative to the first; with `zero`, the sums start from
    /// +0.0.
    pub fn sum(
        b: &mut FunctionBuilder,
        zero: bool,
        dtype: DType,
        bytes: u64,
        terms: Vec<i64>,
        config: TargetFrontendConfig,
        imports: &mut dyn Imports,
    ) -> Result<Body, CodegenError> {
        // The one addition of a sum of one term from +0.0 needs no call for f16 and bf16.
        let adder = match Adder::zero_plus_half(dtype) {
            Some(adder) if zero && terms.len() == 1 => adder,
            _ => Adder::new(b, dtype, imports)?,
        };
        Ok(Body {
            op: Op::Sum(adder),
            bytes,
            config,
            terms,
            zero,
            row: None,
            windows: None,
        })
    }

    /// The sum body with `row`: a run is a row of every other element, of one phase or two
    /// (`phases.rs`; sums from +0.0 only).
    pub fn in_rows(self, row: Option<Row>) -> Body {
        Body { row, ..self }
    }

    /// The sum body with each term adding only to its window of the run (`sum.rs`).
    pub fn with_windows(self, windows: Option<Vec<(u64, u64)>>) -> Body {
        Body { windows, ..self }
    }

    /// Whether the body writes with streaming stores, which need a fence before returning.
    pub fn streams(&self) -> bool {
        matches!(
            self.op,
            Op::Move(Mover::StreamCopy(_) | Mover::StreamZero(_))
        )
    }

    /// Whether the body reads the source (a fill does not, so its pointer never moves).
    pub fn reads_src(&self) -> bool {
        !matches!(self.op, Op::Move(Mover::Fill { .. } | Mover::StreamZero(_)))
    }

    /// Whether a run is a single move or vector add (at most 16 bytes, no call), which is
    /// worth unrolling loops around.
    pub fn is_small(&self) -> bool {
        match self.op {
            Op::Move(_) => self.bytes <= 16,
            Op::Add(adder) => adder.is_small(self.bytes),
            // A sum of one term (a Col2Im whose windows do not overlap) costs what an add does;
            // sums of more terms are larger bodies.
            Op::Sum(adder) => {
                self.terms.len() == 1
                    && self.row.is_none()
                    && self.windows.is_none()
                    && adder.is_small(self.bytes)
            }
        }
    }

    /// Whether the shuffle blocks (`shuffle.rs`) may move this body's runs: a move, or a sum
    /// from +0.0 of one term per single run whose elements add as vectors (f16 and bf16 too,
    /// whose `+0.0 + x` is bit operations), which [`Body::finish_vector`] completes.
    pub fn takes_blocks(&self) -> bool {
        match self.op {
            Op::Move(_) => true,
            Op::Add(_) => false,
            Op::Sum(adder) => {
                self.zero
                    && self.terms.len() == 1
                    && self.row.is_none()
                    && self.windows.is_none()
                    && !matches!(adder, Adder::Call(_))
            }
        }
    }

    /// A destination vector of a shuffle block (16 bytes, `i8x16`) as it is stored: as it is,
    /// or for a sum from +0.0 of one term, `+0.0 + v` element by element (-0.0 becomes +0.0,
    /// as the interpreter's sum makes it).
    pub fn finish_vector(&self, b: &mut FunctionBuilder, v: Value) -> Value {
        let Op::Sum(adder) = self.op else {
            return v;
        };
        let ty = adder.vector();
        let flags = MemFlagsData::new().with_endianness(Endianness::Little);
        let x = b.ins().bitcast(ty, flags, v);
        let zero = sum::zeros(b, ty);
        let total = adder.add_vectors(b, zero, x);
        b.ins().bitcast(types::I8X16, flags, total)
    }

    /// Emits the runs of the nest `loops` (the outermost running `count` times) with one
    /// call, when the body streams (see [`Body::streams`]); `false` (and nothing emitted)
    /// otherwise.
    pub fn emit_stream_nest(
        &self,
        b: &mut FunctionBuilder,
        loops: &[Loop],
        count: Count,
        src: Addr,
        dst: Addr,
    ) -> bool {
        match self.op {
            Op::Move(mover @ (Mover::StreamCopy(_) | Mover::StreamZero(_))) => {
                copy::emit_stream_nest(b, mover, self.bytes, loops, count, src, dst);
                true
            }
            _ => false,
        }
    }

    /// Emits one run at `src` and `dst`.
    pub fn emit(&self, b: &mut FunctionBuilder, src: Addr, dst: Addr) -> Result<(), CodegenError> {
        match self.op {
            Op::Move(mover) => copy::emit_run(b, self.config, mover, self.bytes, src, dst),
            Op::Add(adder) => accumulate::emit_run(b, adder, self.bytes, src, dst),
            Op::Sum(adder) => match self.row {
                Some(row) => phases::emit_row(b, adder, row, &self.terms, src, dst),
                None => sum::emit_run(
                    b,
                    adder,
                    self.zero,
                    self.bytes,
                    &self.terms,
                    self.windows.as_deref(),
                    (src, dst),
                ),
            },
        }
    }
}
