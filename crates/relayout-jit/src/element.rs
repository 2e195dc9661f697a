//! Element types that typed runs accept.

/// A plain-old-data element type: every bit pattern of its size is a valid value, so machine
/// code may write any bytes into a slice of it. Sealed, because that property cannot be checked
/// for types outside this crate. `bool` is deliberately absent: only 0 and 1 are valid `bool`s,
/// and a kernel copies whatever bytes the source holds.
pub trait Element: sealed::Sealed + Copy + Send + Sync + 'static {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! elements {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {}
    )*};
}

elements!(
    u8,
    i8,
    u16,
    i16,
    u32,
    i32,
    u64,
    i64,
    f32,
    f64,
    half::f16,
    half::bf16
);
