//! Kernels that run without generated code of their own.
//!
//! When every statement of a kernel has its whole nest run by one of the JIT's precompiled
//! helpers (`relayout_codegen::helper_kernel`: a copy or a fill of zeros into an output of
//! 8 MiB or more, in runs of whole cache lines; a transpose of 4- or 8-byte elements into such
//! an output, in register blocks; rows of every other source element; pixels of three byte
//! channels into planes and back; Col2Im's sums of f16 and bf16 contributions, and the zero fill of the
//! planes they add onto; in a kernel of `relayout_codegen::MANY_STATEMENTS` or more, every other
//! copy and fill, with ordinary stores), the JIT calls those
//! helpers itself, with the same loops, strides and offsets, and compiles nothing: Cranelift's
//! fixed cost and its register allocation were most of such a kernel's compile time (a padded
//! SpaceToBatchND of ten statements took about 1 ms, almost all of it in Cranelift). A fused
//! band runs its shared loops in the JIT, around its members' helpers (see
//! [`HelperUnit::run`]).
//!
//! The entries keep the contract of a kernel function (see `module.rs`): entry `k` runs unit
//! `k` of the schedule (a statement or a band) over the iterations `[start, min(end,
//! extent))` of its outer loop (for a statement, the outer loop of its helper's nest, which
//! [`helper_cut`] gives the threaded runs) (a statement without loops: its one run when `start < end`),
//! `RUN_ALL` runs every unit in order, and every call ends with a store fence, as the
//! generated function does.

use crate::helpers::{
    fill_nest, move_nest, relayout_deinterleave_nest, relayout_interleave_nest,
    relayout_store_fence, relayout_stream_copy_nest, relayout_stream_every_other_nest,
    relayout_stream_transpose_nest, relayout_stream_zero_nest, sum_nest, zero_nest, RowForm,
    StreamLoop, SumNest, SumShape,
};
use crate::module::outer_iterations_disjoint;
use relayout_codegen::{HelperRuns, RUN_ALL};
use relayout_ir::{Loop, LoopKernel, LoopStmt, Unit};

/// One statement of a helper kernel, as its helper reads its nest.
pub(crate) struct HelperStmt {
    runs: HelperRuns,
    bytes: u64,
    src_offset: i64,
    dst_offset: i64,
    /// The loops, outermost first, with their extents as counts (for a transpose, the nest
    /// of its register blocks; for a gather of every other element, the nest of its rows; for
    /// sums, the loops outside the reduction loops).
    loops: Vec<StreamLoop>,
    /// For sums (`HelperRuns::Sum`, and only then): what the sum helper needs.
    sum: Option<Sums>,
}

/// A statement's sums, as the sum helper takes them.
struct Sums {
    /// The helper's instance for the element type, the count of terms and the start.
    helper: SumNest,
    /// The source offsets of a run's terms, relative to the run.
    terms: Vec<isize>,
    /// The row, when the runs are elements of rows of every other element (whose loops are
    /// then not in the statement's `loops`).
    row: Option<RowForm>,
}

/// The nest `runs`' helper runs for `stmt`: its points partition the statement's points.
fn helper_nest(stmt: &LoopStmt, runs: HelperRuns) -> Vec<Loop> {
    match runs {
        HelperRuns::Transpose(blocks) => blocks.loops(stmt),
        HelperRuns::EveryOther(rows) => rows.loops(stmt),
        HelperRuns::Deinterleave(rows) => rows.loops(stmt),
        HelperRuns::Interleave(rows) => rows.loops(stmt),
        HelperRuns::Sum(sums) => {
            let row_loops = sums.row.map_or(0, |r| r.loops());
            stmt.loops[..sums.split - row_loops].to_vec()
        }
        HelperRuns::Copy
        | HelperRuns::Zero
        | HelperRuns::Clear
        | HelperRuns::Move
        | HelperRuns::Fill(_) => stmt.loops.clone(),
    }
}

/// How a threaded run may cut `stmt` when `runs`' helper runs it: the extent of the loop
/// whose iterations the pieces are (the outer loop of the helper's nest, which is not the
/// statement's outer loop when the helper blocks or drops it: a transpose's register blocks,
/// the rows one long loop is cut into, rows of pixels under a loop of channels; 1 for a nest
/// without loops, which runs as one piece) and whether different iterations of it write
/// disjoint destination bytes.
pub(crate) fn helper_cut(stmt: &LoopStmt, runs: HelperRuns) -> (u64, bool) {
    let nest = helper_nest(stmt, runs);
    let Some(outer) = nest.first() else {
        return (1, false);
    };
    let disjoint = match runs {
        // A prefix of the statement's loops: its outer loop is the statement's.
        HelperRuns::Copy
        | HelperRuns::Zero
        | HelperRuns::Clear
        | HelperRuns::Move
        | HelperRuns::Fill(_)
        | HelperRuns::Sum(_) => outer_iterations_disjoint(stmt),
        // Blocks or rows of the statement's points: different iterations are different
        // points, which write disjoint bytes when every point does.
        HelperRuns::Transpose(_)
        | HelperRuns::EveryOther(_)
        | HelperRuns::Deinterleave(_)
        | HelperRuns::Interleave(_) => relayout_ir::dependence::points_disjoint(stmt, 0),
    };
    (outer.extent, disjoint)
}

impl HelperStmt {
    fn new(stmt: &LoopStmt, runs: HelperRuns) -> HelperStmt {
        let nest = helper_nest(stmt, runs);
        let reads_src = !matches!(
            runs,
            HelperRuns::Zero | HelperRuns::Clear | HelperRuns::Fill(_)
        );
        HelperStmt {
            runs,
            bytes: stmt.bytes,
            src_offset: stmt.src_offset,
            dst_offset: stmt.dst_offset,
            loops: nest
                .iter()
                .map(|l| StreamLoop {
                    count: l.extent,
                    dst_stride: l.dst_stride,
                    src_stride: if reads_src { l.src_stride } else { 0 },
                })
                .collect(),
            sum: match runs {
                HelperRuns::Sum(sums) => {
                    let terms: Vec<isize> =
                        sums.terms(stmt).into_iter().map(|t| t as isize).collect();
                    let row = sums.row.map(|r| RowForm {
                        count: r.count as usize,
                        phase_src: r.phase_src.map(|p| p as isize),
                    });
                    Some(Sums {
                        helper: sum_nest(sums.dtype, terms.len(), sums.from_zero),
                        terms,
                        row,
                    })
                }
                _ => None,
            },
        }
    }

    /// Runs the iterations `[start, min(end, extent))` of the outer loop.
    ///
    /// # Safety
    /// The statement comes from a verified kernel (every run of its nest lies inside its
    /// tensors), `src` and `dst` point to buffers of exactly the kernel's tensor sizes, which
    /// do not overlap, and no other thread touches the destination bytes of these iterations.
    unsafe fn run(&self, src: *const u8, dst: *mut u8, start: u64, end: u64) {
        if self.loops.iter().any(|l| l.count == 0) {
            // A nest with an empty loop has no points.
            return;
        }
        let (src, dst) = (
            src.wrapping_offset(self.src_offset as isize),
            dst.wrapping_offset(self.dst_offset as isize),
        );
        let Some(outer) = self.loops.first() else {
            if start < end {
                // SAFETY: the caller's contract; no loops, one run.
                unsafe { self.call(src, dst, &[]) };
            }
            return;
        };
        let end = end.min(outer.count);
        if start >= end {
            return;
        }
        if start == 0 && end == outer.count {
            // SAFETY: the caller's contract, for the whole nest.
            unsafe { self.call(src, dst, &self.loops) };
            return;
        }
        // A piece of the outer loop: the same nest from iteration `start`, `end - start` of
        // them. The offsets are inside the buffers by the caller's contract.
        let mut loops = self.loops.clone();
        loops[0].count = end - start;
        let (src, dst) = advanced(src, dst, outer, start);
        // SAFETY: the caller's contract, for these iterations.
        unsafe { self.call(src, dst, &loops) };
    }

    /// One helper call for the runs of `loops` from `src` and `dst`.
    ///
    /// # Safety
    /// As [`HelperStmt::run`], for every point of `loops`.
    unsafe fn call(&self, src: *const u8, dst: *mut u8, loops: &[StreamLoop]) {
        let (nest, depth) = (loops.as_ptr(), loops.len() as u64);
        // SAFETY: the caller's contract: every run of the nest lies inside both buffers, which
        // do not overlap, and `nest` points to `depth` loops.
        unsafe {
            match self.runs {
                HelperRuns::Copy => relayout_stream_copy_nest(dst, src, self.bytes, nest, depth),
                HelperRuns::Zero => relayout_stream_zero_nest(dst, self.bytes, nest, depth),
                HelperRuns::Clear => zero_nest(dst, self.bytes as usize, loops),
                HelperRuns::Move => move_nest(dst, src, self.bytes as usize, loops),
                HelperRuns::Fill(pattern) => fill_nest(dst, pattern, self.bytes as usize, loops),
                HelperRuns::Transpose(blocks) => relayout_stream_transpose_nest(
                    dst,
                    src,
                    self.bytes,
                    [blocks.src_row, blocks.dst_row],
                    nest,
                    depth,
                ),
                HelperRuns::EveryOther(rows) => {
                    relayout_stream_every_other_nest(dst, src, self.bytes, rows.count, nest, depth)
                }
                HelperRuns::Deinterleave(rows) => {
                    relayout_deinterleave_nest(dst, src, rows.count, rows.plane, nest, depth)
                }
                HelperRuns::Interleave(rows) => {
                    relayout_interleave_nest(dst, src, rows.count, rows.plane, nest, depth)
                }
                HelperRuns::Sum(_) => {
                    if let Some(sums) = &self.sum {
                        let shape = SumShape {
                            elements: self.bytes as usize / 2,
                            terms: &sums.terms,
                            row: sums.row,
                        };
                        (sums.helper)(dst, src, shape, loops)
                    }
                }
            }
        }
    }
}

/// `src` and `dst` advanced by `i` iterations of `l` (in bounds by the callers' contracts).
fn advanced(src: *const u8, dst: *mut u8, l: &StreamLoop, i: u64) -> (*const u8, *mut u8) {
    let i = i as i64;
    (
        src.wrapping_offset(i.wrapping_mul(l.src_stride) as isize),
        dst.wrapping_offset(i.wrapping_mul(l.dst_stride) as isize),
    )
}

/// One unit of a helper kernel's schedule.
enum HelperUnit {
    Stmt(HelperStmt),
    /// A band: its members, each with all its loops, the first `depth` of which (the same
    /// extents in every member) the band runs around them, `chunk` iterations of the
    /// innermost of them at a time.
    Band {
        depth: usize,
        members: Vec<HelperStmt>,
        chunk: u64,
    },
}

/// About the bytes a chunk of a band's iterations reads and writes: what stays in the level-1
/// data cache (32 KiB here) between its members.
const CHUNK_FOOTPRINT: u64 = 32 * 1024;

impl HelperUnit {
    /// The band of `members` over their `depth` outermost loops.
    fn band(depth: usize, members: Vec<HelperStmt>) -> HelperUnit {
        // The bytes one iteration of the innermost shared loop touches: each member's runs
        // (or rows) below the shared loops, once at the destination and once per term (or
        // copy) at the source.
        let per_iteration = members.iter().fold(0u64, |sum, m| {
            let runs = m.loops[depth..]
                .iter()
                .fold(1u64, |n, l| n.saturating_mul(l.count));
            let (reads, run_bytes) = match (&m.sum, m.runs) {
                (Some(sums), _) => {
                    let row = sums.row.map_or(1, |r| {
                        (r.count as u64).saturating_mul(1 + u64::from(r.phase_src.is_some()))
                    });
                    (sums.terms.len() as u64, m.bytes.saturating_mul(row))
                }
                (None, HelperRuns::Zero | HelperRuns::Clear | HelperRuns::Fill(_)) => (0, m.bytes),
                (None, _) => (1, m.bytes),
            };
            sum.saturating_add(runs.saturating_mul(run_bytes).saturating_mul(1 + reads))
        });
        let chunk = (CHUNK_FOOTPRINT / per_iteration.max(1)).max(1);
        HelperUnit::Band {
            depth,
            members,
            chunk,
        }
    }

    /// Runs the iterations `[start, min(end, extent))` of the unit's outer loop.
    ///
    /// A band runs `chunk` iterations of its innermost shared loop at a time, each member over
    /// all of them before the next member: one helper call per member and chunk instead of
    /// per iteration (a 3x3 Col2Im's band over rows has 62 of them per plane, each a row of
    /// 248 bytes and its two edge elements), while the chunk's data stays in cache from one
    /// member to the next. The iterations of a band write disjoint bytes (the verifier's
    /// `bands` check), and a member reads only the source and what its own iteration
    /// writes, so the iterations may run in any order that keeps the members' order within
    /// each: the result is that of the band run iteration by iteration (threads already run
    /// them in any order).
    ///
    /// # Safety
    /// As [`HelperStmt::run`], for every member.
    unsafe fn run(&self, src: *const u8, dst: *mut u8, start: u64, end: u64) {
        let (depth, members, chunk) = match self {
            // SAFETY: the caller's contract.
            HelperUnit::Stmt(stmt) => return unsafe { stmt.run(src, dst, start, end) },
            HelperUnit::Band {
                depth,
                members,
                chunk,
            } => (*depth, members, *chunk),
        };
        let Some(first) = members.first() else {
            return;
        };
        let shared: Vec<u64> = first.loops[..depth].iter().map(|l| l.count).collect();
        if shared.contains(&0) {
            return;
        }
        let end = end.min(shared[0]);
        if start >= end {
            return;
        }
        // The point of the shared loops outside the innermost one; the innermost runs in
        // chunks, each member's nest from it inwards with the chunk's count.
        let inner = depth - 1;
        let mut point = vec![0u64; inner];
        let (mut lo, hi) = (start, end);
        if inner > 0 {
            point[0] = start;
            lo = 0;
        }
        let mut nests: Vec<Vec<StreamLoop>> =
            members.iter().map(|m| m.loops[inner..].to_vec()).collect();
        loop {
            let hi = if inner == 0 { hi } else { shared[inner] };
            let mut at = lo;
            while at < hi {
                let n = chunk.min(hi - at);
                for (m, nest) in members.iter().zip(nests.iter_mut()) {
                    let (mut s, mut d) = (
                        src.wrapping_offset(m.src_offset as isize),
                        dst.wrapping_offset(m.dst_offset as isize),
                    );
                    for (l, &i) in m.loops.iter().zip(&point) {
                        (s, d) = advanced(s, d, l, i);
                    }
                    (s, d) = advanced(s, d, &nest[0], at);
                    nest[0].count = n;
                    // SAFETY: the caller's contract: these points of the band lie in the
                    // verified domain of every member, and the order is one the band allows
                    // (see above).
                    unsafe { m.call(s, d, nest) };
                }
                at += n;
            }
            // The next point of the loops outside the innermost, the innermost of them
            // fastest; done after the last iteration of the outermost.
            let mut k = inner;
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                point[k] += 1;
                if point[k] < if k == 0 { end } else { shared[k] } {
                    break;
                }
                point[k] = 0;
            }
            lo = 0;
        }
    }
}

/// A kernel whose every statement runs in a helper (see the module documentation).
pub(crate) struct HelperKernel {
    units: Vec<HelperUnit>,
}

impl HelperKernel {
    /// The helpers of `kernel`'s statements, `runs` (from `relayout_codegen::helper_kernel`),
    /// grouped into its schedule's units.
    pub(crate) fn new(kernel: &LoopKernel, runs: &[HelperRuns]) -> HelperKernel {
        let stmt = |i: usize| HelperStmt::new(&kernel.stmts[i], runs[i]);
        let units = kernel
            .units()
            .into_iter()
            .map(|unit| match unit {
                Unit::Stmt(i) => HelperUnit::Stmt(stmt(i)),
                Unit::Band(band) => {
                    HelperUnit::band(band.depth, band.members().map(stmt).collect())
                }
            })
            .collect();
        HelperKernel { units }
    }

    /// Runs entry `entry` (`RUN_ALL`: every unit in order) over `[start, end)`, as the
    /// kernel's generated function would, then fences the streaming stores.
    ///
    /// # Safety
    /// As [`HelperStmt::run`], for every statement run.
    pub(crate) unsafe fn run_entry(
        &self,
        src: *const u8,
        dst: *mut u8,
        entry: u64,
        start: u64,
        end: u64,
    ) {
        if entry == RUN_ALL {
            for unit in &self.units {
                // SAFETY: the caller's contract.
                unsafe { unit.run(src, dst, start, end) };
            }
        } else if let Some(unit) = usize::try_from(entry).ok().and_then(|k| self.units.get(k)) {
            // SAFETY: the caller's contract.
            unsafe { unit.run(src, dst, start, end) };
        }
        relayout_store_fence();
    }
}
