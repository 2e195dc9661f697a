//! Accumulations with reduction loops: an `accumulate` whose innermost loops have destination
//! stride 0 adds several source runs into the same destination run (Col2Im's contributions
//! to one output cell, see the `output-stationary` pass). Instead of reading and writing the
//! destination once per contribution, the run is loaded into registers once, every
//! contribution is added there in the order of the reduction loops, and the sum is stored
//! once: the same additions in the same order per element, so the result is bit-exact.
//!
//! The reduction loops are unrolled: their points become a list of source offsets ([`terms`]),
//! at most [`MAX_TERMS`]. A run is summed [`GROUP`] vectors at a time (one accumulator each),
//! by a loop over groups for long runs, a run that is not a whole number of vectors ending
//! with an overlapping vector (see [`emit_run`]); runs shorter than a vector element by
//! element. A long sum from +0.0 has one loop body for the whole run: its last group ends at
//! the run's end, overlapping the one before it, which only stores the same sums again, so no
//! second copy of the body is needed for the tail (Cranelift's compile time grows with the
//! instructions). f16 and bf16 are summed element by element through their helper, as
//! `accumulate` does.
//!
//! An `accumulate ... = 0 + ...` (`LoopAction::Sum`, a sum from +0.0) takes the same path, with
//! the accumulators starting from a zero vector instead of the destination, which is then never
//! read: the first addition is `+0.0 + t0`, as the interpreter does it (not `t0` itself, which
//! differs for -0.0), for every element type (f16 and bf16 through their helper too). Such a
//! statement always takes this path, also without outer loops or without reduction loops (one
//! term); the verifier bounds its terms by `MAX_SUM_TERMS`.

use crate::accumulate::Adder;
use crate::loops::{clamped_loop, counted_loop, Count};
use crate::mem::{load, store, Addr};
use crate::CodegenError;
use cranelift_codegen::ir::{types, InstBuilder, Type, Value};
use cranelift_frontend::FunctionBuilder;
use relayout_ir::{DType, Loop, LoopAction, LoopStmt};

/// A row of a sum from +0.0 over every other element (see [`SumRuns`]).
pub use crate::phases::Row as SumRow;

/// Reduction loops with more points than this are left to the ordinary accumulate path.
pub(crate) const MAX_TERMS: u64 = relayout_ir::MAX_SUM_TERMS;
/// Vectors summed side by side (one accumulator register each). Two rather than four: the
/// loop body of a 3x3 Col2Im's rows has half the instructions (its compile 15% fewer), and
/// the kernel ran within this machine's noise of the four-vector one (2.26-2.30 against
/// 2.29-2.39 ms, bound by reading the source); the next iterations' chains overlap anyway.
const GROUP: u64 = 2;
/// Runs of up to this many groups are summed straight-line; longer ones by a loop.
const INLINE_GROUPS: u64 = 1;
/// f16/bf16 runs of up to this many elements are summed straight-line.
const INLINE_ELEMENTS: u64 = 4;

/// For an accumulate with innermost reduction loops, at least one other loop, and at most
/// [`MAX_TERMS`] reduction points, or a sum from +0.0 with at most [`MAX_TERMS`] reduction
/// points: the number of loops outside the reduction loops.
pub(crate) fn reduction_split(stmt: &LoopStmt) -> Option<usize> {
    if stmt.action == LoopAction::Sum {
        let split = stmt.loops.len() - stmt.reduction_loops();
        let points = stmt.loops[split..]
            .iter()
            .try_fold(1u64, |n, l| n.checked_mul(l.extent))?;
        return (points <= MAX_TERMS).then_some(split);
    }
    if stmt.action != LoopAction::Accumulate {
        return None;
    }
    let inner = stmt
        .loops
        .iter()
        .rev()
        .take_while(|l| l.dst_stride == 0)
        .count();
    let split = stmt.loops.len() - inner;
    let points = stmt.loops[split..]
        .iter()
        .try_fold(1u64, |n, l| n.checked_mul(l.extent))?;
    (inner > 0 && split > 0 && (1..=MAX_TERMS).contains(&points)).then_some(split)
}

/// The source offsets of the points of `reductions`, relative to the first, in loop order.
pub(crate) fn terms(reductions: &[Loop]) -> Option<Vec<i64>> {
    let mut out = vec![0i64];
    for l in reductions {
        let mut next = Vec::with_capacity(out.len() * l.extent as usize);
        for &t in &out {
            for j in 0..l.extent as i64 {
                next.push(t.checked_add(l.src_stride.checked_mul(j)?)?);
            }
        }
        out = next;
    }
    Some(out)
}

/// Emits `dst[..bytes] += src[t..t + bytes]` for every `t` of `terms` in order, with the
/// destination read and written once; with `zero`, the sums start from +0.0 (zero bits) and
/// the destination is only written.
pub(crate) fn emit_run(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    bytes: u64,
    terms: &[i64],
    src: Addr,
    dst: Addr,
) -> Result<(), CodegenError> {
    if terms.is_empty() {
        // Reduction loops without points: nothing is added, and nothing written.
        return Ok(());
    }
    let size = u64::from(adder.lane().bytes());
    if let Adder::Call(_) = adder {
        let count = bytes / size;
        let step = size as i64;
        if count > INLINE_ELEMENTS {
            return counted_loop(
                b,
                Count::Const(count),
                src,
                dst,
                (step, step),
                &mut |b, s, d| {
                    element(b, adder, zero, terms, (s, 0), (d, 0));
                    Ok(())
                },
            );
        }
        for k in 0..count {
            let at = k as i64 * step;
            element(b, adder, zero, terms, (src, at), (dst, at));
        }
        return Ok(());
    }
    if bytes < 16 {
        for k in 0..bytes / size {
            let at = (k * size) as i64;
            element(b, adder, zero, terms, (src, at), (dst, at));
        }
        return Ok(());
    }
    let chunks = bytes / 16;
    let groups = chunks / GROUP;
    let step = (16 * GROUP) as i64;
    let whole: Vec<i64> = (0..GROUP as i64).map(|i| 16 * i).collect();
    if zero && groups > INLINE_GROUPS {
        // The destination is only written, so a group may overlap one already stored: it
        // gets the same sums again. Every group is whole, the last one ending at the run's
        // end: one loop body for the whole run.
        let last = bytes as i64 - step;
        clamped_loop(b, (src, dst), (step, step), (last, last), &mut |b, s, d| {
            vectors(b, adder, zero, terms, s, d, &whole);
        });
        return Ok(());
    }
    // A run that is not a whole number of vectors ends with a vector overlapping the one
    // before it. Both are summed in the same group, from the destination as it was before
    // either is stored, so the elements they share get the same sum twice (the same
    // additions in the same order), never an addition on top of a stored sum.
    let tail = bytes % 16 != 0;
    let looped = if groups > INLINE_GROUPS {
        // Keep the last whole vector out of the loop when the overlapping one needs it.
        let n = groups - u64::from(tail && chunks % GROUP == 0);
        counted_loop(
            b,
            Count::Const(n),
            src,
            dst,
            (step, step),
            &mut |b, s, d| {
                vectors(b, adder, zero, terms, s, d, &whole);
                Ok(())
            },
        )?;
        n * GROUP
    } else {
        0
    };
    let mut offsets: Vec<i64> = (looped..chunks).map(|c| 16 * c as i64).collect();
    if tail {
        offsets.push(bytes as i64 - 16);
    }
    let mut groups: Vec<&[i64]> = offsets.chunks(GROUP as usize).collect();
    if tail && groups.len() >= 2 && groups[groups.len() - 1].len() == 1 {
        // The overlapping vector joins the group of the vector it overlaps.
        groups.pop();
        let last = groups.len() - 1;
        groups[last] = &offsets[offsets.len() - groups[last].len() - 1..];
    }
    for group in groups {
        vectors(b, adder, zero, terms, src, dst, group);
    }
    Ok(())
}

/// Sums the vectors at `offsets` over every term: all loaded, then all added, then all
/// stored.
fn vectors(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    terms: &[i64],
    src: Addr,
    dst: Addr,
    offsets: &[i64],
) {
    let ty = adder.vector();
    let start = zero.then(|| zeros(b, ty));
    let mut acc: Vec<_> = offsets
        .iter()
        .map(|&o| start.unwrap_or_else(|| load(b, ty, dst, o)))
        .collect();
    for &t in terms {
        for (a, &o) in acc.iter_mut().zip(offsets) {
            let x = load(b, ty, src, t + o);
            *a = adder.add_vectors(b, *a, x);
        }
    }
    for (a, &o) in acc.into_iter().zip(offsets) {
        store(b, a, dst, o);
    }
}

/// Emits `dst[to] += src[t + from]` for one element and every `t` of `terms` in order, the
/// destination read and written once; with `zero`, the sum starts from +0.0 and the
/// destination is only written. `sum.rs` sums an element in place (`from == to`), `phases.rs`
/// one of a phase into its interleaved place.
pub(crate) fn element(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    terms: &[i64],
    (src, from): (Addr, i64),
    (dst, to): (Addr, i64),
) {
    let ty = adder.lane();
    let mut acc = if zero {
        zeros(b, ty)
    } else {
        load(b, ty, dst, to)
    };
    for &t in terms {
        let x = load(b, ty, src, t + from);
        acc = adder.add_elements(b, acc, x);
    }
    store(b, acc, dst, to);
}

/// A value of type `ty` (a lane or a vector of lanes) with all bits zero: +0.0 for floats.
pub(crate) fn zeros(b: &mut FunctionBuilder, ty: Type) -> Value {
    if ty.is_vector() {
        let lane = zeros(b, ty.lane_type());
        return b.ins().splat(ty, lane);
    }
    match ty {
        types::F32 => b.ins().f32const(0.0),
        types::F64 => b.ins().f64const(0.0),
        _ => b.ins().iconst(ty, 0),
    }
}

/// The half-precision element types, whose sums the JIT's precompiled sum helper makes
/// ([`SumRuns`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HalfFloat {
    /// float16.
    F16,
    /// bfloat16.
    Bf16,
}

impl HalfFloat {
    /// `dtype` when it is f16 or bf16.
    pub fn of(dtype: DType) -> Option<HalfFloat> {
        match dtype {
            DType::F16 => Some(HalfFloat::F16),
            DType::BF16 => Some(HalfFloat::Bf16),
            _ => None,
        }
    }
}

/// An accumulate of f16 or bf16 elements that the JIT's precompiled sum helper runs instead
/// of generated code: CLIF has no half-precision arithmetic, so the generated code adds such
/// elements one at a time through a helper call per element and term (a 3x3 Col2Im of
/// 4x576x4096 f16 ran at 79 times memcpy's time), where the helper converts eight at a time
/// to f32 and back, with the same additions in the same order. At every point of its loops
/// outside the reduction loops, one run is summed over the points of the reduction loops (its
/// terms; one term, at offset 0, when there are none), from +0.0 for a sum from zero
/// (`LoopAction::Sum`), else onto the destination.
///
/// A sum from +0.0 of a stride-2 Col2Im, whose runs are single elements every other element
/// apart (`pair-phases`' rows of one phase or two), is summed a row at a time (`row`): eight
/// elements of each phase as vectors, the two phases interleaved into whole vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SumRuns {
    /// The loops outside the reduction loops: the nest of runs (of rows, with `row`, whose
    /// loops are the last [`SumRow::loops`] of these).
    pub split: usize,
    /// Whether the sums start from +0.0 (`LoopAction::Sum`), the destination never read.
    pub from_zero: bool,
    /// The element type.
    pub dtype: HalfFloat,
    /// The row, when the runs are elements of rows of every other element.
    pub row: Option<SumRow>,
}

impl SumRuns {
    /// `stmt`'s sums over `dtype`, when the helper runs them: an accumulate of f16 or bf16
    /// whose loops are not empty and whose reduction loops have at most
    /// [`relayout_ir::MAX_SUM_TERMS`] points, but not a sum from +0.0 of one term per run
    /// (generated code makes those without calls).
    pub fn of(stmt: &LoopStmt, dtype: DType) -> Option<SumRuns> {
        let dtype = HalfFloat::of(dtype)?;
        if !stmt.action.is_accumulate() || stmt.loops.iter().any(|l| l.extent == 0) {
            return None;
        }
        let split = stmt.loops.len() - stmt.reduction_loops();
        let terms = terms(&stmt.loops[split..])?;
        if stmt.is_one_term_sum() {
            // `+0.0 + x` alone is bit operations, which generated code makes on whole vectors
            // (`Adder::HalfZeroPlus`), in shuffle blocks or paired phases where the runs are
            // elements.
            return None;
        }
        let row = crate::phases::row_shape(stmt, split, 2);
        (terms.len() as u64 <= MAX_TERMS).then_some(SumRuns {
            split,
            from_zero: stmt.action == LoopAction::Sum,
            dtype,
            row,
        })
    }

    /// The terms of `stmt` (the statement these runs were made for): source byte offsets
    /// relative to a run, in the order they are added.
    pub fn terms(self, stmt: &LoopStmt) -> Vec<i64> {
        terms(&stmt.loops[self.split..]).unwrap_or_default()
    }
}
