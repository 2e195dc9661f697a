//! `TensorType`: an element type and a row-major shape, with overflow-checked sizes.

use crate::DType;
use std::fmt;

/// A dense row-major tensor type, printed as MLIR prints it: `tensor<1x4x4x1xf32>`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The element type.
    pub dtype: DType,
    /// The extent of each dim, outermost first.
    pub shape: Vec<u64>,
}

/// A shape whose element count or byte size does not fit in the index type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tensor {ty} is too large: its {what} overflows 2^63 - 1")]
pub struct SizeOverflow {
    /// The tensor type, as printed in the IR.
    pub ty: String,
    /// What overflows: `element count` or `byte size`.
    pub what: &'static str,
}

/// Sizes are kept below `i64::MAX` so that every byte offset of a valid tensor fits in the
/// signed index arithmetic of the IR and of the generated code.
const MAX_SIZE: u64 = i64::MAX as u64;

impl TensorType {
    /// A tensor of `dtype` elements with this shape; no size is checked until asked for.
    pub fn new(dtype: DType, shape: impl Into<Vec<u64>>) -> TensorType {
        TensorType {
            dtype,
            shape: shape.into(),
        }
    }

    /// The number of dims.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements, or an error when it does not fit below 2^63. A shape with a zero
    /// dim has no elements whatever its other dims, in any order of the dims.
    pub fn num_elements(&self) -> Result<u64, SizeOverflow> {
        if self.shape.contains(&0) {
            return Ok(0);
        }
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| {
                acc.checked_mul(d).filter(|&n| n <= MAX_SIZE)
            })
            .ok_or_else(|| SizeOverflow {
                ty: self.to_string(),
                what: "element count",
            })
    }

    /// Size in bytes, or an error when it does not fit below 2^63.
    pub fn size_bytes(&self) -> Result<u64, SizeOverflow> {
        self.num_elements()?
            .checked_mul(self.dtype.size())
            .filter(|&n| n <= MAX_SIZE)
            .ok_or_else(|| SizeOverflow {
                ty: self.to_string(),
                what: "byte size",
            })
    }

    /// Row-major strides in elements. Only meaningful for a type whose size did not overflow.
    pub fn strides(&self) -> Vec<u64> {
        let mut strides = vec![1u64; self.shape.len()];
        for i in (0..self.shape.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1].saturating_mul(self.shape[i + 1]);
        }
        strides
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.dtype)
    }
}

impl fmt::Debug for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_like_mlir() {
        assert_eq!(
            TensorType::new(DType::F32, [1, 4, 4, 1]).to_string(),
            "tensor<1x4x4x1xf32>"
        );
        assert_eq!(
            TensorType::new(DType::C64, [2]).to_string(),
            "tensor<2xcomplex<f32>>"
        );
        assert_eq!(TensorType::new(DType::U8, []).to_string(), "tensor<ui8>");
    }

    #[test]
    fn sizes_and_overflow() {
        let t = TensorType::new(DType::C128, [2, 3]);
        assert_eq!(t.num_elements(), Ok(6));
        assert_eq!(t.size_bytes(), Ok(96));
        assert_eq!(t.strides(), vec![3, 1]);
        let big = TensorType::new(DType::F32, [1 << 40, 1 << 22]);
        assert!(big.num_elements().is_ok());
        assert!(big.size_bytes().is_err());
        assert!(TensorType::new(DType::U8, [u64::MAX, 2])
            .num_elements()
            .is_err());
    }
}
