//! Ahead-of-time compilation: one kernel into a relocatable object file for this machine, for
//! programs that link their kernels instead of generating code at run time.
//!
//! The object holds the code the JIT would run: the kernel is verified first (nothing is
//! written for a kernel the verifier cannot prove in bounds), and it is translated by the same
//! `translate_kernel_fn` into the same function, compiled for the host ISA with the JIT's
//! flags except `is_pic`, which is on so that the object links into position-independent
//! executables (calls to `memcpy` and the helpers go through the GOT instead of absolute
//! addresses). That function is local to the object; it exports two entry points, written
//! here in CLIF, which call it:
//!
//! - `NAME(src, dst)` runs the kernel's schedule (`LoopKernel::units`): each statement over its
//!   whole outer loop, and each band iteration by iteration, as `JitCode::run` does on one
//!   thread;
//! - `NAME_range(src, dst, start, end)` runs the iterations `[start, min(end, OUTER))` of the
//!   kernel's *outer loop*, so that a caller can cut `0..OUTER` over its own threads. A kernel
//!   of one statement whose outer iterations write disjoint bytes, or of one band (whose
//!   iterations the verifier proved disjoint), has that loop as its outer loop. Any other
//!   kernel (several statements that must run one after the other) has `OUTER = 1`:
//!   `NAME_range(src, dst, 0, 1)` runs it whole, and it cannot be split.
//!
//! What this module does not do: it does not emit the helpers (`relayout_f16_add`, the
//! streaming stores). An object whose code calls them imports them by their
//! [`Helper::symbol`], and the program must link librelayout_capi, which exports them;
//! [`AotObject::helpers`] lists them and [`AotObject::header`] says so.

use crate::module::{outer_iterations_disjoint, verify};
use crate::{isa, JitError};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{types, AbiParam, Function, InstBuilder, Signature, UserFuncName};
use cranelift_codegen::Context;
use cranelift_module::{default_libcall_names, FuncId, Linkage, Module};
use cranelift_object::{ObjectBuilder, ObjectModule};
use relayout_codegen::{
    build_function, kernel_signature, stmt_signature, translate_kernel_fn, Helper, ModuleImports,
    RUN_ALL,
};
use relayout_ir::{LoopKernel, TensorType, Unit};
use std::convert::Infallible;

/// A kernel compiled ahead of time: the object file's bytes and what its header says.
#[derive(Clone, Debug)]
pub struct AotObject {
    /// The exported symbol: `NAME` and `NAME_range`.
    pub symbol: String,
    /// The relocatable object file for the host target (ELF on Linux, Mach-O on macOS).
    pub object: Vec<u8>,
    /// The extent of the outer loop that `NAME_range` cuts (1 for a kernel that cannot be
    /// split).
    pub outer: u64,
    /// The helpers the code calls, which the program must get by linking librelayout_capi;
    /// empty when the object needs nothing but the C library (`memcpy`, `memset`).
    pub helpers: Vec<Helper>,
    /// The input type: `NAME` reads exactly its bytes.
    pub src: TensorType,
    /// The output type: `NAME` writes exactly its bytes.
    pub dst: TensorType,
}

/// Whether `symbol` is a C identifier (and so a valid symbol and macro prefix).
fn is_c_identifier(symbol: &str) -> bool {
    let mut chars = symbol.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Compiles `kernel` into an object file that defines `symbol` and `symbol_range` (see the
/// module documentation). The kernel is verified first, as for the JIT.
pub fn aot_object(kernel: &LoopKernel, symbol: &str) -> Result<AotObject, JitError> {
    if !is_c_identifier(symbol) {
        return Err(JitError::Aot(format!(
            "the symbol `{symbol}` is not a C identifier (letters, digits and `_`, not starting \
             with a digit)"
        )));
    }
    verify(kernel)?;
    kernel.src.size_bytes()?;
    kernel.dst.size_bytes()?;
    let error = |e: &dyn std::fmt::Debug| JitError::Compile {
        kernel: kernel.name.clone(),
        stmt: None,
        message: format!("{e:?}"),
    };

    let builder = ObjectBuilder::new(isa::host_pic()?, symbol, default_libcall_names())
        .map_err(|e| error(&e))?;
    let mut module = ObjectModule::new(builder);
    let config = module.target_config();
    let call_conv = config.default_call_conv;

    // The kernel's function, exactly as the JIT translates it, as a local function.
    let func = translate_kernel_fn(kernel, &[], config, &mut ModuleImports::new(&mut module))?;
    let kernel_id = module
        .declare_function(
            &format!("{symbol}__kernel"),
            Linkage::Local,
            &kernel_signature(call_conv),
        )
        .map_err(|e| error(&e))?;
    define(&mut module, kernel_id, func).map_err(|e| error(&e))?;

    // The extent of the outer loop `NAME_range` cuts: that of the kernel's one unit, when it
    // has one whose iterations write disjoint bytes (a band's always do).
    let outer = match kernel.units().as_slice() {
        [Unit::Stmt(i)] if outer_iterations_disjoint(&kernel.stmts[*i]) => {
            Some(kernel.stmts[*i].loops.first().map_or(1, |l| l.extent))
        }
        [Unit::Band(band)] => Some(kernel.stmts[band.first].loops[0].extent),
        _ => None,
    };

    // NAME(src, dst): the whole schedule.
    let mut whole_sig = Signature::new(call_conv);
    whole_sig.params.extend([AbiParam::new(types::I64); 2]);
    let whole_id = module
        .declare_function(symbol, Linkage::Export, &whole_sig)
        .map_err(|e| error(&e))?;
    let name = UserFuncName::user(0, whole_id.as_u32());
    let Ok((func, ())) = build_function(name, whole_sig, config, |b, [src, dst]| {
        let kernel_fn = module.declare_func_in_func(kernel_id, b.func);
        let all = b.ins().iconst(types::I64, RUN_ALL as i64);
        let zero = b.ins().iconst(types::I64, 0);
        let max = b.ins().iconst(types::I64, u64::MAX as i64);
        b.ins().call(kernel_fn, &[src, dst, all, zero, max]);
        Ok::<_, Infallible>(())
    });
    define(&mut module, whole_id, func).map_err(|e| error(&e))?;

    // NAME_range(src, dst, start, end): the outer loop's iterations [start, min(end, OUTER)).
    let range_id = module
        .declare_function(
            &format!("{symbol}_range"),
            Linkage::Export,
            &stmt_signature(call_conv),
        )
        .map_err(|e| error(&e))?;
    let name = UserFuncName::user(0, range_id.as_u32());
    let signature = stmt_signature(call_conv);
    let Ok((func, extent)) =
        build_function(name, signature, config, |b, [src, dst, start, end]| {
            let extent = match outer {
                Some(extent) => {
                    // Entry 0, the one unit, clamps `end` to its extent itself.
                    let kernel_fn = module.declare_func_in_func(kernel_id, b.func);
                    let entry = b.ins().iconst(types::I64, 0);
                    b.ins().call(kernel_fn, &[src, dst, entry, start, end]);
                    extent
                }
                None => {
                    // The one iteration, 0, is in [start, end) when start == 0 < end.
                    let whole = module.declare_func_in_func(whole_id, b.func);
                    let zero = b.ins().icmp_imm_u(IntCC::Equal, start, 0);
                    let positive = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, end, 0);
                    let run = b.ins().band(zero, positive);
                    let call = b.create_block();
                    let exit = b.create_block();
                    b.ins().brif(run, call, &[], exit, &[]);
                    b.switch_to_block(call);
                    b.ins().call(whole, &[src, dst]);
                    b.ins().jump(exit, &[]);
                    b.switch_to_block(exit);
                    1
                }
            };
            Ok::<_, Infallible>(extent)
        });
    define(&mut module, range_id, func).map_err(|e| error(&e))?;

    // The helpers the statements import: the program gets them from librelayout_capi.
    let imported: Vec<String> = module
        .declarations()
        .get_functions()
        .filter(|(_, d)| d.linkage == Linkage::Import)
        .filter_map(|(_, d)| d.name.clone())
        .collect();
    let helpers = Helper::ALL
        .into_iter()
        .filter(|h| imported.iter().any(|n| n == h.symbol()))
        .collect();
    let object = module.finish().emit().map_err(|e| error(&e))?;
    Ok(AotObject {
        symbol: symbol.to_string(),
        object,
        outer: extent,
        helpers,
        src: kernel.src.clone(),
        dst: kernel.dst.clone(),
    })
}

/// Compiles and defines an entry point; the error is Cranelift's, as text.
fn define(module: &mut ObjectModule, id: FuncId, func: Function) -> Result<(), String> {
    let mut ctx = Context::for_function(func);
    module
        .define_function(id, &mut ctx)
        .map_err(|e| format!("{e:?}"))
}

impl AotObject {
    /// The C header that declares the object's two functions, with the sizes, the outer range
    /// and `description` (the op text) as constants, and which library, if any, the program
    /// must also link.
    pub fn header(&self, description: &str) -> String {
        let name = &self.symbol;
        let upper = name.to_ascii_uppercase();
        let guard = format!("RELAYOUT_AOT_{upper}_H");
        let c_string: String = description
            .chars()
            .flat_map(|c| match c {
                '"' => vec!['\\', '"'],
                '\\' => vec!['\\', '\\'],
                '\n' => vec!['\\', 'n'],
                c => vec![c],
            })
            .collect();
        let comment = description.replace("*/", "* /");
        let link = if self.helpers.is_empty() {
            "The object needs nothing but the C library (memcpy, memset): link it alone,\n \
             * `cc prog.c FILE.o`."
                .to_string()
        } else {
            let names: Vec<&str> = self.helpers.iter().map(|h| h.symbol()).collect();
            format!(
                "The object calls helpers of relayout ({}):\n \
                 * the program must also link librelayout_capi, which defines them.",
                names.join(", ")
            )
        };
        let src_bytes = self.src.size_bytes().unwrap_or(0);
        let dst_bytes = self.dst.size_bytes().unwrap_or(0);
        format!(
            "/*
 * {name}: {comment}
 * {src} -> {dst}, compiled ahead of time by `relayout aot` for this machine.
 *
 * {name}(src, dst) reads exactly {upper}_INPUT_BYTES bytes from src and writes exactly
 * {upper}_OUTPUT_BYTES bytes to dst (little-endian elements, row-major); the buffers must
 * not overlap. Nothing is checked at run time: the sizes are the caller's to get right.
 *
 * {name}_range(src, dst, start, end) runs the iterations [start, min(end, {upper}_OUTER))
 * of the kernel's outer loop; calls on disjoint ranges that cover 0..{upper}_OUTER, from any
 * threads, together do what {name} does.{split}
 *
 * {link}
 */
#ifndef {guard}
#define {guard}

#include <stdint.h>

#define {upper}_OP \"{c_string}\"
#define {upper}_INPUT_BYTES UINT64_C({src_bytes})
#define {upper}_OUTPUT_BYTES UINT64_C({dst_bytes})
#define {upper}_OUTER UINT64_C({outer})
#define {upper}_NEEDS_RUNTIME {needs}

#ifdef __cplusplus
extern \"C\" {{
#endif

void {name}(const void *src, void *dst);
void {name}_range(const void *src, void *dst, uint64_t start, uint64_t end);

#ifdef __cplusplus
}} /* extern \"C\" */
#endif

#endif /* {guard} */
",
            src = self.src,
            dst = self.dst,
            outer = self.outer,
            needs = u8::from(!self.helpers.is_empty()),
            split = if self.outer == 1 {
                " This kernel's\n * statements must run one after the other: its outer range is 0..1, and it cannot be split."
            } else {
                ""
            },
        )
    }
}
