//! Addresses and memory accesses shared by the run emitters.

use cranelift_codegen::ir::{types, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;

/// An address known as a base value plus a compile-time byte offset. Unrolled bodies and the
/// pieces of a run share one base and differ in the offset, which becomes the immediate of
/// the load or store.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Addr {
    pub base: Value,
    pub offset: i64,
}

impl Addr {
    pub fn new(base: Value, offset: i64) -> Addr {
        Addr { base, offset }
    }

    /// The address `delta` bytes further, or `None` on overflow.
    pub fn plus(self, delta: i64) -> Option<Addr> {
        Some(Addr {
            base: self.base,
            offset: self.offset.checked_add(delta)?,
        })
    }

    /// A base and an immediate for an access at `self + delta`. Immediates are 32-bit, so a
    /// larger offset is added to the base first (only kernels with strides beyond 2 GiB get
    /// there).
    pub fn split(self, b: &mut FunctionBuilder, delta: i64) -> (Value, i32) {
        let total = self.offset.wrapping_add(delta);
        match i32::try_from(total) {
            Ok(imm) => (self.base, imm),
            Err(_) => (b.ins().iadd_imm_s(self.base, total), 0),
        }
    }

    /// The address as one value.
    pub fn value(self, b: &mut FunctionBuilder, delta: i64) -> Value {
        let total = self.offset.wrapping_add(delta);
        if total == 0 {
            self.base
        } else {
            b.ins().iadd_imm_s(self.base, total)
        }
    }
}

/// Flags of every access the generated code makes. `notrap` holds because the kernel was
/// verified in bounds and the buffers were checked against its types; `aligned` is not set:
/// runs start at any byte.
pub(crate) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// The integer or vector type that moves `bytes` bytes in one access, for 1, 2, 4, 8 or 16.
pub(crate) fn move_type(bytes: u64) -> Option<Type> {
    match bytes {
        1 => Some(types::I8),
        2 => Some(types::I16),
        4 => Some(types::I32),
        8 => Some(types::I64),
        16 => Some(types::I8X16),
        _ => None,
    }
}

pub(crate) fn load(b: &mut FunctionBuilder, ty: Type, at: Addr, delta: i64) -> Value {
    let (base, imm) = at.split(b, delta);
    b.ins().load(ty, flags(), base, imm)
}

pub(crate) fn store(b: &mut FunctionBuilder, value: Value, at: Addr, delta: i64) {
    let (base, imm) = at.split(b, delta);
    b.ins().store(flags(), value, base, imm);
}
