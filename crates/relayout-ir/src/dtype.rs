//! Element types. Data movement depends only on an element's size; `accumulate` (Col2Im) also
//! needs its arithmetic, which lives here so that the interpreter and the reference agree on it.

use std::fmt;

/// The 15 element types of the conformance format.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// float32.
    F32,
    /// float64.
    F64,
    /// float16 (IEEE half precision).
    F16,
    /// bfloat16.
    BF16,
    /// int8.
    I8,
    /// int16.
    I16,
    /// int32.
    I32,
    /// int64.
    I64,
    /// uint8.
    U8,
    /// uint16.
    U16,
    /// uint32.
    U32,
    /// uint64.
    U64,
    /// bool, one byte holding 0 or 1.
    Bool,
    /// complex64: two float32, real part first.
    C64,
    /// complex128: two float64, real part first.
    C128,
}

impl DType {
    /// Every element type, in the order of the conformance format's list.
    pub const ALL: [DType; 15] = [
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
        DType::C64,
        DType::C128,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> u64 {
        match self {
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// The name used by the conformance format, numpy and TensorFlow (`float32`, `complex64`).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::Bool => "bool",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// The MLIR spelling used inside `tensor<...>` in the printed IR (`f32`, `ui8`, `i1`,
    /// `complex<f32>`).
    pub fn mlir_name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "ui8",
            DType::U16 => "ui16",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::Bool => "i1",
            DType::C64 => "complex<f32>",
            DType::C128 => "complex<f64>",
        }
    }

    /// Parses either spelling (`float32` or `f32`).
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == name || d.mlir_name() == name)
    }

    /// f32, f64, f16 or bf16.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16)
    }

    /// A signed or unsigned integer (not bool): additions wrap, and `0 + x` is `x`.
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I8
                | DType::I16
                | DType::I32
                | DType::I64
                | DType::U8
                | DType::U16
                | DType::U32
                | DType::U64
        )
    }

    /// complex64 or complex128.
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// `acc += x` for one element of this type, on little-endian bytes. Integers wrap, floats
    /// round once per addition in their own precision (f16 and bf16 too: the sum of two is
    /// computed exactly in f32 and rounded once, which is what a native f16 add does, with
    /// NaNs as [`half_sum`] says), complex numbers add part by part, and bool is logical or
    /// (numpy's `+` on bool). An f32 or f64 sum with a NaN operand is the first NaN operand,
    /// quieted: what x86's additions return for `acc + x`, and so the JIT's.
    ///
    /// Both slices must be exactly `self.size()` bytes long.
    pub fn add_assign(self, acc: &mut [u8], x: &[u8]) {
        fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
            b.try_into().expect("element slice has the element's size")
        }
        macro_rules! int {
            ($t:ty) => {{
                let v = <$t>::from_le_bytes(arr(acc)).wrapping_add(<$t>::from_le_bytes(arr(x)));
                acc.copy_from_slice(&v.to_le_bytes());
            }};
        }
        // The NaN is chosen here rather than left to `+`: which of two NaN operands an
        // addition returns is open in Rust, and the optimiser swaps an addition's operands
        // freely (it did for complex64 once the crates were optimised as one program).
        macro_rules! float {
            ($t:ty, $quiet:expr) => {{
                let (a, b) = (<$t>::from_le_bytes(arr(acc)), <$t>::from_le_bytes(arr(x)));
                let v = if a.is_nan() {
                    <$t>::from_bits(a.to_bits() | $quiet)
                } else if b.is_nan() {
                    <$t>::from_bits(b.to_bits() | $quiet)
                } else {
                    a + b
                };
                acc.copy_from_slice(&v.to_le_bytes());
            }};
        }
        match self {
            DType::I8 | DType::U8 => acc[0] = acc[0].wrapping_add(x[0]),
            DType::I16 | DType::U16 => int!(u16),
            DType::I32 | DType::U32 => int!(u32),
            DType::I64 | DType::U64 => int!(u64),
            DType::Bool => acc[0] = u8::from(acc[0] != 0 || x[0] != 0),
            DType::F32 => float!(f32, 0x0040_0000),
            DType::F64 => float!(f64, 0x0008_0000_0000_0000),
            DType::F16 => {
                let a = half::f16::from_le_bytes(arr(acc)).to_f32();
                let b = half::f16::from_le_bytes(arr(x)).to_f32();
                acc.copy_from_slice(&half::f16::from_f32(half_sum(a, b)).to_le_bytes());
            }
            DType::BF16 => {
                let a = half::bf16::from_le_bytes(arr(acc)).to_f32();
                let b = half::bf16::from_le_bytes(arr(x)).to_f32();
                acc.copy_from_slice(&half::bf16::from_f32(half_sum(a, b)).to_le_bytes());
            }
            DType::C64 => {
                DType::F32.add_assign(&mut acc[..4], &x[..4]);
                DType::F32.add_assign(&mut acc[4..], &x[4..]);
            }
            DType::C128 => {
                DType::F64.add_assign(&mut acc[..8], &x[..8]);
                DType::F64.add_assign(&mut acc[8..], &x[8..]);
            }
        }
    }
}

/// `a + b` for the sum of two f16 or bf16 values widened to f32 (exact: the caller rounds it
/// once to the element type), with a NaN result defined: when `a` is a NaN, `a`, else when
/// `b` is one, `b` (x86's rule for its additions, which return their first operand when it is
/// a NaN). An f32 addition leaves open which of two NaN operands it returns, and compilers
/// swap the operands of an addition freely, so without this the interpreter, the JIT's
/// helpers and the vectorised sums could disagree on the bits of a NaN (and, where runs
/// overlap at odd offsets, on the bytes around it).
#[inline]
pub fn half_sum(a: f32, b: f32) -> f32 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else {
        a + b
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

impl fmt::Debug for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.mlir_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(DType::from_name(d.mlir_name()), Some(d));
        }
        assert_eq!(DType::from_name("float128"), None);
    }

    #[test]
    fn integer_accumulate_wraps() {
        let mut acc = 250u8.to_le_bytes();
        DType::U8.add_assign(&mut acc, &10u8.to_le_bytes());
        assert_eq!(acc, [4]);
        let mut acc = i32::MAX.to_le_bytes();
        DType::I32.add_assign(&mut acc, &1i32.to_le_bytes());
        assert_eq!(i32::from_le_bytes(acc), i32::MIN);
    }

    #[test]
    fn half_accumulate_rounds_once() {
        let mut acc = half::f16::from_f32(1.0).to_le_bytes();
        DType::F16.add_assign(&mut acc, &half::f16::from_f32(0.5).to_le_bytes());
        assert_eq!(half::f16::from_le_bytes(acc).to_f32(), 1.5);
    }
}
