//! Proptest strategies for both IRs, shared by the test files. Two families:
//!
//! - `any_*`: anything the types can hold (any i64 constant, any divisor, any shape), for the
//!   round-trip and no-panic properties;
//! - `small_*`: small, mostly well-formed kernels that the interpreter can run quickly, for the
//!   properties that compare the verifier with the interpreter.

// Each test file uses a different subset of the strategies.
#![allow(dead_code)]

use proptest::prelude::*;
use relayout_ir::{
    Action, AffineExpr, Constraint, DType, DimRange, Kernel, Loop, LoopAction, LoopKernel,
    LoopStmt, Stmt, TensorType,
};

pub fn dtype() -> impl Strategy<Value = DType> {
    proptest::sample::select(DType::ALL.to_vec())
}

pub fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_]{1,12}"
}

/// Mostly small values, with the extremes and arbitrary ones mixed in.
pub fn any_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -20i64..20,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => any::<i64>(),
    ]
}

pub fn any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..20, 1 => Just(u64::MAX), 1 => any::<u64>()]
}

pub fn any_tensor() -> impl Strategy<Value = TensorType> {
    (dtype(), prop::collection::vec(any_u64(), 0..5)).prop_map(|(d, s)| TensorType::new(d, s))
}

/// Any expression over `ndims` dims (just constants when there are none), up to depth ~5.
pub fn any_expr(ndims: usize) -> BoxedStrategy<AffineExpr> {
    expr_with(ndims, any_i64().boxed(), any_i64().boxed())
}

fn expr_with(
    ndims: usize,
    constant: BoxedStrategy<i64>,
    factor: BoxedStrategy<i64>,
) -> BoxedStrategy<AffineExpr> {
    let leaf = if ndims == 0 {
        constant.prop_map(AffineExpr::Const).boxed()
    } else {
        prop_oneof![
            2 => (0..ndims).prop_map(AffineExpr::Dim),
            1 => constant.prop_map(AffineExpr::Const),
        ]
        .boxed()
    };
    leaf.prop_recursive(5, 32, 2, move |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a + b),
            (inner.clone(), factor.clone()).prop_map(|(a, k)| a * k),
            (inner.clone(), factor.clone()).prop_map(|(a, k)| a.floor_div(k)),
            (inner, factor.clone()).prop_map(|(a, k)| a.modulo(k)),
        ]
    })
    .boxed()
}

/// An action from a kind (0 copy, 1 fill, 2 accumulate) and a source map. `Action` has no
/// `Debug`, which proptest needs of every generated value, so kinds are generated instead.
fn action(kind: u8, src: Vec<AffineExpr>) -> Action {
    match kind {
        0 => Action::Copy { src },
        1 => Action::ZERO_FILL,
        _ => Action::Accumulate { src },
    }
}

fn any_stmt(src_rank: usize, dst_rank: usize) -> impl Strategy<Value = Stmt> {
    (0usize..5).prop_flat_map(move |ndims| {
        let range = (any_i64(), any_i64()).prop_map(|(lo, hi)| DimRange { lo, hi });
        let constraint = (any_expr(ndims), any_i64(), any_i64())
            .prop_map(|(expr, lo, hi)| Constraint { expr, lo, hi });
        (
            prop::collection::vec(range, ndims),
            prop::collection::vec(constraint, 0..3),
            prop::collection::vec(any_expr(ndims), dst_rank),
            0u8..3,
            prop::collection::vec(any_expr(ndims), src_rank),
        )
            .prop_map(|(domain, guard, dst, kind, src)| Stmt {
                domain,
                guard,
                dst,
                action: action(kind, src),
            })
    })
}

/// Any index-map kernel whose maps have the ranks of its tensors (only so that the maps look
/// plausible: the parser does not care).
pub fn any_kernel() -> impl Strategy<Value = Kernel> {
    (name(), any_tensor(), any_tensor()).prop_flat_map(|(name, src, dst)| {
        let stmts = prop::collection::vec(any_stmt(src.rank(), dst.rank()), 0..4);
        stmts.prop_map(move |stmts| Kernel {
            name: name.clone(),
            src: src.clone(),
            dst: dst.clone(),
            stmts,
        })
    })
}

fn loop_action() -> impl Strategy<Value = LoopAction> {
    prop_oneof![
        Just(LoopAction::Copy),
        Just(LoopAction::ZERO_FILL),
        Just(LoopAction::Accumulate)
    ]
}

/// A loop statement from the given parts; a fill gets source offset and strides 0, which is
/// all the printer can show for it.
fn loop_stmt(
    action: LoopAction,
    bytes: u64,
    dst_offset: i64,
    src_offset: i64,
    loops: Vec<Loop>,
) -> LoopStmt {
    let fill = action.is_fill();
    LoopStmt {
        action,
        bytes,
        src_offset: if fill { 0 } else { src_offset },
        dst_offset,
        loops: loops
            .into_iter()
            .map(|l| Loop {
                src_stride: if fill { 0 } else { l.src_stride },
                ..l
            })
            .collect(),
        window: None,
    }
}

fn any_loop() -> impl Strategy<Value = Loop> {
    (any_u64(), any_i64(), any_i64()).prop_map(|(extent, src_stride, dst_stride)| Loop {
        extent,
        src_stride,
        dst_stride,
    })
}

pub fn any_loop_kernel() -> impl Strategy<Value = LoopKernel> {
    let stmt = (
        loop_action(),
        any_u64(),
        any_i64(),
        any_i64(),
        prop::collection::vec(any_loop(), 0..5),
    )
        .prop_map(|(a, b, d, s, l)| loop_stmt(a, b, d, s, l));
    (
        name(),
        any_tensor(),
        any_tensor(),
        prop::collection::vec(stmt, 0..4),
    )
        .prop_map(|(name, src, dst, stmts)| LoopKernel {
            bands: Vec::new(),
            name,
            src,
            dst,
            stmts,
        })
}

// ---------------------------------------------------------------------------------------------
// Small kernels the interpreter can run.

fn small_shape() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::vec(1u64..5, 0..4)
}

fn small_stmt(src_rank: usize, dst_rank: usize) -> impl Strategy<Value = Stmt> {
    (0usize..4).prop_flat_map(move |ndims| {
        let expr = || expr_with(ndims, (-4i64..6).boxed(), (1i64..4).boxed());
        let range = (-2i64..3, 0i64..5).prop_map(|(lo, len)| DimRange { lo, hi: lo + len });
        let constraint = (expr(), -2i64..3, 0i64..5).prop_map(|(expr, lo, len)| Constraint {
            expr,
            lo,
            hi: lo + len,
        });
        (
            prop::collection::vec(range, ndims),
            prop::collection::vec(constraint, 0..3),
            prop::collection::vec(expr(), dst_rank),
            0u8..3,
            prop::collection::vec(expr(), src_rank),
        )
            .prop_map(|(domain, guard, dst, kind, src)| Stmt {
                domain,
                guard,
                dst,
                action: action(kind, src),
            })
    })
}

/// Small index-map kernels with positive divisors, declared dims and matching ranks: the
/// verifier decides them on bounds alone.
pub fn small_kernel() -> impl Strategy<Value = Kernel> {
    (dtype(), small_shape(), small_shape()).prop_flat_map(|(dtype, src, dst)| {
        let stmts = prop::collection::vec(small_stmt(src.len(), dst.len()), 1..3);
        stmts.prop_map(move |stmts| Kernel {
            name: "small".into(),
            src: TensorType::new(dtype, src.clone()),
            dst: TensorType::new(dtype, dst.clone()),
            stmts,
        })
    })
}

/// Small loop kernels: runs of one to three elements, offsets and strides that sometimes leave
/// the tensors, extents that are sometimes 0.
pub fn small_loop_kernel() -> impl Strategy<Value = LoopKernel> {
    (dtype(), small_shape(), small_shape()).prop_flat_map(|(dtype, src, dst)| {
        let esize = dtype.size();
        let lp = (0u64..4, -3i64..4, -3i64..4).prop_map(move |(extent, s, d)| Loop {
            extent,
            src_stride: s * esize as i64,
            dst_stride: d * esize as i64,
        });
        let stmt = (
            loop_action(),
            1u64..4,
            -2i64..6,
            -2i64..6,
            prop::collection::vec(lp, 0..3),
        )
            .prop_map(move |(a, n, d, s, l)| {
                loop_stmt(a, n * esize, d * esize as i64, s * esize as i64, l)
            });
        prop::collection::vec(stmt, 1..3).prop_map(move |stmts| LoopKernel {
            bands: Vec::new(),
            name: "small".into(),
            src: TensorType::new(dtype, src.clone()),
            dst: TensorType::new(dtype, dst.clone()),
            stmts,
        })
    })
}
