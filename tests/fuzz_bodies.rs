//! The fuzz bodies of `fuzz/` (shared through tests/support/fuzz_bodies.rs), run briefly under
//! proptest in every `cargo test`, plus the size-limit cases that fuzzers find only by luck:
//! overflowing element counts and byte sizes, absurd attributes, and zero-sized dims. Every
//! one must end in a typed error or a correct result, never a panic.
//!
//! For a long run, multiply every case count with `RELAYOUT_FUZZ_SCALE` (for example
//! `RELAYOUT_FUZZ_SCALE=100 cargo test --release --test fuzz_bodies`).

#![cfg(target_os = "linux")]

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::{known_attributes, EDGE_I64, EDGE_U64, FORMATS, IR_WORDS, MODES, OP_NAMES};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};
use relayout::ir::{DType, TensorType};
use relayout::{compile, AttrValue, Attrs, DataFormat, DepthToSpaceMode, Op};

/// `default` cases, times `RELAYOUT_FUZZ_SCALE` when set.
fn config(default: u32) -> Config {
    let scale = std::env::var("RELAYOUT_FUZZ_SCALE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or(1);
    let base = Config::default();
    Config {
        cases: default.saturating_mul(scale),
        // A failure is reported with its minimal input; no regression files are written into
        // the source tree.
        failure_persistence: None,
        // The same cases in every plain `cargo test`, so that a failure in CI is reproducible
        // and a rare bug cannot make it flaky; a scaled run explores with a fresh seed (or
        // PROPTEST_RNG_SEED).
        rng_seed: match std::env::var("RELAYOUT_FUZZ_SCALE") {
            Ok(_) => base.rng_seed,
            Err(_) => RngSeed::Fixed(0x5afe_7e57),
        },
        ..base
    }
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

// ---------------------------------------------------------------------------------------------
// Strategies for structured inputs

fn edge_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => -4i64..8,
        2 => prop::sample::select(EDGE_I64.to_vec()),
        1 => any::<i64>(),
    ]
}

fn edge_dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 0u64..6,
        1 => prop::sample::select(EDGE_U64.to_vec()),
        1 => any::<u64>(),
    ]
}

/// Any attribute value: edge integers, the known strings and any string, and lists of those
/// nested up to three deep, of any length.
fn attr_value() -> impl Strategy<Value = AttrValue> {
    let strings: Vec<String> = FORMATS
        .iter()
        .chain(&MODES)
        .map(|s| s.to_string())
        .collect();
    let leaf = prop_oneof![
        4 => edge_i64().prop_map(AttrValue::Int),
        1 => prop::sample::select(strings).prop_map(AttrValue::Str),
        1 => any::<String>().prop_map(AttrValue::Str),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop::collection::vec(inner, 0..6).prop_map(AttrValue::List)
    })
}

/// An op name (mostly a real one) with attributes drawn from its own attribute names (so the
/// values, not the names, are what is usually wrong) and sometimes from all names.
fn op_description() -> impl Strategy<Value = (String, Attrs, TensorType)> {
    let names: Vec<&'static str> = OP_NAMES
        .iter()
        .copied()
        .chain(["", "spacetodepth", "Col2im"])
        .collect();
    (
        prop::sample::select(names),
        any::<bool>(),
        prop::sample::select(DType::ALL.to_vec()),
        prop::collection::vec(edge_dim(), 0..7),
    )
        .prop_flat_map(|(name, own_names, dtype, shape)| {
            let keys: Vec<&'static str> = if own_names {
                known_attributes(name).to_vec()
            } else {
                bodies::ATTR_NAMES.to_vec()
            };
            let attrs = prop::collection::btree_map(
                prop::sample::select(keys).prop_map(String::from),
                attr_value(),
                0..6,
            );
            (
                Just(name.to_string()),
                attrs,
                Just(TensorType::new(dtype, shape)),
            )
        })
}

/// Text made of IR syntax in random order: gets further into the parser than random
/// characters.
fn token_soup() -> impl Strategy<Value = String> {
    let mut words: Vec<&'static str> = IR_WORDS.to_vec();
    words.extend([
        "(", ")", "[", "]", "{", "}", ",", ":", "=", "+=", "->", "<=", "<", "+", "*", "0", "1",
        "4", "\n",
    ]);
    prop::collection::vec(prop::sample::select(words), 0..80).prop_map(|w| w.join(" "))
}

// ---------------------------------------------------------------------------------------------
// The bodies under proptest. Budgets: about 5,000 cases, a few seconds in total.

proptest! {
    #![proptest_config(config(1000))]

    #[test]
    fn parse_ir_any_string(text in any::<String>()) {
        bodies::parse_ir(&text);
    }

    #[test]
    fn parse_ir_token_soup(text in token_soup()) {
        bodies::parse_ir(&text);
    }

    #[test]
    fn op_validation_structured((name, attrs, input) in op_description()) {
        bodies::op_validation(&name, &attrs, &input);
    }

    #[test]
    fn op_validation_from_bytes(data in bytes(160)) {
        bodies::op_validation_bytes(&data);
    }
}

proptest! {
    #![proptest_config(config(500))]

    #[test]
    fn parse_ir_any_bytes(data in bytes(300)) {
        bodies::parse_ir_bytes(&data);
    }

    #[test]
    fn parse_ir_mutated_kernels(data in bytes(64)) {
        bodies::parse_mutated_bytes(&data);
    }
}

proptest! {
    #![proptest_config(config(200))]

    #[test]
    fn differential_small_valid_ops(data in bytes(48)) {
        bodies::differential_bytes(&data);
    }

    #[test]
    fn differential_chains_of_small_ops(data in bytes(96)) {
        bodies::chain_differential_bytes(&data);
    }

    #[test]
    fn tight_loop_kernels_in_guarded_buffers(data in bytes(96)) {
        bodies::tight_loops_bytes(&data);
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn loop_passes_keep_random_loop_kernels(data in bytes(128)) {
        bodies::loop_passes_bytes(&data);
    }
}

/// The decoders reach every op and both outcomes; otherwise the bodies above test little.
#[test]
fn decoders_reach_every_op() {
    let mut names = std::collections::BTreeSet::new();
    let (mut valid, mut invalid) = (0, 0);
    for seed in 0..2000u64 {
        let data = bodies::random_bytes(64, seed);
        let (op, input) = bodies::small_valid_op(&mut bodies::Input::new(&data));
        assert!(
            op.output_type(&input).is_ok(),
            "{op:?} on {input} is invalid"
        );
        names.insert(op.name());
        let (name, attrs, input) =
            bodies::decode_op_description(&mut bodies::Input::new(&data[1..]));
        match Op::from_attrs(&name, &attrs).map(|op| op.output_type(&input)) {
            Ok(Ok(_)) => valid += 1,
            _ => invalid += 1,
        }
    }
    assert_eq!(names.len(), 13, "{names:?}");
    assert!(
        valid > 100 && invalid > 100,
        "{valid} valid, {invalid} invalid"
    );
}

// ---------------------------------------------------------------------------------------------
// Size limits: overflow, absurd attributes, zero-sized dims

/// What compiling an op must give.
enum Want {
    /// A typed error of one of these categories.
    Error(&'static [&'static str]),
    /// A kernel; run (when small enough) it must agree with the reference.
    Valid,
    /// A kernel with an empty output.
    Empty,
}

fn s2d(block_size: i64) -> Op {
    Op::SpaceToDepth {
        block_size,
        data_format: DataFormat::Nhwc,
    }
}

fn d2s(block_size: i64) -> Op {
    Op::DepthToSpace {
        block_size,
        data_format: DataFormat::Nhwc,
        mode: DepthToSpaceMode::Dcr,
    }
}

fn s2b(block_shape: &[i64], paddings: &[[i64; 2]]) -> Op {
    Op::SpaceToBatchNd {
        block_shape: block_shape.to_vec(),
        paddings: paddings.iter().map(|p| p.to_vec()).collect(),
    }
}

fn b2s(block_shape: &[i64], crops: &[[i64; 2]]) -> Op {
    Op::BatchToSpaceNd {
        block_shape: block_shape.to_vec(),
        crops: crops.iter().map(|p| p.to_vec()).collect(),
    }
}

fn col2im(image: &[i64], block: &[i64], dilations: &[i64], pads: &[i64], strides: &[i64]) -> Op {
    Op::Col2Im {
        image_shape: image.to_vec(),
        block_shape: block.to_vec(),
        dilations: dilations.to_vec(),
        pads: pads.to_vec(),
        strides: strides.to_vec(),
    }
}

fn t(dtype: DType, shape: &[u64]) -> TensorType {
    TensorType::new(dtype, shape.to_vec())
}

const MAX: u64 = i64::MAX as u64;
const OVERFLOW: &[&str] = &["size_overflow"];

fn limit_cases() -> Vec<(&'static str, Op, TensorType, Want)> {
    use DType::*;
    use Want::*;
    vec![
        // Element counts and byte sizes that do not fit.
        (
            "batch u64::MAX",
            s2d(2),
            t(F32, &[u64::MAX, 2, 2, 1]),
            Error(OVERFLOW),
        ),
        (
            "a dim of 2^63",
            s2d(2),
            t(U8, &[1, 1 << 63, 2, 1]),
            Error(OVERFLOW),
        ),
        (
            "element count 2^64",
            s2d(2),
            t(U8, &[1 << 21, 1 << 21, 1 << 20, 4]),
            Error(OVERFLOW),
        ),
        (
            "byte size 2^64",
            s2d(2),
            t(C128, &[1 << 20, 1 << 20, 1 << 18, 4]),
            Error(OVERFLOW),
        ),
        (
            "byte size 2^63",
            s2d(2),
            t(F64, &[1, 1 << 30, 1 << 30, 1]),
            Error(OVERFLOW),
        ),
        // Huge but valid: 2^62 bytes. Compiling needs no memory of that size.
        (
            "2^62 bytes",
            s2d(2),
            t(U8, &[1, 1 << 31, 1 << 31, 1]),
            Valid,
        ),
        (
            "2^62 bytes, d2s",
            d2s(2),
            t(U8, &[1, 1 << 30, 1 << 30, 4]),
            Valid,
        ),
        // Absurd block sizes.
        (
            "block i64::MAX",
            s2d(i64::MAX),
            t(F32, &[1, 4, 4, 1]),
            Error(&["not_divisible"]),
        ),
        (
            "block i64::MIN",
            s2d(i64::MIN),
            t(F32, &[1, 4, 4, 1]),
            Error(&["block_size_too_small"]),
        ),
        (
            "block 0",
            s2d(0),
            t(F32, &[1, 4, 4, 1]),
            Error(&["block_size_too_small"]),
        ),
        (
            "block -1",
            d2s(-1),
            t(F32, &[1, 1, 1, 4]),
            Error(&["block_size_too_small"]),
        ),
        // b * b overflows i64.
        (
            "d2s block sqrt(i64::MAX)+",
            d2s(3_037_000_500),
            t(F32, &[1, 1, 1, 4]),
            Error(&["size_overflow", "not_divisible"]),
        ),
        (
            "s2d block 2^32 on a 2^32 image",
            s2d(1 << 32),
            t(U8, &[1, 1 << 32, 1 << 32, 1]),
            Error(OVERFLOW),
        ),
        // Paddings and crops at the edges of i64.
        (
            "padding i64::MAX",
            s2b(&[1], &[[MAX as i64, MAX as i64]]),
            t(F32, &[1, 1, 1]),
            Error(OVERFLOW),
        ),
        (
            "padding i64::MIN",
            s2b(&[1], &[[i64::MIN, 0]]),
            t(F32, &[1, 1, 1]),
            Error(&["bad_paddings"]),
        ),
        (
            "block i64::MAX over an empty dim",
            s2b(&[i64::MAX], &[[0, 0]]),
            t(F32, &[1, 0, 1]),
            Empty,
        ),
        (
            "output batch 2^64",
            s2b(&[1 << 32, 1 << 32], &[[0, 0], [0, 0]]),
            t(F32, &[1, 0, 0, 1]),
            Error(OVERFLOW),
        ),
        (
            "block_shape i64::MIN",
            s2b(&[i64::MIN], &[[0, 0]]),
            t(F32, &[1, 2, 1]),
            Error(&["block_size_too_small", "bad_attribute", "not_divisible"]),
        ),
        (
            "crops i64::MAX",
            b2s(&[2], &[[MAX as i64, MAX as i64]]),
            t(F32, &[2, 1, 1]),
            Error(&["crops_too_large", "size_overflow"]),
        ),
        (
            "crops i64::MIN",
            b2s(&[2], &[[i64::MIN, 0]]),
            t(F32, &[2, 1, 1]),
            Error(&["bad_crops"]),
        ),
        (
            "b2s block i64::MAX",
            b2s(&[i64::MAX], &[[0, 0]]),
            t(F32, &[2, 1, 1]),
            Error(&["not_divisible"]),
        ),
        // Col2Im: image sizes, dilations and strides at the edges.
        (
            "col2im image i64::MAX",
            col2im(
                &[i64::MAX, i64::MAX],
                &[1, 1],
                &[1, 1],
                &[0, 0, 0, 0],
                &[1, 1],
            ),
            t(F32, &[1, 1, 1]),
            Error(&["bad_col2im_L", "size_overflow"]),
        ),
        (
            "col2im dilation i64::MAX",
            col2im(&[4, 4], &[2, 1], &[i64::MAX, 1], &[0, 0, 0, 0], &[1, 1]),
            t(F32, &[1, 2, 4]),
            Error(&["bad_col2im_attrs", "size_overflow"]),
        ),
        (
            "col2im pads i64::MAX",
            col2im(
                &[4, 4],
                &[1, 1],
                &[1, 1],
                &[i64::MAX, 0, i64::MAX, 0],
                &[1, 1],
            ),
            t(F32, &[1, 1, 16]),
            Error(&["bad_col2im_L", "size_overflow", "bad_col2im_attrs"]),
        ),
        (
            "col2im stride 0",
            col2im(&[4, 4], &[1, 1], &[1, 1], &[0, 0, 0, 0], &[0, 1]),
            t(F32, &[1, 1, 16]),
            Error(&["bad_col2im_attrs"]),
        ),
        (
            "col2im stride i64::MIN",
            col2im(&[4, 4], &[1, 1], &[1, 1], &[0, 0, 0, 0], &[i64::MIN, 1]),
            t(F32, &[1, 1, 16]),
            Error(&["bad_col2im_attrs"]),
        ),
        (
            "col2im image 2^62 x 2^62",
            col2im(
                &[1 << 62, 1 << 62],
                &[1, 1],
                &[1, 1],
                &[0, 0, 0, 0],
                &[1, 1],
            ),
            t(U8, &[1, 1, 1]),
            Error(&["bad_col2im_L", "size_overflow"]),
        ),
        // Zero-sized dims: valid, with an empty output or (padding) an output of zeros.
        ("s2d empty batch", s2d(2), t(F32, &[0, 4, 4, 3]), Empty),
        ("s2d empty image", s2d(2), t(F32, &[1, 0, 0, 3]), Empty),
        (
            "s2d zero dim beside u64::MAX",
            s2d(2),
            t(U8, &[0, 2, 2, u64::MAX]),
            Error(OVERFLOW),
        ),
        ("d2s empty channels", d2s(2), t(F32, &[1, 2, 2, 0]), Empty),
        (
            "s2b of nothing but padding",
            s2b(&[2], &[[1, 1]]),
            t(F32, &[1, 0, 2]),
            Valid,
        ),
        (
            "s2b empty batch",
            s2b(&[2, 2], &[[0, 0], [0, 0]]),
            t(F32, &[0, 2, 2, 1]),
            Empty,
        ),
        (
            "b2s empty batch",
            b2s(&[2], &[[0, 0]]),
            t(F32, &[0, 2, 1]),
            Empty,
        ),
        (
            "b2s cropped to nothing",
            b2s(&[2], &[[1, 1]]),
            t(I32, &[2, 1, 3]),
            Empty,
        ),
        (
            "col2im empty batch",
            col2im(&[3, 3], &[2, 2], &[1, 1], &[0, 0, 0, 0], &[1, 1]),
            t(I32, &[0, 4, 4]),
            Empty,
        ),
        (
            "col2im no channels",
            col2im(&[3, 3], &[2, 2], &[1, 1], &[0, 0, 0, 0], &[1, 1]),
            t(I32, &[1, 0, 4]),
            Empty,
        ),
        // Wrong ranks.
        ("s2d rank 0", s2d(2), t(F32, &[]), Error(&["bad_rank"])),
        (
            "s2b rank 1",
            s2b(&[2], &[[0, 0]]),
            t(F32, &[4]),
            Error(&["bad_rank"]),
        ),
        (
            "col2im rank 5",
            col2im(&[3, 3], &[2, 2], &[1, 1], &[0, 0, 0, 0], &[1, 1]),
            t(I32, &[1, 4, 4, 1, 1]),
            Error(&["bad_rank"]),
        ),
    ]
}

#[test]
fn size_limits_are_typed_errors_or_correct_results() {
    let mut failures = Vec::new();
    for (what, op, input, want) in limit_cases() {
        let result = std::panic::catch_unwind(|| compile(&op, &input));
        let outcome = match result {
            Err(_) => {
                failures.push(format!("{what}: compile panicked on {op:?} for {input}"));
                continue;
            }
            Ok(outcome) => outcome,
        };
        match (want, outcome) {
            (Want::Error(categories), Err(e)) => {
                if !e.category().is_some_and(|c| categories.contains(&c)) {
                    failures.push(format!("{what}: expected {categories:?}, got: {e}"));
                }
            }
            (Want::Error(categories), Ok(k)) => failures.push(format!(
                "{what}: expected {categories:?}, but it compiled to {}",
                k.output_type()
            )),
            (Want::Valid | Want::Empty, Err(e)) => {
                failures.push(format!("{what}: expected a kernel, got: {e}"))
            }
            (Want::Empty, Ok(k)) => {
                if k.output_type().num_elements() != Ok(0) {
                    failures.push(format!("{what}: output {} is not empty", k.output_type()));
                } else if let Some(why) = run_against_reference(&op, &input, &k) {
                    failures.push(format!("{what}: {why}"));
                }
            }
            (Want::Valid, Ok(k)) => {
                if let Some(why) = run_against_reference(&op, &input, &k) {
                    failures.push(format!("{what}: {why}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs a compiled op on random data when both tensors are small, and compares with the
/// reference; `Some(why)` when they differ.
fn run_against_reference(op: &Op, input: &TensorType, k: &relayout::CompiledOp) -> Option<String> {
    let small = |t: &TensorType| t.size_bytes().is_ok_and(|n| n <= 1 << 20);
    if !small(input) || !small(k.output_type()) {
        return None;
    }
    let src = bodies::random_bytes(bodies::byte_len(input), 3);
    let want = match relayout_reference::reference(op, input, &src) {
        Ok(want) => want,
        Err(e) => return Some(format!("the reference refused it: {e}")),
    };
    let mut got = bodies::random_bytes(bodies::byte_len(k.output_type()), 4);
    if let Err(e) = k.run(&src, &mut got) {
        return Some(format!("run failed: {e}"));
    }
    (got != want).then(|| format!("{op:?} on {input}: JIT differs from the reference"))
}

/// An empty tensor may have other dims whose product does not fit in `i64`: its size is 0, so
/// validation accepts it, and the op's output is empty. Compiling must give an empty kernel
/// (no statement can address a tensor without elements, so none needs its strides).
#[test]
fn empty_tensors_with_huge_dims_compile() {
    let cases = [
        (s2d(2), t(DType::U8, &[0, 1 << 62, 1 << 62, 1])),
        (
            Op::BatchToSpace {
                block_size: 1 << 31,
                crops: vec![vec![0, 0], vec![0, 0]],
            },
            t(DType::F32, &[0, 1, 2, 1]),
        ),
        (d2s(2), t(DType::I8, &[0, 1 << 40, 1 << 40, 4])),
    ];
    for (op, input) in cases {
        let output = op.output_type(&input).expect("a valid op");
        assert_eq!(output.num_elements(), Ok(0));
        let k = compile(&op, &input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
        assert!(k.run(&[], &mut []).is_ok());
    }
}

/// Valid ops whose tensors are huge (2^34 bytes and more) compile: code generation needs no
/// memory of that size.
#[test]
fn huge_valid_ops_compile() {
    let cases = [
        // After cropping, the source index is `d0 * 3 + d2 - 19327352823` over a range of `d0`
        // that starts far from 0: the constant alone times the index's byte stride does not
        // fit in `i64`, while every offset of the kernel does.
        (
            Op::BatchToSpace {
                block_size: 3,
                crops: vec![vec![0, 1], vec![0, 0]],
            },
            t(DType::F32, &[9, 1 << 31, 2, 1]),
            t(DType::F32, &[1, 3 * (1 << 31) - 1, 6, 1]),
        ),
        // Block sizes too large to peel the padding guard `0 <= d0 + d1 * B < size` along
        // either the block offset or the block row: split-guards cuts the rows instead.
        (
            s2b(&[3 << 20], &[[0, 1 << 45]]),
            t(DType::I64, &[1, 1 << 40, 3, 3]),
            t(DType::I64, &[3 << 20, 11 << 20, 3, 3]),
        ),
        (
            s2b(&[1 << 20, 3], &[[5, (3 << 40) - 5], [0, 2]]),
            t(DType::I64, &[2, 1 << 33, 4]),
            t(DType::I64, &[6 << 20, 385 << 13, 2]),
        ),
    ];
    for (op, input, output) in cases {
        assert_eq!(op.output_type(&input), Ok(output));
        if let Err(e) = compile(&op, &input) {
            panic!("{op:?} on {input}: {e}");
        }
    }
}

/// Small valid ops made huge: whenever validation accepts one, it lowers through every pass
/// (which verifies it in bounds). Each decoded description goes through the op validation
/// body, which also checks that validation and lowering agree on the invalid ones.
#[test]
fn huge_valid_ops_lower() {
    let (mut valid, mut nonempty) = (0, 0);
    for seed in 0..3000u64 {
        let data = bodies::random_bytes(96, seed);
        let (name, attrs, input) = bodies::huge_op_description(&mut bodies::Input::new(&data));
        bodies::op_validation(&name, &attrs, &input);
        let Ok(op) = Op::from_attrs(&name, &attrs) else {
            continue;
        };
        if let Ok(output) = op.output_type(&input) {
            valid += 1;
            if output.num_elements() != Ok(0) && input.num_elements() != Ok(0) {
                nonempty += 1;
            }
        }
    }
    // Enough of them are valid, and most of those move data, for the loop to test something.
    assert!(
        valid > 300 && nonempty > 200,
        "{valid} valid, {nonempty} non-empty"
    );
}

#[test]
fn wrong_buffers_are_errors_not_undefined_behaviour() {
    // An empty kernel still checks lengths: nothing is written, but a wrong buffer is a bug
    // of the caller that must be reported.
    let empty = compile(&s2d(2), &t(DType::F32, &[0, 2, 2, 1])).unwrap();
    assert!(empty.run(&[], &mut []).is_ok());
    let err = empty.run(&[], &mut [0u8; 1]).unwrap_err();
    assert_eq!(
        err.category(),
        None,
        "a buffer error is not an op error: {err}"
    );
    assert!(empty.run(&[0u8; 4], &mut []).is_err());

    let k = compile(&s2d(2), &t(DType::F64, &[1, 2, 2, 1])).unwrap();
    assert!(k.run(&[0u8; 32], &mut [0u8; 32]).is_ok());
    for (src, dst) in [(31, 32), (33, 32), (32, 31), (32, 33), (0, 0), (32, 0)] {
        assert!(
            k.run(&vec![0u8; src], &mut vec![0u8; dst]).is_err(),
            "{src} and {dst} bytes were accepted"
        );
        assert!(k
            .run_threaded(&vec![0u8; src], &mut vec![0u8; dst], 2)
            .is_err());
    }
    // Element types of the wrong size, and the right size but the wrong count.
    assert!(k.run_typed(&[0f32; 8], &mut [0f32; 8]).is_err());
    assert!(k.run_typed(&[0u64; 4], &mut [0u64; 3]).is_err());
    assert!(k.run_typed(&[0u64; 4], &mut [0u64; 4]).is_ok());
}

#[test]
fn absurd_text_input_is_an_error() {
    for text in [
        "SpaceToDepth {block_size = 2} : tensor<18446744073709551616x2x2x1xf32>",
        "SpaceToDepth {block_size = 2} : tensor<18446744073709551615x2x2x1xf32>",
        "SpaceToDepth {block_size = 9223372036854775808} : tensor<1x2x2x1xf32>",
        "SpaceToDepth {block_size = -9223372036854775809} : tensor<1x2x2x1xf32>",
        "SpaceToDepth {block_size = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[2]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]} : tensor<1xf32>",
        "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf33>",
        "Col2Im {image_shape = [9223372036854775807, 9223372036854775807], block_shape = [1, 1]} : tensor<1x1x1xf32>",
    ] {
        let outcome = std::panic::catch_unwind(|| {
            let spec = relayout::parse_op_spec(text).map_err(|e| e.to_string())?;
            let op = Op::from_attrs(&spec.name, &spec.attrs).map_err(|e| e.to_string())?;
            compile(&op, &spec.input)
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        match outcome {
            Ok(Err(message)) => assert!(!message.is_empty()),
            Ok(Ok(())) => panic!("accepted: {text}"),
            Err(_) => panic!("panicked on: {text}"),
        }
    }
    for json in [
        r#"{"block_size": 18446744073709551615}"#,
        r#"{"block_size": 1e300}"#,
        r#"{"block_size": -1.5}"#,
        r#"{"block_size": null}"#,
        r#"{"paddings": [[1, {"a": 2}]]}"#,
        r#"[1, 2]"#,
    ] {
        // Either the JSON is not attributes at all, or SpaceToDepth refuses the values (a
        // uint64 or a float is an attribute value, for Pad's constant_value, but not a
        // block size).
        let value: serde_json::Value = serde_json::from_str(json).unwrap();
        let op = relayout::attrs_from_json(&value).and_then(|a| Op::from_attrs("SpaceToDepth", &a));
        assert!(op.is_err(), "accepted {json}");
    }
}

/// The loop-pass decoder makes kernels that verify, and among them kernels that forced fusion
/// bands and that `reroll` merges; otherwise `loop_passes_keep_random_loop_kernels` tests
/// little of those two passes.
#[test]
fn loop_pass_decoder_reaches_fusion_and_reroll() {
    use relayout::ir::{verify_loop_kernel, AnyKernel};
    use relayout_passes::{FuseNests, Pass, Reroll};
    let (mut verified, mut banded, mut rerolled) = (0, 0, 0);
    for seed in 0..2000u64 {
        let data = bodies::random_bytes(128, seed);
        let k = bodies::passes_loop_kernel(&mut bodies::Input::new(&data));
        if verify_loop_kernel(&k).is_err() {
            continue;
        }
        verified += 1;
        let Ok(AnyKernel::Loops(fused)) = FuseNests::always().run(AnyKernel::Loops(k)) else {
            panic!("forced fusion failed on a verified kernel");
        };
        banded += usize::from(!fused.bands.is_empty());
        let n = fused.stmts.len();
        let Ok(AnyKernel::Loops(rolled)) = Reroll.run(AnyKernel::Loops(fused)) else {
            panic!("reroll failed on a verified kernel");
        };
        rerolled += usize::from(rolled.stmts.len() < n);
    }
    println!("{verified} verified, {banded} banded, {rerolled} rerolled");
    assert!(verified >= 1000, "only {verified} of 2000 kernels verify");
    assert!(
        banded * 10 >= verified,
        "only {banded} of {verified} banded"
    );
    assert!(
        rerolled * 10 >= verified,
        "only {rerolled} of {verified} rerolled"
    );
}
