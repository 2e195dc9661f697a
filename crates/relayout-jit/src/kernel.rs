//! `CompiledKernel`: the public face of a compiled loop kernel.

use crate::module::{JitCode, StageTiming};
use crate::{threads, Element, JitError, RunError};

use relayout_ir::LoopKernel;

/// A loop kernel compiled to machine code for this machine.
///
/// It is `Send` and `Sync`, and this is sound without an `unsafe impl`: the function pointers
/// are plain `unsafe extern "C" fn` values, which are `Send + Sync`; the machine code behind
/// them has no state of its own (it reads `src`, writes `dst`, and calls only the stateless
/// f16/bf16 helpers and libc's `memcpy`/`memset`), so any number of threads may run one kernel
/// at once, each with its own buffers; and the JIT module, which is `Send` but not `Sync`, sits
/// behind a mutex that is never locked because nothing but `Drop` touches it after
/// compilation. Dropping the kernel frees its code, which no run can outlive, since every run
/// borrows the kernel.
pub struct CompiledKernel {
    code: JitCode,
}

impl CompiledKernel {
    /// Verifies `kernel` with `relayout_ir::verify_loop_kernel` and compiles all its statements
    /// into one JIT module. A kernel that cannot be proven in bounds is refused before any
    /// code is generated.
    pub fn compile(kernel: &LoopKernel) -> Result<CompiledKernel, JitError> {
        Ok(CompiledKernel {
            code: JitCode::compile(kernel)?,
        })
    }

    /// The kernel this was compiled from.
    pub fn loop_kernel(&self) -> &LoopKernel {
        self.code.kernel()
    }

    /// Where [`compile`](Self::compile)'s time went, in order: `verify` (the bounds proof),
    /// `module` (a JIT module for the kernel), `codegen` (loop IR to Cranelift IR),
    /// `cranelift` (Cranelift IR to machine code) and `link` (placing the code in executable
    /// memory); for a kernel whose every statement streams its whole nest through one helper
    /// call, `verify` and `streams` (laying out the nests the JIT passes to the helpers
    /// itself: no code is generated). After `cranelift` come three of its parts (depth 1):
    /// `instruction selection`, `register allocation` and `emission`.
    pub fn compile_timings(&self) -> &[StageTiming] {
        self.code.timings()
    }

    /// Runs the kernel on the calling thread. `src` and `dst` must be exactly the byte sizes of
    /// the kernel's source and destination types; `dst` is updated in place (bytes no
    /// statement writes keep their value).
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), RunError> {
        self.code.run_whole(src, dst)
    }

    /// [`run`](Self::run) on element slices. `T` must have the size of the kernel's element
    /// type (any type of that size is accepted: an f32 kernel moves `u32`s just as well).
    pub fn run_typed<T: Element>(&self, src: &[T], dst: &mut [T]) -> Result<(), RunError> {
        self.check_element::<T>()?;
        self.code.run_whole(src, dst)
    }

    /// [`run_typed`](Self::run_typed) on up to `threads` threads, as
    /// [`run_threaded`](Self::run_threaded).
    pub fn run_threaded_typed<T: Element>(
        &self,
        src: &[T],
        dst: &mut [T],
        threads: usize,
    ) -> Result<(), RunError> {
        self.check_element::<T>()?;
        self.threaded(src, dst, threads)
    }

    /// The threaded run of [`run_threaded`](Self::run_threaded) and
    /// [`run_threaded_typed`](Self::run_threaded_typed). When even the unit that moves the
    /// most bytes is too small for two pieces, it is the single-threaded run, without working
    /// out each unit's cut (about 80 ns a call, more than a small kernel's whole run).
    fn threaded<S: Element, D: Element>(
        &self,
        src: &[S],
        dst: &mut [D],
        threads: usize,
    ) -> Result<(), RunError> {
        if threads::pieces(threads, self.code.max_unit_work(), u64::MAX) <= 1 {
            return self.code.run_whole(src, dst);
        }
        self.code.run(
            src,
            dst,
            &|work, extent| threads::pieces(threads, work, extent),
            &mut |_| (),
        )
    }

    /// `T` must have the size of the kernel's element type.
    fn check_element<T: Element>(&self) -> Result<(), RunError> {
        let dtype = self.loop_kernel().dtype();
        let size = size_of::<T>() as u64;
        if size != dtype.size() {
            return Err(RunError::ElementSize {
                kernel: self.loop_kernel().name.clone(),
                dtype,
                dtype_size: dtype.size(),
                element: std::any::type_name::<T>(),
                element_size: size,
            });
        }
        Ok(())
    }

    /// [`run`](Self::run) on up to `threads` threads of a process-wide pool. Statements run in
    /// order, each finishing before the next starts; a statement is split over its outermost
    /// loop when that loop's iterations write disjoint bytes and it moves enough data to pay
    /// for the threads (small kernels run on the calling thread). When the outermost loop is
    /// too short for the threads, the statement (or band) runs with its two outer loops
    /// swapped or collapsed into one, when their iterations write disjoint bytes.
    pub fn run_threaded(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), RunError> {
        self.threaded(src, dst, threads)
    }

    /// [`run_threaded`](Self::run_threaded) with the cut chosen by `split`, reporting how many
    /// pieces each statement really ran in. [`Split::Pieces`] cuts every statement whose outer
    /// iterations write disjoint bytes into that many pieces whatever its size, which is how
    /// tests make small kernels take the threaded path and check that they did.
    pub fn run_split(
        &self,
        src: &[u8],
        dst: &mut [u8],
        split: Split,
    ) -> Result<SplitReport, RunError> {
        let mut report = SplitReport::default();
        self.code.run(
            src,
            dst,
            &|work, extent| match split {
                Split::Threads(threads) => threads::pieces(threads, work, extent),
                Split::Pieces(n) => threads::exact_pieces(n, extent),
            },
            &mut |stmt| report.statements.push(stmt),
        )?;
        Ok(report)
    }
}

/// How [`CompiledKernel::run_split`] cuts each statement's outermost loop into pieces for the
/// thread pool. Only statements whose outer iterations write disjoint bytes are ever cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// As [`CompiledKernel::run_threaded`]: at most this many pieces, each moving enough bytes
    /// to pay for waking a thread.
    Threads(usize),
    /// Exactly this many pieces (fewer only when the outer loop has fewer iterations),
    /// however little the statement moves.
    Pieces(usize),
}

/// What a [`CompiledKernel::run_split`] did, statement by statement in kernel order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitReport {
    /// How each statement ran.
    pub statements: Vec<StmtSplit>,
}

/// How one statement of a kernel ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StmtSplit {
    /// Pieces it ran in (1: whole, on the calling thread).
    pub pieces: usize,
    /// Iterations of its outermost loop, the loop that is cut (1 without loops).
    pub outer_extent: u64,
    /// Whether its outer iterations write disjoint bytes, so that it may be cut at all.
    pub disjoint: bool,
}

impl StmtSplit {
    /// The pieces a forced split into `n` must produce for this statement: `n`, capped by
    /// the outer loop, when the statement can be cut; 1 otherwise.
    pub fn expected_pieces(&self, n: usize) -> usize {
        if self.disjoint {
            threads::exact_pieces(n, self.outer_extent)
        } else {
            1
        }
    }
}

impl SplitReport {
    /// True when at least one statement ran in more than one piece.
    pub fn split(&self) -> bool {
        self.statements.iter().any(|s| s.pieces > 1)
    }

    /// The most pieces any statement ran in (1 when none was split): how many threads the
    /// run could use at once. A run asked for more threads than this had less work to share.
    pub fn max_pieces(&self) -> usize {
        self.statements
            .iter()
            .map(|s| s.pieces)
            .max()
            .unwrap_or(1)
            .max(1)
    }

    /// `Ok` when every statement ran as a forced split into `n` pieces requires
    /// ([`StmtSplit::expected_pieces`]); otherwise which statement did not, and how it ran.
    pub fn check_forced(&self, n: usize) -> Result<(), String> {
        match self
            .statements
            .iter()
            .enumerate()
            .find(|(_, s)| s.pieces != s.expected_pieces(n))
        {
            Some((i, s)) => Err(format!(
                "statement {i} ran in {} pieces, a forced split into {n} needs {}: {s:?}",
                s.pieces,
                s.expected_pieces(n)
            )),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompiledKernel({:?})", self.loop_kernel())
    }
}
