//! External functions that generated code calls, and how each consumer names them.
//!
//! `memcpy` and `memset` are Cranelift libcalls (`ExternalName::LibCall`): every module
//! resolves them itself, so they need no declaration here. The helpers below are not libc
//! functions; the JIT defines them in Rust and registers them under [`Helper::symbol`].

use crate::CodegenError;
use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, FuncRef, Function, Signature,
};
use cranelift_codegen::isa::CallConv;
use cranelift_module::{FuncId, Linkage, Module};

/// A function the generated code calls that the embedder must provide.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Helper {
    /// `extern "C" fn(acc: u32, x: u32) -> u32`: the f16 sum of the low 16 bits of both
    /// arguments, rounded once, as `DType::F16.add_assign` computes it (bits 16.. are ignored
    /// on input and zero on output).
    F16Add,
    /// The same for bf16.
    Bf16Add,
    /// `extern "C" fn(dst: *mut u8, src: *const u8, len: u64, loops: *const [u64; 3], depth:
    /// u64)`: copies a run of `len` bytes at every point of a nest of `depth` loops with
    /// non-temporal (streaming) stores, which CLIF cannot express. Loop `k` (outermost first)
    /// is `loops[k] = [count, dst_stride, src_stride]`, strides in bytes; with `depth` 0 one
    /// run is copied. The stores are weakly ordered until a [`Helper::StoreFence`]. One call
    /// moves a statement's whole nest, so that generated code keeps no loops around calls,
    /// which cost Cranelift's register allocator more than the rest of such a kernel.
    StreamCopy,
    /// `extern "C" fn(dst: *mut u8, len: u64, loops: *const [u64; 3], depth: u64)`: zeroes a
    /// run of `len` bytes at every point of a nest with streaming stores, as
    /// [`Helper::StreamCopy`] copies (the source strides are not used).
    StreamZero,
    /// `extern "C" fn()`: a store fence (`sfence`), after which the streaming stores are
    /// ordered like ordinary ones. Every function that streams calls it before returning.
    StoreFence,
}

impl Helper {
    /// Every helper.
    pub const ALL: [Helper; 5] = [
        Helper::F16Add,
        Helper::Bf16Add,
        Helper::StreamCopy,
        Helper::StreamZero,
        Helper::StoreFence,
    ];

    /// The symbol name under which the embedder registers the function.
    pub fn symbol(self) -> &'static str {
        match self {
            Helper::F16Add => "relayout_f16_add",
            Helper::Bf16Add => "relayout_bf16_add",
            Helper::StreamCopy => "relayout_stream_copy_nest",
            Helper::StreamZero => "relayout_stream_zero_nest",
            Helper::StoreFence => "relayout_store_fence",
        }
    }

    /// The helper's signature. The 16-bit values of the adds travel in 32-bit registers
    /// because the C calling conventions leave the upper bits of narrower arguments
    /// unspecified, and Cranelift and rustc need not agree on who extends them.
    pub fn signature(self, call_conv: CallConv) -> Signature {
        let mut sig = Signature::new(call_conv);
        let (params, returns): (&[_], &[_]) = match self {
            Helper::F16Add | Helper::Bf16Add => (&[types::I32, types::I32], &[types::I32]),
            Helper::StreamCopy => (&[types::I64; 5], &[]),
            Helper::StreamZero => (&[types::I64; 4], &[]),
            Helper::StoreFence => (&[], &[]),
        };
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns
            .extend(returns.iter().map(|&t| AbiParam::new(t)));
        sig
    }
}

/// Makes a helper callable from a function under construction.
pub trait Imports {
    /// Declares `helper` in `func` and returns the reference to call it with.
    fn import(&mut self, helper: Helper, func: &mut Function) -> Result<FuncRef, CodegenError>;
}

/// Names helpers by their symbol (`%relayout_f16_add`), for printed CLIF.
#[derive(Clone, Copy, Default, Debug)]
pub struct TextImports;

impl Imports for TextImports {
    fn import(&mut self, helper: Helper, func: &mut Function) -> Result<FuncRef, CodegenError> {
        let call_conv = func.signature.call_conv;
        let signature = func.import_signature(helper.signature(call_conv));
        Ok(func.import_function(ExtFuncData {
            name: ExternalName::testcase(helper.symbol()),
            signature,
            colocated: false,
            patchable: false,
        }))
    }
}

/// Declares helpers as imports of a Cranelift module, which resolves them at link time (the
/// JIT through the symbols registered with its builder).
pub struct ModuleImports<'m, M: Module + ?Sized> {
    module: &'m mut M,
    declared: Vec<(Helper, FuncId)>,
}

impl<'m, M: Module + ?Sized> ModuleImports<'m, M> {
    /// Imports into `module`, declaring each helper once however often it is used.
    pub fn new(module: &'m mut M) -> Self {
        ModuleImports {
            module,
            declared: Vec::new(),
        }
    }
}

impl<M: Module + ?Sized> Imports for ModuleImports<'_, M> {
    fn import(&mut self, helper: Helper, func: &mut Function) -> Result<FuncRef, CodegenError> {
        let id = match self.declared.iter().find(|(h, _)| *h == helper) {
            Some(&(_, id)) => id,
            None => {
                let sig = helper.signature(self.module.target_config().default_call_conv);
                let id = self
                    .module
                    .declare_function(helper.symbol(), Linkage::Import, &sig)
                    .map_err(|e| CodegenError::Import {
                        symbol: helper.symbol(),
                        message: e.to_string(),
                    })?;
                self.declared.push((helper, id));
                id
            }
        };
        Ok(self.module.declare_func_in_func(id, func))
    }
}
