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
//!
//! Why huge pages for large buffers: NumPy asks for transparent huge pages
//! (`madvise(MADV_HUGEPAGE)`) on every array of 4 MiB or more, so the peers timed by
//! `bench/peers` read and write huge-page memory. Where the kernel's THP setting is `madvise`,
//! a plain allocation gets 4 KiB pages instead, and a strided kernel (a stride-2 Slice that
//! reads half of every 4 KiB page) ran about 1.5x slower on those. Buffers of that size here
//! follow NumPy's rule, so both sides of a comparison get the same kind of memory; the memcpy
//! reference copies between such buffers too.

use relayout::ir::DType;

const ALIGN: usize = 4096;
/// NumPy's threshold for asking for huge pages.
const HUGE: usize = 4 << 20;
/// The huge page size large buffers start on, so their first 2 MiB can be a huge page too.
const HUGE_ALIGN: usize = 2 << 20;

/// `len` bytes starting on a page boundary (a 2 MiB one from [`HUGE`] bytes on): a slice of a
/// larger allocation, so no `unsafe` is needed (the spare bytes cost nothing next to the
/// buffers benchmarks use).
pub struct AlignedBuf {
    storage: Storage,
    start: usize,
    len: usize,
}

enum Storage {
    Heap(Vec<u8>),
    /// An anonymous mapping, advised to use huge pages.
    Mapped(memmap2::MmapMut),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Mapped(m) => m,
        }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        match self {
            Storage::Heap(v) => v,
            Storage::Mapped(m) => m,
        }
    }
}

impl AlignedBuf {
    /// Allocates `len` bytes filled with the pattern of `dtype` (so every page is written).
    pub fn with_pattern(len: usize, dtype: DType, seed: u64) -> Result<AlignedBuf, String> {
        let mut buf = AlignedBuf::new(len)?;
        fill_pattern(buf.as_mut_slice(), dtype, seed);
        Ok(buf)
    }

    fn new(len: usize) -> Result<AlignedBuf, String> {
        let align = if len >= HUGE { HUGE_ALIGN } else { ALIGN };
        let total = len
            .checked_add(align)
            .ok_or_else(|| format!("a buffer of {len} bytes is too large"))?;
        let storage = if len >= HUGE {
            huge_page_mapping(total).map_err(|e| format!("cannot map {len} bytes: {e}"))?
        } else {
            let mut storage = Vec::new();
            storage
                .try_reserve_exact(total)
                .map_err(|_| format!("cannot allocate {len} bytes"))?;
            storage.resize(total, 0);
            Storage::Heap(storage)
        };
        let start = storage.bytes().as_ptr().align_offset(align);
        if start > align {
            return Err(format!("cannot align a buffer of {len} bytes to {align}"));
        }
        Ok(AlignedBuf {
            storage,
            start,
            len,
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.storage.bytes()[self.start..self.start + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage.bytes_mut()[self.start..self.start + self.len]
    }
}

/// A fresh zeroed mapping of `len` bytes, advised (before any page is touched, which is when
/// the kernel chooses them) to use transparent huge pages. The advice is optional: where the
/// system has no THP or declines, the mapping keeps ordinary pages.
fn huge_page_mapping(len: usize) -> std::io::Result<Storage> {
    let map = memmap2::MmapMut::map_anon(len)?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Ok(Storage::Mapped(map))
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

    #[test]
    fn large_buffers_start_on_a_huge_page_and_hold_the_pattern() {
        let len = HUGE + 12_345;
        let mut buf = AlignedBuf::with_pattern(len, DType::F32, 5).unwrap();
        assert!(matches!(buf.storage, Storage::Mapped(_)));
        assert_eq!(buf.as_slice().as_ptr() as usize % HUGE_ALIGN, 0);
        assert_eq!(buf.as_slice().len(), len);
        let small = AlignedBuf::with_pattern(len - HUGE, DType::F32, 5).unwrap();
        // The same pattern whatever the storage: the first bytes agree.
        assert_eq!(&buf.as_slice()[..len - HUGE], small.as_slice());
        let last = buf.as_mut_slice().last_mut().unwrap();
        *last = 7;
        assert_eq!(buf.as_slice()[len - 1], 7);
    }
}
