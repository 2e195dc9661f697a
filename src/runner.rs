//! The run methods shared by the compiled kernels ([`CompiledOp`](crate::CompiledOp),
//! [`CompiledChain`](crate::CompiledChain) and [`CompiledLoops`](crate::CompiledLoops)): each public
//! `run*` method forwards to a [`Runner`] over its kernel and output type, which runs the
//! [`CompiledKernel`] and converts its errors into [`Error`]s.

use crate::{Element, Error, ErrorCategory, OpError, Split, SplitReport};
use relayout_ir::TensorType;
use relayout_jit::CompiledKernel;

/// The public `run*` methods of a compiled type, each forwarding to the type's
/// `fn runner(&self) -> Runner<'_>`: written once for [`CompiledOp`](crate::CompiledOp),
/// [`CompiledChain`](crate::CompiledChain) and [`CompiledLoops`](crate::CompiledLoops).
macro_rules! run_methods {
    () => {
        /// Runs the kernel on little-endian bytes. Both lengths are checked against the types.
        pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<(), $crate::Error> {
            self.runner().run(src, dst)
        }

        /// Runs the kernel splitting the work over `threads` threads of a shared pool.
        pub fn run_threaded(
            &self,
            src: &[u8],
            dst: &mut [u8],
            threads: usize,
        ) -> Result<(), $crate::Error> {
            self.runner().run_threaded(src, dst, threads)
        }

        /// Runs the kernel with each statement cut as `split` says (see
        /// [`Split`](crate::Split)), and reports how many pieces each statement really ran in.
        pub fn run_split(
            &self,
            src: &[u8],
            dst: &mut [u8],
            split: $crate::Split,
        ) -> Result<$crate::SplitReport, $crate::Error> {
            self.runner().run_split(src, dst, split)
        }

        /// Runs the kernel on element slices; the element type must have the kernel's element
        /// size.
        pub fn run_typed<T: $crate::Element>(
            &self,
            src: &[T],
            dst: &mut [T],
        ) -> Result<(), $crate::Error> {
            self.runner().run_typed(src, dst)
        }

        /// [`run_typed`](Self::run_typed) split over `threads` threads, as
        /// [`run_threaded`](Self::run_threaded).
        pub fn run_threaded_typed<T: $crate::Element>(
            &self,
            src: &[T],
            dst: &mut [T],
            threads: usize,
        ) -> Result<(), $crate::Error> {
            self.runner().run_threaded_typed(src, dst, threads)
        }

        /// Runs the kernel into a new buffer.
        pub fn run_to_vec(&self, src: &[u8]) -> Result<Vec<u8>, $crate::Error> {
            self.runner().run_to_vec(src)
        }
    };
}
pub(crate) use run_methods;

/// A compiled kernel and the type of the tensor it writes, borrowed for one run.
#[derive(Clone, Copy)]
pub(crate) struct Runner<'a> {
    kernel: &'a CompiledKernel,
    output: &'a TensorType,
}

impl<'a> Runner<'a> {
    pub(crate) fn new(kernel: &'a CompiledKernel, output: &'a TensorType) -> Self {
        Runner { kernel, output }
    }

    pub(crate) fn run(self, src: &[u8], dst: &mut [u8]) -> Result<(), Error> {
        Ok(self.kernel.run(src, dst)?)
    }

    pub(crate) fn run_threaded(
        self,
        src: &[u8],
        dst: &mut [u8],
        threads: usize,
    ) -> Result<(), Error> {
        Ok(self.kernel.run_threaded(src, dst, threads)?)
    }

    pub(crate) fn run_split(
        self,
        src: &[u8],
        dst: &mut [u8],
        split: Split,
    ) -> Result<SplitReport, Error> {
        Ok(self.kernel.run_split(src, dst, split)?)
    }

    pub(crate) fn run_typed<T: Element>(self, src: &[T], dst: &mut [T]) -> Result<(), Error> {
        Ok(self.kernel.run_typed(src, dst)?)
    }

    pub(crate) fn run_threaded_typed<T: Element>(
        self,
        src: &[T],
        dst: &mut [T],
        threads: usize,
    ) -> Result<(), Error> {
        Ok(self.kernel.run_threaded_typed(src, dst, threads)?)
    }

    /// Runs the kernel into a new zeroed buffer of the output's byte size.
    pub(crate) fn run_to_vec(self, src: &[u8]) -> Result<Vec<u8>, Error> {
        let mut dst = zeroed_buffer(self.output)?;
        self.run(src, &mut dst)?;
        Ok(dst)
    }
}

/// A zeroed buffer of the byte size of `ty`, for the `run_to_vec`s. The size was checked
/// when the op was validated, so it fits in a `u64`; it may still not fit in memory.
fn zeroed_buffer(ty: &TensorType) -> Result<Vec<u8>, Error> {
    let len = ty
        .size_bytes()
        .map_err(|e| OpError::new(ErrorCategory::SizeOverflow, e.to_string()))?;
    let len = usize::try_from(len).map_err(|_| {
        OpError::new(
            ErrorCategory::SizeOverflow,
            format!("{ty} does not fit in memory"),
        )
    })?;
    Ok(vec![0u8; len])
}
