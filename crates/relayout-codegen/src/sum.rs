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
use cranelift_codegen::ir::{
    types, ConstantData, Endianness, InstBuilder, MemFlagsData, Type, Value,
};
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
/// [`MAX_TERMS`] reduction points, or a sum from +0.0 or an accumulate with a window with at
/// most [`MAX_TERMS`] reduction points: the number of loops outside the reduction loops.
pub(crate) fn reduction_split(stmt: &LoopStmt) -> Option<usize> {
    // An accumulation with a window is always summed here (its terms add to parts of the run).
    if stmt.action == LoopAction::Sum || stmt.window.is_some() {
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

/// The run bytes `[lo, hi)` that each term of `stmt` adds (its [`relayout_ir::Window`] at the
/// term's iteration of the innermost loop), in the order of [`terms`] over the reduction loops
/// `stmt.loops[split..]`; `None` without a window or on overflow.
pub(crate) fn term_windows(stmt: &LoopStmt, split: usize) -> Option<Vec<(u64, u64)>> {
    let window = stmt.window?;
    let inner = stmt.loops.last()?.extent;
    let count = stmt.loops[split..]
        .iter()
        .try_fold(1u64, |n, l| n.checked_mul(l.extent))?;
    (0..count)
        .map(|j| window.at(j % inner, stmt.bytes))
        .collect()
}

/// Emits `dst[..bytes] += src[t..t + bytes]` for every `t` of `terms` in order, with the
/// destination read and written once; with `zero`, the sums start from +0.0 (zero bits) and
/// the destination is only written. With `windows` (one per term), each term adds only the
/// bytes `[lo, hi)` of its window (see [`emit_windowed`]).
pub(crate) fn emit_run(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    bytes: u64,
    terms: &[i64],
    windows: Option<&[(u64, u64)]>,
    (src, dst): (Addr, Addr),
) -> Result<(), CodegenError> {
    if let Some(windows) = windows {
        return emit_windowed(b, adder, zero, bytes, terms, windows, (src, dst));
    }
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
            vectors(b, adder, zero, terms, None, (s, d), &whole);
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
                vectors(b, adder, zero, terms, None, (s, d), &whole);
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
    for group in vector_groups(&offsets, tail) {
        vectors(b, adder, zero, terms, None, (src, dst), group);
    }
    Ok(())
}

/// A run whose terms add to windows of it (`windows[j]` for `terms[j]`): the bytes that every
/// window covers (a multiple of the vector or element it is summed by) by the ordinary path,
/// the bytes before and after them straight-line, each vector of a term that its window
/// covers in part loaded from inside the window and completed by a neutral element (-0.0 for
/// floats, which leaves every sum as it is, -0.0 and NaN included; 0 for integers). A term
/// whose window misses a vector is not added to it at all. So each element receives exactly
/// the additions of the terms whose windows hold it, in term order; the verifier's `window`
/// check makes every element receive at least one, so an added -0.0 never meets a
/// signalling NaN that no real addition would have quieted.
fn emit_windowed(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    bytes: u64,
    terms: &[i64],
    windows: &[(u64, u64)],
    (src, dst): (Addr, Addr),
) -> Result<(), CodegenError> {
    let (terms, windows): (Vec<i64>, Vec<(u64, u64)>) = terms
        .iter()
        .zip(windows)
        .filter(|(_, w)| w.0 < w.1)
        .map(|(&t, &w)| (t, w))
        .unzip();
    let step = match adder {
        Adder::Call(_) => u64::from(adder.lane().bytes()),
        _ => 16,
    };
    let first = windows.iter().map(|w| w.0).max().unwrap_or(0);
    let last = windows.iter().map(|w| w.1).min().unwrap_or(bytes);
    let head = first.div_ceil(step) * step;
    let tail = (bytes - last.min(bytes)).div_ceil(step) * step;
    if head + tail + step <= bytes {
        let middle = bytes - head - tail;
        // Offsets inside a verified run: the wrapping add never wraps.
        let at = |a: Addr, delta: u64| Addr::new(a.base, a.offset.wrapping_add(delta as i64));
        straight(b, adder, zero, (0, head), &terms, &windows, (src, dst));
        emit_run(
            b,
            adder,
            zero,
            middle,
            &terms,
            None,
            (at(src, head), at(dst, head)),
        )?;
        straight(
            b,
            adder,
            zero,
            (head + middle, bytes),
            &terms,
            &windows,
            (src, dst),
        );
    } else {
        straight(b, adder, zero, (0, bytes), &terms, &windows, (src, dst));
    }
    Ok(())
}

/// The run bytes `[from, to)` of [`emit_windowed`] summed straight-line: by vectors (the
/// last overlapping the one before it when the part is not a whole number of them, in its
/// group), or element by element for parts shorter than a vector and for f16 and bf16.
fn straight(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    (from, to): (u64, u64),
    terms: &[i64],
    windows: &[(u64, u64)],
    (src, dst): (Addr, Addr),
) {
    if from >= to {
        return;
    }
    let size = u64::from(adder.lane().bytes());
    if matches!(adder, Adder::Call(_)) || to - from < 16 {
        for at in (from..to).step_by(size as usize) {
            let held: Vec<i64> = terms
                .iter()
                .zip(windows)
                .filter(|(_, w)| w.0 <= at && at < w.1)
                .map(|(&t, _)| t)
                .collect();
            element(b, adder, zero, &held, (src, at as i64), (dst, at as i64));
        }
        return;
    }
    let mut offsets: Vec<i64> = (from..to - 15).step_by(16).map(|o| o as i64).collect();
    let overlap = (to - from) % 16 != 0;
    if overlap {
        offsets.push(to as i64 - 16);
    }
    for group in vector_groups(&offsets, overlap) {
        vectors(b, adder, zero, terms, Some(windows), (src, dst), group);
    }
}

/// The groups of [`GROUP`] vectors of a straight-line run at `offsets`; with `overlap`, the
/// last vector overlaps the one before it and joins its group, so that both are summed from
/// the destination as it was before either is stored.
fn vector_groups(offsets: &[i64], overlap: bool) -> Vec<&[i64]> {
    let mut groups: Vec<&[i64]> = offsets.chunks(GROUP as usize).collect();
    if overlap && groups.len() >= 2 && groups[groups.len() - 1].len() == 1 {
        groups.pop();
        let last = groups.len() - 1;
        groups[last] = &offsets[offsets.len() - groups[last].len() - 1..];
    }
    groups
}

/// The vector of term `t` at run bytes `[at, at + 16)`, which its window `[lo, hi)` covers in
/// part: the bytes inside the window from the source, the others the neutral element. Only
/// bytes inside the window are read: one vector load inside it when it spans a vector, shifted
/// into place by a shuffle, else element by element.
/// `neutral` holds the neutral vector (and its bytes) once made, for the other vectors of the
/// same group.
fn windowed_vector(
    b: &mut FunctionBuilder,
    adder: Adder,
    neutral: &mut Option<(Value, Value)>,
    src: Addr,
    t: i64,
    at: u64,
    (lo, hi): (u64, u64),
) -> Value {
    let ty = adder.vector();
    let lane = adder.lane();
    let flags = MemFlagsData::new().with_endianness(Endianness::Little);
    let (neutral, filler) = *neutral.get_or_insert_with(|| {
        let v = match adder {
            Adder::Float(f) => {
                let z = if f == types::F32 {
                    b.ins().f32const(-0.0)
                } else {
                    b.ins().f64const(-0.0)
                };
                b.ins().splat(ty, z)
            }
            _ => zeros(b, ty),
        };
        let bytes = if ty == types::I8X16 {
            v
        } else {
            b.ins().bitcast(types::I8X16, flags, v)
        };
        (v, bytes)
    });
    let held = |pos: u64| lo <= pos && pos < hi;
    if hi - lo < 16 {
        let size = u64::from(lane.bytes());
        let mut v = neutral;
        for l in 0..16 / size {
            let pos = at + l * size;
            if held(pos) {
                let x = load(b, lane, src, t + pos as i64);
                v = b.ins().insertlane(v, x, l as u8);
            }
        }
        return v;
    }
    // The window covers the vector from `lo` on, or up to `hi`: the loaded bytes slide into
    // place and the neutral lanes fill the rest, which is 16 consecutive bytes of the two
    // operands side by side, the window's side first (`palignr`, one instruction, instead of
    // a shuffle through a mask from the constant pool). Any 16 consecutive bytes of the
    // neutral vector are whole neutral lanes, since the window's ends are whole lanes.
    let (first, second, start) = if lo > at {
        let inside = load(b, types::I8X16, src, t + lo as i64);
        (filler, inside, 16 - (lo - at))
    } else {
        let inside = load(b, types::I8X16, src, t + hi as i64 - 16);
        (inside, filler, 16 - (hi - at))
    };
    let mask: Vec<u8> = (0..16).map(|i| (start + i) as u8).collect();
    let imm = b.func.dfg.immediates.push(ConstantData::from(&mask[..]));
    let v = b.ins().shuffle(first, second, imm);
    if ty == types::I8X16 {
        v
    } else {
        b.ins().bitcast(ty, flags, v)
    }
}

/// Sums the vectors at `offsets` over every term: all loaded, then all added, then all
/// stored. With `windows` (one per term), a term adds to a vector only over its window: not
/// at all to a vector outside it, a vector inside it in part as [`windowed_vector`] completes
/// it.
fn vectors(
    b: &mut FunctionBuilder,
    adder: Adder,
    zero: bool,
    terms: &[i64],
    windows: Option<&[(u64, u64)]>,
    (src, dst): (Addr, Addr),
    offsets: &[i64],
) {
    let ty = adder.vector();
    let start = zero.then(|| zeros(b, ty));
    let mut acc: Vec<_> = offsets
        .iter()
        .map(|&o| start.unwrap_or_else(|| load(b, ty, dst, o)))
        .collect();
    let mut neutral = None;
    for (j, &t) in terms.iter().enumerate() {
        for (a, &o) in acc.iter_mut().zip(offsets) {
            let x = match windows.map(|w| w[j]) {
                None => load(b, ty, src, t + o),
                Some((lo, hi)) => {
                    let (from, to) = (o as u64, o as u64 + 16);
                    if hi <= from || to <= lo {
                        continue;
                    }
                    if lo <= from && to <= hi {
                        load(b, ty, src, t + o)
                    } else {
                        windowed_vector(b, adder, &mut neutral, src, t, from, (lo, hi))
                    }
                }
            };
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
        // A constant of zero bytes, which Cranelift makes with a register-zeroing `xorps`,
        // where a splat of a zero scalar loads it from the constant pool: a load per sum in
        // the loops that start every sum from +0.0 (all-zero bytes are +0.0 in every lane).
        let bytes = ConstantData::from(vec![0u8; ty.bytes() as usize]);
        let zero = b.func.dfg.constants.insert(bytes);
        return b.ins().vconst(ty, zero);
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
    /// without a window whose loops are not empty and whose reduction loops have at most
    /// [`relayout_ir::MAX_SUM_TERMS`] points, but not a sum from +0.0 of one term per run
    /// (generated code makes those without calls).
    pub fn of(stmt: &LoopStmt, dtype: DType) -> Option<SumRuns> {
        let dtype = HalfFloat::of(dtype)?;
        // The helper adds whole runs: a statement with a window is generated code.
        if !stmt.action.is_accumulate()
            || stmt.window.is_some()
            || stmt.loops.iter().any(|l| l.extent == 0)
        {
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
