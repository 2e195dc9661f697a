//! The loop IR: what code generation consumes. Each statement is a perfect loop nest whose
//! accesses are byte offsets `offset + sum(stride_i * i_i)` into the source and the destination;
//! at each point it moves a contiguous run of `bytes` bytes. Loops are listed outermost first.
//!
//! ```text
//! copy 16 bytes %dst[0 + 64 * i0 + 16 * i1] = %src[0 + 32 * i0 + 16 * i1]
//!   for i0 in 0 to 4, i1 in 0 to 2
//! ```
//!
//! Consecutive statements whose outer loops are the same may be *fused* into a [`Band`]: the
//! band's loops run once, and at each of their iterations every member statement runs its own
//! inner loops, in statement order. So one sweep over the outer loops does the work of all
//! members (Col2Im's fill and its accumulations meet each output plane while it is in
//! cache). A band may hold bands nested in it, which share more loops: a padded plane's
//! top and bottom rows, then a band over its rows, each row written whole, inside a band over
//! planes. The verifier only accepts a band whose iterations touch disjoint destination
//! bytes, so a fused kernel always computes exactly what its unfused statements compute, in
//! the same order per element; dropping the bands, or any of them, is always correct.

use crate::{DType, Scalar, TensorType};

/// One loop: `extent` iterations, moving each operand by a byte stride per iteration.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Loop {
    /// Number of iterations (`i in 0 to extent`).
    pub extent: u64,
    /// Bytes the source offset advances per iteration (may be negative or 0).
    pub src_stride: i64,
    /// Bytes the destination offset advances per iteration (may be negative or 0).
    pub dst_stride: i64,
}

/// What a loop statement does at each point.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum LoopAction {
    /// Copy `bytes` bytes from the source to the destination.
    Copy,
    /// Write `bytes / elem_size` copies of `value` to the destination (the source is not
    /// read); zero bytes for the zero value.
    Fill {
        /// The element written.
        value: Scalar,
    },
    /// Add `bytes / elem_size` elements of the source into the destination, element by element.
    Accumulate,
    /// Like [`LoopAction::Accumulate`], but the sums start from +0.0 (integer 0), not from what
    /// the destination holds: at every point whose innermost reduction loops (the innermost
    /// loops of destination stride 0) are all at their first iteration, the run becomes
    /// `+0.0 + src`, element by element; at the other points the source is added as by
    /// `accumulate`. So each run of the loops outside the reduction loops is
    /// `((+0.0 + t0) + t1) + ...` over its terms in loop order, and the destination is never
    /// read. Printed `accumulate N bytes %dst[...] = 0 + %src[...]`.
    Sum,
}

impl LoopAction {
    /// A fill with all-zero bytes.
    pub const ZERO_FILL: LoopAction = LoopAction::Fill {
        value: Scalar::ZERO,
    };

    /// Whether this adds the source into sums: `accumulate` with or without the zero start
    /// ([`LoopAction::Accumulate`], [`LoopAction::Sum`]).
    pub fn is_accumulate(self) -> bool {
        matches!(self, LoopAction::Accumulate | LoopAction::Sum)
    }

    /// Whether this is a fill (of any value).
    pub fn is_fill(self) -> bool {
        matches!(self, LoopAction::Fill { .. })
    }

    /// The keyword that starts the statement in the printed IR: `copy`, `fill` or
    /// `accumulate`.
    pub fn keyword(self) -> &'static str {
        match self {
            LoopAction::Copy => "copy",
            LoopAction::Fill { .. } => "fill",
            LoopAction::Accumulate | LoopAction::Sum => "accumulate",
        }
    }
}

/// A perfect loop nest with one action in its body.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LoopStmt {
    /// What happens at each point.
    pub action: LoopAction,
    /// Length of the contiguous run moved at each point, in bytes: a positive multiple of the
    /// element size.
    pub bytes: u64,
    /// Byte offset of the first run in the source, before any loop advances it.
    pub src_offset: i64,
    /// Byte offset of the first run in the destination.
    pub dst_offset: i64,
    /// Outermost first.
    pub loops: Vec<Loop>,
    /// For an accumulation whose terms each add to part of the run: the part, which slides
    /// with the innermost loop (see [`Window`]). `None`: every term adds to the whole run.
    pub window: Option<Window>,
}

/// Whether the byte ranges `windows` (half-open, in any order) together cover every byte of
/// a run of `run` bytes: the `window` check of the verifier, and where `output-stationary`
/// may make a row whole.
pub fn windows_cover(windows: &[(u64, u64)], run: u64) -> bool {
    let mut sorted = windows.to_vec();
    sorted.sort_unstable();
    sorted
        .iter()
        .try_fold(0u64, |end, &(lo, hi)| (lo <= end).then_some(end.max(hi)))
        .is_some_and(|end| end >= run)
}

/// The bytes of its run that each term of an accumulation adds to, when they differ from term
/// to term: the term at iteration `k` of the innermost loop (a reduction loop) adds only the
/// source elements at run bytes `[start + step * k, end + step * k)`, clamped to the run;
/// the elements of the run outside that range receive nothing from it. Printed after the
/// source, `within bytes START + STEP * iN to END + STEP * iN` (`iN` the innermost loop).
///
/// This is how a Col2Im sums a whole output row at once: a kernel position `kw` shifts its
/// source row by `kw` elements against the output row, so at the row's ends some positions
/// have no element to add. Without windows the row's ends would be cells of their own, summed
/// element by element. The source bytes outside a term's window are not read (they may lie
/// outside the source), and the verifier requires every byte of the run to be inside some
/// term's window.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Window {
    /// Run byte where the window of iteration 0 starts (before clamping; may be negative).
    pub start: i64,
    /// Run byte where the window of iteration 0 ends (before clamping; may pass the run).
    pub end: i64,
    /// Bytes both ends move per iteration of the innermost loop (may be negative or 0).
    pub step: i64,
}

impl Window {
    /// The run bytes `[lo, hi)` that iteration `k` of the innermost loop adds in a run of
    /// `bytes` bytes (`lo == hi` when none), or `None` when the arithmetic overflows.
    pub fn at(&self, k: u64, bytes: u64) -> Option<(u64, u64)> {
        let shift = self.step.checked_mul(i64::try_from(k).ok()?)?;
        let len = i64::try_from(bytes).ok()?;
        let lo = self.start.checked_add(shift)?.clamp(0, len);
        let hi = self.end.checked_add(shift)?.clamp(0, len);
        Some((lo as u64, (hi.max(lo)) as u64))
    }
}

/// The most points the reduction loops of an `accumulate ... = 0 + ...` ([`LoopAction::Sum`])
/// may have (checked by the verifier: code generation unrolls them).
pub const MAX_SUM_TERMS: u64 = 64;

impl LoopStmt {
    /// The number of innermost loops of destination stride 0 (the *reduction loops* of an
    /// accumulate: all points of them add into the same destination run).
    pub fn reduction_loops(&self) -> usize {
        self.loops
            .iter()
            .rev()
            .take_while(|l| l.dst_stride == 0)
            .count()
    }

    /// Whether this is a sum from +0.0 of one term per run ([`LoopAction::Sum`] without
    /// reduction loops): each point writes `+0.0 + x` for every element `x` of its source run,
    /// which is a copy but for -0.0 (it becomes +0.0) and signalling NaNs (they become quiet).
    /// As for a copy, the last point that writes an element decides it, so its points may be
    /// reordered wherever a copy's may (where they write disjoint bytes).
    pub fn is_one_term_sum(&self) -> bool {
        self.action == LoopAction::Sum && self.reduction_loops() == 0
    }

    /// Whether every element this writes is a function of one source element: a copy, or a
    /// sum of one term per run ([`LoopStmt::is_one_term_sum`]). The passes and code generation
    /// move such a statement's elements as they move a copy's (register blocks, shuffles).
    pub fn moves_like_copy(&self) -> bool {
        self.action == LoopAction::Copy || self.is_one_term_sum()
    }

    /// Number of points of the nest, saturating.
    pub fn trip_count(&self) -> u64 {
        self.loops
            .iter()
            .fold(1u64, |acc, l| acc.saturating_mul(l.extent))
    }

    /// Whether `other` is this statement but for its offsets and the extents of its loops
    /// inside `depth` shared loops (those it does not share with the band they are members
    /// of), reduction loops excepted (their extents make the terms): the same action, run,
    /// window and strides, so that inside the band one body serves both, given each its
    /// addresses and counts. A 3-D Col2Im's accumulations of the three kernel depths into the
    /// rows of a volume are alike: they sum over the same rows of kernel positions, and the
    /// first and last depth positions miss one plane of the volume.
    pub fn alike(&self, other: &LoopStmt, depth: usize) -> bool {
        let first_reduction = self.loops.len() - self.reduction_loops();
        self.action == other.action
            && self.bytes == other.bytes
            && self.window == other.window
            && self.loops.len() == other.loops.len()
            && self
                .loops
                .iter()
                .zip(&other.loops)
                .enumerate()
                .all(|(i, (a, b))| {
                    a.src_stride == b.src_stride
                        && a.dst_stride == b.dst_stride
                        && (a.extent == b.extent || (depth..first_reduction).contains(&i))
                })
    }
}

/// Statements `first .. first + len` of a kernel fused over their `depth` outermost loops,
/// which all of them share (same extents, same destination strides): see the module docs.
///
/// A band nested in another has a range of the other's members (fewer of them) and more
/// shared loops; at each iteration of the other's loops it runs, in its place among the
/// other's members, as a band over its further loops.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Band {
    /// Index of the first member statement.
    pub first: usize,
    /// Number of member statements (at least 2).
    pub len: usize,
    /// Number of shared outer loops (at least 1).
    pub depth: usize,
}

impl Band {
    /// The indices of the member statements.
    pub fn members(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.len
    }

    /// Whether `other` is nested in this band: its members are some of this band's, and it
    /// shares more loops.
    pub fn contains(&self, other: Band) -> bool {
        other.first >= self.first
            && other.first + other.len <= self.first + self.len
            && other.len < self.len
            && other.depth > self.depth
    }
}

/// A loop kernel: `dst` is fully defined by running `stmts` in order.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LoopKernel {
    /// A name for printing, e.g. `space_to_depth`. Letters, digits and `_`.
    pub name: String,
    /// The type of the tensor the kernel reads (`%src`).
    pub src: TensorType,
    /// The type of the tensor the kernel writes (`%dst`).
    pub dst: TensorType,
    /// The statements, run in order; a later one overwrites what an earlier one wrote.
    pub stmts: Vec<LoopStmt>,
    /// Fused groups of consecutive statements, in the order of their first members, a band
    /// before the bands nested in it (see [`Band`]); two bands are either apart or one is
    /// nested in the other. Statements in no band run alone. Empty for an unfused kernel.
    pub bands: Vec<Band>,
}

/// One unit of a kernel's schedule: a statement alone or a band of fused statements.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    /// Statement `i`, run alone.
    Stmt(usize),
    /// A band.
    Band(Band),
}

impl LoopKernel {
    /// The kernel of the same name and tensors with statements `stmts` in bands `bands` (what
    /// a pass returns: it need not copy the statements it replaces).
    pub fn with_stmts(&self, stmts: Vec<LoopStmt>, bands: Vec<Band>) -> LoopKernel {
        LoopKernel {
            name: self.name.clone(),
            src: self.src.clone(),
            dst: self.dst.clone(),
            stmts,
            bands,
        }
    }

    /// The element type (source and destination always share it).
    pub fn dtype(&self) -> DType {
        self.dst.dtype
    }

    /// The statements and bands in the order they run (bands nested in others are inside
    /// those: see [`LoopKernel::units_in`]). Assumes well-formed bands (in order, nested or
    /// apart, inside `stmts`), which the parser and the verifier check.
    pub fn units(&self) -> Vec<Unit> {
        self.units_between(0, self.stmts.len(), None)
    }

    /// What runs at each iteration of `band`'s loops, in order: its members that are in no
    /// band nested in it, and the bands nested directly in it.
    pub fn units_in(&self, band: Band) -> Vec<Unit> {
        self.units_between(band.first, band.first + band.len, Some(band))
    }

    /// The units of statements `from .. to`, inside `parent` (when some): a band found there
    /// is the outermost one starting at its first member, other than `parent` itself.
    fn units_between(&self, from: usize, to: usize, parent: Option<Band>) -> Vec<Unit> {
        let mut units = Vec::with_capacity(to.saturating_sub(from));
        let mut i = from;
        while i < to {
            // Bands are ordered by first member, a band before those nested in it.
            let at = self.bands.partition_point(|b| b.first < i);
            let band = self.bands[at..]
                .iter()
                .take_while(|b| b.first == i)
                .find(|b| {
                    Some(**b) != parent
                        && b.first + b.len <= to
                        && parent.is_none_or(|p| b.depth > p.depth)
                });
            match band {
                Some(b) => {
                    units.push(Unit::Band(*b));
                    i += b.len.max(1);
                }
                None => {
                    units.push(Unit::Stmt(i));
                    i += 1;
                }
            }
        }
        units
    }

    /// The innermost band statement `i` is a member of, if any: the one whose loops its nest
    /// runs inside.
    pub fn band_of(&self, i: usize) -> Option<Band> {
        self.bands
            .iter()
            .filter(|b| b.members().contains(&i))
            .max_by_key(|b| b.depth)
            .copied()
    }

    /// The same kernel without bands: every statement runs alone. Always computes the same
    /// result as `self` when `self` verifies.
    pub fn unfused(&self) -> LoopKernel {
        LoopKernel {
            bands: Vec::new(),
            ..self.clone()
        }
    }
}
