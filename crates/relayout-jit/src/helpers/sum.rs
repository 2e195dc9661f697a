//! Col2Im's sums of f16 and bf16 without generated code: precompiled loops over a statement's
//! nest that add each run's contributions eight elements at a time.
//!
//! CLIF has no half-precision arithmetic, so generated code adds f16 and bf16 elements one
//! at a time through a helper call per element and term (a 3x3 Col2Im of 4x576x4096 f16 ran
//! at 79 times memcpy's time, bf16 at 35 times; f32 at 0.9). Here a statement
//! `accumulate N bytes %dst[...] (= 0) + %src[...]` (`relayout_codegen::SumRuns`) is, at
//! every point of its loops outside the reduction loops, one run of `N / 2` elements:
//! `dst[j] = round(round(start + src[t0 + j]) + src[t1 + j]) ...` over the terms in loop order,
//! where `start` is +0.0 for a sum from zero and `dst[j]` otherwise, and `round` rounds an
//! f32 to the element type (to nearest, ties to even). The sum of two f16 or bf16 values is
//! exact in f32, so each addition is the correctly rounded one of the element type, which is
//! what the interpreter (`DType::add_assign`) and the generated code's helper do, bit for bit;
//! the conversions are those of the `half` crate (F16C's for f16 where the processor has it,
//! as `half` itself uses).
//!
//! Eight elements (one 16-byte vector of the destination) are summed at a time, in f32, up
//! to four such vectors side by side; a run that is not a whole number of vectors ends with
//! a vector overlapping the one before it, and the two are summed together from the
//! destination as it was before either is stored, so the elements they share get the same
//! sums twice, never a sum on top of a stored sum. Runs shorter than a vector are summed
//! element by element.
//!
//! Each instance is compiled for one element type and, for the counts Col2Im's kernels have
//! (3x3 and 3x3x3 kernels' rows, edges and corners), one number of terms, so that the terms'
//! offsets stay in registers; other counts loop over the terms.

use super::stream::{each_run, walk, StreamLoop, Visit};
use half::f16;
use relayout_ir::half_sum;

/// Elements of a vector: 16 bytes of 2-byte elements.
const LANES: usize = 8;

/// A half-precision element type: its conversions to and from f32, one element or a vector
/// of [`LANES`] at a time, exactly as the `half` crate converts.
trait Half {
    /// # Safety
    /// `p` is valid for reading 2 bytes.
    unsafe fn load(p: *const u8) -> f32;
    /// The bits of `x` rounded to the element type.
    fn narrow(x: f32) -> u16;
    /// `x` rounded to the element type, as an f32.
    fn round(x: f32) -> f32;

    /// # Safety
    /// `p` is valid for writing 2 bytes.
    #[inline(always)]
    unsafe fn store(p: *mut u8, x: f32) {
        // SAFETY: the caller's contract.
        unsafe { p.cast::<u16>().write_unaligned(Self::narrow(x)) }
    }

    /// # Safety
    /// `p` is valid for reading 16 bytes; the processor has the instance's target features.
    #[inline(always)]
    unsafe fn load_vector(p: *const u8) -> [f32; LANES] {
        // Loops rather than `array::map` or `from_fn` here: a closure is a function of its
        // own, compiled without the instance's target features and called if not inlined.
        let mut v = [0f32; LANES];
        for (l, x) in v.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *x = unsafe { Self::load(p.wrapping_add(2 * l)) };
        }
        v
    }

    /// # Safety
    /// The processor has the instance's target features.
    #[inline(always)]
    unsafe fn narrow_vector(v: [f32; LANES]) -> [u16; LANES] {
        let mut bits = [0u16; LANES];
        for (b, &x) in bits.iter_mut().zip(&v) {
            *b = Self::narrow(x);
        }
        bits
    }

    /// # Safety
    /// `p` is valid for writing 16 bytes; the processor has the instance's target features.
    #[inline(always)]
    unsafe fn store_vector(p: *mut u8, v: [f32; LANES]) {
        // SAFETY: the caller's contract.
        unsafe {
            p.cast::<[u16; LANES]>()
                .write_unaligned(Self::narrow_vector(v))
        }
    }

    /// # Safety
    /// The processor has the instance's target features.
    #[inline(always)]
    unsafe fn round_vector(mut v: [f32; LANES]) -> [f32; LANES] {
        for x in &mut v {
            *x = Self::round(*x);
        }
        v
    }
}

/// f16 through the `half` crate, one element at a time.
struct F16;

impl Half for F16 {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> f32 {
        // SAFETY: the caller's contract.
        f16::from_bits(unsafe { p.cast::<u16>().read_unaligned() }).to_f32()
    }
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        f16::from_f32(x).to_bits()
    }
    #[inline(always)]
    fn round(x: f32) -> f32 {
        f16::from_f32(x).to_f32()
    }
}

/// f16 with F16C's vector conversions (the instructions `half` uses for one element).
#[cfg(target_arch = "x86_64")]
struct F16c;

#[cfg(target_arch = "x86_64")]
impl Half for F16c {
    #[inline(always)]
    unsafe fn load(p: *const u8) -> f32 {
        // SAFETY: the caller's contract.
        unsafe { F16::load(p) }
    }
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        F16::narrow(x)
    }
    #[inline(always)]
    fn round(x: f32) -> f32 {
        F16::round(x)
    }

    #[inline(always)]
    unsafe fn load_vector(p: *const u8) -> [f32; LANES] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (F16C and AVX, 16 readable bytes).
        unsafe {
            let h = _mm_loadu_si128(p.cast());
            std::mem::transmute::<__m256, [f32; LANES]>(_mm256_cvtph_ps(h))
        }
    }

    #[inline(always)]
    unsafe fn narrow_vector(v: [f32; LANES]) -> [u16; LANES] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (F16C and AVX).
        unsafe {
            let x = std::mem::transmute::<[f32; LANES], __m256>(v);
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            std::mem::transmute::<__m128i, [u16; LANES]>(h)
        }
    }

    #[inline(always)]
    unsafe fn round_vector(v: [f32; LANES]) -> [f32; LANES] {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract (F16C and AVX).
        unsafe {
            let x = std::mem::transmute::<[f32; LANES], __m256>(v);
            let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(x);
            std::mem::transmute::<__m256, [f32; LANES]>(_mm256_cvtph_ps(h))
        }
    }
}

/// bf16, with the `half` crate's rounding written without branches, so that eight at a time
/// compile to vector instructions.
struct Bf16;

impl Half for Bf16 {
    /// `half`'s `bf16::from_f32`: rounded to nearest, ties to even; a NaN keeps its high
    /// bits and is quieted.
    #[inline(always)]
    fn narrow(x: f32) -> u16 {
        let x = x.to_bits();
        let nan = x & 0x7fff_ffff > 0x7f80_0000;
        let up = u32::from(x & 0x8000 != 0 && x & 0x1_7fff != 0);
        if nan {
            ((x >> 16) | 0x40) as u16
        } else {
            ((x >> 16) + up) as u16
        }
    }

    /// The bits shifted up, without `half`'s quieting of a NaN (its bit 6 set): a loaded NaN
    /// can only reach the result through `half_sum`, which passes it on unchanged, and then
    /// through `narrow` or `round`, which set that bit, so the sums are `half`'s bit for bit
    /// (the tests compare NaN inputs too).
    #[inline(always)]
    unsafe fn load(p: *const u8) -> f32 {
        // SAFETY: the caller's contract.
        f32::from_bits(u32::from(unsafe { p.cast::<u16>().read_unaligned() }) << 16)
    }
    /// `widen(narrow(x))` without going through 16 bits: for a NaN its high half quieted,
    /// else the high half rounded to nearest, ties to even (never a carry out of the top:
    /// the largest finite values round to infinity, and NaNs take the other branch).
    #[inline(always)]
    fn round(x: f32) -> f32 {
        let b = x.to_bits();
        let up = u32::from(b & 0x8000 != 0 && b & 0x1_7fff != 0);
        let bits = if b & 0x7fff_ffff > 0x7f80_0000 {
            (b | 0x0040_0000) & 0xffff_0000
        } else {
            ((b >> 16) + up) << 16
        };
        f32::from_bits(bits)
    }
}

/// The source offsets of a run's terms, relative to the run: a fixed number of them, passed
/// by value (a local copy, which the compiler keeps in registers across the run's stores:
/// through a reference it would reload them after every store, which might have changed
/// them), or any number.
trait Terms: Copy {
    fn offsets(&self) -> &[isize];
}

impl<const K: usize> Terms for [isize; K] {
    #[inline(always)]
    fn offsets(&self) -> &[isize] {
        self
    }
}

impl Terms for &[isize] {
    #[inline(always)]
    fn offsets(&self) -> &[isize] {
        self
    }
}

/// Sums the vectors at element `at` of each of `N` positions of a run: all start from zero
/// or the destination, every term is added to each, then all are stored.
///
/// # Safety
/// Every vector read and written lies inside its buffer (the caller's run does), and the
/// processor has `H`'s target features.
#[inline(always)]
unsafe fn vectors<H: Half, const N: usize, S: Terms, const Z: bool>(
    dst: *mut u8,
    src: *const u8,
    terms: S,
    at: [usize; N],
) {
    let mut acc = [[0f32; LANES]; N];
    if !Z {
        for (a, &at) in acc.iter_mut().zip(&at) {
            // SAFETY: the caller's contract.
            *a = unsafe { H::load_vector(dst.add(2 * at)) };
        }
    }
    for &t in terms.offsets() {
        for (a, &at) in acc.iter_mut().zip(&at) {
            // SAFETY: the caller's contract.
            unsafe { add_vector::<H>(a, src.offset(t).add(2 * at)) };
        }
    }
    for (a, &at) in acc.iter().zip(&at) {
        // SAFETY: the caller's contract.
        unsafe { H::store_vector(dst.add(2 * at), *a) };
    }
}

/// `acc = round(acc + x)` lane by lane for the vector `x` at `p`: `half_sum`, written as two
/// selects (which compile to vector compares and blends) rather than its branches.
///
/// # Safety
/// `p` is valid for reading 16 bytes; the processor has `H`'s target features.
#[inline(always)]
unsafe fn add_vector<H: Half>(acc: &mut [f32; LANES], p: *const u8) {
    // SAFETY: the caller's contract.
    let x = unsafe { H::load_vector(p) };
    let mut sum = [0f32; LANES];
    for l in 0..LANES {
        let added = acc[l] + x[l];
        let added = if x[l].is_nan() { x[l] } else { added };
        sum[l] = if acc[l].is_nan() { acc[l] } else { added };
    }
    // SAFETY: the caller's contract.
    *acc = unsafe { H::round_vector(sum) };
}

/// A row of a sum from +0.0 over every other element (`relayout_codegen::SumRow`): `count`
/// elements of each phase, the second phase's source `phase_src` bytes after the first.
#[derive(Clone, Copy)]
pub(crate) struct RowForm {
    pub(crate) count: usize,
    pub(crate) phase_src: Option<isize>,
}

/// Sums a row (see [`RowForm`]) from +0.0: eight elements of a phase at a time as vectors
/// (contiguous at the source), the two phases' vectors interleaved into sixteen elements
/// stored at once; one phase alone is stored element by element (the others between them
/// belong to another statement). The last group ends at the row's end, overlapping the one
/// before it, which only stores the same sums again. A row shorter than a vector is summed
/// element by element.
///
/// # Safety
/// The row's elements at `dst` (`2 * count` of them, every other one without a second
/// phase) and its terms' at `src` lie inside their buffers, which do not overlap; the
/// processor has `H`'s target features.
#[inline(always)]
unsafe fn row<H: Half, S: Terms>(dst: *mut u8, src: *const u8, row: RowForm, terms: S) {
    let phases = [Some(0), row.phase_src];
    if row.count < LANES {
        for j in 0..row.count {
            for (p, from) in phases.iter().enumerate() {
                let Some(from) = *from else { continue };
                let s = src.wrapping_offset(from).wrapping_add(2 * j);
                // SAFETY: the caller's contract.
                unsafe { elements::<H, S, true>(dst.wrapping_add(4 * j + 2 * p), s, 1, terms) };
            }
        }
        return;
    }
    let last = row.count - LANES;
    let mut j = 0;
    loop {
        // SAFETY (both): vectors of the row's phases, inside the source by the caller's
        // contract.
        let even = unsafe { phase_vector::<H, S>(src.add(2 * j), terms) };
        match row.phase_src {
            Some(from) => {
                let odd = unsafe { phase_vector::<H, S>(src.offset(from).add(2 * j), terms) };
                let mut both = [0u16; 2 * LANES];
                for l in 0..LANES {
                    both[2 * l] = even[l];
                    both[2 * l + 1] = odd[l];
                }
                // SAFETY: elements `2 * j .. 2 * j + 16` of the row.
                unsafe {
                    dst.add(4 * j)
                        .cast::<[u16; 2 * LANES]>()
                        .write_unaligned(both)
                };
            }
            None => {
                for (l, &bits) in even.iter().enumerate() {
                    // SAFETY: element `2 * (j + l)` of the row.
                    unsafe { dst.add(4 * (j + l)).cast::<u16>().write_unaligned(bits) };
                }
            }
        }
        if j == last {
            return;
        }
        j = (j + LANES).min(last);
    }
}

/// The sums from +0.0 of the vectors at `src` plus each term, rounded to the element type's
/// bits.
///
/// # Safety
/// Every vector read lies inside the source; the processor has `H`'s target features.
#[inline(always)]
unsafe fn phase_vector<H: Half, S: Terms>(src: *const u8, terms: S) -> [u16; LANES] {
    let mut acc = [0f32; LANES];
    for &t in terms.offsets() {
        // SAFETY: the caller's contract.
        unsafe { add_vector::<H>(&mut acc, src.offset(t)) };
    }
    // SAFETY: the caller's contract.
    unsafe { H::narrow_vector(acc) }
}

/// Sums `n` elements of a run one at a time.
///
/// # Safety
/// The run's elements at `dst` and at `src` plus every term lie inside their buffers.
#[inline(always)]
unsafe fn elements<H: Half, S: Terms, const Z: bool>(
    dst: *mut u8,
    src: *const u8,
    n: usize,
    terms: S,
) {
    for j in 0..n {
        let d = dst.wrapping_add(2 * j);
        // SAFETY (the loads and the store): element `j` of the run and of each term.
        let mut acc = if Z { 0.0 } else { unsafe { H::load(d) } };
        for &t in terms.offsets() {
            let x = unsafe { H::load(src.wrapping_offset(t).wrapping_add(2 * j)) };
            acc = H::round(half_sum(acc, x));
        }
        unsafe { H::store(d, acc) };
    }
}

/// The vectors side by side: four independent chains of additions.
const GROUP: usize = 4;

/// Sums one run of `n` elements at `dst` from the terms at `src`.
///
/// # Safety
/// The run's elements at `dst` and at `src` plus every term lie inside their buffers, which
/// do not overlap; the processor has `H`'s target features.
#[inline(always)]
unsafe fn run<H: Half, S: Terms, const Z: bool>(dst: *mut u8, src: *const u8, n: usize, terms: S) {
    if n < LANES {
        // SAFETY: the caller's contract.
        return unsafe { elements::<H, S, Z>(dst, src, n, terms) };
    }
    // Vector positions: the whole vectors, then one ending at the run's end when the run is
    // not a whole number of them; summed in groups, the last group holding the last two (so
    // that an overlapping vector is summed with the one it overlaps), a smaller group first
    // when the count is not a multiple of the group's size.
    let whole = n / LANES;
    let count = whole + usize::from(n % LANES != 0);
    let at = |k: usize| if k < whole { k * LANES } else { n - LANES };
    let mut k = count % GROUP;
    // SAFETY (every call): the vectors lie inside the run.
    unsafe {
        match k {
            1 => vectors::<H, 1, S, Z>(dst, src, terms, [at(0)]),
            2 => vectors::<H, 2, S, Z>(dst, src, terms, [at(0), at(1)]),
            3 => vectors::<H, 3, S, Z>(dst, src, terms, [at(0), at(1), at(2)]),
            _ => {}
        }
        while k < count {
            let group = [at(k), at(k + 1), at(k + 2), at(k + 3)];
            vectors::<H, GROUP, S, Z>(dst, src, terms, group);
            k += GROUP;
        }
    }
}

/// What a sum helper sums at each point of its nest: runs of `elements` elements, or rows
/// (`row`), over the terms at `terms` (source byte offsets relative to a run, in loop order).
#[derive(Clone, Copy)]
pub(crate) struct SumShape<'a> {
    pub(crate) elements: usize,
    pub(crate) terms: &'a [isize],
    pub(crate) row: Option<RowForm>,
}

/// A sum helper: sums the run (or row) of `shape` at every point of `loops` from `dst` and
/// `src`.
///
/// # Safety
/// Every run and every term of every point lies inside its buffer (a verified kernel's nest,
/// in buffers of the checked lengths), the buffers do not overlap, and no other thread writes
/// the runs.
pub(crate) type SumNest =
    unsafe fn(dst: *mut u8, src: *const u8, shape: SumShape<'_>, loops: &[StreamLoop]);

/// The body of every [`SumNest`] instance: `K` terms (`K = 0`: any number).
///
/// # Safety
/// As [`SumNest`]; with `K > 0`, `terms` has `K` elements; the processor has `H`'s target
/// features.
#[inline(always)]
unsafe fn nest<H: Half, const K: usize, const Z: bool>(
    dst: *mut u8,
    src: *const u8,
    shape: SumShape<'_>,
    loops: &[StreamLoop],
) {
    // Rows only come from sums from +0.0.
    let row = if Z { shape.row } else { None };
    if K == 0 {
        let mut run = Run::<H, &[isize], Z>::new(shape.elements, row, shape.terms);
        // SAFETY: the caller's contract.
        return unsafe { walk(dst, src, loops, &mut run) };
    }
    let Ok(&fixed) = <&[isize; K]>::try_from(shape.terms) else {
        return;
    };
    let mut run = Run::<H, [isize; K], Z>::new(shape.elements, row, fixed);
    // SAFETY: the caller's contract.
    unsafe { walk(dst, src, loops, &mut run) }
}

/// [`run`] (or [`row`]) with its length and terms: what `walk` visits at every point. A
/// struct with methods marked `inline(always)` rather than a closure, so that it is inlined
/// into the instances compiled with F16C or AVX2 and compiled with them (a closure is a
/// function of its own, without the target features: its conversions would be calls).
struct Run<H, S, const Z: bool> {
    n: usize,
    row: Option<RowForm>,
    terms: S,
    half: std::marker::PhantomData<H>,
}

impl<H: Half, S: Terms, const Z: bool> Run<H, S, Z> {
    #[inline(always)]
    fn new(n: usize, row: Option<RowForm>, terms: S) -> Self {
        Run {
            n,
            row,
            terms,
            half: std::marker::PhantomData,
        }
    }

    /// # Safety
    /// As [`run`], or [`row`] for a row.
    #[inline(always)]
    unsafe fn at(&self, dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract.
        unsafe {
            match self.row {
                Some(form) => row::<H, S>(dst, src, form, self.terms),
                None => run::<H, S, Z>(dst, src, self.n, self.terms),
            }
        }
    }
}

impl<H: Half, S: Terms, const Z: bool> Visit for Run<H, S, Z> {
    #[inline(always)]
    unsafe fn visit(&mut self, dst: *mut u8, src: *const u8) {
        // SAFETY: the caller's contract (see `SumNest`).
        unsafe { self.at(dst, src) }
    }
}

/// The [`SumNest`] instances of [`nest`]: `$name` for element type `$half`, compiled with the
/// target features `$features` (where given), for `K` terms from zero (`Z`) or not.
macro_rules! instances {
    ($($(#[$attr:meta])* $name:ident: $half:ty $(, $features:literal)?;)*) => {$(
        $(#[$attr])*
        ///
        /// # Safety
        /// As [`nest`]; the processor has the target features the instance is compiled with.
        $(#[target_feature(enable = $features)])?
        unsafe fn $name<const K: usize, const Z: bool>(
            dst: *mut u8,
            src: *const u8,
            shape: SumShape<'_>,
            loops: &[StreamLoop],
        ) {
            // SAFETY: the caller's contract.
            unsafe { nest::<$half, K, Z>(dst, src, shape, loops) }
        }
    )*};
}

#[cfg(target_arch = "x86_64")]
instances! {
    /// f16 with F16C and AVX, which `sum_nest` picks when the processor has them.
    nest_f16c: F16c, "avx,f16c";
    /// bf16 with AVX2, whose 32-byte integer instructions round eight elements at once.
    nest_bf16_avx2: Bf16, "avx2";
}

instances! {
    /// f16 without F16C.
    nest_f16: F16;
    /// bf16.
    nest_bf16: Bf16;
}

/// The element types of the sums the helper makes (`relayout_codegen::SumRuns`).
pub(crate) use relayout_codegen::HalfFloat;

/// The helper for sums of `terms` terms of `dtype`, from zero (`from_zero`) or onto the
/// destination: an instance for the processor's features and, for the counts of terms
/// Col2Im's kernels have, one for the count.
pub(crate) fn sum_nest(dtype: HalfFloat, terms: usize, from_zero: bool) -> SumNest {
    macro_rules! instance {
        ($nest:ident) => {
            match (terms, from_zero) {
                (1, true) => $nest::<1, true> as SumNest,
                (2, true) => $nest::<2, true>,
                (3, true) => $nest::<3, true>,
                (4, true) => $nest::<4, true>,
                (6, true) => $nest::<6, true>,
                (9, true) => $nest::<9, true>,
                (_, true) => $nest::<0, true>,
                (1, false) => $nest::<1, false>,
                (2, false) => $nest::<2, false>,
                (3, false) => $nest::<3, false>,
                (4, false) => $nest::<4, false>,
                (6, false) => $nest::<6, false>,
                (9, false) => $nest::<9, false>,
                (_, false) => $nest::<0, false>,
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    {
        let has = |f: &str| match f {
            "f16c" => std::arch::is_x86_feature_detected!("f16c"),
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            _ => std::arch::is_x86_feature_detected!("avx2"),
        };
        match dtype {
            HalfFloat::F16 if has("f16c") && has("avx") => return instance!(nest_f16c),
            HalfFloat::Bf16 if has("avx2") => return instance!(nest_bf16_avx2),
            _ => {}
        }
    }
    match dtype {
        HalfFloat::F16 => instance!(nest_f16),
        HalfFloat::Bf16 => instance!(nest_bf16),
    }
}

/// Zeroes the run of `bytes` bytes at every point of `loops` from `dst` with ordinary
/// stores, which leave the lines in the caches: the planes that a band's sums then add onto.
///
/// # Safety
/// Every run lies inside the destination buffer, and no other thread touches it.
pub(crate) unsafe fn zero_nest(dst: *mut u8, bytes: usize, loops: &[StreamLoop]) {
    each_run(dst, std::ptr::null(), loops, &mut |d, _| {
        // SAFETY: the caller's contract, for this point's run.
        unsafe { d.write_bytes(0, bytes) }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    /// f32 values around every rounding boundary: the branch-free conversion is `half`'s, and
    /// rounding in f32 is converting there and back.
    #[test]
    fn bf16_rounding_is_halfs() {
        // Every high half with the low halves around the rounding bit (ties, just below and
        // above, the ends), and a spread of others.
        for hi in 0..=0xffffu32 {
            for lo in [
                0,
                1,
                0x7fff,
                0x8000,
                0x8001,
                0xbfff,
                0xffff,
                hi.wrapping_mul(0x9e37) & 0xffff,
            ] {
                let f = f32::from_bits(hi << 16 | lo);
                assert_eq!(
                    Bf16::narrow(f),
                    bf16::from_f32(f).to_bits(),
                    "{hi:#x}{lo:04x}"
                );
                assert_eq!(
                    Bf16::round(f).to_bits(),
                    bf16::from_f32(f).to_f32().to_bits(),
                    "{hi:#x}{lo:04x}"
                );
            }
        }
    }
}
