//! Sums from +0.0 over a row of `count` points whose source is contiguous (one element per
//! point) and whose destination steps by two elements: every other element, as a stride-2
//! Col2Im's column phases write them. Each phase is summed as whole source vectors, the terms
//! added in order from +0.0 as `sum.rs` does (the same additions per element, so bit-exact).
//!
//! When the row is written twice (`pair-phases`), the second phase one element further in
//! the destination and `phase_src` bytes further in the source, the two vectors of sums are
//! interleaved by the unpack shuffles into two whole destination vectors: every source byte
//! is read by a vector load and every destination byte written by a vector store, where the
//! plain nest did one scalar load per term and one scalar store per element. A row without
//! a partner phase stores each lane of its sums on its own (`extractlane`), which still
//! replaces a scalar load per term and element by a quarter (f32) of a vector load.
//!
//! A row that is not a whole number of vectors ends with a vector overlapping the one before
//! it (in a long row, the loop's last iteration); the elements they share get the same sums
//! twice (the destination is never read, so storing them again changes nothing). A row
//! shorter than a vector is summed element by element. f16 and bf16 are not handled here
//! (their adds are helper calls).

use crate::accumulate::Adder;
use crate::loops::clamped_loop;
use crate::mem::{load, store, Addr};
use crate::shuffle::unpack_mask;
use crate::sum;
use crate::CodegenError;
use cranelift_codegen::ir::{types, ConstantData, Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, Loop, LoopAction, LoopStmt};

/// Rows of up to this many vectors per phase are summed straight-line; longer ones by a loop.
const INLINE_VECTORS: u64 = 4;

/// A statement's row: how it is summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// Points of the row (elements per phase).
    pub count: u64,
    /// Source offset of the second phase from the first, when there are two phases.
    pub phase_src: Option<i64>,
}

impl Row {
    /// The loops of the statement the row stands for: the row's and the phase loop's.
    pub fn loops(self) -> usize {
        1 + usize::from(self.phase_src.is_some())
    }

    /// Source offsets of the phases from the first.
    fn phases(self) -> impl Iterator<Item = (i64, i64)> {
        [Some(0), self.phase_src].into_iter().flatten().zip(0..)
    }
}

/// For a sum from +0.0 whose loops outside the reduction loops (`split` of them) end with a
/// row (source stride one element, destination stride two), possibly followed by a phase
/// loop (two iterations, destination stride one element), with runs of one element and at
/// least one loop outside the row: the row. The loop outside is required because the
/// outermost loop is the one the schedule cuts into ranges. Not for f16 and bf16 (helper
/// calls; the JIT's sum helper sums their rows, see [`row_shape`]) nor complex numbers (an
/// element is two lanes).
pub(crate) fn row(stmt: &LoopStmt, split: usize, dtype: DType) -> Option<Row> {
    if matches!(dtype, DType::F16 | DType::BF16 | DType::C64 | DType::C128) {
        return None;
    }
    row_shape(stmt, split, dtype.size())
}

/// The number of loops of a summed statement's nest (the loops `prepare` runs around its
/// body): those outside its reduction loops (from `split` on) and outside the [`row`] its body
/// sums whole.
pub(crate) fn nest_len(stmt: &LoopStmt, split: usize, dtype: DType) -> usize {
    split - row(stmt, split, dtype).map_or(0, |r| r.loops())
}

/// [`row`] for elements of `size` bytes, whatever their type.
pub(crate) fn row_shape(stmt: &LoopStmt, split: usize, size: u64) -> Option<Row> {
    let size = i64::try_from(size).ok()?;
    if stmt.action != LoopAction::Sum
        || stmt.window.is_some()
        || i64::try_from(stmt.bytes).ok()? != size
    {
        return None;
    }
    let is_row = |q: &Loop| q.src_stride == size && q.dst_stride == 2 * size && q.extent > 0;
    let is_phase = |p: &Loop| p.extent == 2 && p.dst_stride == size;
    if split >= 3 && is_row(&stmt.loops[split - 2]) && is_phase(&stmt.loops[split - 1]) {
        return Some(Row {
            count: stmt.loops[split - 2].extent,
            phase_src: Some(stmt.loops[split - 1].src_stride),
        });
    }
    (split >= 2 && is_row(&stmt.loops[split - 1])).then(|| Row {
        count: stmt.loops[split - 1].extent,
        phase_src: None,
    })
}

/// Emits one row at `src` and `dst` (see the module documentation).
pub(crate) fn emit_row(
    b: &mut FunctionBuilder,
    adder: Adder,
    row: Row,
    terms: &[i64],
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    if terms.is_empty() {
        return Ok(());
    }
    let size = i64::from(adder.lane().bytes());
    let lanes = (16 / size) as u64;
    if row.count < lanes {
        for k in 0..row.count as i64 {
            for (from, p) in row.phases() {
                let (at, to) = (k * size + from, (2 * k + p) * size);
                sum::element(b, adder, true, terms, (src, at), (dst, to));
            }
        }
        return Ok(());
    }
    let vectors = row.count / lanes;
    let last = (row.count - lanes) as i64 * size;
    if vectors > INLINE_VECTORS {
        // One loop body for the whole row, the last vector ending at the row's end.
        clamped_loop(b, (src, dst), (16, 32), (last, 2 * last), &mut |b, s, d| {
            vector(b, adder, terms, row, s, d, 0);
        });
        return Ok(());
    }
    for v in 0..vectors {
        vector(b, adder, terms, row, src, dst, 16 * v as i64);
    }
    if row.count % lanes != 0 {
        vector(b, adder, terms, row, src, dst, last);
    }
    Ok(())
}

/// The vector of sums of each phase from source byte `at` of the row, stored from
/// destination byte `2 * at`: two phases interleaved, one lane by lane.
fn vector(
    b: &mut FunctionBuilder,
    adder: Adder,
    terms: &[i64],
    row: Row,
    src: Addr,
    dst: Addr,
    at: i64,
) {
    let ty = adder.vector();
    let mut acc: Vec<Value> = row.phases().map(|_| sum::zeros(b, ty)).collect();
    for &t in terms {
        for ((from, _), a) in row.phases().zip(acc.iter_mut()) {
            let x = load(b, ty, src, t + from + at);
            *a = adder.add_vectors(b, *a, x);
        }
    }
    let size = i64::from(adder.lane().bytes());
    let [even, odd] = match acc[..] {
        [even, odd] => [even, odd].map(|v| bytes(b, v)),
        _ => {
            for lane in 0..16 / size {
                let x = b.ins().extractlane(acc[0], lane as u8);
                store(b, x, dst, 2 * (at + lane * size));
            }
            return;
        }
    };
    let width = adder.lane().bytes() as usize;
    for (half, high) in [false, true].into_iter().enumerate() {
        let mask = unpack_mask(width, high);
        let imm = b.func.dfg.immediates.push(ConstantData::from(&mask[..]));
        let v = b.ins().shuffle(even, odd, imm);
        store(b, v, dst, 2 * at + 16 * half as i64);
    }
}

/// `v` as 16 bytes, the operand type of `shuffle`.
fn bytes(b: &mut FunctionBuilder, v: Value) -> Value {
    if b.func.dfg.value_type(v) == types::I8X16 {
        return v;
    }
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    b.ins().bitcast(types::I8X16, flags, v)
}
