//! The verifier: checks that a kernel is well formed and proves that every access stays inside
//! its tensor, so that code generated from a verified kernel can be called from safe Rust after
//! checking only the lengths of the two buffers.
//!
//! Each check has a name, which is what [`Diagnostic::check`] holds and what the report prints
//! (`; error: check in-bounds: ...`).
//!
//! Checks on both IRs:
//!
//! - `name`: the kernel name is non-empty and made of ASCII letters, digits and `_`, so that the
//!   printed kernel parses back.
//! - `element-types`: the source and the destination have the same element type.
//! - `tensor-size`: the element count and the byte size of each operand fit below 2^63
//!   ([`TensorType::size_bytes`]).
//!
//! Index-map kernels ([`verify_kernel`]), per statement:
//!
//! - `expr-depth`: no expression is deeper than [`MAX_EXPR_DEPTH`]. This is checked first and
//!   without recursion; a statement that fails it gets no other check, because every other
//!   check walks its expressions recursively.
//! - `ranges`: every dim range `lo to hi` has `lo <= hi` (`lo == hi` is an empty range).
//! - `guard-bounds`: every guard constraint `lo <= e < hi` has `lo <= hi`.
//! - `map-arity`: the destination map has one index per dim of the destination, and the source
//!   map (copy, accumulate) one per dim of the source.
//! - `declared-dims`: every dim used by a map or a guard is declared by the domain.
//! - `divisors`: every `floordiv` and `mod` divides by a positive constant.
//! - `overflow`: every guard expression can be evaluated at every point of the domain without
//!   overflowing `i64` (by interval analysis; the guard is evaluated before it is known to hold).
//! - `in-bounds`: for every point of the domain that satisfies the guard, every index of every
//!   access lies in `[0, size)` of its dim. The proof is interval analysis
//!   ([`AffineExpr::bounds`]) over the closed dim intervals `[lo, hi - 1]`, made aware of the
//!   guard in two ways: a constraint `lo <= d_i < hi` or `lo <= d_i + c < hi` narrows the
//!   interval of `d_i`, and any subexpression structurally equal to a constraint's expression
//!   is narrowed to `[lo, hi - 1]` (padding kernels index the source with exactly the guarded
//!   expression). A statement with an empty domain or an unsatisfiable guard is trivially in
//!   bounds. Bounding an index without overflow is part of the proof. This check runs only on
//!   statements that passed the structural checks above.
//!
//! Loop kernels ([`verify_loop_kernel`]), per statement:
//!
//! - `run-bytes`: the run length is a positive multiple of the element size.
//! - `extents`: every extent fits in `i64` (extents are unsigned, so never negative), because
//!   offsets are computed in signed 64-bit arithmetic.
//! - `fill-source`: a fill has source offset 0 and source strides 0; it does not read the
//!   source, and the printer does not show them, so anything else would not round-trip.
//! - `sum-terms`: an `accumulate ... = 0 + ...` (a sum from +0.0), and an accumulation with a
//!   window, has at most [`crate::MAX_SUM_TERMS`] points in its reduction loops (its innermost
//!   loops of destination stride 0), which code generation unrolls.
//! - `window`: a statement with a window ([`crate::Window`]) is an accumulation whose innermost
//!   loop is a reduction loop (destination stride 0) of at most [`crate::MAX_SUM_TERMS`]
//!   iterations; the window's ends and step are multiples of the element size, and every byte
//!   of the run lies in the window of at least one iteration (so code generation may add -0.0,
//!   which changes nothing, where a term has no element).
//! - `in-bounds`: exact. Over all points of the nest (none when an extent is 0), the lowest
//!   byte offset of each operand is `offset + sum(min(0, stride * (extent - 1)))` and the
//!   highest `offset + sum(max(0, stride * (extent - 1)))`; the lowest must be at least 0 and
//!   the highest plus the run length at most the operand's byte size. The source is not checked
//!   for a fill. With a window, the source is checked per iteration of the innermost loop over
//!   the bytes of its window only. Any overflow of `i64` on the way is an error.
//!
//! Loop kernels, per band:
//!
//! - `bands`: bands are in statement order, lie inside the kernel, have at least two members
//!   and a depth of at least one; two bands are apart, or one is nested in the other (some of
//!   its members, none outside it, more loops) and listed after it; every member has the
//!   band's loops first
//!   (same extents and destination strides), and different iterations of the band touch
//!   disjoint destination bytes ([`crate::dependence::iterations_disjoint`]). So a band never
//!   changes what the kernel computes, and its iterations may run on different threads.
//!
//! The verifier never panics, and it reports every failure it finds, not only the first: the
//! [`VerifyError`] lists them as [`Diagnostic`]s and its text is the printed kernel with each
//! error written under the statement it concerns, as Cranelift prints verifier errors.

use crate::parse::MAX_EXPR_DEPTH;
use crate::{
    AffineExpr, Band, Interval, Kernel, LoopAction, LoopKernel, LoopStmt, Stmt, TensorType,
    MAX_SUM_TERMS,
};
use std::fmt;

/// One failed check.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    /// The statement it concerns (its index in `stmts`), or `None` for the kernel as a whole.
    pub stmt: Option<usize>,
    /// The name of the check, as listed in this module's documentation (`in-bounds`).
    pub check: &'static str,
    /// What the check found, with the values involved.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stmt {
            Some(i) => write!(f, "statement {i}: ")?,
            None => f.write_str("kernel: ")?,
        }
        write!(f, "check {}: {}", self.check, self.message)
    }
}

/// A kernel that failed verification. `message` (also its `Display`) is the printed kernel
/// with every error under its statement; `diagnostics` holds the same errors as data.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{message}")]
pub struct VerifyError {
    /// The printed kernel with every error under its statement.
    pub message: String,
    /// The errors as data.
    pub diagnostics: Vec<Diagnostic>,
}

impl VerifyError {
    /// The diagnostics of the check named `check`.
    pub fn of_check<'a>(&'a self, check: &'a str) -> impl Iterator<Item = &'a Diagnostic> + 'a {
        self.diagnostics.iter().filter(move |d| d.check == check)
    }
}

/// Verifies an index-map kernel; see the module documentation for the checks.
pub fn verify_kernel(kernel: &Kernel) -> Result<(), VerifyError> {
    let mut diags = Diagnostics::default();
    check_kernel_types(&kernel.name, &kernel.src, &kernel.dst, &mut diags);
    let mut printable = Vec::with_capacity(kernel.stmts.len());
    for (i, stmt) in kernel.stmts.iter().enumerate() {
        diags.stmt = Some(i);
        printable.push(verify_stmt(kernel, stmt, &mut diags));
    }
    diags.finish(|| {
        let empty = Kernel {
            name: kernel.name.clone(),
            src: kernel.src.clone(),
            dst: kernel.dst.clone(),
            stmts: Vec::new(),
        };
        let printed = kernel
            .stmts
            .iter()
            .zip(&printable)
            .enumerate()
            .map(|(i, (stmt, &printable))| {
                if printable {
                    stmt.to_string()
                } else {
                    format!("<statement {i}: an expression is too deep to print>")
                }
            })
            .collect();
        (empty.to_string(), printed)
    })
}

/// Verifies a loop kernel; see the module documentation for the checks.
pub fn verify_loop_kernel(kernel: &LoopKernel) -> Result<(), VerifyError> {
    let mut diags = Diagnostics::default();
    check_kernel_types(&kernel.name, &kernel.src, &kernel.dst, &mut diags);
    for (i, stmt) in kernel.stmts.iter().enumerate() {
        diags.stmt = Some(i);
        verify_loop_stmt(kernel, stmt, &mut diags);
    }
    diags.stmt = None;
    verify_bands(kernel, &mut diags);
    diags.finish(|| {
        let empty = LoopKernel {
            name: kernel.name.clone(),
            src: kernel.src.clone(),
            dst: kernel.dst.clone(),
            stmts: Vec::new(),
            bands: Vec::new(),
        };
        let printed = kernel.stmts.iter().map(|s| s.to_string()).collect();
        (empty.to_string(), printed)
    })
}

/// The `bands` check (see the module documentation).
fn verify_bands(kernel: &LoopKernel, diags: &mut Diagnostics) {
    // The bands that contain the next band's first member may hold it (innermost last), and
    // where the bands before it end.
    let mut open: Vec<Band> = Vec::new();
    let mut next_free = 0;
    for (b, band) in kernel.bands.iter().enumerate() {
        let end = band.first.checked_add(band.len);
        open.retain(|o| o.first <= band.first && band.first < o.first + o.len);
        let parent = open.last().copied();
        let shape_error = if band.len < 2 {
            Some(format!(
                "band {b} has {} members; a band fuses at least two",
                band.len
            ))
        } else if band.depth == 0 {
            Some(format!("band {b} shares no loop (depth 0)"))
        } else if end.is_none_or(|end| end > kernel.stmts.len()) {
            Some(format!(
                "band {b} (statements {} to {}) goes past the last statement ({})",
                band.first,
                band.first.saturating_add(band.len).saturating_sub(1),
                kernel.stmts.len().saturating_sub(1)
            ))
        } else if let Some(p) = parent.filter(|p| !p.contains(*band)) {
            Some(format!(
                "band {b} (statements {} to {}, {} loops) starts inside a band of statements \
                 {} to {} ({} loops) but is not nested in it: a nested band has fewer of its \
                 members, none outside it, and more loops",
                band.first,
                band.first + band.len - 1,
                band.depth,
                p.first,
                p.first + p.len - 1,
                p.depth
            ))
        } else if parent.is_none() && band.first < next_free {
            Some(format!(
                "band {b} starts at statement {}, inside or before the previous band",
                band.first
            ))
        } else {
            None
        };
        if let Some(message) = shape_error {
            diags.error("bands", message);
            continue;
        }
        next_free = next_free.max(band.first + band.len);
        open.push(*band);
        diags.stmt = Some(band.first);
        if let Err(why) =
            crate::dependence::iterations_disjoint(&kernel.stmts[band.members()], band.depth)
        {
            diags.error("bands", format!("band {b} cannot be fused: {why}"));
        }
        diags.stmt = None;
    }
}

// ---------------------------------------------------------------------------------------------
// Collecting and reporting

/// The diagnostics found so far, and the statement being checked.
#[derive(Default)]
struct Diagnostics {
    stmt: Option<usize>,
    list: Vec<Diagnostic>,
}

impl Diagnostics {
    fn error(&mut self, check: &'static str, message: impl Into<String>) {
        self.list.push(Diagnostic {
            stmt: self.stmt,
            check,
            message: message.into(),
        });
    }

    /// `Ok` when nothing failed, else the report. `texts` gives the kernel printed without
    /// statements (its header line and `}`) and the printed statements; it is called only
    /// for a report, since printing a kernel costs more than verifying it.
    fn finish(self, texts: impl FnOnce() -> (String, Vec<String>)) -> Result<(), VerifyError> {
        if self.list.is_empty() {
            return Ok(());
        }
        let (empty_kernel, stmts) = texts();
        let message = annotate(&empty_kernel, &stmts, &self.list);
        Err(VerifyError {
            message,
            diagnostics: self.list,
        })
    }
}

/// The kernel's text with `; error: ...` lines: kernel-wide errors under the header, the others
/// under the last line of their statement. Statements are indented as the printer indents them.
fn annotate(empty_kernel: &str, stmts: &[String], diags: &[Diagnostic]) -> String {
    let mut lines = empty_kernel.lines();
    let header = lines.next().unwrap_or_default();
    let footer = lines.next().unwrap_or("}");
    let mut out = String::new();
    let push_errors = |out: &mut String, stmt: Option<usize>| {
        for d in diags.iter().filter(|d| d.stmt == stmt) {
            out.push_str(&format!("  ; error: check {}: {}\n", d.check, d.message));
        }
    };
    out.push_str(header);
    out.push('\n');
    push_errors(&mut out, None);
    for (i, text) in stmts.iter().enumerate() {
        for line in text.lines() {
            out.push_str("  ");
            out.push_str(line);
            out.push('\n');
        }
        push_errors(&mut out, Some(i));
    }
    out.push_str(footer);
    out.push('\n');
    let n = diags.len();
    let s = if n == 1 { "" } else { "s" };
    out.push_str(&format!("; {n} verifier error{s}\n"));
    out
}

// ---------------------------------------------------------------------------------------------
// Checks on both IRs

fn check_kernel_types(name: &str, src: &TensorType, dst: &TensorType, diags: &mut Diagnostics) {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        diags.error(
            "name",
            format!("kernel name {name:?} must be non-empty ASCII letters, digits and `_`"),
        );
    }
    if src.dtype != dst.dtype {
        diags.error(
            "element-types",
            format!(
                "source {src} and destination {dst} have different element types ({} and {})",
                src.dtype, dst.dtype
            ),
        );
    }
    for (what, ty) in [("source", src), ("destination", dst)] {
        if let Err(e) = ty.size_bytes() {
            diags.error("tensor-size", format!("{what}: {e}"));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Index-map statements

/// One access of a statement: which operand, its map and its tensor type.
struct Access<'a> {
    what: &'static str,
    map: &'a [AffineExpr],
    ty: &'a TensorType,
}

fn accesses<'a>(kernel: &'a Kernel, stmt: &'a Stmt) -> Vec<Access<'a>> {
    let mut out = vec![Access {
        what: "destination",
        map: &stmt.dst,
        ty: &kernel.dst,
    }];
    if let Some(map) = stmt.action.src_map() {
        out.push(Access {
            what: "source",
            map,
            ty: &kernel.src,
        });
    }
    out
}

/// Runs the statement checks; returns false when an expression is too deep to walk (and so
/// to print).
fn verify_stmt(kernel: &Kernel, stmt: &Stmt, diags: &mut Diagnostics) -> bool {
    let accesses = accesses(kernel, stmt);
    if !check_depth(stmt, &accesses, diags) {
        return false;
    }
    let before = diags.list.len();
    check_ranges(stmt, diags);
    check_arity(&accesses, diags);
    check_exprs(stmt, &accesses, diags);
    // Interval analysis of a malformed statement would only add confusing errors.
    if diags.list.len() == before {
        check_in_bounds(stmt, &accesses, diags);
    }
    true
}

/// Depth of the tree, computed without recursion, stopping once it exceeds `max`.
fn depth_exceeds(e: &AffineExpr, max: usize) -> bool {
    let mut stack = vec![(e, 1usize)];
    while let Some((e, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        match e {
            AffineExpr::Dim(_) | AffineExpr::Const(_) => {}
            AffineExpr::Add(a, b) => {
                stack.push((a, depth + 1));
                stack.push((b, depth + 1));
            }
            AffineExpr::Mul(a, _) | AffineExpr::FloorDiv(a, _) | AffineExpr::Mod(a, _) => {
                stack.push((a, depth + 1));
            }
        }
    }
    false
}

/// Where an expression sits in its statement, for messages (`source index 1`); printed only
/// when a message is made.
enum Label<'a> {
    Index(&'a str, usize),
    Guard(usize),
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Index(what, j) => write!(f, "{what} index {j}"),
            Label::Guard(j) => write!(f, "guard constraint {j}"),
        }
    }
}

/// Every expression of the statement, with where it sits.
fn labelled_exprs<'a>(
    stmt: &'a Stmt,
    accesses: &'a [Access<'a>],
) -> impl Iterator<Item = (Label<'a>, &'a AffineExpr)> + 'a {
    let maps = accesses.iter().flat_map(|a| {
        a.map
            .iter()
            .enumerate()
            .map(move |(j, e)| (Label::Index(a.what, j), e))
    });
    let guards = stmt
        .guard
        .iter()
        .enumerate()
        .map(|(j, c)| (Label::Guard(j), &c.expr));
    maps.chain(guards)
}

fn check_depth(stmt: &Stmt, accesses: &[Access<'_>], diags: &mut Diagnostics) -> bool {
    let mut ok = true;
    for (label, e) in labelled_exprs(stmt, accesses) {
        if depth_exceeds(e, MAX_EXPR_DEPTH) {
            diags.error(
                "expr-depth",
                format!("{label} is nested deeper than {MAX_EXPR_DEPTH} levels"),
            );
            ok = false;
        }
    }
    ok
}

fn check_ranges(stmt: &Stmt, diags: &mut Diagnostics) {
    for (i, r) in stmt.domain.iter().enumerate() {
        if r.lo > r.hi {
            diags.error(
                "ranges",
                format!(
                    "range of d{i} is {} to {}: its lower bound exceeds its upper bound",
                    r.lo, r.hi
                ),
            );
        }
    }
    for (j, c) in stmt.guard.iter().enumerate() {
        if c.lo > c.hi {
            diags.error(
                "guard-bounds",
                format!("guard constraint {j} ({c}) has its lower bound above its upper bound"),
            );
        }
    }
}

fn check_arity(accesses: &[Access<'_>], diags: &mut Diagnostics) {
    for a in accesses {
        if a.map.len() != a.ty.rank() {
            diags.error(
                "map-arity",
                format!(
                    "{} map has {} {} but {} has rank {}",
                    a.what,
                    a.map.len(),
                    if a.map.len() == 1 { "index" } else { "indices" },
                    a.ty,
                    a.ty.rank()
                ),
            );
        }
    }
}

/// Declared dims and positive divisors, for every expression of the statement.
fn check_exprs(stmt: &Stmt, accesses: &[Access<'_>], diags: &mut Diagnostics) {
    let n = stmt.domain.len();
    for (label, e) in labelled_exprs(stmt, accesses) {
        if let Some(&d) = e.dims_used().iter().find(|&&d| d >= n) {
            let declared = match n {
                0 => "the domain has no dims".to_string(),
                _ => format!("the domain declares d0 to d{}", n - 1),
            };
            diags.error(
                "declared-dims",
                format!("{label} ({e}) uses d{d} but {declared}"),
            );
        }
        let mut bad = Vec::new();
        e.walk(&mut |sub| match sub {
            AffineExpr::FloorDiv(_, k) | AffineExpr::Mod(_, k) if *k <= 0 => {
                bad.push(sub.to_string())
            }
            _ => {}
        });
        for sub in bad {
            diags.error(
                "divisors",
                format!("{label} ({e}) divides by a non-positive constant in `{sub}`"),
            );
        }
    }
}

/// Why an expression has no interval under the guard.
enum NoBound {
    /// No point of the domain satisfies the guard: nothing to prove.
    Vacuous,
    /// The interval leaves `i64`.
    Overflow,
}

/// What the guard tells about the points where the statement acts: tightened dim intervals,
/// and intervals for the guarded expressions.
struct Facts<'a> {
    dims: Vec<Interval>,
    exprs: Vec<(&'a AffineExpr, Interval)>,
}

/// The facts, or `None` when no point acts: the domain is empty or the guard unsatisfiable.
fn facts(stmt: &Stmt) -> Option<Facts<'_>> {
    let mut dims = Vec::with_capacity(stmt.domain.len());
    for r in &stmt.domain {
        if r.is_empty() {
            return None;
        }
        // `hi > lo`, so `hi - 1` does not overflow.
        dims.push(Interval {
            lo: r.lo,
            hi: r.hi - 1,
        });
    }
    let mut exprs = Vec::with_capacity(stmt.guard.len());
    for c in &stmt.guard {
        // Nothing is below i64::MIN, so `e < i64::MIN` never holds.
        let range = Interval {
            lo: c.lo,
            hi: c.hi.checked_sub(1)?,
        };
        if range.lo > range.hi {
            return None;
        }
        if let Some((i, range)) = dim_constraint(&c.expr, range) {
            if let Some(d) = dims.get_mut(i) {
                *d = intersect(*d, range)?;
            }
        }
        exprs.push((&c.expr, range));
    }
    let facts = Facts { dims, exprs };
    // A guard constraint that cannot hold anywhere on the (narrowed) domain empties it.
    for c in &stmt.guard {
        if let Err(NoBound::Vacuous) = bound(&c.expr, &facts) {
            return None;
        }
    }
    Some(facts)
}

/// For a constraint `range` on `d_i` or `d_i + c` (either order), the implied range of `d_i`.
/// `None` for other shapes, and when the shift overflows (then the constraint is simply not
/// used to narrow the dim, which is sound).
fn dim_constraint(e: &AffineExpr, range: Interval) -> Option<(usize, Interval)> {
    let (i, c) = match e {
        AffineExpr::Dim(i) => (*i, 0),
        AffineExpr::Add(a, b) => match (&**a, &**b) {
            (AffineExpr::Dim(i), AffineExpr::Const(c))
            | (AffineExpr::Const(c), AffineExpr::Dim(i)) => (*i, *c),
            _ => return None,
        },
        _ => return None,
    };
    Some((
        i,
        Interval {
            lo: range.lo.checked_sub(c)?,
            hi: range.hi.checked_sub(c)?,
        },
    ))
}

fn intersect(a: Interval, b: Interval) -> Option<Interval> {
    let r = Interval {
        lo: a.lo.max(b.lo),
        hi: a.hi.min(b.hi),
    };
    (r.lo <= r.hi).then_some(r)
}

/// An interval holding every value `e` takes at the points that satisfy the guard.
///
/// This is [`AffineExpr::bounds`] with one addition: every subexpression structurally equal
/// to a guarded expression is narrowed to the guard's range, which is sound because the
/// statement only acts where the guard holds. An empty narrowing means no point acts.
fn bound(e: &AffineExpr, facts: &Facts<'_>) -> Result<Interval, NoBound> {
    // Each node is bounded by `AffineExpr::bounds` on a one-level copy of itself whose
    // operands are placeholder dims ranging over the operands' intervals, so that the interval
    // rules live in one place.
    let d = AffineExpr::dim;
    let one_level =
        |shape: AffineExpr, args: &[Interval]| shape.bounds(args).ok_or(NoBound::Overflow);
    let raw = match e {
        // Dims were checked to be declared before this runs; an unknown one proves nothing.
        AffineExpr::Dim(i) => facts.dims.get(*i).copied().ok_or(NoBound::Overflow)?,
        AffineExpr::Const(c) => Interval { lo: *c, hi: *c },
        AffineExpr::Add(a, b) => one_level(d(0) + d(1), &[bound(a, facts)?, bound(b, facts)?])?,
        AffineExpr::Mul(a, k) => one_level(d(0) * *k, &[bound(a, facts)?])?,
        AffineExpr::FloorDiv(a, k) => one_level(d(0).floor_div(*k), &[bound(a, facts)?])?,
        AffineExpr::Mod(a, k) => one_level(d(0).modulo(*k), &[bound(a, facts)?])?,
    };
    facts
        .exprs
        .iter()
        .filter(|(g, _)| *g == e)
        .try_fold(raw, |acc, (_, r)| {
            intersect(acc, *r).ok_or(NoBound::Vacuous)
        })
}

/// The `overflow` and `in-bounds` checks of a well-formed statement.
fn check_in_bounds(stmt: &Stmt, accesses: &[Access<'_>], diags: &mut Diagnostics) {
    check_guard_overflow(stmt, diags);
    let Some(facts) = facts(stmt) else {
        return;
    };
    for a in accesses {
        for (j, (e, &size)) in a.map.iter().zip(&a.ty.shape).enumerate() {
            let range = match bound(e, &facts) {
                Ok(r) => r,
                Err(NoBound::Vacuous) => return,
                Err(NoBound::Overflow) => {
                    diags.error(
                        "in-bounds",
                        format!(
                            "{} index {j} ({e}) cannot be bounded: its interval overflows i64",
                            a.what
                        ),
                    );
                    continue;
                }
            };
            // Compared in i128 because sizes are unsigned and may exceed i64::MAX.
            if range.lo < 0 || i128::from(range.hi) >= i128::from(size) {
                diags.error(
                    "in-bounds",
                    format!(
                        "{} index {j} ({e}) ranges over [{}, {}] but dim {j} of {} has size {size}",
                        a.what, range.lo, range.hi, a.ty
                    ),
                );
            }
        }
    }
}

/// Guard expressions are evaluated at every point of the domain, before the guard is known to
/// hold, so they are bounded over the whole domain without the guard's help.
fn check_guard_overflow(stmt: &Stmt, diags: &mut Diagnostics) {
    if stmt.domain.iter().any(|r| r.is_empty()) {
        return;
    }
    let dims: Vec<Interval> = stmt
        .domain
        .iter()
        .map(|r| Interval {
            lo: r.lo,
            hi: r.hi - 1,
        })
        .collect();
    for (j, c) in stmt.guard.iter().enumerate() {
        if c.expr.bounds(&dims).is_none() {
            diags.error(
                "overflow",
                format!(
                    "guard constraint {j} ({}) may overflow i64 on the domain",
                    c.expr
                ),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Loop statements

fn verify_loop_stmt(kernel: &LoopKernel, stmt: &LoopStmt, diags: &mut Diagnostics) {
    let esize = kernel.dtype().size();
    // `checked_rem` rather than `is_multiple_of`, which is newer than the workspace's MSRV.
    if stmt.bytes == 0 || stmt.bytes.checked_rem(esize) != Some(0) {
        diags.error(
            "run-bytes",
            format!(
                "run of {} bytes is not a positive multiple of the element size {esize} of {}",
                stmt.bytes,
                kernel.dtype()
            ),
        );
    }
    for (i, l) in stmt.loops.iter().enumerate() {
        if i64::try_from(l.extent).is_err() {
            diags.error(
                "extents",
                format!("extent {} of i{i} does not fit in i64", l.extent),
            );
        }
    }
    let reads_src = !stmt.action.is_fill();
    if !reads_src && (stmt.src_offset != 0 || stmt.loops.iter().any(|l| l.src_stride != 0)) {
        diags.error(
            "fill-source",
            "a fill does not read the source, so its source offset and strides must be 0",
        );
    }
    // Code generation unrolls the reduction loops of both (see `sum-terms`).
    if stmt.action == LoopAction::Sum || stmt.window.is_some() {
        let split = stmt.loops.len() - stmt.reduction_loops();
        let points = stmt.loops[split..]
            .iter()
            .try_fold(1u64, |n, l| n.checked_mul(l.extent));
        if points.is_none_or(|p| p > MAX_SUM_TERMS) {
            diags.error(
                "sum-terms",
                format!(
                    "a sum from +0.0 or with a window adds at most {MAX_SUM_TERMS} terms per \
                     run (its reduction loops are unrolled); these have {}",
                    points.map_or("more than 2^64".into(), |p| p.to_string())
                ),
            );
        }
    }
    let window_ok = stmt
        .window
        .is_none_or(|w| check_window(stmt, w, esize, diags));
    if stmt.loops.iter().any(|l| l.extent == 0) {
        return;
    }
    check_run_in_bounds(
        "destination",
        &kernel.dst,
        stmt.dst_offset,
        stmt,
        |l| l.dst_stride,
        diags,
    );
    match stmt.window {
        Some(w) if reads_src && window_ok => check_windows_in_bounds(&kernel.src, stmt, w, diags),
        Some(_) => {}
        None if reads_src => check_run_in_bounds(
            "source",
            &kernel.src,
            stmt.src_offset,
            stmt,
            |l| l.src_stride,
            diags,
        ),
        None => {}
    }
}

/// The `window` check (see the module documentation); whether it passed.
fn check_window(stmt: &LoopStmt, w: crate::Window, esize: u64, diags: &mut Diagnostics) -> bool {
    let before = diags.list.len();
    let innermost = stmt.loops.last();
    if !stmt.action.is_accumulate() {
        diags.error("window", "only an accumulation has a window");
    }
    match innermost {
        Some(l) if l.dst_stride == 0 && l.extent <= MAX_SUM_TERMS => {}
        Some(l) if l.dst_stride == 0 => diags.error(
            "window",
            format!(
                "a window's innermost loop has at most {MAX_SUM_TERMS} iterations, not {}",
                l.extent
            ),
        ),
        _ => diags.error(
            "window",
            "a window steps with the innermost loop, which must be a reduction loop \
             (destination stride 0)",
        ),
    }
    let esize = i64::try_from(esize).unwrap_or(i64::MAX);
    if [w.start, w.end, w.step].iter().any(|v| v % esize != 0) {
        diags.error(
            "window",
            format!(
                "window {} to {} stepping by {} is not in whole elements of {esize} bytes",
                w.start, w.end, w.step
            ),
        );
    }
    if diags.list.len() > before {
        return false;
    }
    // Every byte of the run in the window of some iteration: merge the windows in order of
    // their first byte.
    let extent = innermost.map_or(0, |l| l.extent);
    let windows: Option<Vec<(u64, u64)>> = (0..extent).map(|k| w.at(k, stmt.bytes)).collect();
    let Some(windows) = windows else {
        diags.error("window", "the window's bytes overflow i64");
        return false;
    };
    if extent > 0 && !crate::windows_cover(&windows, stmt.bytes) {
        diags.error(
            "window",
            format!(
                "the windows of the {extent} iterations leave bytes of the {}-byte run uncovered",
                stmt.bytes
            ),
        );
        return false;
    }
    true
}

/// `in-bounds` for the source of a statement with a window: each iteration of the innermost
/// loop reads only its window of each run.
fn check_windows_in_bounds(
    ty: &TensorType,
    stmt: &LoopStmt,
    w: crate::Window,
    diags: &mut Diagnostics,
) {
    let Ok(size) = ty.size_bytes() else {
        return;
    };
    let Some((last, outer)) = stmt.loops.split_last() else {
        return;
    };
    let Some((lo, hi)) = offset_range(stmt.src_offset, outer, |l| l.src_stride) else {
        diags.error("in-bounds", "source byte offsets overflow i64");
        return;
    };
    for k in 0..last.extent {
        let bounds = w.at(k, stmt.bytes).and_then(|(a, b)| {
            let shift = last.src_stride.checked_mul(i64::try_from(k).ok()?)?;
            let first = lo.checked_add(shift)?.checked_add(i64::try_from(a).ok()?)?;
            let end = hi.checked_add(shift)?.checked_add(i64::try_from(b).ok()?)?;
            Some((a == b, first, end))
        });
        match bounds {
            None => {
                diags.error("in-bounds", "source byte offsets overflow i64");
                return;
            }
            Some((true, _, _)) => {}
            Some((false, first, end))
                if first < 0 || u64::try_from(end).is_ok_and(|e| e > size) =>
            {
                diags.error(
                    "in-bounds",
                    format!(
                        "source windows of iteration {k} of the innermost loop cover byte \
                         offsets [{first}, {end}), outside the {size} bytes of {ty}"
                    ),
                );
                return;
            }
            Some(_) => {}
        }
    }
}

/// The lowest and highest byte offset of one operand over all points of a nest whose extents
/// are all positive, or `None` on overflow.
fn offset_range(
    offset: i64,
    loops: &[crate::Loop],
    stride: impl Fn(&crate::Loop) -> i64,
) -> Option<(i64, i64)> {
    let (mut lo, mut hi) = (offset, offset);
    for l in loops {
        let last = i64::try_from(l.extent.checked_sub(1)?).ok()?;
        let span = stride(l).checked_mul(last)?;
        if span < 0 {
            lo = lo.checked_add(span)?;
        } else {
            hi = hi.checked_add(span)?;
        }
    }
    Some((lo, hi))
}

fn check_run_in_bounds(
    what: &str,
    ty: &TensorType,
    offset: i64,
    stmt: &LoopStmt,
    stride: impl Fn(&crate::Loop) -> i64,
    diags: &mut Diagnostics,
) {
    // An operand whose size overflows is reported by `tensor-size`.
    let Ok(size) = ty.size_bytes() else {
        return;
    };
    let Some((lo, hi)) = offset_range(offset, &stmt.loops, stride) else {
        diags.error("in-bounds", format!("{what} byte offsets overflow i64"));
        return;
    };
    let end = i64::try_from(stmt.bytes)
        .ok()
        .and_then(|b| hi.checked_add(b));
    let fits = |end: i64| u64::try_from(end).is_ok_and(|e| e <= size);
    match end {
        _ if lo < 0 => diags.error(
            "in-bounds",
            format!("{what} runs start at byte offsets [{lo}, {hi}], below 0"),
        ),
        Some(end) if fits(end) => {}
        Some(end) => diags.error(
            "in-bounds",
            format!(
                "{what} runs of {} bytes start at byte offsets [{lo}, {hi}], so the last ends at {end}, past the {size} bytes of {ty}",
                stmt.bytes
            ),
        ),
        None => diags.error(
            "in-bounds",
            format!("{what} run of {} bytes at byte offset {hi} overflows i64", stmt.bytes),
        ),
    }
}
