//! The bodies of relayout's fuzz targets, shared by `fuzz/` (cargo-fuzz, libFuzzer) and by
//! `tests/fuzz_bodies.rs` (proptest, a few thousand cases inside `cargo test`), as regalloc2
//! runs its fuzz bodies as short tests. Each body takes input that a fuzzer can produce, and
//! panics exactly when it has found a bug: a panic inside relayout, a wrong result, a value that
//! does not round-trip, or (with the guarded buffers) an access outside a kernel's buffers.
//!
//! Most bodies have two entry points: a structured one (`parse_ir(&str)`, `op_validation(name,
//! attrs, input)`, `differential(op, input, seed)`) that proptest strategies can call directly,
//! and a `*_bytes(&[u8])` one that decodes raw fuzzer bytes with [`Input`] first. [`Input`]
//! (relayout-testkit's, with the generator of small valid ops) is a small stand-in for
//! `arbitrary::Unstructured`, so that `cargo test` needs no extra dependency; like it, it
//! reads zeros once the bytes run out, so every byte string decodes.
//!
//! The decoders lean towards the values that break size arithmetic (0, 1, `i64::MIN`,
//! `i64::MAX`, `u64::MAX`, powers of two near the overflow points), because uniformly random
//! 64-bit values almost never land on them.

#![allow(dead_code)] // Each includer uses a different part of this file.

#[path = "guarded.rs"]
pub mod guarded;
#[path = "movement.rs"]
pub mod movement;

use guarded::{Guard, GuardedBuf};
use relayout::ir::{
    interpret, interpret_loops, parse_any, verify_kernel, verify_loop_kernel, Action, AnyKernel,
    DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType, Window,
};
use relayout::{compile, compile_chain, AttrValue, Attrs, ChainError, Op, PadValue};

// =============================================================================================
// Decoding fuzzer bytes, and the generator of small valid ops: relayout-testkit

#[allow(unused_imports)] // Each includer uses a different part.
pub use relayout_testkit::{image_shape, op_for, small_valid_op, Input, EDGE_I64, EDGE_U64};

// =============================================================================================
// Ops: names and attributes

/// The op names of the conformance format.
pub use relayout::OP_NAMES;

/// Every attribute name of any op, plus one that no op has.
pub const ATTR_NAMES: [&str; 11] = [
    "block_size",
    "data_format",
    "mode",
    "block_shape",
    "paddings",
    "crops",
    "image_shape",
    "dilations",
    "pads",
    "strides",
    "bogus",
];

/// The data formats and modes, and names that look like them.
pub const FORMATS: [&str; 5] = ["NHWC", "NCHW", "NCHW_VECT_C", "NWHC", "nchw"];
pub const MODES: [&str; 4] = ["DCR", "CRD", "RCD", ""];

fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

fn ints(values: &[i64]) -> AttrValue {
    AttrValue::List(values.iter().map(|&v| int(v)).collect())
}

fn pairs(values: &[Vec<i64>]) -> AttrValue {
    AttrValue::List(values.iter().map(|p| ints(p)).collect())
}

/// The name and attributes that [`Op::from_attrs`] turns back into `op`.
pub fn op_to_attrs(op: &Op) -> (&'static str, Attrs) {
    let mut a = Attrs::new();
    let mut put = |k: &str, v: AttrValue| {
        a.insert(k.to_string(), v);
    };
    match op {
        Op::SpaceToDepth {
            block_size,
            data_format,
        } => {
            put("block_size", int(*block_size));
            put("data_format", AttrValue::Str(data_format.name().into()));
        }
        Op::DepthToSpace {
            block_size,
            data_format,
            mode,
        } => {
            put("block_size", int(*block_size));
            put("data_format", AttrValue::Str(data_format.name().into()));
            put("mode", AttrValue::Str(mode.name().into()));
        }
        Op::SpaceToBatchNd {
            block_shape,
            paddings,
        } => {
            put("block_shape", ints(block_shape));
            put("paddings", pairs(paddings));
        }
        Op::BatchToSpaceNd { block_shape, crops } => {
            put("block_shape", ints(block_shape));
            put("crops", pairs(crops));
        }
        Op::SpaceToBatch {
            block_size,
            paddings,
        } => {
            put("block_size", int(*block_size));
            put("paddings", pairs(paddings));
        }
        Op::BatchToSpace { block_size, crops } => {
            put("block_size", int(*block_size));
            put("crops", pairs(crops));
        }
        Op::Col2Im {
            image_shape,
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            put("image_shape", ints(image_shape));
            put("block_shape", ints(block_shape));
            put("dilations", ints(dilations));
            put("pads", ints(pads));
            put("strides", ints(strides));
        }
        Op::Transpose { perm } => {
            if let Some(p) = perm {
                put("perm", ints(p));
            }
        }
        Op::Pad {
            pads,
            mode,
            constant_value,
            axes,
        } => {
            put("pads", ints(pads));
            put("mode", AttrValue::Str(mode.name().into()));
            put(
                "constant_value",
                match *constant_value {
                    PadValue::Int(v) => match i64::try_from(v) {
                        Ok(i) => AttrValue::Int(i),
                        Err(_) => AttrValue::UInt(v as u64),
                    },
                    PadValue::Float(bits) => AttrValue::Float(f64::from_bits(bits)),
                    PadValue::Bool(b) => AttrValue::Bool(b),
                    PadValue::Complex(re, im) => AttrValue::List(vec![
                        AttrValue::Float(f64::from_bits(re)),
                        AttrValue::Float(f64::from_bits(im)),
                    ]),
                },
            );
            if let Some(a) = axes {
                put("axes", ints(a));
            }
        }
        Op::Slice {
            starts,
            ends,
            axes,
            steps,
        } => {
            put("starts", ints(starts));
            put("ends", ints(ends));
            if let Some(a) = axes {
                put("axes", ints(a));
            }
            if let Some(s) = steps {
                put("steps", ints(s));
            }
        }
        Op::Tile { repeats } => put("repeats", ints(repeats)),
        Op::Reshape { shape, allowzero } => {
            put("shape", ints(shape));
            put("allowzero", int(i64::from(*allowzero)));
        }
        Op::Im2Col {
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            put("block_shape", ints(block_shape));
            for (name, v) in [
                ("dilations", dilations),
                ("pads", pads),
                ("strides", strides),
            ] {
                if let Some(v) = v {
                    put(name, ints(v));
                }
            }
        }
    }
    (op.name(), a)
}

/// Deterministic bytes from a seed (splitmix64): every byte pattern, NaNs and `-0.0` included.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// The byte size of a type known to be valid, as `usize`.
pub fn byte_len(ty: &TensorType) -> usize {
    usize::try_from(ty.size_bytes().expect("a validated type has a size")).expect("fits")
}

// =============================================================================================
// Body 1: the IR parser

fn print_any(k: &AnyKernel) -> String {
    match k {
        AnyKernel::Index(k) => k.to_string(),
        AnyKernel::Loops(k) => k.to_string(),
    }
}

/// Any text: parsing never panics, errors point inside the text, a kernel that parses prints
/// to text that parses back to the same kernel, and a kernel that also verifies goes through
/// the default pipeline (as `relayout opt` runs it) and the JIT with the interpreter's result.
pub fn parse_ir(text: &str) {
    parse_ir_checked(text, Refusal::Allowed);
}

/// Whether the default pipeline may refuse a kernel that verifies.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Arbitrary IR: a pass may give up on what it cannot handle (never with IR that fails
    /// verification).
    Allowed,
    /// IR that a valid op lowered to: the pipeline compiles it, so it must compile it again.
    Forbidden,
}

fn parse_ir_checked(text: &str, refusal: Refusal) {
    match parse_any(text) {
        Err(e) => {
            // Positions are 1-based and inside the text (or just after its last line).
            let lines = text.split('\n').count();
            assert!(
                e.line >= 1 && e.col >= 1 && e.line <= lines,
                "parse error at {}:{} outside the {lines}-line text: {e}",
                e.line,
                e.col
            );
            let _ = e.render(text);
        }
        Ok(kernel) => {
            let printed = print_any(&kernel);
            let again = parse_any(&printed).unwrap_or_else(|e| {
                panic!("a parsed kernel prints to text that does not parse: {e}\n{printed}")
            });
            assert_eq!(
                again, kernel,
                "print then parse changed the kernel:\n{printed}"
            );
            check_parsed_kernel(&kernel, refusal);
        }
    }
    // `relayout opt` on the same text must answer with a result or an error message.
    let _ = relayout::opt(text, None, false);
}

/// Work limits for running an arbitrary parsed kernel: interpreting is one step per point.
const MAX_POINTS: u64 = 1 << 16;
const MAX_BYTES: u64 = 1 << 20;

fn small_types(src: &TensorType, dst: &TensorType) -> bool {
    [src, dst]
        .iter()
        .all(|t| t.size_bytes().is_ok_and(|n| n <= MAX_BYTES))
}

/// Whether the result of a kernel may depend on the order of additions (float accumulate), so
/// that two correct implementations can differ in the last bits.
fn order_sensitive(dtype: DType, accumulates: bool) -> bool {
    accumulates && (dtype.is_float() || dtype.is_complex())
}

/// A parsed kernel that verifies: the default pipeline preserves its meaning, and its machine
/// code (run in guarded buffers) does what the interpreter does.
fn check_parsed_kernel(kernel: &AnyKernel, refusal: Refusal) {
    match kernel {
        AnyKernel::Index(k) => {
            if let Err(e) = verify_kernel(k) {
                assert!(
                    refusal == Refusal::Allowed,
                    "IR lowered from a valid op fails verification: {e}\n{k}"
                );
                return;
            }
            if !small_types(&k.src, &k.dst) {
                return;
            }
            let points: u64 = k
                .stmts
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(s.domain_size()));
            if points > MAX_POINTS {
                return;
            }
            let src = random_bytes(byte_len(&k.src), 1);
            let mut want = random_bytes(byte_len(&k.dst), 2);
            interpret(k, &src, &mut want)
                .unwrap_or_else(|e| panic!("the interpreter refused a verified kernel: {e}\n{k}"));
            let loops = match relayout_passes::lower_to_loops(k) {
                Ok(loops) => loops,
                Err(e) => {
                    let message = e.to_string();
                    // A pass may give up on a kernel it cannot handle, but it must never
                    // produce IR that does not verify.
                    assert!(
                        !matches!(e, relayout_passes::PassError::Verification { .. }),
                        "a pass broke a verified kernel: {message}\n{k}"
                    );
                    assert!(
                        refusal == Refusal::Allowed,
                        "the pipeline refused IR that it produced for a valid op: \
                         {message}\n{k}"
                    );
                    return;
                }
            };
            let accumulates = k
                .stmts
                .iter()
                .any(|s| matches!(s.action, Action::Accumulate { .. }));
            if order_sensitive(k.dst.dtype, accumulates) {
                return;
            }
            let mut got = random_bytes(byte_len(&k.dst), 2);
            interpret_loops(&loops, &src, &mut got).expect("the pipeline's output verified");
            assert!(
                got == want,
                "the default pipeline changed the result of\n{k}\ninto\n{loops}"
            );
            check_jit(&loops, &src, random_bytes(byte_len(&k.dst), 2), &want);
        }
        AnyKernel::Loops(k) => {
            if let Err(e) = verify_loop_kernel(k) {
                assert!(
                    refusal == Refusal::Allowed,
                    "IR lowered from a valid op fails verification: {e}\n{k}"
                );
                return;
            }
            if !small_types(&k.src, &k.dst) {
                return;
            }
            let points = k
                .stmts
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(s.trip_count()));
            if points > MAX_POINTS {
                return;
            }
            let src = random_bytes(byte_len(&k.src), 1);
            let mut want = random_bytes(byte_len(&k.dst), 2);
            interpret_loops(k, &src, &mut want).unwrap_or_else(|e| {
                panic!("the interpreter refused a verified loop kernel: {e}\n{k}")
            });
            // Same kernel, same order of additions: no exception for floats here.
            check_jit(k, &src, random_bytes(byte_len(&k.dst), 2), &want);
        }
    }
}

/// Whether two results of the same kernel agree: bit for bit, except that a NaN matches any
/// NaN. A float `accumulate` of two NaNs keeps the payload of one of them, and which one is
/// the hardware's and the operand order's business, not a bug.
pub fn same_result(ty: &TensorType, want: &[u8], got: &[u8]) -> bool {
    relayout::conformance::compare(ty, want, got, None).is_ok()
}

/// The piece counts every threaded check forces: 1 is the calling thread.
pub const PIECES: [usize; 4] = [1, 2, 3, 7];

/// Asserts that a run forced into `pieces` cut every statement that can be cut into exactly
/// that many pieces (fewer only where its outer loop is shorter).
pub fn assert_split(report: &relayout::SplitReport, pieces: usize, what: &dyn std::fmt::Display) {
    report
        .check_forced(pieces)
        .unwrap_or_else(|e| panic!("{e}\n{what}"));
}

/// Compiles a verified loop kernel and runs it with both buffers against a guard page, at the
/// end and then at the start, whole and forced into 2, 3 and 7 pieces on the thread pool:
/// every run must give `want`.
pub fn check_jit(k: &LoopKernel, src: &[u8], dst_init: Vec<u8>, want: &[u8]) {
    let compiled = relayout_jit::CompiledKernel::compile(k)
        .unwrap_or_else(|e| panic!("a verified loop kernel did not compile: {e}\n{k}"));
    for guard in Guard::BOTH {
        for pieces in PIECES {
            let src = GuardedBuf::from_bytes(src, guard);
            let mut dst = GuardedBuf::from_bytes(&dst_init, guard);
            let report = compiled
                .run_split(&src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_split(&report, pieces, k);
            assert!(
                same_result(&k.dst, want, &dst),
                "JIT ({pieces} pieces, guard at {guard:?}) differs from the interpreter on\n{k}"
            );
        }
    }
}

/// Raw fuzzer bytes as text (invalid UTF-8 is replaced, as a file reader would have to).
pub fn parse_ir_bytes(data: &[u8]) {
    parse_ir(&String::from_utf8_lossy(data));
}

/// Pieces of IR syntax that mutations splice in: every keyword, punctuation, and the integer
/// literals on the edges of `u64` and `i64`.
pub const IR_WORDS: [&str; 30] = [
    "kernel",
    "loops",
    "copy",
    "fill",
    "accumulate",
    "for",
    "in",
    "to",
    "where",
    "bytes",
    "floordiv",
    "mod",
    "tensor<2x3xf32>",
    "tensor<0xcomplex<f64>>",
    "%src",
    "%dst",
    "@k",
    "d0",
    "d7",
    "i0",
    "i3",
    "-",
    " * -1",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "(((((((",
    "// comment\n",
];

/// Applies one to four edits to `text`: splice in a piece of syntax or a character, delete a
/// span, duplicate a span, or replace a number with an edge value.
pub fn mutate_text(text: &str, inp: &mut Input) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..inp.urange(1, 4) {
        let len = chars.len() as u64;
        let at = inp.below(len + 1) as usize;
        match inp.below(5) {
            0 => {
                let word: Vec<char> = inp.pick(&IR_WORDS).chars().collect();
                chars.splice(at..at, word);
            }
            1 => {
                let c = inp.pick(&[
                    '0', '1', '9', ' ', '\n', ',', '(', ')', '[', ']', '{', '}', '<', '>', '=',
                    '+', '-', '*', ':', 'x', 'd', '%', '@', '\t', 'é', '\u{0}',
                ]);
                chars.insert(at, c);
            }
            2 => {
                let end = (at + inp.below(24) as usize).min(chars.len());
                chars.drain(at..end);
            }
            3 => {
                let end = (at + inp.below(40) as usize).min(chars.len());
                let span: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, span);
            }
            _ => {
                // Replace the number that starts at or after `at` with an edge value.
                if let Some(start) = (at..chars.len()).find(|&i| chars[i].is_ascii_digit()) {
                    let end = (start..chars.len())
                        .find(|&i| !chars[i].is_ascii_digit())
                        .unwrap_or(chars.len());
                    let value = inp.pick(&EDGE_I64).to_string();
                    chars.splice(start..end, value.chars());
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// A printed stage of a small valid op, mutated: text close enough to valid IR to get past
/// the lexer and deep into the parser, the verifier and the passes.
pub fn parse_mutated_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (op, input) = small_valid_op(&mut inp);
    let stages = relayout::lower(&op, &input)
        .unwrap_or_else(|e| panic!("a valid op failed to lower: {e}\n{op:?} on {input}"));
    let text = match inp.below(3) {
        0 => stages.lowered.to_string(),
        1 => stages.optimized.to_string(),
        _ => stages.loops.to_string(),
    };
    // The unmutated text must parse back to the stage (the printer's round trip) and go
    // through the pipeline and the JIT again.
    parse_ir_checked(&text, Refusal::Forbidden);
    parse_ir(&mutate_text(&text, &mut inp));
}

// =============================================================================================
// Body 2: op validation

/// Valid ops up to this size (input and output) are interpreted and checked against the
/// reference in [`op_validation`].
const MAX_INTERPRETED_BYTES: usize = 1 << 16;

/// Kernel positions of a padded Im2Col or Col2Im that the passes always express within their
/// statement budget (about one statement per position for the borders; 64x64 takes 4257).
const POSITIONS_WITHIN_BUDGET: u64 = 4096;

/// Whether `e` is the passes' statement budget, met by an op that may meet it: an Im2Col or
/// Col2Im whose kernel has more than [`POSITIONS_WITHIN_BUDGET`] positions (the fuzz finds
/// kernels of a million). Any other op must lower.
fn beyond_statement_budget(op: &Op, e: &relayout::Error) -> bool {
    let positions = match op {
        Op::Im2Col { block_shape, .. } | Op::Col2Im { block_shape, .. } => block_shape
            .iter()
            .try_fold(1u64, |acc, &k| acc.checked_mul(u64::try_from(k).ok()?))
            .unwrap_or(u64::MAX),
        _ => return false,
    };
    positions > POSITIONS_WITHIN_BUDGET
        && matches!(
            e,
            relayout::Error::Pass(relayout_passes::PassError::TooManyStatements { .. })
        )
}

/// Any op name, attributes and input type: [`Op::from_attrs`], [`Op::output_type`] and
/// [`relayout::lower`] return `Ok` or a typed error, never panic, and agree with each other. A
/// small valid op is also interpreted and compared with the reference implementation.
pub fn op_validation(name: &str, attrs: &Attrs, input: &TensorType) {
    let op = match Op::from_attrs(name, attrs) {
        Ok(op) => op,
        Err(e) => {
            assert!(!e.message.is_empty(), "an error without a message: {e:?}");
            return;
        }
    };
    // The attributes of a built op read back to the same op.
    let (name2, attrs2) = op_to_attrs(&op);
    assert_eq!(name2, name);
    assert_eq!(Op::from_attrs(name2, &attrs2).as_ref(), Ok(&op));

    let output = op.output_type(input);
    let stages = relayout::lower(&op, input);
    let (output, stages) = match (output, stages) {
        (Err(e), Err(e2)) => {
            assert!(!e.message.is_empty());
            assert_eq!(
                e2.category(),
                Some(e.category()),
                "output_type and lower disagree on {op:?} for {input}: {e} / {e2}"
            );
            return;
        }
        (Ok(output), Ok(stages)) => (output, stages),
        (Ok(_), Err(e)) if beyond_statement_budget(&op, &e) => return,
        (Ok(output), Err(e)) => {
            panic!("{op:?} on {input} is valid (output {output}) but does not lower: {e}")
        }
        (Err(e), Ok(_)) => panic!("{op:?} on {input} is invalid ({e}) but lowers"),
    };
    assert_eq!(stages.lowered.dst, output);
    assert_eq!(&stages.lowered.src, input);
    // Valid types have sizes (validation checked them).
    let (in_len, out_len) = (byte_len(input), byte_len(&output));
    if in_len > MAX_INTERPRETED_BYTES || out_len > MAX_INTERPRETED_BYTES {
        return;
    }
    let src = random_bytes(in_len, in_len as u64);
    let reference = relayout_reference::reference(&op, input, &src)
        .unwrap_or_else(|e| panic!("the reference refused a valid op: {e}\n{op:?} on {input}"));
    let mut got = random_bytes(out_len, 7);
    interpret(&stages.lowered, &src, &mut got).expect("a lowered kernel interprets");
    assert!(
        got == reference,
        "lowered IR vs reference for {op:?} on {input}"
    );
}

/// A fully arbitrary attribute value, at most three lists deep.
fn attr_value(inp: &mut Input, depth: u32) -> AttrValue {
    match inp.below(6) {
        0 | 1 => AttrValue::Int(inp.wild_i64()),
        2 => AttrValue::Str(inp.string()),
        3 | 4 => {
            let len = inp.below(7);
            AttrValue::List((0..len).map(|_| AttrValue::Int(inp.wild_i64())).collect())
        }
        _ if depth < 3 => {
            let len = inp.below(5);
            AttrValue::List((0..len).map(|_| attr_value(inp, depth + 1)).collect())
        }
        _ => AttrValue::List(Vec::new()),
    }
}

/// A small attribute value: usually small, sometimes on an edge.
fn small_i64(inp: &mut Input) -> i64 {
    if inp.one_in(6) {
        inp.wild_i64()
    } else {
        inp.range(-1, 4)
    }
}

/// A list of about `n` small integers; now and then one too many or too few.
fn int_list(inp: &mut Input, n: usize) -> AttrValue {
    let n = match inp.below(10) {
        0 => n.saturating_sub(1),
        1 => n + 1,
        _ => n,
    };
    AttrValue::List((0..n).map(|_| AttrValue::Int(small_i64(inp))).collect())
}

/// About `n` `[begin, end]` pairs; now and then a pair of the wrong length or a flat list.
fn pair_list(inp: &mut Input, n: usize) -> AttrValue {
    if inp.one_in(12) {
        return int_list(inp, 2 * n);
    }
    let n = if inp.one_in(10) { n + 1 } else { n };
    AttrValue::List(
        (0..n)
            .map(|_| {
                let len = if inp.one_in(12) {
                    inp.below(4) as usize
                } else {
                    2
                };
                int_list(inp, len)
            })
            .collect(),
    )
}

/// The attributes of op `name` (Col2Im's for an unknown name).
pub fn known_attributes(name: &str) -> &'static [&'static str] {
    relayout::known_attributes(name)
        .or_else(|| relayout::known_attributes("Col2Im"))
        .unwrap_or_default()
}

/// Attributes of the right names and kinds with values that may be anything, for `name`.
fn typed_attrs(inp: &mut Input, name: &str) -> Attrs {
    let m = inp.urange(1, 4) as usize;
    let mut a = Attrs::new();
    for &key in known_attributes(name) {
        // Leave out an attribute now and then: required ones must be missed, optional ones
        // defaulted.
        if inp.one_in(10) {
            continue;
        }
        let value = match key {
            "block_size" => AttrValue::Int(if inp.flag() {
                inp.range(-1, 4)
            } else {
                inp.wild_i64()
            }),
            "data_format" => AttrValue::Str(inp.pick(&FORMATS).to_string()),
            "mode" => AttrValue::Str(inp.pick(&MODES).to_string()),
            "paddings" | "crops" => pair_list(inp, m),
            "pads" => int_list(inp, 2 * m),
            _ => int_list(inp, m),
        };
        a.insert(key.to_string(), value);
    }
    a
}

/// A shape of rank about `rank` with small dims, now and then one on an edge.
fn near_shape(inp: &mut Input, rank: usize) -> Vec<u64> {
    let rank = match inp.below(10) {
        0 => rank.saturating_sub(1),
        1 => rank + 1,
        _ => rank,
    };
    (0..rank)
        .map(|_| {
            if inp.one_in(8) {
                inp.wild_dim()
            } else {
                inp.urange(0, 6)
            }
        })
        .collect()
}

/// Large factors and values for [`huge_op_description`]: powers of two around the sizes where
/// products leave 32 and 64 bits, and a few that are not.
const LARGE: [u64; 12] = [
    1 << 20,
    1 << 28,
    (1 << 31) - 1,
    1 << 31,
    3 << 29,
    1 << 32,
    (1 << 32) + 1,
    1_000_000_007,
    1 << 40,
    1 << 45,
    3 << 40,
    1 << 60,
];

/// A small valid op with one to three of its input dims or integer attributes multiplied by,
/// set to, or increased by a large value. Often invalid; when valid, its tensors are huge (or
/// empty with huge other dims), which is where the size and offset arithmetic of validation,
/// lowering and the passes is at its limits, and which mutating a small op reaches only by luck.
pub fn huge_op_description(inp: &mut Input) -> (String, Attrs, TensorType) {
    let (op, mut input) = small_valid_op(inp);
    let (name, mut attrs) = op_to_attrs(&op);
    for _ in 0..inp.urange(1, 3) {
        let m = inp.pick(&LARGE);
        let how = inp.below(3);
        let grow = |v: u64| match how {
            0 => v.saturating_mul(m),
            1 => m,
            _ => v.saturating_add(m),
        };
        if inp.flag() && !input.shape.is_empty() {
            let i = inp.below(input.shape.len() as u64) as usize;
            input.shape[i] = grow(input.shape[i]);
        } else {
            let ints: u64 = attrs.values().map(count_ints).sum();
            let mut k = inp.below(ints.max(1));
            // Attribute integers are i64: a negative one grows from 0, and the result is
            // capped at i64::MAX.
            let mut grow_int = |x: i64| grow(x.max(0) as u64).min(i64::MAX as u64) as i64;
            attrs
                .values_mut()
                .any(|v| update_nth_int(v, &mut k, &mut grow_int));
        }
    }
    (name.to_string(), attrs, input)
}

fn count_ints(v: &AttrValue) -> u64 {
    match v {
        AttrValue::Int(_) => 1,
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => 0,
        AttrValue::List(items) => items.iter().map(count_ints).sum(),
    }
}

/// Applies `f` to the integer at index `k` of a depth-first walk of the integers in `v`, and
/// returns true; or, when `v` holds fewer, takes their number off `k` and returns false, so
/// that the walk can go on in the next value.
fn update_nth_int(v: &mut AttrValue, k: &mut u64, f: &mut impl FnMut(i64) -> i64) -> bool {
    match v {
        AttrValue::Int(x) if *k == 0 => {
            *x = f(*x);
            true
        }
        AttrValue::Int(_) => {
            *k -= 1;
            false
        }
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => false,
        AttrValue::List(items) => items.iter_mut().any(|item| update_nth_int(item, k, f)),
    }
}

/// Decodes an op description from fuzzer bytes in one of four ways: fully arbitrary; right
/// names and kinds with arbitrary values; a small valid op with one thing changed; or a small
/// valid op made huge ([`huge_op_description`]).
pub fn decode_op_description(inp: &mut Input) -> (String, Attrs, TensorType) {
    let dtype = inp.pick(&DType::ALL);
    if inp.one_in(4) {
        return huge_op_description(inp);
    }
    match inp.below(3) {
        0 => {
            let names = [&OP_NAMES[..], &["", "spacetodepth", "Col2im", "Reshape"]].concat();
            let name = inp.pick(&names).to_string();
            let attrs = (0..inp.below(6))
                .map(|_| (inp.pick(&ATTR_NAMES).to_string(), attr_value(inp, 0)))
                .collect();
            let rank = inp.below(8) as usize;
            let shape = (0..rank).map(|_| inp.wild_dim()).collect::<Vec<_>>();
            (name, attrs, TensorType::new(dtype, shape))
        }
        1 => {
            let name = inp.pick(&OP_NAMES);
            let attrs = typed_attrs(inp, name);
            let rank = match name {
                "SpaceToDepth" | "DepthToSpace" => inp.urange(4, 5) as usize,
                "Col2Im" => 3,
                _ => inp.urange(2, 6) as usize,
            };
            let shape = near_shape(inp, rank);
            (name.to_string(), attrs, TensorType::new(dtype, shape))
        }
        _ => {
            let (op, mut input) = small_valid_op(inp);
            let (name, mut attrs) = op_to_attrs(&op);
            // (A Transpose of the default perm has no attribute to change.)
            match inp.below(4) {
                0 if !attrs.is_empty() => {
                    // One attribute replaced by anything.
                    let keys: Vec<String> = attrs.keys().cloned().collect();
                    let key = inp.pick(&keys);
                    attrs.insert(key, attr_value(inp, 0));
                }
                1 if !attrs.is_empty() => {
                    // One integer somewhere in the attributes set to an edge value.
                    let keys: Vec<String> = attrs.keys().cloned().collect();
                    let key = inp.pick(&keys);
                    let value = attrs.get_mut(&key).expect("a key of the map");
                    let edge = inp.pick(&EDGE_I64);
                    set_some_int(value, edge, inp);
                }
                2 if !input.shape.is_empty() => {
                    let i = inp.below(input.shape.len() as u64) as usize;
                    input.shape[i] = inp.wild_dim();
                }
                _ => {}
            }
            (name.to_string(), attrs, input)
        }
    }
}

/// Sets one integer inside `value` (the first one an index walk reaches) to `v`.
fn set_some_int(value: &mut AttrValue, v: i64, inp: &mut Input) {
    match value {
        AttrValue::Int(i) => *i = v,
        AttrValue::Str(_) | AttrValue::UInt(_) | AttrValue::Float(_) | AttrValue::Bool(_) => {}
        AttrValue::List(items) if !items.is_empty() => {
            let i = inp.below(items.len() as u64) as usize;
            set_some_int(&mut items[i], v, inp);
        }
        AttrValue::List(_) => {}
    }
}

pub fn op_validation_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (name, attrs, input) = decode_op_description(&mut inp);
    op_validation(&name, &attrs, &input);
}

// =============================================================================================
// Body 3: differential, JIT == interpreter == reference

/// A valid op: the JIT (in guarded buffers, one thread and several), the interpreter on the
/// lowered, the simplified and the loop IR, and the reference implementation produce the same
/// bytes; every stage prints to text that parses back to it; and the movement analysis's
/// answer describes the output.
pub fn differential(op: &Op, input: &TensorType, seed: u64) {
    let kernel = compile(op, input).unwrap_or_else(|e| panic!("{op:?} on {input}: {e}"));
    let src = random_bytes(byte_len(input), seed);
    let reference = relayout_reference::reference(op, input, &src)
        .unwrap_or_else(|e| panic!("the reference refused {op:?} on {input}: {e}"));
    check_compiled(
        &Compiled {
            stages: kernel.stages(),
            run_split: &|src, dst, split| kernel.run_split(src, dst, split),
            movement: kernel.movement(),
            elem: input.dtype.size() as usize,
        },
        &src,
        &reference,
        seed,
        &format!("{op:?} on {input}"),
    );
}

/// A compiled op's or chain's `run_split`.
pub type RunSplit<'a> =
    &'a dyn Fn(&[u8], &mut [u8], relayout::Split) -> Result<relayout::SplitReport, relayout::Error>;

/// What [`check_compiled`] needs of a compiled op or chain.
pub struct Compiled<'a> {
    pub stages: &'a relayout::Stages,
    pub run_split: RunSplit<'a>,
    pub movement: relayout::Movement,
    /// The element size in bytes.
    pub elem: usize,
}

/// The interpreter on the lowered, the simplified and the loop IR, and the JIT in guarded
/// buffers (each guard; 1, 2, 3 and 7 pieces, every cuttable statement cut that many times),
/// each from an output of garbage bytes, give `want` from `src`; every stage prints to text
/// that parses back to it; the movement answer describes `want`.
pub fn check_compiled(k: &Compiled, src: &[u8], want: &[u8], seed: u64, what: &str) {
    let (stages, out_len) = (k.stages, want.len());
    for (stage, kernel) in [
        ("lowered", &stages.lowered),
        ("optimized", &stages.optimized),
    ] {
        let mut got = random_bytes(out_len, seed ^ 1);
        interpret(kernel, src, &mut got).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(got == want, "{stage} IR vs the reference: {what}\n{kernel}");
        assert_eq!(
            relayout::ir::parse_kernel(&kernel.to_string()).as_ref(),
            Ok(kernel),
            "the {stage} IR does not round-trip: {what}"
        );
    }
    let mut got = random_bytes(out_len, seed ^ 2);
    interpret_loops(&stages.loops, src, &mut got).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        got == want,
        "loop IR vs the reference: {what}\n{}",
        stages.loops
    );
    assert_eq!(
        relayout::ir::parse_loop_kernel(&stages.loops.to_string()).as_ref(),
        Ok(&stages.loops),
        "the loop IR does not round-trip: {what}"
    );
    for guard in Guard::BOTH {
        for pieces in PIECES {
            let guarded_src = GuardedBuf::from_bytes(src, guard);
            let mut dst = GuardedBuf::from_bytes(&random_bytes(out_len, seed ^ 3), guard);
            let report = (k.run_split)(&guarded_src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_split(&report, pieces, &stages.loops);
            assert!(
                dst[..] == want[..],
                "JIT ({pieces} pieces, guard at {guard:?}) vs the reference: {what}\n{}",
                stages.loops
            );
        }
    }
    movement::assert_describes(&k.movement, k.elem, src, want, what);
}

pub fn differential_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (op, input) = small_valid_op(&mut inp);
    let seed = inp.u64();
    differential(&op, &input, seed);
}

// =============================================================================================
// Body: chains of small ops composed into one kernel

/// A chain of ops composed into one kernel (`compile_chain`) gives what running its ops one by
/// one in the reference gives, as [`check_compiled`] checks it. A chain that holds a Col2Im (a
/// scatter-add) must be refused as not composable.
pub fn chain_differential(ops: &[Op], input: &TensorType, seed: u64) {
    let src = random_bytes(byte_len(input), seed);
    let what = format!("{ops:?} on {input}");
    let mut ty = input.clone();
    let mut want = src.clone();
    for op in ops {
        want = relayout_reference::reference(op, &ty, &want)
            .unwrap_or_else(|e| panic!("the reference refused {op:?} on {ty}: {e}"));
        ty = op.output_type(&ty).expect("the chain's ops are valid");
    }
    let chain = match compile_chain(ops, input) {
        Ok(chain) => chain,
        // Col2Im adds into its output: it has no gather form to compose.
        Err(relayout::Error::Chain(ChainError::NotComposable { index, op, .. }))
            if op == "Col2Im" =>
        {
            assert_eq!(ops[index].name(), op, "{what}");
            return;
        }
        // Piecewise Pads (edge, reflect, wrap) multiply the statements of what they read:
        // past the composed kernel's limit the chain is refused, and its front is run instead.
        Err(relayout::Error::Chain(ChainError::TooLarge { index, .. })) => {
            return chain_differential(&ops[..index], input, seed);
        }
        Err(e) => panic!("{what}: {e}"),
    };
    assert_eq!(chain.output_type(), &ty, "{what}");
    check_compiled(
        &Compiled {
            stages: chain.stages(),
            run_split: &|src, dst, split| chain.run_split(src, dst, split),
            movement: chain.movement(),
            elem: input.dtype.size() as usize,
        },
        &src,
        &want,
        seed,
        &what,
    );
}

/// Chains of no more elements than this are run; a longer chain stops growing here.
const CHAIN_MAX_ELEMENTS: u64 = 4096;

pub fn chain_differential_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let (first, input) = small_valid_op(&mut inp);
    let mut ty = first.output_type(&input).expect("a valid op");
    let mut ops = vec![first];
    for _ in 0..inp.urange(1, 3) {
        let op = op_for(&mut inp, &ty);
        let next = op.output_type(&ty).expect("op_for makes valid ops");
        if next.num_elements().map_or(true, |n| n > CHAIN_MAX_ELEMENTS) {
            break;
        }
        ops.push(op);
        ty = next;
    }
    let seed = inp.u64();
    chain_differential(&ops, &input, seed);
}

// =============================================================================================
// Body 4: random loop kernels flush against their buffers' ends

/// A random loop kernel whose accesses reach exactly the first and the last byte of each
/// operand, so that an access one byte outside lands on a guard page. Statements get random
/// runs, extents and strides (negative ones too), then are shifted so that their lowest access
/// is at 0, and the tensors are sized to the highest access.
pub fn tight_loop_kernel(inp: &mut Input) -> LoopKernel {
    let dtype = inp.pick(&DType::ALL);
    let e = dtype.size() as i64;
    let mut stmts = Vec::new();
    let (mut src_end, mut dst_end) = (e, e);
    for _ in 0..inp.urange(1, 3) {
        let action = inp.pick(&[
            LoopAction::Copy,
            LoopAction::ZERO_FILL,
            LoopAction::Accumulate,
        ]);
        // Mostly short runs, sometimes long enough for vector loops and memcpy.
        let elems = if inp.one_in(4) {
            inp.range(16, 300)
        } else {
            inp.range(1, 9)
        };
        let bytes = elems * e;
        let loops: Vec<Loop> = (0..inp.below(4))
            .map(|_| {
                // Strides in whole elements, or now and then in bytes (unaligned elements).
                let unit = if inp.one_in(8) { 1 } else { e };
                let min_extent = if inp.one_in(16) { 0 } else { 1 };
                Loop {
                    extent: inp.urange(min_extent, 6),
                    src_stride: inp.range(-12, 12) * unit,
                    dst_stride: inp.range(-12, 12) * unit,
                }
            })
            .collect();
        let span = |stride: fn(&Loop) -> i64| {
            loops.iter().fold((0i64, 0i64), |(lo, hi), l| {
                let reach = stride(l) * (l.extent.max(1) as i64 - 1);
                (lo + reach.min(0), hi + reach.max(0))
            })
        };
        let (src_lo, src_hi) = span(|l| l.src_stride);
        let (dst_lo, dst_hi) = span(|l| l.dst_stride);
        let mut stmt = LoopStmt {
            action,
            bytes: bytes as u64,
            src_offset: -src_lo,
            dst_offset: -dst_lo,
            loops,
            window: None,
        };
        if action == LoopAction::Accumulate && inp.one_in(3) {
            // Terms that each add to a sliding window of the run (a Col2Im row's kernel
            // positions), over an innermost reduction loop; the source is then sized to the
            // windows alone, so that a load outside a window lands on a guard page.
            let reduction = Loop {
                extent: inp.urange(1, 5),
                src_stride: inp.range(-12, 12) * e,
                dst_stride: 0,
            };
            let start = inp.range(-3, elems) * e;
            let window = Window {
                start,
                end: start + inp.range(1, elems + 3) * e,
                step: inp.range(-3, 3) * e,
            };
            stmt.loops.push(reduction);
            stmt.window = Some(window);
            if verify_loop_kernel(&LoopKernel {
                bands: Vec::new(),
                name: "w".into(),
                src: TensorType::new(dtype, [1 << 20]),
                dst: TensorType::new(dtype, [1 << 20]),
                stmts: vec![LoopStmt {
                    src_offset: 1 << 18,
                    dst_offset: 0,
                    ..stmt.clone()
                }],
            })
            .is_ok()
            {
                // The lowest and highest source byte the windows read.
                let (mut lo, mut hi) = (i64::MAX, i64::MIN);
                for k in 0..reduction.extent {
                    let (a, b) = window.at(k, bytes as u64).unwrap();
                    if a < b {
                        let shift = reduction.src_stride * k as i64;
                        lo = lo.min(src_lo + shift + a as i64);
                        hi = hi.max(src_hi + shift + b as i64);
                    }
                }
                stmt.src_offset = -lo;
                src_end = src_end.max(hi - lo);
                dst_end = dst_end.max(dst_hi - dst_lo + bytes);
                stmts.push(stmt);
                continue;
            }
            // Windows that leave part of the run uncovered: a plain reduction loop instead.
            stmt.window = None;
            stmt.loops.pop();
        }
        if action.is_fill() {
            // A fill does not read the source; the verifier wants its source terms zero.
            stmt.src_offset = 0;
            for l in &mut stmt.loops {
                l.src_stride = 0;
            }
        } else {
            src_end = src_end.max(src_hi - src_lo + bytes);
        }
        dst_end = dst_end.max(dst_hi - dst_lo + bytes);
        stmts.push(stmt);
    }
    // Round the sizes up to whole elements (unaligned strides can end mid-element).
    let elems = |end: i64| (end + e - 1) / e;
    LoopKernel {
        bands: Vec::new(),
        name: "tight".into(),
        src: TensorType::new(dtype, [elems(src_end) as u64]),
        dst: TensorType::new(dtype, [elems(dst_end) as u64]),
        stmts,
    }
}

/// A tight random loop kernel: it verifies, and the JIT in guarded buffers matches the
/// interpreter.
pub fn tight_loops_bytes(data: &[u8]) {
    let mut inp = Input::new(data);
    let k = tight_loop_kernel(&mut inp);
    verify_loop_kernel(&k).unwrap_or_else(|e| panic!("a tight kernel does not verify: {e}"));
    let src = random_bytes(byte_len(&k.src), inp.u64());
    let init = random_bytes(byte_len(&k.dst), 5);
    let mut want = init.clone();
    interpret_loops(&k, &src, &mut want).unwrap_or_else(|e| panic!("{e}\n{k}"));
    check_jit(&k, &src, init, &want);
}

// =============================================================================================
// Loop passes on random loop kernels

/// A tight random loop kernel made for the loop passes: sometimes every statement gets the
/// same outer loop over planes (so that `fuse-nests` can band them), sometimes copies of a
/// statement moved by a few elements are inserted after it (translates for `reroll`, some
/// overlapping what lies between). The tensors grow to hold what was added.
pub fn passes_loop_kernel(inp: &mut Input) -> LoopKernel {
    let mut k = tight_loop_kernel(inp);
    let e = k.dtype().size() as i64;
    if inp.flag() {
        let at = inp.below(k.stmts.len() as u64) as usize;
        let base = k.stmts[at].clone();
        let step = (inp.range(-3, 3) * e, inp.range(-3, 3) * e);
        for j in 1..=inp.range(1, 3) {
            let mut copy = base.clone();
            copy.dst_offset += j * step.0;
            if !copy.action.is_fill() {
                copy.src_offset += j * step.1;
            }
            let to = (at + j as usize + inp.below(2) as usize).min(k.stmts.len());
            k.stmts.insert(to, copy);
        }
        // Shift everything up so no offset is negative, and grow the tensors to the ends.
        let shift = |k: &mut LoopKernel, dst: bool| {
            let low = k
                .stmts
                .iter()
                .map(|s| if dst { s.dst_offset } else { s.src_offset })
                .min()
                .unwrap_or(0)
                .min(0);
            for s in &mut k.stmts {
                if dst {
                    s.dst_offset -= low;
                } else if !s.action.is_fill() {
                    s.src_offset -= low;
                }
            }
        };
        shift(&mut k, true);
        shift(&mut k, false);
    }
    // The highest byte a statement reaches (plus one) along the strides `stride` picks.
    let reach = |s: &LoopStmt, stride: fn(&Loop) -> i64| -> i64 {
        s.loops
            .iter()
            .map(|l| (stride(l) * (l.extent.max(1) as i64 - 1)).max(0))
            .sum()
    };
    let end = |k: &LoopKernel, dst: bool| -> i64 {
        k.stmts
            .iter()
            .filter(|s| dst || !s.action.is_fill())
            .map(|s| {
                let far = if dst {
                    s.dst_offset + reach(s, |l| l.dst_stride)
                } else {
                    s.src_offset + reach(s, |l| l.src_stride)
                };
                far + s.bytes as i64
            })
            .max()
            .unwrap_or(e)
            .max(e)
    };
    let (mut src_end, mut dst_end) = (end(&k, false), end(&k, true));
    if inp.flag() {
        // One outer loop over planes, shared by every statement.
        let planes = inp.urange(1, 4);
        let plane = Loop {
            extent: planes,
            src_stride: src_end,
            dst_stride: dst_end,
        };
        for s in &mut k.stmts {
            let mut l = plane;
            if s.action.is_fill() {
                l.src_stride = 0;
            }
            s.loops.insert(0, l);
        }
        src_end *= planes as i64;
        dst_end *= planes as i64;
    }
    let elems = |end: i64| ((end + e - 1) / e) as u64;
    k.src = TensorType::new(k.dtype(), [elems(src_end)]);
    k.dst = TensorType::new(k.dtype(), [elems(dst_end)]);
    k
}

/// The loop pipelines [`loop_passes_bytes`] runs: each loop pass alone, the loop part of the
/// default pipeline, and fusion forced (`FuseNests::always`, which tiny kernels need) followed
/// by `reroll`, `long-runs-first` and `group-alike`.
pub const LOOP_PIPELINES: [&str; 10] = [
    "output-stationary",
    "coalesce",
    "interchange",
    "tile-transposes",
    "pair-phases",
    "fuse-nests",
    "reroll",
    "fuse-nests,long-runs-first",
    "fuse-nests,group-alike",
    "output-stationary,coalesce,interchange,coalesce,tile-transposes,pair-phases,fuse-nests,reroll,long-runs-first,group-alike",
];

/// A random loop kernel that verifies: every loop pipeline keeps it verified and keeps its
/// result bit for bit (float accumulations included: loop passes never reorder the additions
/// into one element), in the interpreter and in the JIT in guarded buffers, whole and in
/// pieces.
pub fn loop_passes_bytes(data: &[u8]) {
    use relayout_passes::{
        FuseNests, GroupAlike, LongRunsFirst, Pass, PassManager, Pipeline, Reroll,
    };
    let mut inp = Input::new(data);
    let k = passes_loop_kernel(&mut inp);
    if verify_loop_kernel(&k).is_err() {
        // Translates moved out of the tensors' ends: nothing to check.
        return;
    }
    let src = random_bytes(byte_len(&k.src), inp.u64());
    let init = random_bytes(byte_len(&k.dst), 9);
    let mut want = init.clone();
    interpret_loops(&k, &src, &mut want).unwrap_or_else(|e| panic!("{e}\n{k}"));
    let check = |what: &str, out: &LoopKernel| {
        verify_loop_kernel(out)
            .unwrap_or_else(|e| panic!("{what} made a kernel that fails: {e}\n{k}\ninto\n{out}"));
        let mut got = init.clone();
        interpret_loops(out, &src, &mut got).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert!(
            same_result(&k.dst, &want, &got),
            "{what} changed the result of\n{k}\ninto\n{out}"
        );
        check_jit(out, &src, init.clone(), &want);
    };
    for pipeline in LOOP_PIPELINES {
        let pm = PassManager::new(Pipeline::parse(pipeline).unwrap()).verify_each(true);
        match pm.run(AnyKernel::Loops(k.clone())) {
            Ok(AnyKernel::Loops(out)) => check(pipeline, &out),
            Ok(other) => panic!("{pipeline} left loop IR: {other:?}"),
            Err(e) => panic!("{pipeline} refused a verified kernel: {e}\n{k}"),
        }
    }
    let forced = |k: &LoopKernel| match FuseNests::always().run(AnyKernel::Loops(k.clone())) {
        Ok(AnyKernel::Loops(out)) => out,
        other => panic!("forced fusion: {other:?}\n{k}"),
    };
    let fused = forced(&k);
    check("forced fuse-nests", &fused);
    match Reroll.run(AnyKernel::Loops(fused.clone())) {
        Ok(AnyKernel::Loops(out)) => check("forced fuse-nests, then reroll", &out),
        other => panic!("reroll: {other:?}\n{fused}"),
    }
    match LongRunsFirst.run(AnyKernel::Loops(fused.clone())) {
        Ok(AnyKernel::Loops(out)) => check("forced fuse-nests, then long-runs-first", &out),
        other => panic!("long-runs-first: {other:?}\n{fused}"),
    }
    match GroupAlike.run(AnyKernel::Loops(fused.clone())) {
        Ok(AnyKernel::Loops(out)) => check("forced fuse-nests, then group-alike", &out),
        other => panic!("group-alike: {other:?}\n{fused}"),
    }
}
