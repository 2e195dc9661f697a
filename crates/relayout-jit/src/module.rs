//! The JIT module that holds one kernel's machine code, and every `unsafe` block of relayout.
//!
//! # Safety
//!
//! A statement function reads `[src, src + src_len)` and writes `[dst, dst + dst_len)` and
//! nothing else, when four things hold, each established here before any call:
//!
//! 1. The kernel passed `relayout_ir::verify_loop_kernel`, which proves that every run of
//!    every statement lies inside its tensor for every point of the loop nest
//!    ([`JitCode::compile`] verifies before it generates any code).
//! 2. The buffers have exactly the byte sizes of the kernel's tensor types
//!    ([`JitCode::check_lengths`], before every run).
//! 3. `[start, end)` lies inside the outermost loop (the ranges passed are `0..extent` or a
//!    piece of it from [`split_even`]; the generated code also clamps `end` to the extent).
//! 4. The code does what the loop IR says. That is relayout-codegen's job, checked by the
//!    execution tests against the interpreter.
//!
//! The source is only read and the destination is borrowed mutably for the whole run, so no
//! Rust code observes the destination while machine code writes it, and the two cannot
//! overlap. A threaded run calls one statement on several threads at once with disjoint
//! ranges of the outermost loop, and only for statements whose different outer iterations
//! write disjoint destination bytes ([`outer_iterations_disjoint`]), so the threads never
//! touch the same destination byte; the scope of the thread pool ends before the next
//! statement starts and before the run returns.
//!
//! The function pointers never leave [`JitCode`], and [`JitCode`]'s `Drop` frees the code
//! memory; no call can be running then, because every call borrows the `JitCode`.

use crate::error::{Operand, RunError};
use crate::{helpers, isa, threads, Element, JitError, StmtSplit};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::{CodegenError, Context};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, FuncId, Module, ModuleReloc};
use relayout_codegen::{stmt_signature, translate_stmt, Helper, ModuleImports};
use relayout_ir::{Band, LoopKernel, LoopStmt, Unit};
use std::ops::Range;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One function's machine code, before it is placed in the module.
struct MachineCode {
    alignment: u64,
    bytes: Vec<u8>,
    relocs: Vec<ModuleReloc>,
}

/// Compiles each function for `isa`, in parallel on the pool when there are several and the
/// pool exists (a kernel of many statements, such as a padded SpaceToBatchND or a Col2Im,
/// compiles in about half the time on two cores), in order otherwise.
fn compile_all(
    isa: &dyn TargetIsa,
    funcs: Vec<Function>,
    ids: &[FuncId],
) -> Vec<Result<MachineCode, CodegenError>> {
    let one = |(func, &id): (Function, &FuncId)| {
        let mut ctx = Context::for_function(func);
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
    match threads::pool() {
        Some(pool) if funcs.len() > 1 => pool.install(|| {
            use rayon::prelude::*;
            funcs.into_par_iter().zip(ids).map(one).collect()
        }),
        _ => funcs.into_iter().zip(ids).map(one).collect(),
    }
}

/// A statement's entry point. It is an `unsafe fn` because it trusts its arguments.
type StmtFn = unsafe extern "C" fn(src: *const u8, dst: *mut u8, start: u64, end: u64);

struct StmtCode {
    entry: StmtFn,
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

/// The wide variant of a statement: its entry point and the extent of its outer loop (the
/// statement's second loop). Its outer iterations always write disjoint bytes.
struct WideCode {
    entry: StmtFn,
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

/// One kernel's machine code: one function per statement, in one JIT module.
pub(crate) struct JitCode {
    kernel: LoopKernel,
    src_len: u64,
    dst_len: u64,
    stmts: Vec<StmtCode>,
    /// The kernel's schedule: statements alone and bands (`LoopKernel::units`).
    units: Vec<Unit>,
    /// Never locked. `JITModule` is `Send` but not `Sync` (it has interior mutability used
    /// while linking); after `finalize_definitions` it is only touched again by `Drop`, which
    /// has `&mut self`. The mutex makes that visible to the compiler, so `JitCode` is `Sync`
    /// without an `unsafe impl`.
    module: Mutex<Option<JITModule>>,
    /// Where the compile's time went, stage by stage.
    timings: Vec<StageTiming>,
}

/// The wall time of one stage of [`CompiledKernel::compile`](crate::CompiledKernel::compile).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct StageTiming {
    /// What ran: `verify`, `module`, `codegen`, `cranelift`, `link` (see
    /// [`CompiledKernel::compile_timings`](crate::CompiledKernel::compile_timings)).
    pub stage: &'static str,
    /// How long it took.
    pub time: Duration,
}

/// Appends the time since `*since` to `timings` under `stage`, and restarts the clock.
fn lap(timings: &mut Vec<StageTiming>, since: &mut Instant, stage: &'static str) {
    let now = Instant::now();
    timings.push(StageTiming {
        stage,
        time: now - *since,
    });
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
        lap(&mut timings, &mut clock, "verify");

        let mut builder = JITBuilder::with_isa(isa::host()?, default_libcall_names());
        for helper in Helper::ALL {
            builder.symbol(helper.symbol(), helpers::address(helper));
        }
        // From here on the module is owned by `code`, whose `Drop` frees it on every error path.
        let mut code = JitCode {
            kernel: kernel.clone(),
            src_len,
            dst_len,
            stmts: Vec::with_capacity(kernel.stmts.len()),
            units: kernel.units(),
            module: Mutex::new(Some(JITModule::new(builder))),
            timings: Vec::new(),
        };
        lap(&mut timings, &mut clock, "module");
        let compile_error = |stmt: Option<usize>, e: &dyn std::fmt::Debug| JitError::Compile {
            kernel: kernel.name.clone(),
            stmt,
            // `ModuleError`'s Display omits the verifier's findings; Debug keeps them.
            message: format!("{e:?}"),
        };
        let module = code
            .module
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .ok_or_else(|| compile_error(None, &"the module is gone"))?;

        // Translating declares imports in the module, so it runs in order; Cranelift's
        // compilation of the functions (most of the time) then runs on the thread pool when
        // there are several, and the machine code is placed in the module in order.
        let sig = stmt_signature(module.target_config().default_call_conv);
        let mut funcs = Vec::with_capacity(kernel.stmts.len());
        let mut ids = Vec::with_capacity(kernel.stmts.len());
        // The wide variants live in a copy of the kernel with those statements swapped, which
        // verifies like the kernel (same points), and come after the kernel's own functions.
        let in_band = |i: usize| kernel.bands.iter().any(|b| b.members().contains(&i));
        let mut wide_kernel = kernel.unfused();
        let mut wide = Vec::new();
        for (index, stmt) in kernel.stmts.iter().enumerate() {
            if let Some(w) = wide_variant(stmt).filter(|_| !in_band(index)) {
                wide_kernel.stmts[index] = w;
                wide.push(index);
            }
        }
        if !wide.is_empty() {
            verify(&wide_kernel)?;
        }
        let all = (0..kernel.stmts.len())
            .map(|i| (kernel, i))
            .chain(wide.iter().map(|&i| (&wide_kernel, i)));
        for (from, index) in all {
            let config = module.target_config();
            funcs.push(translate_stmt(
                from,
                index,
                config,
                &mut ModuleImports::new(module),
            )?);
            let id = module
                .declare_anonymous_function(&sig)
                .map_err(|e| compile_error(Some(index), &e))?;
            ids.push(id);
        }
        lap(&mut timings, &mut clock, "codegen");
        let isa = isa::host()?;
        let compiled = compile_all(&*isa, funcs, &ids);
        lap(&mut timings, &mut clock, "cranelift");
        for (index, (id, code)) in ids.iter().zip(compiled).enumerate() {
            let code = code.map_err(|e| compile_error(Some(index), &e))?;
            module
                .define_function_bytes(*id, code.alignment, &code.bytes, &code.relocs)
                .map_err(|e| compile_error(Some(index), &e))?;
        }
        // One finalize for all statements: each one maps at least a page.
        module
            .finalize_definitions()
            .map_err(|e| compile_error(None, &e))?;

        let entry = |id: FuncId| {
            let address = module.get_finalized_function(id);
            // SAFETY: `address` is the finalized (executable) code of a function compiled from
            // CLIF with `stmt_signature` in the ISA's default calling convention, which is the
            // platform's C calling convention, so it has exactly the type `StmtFn`. It stays
            // valid until `free_memory` in `Drop`, and it never leaves this struct.
            unsafe { std::mem::transmute::<*const u8, StmtFn>(address) }
        };
        let mut stmts = Vec::with_capacity(kernel.stmts.len());
        for (stmt, &id) in kernel.stmts.iter().zip(&ids) {
            stmts.push(StmtCode {
                entry: entry(id),
                extent: stmt.loops.first().map_or(1, |l| l.extent),
                disjoint: outer_iterations_disjoint(stmt),
                work: stmt.trip_count().saturating_mul(stmt.bytes),
                wide: None,
            });
        }
        for (&index, &id) in wide.iter().zip(&ids[kernel.stmts.len()..]) {
            stmts[index].wide = Some(WideCode {
                entry: entry(id),
                extent: wide_kernel.stmts[index].loops[0].extent,
            });
        }
        code.stmts = stmts;
        lap(&mut timings, &mut clock, "link");
        code.timings = timings;
        Ok(code)
    }

    pub fn kernel(&self) -> &LoopKernel {
        &self.kernel
    }

    pub fn timings(&self) -> &[StageTiming] {
        &self.timings
    }

    /// Runs every statement in order. Statement `i` is split into `parts(work, extent)`
    /// pieces run on the thread pool when its outer iterations write disjoint bytes; one piece
    /// (or no pool) runs on the calling thread. `ran` is told, statement by statement, how
    /// the statement was really run.
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
        for unit in &self.units {
            match *unit {
                Unit::Stmt(i) => self.run_stmt(&self.stmts[i], src_ptr, dst_ptr, parts, ran),
                Unit::Band(band) => self.run_band(band, src_ptr, dst_ptr, parts, ran),
            }
        }
        Ok(())
    }

    /// Runs one statement alone, split into `parts(work, extent)` pieces when its outer
    /// iterations write disjoint bytes.
    fn run_stmt(
        &self,
        stmt: &StmtCode,
        src_ptr: SharedSrc,
        dst_ptr: SharedDst,
        parts: &dyn Fn(u64, u64) -> usize,
        ran: &mut dyn FnMut(StmtSplit),
    ) {
        let n = if stmt.disjoint {
            parts(stmt.work, stmt.extent)
        } else {
            1
        };
        // The wide variant when it gives more pieces than the outer loop can.
        let (entry, extent, n) = match &stmt.wide {
            Some(w) if parts(stmt.work, w.extent) > n => {
                (w.entry, w.extent, parts(stmt.work, w.extent))
            }
            _ => (stmt.entry, stmt.extent, n),
        };
        match threads::pool() {
            Some(pool) if n > 1 => {
                pool.scope(move |scope| {
                    for range in split_even(extent, n) {
                        scope.spawn(move |_| {
                            // SAFETY: see the module documentation: the kernel is verified,
                            // the lengths were checked by `run`, `range` is inside the outer
                            // loop, and the ranges of this scope are disjoint and the
                            // function's outer iterations write disjoint bytes
                            // (`stmt.disjoint`, or a wide variant, whose are by
                            // construction), so the threads write disjoint parts of `dst`,
                            // which `run` borrows mutably until the scope has ended.
                            unsafe { entry(src_ptr.get(), dst_ptr.get(), range.start, range.end) }
                        });
                    }
                });
                ran(StmtSplit {
                    pieces: split_even(extent, n).count(),
                    outer_extent: extent,
                    disjoint: true,
                });
            }
            _ => {
                // SAFETY: as above, on one thread over the whole outer loop.
                unsafe { (stmt.entry)(src_ptr.get(), dst_ptr.get(), 0, stmt.extent) };
                ran(stmt.split(1));
            }
        }
    }

    /// Runs a band: for each iteration `i` of the shared outermost loop, every member's
    /// function on `i .. i + 1`, in statement order. A band deeper than one loop runs the same
    /// way (its iterations are disjoint at every shared level, so at the outermost one too,
    /// and each element still sees the members in statement order). The verifier proved the
    /// band's iterations write disjoint bytes, so its outer loop is cut into pieces for threads
    /// like a disjoint statement's.
    fn run_band(
        &self,
        band: Band,
        src_ptr: SharedSrc,
        dst_ptr: SharedDst,
        parts: &dyn Fn(u64, u64) -> usize,
        ran: &mut dyn FnMut(StmtSplit),
    ) {
        let members = &self.stmts[band.members()];
        let extent = members[0].extent;
        let work = members.iter().fold(0u64, |w, m| w.saturating_add(m.work));
        let run_range = move |range: Range<u64>| {
            for i in range {
                for m in members {
                    // SAFETY: as in `run_stmt`: every member is verified and `i` is inside
                    // its outer loop (members share it); pieces of different threads cover
                    // disjoint iterations, which write disjoint bytes (the verifier's `bands`
                    // check).
                    unsafe { (m.entry)(src_ptr.get(), dst_ptr.get(), i, i + 1) }
                }
            }
        };
        let n = parts(work, extent);
        let pieces = match threads::pool() {
            Some(pool) if n > 1 => {
                pool.scope(move |scope| {
                    for range in split_even(extent, n) {
                        scope.spawn(move |_| run_range(range));
                    }
                });
                split_even(extent, n).count()
            }
            _ => {
                run_range(0..extent);
                1
            }
        };
        for _ in members {
            ran(StmtSplit {
                pieces,
                outer_extent: extent,
                disjoint: true,
            });
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

impl Drop for JitCode {
    fn drop(&mut self) {
        let module = self
            .module
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(module) = module {
            // SAFETY: the function pointers into this memory live in `self.stmts` and are only
            // called through `&self`, which `drop`'s `&mut self` excludes; threaded calls end
            // with their scope, inside `run`. Nothing calls them afterwards.
            unsafe { module.free_memory() }
        }
    }
}

/// Proves the kernel in bounds.
pub(crate) fn verify(kernel: &LoopKernel) -> Result<(), JitError> {
    relayout_ir::verify_loop_kernel(kernel).map_err(|source| JitError::Verify {
        kernel: kernel.name.clone(),
        source,
    })
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
}
