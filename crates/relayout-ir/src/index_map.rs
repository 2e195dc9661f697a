//! The index-map IR: the semantic level. A kernel is a list of statements run in order over one
//! source and one destination tensor. Each statement ranges over a box of integer points (its
//! domain), optionally restricted by a guard, and for every point moves one element:
//!
//! ```text
//! copy       %dst[dst_map] = %src[src_map]     (gather: the copy ops)
//! fill       %dst[dst_map] = 0                 (padding: all-zero bytes, which is +0.0 / false,
//!                                               or a value of the dtype, `= -0.5`)
//! accumulate %dst[dst_map] += %src[src_map]    (scatter-add: Col2Im)
//! ```

use crate::{AffineExpr, Scalar, TensorType};

/// The half-open range `[lo, hi)` of one dim of a domain.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DimRange {
    /// The first value.
    pub lo: i64,
    /// One past the last value.
    pub hi: i64,
}

impl DimRange {
    /// `[lo, hi)`.
    pub fn new(lo: i64, hi: i64) -> DimRange {
        DimRange { lo, hi }
    }

    /// `[0, n)`.
    pub fn upto(n: u64) -> DimRange {
        DimRange {
            lo: 0,
            hi: n as i64,
        }
    }

    /// Number of values in the range (0 when empty).
    pub fn len(&self) -> u64 {
        if self.hi > self.lo {
            self.hi.abs_diff(self.lo)
        } else {
            0
        }
    }

    /// Whether the range has no value.
    pub fn is_empty(&self) -> bool {
        self.hi <= self.lo
    }
}

/// One conjunct of a guard: `lo <= expr < hi`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Constraint {
    /// The constrained expression over the statement's dims.
    pub expr: AffineExpr,
    /// The smallest allowed value.
    pub lo: i64,
    /// One past the largest allowed value.
    pub hi: i64,
}

/// What a statement does at each point of its domain.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Action {
    /// `%dst[dst] = %src[src]`.
    Copy {
        /// The source index, one expression per source dim.
        src: Vec<AffineExpr>,
    },
    /// `%dst[dst] = value`: all-zero bytes of the element type for [`Scalar::ZERO`].
    Fill {
        /// The element written.
        value: Scalar,
    },
    /// `%dst[dst] += %src[src]`, with the element type's addition.
    Accumulate {
        /// The source index, one expression per source dim.
        src: Vec<AffineExpr>,
    },
}

impl Action {
    /// A fill with all-zero bytes.
    pub const ZERO_FILL: Action = Action::Fill {
        value: Scalar::ZERO,
    };

    /// Whether this is a fill (of any value).
    pub fn is_fill(&self) -> bool {
        matches!(self, Action::Fill { .. })
    }

    /// The source map, for the actions that read the source.
    pub fn src_map(&self) -> Option<&[AffineExpr]> {
        match self {
            Action::Copy { src } | Action::Accumulate { src } => Some(src),
            Action::Fill { .. } => None,
        }
    }

    /// The keyword that starts the statement in the printed IR: `copy`, `fill` or
    /// `accumulate`.
    pub fn keyword(&self) -> &'static str {
        match self {
            Action::Copy { .. } => "copy",
            Action::Fill { .. } => "fill",
            Action::Accumulate { .. } => "accumulate",
        }
    }
}

/// One statement: for every point of `domain` that satisfies every constraint of `guard`,
/// apply `action` at destination index `dst`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Stmt {
    /// The range of each dim `d0, d1, ...`: the statement's points are their product.
    pub domain: Vec<DimRange>,
    /// Constraints that all must hold at a point for the action to apply there (empty: every
    /// point).
    pub guard: Vec<Constraint>,
    /// The destination index, one expression per destination dim.
    pub dst: Vec<AffineExpr>,
    /// What happens at each point.
    pub action: Action,
}

impl Stmt {
    /// Number of points in the domain (guards not counted), saturating.
    pub fn domain_size(&self) -> u64 {
        self.domain
            .iter()
            .fold(1u64, |acc, r| acc.saturating_mul(r.len()))
    }
}

/// An index-map kernel: `dst` is fully defined by running `stmts` in order.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// A name for printing, e.g. `space_to_depth`. Letters, digits and `_`.
    pub name: String,
    /// The type of the tensor the kernel reads (`%src`).
    pub src: TensorType,
    /// The type of the tensor the kernel writes (`%dst`).
    pub dst: TensorType,
    /// The statements, run in order; a later one overwrites what an earlier one wrote.
    pub stmts: Vec<Stmt>,
}

impl Kernel {
    /// The kernel of the same name and tensors that runs `stmts` (what a pass returns: it
    /// need not copy the statements it replaces).
    pub fn with_stmts(&self, stmts: Vec<Stmt>) -> Kernel {
        Kernel {
            name: self.name.clone(),
            src: self.src.clone(),
            dst: self.dst.clone(),
            stmts,
        }
    }
}
