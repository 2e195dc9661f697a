//! `CompiledKernel`: the public face of a compiled loop kernel.

use crate::module::JitCode;
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

    /// Runs the kernel on the calling thread. `src` and `dst` must be exactly the byte sizes of
    /// the kernel's source and destination types; `dst` is updated in place (bytes no
    /// statement writes keep their value).
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), RunError> {
        self.code.run(src, dst, &|_, _| 1)
    }

    /// [`run`](Self::run) on element slices. `T` must have the size of the kernel's element
    /// type (any type of that size is accepted: an f32 kernel moves `u32`s just as well).
    pub fn run_typed<T: Element>(&self, src: &[T], dst: &mut [T]) -> Result<(), RunError> {
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
        self.code.run(src, dst, &|_, _| 1)
    }

    /// [`run`](Self::run) on up to `threads` threads of a process-wide pool. Statements run in
    /// order, each finishing before the next starts; a statement is split over its outermost
    /// loop when that loop's iterations write disjoint bytes and it moves enough data to pay
    /// for the threads (small kernels run on the calling thread).
    pub fn run_threaded(&self, src: &[u8], dst: &mut [u8], threads: usize) -> Result<(), RunError> {
        self.code.run(src, dst, &|work, extent| {
            threads::pieces(threads, work, extent)
        })
    }
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CompiledKernel({:?})", self.loop_kernel())
    }
}
