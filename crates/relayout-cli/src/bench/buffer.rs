//! Page-aligned benchmark buffers filled with a deterministic pattern.
//!
//! Why aligned: glibc's memcpy is several times slower for some sizes when the destination is
//! misaligned relative to the source, and `Vec<u8>` promises only 1-byte alignment, so the
//! reference would depend on where the allocator happened to put the buffers. A page boundary
//! also satisfies any alignment the kernels' vector code could prefer.
//!
//! Why a pattern and not zeros: freshly mapped zero pages may all be backed by the one shared
//! zero page until written, so reading them is unrealistically cheap; writing every byte
//! before timing also takes the page faults out of the measured runs.

use relayout::ir::DType;

const ALIGN: usize = 4096;

/// `len` bytes starting on a page boundary: a slice of a larger `Vec`, so no `unsafe` is
/// needed (the spare page costs nothing next to the buffers benchmarks use).
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    /// Allocates `len` bytes filled with the pattern of `dtype` (so every page is written).
    pub fn with_pattern(len: usize, dtype: DType, seed: u64) -> Result<AlignedBuf, String> {
        let mut buf = AlignedBuf::new(len)?;
        fill_pattern(buf.as_mut_slice(), dtype, seed);
        Ok(buf)
    }

    fn new(len: usize) -> Result<AlignedBuf, String> {
        let total = len
            .checked_add(ALIGN)
            .ok_or_else(|| format!("a buffer of {len} bytes is too large"))?;
        let mut storage = Vec::new();
        storage
            .try_reserve_exact(total)
            .map_err(|_| format!("cannot allocate {len} bytes"))?;
        // Large zeroed vectors come straight from fresh pages, so this costs little.
        storage.resize(total, 0);
        let start = storage.as_ptr().align_offset(ALIGN);
        if start > ALIGN {
            return Err(format!("cannot align a buffer of {len} bytes to {ALIGN}"));
        }
        Ok(AlignedBuf {
            storage,
            start,
            len,
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Writes a deterministic, nowhere-zero pattern of valid elements of `dtype`. Floats get small
/// normal values (1.0 <= x < 2.0) rather than arbitrary bits: Col2Im adds elements, and
/// subnormals or NaNs could make the additions slower than real data would.
fn fill_pattern(bytes: &mut [u8], dtype: DType, seed: u64) {
    let (unit, element): (usize, fn(u64) -> u64) = match dtype {
        DType::F32 | DType::C64 => (4, |i| {
            u64::from((1.0f32 + (i % 4096) as f32 / 4096.0).to_bits())
        }),
        DType::F64 | DType::C128 => (8, |i| (1.0f64 + (i % 4096) as f64 / 4096.0).to_bits()),
        DType::F16 => (2, |i| 0x3C00 | (i % 1024)),
        DType::BF16 => (2, |i| 0x3F80 | (i % 128)),
        DType::Bool => (1, |i| i % 2),
        _ => (1, |i| (i.wrapping_mul(0x9E37_79B9) >> 7) | 1),
    };
    for (i, chunk) in bytes.chunks_mut(unit).enumerate() {
        let bits = element(i as u64 + seed).to_le_bytes();
        let n = chunk.len();
        chunk.copy_from_slice(&bits[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_and_filled() {
        let buf = AlignedBuf::with_pattern(10_000, DType::F32, 0).unwrap();
        assert_eq!(buf.as_slice().as_ptr() as usize % ALIGN, 0);
        let first = f32::from_le_bytes(buf.as_slice()[..4].try_into().unwrap());
        assert_eq!(first, 1.0);
        assert!(buf.as_slice().chunks(4).all(|c| c.iter().any(|&b| b != 0)));
    }

    #[test]
    fn empty_and_odd_sizes() {
        assert_eq!(
            AlignedBuf::with_pattern(0, DType::F16, 0)
                .unwrap()
                .as_slice()
                .len(),
            0
        );
        assert_eq!(
            AlignedBuf::with_pattern(7, DType::F64, 3)
                .unwrap()
                .as_slice()
                .len(),
            7
        );
        assert!(AlignedBuf::with_pattern(100, DType::Bool, 0)
            .unwrap()
            .as_slice()
            .iter()
            .all(|&b| b <= 1));
    }
}
