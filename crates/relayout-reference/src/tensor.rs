//! A dense row-major tensor on bytes, and the few index operations the reference needs.

use relayout_ops::{ErrorCategory, OpError};

/// Row-major bytes of a tensor with element size `esize`.
#[derive(Clone, Debug)]
pub(crate) struct Dense {
    pub shape: Vec<usize>,
    pub esize: usize,
    pub bytes: Vec<u8>,
}

/// `v` as `usize`; every size the reference sees has been validated to fit in memory terms.
pub(crate) fn size(v: u64) -> Result<usize, OpError> {
    usize::try_from(v).map_err(|_| {
        OpError::new(
            ErrorCategory::SizeOverflow,
            format!("size {v} does not fit in this machine's address space"),
        )
    })
}

/// All-zero bytes of `shape`, or an error when they cannot be allocated.
pub(crate) fn zeros(shape: Vec<usize>, esize: usize) -> Result<Dense, OpError> {
    // A zero dim empties the tensor whatever the other dims are (which may be huge).
    let len = if shape.contains(&0) {
        0
    } else {
        shape
            .iter()
            .try_fold(esize, |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| OpError::new(ErrorCategory::SizeOverflow, "output size overflows"))?
    };
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(len).map_err(|_| {
        OpError::new(
            ErrorCategory::SizeOverflow,
            format!("cannot allocate {len} bytes for the output"),
        )
    })?;
    bytes.resize(len, 0);
    Ok(Dense {
        shape,
        esize,
        bytes,
    })
}

impl Dense {
    /// Element offset of `index` (row-major). The index must be inside the shape.
    pub fn offset(&self, index: &[usize]) -> usize {
        self.shape
            .iter()
            .zip(index)
            .fold(0, |acc, (&n, &i)| acc * n + i)
    }

    /// The bytes of the element at element offset `at`.
    pub fn get(&self, at: usize) -> &[u8] {
        &self.bytes[at * self.esize..(at + 1) * self.esize]
    }

    /// The bytes of the element at element offset `at`, for writing.
    pub fn get_mut(&mut self, at: usize) -> &mut [u8] {
        &mut self.bytes[at * self.esize..(at + 1) * self.esize]
    }

    /// Copies element `from` of `src` to element `to` of `self`.
    pub fn set_from(&mut self, to: usize, src: &Dense, from: usize) {
        let e = self.esize;
        self.bytes[to * e..(to + 1) * e].copy_from_slice(src.get(from));
    }
}

/// Calls `f` on every index of `shape` in row-major order (the last dim fastest), with the
/// element's row-major offset.
pub(crate) fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize], usize)) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0;
    loop {
        f(&index, offset);
        offset += 1;
        let mut k = shape.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            index[k] += 1;
            if index[k] < shape[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// The multi-index of `linear` in a row-major box of `extents`.
pub(crate) fn unravel(mut linear: usize, extents: &[usize]) -> Vec<usize> {
    let mut out = vec![0; extents.len()];
    for (o, &n) in out.iter_mut().zip(extents).rev() {
        // An empty box has no indices; callers never unravel into one.
        if n > 0 {
            *o = linear % n;
            linear /= n;
        }
    }
    out
}

/// The row-major linear index of `index` in a box of `extents`.
pub(crate) fn ravel(index: &[usize], extents: &[usize]) -> usize {
    index
        .iter()
        .zip(extents)
        .fold(0, |acc, (&i, &n)| acc * n + i)
}
