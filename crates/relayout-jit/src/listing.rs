//! Listings of the machine code a loop kernel compiles to: what `relayout lower --emit asm`
//! and `--emit vcode` print.
//!
//! The listing compiles the kernel again, outside any JIT module, with the host ISA and the
//! same CLIF the JIT compiles. Cranelift is deterministic, so the instructions are the ones a
//! [`CompiledKernel`](crate::CompiledKernel) runs; only the targets of calls differ, which the
//! JIT fills in at link time and a listing shows as relocations (`%Memcpy`,
//! `%relayout_f16_add`).

use crate::{isa, module, JitError};
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::Context;
use relayout_codegen::{kernel_comments, translate_kernel_fn, TextImports};
use relayout_ir::LoopKernel;
use std::fmt::Write;

/// Which listing of a kernel's machine code [`machine_code_text`] produces.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Listing {
    /// Cranelift's own listing of its machine instructions (VCode) after register
    /// allocation, just before they are encoded: real registers and real x86-64 mnemonics,
    /// but Cranelift's notation, and pseudo-instructions where one expands to several. Needs
    /// no disassembler, so every build has it.
    VCode,
    /// The encoded machine code disassembled by capstone (AT&T syntax), with each block's
    /// offset: exactly the instructions that run. Only in builds with the `disas` feature
    /// (see [`HAS_DISASSEMBLER`]).
    Asm,
}

/// Whether this build can produce [`Listing::Asm`]: true when relayout-jit was built with its
/// `disas` feature, which links capstone (a C library, built with the system's C compiler).
pub const HAS_DISASSEMBLER: bool = cfg!(feature = "disas");

/// The machine code of the kernel's function (the one the JIT compiles) as text, preceded by
/// the kernel's schedule as `;` comment lines (`relayout_codegen::kernel_comments`) and by
/// the function's name and size.
///
/// The kernel is verified first, as [`CompiledKernel::compile`](crate::CompiledKernel::compile)
/// does. [`Listing::Asm`] in a build without the disassembler is
/// [`JitError::NoDisassembler`].
///
/// ```
/// use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
/// use relayout_jit::{machine_code_text, Listing};
///
/// let kernel = LoopKernel {
///     name: "t".into(),
///     src: TensorType::new(DType::U8, [2, 3]),
///     dst: TensorType::new(DType::U8, [3, 2]),
///     bands: vec![],
///     stmts: vec![LoopStmt {
///         action: LoopAction::Copy,
///         bytes: 1,
///         src_offset: 0,
///         dst_offset: 0,
///         loops: vec![
///             Loop { extent: 3, src_stride: 1, dst_stride: 2 },
///             Loop { extent: 2, src_stride: 3, dst_stride: 1 },
///         ],
///         window: None,
///     }],
/// };
/// let text = machine_code_text(&kernel, Listing::VCode)?;
/// assert!(text.contains(";   copy 1 bytes"));
/// assert!(text.contains("function %t: "));
/// assert!(text.contains("ret"));
/// # Ok::<(), relayout_jit::JitError>(())
/// ```
pub fn machine_code_text(kernel: &LoopKernel, listing: Listing) -> Result<String, JitError> {
    if listing == Listing::Asm && !HAS_DISASSEMBLER {
        return Err(JitError::NoDisassembler);
    }
    // The listing shows code that the JIT would run, so it is held to the same rule.
    module::verify(kernel)?;
    let isa = isa::host_for_listing()?;
    let func = translate_kernel_fn(kernel, &[], isa.frontend_config(), &mut TextImports)?;
    let name = func.name.to_string();
    let compile_error = |message: String| JitError::Compile {
        kernel: kernel.name.clone(),
        stmt: None,
        message,
    };
    let mut ctx = Context::for_function(func);
    ctx.set_disasm(listing == Listing::VCode);
    ctx.compile(&*isa, &mut ControlPlane::default())
        .map_err(|e| compile_error(format!("{:?}", e.inner)))?;
    let code = ctx
        .compiled_code()
        .ok_or_else(|| compile_error("Cranelift returned no code".into()))?;
    let text = match listing {
        Listing::VCode => code.vcode.clone().unwrap_or_default(),
        Listing::Asm => disassemble(code, &*isa, &ctx.func.params).map_err(compile_error)?,
    };
    let mut out = kernel_comments(kernel);
    // Writing to a String cannot fail.
    let _ = writeln!(
        out,
        "function {name}: {} bytes of machine code",
        code.code_buffer().len()
    );
    out.push_str(&text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

#[cfg(feature = "disas")]
fn disassemble(
    code: &cranelift_codegen::CompiledCode,
    isa: &dyn cranelift_codegen::isa::TargetIsa,
    params: &cranelift_codegen::ir::function::FunctionParameters,
) -> Result<String, String> {
    let capstone = isa
        .to_capstone()
        .map_err(|e| format!("no disassembler for {}: {e}", isa.triple()))?;
    code.disassemble(Some(params), &capstone)
        .map_err(|e| format!("disassembly failed: {e}"))
}

#[cfg(not(feature = "disas"))]
fn disassemble(
    _: &cranelift_codegen::CompiledCode,
    _: &dyn cranelift_codegen::isa::TargetIsa,
    _: &cranelift_codegen::ir::function::FunctionParameters,
) -> Result<String, String> {
    // Unreachable: `machine_code_text` refuses `Listing::Asm` first in this build.
    Err(JitError::NoDisassembler.to_string())
}
