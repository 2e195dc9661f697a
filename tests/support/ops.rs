//! Short constructors of ops and types, and deterministic random data, for the tests that
//! build many small ops by hand.

#![allow(dead_code)] // Each test file uses a different subset.

use relayout::ir::{DType, TensorType};
use relayout::{DataFormat, DepthToSpaceMode, Op};

/// A xorshift generator: deterministic random numbers without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub fn t(dtype: DType, shape: &[u64]) -> TensorType {
    TensorType::new(dtype, shape.to_vec())
}

pub fn d2s(block: i64, format: DataFormat, mode: DepthToSpaceMode) -> Op {
    Op::DepthToSpace {
        block_size: block,
        data_format: format,
        mode,
    }
}

pub fn s2d(block: i64, format: DataFormat) -> Op {
    Op::SpaceToDepth {
        block_size: block,
        data_format: format,
    }
}

pub fn s2b(block: &[i64], pads: &[[i64; 2]]) -> Op {
    Op::SpaceToBatchNd {
        block_shape: block.to_vec(),
        paddings: pads.iter().map(|p| p.to_vec()).collect(),
    }
}

pub fn b2s(block: &[i64], crops: &[[i64; 2]]) -> Op {
    Op::BatchToSpaceNd {
        block_shape: block.to_vec(),
        crops: crops.iter().map(|p| p.to_vec()).collect(),
    }
}
