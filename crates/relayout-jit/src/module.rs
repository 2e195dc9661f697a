//! The JIT module that holds one kernel's machine code, and every `unsafe` block of relayout.
//!
//! # Safety
//!
//! The kernel function reads `[src, src + src_len)` and writes `[dst, dst + dst_len)` and
//! nothing else, when four things hold, each established here before any call:
//!
//! 1. The kernel passed `relayout_ir::verify_loop_kernel`, which proves that every run of
//!    every statement lies inside its tensor for every point of the loop nest
//!    ([`JitCode::compile`] verifies before it generates any code).
//! 2. The buffers have exactly the byte sizes of the kernel's tensor types
//!    ([`JitCode::check_lengths`], before every run).
//! 3. The iterations run lie inside the outermost loop: the ranges passed are pieces of
//!    `0..extent` from [`split_even`] (for a collapsed cut, each row's part of such a piece,
//!    from [`row_ranges`], inside `0..cols`), or `0..u64::MAX` for a whole unit, and the
//!    generated code clamps `end` to the extent of the entry it runs (and runs no entry out
//!    of range).
//! 4. The code does what the loop IR says. That is relayout-codegen's job, checked by the
//!    execution tests against the interpreter. A kernel whose every statement has its whole
//!    nest run by one of the JIT's precompiled helpers runs without generated code: the JIT
//!    calls them itself with the statements' loops and offsets, around a band's shared loops
//!    (`helper_kernel.rs`), under the same contract as an entry of the kernel function.
//!
//! The source is only read and the destination is borrowed mutably for the whole run, so no
//! Rust code observes the destination while machine code writes it, and the two cannot
//! overlap. A threaded run calls one entry (a statement or a band) on several threads at once
//! with disjoint ranges of the outermost loop, and only for statements whose different outer
//! iterations write disjoint destination bytes ([`outer_iterations_disjoint`]) and for bands
//! (or, collapsed, with disjoint ranges of `(i0, i1)` for units whose different `(i0, i1)`
//! write disjoint bytes, [`collapsible_unit`]), so the threads never touch the same
//! destination byte; the scope of the thread pool ends
//! before the next unit starts and before the run returns.
//!
//! The function pointers never leave [`JitCode`], and the `Drop` of the module that holds
//! their code ([`OwnedModule`]) frees its memory when the `JitCode` is dropped; no call can be
//! running then, because every call borrows the `JitCode`.

use crate::error::{Operand, RunError};
use crate::helper_kernel::{helper_cut, HelperKernel};
use crate::{cranelift_timing, helpers, isa, threads, Element, JitError, StmtSplit};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::{CodegenError, Context};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Module, ModuleReloc};
use relayout_codegen::{
    kernel_signature, translate_kernel_fn, translate_variants_fn, Helper, HelperRuns,
    ModuleImports, RUN_ALL,
};
use relayout_ir::{LoopKernel, LoopStmt, Unit};
use std::ops::Range;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// One function's machine code, before it is placed in the module.
struct MachineCode {
    alignment: u64,
    bytes: Vec<u8>,
    relocs: Vec<ModuleReloc>,
}

/// Compiles `func` for `isa` into machine code for a module's function `id`.
///
/// Cranelift's `Context` keeps the register allocator's working memory between compiles; one
/// per thread is reused, which saves the allocations that were a visible part of a small
/// kernel's compile.
fn compile_one(
    isa: &dyn TargetIsa,
    func: Function,
    id: FuncId,
) -> Result<MachineCode, CodegenError> {
    thread_local! {
        static CONTEXT: std::cell::RefCell<Context> = std::cell::RefCell::new(Context::new());
    }
    let compile = |ctx: &mut Context| {
        ctx.clear();
        ctx.func = func;
        let alignment = ctx
            .compile(isa, &mut ControlPlane::default())
            .map_err(|e| e.inner)?
            .buffer
            .alignment;
        // Compiled just above, so present.
        let code = ctx.compiled_code().ok_or(CodegenError::CodeTooLarge)?;
        let relocs = code
            .buffer
            .relocs()
            .iter()
            .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
            .collect();
        Ok(MachineCode {
            alignment: u64::from(alignment),
            bytes: code.code_buffer().to_vec(),
            relocs,
        })
    };
    CONTEXT.with(|cell| match cell.try_borrow_mut() {
        Ok(mut ctx) => compile(&mut ctx),
        // Not reentrant in practice; a fresh context is always correct.
        Err(_) => compile(&mut Context::new()),
    })
}

/// The kernel's function (`relayout_codegen::translate_kernel_fn`): `entry` selects a unit of
/// the schedule (or a wide variant, or `RUN_ALL`), `start..end` the iterations of its outer
/// loop. It is an `unsafe fn` because it trusts its arguments.
type KernelFn =
    unsafe extern "C" fn(src: *const u8, dst: *mut u8, entry: u64, start: u64, end: u64);

struct StmtCode {
    /// Iterations of the outermost loop; 1 for a statement without loops.
    extent: u64,
    /// Whether different outer iterations write disjoint destination bytes.
    disjoint: bool,
    /// Bytes the statement moves, saturating: how much work there is to split.
    work: u64,
    /// For a statement whose outer loop is too short to give every thread a piece: the same
    /// statement with its two outer loops swapped, for threaded runs (see [`wide_variant`]).
    wide: Option<WideCode>,
}

/// The collapsed form of a unit (see [`rows_kernel`]): entries `entry .. entry + rows` of the
/// rows' function run one iteration of its outer loop each, over a range of its second loop
/// (`cols` iterations).
#[derive(Clone, Copy)]
struct RowsCode {
    entry: u64,
    rows: u64,
    cols: u64,
}

/// What a piece of a unit calls: the kernel's main entries ([`Main`]), or a function compiled
/// on first use (the wide variants', the rows kernel's).
#[derive(Clone, Copy)]
enum Callee {
    Main,
    Code(KernelFn),
}

/// The kernel's main entries: its compiled function, or, for a kernel whose every statement
/// has its nest run by a precompiled helper, those helpers called without generated code
/// (`helper_kernel.rs`).
enum Main {
    Code(Box<Linked>),
    Helpers(HelperKernel),
}

/// How one unit of the schedule runs: the entry of the kernel function that runs it whole, and
/// the function, entry, outer extent and number of pieces of its threaded run.
struct Cut {
    whole: u64,
    func: Callee,
    entry: u64,
    extent: u64,
    pieces: usize,
    /// A collapsed cut: `extent` is `rows * cols`, and a piece runs entries `entry + i0` of
    /// `func` over the part of each row `i0` it covers (see [`row_variants`]).
    rows: Option<RowsCode>,
}

/// The wide variant of a statement: its entry in the variants' function and the extent of its
/// outer loop (the statement's second loop). Its outer iterations always write disjoint bytes.
struct WideCode {
    entry: u64,
    extent: u64,
}

/// Statements whose outer loop has fewer iterations than this get a wide variant.
const WIDE_BELOW: u64 = 16;

/// `stmt` with its two outermost loops swapped, when its outer loop is short (fewer than
/// [`WIDE_BELOW`] iterations), the second loop longer, and the iterations of the second loop
/// write disjoint destination bytes. Cutting the swapped statement's outer loop over threads
/// then splits a kernel whose own outer loop is 1, 2 or 3 (a batch, an RGB image) as evenly
/// as a long one. It computes the same bytes: it visits the same points, so it stays in
/// bounds, and an element touched at two points is touched at the same second-loop index
/// (disjointness), where both orders visit the points by first-loop index, then inner loops.
pub(crate) fn wide_variant(stmt: &LoopStmt) -> Option<LoopStmt> {
    let (first, second) = (stmt.loops.first()?, stmt.loops.get(1)?);
    if first.extent >= WIDE_BELOW || second.extent <= first.extent {
        return None;
    }
    let mut wide = stmt.clone();
    wide.loops.swap(0, 1);
    relayout_ir::dependence::iterations_disjoint(std::slice::from_ref(&wide), 1)
        .ok()
        .map(|()| wide)
}

/// `stmt` cut into one statement per iteration of its outer loop (that loop removed and its
/// strides times the index added to the offsets), when that loop is short (fewer than
/// [`WIDE_BELOW`] iterations, more than one) and different iterations of its two outer loops
/// `(i0, i1)` write disjoint destination bytes. Together they are the statement with its two
/// outer loops collapsed into one of `e0 * e1` iterations: a contiguous range of those runs
/// row `i0` over part of `i1`, then the next row, in the statement's own order, so a threaded
/// run can cut any statement with two such loops into as many pieces as it has threads. Each
/// row visits a subset of the statement's points, so it stays in bounds; and since no byte is
/// written by two different `(i0, i1)`, pieces running at once never touch the same byte and
/// every byte's writes keep their order.
pub(crate) fn row_variants(stmt: &LoopStmt) -> Option<Vec<LoopStmt>> {
    collapsible(stmt)?;
    row_stmts(stmt)
}

/// `stmt` with its outer loop fixed at each of its iterations in turn.
fn row_stmts(stmt: &LoopStmt) -> Option<Vec<LoopStmt>> {
    (0..stmt.loops.first()?.extent)
        .map(|i0| {
            let i0 = i64::try_from(i0).ok()?;
            let mut row = stmt.clone();
            let outer = row.loops.remove(0);
            row.src_offset = row
                .src_offset
                .checked_add(outer.src_stride.checked_mul(i0)?)?;
            row.dst_offset = row
                .dst_offset
                .checked_add(outer.dst_stride.checked_mul(i0)?)?;
            Some(row)
        })
        .collect()
}

/// The extents `(e0, e1)` of the two outer loops of `unit` of `kernel` when [`rows_kernel`]
/// collapses them: a statement as [`collapsible`] says; a band sharing at least two loops,
/// the first short and both longer than 1 (the verifier proved that different iterations of
/// the shared loops write disjoint bytes; checked again here).
pub(crate) fn collapsible_unit(kernel: &LoopKernel, unit: Unit) -> Option<(u64, u64)> {
    match unit {
        Unit::Stmt(i) => collapsible(kernel.stmts.get(i)?),
        Unit::Band(band) => {
            let members = kernel.stmts.get(band.members())?;
            let first = members.first()?;
            let (e0, e1) = (first.loops.first()?.extent, first.loops.get(1)?.extent);
            if band.depth < 2 || !(2..WIDE_BELOW).contains(&e0) || e1 < 2 {
                return None;
            }
            relayout_ir::dependence::iterations_disjoint(members, 2).ok()?;
            Some((e0, e1))
        }
    }
}

/// The kernel whose units are the rows of every unit of `kernel` that
/// [`collapsible_unit`] collapses, in order: for such a unit with outer extent `e0`, `e0`
/// units, row `i0` being the unit with its outer loop fixed at `i0` ([`row_variants`] of each
/// statement; a band's rows are bands sharing one loop fewer). Its unit `entry + i0` runs row
/// `i0` of the [`RowsCode`] numbered by `JitCode::compile`. `None` if a row cannot be made.
pub(crate) fn rows_kernel(kernel: &LoopKernel, units: &[Unit]) -> Option<LoopKernel> {
    let mut rows = kernel.with_stmts(Vec::new(), Vec::new());
    for unit in units {
        if collapsible_unit(kernel, *unit).is_none() {
            continue;
        }
        match *unit {
            Unit::Stmt(i) => rows.stmts.extend(row_variants(&kernel.stmts[i])?),
            Unit::Band(band) => {
                let members: Vec<Vec<LoopStmt>> = kernel.stmts[band.members()]
                    .iter()
                    .map(row_stmts)
                    .collect::<Option<_>>()?;
                for i0 in 0..members[0].len() {
                    rows.bands.push(relayout_ir::Band {
                        first: rows.stmts.len(),
                        len: band.len,
                        depth: band.depth - 1,
                    });
                    for m in &members {
                        rows.stmts.push(m.get(i0)?.clone());
                    }
                }
            }
        }
    }
    Some(rows)
}

/// The extents `(e0, e1)` of `stmt`'s two outer loops when [`row_variants`] collapses them:
/// the first short, both longer than 1, and different `(i0, i1)` writing disjoint bytes.
pub(crate) fn collapsible(stmt: &LoopStmt) -> Option<(u64, u64)> {
    let (first, second) = (stmt.loops.first()?, stmt.loops.get(1)?);
    if first.extent >= WIDE_BELOW || first.extent < 2 || second.extent < 2 {
        return None;
    }
    relayout_ir::dependence::iterations_disjoint(std::slice::from_ref(stmt), 2).ok()?;
    Some((first.extent, second.extent))
}

impl StmtCode {
    /// What a run of this statement in `pieces` pieces reports.
    fn split(&self, pieces: usize) -> StmtSplit {
        StmtSplit {
            pieces,
            outer_extent: self.extent,
            disjoint: self.disjoint,
        }
    }
}

/// One kernel's machine code: one function for the whole kernel, in a JIT module of its own,
/// and, compiled at the first threaded run that uses one, its statements' wide variants.
pub(crate) struct JitCode {
    kernel: LoopKernel,
    src_len: u64,
    dst_len: u64,
    /// The kernel's entries: entry `k` runs unit `k` of `units`.
    main: Main,
    stmts: Vec<StmtCode>,
    /// The kernel's schedule: statements alone and bands (`LoopKernel::units`).
    units: Vec<Unit>,
    /// For each unit, its collapsed form when it has one (see [`rows_kernel`]).
    unit_rows: Vec<Option<RowsCode>>,
    /// The wide variants (see [`wide_variant`]) as `(statement, variant)`; variant `k` is
    /// entry `k` of the function in `wide`.
    variants: Vec<(usize, LoopStmt)>,
    /// The variants' function, compiled on first use: only threaded runs of kernels whose
    /// outer loop is short need it, so single-threaded users never pay for it. `None` when
    /// it could not be compiled, and then runs cut the statements' own outer loops.
    wide: OnceLock<Option<Linked>>,
    /// The function of the rows kernel (see [`rows_kernel`]), entry `entry + i0` of a unit's
    /// [`RowsCode`] running its row `i0`; built and compiled on first use, like `wide`.
    rows: OnceLock<Option<Linked>>,
    /// Where the compile's time went, stage by stage.
    timings: Vec<StageTiming>,
}

/// A linked kernel function and the JIT module that holds its code.
struct Linked {
    entry: KernelFn,
    /// Dropped after `entry` can no longer be called (see [`OwnedModule`]).
    _module: OwnedModule,
}

/// A JIT module that frees its code memory when dropped.
///
/// Never locked. `JITModule` is `Send` but not `Sync` (it has interior mutability used while
/// linking); after `finalize_definitions` it is only touched again by `Drop`, which has `&mut
/// self`. The mutex makes that visible to the compiler, so `JitCode` is `Sync` without an
/// `unsafe impl`.
struct OwnedModule(Mutex<Option<JITModule>>);

impl Drop for OwnedModule {
    fn drop(&mut self) {
        let module = self
            .0
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(module) = module {
            // SAFETY: the function pointers into this memory live in the `Linked` that owns
            // this module and are only called through `&JitCode`, which the drop of the
            // `JitCode` (or of a `Linked` that failed to be built) excludes; threaded calls end
            // with their scope, inside `run`. Nothing calls them afterwards.
            unsafe { module.free_memory() }
        }
    }
}

/// Generates, compiles and links one kernel function: the kernel's units and `variants`
/// (see `translate_kernel_fn`), or, with `units` false, only the variants. `lap` is told when
/// each stage ends, with the parts of it that were timed. The kernel (and the variants) must
/// have been verified.
fn link(
    kernel: &LoopKernel,
    variants: &[(usize, LoopStmt)],
    units: bool,
    lap: &mut Lap<'_>,
) -> Result<Linked, JitError> {
    let mut builder = JITBuilder::with_isa(isa::host()?, default_libcall_names());
    for helper in Helper::ALL {
        builder.symbol(helper.symbol(), helpers::address(helper));
    }
    // From here on the module is owned by `owned`, whose `Drop` frees it on every error path.
    let mut owned = OwnedModule(Mutex::new(Some(JITModule::new(builder))));
    lap("module", &[]);
    let compile_error = |e: &dyn std::fmt::Debug| JitError::Compile {
        kernel: kernel.name.clone(),
        stmt: None,
        // `ModuleError`'s Display omits the verifier's findings; Debug keeps them.
        message: format!("{e:?}"),
    };
    let module = owned
        .0
        .get_mut()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .ok_or_else(|| compile_error(&"the module is gone"))?;
    let config = module.target_config();
    let mut imports = ModuleImports::new(module);
    let func = if units {
        translate_kernel_fn(kernel, variants, config, &mut imports)?
    } else {
        translate_variants_fn(kernel, variants, config, &mut imports)?
    };
    let sig = kernel_signature(config.default_call_conv);
    let id = module
        .declare_anonymous_function(&sig)
        .map_err(|e| compile_error(&e))?;
    lap("codegen", &[]);
    let isa = isa::host()?;
    cranelift_timing::start();
    let compiled = compile_one(&*isa, func, id);
    // Read (which stops the recording) whether or not the compile succeeded.
    let cranelift_parts = cranelift_timing::parts();
    let machine = compiled.map_err(|e| compile_error(&e))?;
    lap("cranelift", &cranelift_parts);
    module
        .define_function_bytes(id, machine.alignment, &machine.bytes, &machine.relocs)
        .map_err(|e| compile_error(&e))?;
    module
        .finalize_definitions()
        .map_err(|e| compile_error(&e))?;
    let address = module.get_finalized_function(id);
    // SAFETY: `address` is the finalized (executable) code of a function compiled from CLIF
    // with `kernel_signature` in the ISA's default calling convention, which is the platform's
    // C calling convention, so it has exactly the type `KernelFn`. It stays valid until
    // `free_memory` in `OwnedModule`'s `Drop`, and it never leaves the `Linked` that owns
    // that module.
    let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(address) };
    lap("link", &[]);
    Ok(Linked {
        entry,
        _module: owned,
    })
}

/// The wall time of one stage of [`CompiledKernel::compile`](crate::CompiledKernel::compile),
/// or of a part of the stage before it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StageTiming {
    /// What ran: `verify`, `module`, `codegen`, `cranelift`, `link`, or `verify`, `streams` (see
    /// [`CompiledKernel::compile_timings`](crate::CompiledKernel::compile_timings)); parts of
    /// `cranelift`: `instruction selection`, `register allocation`, `emission`.
    pub stage: &'static str,
    /// How long it took.
    pub time: Duration,
    /// 0 for a stage, 1 for a part of the last stage before it with depth 0 (the parts do not
    /// add up to their stage: Cranelift's other passes are not listed).
    pub depth: usize,
}

/// What [`link`] tells when a stage ends: its name and the parts of it that were timed (the
/// `cranelift` stage's passes, see `cranelift_timing`; none for the other stages).
type Lap<'a> = dyn FnMut(&'static str, &[(&'static str, Duration)]) + 'a;

/// Appends the time since `*since` to `timings` under `stage`, followed by its `parts`, and
/// restarts the clock.
fn lap(
    timings: &mut Vec<StageTiming>,
    since: &mut Instant,
    stage: &'static str,
    parts: &[(&'static str, Duration)],
) {
    let now = Instant::now();
    timings.push(StageTiming {
        stage,
        time: now - *since,
        depth: 0,
    });
    timings.extend(parts.iter().map(|&(stage, time)| StageTiming {
        stage,
        time,
        depth: 1,
    }));
    *since = now;
}

impl JitCode {
    /// Verifies `kernel`, then generates, compiles and links all its statements.
    pub fn compile(kernel: &LoopKernel) -> Result<JitCode, JitError> {
        let mut clock = Instant::now();
        let mut timings = Vec::with_capacity(5);
        // Verification comes first: a kernel that is not proven in bounds is never compiled.
        verify(kernel)?;
        let src_len = kernel.src.size_bytes()?;
        let dst_len = kernel.dst.size_bytes()?;
        lap(&mut timings, &mut clock, "verify", &[]);

        // The wide variants: compiled on first use (see `JitCode::wide`), but found now,
        // since they are IR only and say how finely a threaded run can cut.
        let in_band = |i: usize| kernel.bands.iter().any(|b| b.members().contains(&i));
        let variants: Vec<(usize, LoopStmt)> = kernel
            .stmts
            .iter()
            .enumerate()
            .filter(|&(index, _)| !in_band(index))
            .filter_map(|(index, stmt)| Some((index, wide_variant(stmt)?)))
            .collect();
        let helper_runs = relayout_codegen::helper_kernel(kernel)?;
        let main = match &helper_runs {
            Some(runs) => {
                let helpers = HelperKernel::new(kernel, runs);
                lap(&mut timings, &mut clock, "helpers", &[]);
                Main::Helpers(helpers)
            }
            None => {
                let linked = link(kernel, &[], true, &mut |stage, parts| {
                    lap(&mut timings, &mut clock, stage, parts)
                })?;
                Main::Code(Box::new(linked))
            }
        };
        let mut stmts: Vec<StmtCode> = kernel
            .stmts
            .iter()
            .enumerate()
            .map(|(i, stmt)| {
                let (extent, disjoint) =
                    threaded_cut(stmt, helper_runs.as_ref().map(|runs| runs[i]));
                StmtCode {
                    extent,
                    disjoint,
                    work: stmt.trip_count().saturating_mul(stmt.bytes),
                    wide: None,
                }
            })
            .collect();
        // The collapsed forms: only their entries are numbered now; their statements are
        // made when the rows' function is first needed (`rows_kernel`).
        let units = kernel.units();
        let mut next = 0u64;
        let unit_rows = units
            .iter()
            .map(|unit| {
                let (rows, cols) = collapsible_unit(kernel, *unit)?;
                let code = RowsCode {
                    entry: next,
                    rows,
                    cols,
                };
                next += rows;
                Some(code)
            })
            .collect();
        for (k, (index, w)) in variants.iter().enumerate() {
            stmts[*index].wide = Some(WideCode {
                entry: k as u64,
                extent: w.loops[0].extent,
            });
        }
        Ok(JitCode {
            kernel: kernel.clone(),
            src_len,
            dst_len,
            main,
            stmts,
            units,
            unit_rows,
            variants,
            wide: OnceLock::new(),
            rows: OnceLock::new(),
            timings,
        })
    }

    /// The wide variants' function, compiled now if this is its first use; `None` when it
    /// cannot be (then the statements are cut along their own outer loops).
    fn wide(&self) -> Option<KernelFn> {
        self.wide
            .get_or_init(|| {
                // The variants live in a copy of the kernel with those statements swapped,
                // which verifies like the kernel (same points); nothing unverified is compiled.
                let mut wide_kernel = self.kernel.unfused();
                for (index, w) in &self.variants {
                    wide_kernel.stmts[*index] = w.clone();
                }
                verify(&wide_kernel).ok()?;
                link(&self.kernel, &self.variants, false, &mut |_, _| ()).ok()
            })
            .as_ref()
            .map(|l| l.entry)
    }

    /// The row variants' function, built and compiled now if this is its first use; `None`
    /// when it cannot be (then no statement is collapsed).
    fn rows(&self) -> Option<KernelFn> {
        self.rows
            .get_or_init(|| {
                let rows = rows_kernel(&self.kernel, &self.units)?;
                // Entry `k` of the rows kernel's function is its unit `k`; the numbering of
                // `unit_rows` must be that one.
                let want: u64 = self.unit_rows.iter().flatten().map(|r| r.rows).sum();
                if rows.units().len() as u64 != want {
                    return None;
                }
                // The rows kernel verifies like any kernel (its bands too); nothing
                // unverified is compiled.
                verify(&rows).ok()?;
                link(&rows, &[], true, &mut |_, _| ()).ok()
            })
            .as_ref()
            .map(|l| l.entry)
    }

    pub fn kernel(&self) -> &LoopKernel {
        &self.kernel
    }

    pub fn timings(&self) -> &[StageTiming] {
        &self.timings
    }

    /// Runs the whole schedule on the calling thread: one call of the kernel function.
    pub fn run_whole<S: Element, D: Element>(
        &self,
        src: &[S],
        dst: &mut [D],
    ) -> Result<(), RunError> {
        self.check_lengths(src, dst)?;
        // SAFETY: see the module documentation: the kernel is verified, the lengths were
        // checked above, and `RUN_ALL` runs every unit over its whole outer loop (`end` is
        // clamped to each extent) on this thread, with `dst` borrowed mutably throughout.
        unsafe {
            self.call(
                Callee::Main,
                src.as_ptr().cast::<u8>(),
                dst.as_mut_ptr().cast::<u8>(),
                RUN_ALL,
                0,
                u64::MAX,
            )
        };
        Ok(())
    }

    /// Runs every statement in order. Statement `i` is split into `parts(work, extent)`
    /// pieces run on the thread pool when its outer iterations write disjoint bytes; one piece
    /// (or no pool) runs on the calling thread. `ran` is told, statement by statement, how
    /// the statement was really run. When no unit is split, the whole schedule is one call.
    pub fn run<S: Element, D: Element>(
        &self,
        src: &[S],
        dst: &mut [D],
        parts: &dyn Fn(u64, u64) -> usize,
        ran: &mut dyn FnMut(StmtSplit),
    ) -> Result<(), RunError> {
        self.check_lengths(src, dst)?;
        let src_ptr = SharedSrc(src.as_ptr().cast::<u8>());
        let dst_ptr = SharedDst(dst.as_mut_ptr().cast::<u8>());
        // Nothing is allocated and the pool is not touched on this path: a small kernel's run
        // is a few tens of nanoseconds.
        let cuts = || {
            self.units
                .iter()
                .enumerate()
                .map(|(k, unit)| (*unit, self.cut(k, *unit, parts)))
        };
        let split = cuts().any(|(_, c)| c.pieces > 1);
        match if split { threads::pool() } else { None } {
            None => {
                // SAFETY: see the module documentation: the kernel is verified, the lengths
                // were checked above, and `RUN_ALL` runs every unit over its whole outer loop
                // (`end` is clamped to each extent) on this thread.
                unsafe {
                    self.call(
                        Callee::Main,
                        src_ptr.get(),
                        dst_ptr.get(),
                        RUN_ALL,
                        0,
                        u64::MAX,
                    )
                };
                for (unit, cut) in cuts() {
                    self.report(unit, &cut, 1, ran);
                }
            }
            Some(pool) => {
                for (unit, cut) in cuts() {
                    let cut = &cut;
                    let pieces = if cut.pieces > 1 {
                        let (func, which, n) = (cut.func, cut.entry, cut.pieces);
                        let rows = cut.rows;
                        let this = self;
                        pool.scope(move |scope| {
                            for range in split_even(cut.extent, n) {
                                scope.spawn(move |_| {
                                    if let Some(rows) = rows {
                                        // SAFETY: as below; the calls run the rows of the
                                        // collapsed range, each over a range inside its
                                        // loop, and different `(i0, i1)` write disjoint
                                        // bytes (`collapsible_unit`).
                                        for (row, part) in row_ranges(range, rows.cols) {
                                            unsafe {
                                                this.call(
                                                    func,
                                                    src_ptr.get(),
                                                    dst_ptr.get(),
                                                    rows.entry + row,
                                                    part.start,
                                                    part.end,
                                                )
                                            }
                                        }
                                        return;
                                    }
                                    // SAFETY: see the module documentation: the kernel is
                                    // verified, the lengths were checked by `run`, `range` is
                                    // inside the outer loop, and the ranges of this scope are
                                    // disjoint and the entry's outer iterations write disjoint
                                    // bytes (a statement's `disjoint`, a wide variant, whose
                                    // are by construction, or a band, which the verifier's
                                    // `bands` check proved), so the threads write disjoint
                                    // parts of `dst`, which `run` borrows mutably until the
                                    // scope has ended.
                                    unsafe {
                                        this.call(
                                            func,
                                            src_ptr.get(),
                                            dst_ptr.get(),
                                            which,
                                            range.start,
                                            range.end,
                                        )
                                    }
                                });
                            }
                        });
                        split_even(cut.extent, n).count()
                    } else {
                        // SAFETY: as above, on one thread over the unit's whole outer loop.
                        unsafe {
                            self.call(
                                Callee::Main,
                                src_ptr.get(),
                                dst_ptr.get(),
                                cut.whole,
                                0,
                                u64::MAX,
                            )
                        };
                        1
                    };
                    self.report(unit, cut, pieces, ran);
                }
            }
        }
        Ok(())
    }

    /// Calls `callee` with a kernel function's arguments: entry `entry` over `[start, end)`.
    ///
    /// # Safety
    /// As a call of the kernel function (see the module documentation): the kernel is
    /// verified, `src` and `dst` are buffers of the checked lengths, the range lies inside the
    /// entry's outer loop (or is `0..u64::MAX`), and no other thread writes what it writes.
    unsafe fn call(
        &self,
        callee: Callee,
        src: *const u8,
        dst: *mut u8,
        entry: u64,
        start: u64,
        end: u64,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            match (callee, &self.main) {
                (Callee::Code(func), _) => func(src, dst, entry, start, end),
                (Callee::Main, Main::Code(linked)) => (linked.entry)(src, dst, entry, start, end),
                (Callee::Main, Main::Helpers(helpers)) => {
                    helpers.run_entry(src, dst, entry, start, end)
                }
            }
        }
    }

    /// The bytes a unit of the schedule moves (a band: all its members), saturating.
    fn unit_work(&self, unit: Unit) -> u64 {
        match unit {
            Unit::Stmt(i) => self.stmts[i].work,
            Unit::Band(band) => self.stmts[band.members()]
                .iter()
                .fold(0u64, |w, m| w.saturating_add(m.work)),
        }
    }

    /// The most bytes one unit of the schedule moves.
    pub(crate) fn max_unit_work(&self) -> u64 {
        self.units
            .iter()
            .map(|&unit| self.unit_work(unit))
            .max()
            .unwrap_or(0)
    }

    /// How unit `k` is cut: a statement alone into `parts(work, extent)` pieces when its outer
    /// iterations write disjoint bytes, through its wide variant when that gives more pieces;
    /// a band (whose iterations the verifier proved disjoint) over its shared outer loop.
    fn cut(&self, k: usize, unit: Unit, parts: &dyn Fn(u64, u64) -> usize) -> Cut {
        let whole = k as u64;
        match unit {
            Unit::Stmt(i) => {
                let stmt = &self.stmts[i];
                let n = if stmt.disjoint {
                    parts(stmt.work, stmt.extent)
                } else {
                    1
                };
                let own = Cut {
                    whole,
                    func: Callee::Main,
                    entry: whole,
                    extent: stmt.extent,
                    pieces: n,
                    rows: None,
                };
                let wide = stmt
                    .wide
                    .as_ref()
                    .filter(|w| parts(stmt.work, w.extent) > n)
                    .and_then(|w| Some((w, self.wide()?)));
                let best = match wide {
                    Some((w, func)) => Cut {
                        whole,
                        func: Callee::Code(func),
                        entry: w.entry,
                        extent: w.extent,
                        pieces: parts(stmt.work, w.extent),
                        rows: None,
                    },
                    None => own,
                };
                self.collapsed(k, stmt.work, parts, best)
            }
            Unit::Band(band) => {
                let members = &self.stmts[band.members()];
                let extent = members[0].extent;
                let work = self.unit_work(unit);
                let own = Cut {
                    whole,
                    func: Callee::Main,
                    entry: whole,
                    extent,
                    pieces: parts(work, extent),
                    rows: None,
                };
                self.collapsed(k, work, parts, own)
            }
        }
    }

    /// Unit `k` cut along its two outer loops collapsed into one, when it has that form and
    /// it gives more pieces than `best`; otherwise `best`. The last resort: a piece may cover
    /// several rows, one call each.
    fn collapsed(&self, k: usize, work: u64, parts: &dyn Fn(u64, u64) -> usize, best: Cut) -> Cut {
        let collapsed = self.unit_rows[k].and_then(|r| {
            let extent = r.rows.checked_mul(r.cols)?;
            let pieces = parts(work, extent);
            if pieces <= best.pieces {
                return None;
            }
            Some(Cut {
                whole: best.whole,
                func: Callee::Code(self.rows()?),
                entry: r.entry,
                extent,
                pieces,
                rows: Some(r),
            })
        });
        collapsed.unwrap_or(best)
    }

    /// Tells `ran` how the statements of `unit` ran: in `pieces` pieces of `cut`.
    fn report(&self, unit: Unit, cut: &Cut, pieces: usize, ran: &mut dyn FnMut(StmtSplit)) {
        match unit {
            Unit::Stmt(_) if pieces > 1 => ran(StmtSplit {
                pieces,
                outer_extent: cut.extent,
                disjoint: true,
            }),
            Unit::Stmt(i) => ran(self.stmts[i].split(1)),
            Unit::Band(band) => {
                for _ in band.members() {
                    ran(StmtSplit {
                        pieces,
                        outer_extent: cut.extent,
                        disjoint: true,
                    });
                }
            }
        }
    }

    /// Both buffers must be exactly as long as their tensor types.
    fn check_lengths<S, D>(&self, src: &[S], dst: &[D]) -> Result<(), RunError> {
        for (operand, ty, want, got) in [
            (
                Operand::Source,
                &self.kernel.src,
                self.src_len,
                size_of_val(src),
            ),
            (
                Operand::Destination,
                &self.kernel.dst,
                self.dst_len,
                size_of_val(dst),
            ),
        ] {
            if got as u64 != want {
                return Err(RunError::Length {
                    kernel: self.kernel.name.clone(),
                    operand,
                    ty: ty.to_string(),
                    got: got as u64,
                    want,
                });
            }
        }
        Ok(())
    }
}

/// Proves the kernel in bounds.
pub(crate) fn verify(kernel: &LoopKernel) -> Result<(), JitError> {
    relayout_ir::verify_loop_kernel(kernel).map_err(|source| JitError::Verify {
        kernel: kernel.name.clone(),
        source,
    })
}

/// How threaded runs cut `stmt`: the extent of the loop whose iterations the pieces are, and
/// whether different iterations of it write disjoint destination bytes. That loop is the one
/// the entry runs pieces of: the outer loop of the helper's nest when `runs`' helper runs the
/// statement ([`helper_cut`]), else the statement's own outer loop.
pub(crate) fn threaded_cut(stmt: &LoopStmt, runs: Option<HelperRuns>) -> (u64, bool) {
    match runs {
        Some(runs) => helper_cut(stmt, runs),
        None => (
            stmt.loops.first().map_or(1, |l| l.extent),
            outer_iterations_disjoint(stmt),
        ),
    }
}

/// Whether two different iterations of the outermost loop write disjoint destination bytes,
/// so that they may run on different threads at the same time (the dependence analysis of
/// relayout-ir, which also decides fusion). Threaded runs rely on this for soundness.
pub(crate) fn outer_iterations_disjoint(stmt: &LoopStmt) -> bool {
    relayout_ir::dependence::iterations_disjoint(std::slice::from_ref(stmt), 1).is_ok()
}

/// `0..extent` cut into `parts` disjoint contiguous ranges that cover it (the empty ones
/// dropped).
fn split_even(extent: u64, parts: usize) -> impl Iterator<Item = Range<u64>> {
    let parts = parts.max(1) as u128;
    let at = move |k: u128| (u128::from(extent) * k / parts) as u64;
    (0..parts)
        .map(move |k| at(k)..at(k + 1))
        .filter(|r| !r.is_empty())
}

/// The rows a range of a collapsed loop (`i0 * cols + i1`) covers, with the range of `i1`
/// in each: `(i0, i1_start .. i1_end)`, in order.
fn row_ranges(range: Range<u64>, cols: u64) -> impl Iterator<Item = (u64, Range<u64>)> {
    let cols = cols.max(1);
    let first = range.start / cols;
    let last = range.end.div_ceil(cols);
    (first..last).filter_map(move |row| {
        let base = row * cols;
        let start = range.start.max(base) - base;
        let end = range.end.min(base + cols) - base;
        (start < end).then_some((row, start..end))
    })
}

/// The destination pointer, shared by the threads of one statement.
#[derive(Clone, Copy)]
struct SharedDst(*mut u8);

/// The source pointer, shared the same way.
#[derive(Clone, Copy)]
struct SharedSrc(*const u8);

impl SharedDst {
    // A method (rather than field access) makes closures capture the whole wrapper, which is
    // `Send`, instead of the raw pointer field, which is not.
    fn get(self) -> *mut u8 {
        self.0
    }
}

impl SharedSrc {
    fn get(self) -> *const u8 {
        self.0
    }
}

// SAFETY: the pointers are used only by the calls in `JitCode::run`, whose threads write
// disjoint destination bytes and only read the source, all within the borrows `run` holds.
unsafe impl Send for SharedDst {}
unsafe impl Send for SharedSrc {}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::{Loop, LoopAction};

    fn stmt(bytes: u64, loops: &[(u64, i64)]) -> LoopStmt {
        LoopStmt {
            action: LoopAction::Copy,
            bytes,
            src_offset: 0,
            dst_offset: 0,
            loops: loops
                .iter()
                .map(|&(extent, dst_stride)| Loop {
                    extent,
                    src_stride: 0,
                    dst_stride,
                })
                .collect(),
            window: None,
        }
    }

    #[test]
    fn disjointness_is_conservative() {
        assert!(outer_iterations_disjoint(&stmt(4, &[(10, 4)])));
        assert!(outer_iterations_disjoint(&stmt(4, &[(10, -4)])));
        assert!(!outer_iterations_disjoint(&stmt(4, &[(10, 3)])));
        assert!(!outer_iterations_disjoint(&stmt(4, &[(10, 0)])));
        assert!(!outer_iterations_disjoint(&stmt(4, &[])));
        // A transpose: the outer loop walks the destination's columns, the inner its rows;
        // every point writes its own 4 bytes (the nested-layout test proves it, the interval
        // of one outer iteration does not). With rows of 16 bytes, points collide.
        assert!(outer_iterations_disjoint(&stmt(4, &[(8, 4), (8, 32)])));
        assert!(!outer_iterations_disjoint(&stmt(4, &[(8, 4), (8, 16)])));
        assert!(outer_iterations_disjoint(&stmt(4, &[(8, 32), (8, 4)])));
        assert!(outer_iterations_disjoint(&stmt(4, &[(8, -32), (8, -4)])));
        assert!(!outer_iterations_disjoint(&stmt(4, &[(8, 31), (8, 4)])));
        // Extreme strides do not overflow (the analysis is in i128): these points are
        // distinct, since (j' - j) * 2^63 = 2^63 - 1 has no solution.
        assert!(outer_iterations_disjoint(&stmt(
            1,
            &[(2, i64::MAX), (u64::MAX, i64::MIN)]
        )));
        assert!(!outer_iterations_disjoint(&stmt(
            2,
            &[(2, i64::MAX), (u64::MAX, i64::MIN)]
        )));
    }

    #[test]
    fn row_ranges_cover_a_collapsed_range_in_order() {
        let cols = 5u64;
        for parts in [1usize, 2, 3, 4, 7, 15] {
            let mut seen = Vec::new();
            for range in split_even(3 * cols, parts) {
                for (row, part) in row_ranges(range, cols) {
                    assert!(part.end <= cols && part.start < part.end);
                    seen.extend(part.map(|i1| row * cols + i1));
                }
            }
            assert_eq!(seen, (0..3 * cols).collect::<Vec<_>>());
        }
    }

    #[test]
    fn collapsing_needs_a_short_outer_loop_and_disjoint_pairs() {
        // (3, 400) over 4-byte points: every pair writes its own bytes.
        let s = stmt(4, &[(3, 1600), (400, 4)]);
        let rows = row_variants(&s).expect("collapsible");
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2].dst_offset, 3200);
        assert_eq!(rows[2].loops.len(), 1);
        // A long outer loop is cut as it is.
        assert!(row_variants(&stmt(4, &[(64, 1600), (400, 4)])).is_none());
        // The second loop rewrites the same bytes: never collapsed.
        assert!(row_variants(&stmt(4, &[(3, 1600), (400, 0)])).is_none());
        assert!(row_variants(&stmt(4, &[(3, 4)])).is_none());
    }

    #[test]
    fn split_even_covers_once() {
        for extent in [0u64, 1, 2, 7, 100, u64::MAX] {
            for parts in [0usize, 1, 2, 3, 8, 200] {
                let ranges: Vec<_> = split_even(extent, parts).collect();
                let mut next = 0;
                for r in &ranges {
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, extent);
            }
        }
    }

    /// Every way of calling a kernel function's entries, for kernels of 0 to 7 units (one
    /// entry, a few found by comparisons, more by a table): run-all runs every unit, entry `e`
    /// only unit `e`, and an entry out of range (also one whose low 32 bits are in range)
    /// nothing.
    #[test]
    fn kernel_function_entries_run_their_unit_and_nothing_else() {
        use relayout_ir::{DType, TensorType};
        for units in 0..8u64 {
            // Statement k copies byte k, without loops.
            let stmts = (0..units)
                .map(|k| LoopStmt {
                    action: LoopAction::Copy,
                    bytes: 1,
                    src_offset: k as i64,
                    dst_offset: k as i64,
                    loops: Vec::new(),
                    window: None,
                })
                .collect();
            let kernel = LoopKernel {
                name: "entries".into(),
                src: TensorType::new(DType::U8, [8]),
                dst: TensorType::new(DType::U8, [8]),
                stmts,
                bands: Vec::new(),
            };
            verify(&kernel).unwrap();
            let linked = link(&kernel, &[], true, &mut |_, _| ()).unwrap();
            let src: Vec<u8> = (1..=8).collect();
            let run = |entry: u64, start: u64, end: u64| {
                let mut dst = vec![0u8; 8];
                // SAFETY: the buffers have the kernel's sizes and do not overlap.
                unsafe { (linked.entry)(src.as_ptr(), dst.as_mut_ptr(), entry, start, end) };
                dst
            };
            let only = |k: u64| -> Vec<u8> {
                (0..8u64)
                    .map(|i| if i == k { src[i as usize] } else { 0 })
                    .collect()
            };
            let all: Vec<u8> = (0..8u64)
                .map(|i| if i < units { src[i as usize] } else { 0 })
                .collect();
            assert_eq!(run(RUN_ALL, 0, u64::MAX), all, "{units} units, run-all");
            for e in 0..units {
                assert_eq!(run(e, 0, 1), only(e), "{units} units, entry {e}");
                // A statement without loops runs only when start < end.
                assert_eq!(
                    run(e, 1, 1),
                    vec![0; 8],
                    "{units} units, entry {e}, empty range"
                );
            }
            for e in [units, units + 1, 1 << 32, (1 << 32) + 1, RUN_ALL - 1] {
                assert_eq!(run(e, 0, 1), vec![0; 8], "{units} units, entry {e}");
            }
        }
    }

    /// A helper kernel's threaded pieces are pieces of its helper's nest, which is not the
    /// statement's loops when the helper blocks or drops its outer loop: one image into planes
    /// (its outer loop is the three channels; the helper's nest is rows of pixels), one image
    /// from planes, and every other element of one long loop (cut into rows). Each of 3 pieces of the cut loop, run
    /// alone, writes some bytes, none that another piece writes, and together they write what
    /// the whole run writes, with the same values. The statements' own outer loops gave one
    /// piece all the work (or, for the channels, left rows unwritten).
    #[test]
    fn helper_kernel_pieces_are_pieces_of_the_helpers_nest() {
        use relayout_ir::{DType, TensorType};
        let lp = |extent: u64, src_stride: i64, dst_stride: i64| Loop {
            extent,
            src_stride,
            dst_stride,
        };
        let pixels = 50176u64;
        let copy = |dtype: DType, src: u64, dst: u64, loops: Vec<Loop>| LoopKernel {
            name: "helped".into(),
            src: TensorType::new(dtype, [src]),
            dst: TensorType::new(dtype, [dst]),
            stmts: vec![LoopStmt {
                action: LoopAction::Copy,
                bytes: dtype.size(),
                src_offset: 0,
                dst_offset: 0,
                loops,
                window: None,
            }],
            bands: Vec::new(),
        };
        let n = 3 * pixels;
        let every_other = 1u64 << 21;
        let kernels = [
            (
                "one image into planes",
                copy(
                    DType::U8,
                    n,
                    n,
                    vec![lp(3, 1, pixels as i64), lp(pixels, 3, 1)],
                ),
            ),
            (
                "one image from planes",
                copy(
                    DType::U8,
                    n,
                    n,
                    vec![lp(3, pixels as i64, 1), lp(pixels, 1, 3)],
                ),
            ),
            (
                "every other element of one loop",
                copy(
                    DType::F32,
                    2 * every_other,
                    every_other,
                    vec![lp(every_other, 8, 4)],
                ),
            ),
        ];
        for (what, kernel) in &kernels {
            let code = JitCode::compile(kernel).unwrap();
            assert!(matches!(code.main, Main::Helpers(_)), "{what}: not helped");
            let (extent, disjoint) = (code.stmts[0].extent, code.stmts[0].disjoint);
            assert!(disjoint && extent >= 3, "{what}: extent {extent}");
            let src_len = kernel.src.size_bytes().unwrap() as usize;
            let dst_len = kernel.dst.size_bytes().unwrap() as usize;
            let src: Vec<u8> = (0..src_len).map(|i| (i * 7 + 3) as u8).collect();
            // The bytes a run writes (those that differ from both fillings) and their values.
            let run = |start: u64, end: u64| -> Vec<Option<u8>> {
                let fillings = [0x00u8, 0xff].map(|fill| {
                    let mut dst = vec![fill; dst_len];
                    // SAFETY: the kernel is verified, the buffers have its sizes and do not
                    // overlap, the range is inside entry 0's loop, and nothing else runs.
                    unsafe {
                        code.call(Callee::Main, src.as_ptr(), dst.as_mut_ptr(), 0, start, end)
                    };
                    dst
                });
                (0..dst_len)
                    .map(|i| {
                        let (a, b) = (fillings[0][i], fillings[1][i]);
                        (a == b).then_some(a)
                    })
                    .collect()
            };
            let whole = run(0, extent);
            assert!(whole.iter().all(Option::is_some), "{what}: the whole run");
            let mut union: Vec<Option<u8>> = vec![None; dst_len];
            for range in split_even(extent, 3) {
                let piece = run(range.start, range.end);
                let written = piece.iter().filter(|b| b.is_some()).count();
                assert!(
                    written > 0,
                    "{what}: piece {range:?} of {extent} writes nothing"
                );
                for (u, b) in union.iter_mut().zip(&piece) {
                    if b.is_some() {
                        assert!(u.is_none(), "{what}: pieces overlap at {range:?}");
                        *u = *b;
                    }
                }
            }
            assert_eq!(union, whole, "{what}: the pieces are not the whole run");
        }
    }
}
