//! One element's value, as the bits a `fill` writes: Pad's `constant_value`, or zero.
//!
//! A [`Scalar`] is dtype-free bits (little-endian, in the low `dtype.size()` bytes); the
//! statement's tensor gives the dtype. The text form is the one the IR printer writes after
//! `fill ... =`: `0` for all-zero bits in every dtype, then what an MLIR user would write for
//! the dtype: `-46`, `true`, `-0.125`, `-0.0`, `inf`, `(1.5, -2.0)` for complex; a NaN is
//! written as its hex bits (`0x7fc00000`) so that its payload survives the round trip.

use crate::DType;
use half::{bf16, f16};

/// The bits of one element (little-endian in the low bytes; at most 16 bytes, complex128).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub struct Scalar(pub u128);

impl Scalar {
    /// All-zero bits: `+0.0`, `0`, `false`, `0+0i` in every dtype.
    pub const ZERO: Scalar = Scalar(0);

    /// Whether every bit is zero.
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The value of one element given as its little-endian bytes (at most 16).
    pub fn from_le_bytes(bytes: &[u8]) -> Scalar {
        let mut b = [0u8; 16];
        let n = bytes.len().min(16);
        b[..n].copy_from_slice(&bytes[..n]);
        Scalar(u128::from_le_bytes(b))
    }

    /// The element's bytes in `dtype` (its low `dtype.size()` bytes).
    pub fn to_le_bytes(self, dtype: DType) -> Vec<u8> {
        self.0.to_le_bytes()[..dtype.size() as usize].to_vec()
    }

    /// The text form of the value in `dtype` (see the module documentation).
    pub fn display(self, dtype: DType) -> String {
        if self.is_zero() {
            return "0".to_string();
        }
        let bits = self.0;
        match dtype {
            DType::Bool => if bits & 1 == 1 { "true" } else { "false" }.to_string(),
            DType::I8 => (bits as u8 as i8).to_string(),
            DType::I16 => (bits as u16 as i16).to_string(),
            DType::I32 => (bits as u32 as i32).to_string(),
            DType::I64 => (bits as u64 as i64).to_string(),
            DType::U8 => (bits as u8).to_string(),
            DType::U16 => (bits as u16).to_string(),
            DType::U32 => (bits as u32).to_string(),
            DType::U64 => (bits as u64).to_string(),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => float_text(dtype, bits),
            DType::C64 => format!(
                "({}, {})",
                float_text(DType::F32, bits & 0xffff_ffff),
                float_text(DType::F32, (bits >> 32) & 0xffff_ffff)
            ),
            DType::C128 => format!(
                "({}, {})",
                float_text(DType::F64, bits & u128::from(u64::MAX)),
                float_text(DType::F64, bits >> 64)
            ),
        }
    }

    /// Parses one value of `dtype` as [`Scalar::display`] writes it; also accepts hex bits
    /// (`0x3c00`) for every dtype. `None` when the text is not a value of the dtype or not
    /// exactly representable in it.
    pub fn parse(dtype: DType, text: &str) -> Option<Scalar> {
        let text = text.trim();
        if let Some(rest) = text.strip_prefix('(') {
            let inner = rest.strip_suffix(')')?;
            let (re, im) = inner.split_once(',')?;
            let part = match dtype {
                DType::C64 => DType::F32,
                DType::C128 => DType::F64,
                _ => return None,
            };
            let (re, im) = (parse_float(part, re.trim())?, parse_float(part, im.trim())?);
            let shift = part.size() * 8;
            return Some(Scalar(re | (im << shift)));
        }
        if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            let bits = u128::from_str_radix(hex, 16).ok()?;
            let size = dtype.size() * 8;
            return (size >= 128 || bits >> size == 0).then_some(Scalar(bits));
        }
        if text == "0" || text == "-0" && !dtype.is_float() {
            return Some(Scalar::ZERO);
        }
        let int = |lo: i128, hi: i128, size: u64| {
            let v: i128 = text.parse().ok()?;
            let mask = if size >= 16 {
                u128::MAX
            } else {
                (1u128 << (size * 8)) - 1
            };
            (lo..=hi).contains(&v).then_some(Scalar(v as u128 & mask))
        };
        match dtype {
            DType::Bool => match text {
                "true" => Some(Scalar(1)),
                "false" => Some(Scalar::ZERO),
                _ => None,
            },
            DType::I8 => int(i8::MIN.into(), i8::MAX.into(), 1),
            DType::I16 => int(i16::MIN.into(), i16::MAX.into(), 2),
            DType::I32 => int(i32::MIN.into(), i32::MAX.into(), 4),
            DType::I64 => int(i64::MIN.into(), i64::MAX.into(), 8),
            DType::U8 => int(0, u8::MAX.into(), 1),
            DType::U16 => int(0, u16::MAX.into(), 2),
            DType::U32 => int(0, u32::MAX.into(), 4),
            DType::U64 => int(0, u64::MAX.into(), 8),
            DType::F16 | DType::BF16 | DType::F32 | DType::F64 => {
                parse_float(dtype, text).map(Scalar)
            }
            DType::C64 | DType::C128 => None,
        }
    }

    /// The value of a float `x` in a float dtype, or `None` when `x` is not exactly
    /// representable there (NaN is always representable: the dtype's quiet NaN).
    pub fn from_f64(dtype: DType, x: f64) -> Option<Scalar> {
        let bits = match dtype {
            DType::F64 => u128::from(x.to_bits()),
            DType::F32 => {
                let v = x as f32;
                (f64::from(v) == x || x.is_nan()).then_some(u128::from(v.to_bits()))?
            }
            DType::F16 => {
                let v = f16::from_f64(x);
                (v.to_f64() == x || x.is_nan()).then_some(u128::from(v.to_bits()))?
            }
            DType::BF16 => {
                let v = bf16::from_f64(x);
                (v.to_f64() == x || x.is_nan()).then_some(u128::from(v.to_bits()))?
            }
            _ => return None,
        };
        Some(Scalar(bits))
    }
}

/// A float of `dtype` (f16, bf16, f32, f64) from its bits: the shortest decimal that reads
/// back to it, `inf` / `-inf`, or hex bits for a NaN.
fn float_text(dtype: DType, bits: u128) -> String {
    let x = match dtype {
        DType::F16 => f16::from_bits(bits as u16).to_f64(),
        DType::BF16 => bf16::from_bits(bits as u16).to_f64(),
        DType::F32 => f64::from(f32::from_bits(bits as u32)),
        _ => f64::from_bits(bits as u64),
    };
    if x.is_nan() {
        return format!("0x{bits:x}");
    }
    if dtype != DType::F64 {
        // Every f16, bf16 and f32 value is an f32. Its shortest f32 form is the most readable,
        // but the parser takes a decimal only when it is the value exactly (a fill of 0.1 into
        // f32 is an error, not a rounding), and the shortest form often is not: f32 2^31 is
        // `2147483600.0`. Then the f64 form is printed, which reads back to this same f64,
        // and so to the value exactly (`2147483648.0`, `0.10000000149011612`).
        let short = format!("{:?}", x as f32);
        if short.parse::<f64>().is_ok_and(|y| y == x) {
            return short;
        }
    }
    format!("{x:?}")
}

/// One float of `dtype` from decimal text, `inf`, `-inf`, `nan` or hex bits.
fn parse_float(dtype: DType, text: &str) -> Option<u128> {
    if let Some(hex) = text.strip_prefix("0x") {
        let bits = u128::from_str_radix(hex, 16).ok()?;
        return (bits >> (dtype.size() * 8) == 0).then_some(bits);
    }
    let x: f64 = text.parse().ok()?;
    Scalar::from_f64(dtype, x).map(|s| s.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_through_its_text() {
        let cases: &[(DType, &str)] = &[
            (DType::F32, "-0.125"),
            (DType::F32, "-0.0"),
            (DType::F32, "inf"),
            (DType::F32, "-inf"),
            (DType::F32, "0x7fc00001"),
            (DType::F16, "65504.0"),
            (DType::BF16, "-2.0"),
            (DType::F64, "1e-300"),
            (DType::I64, "-9223372036854775808"),
            (DType::U64, "18446744073709551615"),
            (DType::I8, "-46"),
            (DType::U16, "65535"),
            (DType::Bool, "true"),
            (DType::C64, "(1.5, -2.0)"),
            (DType::C128, "(0.0, 1e100)"),
            (DType::I32, "0"),
        ];
        for &(dtype, text) in cases {
            let v = Scalar::parse(dtype, text).unwrap_or_else(|| panic!("{dtype} {text}"));
            assert_eq!(v.display(dtype), text, "{dtype}");
            assert_eq!(Scalar::parse(dtype, &v.display(dtype)), Some(v));
        }
    }

    /// Every value prints as text that reads back to its bits, also where the shortest f32
    /// form is not the value exactly (found by fuzzing: f32 2^31 printed as `2147483600.0`,
    /// which the parser refused).
    #[test]
    fn every_float_value_reads_back_from_its_text() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let special = [
            0x4f00_0000u128,
            0x3dcc_cccd,
            0x7f7f_ffff,
            0x0000_0001,
            0x8080_0000,
        ];
        for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
            let mask = if dtype.size() == 8 {
                u128::from(u64::MAX)
            } else {
                (1u128 << (dtype.size() * 8)) - 1
            };
            let randoms = (0..20_000).map(|_| u128::from(next()) & mask);
            for bits in special.iter().map(|b| b & mask).chain(randoms) {
                let v = Scalar(bits);
                let text = v.display(dtype);
                let back = Scalar::parse(dtype, &text)
                    .unwrap_or_else(|| panic!("{dtype} {bits:#x} printed as `{text}`, refused"));
                assert_eq!(back, v, "{dtype} {bits:#x} printed as `{text}`");
            }
        }
        assert_eq!(Scalar(0x4f00_0000).display(DType::F32), "2147483648.0");
        assert_eq!(Scalar(0x3f00_0000).display(DType::F32), "0.5");
    }

    #[test]
    fn values_outside_the_dtype_are_refused() {
        assert_eq!(Scalar::parse(DType::I8, "128"), None);
        assert_eq!(Scalar::parse(DType::U8, "-1"), None);
        assert_eq!(Scalar::parse(DType::F16, "0.1"), None);
        assert_eq!(Scalar::parse(DType::F32, "0x1ffffffff"), None);
        assert_eq!(Scalar::parse(DType::Bool, "2"), None);
        assert_eq!(Scalar::parse(DType::I32, "1.5"), None);
    }

    #[test]
    fn negative_zero_is_not_zero() {
        let v = Scalar::parse(DType::F64, "-0.0").unwrap();
        assert!(!v.is_zero());
        assert_eq!(v.to_le_bytes(DType::F64), (-0.0f64).to_le_bytes());
    }
}
