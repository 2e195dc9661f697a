//! Sums from +0.0 over two interleaved phases (`pair-phases`): a row of `count` points whose
//! source is contiguous (one element per point) and whose destination steps by two elements,
//! written twice, the second phase one element further in the destination and `phase_src`
//! bytes further in the source. Each phase is summed as whole source vectors, the terms added
//! in order from +0.0 as `sum.rs` does (the same additions per element, so bit-exact), and
//! the two vectors of sums are interleaved by the unpack shuffles into two whole destination
//! vectors: every source byte is read by a vector load and every destination byte written by
//! a vector store, where the plain nest did one scalar load per term and one scalar store per
//! element.
//!
//! A row that is not a whole number of vectors ends with a vector overlapping the one before
//! it; the elements they share get the same sums twice (the destination is never read, so
//! storing them again changes nothing). A row shorter than a vector is summed element by
//! element. f16 and bf16 are not handled here (their adds are helper calls).

use crate::accumulate::Adder;
use crate::loops::{counted_loop, Count};
use crate::mem::{load, store, Addr};
use crate::shuffle::unpack_mask;
use crate::sum;
use crate::CodegenError;
use cranelift_codegen::ir::{types, ConstantData, Endianness, InstBuilder, MemFlagsData, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, Loop, LoopAction, LoopStmt};

/// Rows of up to this many vectors per phase are summed straight-line; longer ones by a loop.
const INLINE_VECTORS: u64 = 4;

/// A paired statement's row: how it is summed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    /// Points of the row (elements per phase).
    pub count: u64,
    /// Source offset of the second phase from the first.
    pub phase_src: i64,
}

/// For a sum from +0.0 whose loops outside the reduction loops (`split` of them) end with a
/// row (source stride one element, destination stride two) and a phase loop inside it (two
/// iterations, destination stride one element), with runs of one element and at least one
/// loop outside the row: the row. The loop outside is required because the outermost loop is
/// the one the schedule cuts into ranges. Not for f16 and bf16 (helper calls) nor complex
/// numbers (an element is two lanes).
pub(crate) fn row(stmt: &LoopStmt, split: usize, dtype: DType) -> Option<Row> {
    if matches!(dtype, DType::F16 | DType::BF16 | DType::C64 | DType::C128) {
        return None;
    }
    let size = i64::try_from(dtype.size()).ok()?;
    if stmt.action != LoopAction::Sum || i64::try_from(stmt.bytes).ok()? != size || split < 3 {
        return None;
    }
    let (q, p): (&Loop, &Loop) = (&stmt.loops[split - 2], &stmt.loops[split - 1]);
    let fits = q.src_stride == size
        && q.dst_stride == 2 * size
        && p.extent == 2
        && p.dst_stride == size
        && q.extent > 0;
    fits.then_some(Row {
        count: q.extent,
        phase_src: p.src_stride,
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
            for p in 0..2 {
                element(
                    b,
                    adder,
                    terms,
                    src,
                    k * size + p * row.phase_src,
                    dst,
                    (2 * k + p) * size,
                );
            }
        }
        return Ok(());
    }
    let vectors = row.count / lanes;
    let looped = if vectors > INLINE_VECTORS {
        counted_loop(
            b,
            Count::Const(vectors),
            src,
            dst,
            (16, 32),
            &mut |b, s, d| {
                pair(b, adder, terms, row.phase_src, s, d, 0);
                Ok(())
            },
        )?;
        vectors
    } else {
        0
    };
    for v in looped..vectors {
        pair(b, adder, terms, row.phase_src, src, dst, 16 * v as i64);
    }
    if row.count % lanes != 0 {
        let last = (row.count - lanes) as i64 * size;
        pair(b, adder, terms, row.phase_src, src, dst, last);
    }
    Ok(())
}

/// The vector of sums of both phases from source byte `at` of the row, interleaved and
/// stored at destination byte `2 * at`.
fn pair(
    b: &mut FunctionBuilder,
    adder: Adder,
    terms: &[i64],
    phase_src: i64,
    src: Addr,
    dst: Addr,
    at: i64,
) {
    let ty = adder.vector();
    let mut acc = [sum::zeros(b, ty), sum::zeros(b, ty)];
    for &t in terms {
        for (p, a) in acc.iter_mut().enumerate() {
            let x = load(b, ty, src, t + p as i64 * phase_src + at);
            *a = adder.add_vectors(b, *a, x);
        }
    }
    let [even, odd] = acc.map(|v| bytes(b, v));
    let width = adder.lane().bytes() as usize;
    for (half, high) in [false, true].into_iter().enumerate() {
        let mask = unpack_mask(width, high);
        let imm = b.func.dfg.immediates.push(ConstantData::from(&mask[..]));
        let v = b.ins().shuffle(even, odd, imm);
        store(b, v, dst, 2 * at + 16 * half as i64);
    }
}

/// The sum of one element at source byte `from` and destination byte `to`, from +0.0.
fn element(
    b: &mut FunctionBuilder,
    adder: Adder,
    terms: &[i64],
    src: Addr,
    from: i64,
    dst: Addr,
    to: i64,
) {
    let ty = adder.lane();
    let mut acc = sum::zeros(b, ty);
    for &t in terms {
        let x = load(b, ty, src, t + from);
        acc = adder.add_elements(b, acc, x);
    }
    store(b, acc, dst, to);
}

/// `v` as 16 bytes, the operand type of `shuffle`.
fn bytes(b: &mut FunctionBuilder, v: Value) -> Value {
    if b.func.dfg.value_type(v) == types::I8X16 {
        return v;
    }
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    b.ins().bitcast(types::I8X16, flags, v)
}
