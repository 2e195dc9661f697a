//! Property test: on random small kernels (random affine maps with `floordiv` and `mod`,
//! guards, colliding writes, empty and offset ranges, fills, copies and accumulates), every
//! index-map pass and the whole default pipeline succeed and preserve the interpreter's
//! output.

mod common;

use common::check_preserves;
use proptest::prelude::*;
use relayout_ir::{
    verify_kernel, Action, AffineExpr, Constraint, DType, DimRange, Kernel, Stmt, TensorType,
};
use relayout_passes::{Level, DEFAULT_PIPELINE, PASSES};

/// A small deterministic generator, so that a failing seed reproduces the kernel.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A random affine expression over `rank` dims, possibly with `floordiv` and `mod`.
fn expr(g: &mut Gen, rank: usize, depth: u32) -> AffineExpr {
    let mut e = AffineExpr::Const(g.range(-2, 2));
    if rank > 0 {
        for _ in 0..g.range(1, 2) {
            let d = AffineExpr::Dim(g.range(0, rank as i64 - 1) as usize);
            let c = [1, 1, 2, 3, -1, -2, 4][g.range(0, 6) as usize];
            e = if c == 1 { d + e } else { d * c + e };
        }
    }
    if depth > 0 && g.chance(60) {
        let k = g.range(2, 6);
        let inner = expr(g, rank, depth - 1);
        let inner = if g.chance(50) {
            inner * g.range(1, 4)
        } else {
            inner
        };
        let atom = if g.chance(50) {
            inner.floor_div(k)
        } else {
            inner.modulo(k)
        };
        e = if g.chance(30) {
            atom
        } else {
            atom * g.range(1, 3) + e
        };
    }
    e
}

/// An index into a dim of size `n`: in range by a `mod`, or by a guard on the same expression.
fn index(g: &mut Gen, rank: usize, n: u64, guard: &mut Vec<Constraint>) -> AffineExpr {
    let e = expr(g, rank, 2);
    if g.chance(50) {
        e.modulo(n as i64)
    } else {
        guard.push(Constraint {
            expr: e.clone(),
            lo: 0,
            hi: n as i64,
        });
        e
    }
}

fn shape(g: &mut Gen) -> Vec<u64> {
    (0..g.range(1, 3)).map(|_| g.range(1, 6) as u64).collect()
}

/// The box `[0, n)` per dim of a shape, or a random box.
fn domain(g: &mut Gen, like: Option<&[u64]>) -> Vec<DimRange> {
    match like {
        Some(shape) => shape.iter().map(|&n| DimRange::upto(n)).collect(),
        None => (0..g.range(0, 3))
            .map(|_| {
                let lo = g.range(-2, 2);
                let len = if g.chance(5) { 0 } else { g.range(1, 6) };
                DimRange::new(lo, lo + len)
            })
            .collect(),
    }
}

fn identity(rank: usize) -> Vec<AffineExpr> {
    (0..rank).map(AffineExpr::Dim).collect()
}

/// A gather copy (domain = destination), a scatter accumulate (domain = source), or a random
/// statement.
fn stmt(g: &mut Gen, src: &[u64], dst: &[u64]) -> Stmt {
    let kind = g.range(0, 3);
    let domain = domain(
        g,
        match kind {
            0 => Some(dst),
            1 => Some(src),
            _ => None,
        },
    );
    let rank = domain.len();
    let mut guard = Vec::new();
    let (dst_map, src_map) = match kind {
        0 => (
            identity(rank),
            src.iter().map(|&n| index(g, rank, n, &mut guard)).collect(),
        ),
        1 => (
            dst.iter().map(|&n| index(g, rank, n, &mut guard)).collect(),
            identity(rank),
        ),
        _ => (
            dst.iter().map(|&n| index(g, rank, n, &mut guard)).collect(),
            src.iter()
                .map(|&n| index(g, rank, n, &mut guard))
                .collect::<Vec<_>>(),
        ),
    };
    let action = match (kind, g.range(0, 2)) {
        (0, _) => Action::Copy { src: src_map },
        (1, _) | (_, 2) => Action::Accumulate { src: src_map },
        (_, 0) => Action::ZERO_FILL,
        _ => Action::Copy { src: src_map },
    };
    Stmt {
        domain,
        guard,
        dst: dst_map,
        action,
    }
}

fn kernel(seed: u64) -> Kernel {
    let mut g = Gen(seed);
    let dtype = [DType::U8, DType::I16, DType::I32, DType::I64][g.range(0, 3) as usize];
    let (src, dst) = (shape(&mut g), shape(&mut g));
    let mut stmts = Vec::new();
    if g.chance(40) {
        stmts.push(Stmt {
            domain: domain(&mut g, Some(&dst)),
            guard: Vec::new(),
            dst: identity(dst.len()),
            action: Action::ZERO_FILL,
        });
    }
    for _ in 0..g.range(1, 3) {
        stmts.push(stmt(&mut g, &src, &dst));
    }
    Kernel {
        name: "random".into(),
        src: TensorType::new(dtype, src),
        dst: TensorType::new(dtype, dst),
        stmts,
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3000,
        // The seed reproduces a failure, and the failure prints the kernel.
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_pass_preserves_random_kernels(seed in any::<u64>()) {
        let k = kernel(seed);
        prop_assume!(verify_kernel(&k).is_ok());
        for p in PASSES.iter().filter(|p| p.level == Level::Index && p.name != "linearize") {
            check_preserves(p.name, &k);
        }
        check_preserves(DEFAULT_PIPELINE, &k);
    }
}

/// The generator makes kernels the verifier accepts, most of the time.
#[test]
fn most_random_kernels_verify() {
    let ok = (0..200)
        .filter(|&s| verify_kernel(&kernel(s)).is_ok())
        .count();
    assert!(ok > 100, "only {ok} of 200 random kernels verify");
}

/// Running canonicalize twice gives what running it once gives.
#[test]
fn canonicalize_is_idempotent() {
    use relayout_ir::AnyKernel;
    use relayout_passes::{PassManager, Pipeline};
    let pm = PassManager::new(Pipeline::parse("canonicalize").unwrap());
    for s in 0..1000 {
        let k = kernel(s);
        if verify_kernel(&k).is_err() {
            continue;
        }
        let once = pm.run(AnyKernel::Index(k)).unwrap();
        let twice = pm.run(once.clone()).unwrap();
        assert_eq!(once, twice, "seed {s}");
    }
}
