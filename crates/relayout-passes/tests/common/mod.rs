//! Test helpers: the meaning-preservation check that every pass test goes through.

#![allow(dead_code)]

use relayout_ir::{interpret, interpret_loops, AnyKernel, Kernel};
use relayout_passes::{PassManager, Pipeline};

/// Deterministic pseudo-random bytes (splitmix64).
pub fn random_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(n + 8);
    while out.len() < n {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// Runs either level of IR on `src`, starting from a copy of `dst0`.
pub fn run_any(ir: &AnyKernel, src: &[u8], dst0: &[u8]) -> Vec<u8> {
    let mut dst = dst0.to_vec();
    match ir {
        AnyKernel::Index(k) => interpret(k, src, &mut dst),
        AnyKernel::Loops(k) => interpret_loops(k, src, &mut dst),
    }
    .unwrap_or_else(|e| panic!("interpreter failed: {e}\n{}", show(ir)));
    dst
}

pub fn show(ir: &AnyKernel) -> String {
    match ir {
        AnyKernel::Index(k) => k.to_string(),
        AnyKernel::Loops(k) => k.to_string(),
    }
}

/// The byte sizes of the two operands.
fn sizes(k: &Kernel) -> (usize, usize) {
    (
        k.src.size_bytes().unwrap() as usize,
        k.dst.size_bytes().unwrap() as usize,
    )
}

/// Runs `pipeline` on `k` with verification after every pass, and checks on random data that
/// the result computes the same bytes as `k`, starting from the same random destination (so
/// that a write that went missing or went astray shows). Returns the result.
pub fn check_preserves(pipeline: &str, k: &Kernel) -> AnyKernel {
    let pm = PassManager::new(Pipeline::parse(pipeline).unwrap()).verify_each(true);
    let input = AnyKernel::Index(k.clone());
    let out = pm
        .run(input.clone())
        .unwrap_or_else(|e| panic!("pipeline `{pipeline}` failed: {e}\non:\n{k}"));
    let (ns, nd) = sizes(k);
    for seed in 0..2u64 {
        let src = random_bytes(ns, seed * 2 + 1);
        let dst0 = random_bytes(nd, seed * 2 + 2);
        let want = run_any(&input, &src, &dst0);
        let got = run_any(&out, &src, &dst0);
        if want != got {
            let first = want.iter().zip(&got).position(|(a, b)| a != b).unwrap();
            panic!(
                "pipeline `{pipeline}` changed the result (first differing byte {first})\nbefore:\n{k}\nafter:\n{}",
                show(&out)
            );
        }
    }
    out
}

/// Every registered pass on its own (the index-map ones on `k`, the loop ones on `k`
/// linearized after the default index passes), and the whole default pipeline.
pub fn check_every_pass(k: &Kernel) {
    for p in relayout_passes::PASSES {
        let pipeline = match p.level {
            relayout_passes::Level::Index => p.name.to_string(),
            relayout_passes::Level::Loops => {
                let prefix = relayout_passes::default_pipeline().index_prefix();
                format!("{prefix},linearize,{}", p.name)
            }
        };
        if p.name == "linearize" {
            let prefix = relayout_passes::default_pipeline().index_prefix();
            check_preserves(&format!("{prefix},linearize"), k);
            continue;
        }
        check_preserves(&pipeline, k);
    }
    check_preserves(relayout_passes::DEFAULT_PIPELINE, k);
}
