//! [`Input`]: reads values from fuzzer bytes, leaning towards the values that break size
//! arithmetic.

/// Reads values from fuzzer bytes, front to back; zeros once they run out.
pub struct Input<'a> {
    data: &'a [u8],
}

/// Attribute values that sit on the edges of 32- and 64-bit arithmetic.
pub const EDGE_I64: [i64; 22] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    4,
    8,
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    i32::MAX as i64,
    i32::MIN as i64,
    u32::MAX as i64,
    1 << 31,
    1 << 32,
    (1 << 32) + 1,
    1 << 53,
    1 << 62,
    -(1 << 62),
    3_037_000_500, // just above sqrt(i64::MAX): its square overflows
];

/// Shape dims on the edges of the size arithmetic.
pub const EDGE_U64: [u64; 16] = [
    0,
    1,
    2,
    3,
    4,
    8,
    1 << 31,
    1 << 32,
    1 << 62,
    i64::MAX as u64,
    i64::MAX as u64 + 1,
    u64::MAX,
    u64::MAX - 1,
    u32::MAX as u64,
    3_037_000_500,
    (1 << 61) + 1,
];

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn u64(&mut self) -> u64 {
        let mut bytes = [0u8; 8];
        for b in &mut bytes {
            *b = self.byte();
        }
        u64::from_le_bytes(bytes)
    }

    /// A value in `0..n` (0 when `n` is 0 or 1). One byte is read for small `n`, so that short
    /// inputs still reach every choice.
    pub fn below(&mut self, n: u64) -> u64 {
        match n {
            0 | 1 => 0,
            2..=256 => u64::from(self.byte()) % n,
            _ => self.u64() % n,
        }
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        debug_assert!(lo <= hi);
        lo + self.below(hi.abs_diff(lo) + 1) as i64
    }

    /// A value in `lo..=hi`.
    pub fn urange(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize].clone()
    }

    /// Shuffles `items` in place (Fisher-Yates, one draw per position from the back).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i as u64 + 1) as usize);
        }
    }

    pub fn flag(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    /// True with probability about `1 / n`.
    pub fn one_in(&mut self, n: u8) -> bool {
        self.byte() % n == 0
    }

    /// Any `i64`, mostly small or on an edge.
    pub fn wild_i64(&mut self) -> i64 {
        match self.byte() % 4 {
            0 => self.pick(&EDGE_I64),
            1 => self.range(-8, 16),
            2 => self.u64() as i64,
            _ => self.range(0, 6),
        }
    }

    /// Any `u64` dim, mostly small or on an edge.
    pub fn wild_dim(&mut self) -> u64 {
        match self.byte() % 4 {
            0 => self.pick(&EDGE_U64),
            1 => self.u64(),
            _ => self.urange(0, 8),
        }
    }

    /// A short string: mostly a name the ops know, sometimes arbitrary characters.
    pub fn string(&mut self) -> String {
        const KNOWN: [&str; 9] = [
            "NHWC",
            "NCHW",
            "NCHW_VECT_C",
            "DCR",
            "CRD",
            "",
            "nhwc",
            "NCHW_VECT_C\0",
            "ÑHWC",
        ];
        if self.byte() % 4 != 0 {
            return self.pick(&KNOWN).to_string();
        }
        let len = self.below(12) as usize;
        (0..len)
            .map(|_| char::from_u32(u32::from(self.byte()) * 7 + 1).unwrap_or('?'))
            .collect()
    }
}
