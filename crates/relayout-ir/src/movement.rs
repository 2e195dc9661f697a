//! What a loop kernel does to the bytes, in the terms a graph optimizer decides with: is it a
//! view (nothing moves), a slice or a pad of one contiguous block, a transpose, a strided view
//! (steps, reversals, broadcasts), or a general gather?
//!
//! The answer is read from loop IR ([`LoopKernel`]); the facade asks it of a compiled op's final
//! loop IR, after the passes have coalesced the loops, because that is where two ops that
//! describe the same data movement look the same (and, when that proves only a gather, of the
//! loop IR before code generation's passes cut a transpose into blocks and edges). It is exact where it answers one of the specific variants: each of
//! them is proven from the strides and offsets, never guessed from the op's name. When the
//! proof does not go through, the answer is the conservative [`Movement::Gather`].
//!
//! The proofs, in short. A *permutation* is one copy statement whose loops, with the
//! contiguous run as one more axis, lay out both the whole input and the whole output in
//! row-major order (each stride is the next smaller one times its extent); sorting the axes by
//! source stride gives numpy's `shape`, sorting them by destination stride gives `perm`. A
//! *contiguous copy* is any number of copy statements that keep the order of the bytes with
//! one shift (`dst[x] = src[x + shift]`: equal strides on both sides, equal offset
//! differences), whose written bytes merge into one range, with fills before them zeroing the
//! rest; *no movement* is the contiguous copy of the whole input with no shift. The pipeline
//! can leave an identity in pieces (a fused round trip becomes one statement per sub-box of
//! its padding), which is why several statements are accepted. Listing the written ranges
//! stops at [`MAX_RUNS`] runs; past that the answer is a gather. A *strided view* is one copy
//! statement that writes the whole output in row-major order (its destination strides, run
//! included, are the output's dense layout from offset 0) and reads whole elements (source
//! strides and offset are multiples of the element size, of any sign); its source strides,
//! in the output's axis order, are the view's.

use crate::{LoopAction, LoopKernel, LoopStmt};

/// What a kernel does with the bytes of its input.
///
/// Offsets and sizes are in bytes; shapes count elements. Every variant but
/// [`Gather`](Movement::Gather) describes the whole output exactly.
///
/// ```
/// use relayout_ir::{movement::movement, parse_loop_kernel, Movement};
///
/// // A 2x3 f32 matrix transposed, one element at a time.
/// let transpose = parse_loop_kernel(
///     "loops @t(%src: tensor<2x3xf32>) -> (%dst: tensor<3x2xf32>) {\n\
///        copy 4 bytes %dst[0 + 8 * i0 + 4 * i1] = %src[0 + 4 * i0 + 12 * i1]\n\
///          for i0 in 0 to 3, i1 in 0 to 2\n\
///      }\n",
/// )?;
/// assert_eq!(
///     movement(&transpose),
///     Movement::Permutation { shape: vec![2, 3], perm: vec![1, 0] }
/// );
///
/// // Rows 1 and 2 of a 4x3 f32 matrix, as one block of bytes: a slice, a view of the input.
/// let rows = parse_loop_kernel(
///     "loops @rows(%src: tensor<4x3xf32>) -> (%dst: tensor<2x3xf32>) {\n\
///        copy 24 bytes %dst[0] = %src[12]\n\
///      }\n",
/// )?;
/// assert_eq!(
///     movement(&rows),
///     Movement::ContiguousCopy { src_offset: 12, dst_offset: 0, bytes: 24 }
/// );
/// # Ok::<(), relayout_ir::ParseError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
#[non_exhaustive]
pub enum Movement {
    /// The output bytes are the input bytes in the same order: a reshape, which a graph can
    /// replace by a view of the input.
    ///
    /// Example: DepthToSpace with block 2 on `[N, 1, 1, 4C]` NHWC, or SpaceToBatchND with
    /// blocks of 1 and no padding.
    NoMovement,
    /// The output is zero except for `output[dst_offset..dst_offset + bytes]`, which is
    /// `input[src_offset..src_offset + bytes]`. When `dst_offset` is 0 and `bytes` is the
    /// output's size, this is a slice of the input (a view with an offset); otherwise it is
    /// a slice padded with zeros on either side.
    ///
    /// Example: BatchToSpaceND with block `[1]` and crops `[[1, 1]]` on `[1, 4, 3, 2]` f32
    /// keeps rows 1 and 2: `ContiguousCopy { src_offset: 24, dst_offset: 0, bytes: 48 }`.
    ContiguousCopy {
        /// Where the copied block starts in the input.
        src_offset: u64,
        /// Where it starts in the output.
        dst_offset: u64,
        /// Its length.
        bytes: u64,
    },
    /// A transpose, described as numpy would write it:
    /// `output = input.reshape(shape).transpose(perm).reshape(output_shape)`. Axes that move
    /// together are merged, so `shape` has as few axes as the transpose needs (at least two,
    /// and `perm` is never the identity).
    ///
    /// Example: DepthToSpace DCR with block 2 on `[1, 8, 1, 1]` NCHW (channels `(by, bx, c)`)
    /// is `Permutation { shape: [4, 2], perm: [1, 0] }`.
    Permutation {
        /// The input viewed as a row-major array of this shape (in elements).
        shape: Vec<u64>,
        /// Output axis `i` is axis `perm[i]` of that array.
        perm: Vec<usize>,
    },
    /// The output is a strided view of the input: with the output seen as a row-major array
    /// of `shape`, its element `(i_0, ..., i_k)` is element `offset + i_0 * strides[0] + ... +
    /// i_k * strides[k]` of the flattened input, all counted in elements. A stride may be
    /// negative (a reversed axis) or zero (a repeated axis: a broadcast). In PyTorch this is
    /// `input.flatten().as_strided(shape, strides, offset)` when no stride is negative; in
    /// numpy `as_strided(input.ravel()[offset:], shape, strides * itemsize)` (numpy takes
    /// strides in bytes, of any sign). Answered when the output is not one of the kinds above,
    /// so it is never a view of the whole input in order, one block, or a permutation; axes
    /// that a single stride describes are merged, as for
    /// [`Permutation`](Movement::Permutation).
    ///
    /// Example: Slice with steps 2 of `[8, 8]` f32 rows and columns: `StridedView { offset: 0,
    /// shape: [4, 4], strides: [16, 2] }`; Slice reversing the rows of `[3, 4]`: `offset: 8,
    /// shape: [3, 4], strides: [-4, 1]`; Tile repeating `[1, 5]` three times along rows:
    /// `shape: [3, 5], strides: [0, 1]`.
    StridedView {
        /// The input element that output element 0 is.
        offset: u64,
        /// The output viewed as a row-major array of this shape (in elements).
        shape: Vec<u64>,
        /// The input elements between neighbours along each axis of `shape`.
        strides: Vec<i64>,
    },
    /// Anything else: padding inside the tensor, crops of non-contiguous blocks, Col2Im's
    /// scatter-add, an output of zeros only. `statements` counts the loop statements of the
    /// kernel, `fills` those of them that fill with a constant (zeros, or a constant Pad's
    /// value), and `bytes_moved` is [`bytes_moved`](fn@bytes_moved).
    ///
    /// Example: SpaceToBatchND with block `[2, 2]` and paddings `[[1, 2], [1, 2]]`.
    Gather {
        /// The number of loop statements of the kernel.
        statements: usize,
        /// How many of them fill with a constant.
        fills: usize,
        /// Bytes read plus bytes written by one run.
        bytes_moved: u64,
    },
}

impl Movement {
    /// The kind in a word or two, to branch on: "view", "contiguous copy", "permutation",
    /// "strided view" or "gather". These are the words the Python package's `movement_kind`
    /// and the C API's `relayout_kernel_movement_kind` give.
    ///
    /// ```
    /// use relayout_ir::Movement;
    /// let gather = Movement::Gather { statements: 3, fills: 1, bytes_moved: 4096 };
    /// assert_eq!(gather.kind(), "gather");
    /// assert_eq!(Movement::NoMovement.kind_c(), c"view");
    /// ```
    pub fn kind(&self) -> &'static str {
        self.kind_c()
            .to_str()
            .expect("the kinds are ASCII literals")
    }

    /// [`Movement::kind`] as a static C string (NUL-terminated), for the C API.
    pub fn kind_c(&self) -> &'static std::ffi::CStr {
        match self {
            Movement::NoMovement => c"view",
            Movement::ContiguousCopy { .. } => c"contiguous copy",
            Movement::Permutation { .. } => c"permutation",
            Movement::StridedView { .. } => c"strided view",
            Movement::Gather { .. } => c"gather",
        }
    }
}

/// One line for a log or a report: what moves, in the variant's terms.
///
/// ```
/// use relayout_ir::Movement;
///
/// assert_eq!(Movement::NoMovement.to_string(), "no movement: the output is the input's bytes in order (a view)");
/// let slice = Movement::ContiguousCopy { src_offset: 24, dst_offset: 0, bytes: 48 };
/// assert_eq!(
///     slice.to_string(),
///     "contiguous copy: output[0..48] = input[24..72] (bytes), any other output byte zero"
/// );
/// let transpose = Movement::Permutation { shape: vec![2, 3, 4], perm: vec![0, 2, 1] };
/// assert_eq!(transpose.to_string(), "permutation: input.reshape(2, 3, 4).transpose(0, 2, 1)");
/// let rows = Movement::StridedView { offset: 8, shape: vec![3, 4], strides: vec![-4, 1] };
/// assert_eq!(
///     rows.to_string(),
///     "strided view: as_strided(input, offset=8, shape=(3, 4), strides=(-4, 1)) (in elements)"
/// );
/// let gather = Movement::Gather { statements: 3, fills: 1, bytes_moved: 4096 };
/// assert_eq!(gather.to_string(), "gather: 3 loop statements (1 fill), 4096 bytes moved");
/// ```
impl std::fmt::Display for Movement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(", ");
        match self {
            Movement::NoMovement => {
                f.write_str("no movement: the output is the input's bytes in order (a view)")
            }
            Movement::ContiguousCopy {
                src_offset,
                dst_offset,
                bytes,
            } => write!(
                f,
                "contiguous copy: output[{dst_offset}..{}] = input[{src_offset}..{}] (bytes), \
                 any other output byte zero",
                dst_offset.saturating_add(*bytes),
                src_offset.saturating_add(*bytes),
            ),
            Movement::Permutation { shape, perm } => write!(
                f,
                "permutation: input.reshape({}).transpose({})",
                list(&mut shape.iter().map(u64::to_string)),
                list(&mut perm.iter().map(usize::to_string)),
            ),
            Movement::StridedView {
                offset,
                shape,
                strides,
            } => write!(
                f,
                "strided view: as_strided(input, offset={offset}, shape=({}), strides=({})) \
                 (in elements)",
                list(&mut shape.iter().map(u64::to_string)),
                list(&mut strides.iter().map(i64::to_string)),
            ),
            Movement::Gather {
                statements,
                fills,
                bytes_moved,
            } => write!(
                f,
                "gather: {statements} loop statement{} ({fills} fill{}), {bytes_moved} bytes \
                 moved",
                if *statements == 1 { "" } else { "s" },
                if *fills == 1 { "" } else { "s" },
            ),
        }
    }
}

/// Bytes read plus bytes written by one run of `kernel`: a copy reads and writes its run, a
/// fill writes it, and an accumulate reads its source run and reads and writes its destination
/// run (an accumulate from +0.0 does not read its destination). Saturates at `u64::MAX`.
pub fn bytes_moved(kernel: &LoopKernel) -> u64 {
    kernel.stmts.iter().fold(0u64, |acc, s| {
        let touches = match s.action {
            LoopAction::Copy => 2,
            LoopAction::Fill { .. } => 1,
            LoopAction::Accumulate => 3,
            LoopAction::Sum => 2,
        };
        let run = s.trip_count().saturating_mul(s.bytes);
        acc.saturating_add(run.saturating_mul(touches))
    })
}

/// What `kernel` does with the bytes of its input; see [`Movement`].
pub fn movement(kernel: &LoopKernel) -> Movement {
    let gather = || Movement::Gather {
        statements: kernel.stmts.len(),
        fills: kernel.stmts.iter().filter(|s| s.action.is_fill()).count(),
        bytes_moved: bytes_moved(kernel),
    };
    let (Ok(src_size), Ok(dst_size)) = (kernel.src.size_bytes(), kernel.dst.size_bytes()) else {
        return gather();
    };
    if dst_size == 0 {
        return if src_size == 0 {
            Movement::NoMovement
        } else {
            Movement::ContiguousCopy {
                src_offset: 0,
                dst_offset: 0,
                bytes: 0,
            }
        };
    }
    // Statements without points do nothing, whatever their strides.
    let live: Vec<&LoopStmt> = kernel.stmts.iter().filter(|s| s.trip_count() > 0).collect();
    // Accumulating onto zeros is not a copy bit for bit (-0.0 + 0.0 is +0.0), so a scatter-add
    // is never reported as anything but a gather.
    if live.iter().any(|s| s.action.is_accumulate()) {
        return gather();
    }
    let elem = kernel.dtype().size();
    if let Some(m) = shifted_block(&live, elem, src_size, dst_size) {
        return m;
    }
    if let [copy] = live[..] {
        if copy.action == LoopAction::Copy {
            if let Some(m) = permutation(copy, elem, src_size, dst_size) {
                return m;
            }
            if let Some(m) = strided_view(copy, elem, dst_size) {
                return m;
            }
        }
    }
    gather()
}

/// One axis of a loop statement: `extent` steps of `src` and `dst` bytes. The contiguous run
/// of a statement is an axis too, with a stride of one element on both sides.
#[derive(Clone, Copy, Debug)]
struct Axis {
    extent: u64,
    src: i64,
    dst: i64,
}

/// The axes of `stmt` that have more than one point (the others do not move anything).
fn axes(stmt: &LoopStmt, elem: u64) -> Vec<Axis> {
    let mut axes: Vec<Axis> = stmt
        .loops
        .iter()
        .filter(|l| l.extent > 1)
        .map(|l| Axis {
            extent: l.extent,
            src: l.src_stride,
            dst: l.dst_stride,
        })
        .collect();
    if stmt.bytes > elem {
        if let Ok(e) = i64::try_from(elem) {
            axes.push(Axis {
                extent: stmt.bytes / elem,
                src: e,
                dst: e,
            });
        }
    }
    axes
}

/// When the points of `axes` visit, through `stride`, every element of one contiguous block
/// exactly once, the order of the axes from the largest stride to the smallest and the size of
/// the block in bytes. This is the row-major layout of some shape: the smallest stride is one
/// element and every other is the next smaller stride times its extent.
fn dense(axes: &[Axis], stride: impl Fn(&Axis) -> i64, elem: u64) -> Option<(Vec<usize>, u64)> {
    let mut order: Vec<usize> = (0..axes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(stride(&axes[i])));
    let mut span = elem;
    for &i in order.iter().rev() {
        if u64::try_from(stride(&axes[i])).ok()? != span {
            return None;
        }
        span = span.checked_mul(axes[i].extent)?;
    }
    Some((order, span))
}

/// How many contiguous runs of written bytes [`movement`] lists, at most, to prove that copy
/// statements write one contiguous block and fills zero the rest. A statement that writes one
/// contiguous block is one run whatever its size; only kernels split into many strided pieces
/// reach the limit, and they get the conservative answer, [`Movement::Gather`].
pub const MAX_RUNS: usize = 1 << 18;

/// [`Movement::NoMovement`] or [`Movement::ContiguousCopy`], when every copy statement keeps
/// the order of the bytes with the same shift (`dst[x] = src[x + shift]`), the copies together
/// write one contiguous block, and the fills zero everything else.
///
/// The pipeline may leave an identity in pieces (one statement per sub-box of a split guard),
/// so the copies are not required to be one statement: the bytes they write are listed as
/// runs and merged. Fills must all come before the first copy, so that the copies have the
/// last word wherever they write.
fn shifted_block(live: &[&LoopStmt], elem: u64, src_size: u64, dst_size: u64) -> Option<Movement> {
    let mut shift: Option<i64> = None;
    let mut copied = Vec::new();
    let mut zeroed = Vec::new();
    let mut budget = MAX_RUNS;
    for &stmt in live {
        let axes = axes(stmt, elem);
        match stmt.action {
            LoopAction::Copy => {
                // Equal strides on both sides: the statement keeps the order of the bytes.
                if axes.iter().any(|a| a.src != a.dst) {
                    return None;
                }
                let s = stmt.src_offset.checked_sub(stmt.dst_offset)?;
                if *shift.get_or_insert(s) != s {
                    return None;
                }
                runs(stmt, &axes, elem, &mut budget, &mut copied)?;
            }
            // Only zero fills: a ContiguousCopy promises zeros around the copied block.
            LoopAction::Fill { value } if value.is_zero() && shift.is_none() => {
                runs(stmt, &axes, elem, &mut budget, &mut zeroed)?;
            }
            _ => return None,
        }
    }
    let shift = shift?;
    let (lo, hi) = single_range(&mut copied)?;
    zeroed.push((lo, hi));
    if single_range(&mut zeroed)? != (0, dst_size) {
        return None;
    }
    let src_offset = u64::try_from(i64::try_from(lo).ok()?.checked_add(shift)?).ok()?;
    if lo == 0 && hi == dst_size && src_offset == 0 && src_size == dst_size {
        return Some(Movement::NoMovement);
    }
    Some(Movement::ContiguousCopy {
        src_offset,
        dst_offset: lo,
        bytes: hi - lo,
    })
}

/// Lists the destination byte ranges `[lo, hi)` that `stmt` writes, merging the innermost
/// axes that continue one another into one run, or `None` when a stride is negative or the
/// runs would exceed `budget`.
fn runs(
    stmt: &LoopStmt,
    axes: &[Axis],
    elem: u64,
    budget: &mut usize,
    out: &mut Vec<(u64, u64)>,
) -> Option<()> {
    let mut order: Vec<&Axis> = axes.iter().collect();
    order.sort_by_key(|a| a.dst);
    // The longest prefix of axes, smallest stride first, that tiles one contiguous run.
    let mut run = elem;
    let mut inner = 0;
    for a in &order {
        if u64::try_from(a.dst).ok()? != run {
            break;
        }
        run = run.checked_mul(a.extent)?;
        inner += 1;
    }
    let outer = &order[inner..];
    let count = outer.iter().try_fold(1usize, |n, a| {
        n.checked_mul(usize::try_from(a.extent).ok()?)
    })?;
    *budget = budget.checked_sub(count)?;
    // An odometer over the outer axes, the last one fastest.
    let mut index = vec![0u64; outer.len()];
    for _ in 0..count {
        let mut at = stmt.dst_offset;
        for (a, &i) in outer.iter().zip(&index) {
            at = at.checked_add(a.dst.checked_mul(i64::try_from(i).ok()?)?)?;
        }
        let lo = u64::try_from(at).ok()?;
        out.push((lo, lo.checked_add(run)?));
        for (k, a) in outer.iter().enumerate().rev() {
            index[k] += 1;
            if index[k] < a.extent {
                break;
            }
            index[k] = 0;
        }
    }
    Some(())
}

/// The one range `[lo, hi)` that the union of `ranges` is, or `None` when it has a gap (or
/// there are no ranges).
fn single_range(ranges: &mut [(u64, u64)]) -> Option<(u64, u64)> {
    ranges.sort_unstable();
    let (lo, mut hi) = *ranges.first()?;
    for &(l, h) in ranges.iter() {
        if l > hi {
            return None;
        }
        hi = hi.max(h);
    }
    Some((lo, hi))
}

/// [`Movement::Permutation`] (or [`Movement::NoMovement`] when the axes turn out to be in
/// order), when the one copy reads every input element once and writes every output element
/// once, each side in the row-major layout of its axes.
fn permutation(copy: &LoopStmt, elem: u64, src_size: u64, dst_size: u64) -> Option<Movement> {
    if copy.src_offset != 0 || copy.dst_offset != 0 {
        return None;
    }
    let axes = axes(copy, elem);
    let (src_order, src_span) = dense(&axes, |a| a.src, elem)?;
    let (dst_order, dst_span) = dense(&axes, |a| a.dst, elem)?;
    if src_span != src_size || dst_span != dst_size {
        return None;
    }
    // Input axis i (in the row-major order of the input) is axes[src_order[i]]; output axis j
    // is axes[dst_order[j]], which is input axis perm[j].
    let mut position = vec![0usize; axes.len()];
    for (i, &a) in src_order.iter().enumerate() {
        position[a] = i;
    }
    let shape: Vec<u64> = src_order.iter().map(|&a| axes[a].extent).collect();
    let perm: Vec<usize> = dst_order.iter().map(|&a| position[a]).collect();
    let (shape, perm) = merge_axes(&shape, &perm);
    if perm.len() <= 1 {
        return Some(Movement::NoMovement);
    }
    Some(Movement::Permutation { shape, perm })
}

/// [`Movement::StridedView`], when the copy writes the whole output in row-major order (its
/// destination strides, run included, are the dense layout of the output from offset 0) and
/// reads elements: every source stride and its offset are whole elements.
fn strided_view(copy: &LoopStmt, elem: u64, dst_size: u64) -> Option<Movement> {
    if copy.dst_offset != 0 {
        return None;
    }
    let axes = axes(copy, elem);
    let (dst_order, dst_span) = dense(&axes, |a| a.dst, elem)?;
    if dst_span != dst_size {
        return None;
    }
    let e = i64::try_from(elem).ok()?;
    let offset = u64::try_from(copy.src_offset).ok()?;
    if offset % elem != 0 || axes.iter().any(|a| a.src % e != 0) {
        return None;
    }
    // Outermost output axis first; merge an axis into the one before it when one stride walks
    // both (the outer stride is the inner one times the inner extent).
    let mut shape: Vec<u64> = Vec::with_capacity(axes.len());
    let mut strides: Vec<i64> = Vec::with_capacity(axes.len());
    for a in dst_order.iter().map(|&i| axes[i]) {
        let stride = a.src / e;
        match (shape.last_mut(), strides.last_mut()) {
            (Some(n), Some(s)) if i64::try_from(a.extent).ok()?.checked_mul(stride) == Some(*s) => {
                *n = n.checked_mul(a.extent)?;
                *s = stride;
            }
            _ => {
                shape.push(a.extent);
                strides.push(stride);
            }
        }
    }
    Some(Movement::StridedView {
        offset: offset / elem,
        shape,
        strides,
    })
}

/// Merges input axes that stay next to each other, in the same order, in the output: the
/// smallest description of the same transpose.
fn merge_axes(shape: &[u64], perm: &[usize]) -> (Vec<u64>, Vec<usize>) {
    // Groups of output axes whose input axes are consecutive: each becomes one axis.
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &p in perm {
        match groups.last_mut() {
            Some(g) if g.last() == Some(&(p.wrapping_sub(1))) && p > 0 => g.push(p),
            _ => groups.push(vec![p]),
        }
    }
    let mut by_input: Vec<usize> = (0..groups.len()).collect();
    by_input.sort_by_key(|&g| groups[g][0]);
    let new_shape = by_input
        .iter()
        .map(|&g| groups[g].iter().map(|&a| shape[a]).product())
        .collect();
    let mut new_perm = vec![0usize; groups.len()];
    for (i, &g) in by_input.iter().enumerate() {
        new_perm[g] = i;
    }
    (new_shape, new_perm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_axes_that_move_together() {
        // (a, b, c) -> (c, a, b): a and b stay together.
        assert_eq!(merge_axes(&[2, 3, 4], &[2, 0, 1]), (vec![6, 4], vec![1, 0]));
        assert_eq!(merge_axes(&[2, 3], &[0, 1]), (vec![6], vec![0]));
        assert_eq!(
            merge_axes(&[2, 2, 2, 2], &[0, 2, 1, 3]),
            (vec![2, 2, 2, 2], vec![0, 2, 1, 3])
        );
    }

    #[test]
    fn ranges_merge_into_one_or_not() {
        assert_eq!(single_range(&mut [(4, 8), (0, 4)]), Some((0, 8)));
        assert_eq!(single_range(&mut [(2, 3), (0, 6), (5, 8)]), Some((0, 8)));
        assert_eq!(single_range(&mut [(5, 8), (0, 4)]), None);
        assert_eq!(single_range(&mut []), None);
    }
}
