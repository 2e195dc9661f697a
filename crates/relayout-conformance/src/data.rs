//! Element values: JSON values of the format to little-endian bytes, and bytes back to text
//! for messages.
//!
//! Floats are JSON numbers or the strings `"nan"`, `"inf"`, `"-inf"`; every number is exactly
//! representable in its dtype, so it is read as `f64` (exactly, see Cargo.toml) and converted
//! once. Integers are read as integers, never through `f64`, so the whole int64 and uint64
//! ranges survive. Complex values are `[re, im]` pairs of floats.

use relayout_ir::DType;
use serde_json::Value;

/// A float of the format: a number, or one of the strings `nan`, `inf`, `-inf`.
fn float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Number(n) => n.as_f64().ok_or_else(|| format!("{n} is not a float")),
        Value::String(s) => match s.as_str() {
            "nan" => Ok(f64::NAN),
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            _ => Err(format!(
                "\"{s}\" is not a float (only \"nan\", \"inf\", \"-inf\")"
            )),
        },
        other => Err(format!("{other} is not a float")),
    }
}

/// An integer of the format, as `i128` so that both the int64 and the uint64 range fit.
fn integer(v: &Value) -> Result<i128, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .ok_or_else(|| format!("{n} is not an integer")),
        other => Err(format!("{other} is not an integer")),
    }
}

fn int_bytes<T>(v: &Value, out: &mut Vec<u8>, le: impl Fn(T) -> Vec<u8>) -> Result<(), String>
where
    T: TryFrom<i128>,
{
    let i = integer(v)?;
    let t = T::try_from(i).map_err(|_| format!("{i} is out of range"))?;
    out.extend(le(t));
    Ok(())
}

/// The pair `[re, im]` of a complex value.
fn complex(v: &Value) -> Result<(f64, f64), String> {
    match v.as_array().map(Vec::as_slice) {
        Some([re, im]) => Ok((float(re)?, float(im)?)),
        _ => Err(format!("{v} is not a complex [re, im] pair")),
    }
}

/// Appends the little-endian bytes of one element.
fn encode_one(dtype: DType, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    match dtype {
        DType::F32 => out.extend((float(v)? as f32).to_le_bytes()),
        DType::F64 => out.extend(float(v)?.to_le_bytes()),
        DType::F16 => out.extend(half::f16::from_f64(float(v)?).to_le_bytes()),
        DType::BF16 => out.extend(half::bf16::from_f64(float(v)?).to_le_bytes()),
        DType::I8 => int_bytes(v, out, |t: i8| t.to_le_bytes().to_vec())?,
        DType::I16 => int_bytes(v, out, |t: i16| t.to_le_bytes().to_vec())?,
        DType::I32 => int_bytes(v, out, |t: i32| t.to_le_bytes().to_vec())?,
        DType::I64 => int_bytes(v, out, |t: i64| t.to_le_bytes().to_vec())?,
        DType::U8 => int_bytes(v, out, |t: u8| t.to_le_bytes().to_vec())?,
        DType::U16 => int_bytes(v, out, |t: u16| t.to_le_bytes().to_vec())?,
        DType::U32 => int_bytes(v, out, |t: u32| t.to_le_bytes().to_vec())?,
        DType::U64 => int_bytes(v, out, |t: u64| t.to_le_bytes().to_vec())?,
        DType::Bool => match v {
            Value::Bool(b) => out.push(u8::from(*b)),
            other => return Err(format!("{other} is not a bool")),
        },
        DType::C64 => {
            let (re, im) = complex(v)?;
            out.extend((re as f32).to_le_bytes());
            out.extend((im as f32).to_le_bytes());
        }
        DType::C128 => {
            let (re, im) = complex(v)?;
            out.extend(re.to_le_bytes());
            out.extend(im.to_le_bytes());
        }
    }
    Ok(())
}

/// The little-endian bytes of flat `data` in `dtype`, or a message naming the first element
/// that is not a value of the dtype.
pub fn encode(dtype: DType, data: &[Value]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(data.len().saturating_mul(dtype.size() as usize));
    for (i, v) in data.iter().enumerate() {
        encode_one(dtype, v, &mut out)
            .map_err(|e| format!("element {i}: {e} (dtype {})", dtype.name()))?;
    }
    Ok(out)
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    let n = b.len().min(N);
    a[..n].copy_from_slice(&b[..n]);
    a
}

/// The float parts of one element of a float or complex dtype, widened exactly to `f64`
/// (one part, or two for complex), or `None` for the other dtypes.
pub(crate) fn float_parts(dtype: DType, b: &[u8]) -> Option<Vec<f64>> {
    Some(match dtype {
        DType::F32 => vec![f64::from(f32::from_le_bytes(arr(b)))],
        DType::F64 => vec![f64::from_le_bytes(arr(b))],
        DType::F16 => vec![half::f16::from_le_bytes(arr(b)).to_f64()],
        DType::BF16 => vec![half::bf16::from_le_bytes(arr(b)).to_f64()],
        DType::C64 => vec![
            f64::from(f32::from_le_bytes(arr(b))),
            f64::from(f32::from_le_bytes(arr(b.get(4..).unwrap_or(&[])))),
        ],
        DType::C128 => vec![
            f64::from_le_bytes(arr(b)),
            f64::from_le_bytes(arr(b.get(8..).unwrap_or(&[]))),
        ],
        _ => return None,
    })
}

/// One element printed in its dtype, the way the format writes it (`1.5`, `-0.0`, `nan`,
/// `[1.0, -2.0]`, `true`, `18446744073709551615`). `b` is the element's bytes.
pub fn element_to_string(dtype: DType, b: &[u8]) -> String {
    fn f(x: f64) -> String {
        if x.is_nan() {
            "nan".into()
        } else if x.is_infinite() {
            if x > 0.0 { "inf" } else { "-inf" }.into()
        } else {
            format!("{x:?}")
        }
    }
    fn f32s(x: f64) -> String {
        // Print single-precision parts with the shortest text that round-trips in f32.
        if x.is_finite() {
            format!("{:?}", x as f32)
        } else {
            f(x)
        }
    }
    match dtype {
        DType::F64 => f(f64::from_le_bytes(arr(b))),
        DType::F32 | DType::F16 | DType::BF16 => {
            float_parts(dtype, b).map_or_else(String::new, |p| f32s(p[0]))
        }
        DType::C64 | DType::C128 => {
            let p = float_parts(dtype, b).unwrap_or_default();
            let show = if dtype == DType::C64 { f32s } else { f };
            let part = |i: usize| p.get(i).copied().map_or_else(String::new, show);
            format!("[{}, {}]", part(0), part(1))
        }
        DType::I8 => i8::from_le_bytes(arr(b)).to_string(),
        DType::I16 => i16::from_le_bytes(arr(b)).to_string(),
        DType::I32 => i32::from_le_bytes(arr(b)).to_string(),
        DType::I64 => i64::from_le_bytes(arr(b)).to_string(),
        DType::U8 => u8::from_le_bytes(arr(b)).to_string(),
        DType::U16 => u16::from_le_bytes(arr(b)).to_string(),
        DType::U32 => u32::from_le_bytes(arr(b)).to_string(),
        DType::U64 => u64::from_le_bytes(arr(b)).to_string(),
        DType::Bool => match b.first() {
            Some(0) => "false".into(),
            Some(1) => "true".into(),
            other => format!("bool byte {other:?}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enc(dtype: DType, v: Value) -> Result<Vec<u8>, String> {
        encode(dtype, v.as_array().map(Vec::as_slice).unwrap_or(&[]))
    }

    #[test]
    fn full_range_integers_are_exact() {
        let b = enc(DType::I64, json!([i64::MIN, i64::MAX, -1])).unwrap();
        assert_eq!(&b[..8], &i64::MIN.to_le_bytes());
        assert_eq!(&b[8..16], &i64::MAX.to_le_bytes());
        let b = enc(DType::U64, json!([u64::MAX, 9007199254740993u64])).unwrap();
        assert_eq!(&b[..8], &u64::MAX.to_le_bytes());
        assert_eq!(&b[8..], &9007199254740993u64.to_le_bytes());
        assert!(enc(DType::U8, json!([256])).is_err());
        assert!(enc(DType::I8, json!([-129])).is_err());
        assert!(enc(DType::U64, json!([-1])).is_err());
        assert!(enc(DType::I32, json!([1.5])).is_err());
    }

    #[test]
    fn floats_and_specials() {
        let b = enc(
            DType::F32,
            json!([0.1375126987695694, -0.0, "nan", "inf", "-inf"]),
        )
        .unwrap();
        let v: Vec<f32> = b.chunks(4).map(|c| f32::from_le_bytes(arr(c))).collect();
        assert_eq!(v[0], 0.1375126987695694f64 as f32);
        assert_eq!(v[1].to_bits(), (-0.0f32).to_bits());
        assert!(v[2].is_nan());
        assert_eq!(v[3], f32::INFINITY);
        assert_eq!(v[4], f32::NEG_INFINITY);
        assert!(enc(DType::F64, json!(["NaN"])).is_err());
        // The largest f16, and its smallest subnormal 2^-24.
        let h = enc(DType::F16, json!([65504.0, 2f64.powi(-24)])).unwrap();
        assert_eq!(&h[..2], &half::f16::MAX.to_le_bytes());
        assert_eq!(&h[2..], &half::f16::from_bits(1).to_le_bytes());
        assert_eq!(element_to_string(DType::F16, &h[2..]), "5.9604645e-8");
        let bf = enc(DType::BF16, json!([-3.140625])).unwrap();
        assert_eq!(half::bf16::from_le_bytes(arr(&bf)).to_f32(), -3.140625);
    }

    #[test]
    fn complex_bool_and_printing() {
        let c = enc(DType::C64, json!([["inf", -0.0], [1.5, 2.0]])).unwrap();
        assert_eq!(element_to_string(DType::C64, &c[..8]), "[inf, -0.0]");
        assert_eq!(element_to_string(DType::C64, &c[8..]), "[1.5, 2.0]");
        assert!(enc(DType::C128, json!([[1.0]])).is_err());
        assert!(enc(DType::C128, json!([1.0])).is_err());
        let b = enc(DType::Bool, json!([true, false])).unwrap();
        assert_eq!(b, [1, 0]);
        assert!(enc(DType::Bool, json!([1])).is_err());
        assert_eq!(
            element_to_string(DType::U64, &u64::MAX.to_le_bytes()),
            "18446744073709551615"
        );
        assert_eq!(
            element_to_string(DType::F64, &f64::NAN.to_le_bytes()),
            "nan"
        );
    }
}
