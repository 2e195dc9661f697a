//! Tensors as text, nested like numpy prints them: `[[1, 2], [3, 4]]`.

use half::{bf16, f16};
use relayout_ir::{DType, TensorType};

/// One element of `dtype` from its little-endian bytes, as text.
pub fn format_element(dtype: DType, b: &[u8]) -> String {
    fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&b[..N]);
        a
    }
    match dtype {
        DType::F32 => format!("{:?}", f32::from_le_bytes(arr(b))),
        DType::F64 => format!("{:?}", f64::from_le_bytes(arr(b))),
        DType::F16 => format!("{:?}", f16::from_le_bytes(arr(b)).to_f32()),
        DType::BF16 => format!("{:?}", bf16::from_le_bytes(arr(b)).to_f32()),
        DType::I8 => (b[0] as i8).to_string(),
        DType::U8 => b[0].to_string(),
        DType::I16 => i16::from_le_bytes(arr(b)).to_string(),
        DType::U16 => u16::from_le_bytes(arr(b)).to_string(),
        DType::I32 => i32::from_le_bytes(arr(b)).to_string(),
        DType::U32 => u32::from_le_bytes(arr(b)).to_string(),
        DType::I64 => i64::from_le_bytes(arr(b)).to_string(),
        DType::U64 => u64::from_le_bytes(arr(b)).to_string(),
        DType::Bool => (b[0] != 0).to_string(),
        DType::C64 => format!(
            "({:?}, {:?})",
            f32::from_le_bytes(arr(b)),
            f32::from_le_bytes(arr(&b[4..]))
        ),
        DType::C128 => format!(
            "({:?}, {:?})",
            f64::from_le_bytes(arr(b)),
            f64::from_le_bytes(arr(&b[8..]))
        ),
    }
}

/// The whole tensor as nested lists, one innermost row per line. `bytes` must hold exactly the
/// tensor's bytes; at most `limit` elements are shown, then `...`.
pub fn format_tensor(ty: &TensorType, bytes: &[u8], limit: usize) -> String {
    let esize = ty.dtype.size() as usize;
    let elements: Vec<String> = bytes
        .chunks_exact(esize)
        .take(limit)
        .map(|e| format_element(ty.dtype, e))
        .collect();
    let total = bytes.len() / esize.max(1);
    if ty.shape.is_empty() {
        return elements.first().cloned().unwrap_or_default();
    }
    let mut out = String::new();
    // The bracket of dim k spans `prod(shape[k..])` elements: it opens at multiples of that.
    let blocks: Vec<u64> = ty
        .strides()
        .iter()
        .zip(&ty.shape)
        .map(|(s, n)| s.saturating_mul(*n))
        .collect();
    for (i, e) in elements.iter().enumerate() {
        let opens = blocks
            .iter()
            .filter(|&&b| b > 0 && i as u64 % b == 0)
            .count();
        if i > 0 {
            if opens > 1 {
                out.push_str(",\n");
                out.push_str(&" ".repeat(ty.shape.len() - opens));
            } else {
                out.push_str(", ");
            }
        }
        out.push_str(&"[".repeat(opens));
        out.push_str(e);
        let closes = blocks
            .iter()
            .filter(|&&b| b > 0 && (i as u64 + 1) % b == 0)
            .count();
        out.push_str(&"]".repeat(closes));
    }
    if total > elements.len() {
        out.push_str(&format!(", ... ({total} elements)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_like_numpy() {
        let ty = TensorType::new(DType::U8, [2, 1, 2]);
        assert_eq!(
            format_tensor(&ty, &[1, 2, 3, 4], 100),
            "[[[1, 2]],\n [[3, 4]]]"
        );
        let i16s: Vec<u8> = [-1i16, 7].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            format_tensor(&TensorType::new(DType::I16, [2]), &i16s, 100),
            "[-1, 7]"
        );
    }
}
