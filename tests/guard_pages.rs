//! Every kernel we can think of, run with its source and destination flush against an
//! inaccessible zone (tests/support/guarded.rs): first at the end of each buffer, then at the
//! start. A generated load or store one byte outside either buffer kills the test binary with
//! SIGSEGV instead of passing unnoticed, as it would in an ordinary Vec with spare capacity or
//! a neighbour behind it. The last two tests prove that the guard does catch such an access.

#![cfg(target_os = "linux")]

#[path = "support/fuzz_bodies.rs"]
mod bodies;

use bodies::guarded::{Guard, GuardedBuf};
use bodies::{byte_len, random_bytes};
use relayout::conformance::{compare, find_cases, load_case, Expected};
use relayout::ir::{DType, TensorType};
use relayout::{compile, CompiledOp, Op};
use std::path::Path;

/// Runs `kernel` on `src` in guarded buffers, with each guard and on one and two threads, and
/// returns the first result that `check` rejects (with how it was run), or `None`.
fn run_guarded(
    kernel: &CompiledOp,
    src: &[u8],
    check: &dyn Fn(&[u8]) -> Result<(), String>,
) -> Option<String> {
    let out_len = byte_len(kernel.output_type());
    for guard in Guard::BOTH {
        for threads in [1, 2] {
            let src = GuardedBuf::from_bytes(src, guard);
            // Garbage in the destination: a kernel must write every byte it is responsible for.
            let mut dst = GuardedBuf::from_bytes(&random_bytes(out_len, 99), guard);
            let run = if threads == 1 {
                kernel.run(&src, &mut dst)
            } else {
                kernel.run_threaded(&src, &mut dst, threads)
            };
            if let Err(e) = run.map_err(|e| e.to_string()).and_then(|()| check(&dst)) {
                return Some(format!("guard at {guard:?}, {threads} thread(s): {e}"));
            }
        }
    }
    None
}

/// The op and input type of an op description in the syntax of `relayout lower`.
fn op_of(spec: &str) -> (Op, relayout::OpSpec) {
    let parsed = relayout::parse_op_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let op = Op::from_attrs(&parsed.name, &parsed.attrs).unwrap_or_else(|e| panic!("{e}"));
    (op, parsed)
}

/// Runs `kernel` on `src` in guarded buffers, with each guard, whole and in 3 and 7 forced
/// pieces, and names each run whose output is not `want`.
fn guarded_pieces_failures(
    spec: &str,
    kernel: &relayout_jit::CompiledKernel,
    src: &[u8],
    want: &[u8],
) -> Vec<String> {
    let mut failures = Vec::new();
    for guard in Guard::BOTH {
        for pieces in [1, 3, 7] {
            let src = GuardedBuf::from_bytes(src, guard);
            let mut dst = GuardedBuf::from_bytes(&random_bytes(want.len(), 99), guard);
            kernel
                .run_split(&src, &mut dst, relayout::Split::Pieces(pieces))
                .unwrap_or_else(|e| panic!("{spec}: {e}"));
            if dst[..] != want[..] {
                failures.push(format!("{spec}: {pieces} pieces, guard at {guard:?}"));
            }
        }
    }
    failures
}

/// Runs `kernel` in 3 pieces into a destination 4 bytes past a 16-byte boundary, where the
/// streaming helpers must fall back to ordinary stores, and names the run if its output is not
/// `want`.
fn misaligned_destination_failure(
    spec: &str,
    kernel: &relayout_jit::CompiledKernel,
    src: &[u8],
    want: &[u8],
) -> Option<String> {
    let mut storage = vec![0u8; want.len() + 32];
    let at = (20 - storage.as_ptr() as usize % 16) % 16;
    let misaligned = &mut storage[at..at + want.len()];
    assert_eq!(misaligned.as_ptr() as usize % 16, 4);
    kernel
        .run_split(src, misaligned, relayout::Split::Pieces(3))
        .unwrap_or_else(|e| panic!("{spec}: {e}"));
    (misaligned[..] != want[..]).then(|| format!("{spec}: misaligned destination"))
}

/// For kernels one of the JIT's precompiled helpers runs (`helper`: every statement's listing
/// says `note`, and the JIT compiles no code) and kernels of similar shapes that keep
/// generated code (`generated`: it does neither): each against the reference in guarded
/// buffers (one and two threads, both guards), whole and in 3 and 7 pieces, and into a
/// misaligned destination. Seeds from `seed` on. Panics with every failure.
fn helper_kernel_failures(helper: &[&str], generated: &[&str], note: &str, seed: u64) {
    let mut failures = Vec::new();
    for (i, spec) in helper.iter().chain(generated).enumerate() {
        let (op, parsed) = op_of(spec);
        let stages = relayout::lower(&op, &parsed.input).unwrap_or_else(|e| panic!("{e}"));
        let notes = relayout::codegen_notes(&stages.loops);
        let helped = notes.iter().all(|n| n.contains(note));
        assert_eq!(
            helped,
            i < helper.len(),
            "{spec}: {notes:?}\n{}",
            stages.loops
        );
        let kernel = relayout_jit::CompiledKernel::compile(&stages.loops).unwrap();
        let stages_run: Vec<&str> = kernel.compile_timings().iter().map(|t| t.stage).collect();
        assert_eq!(
            stages_run == ["verify", "helpers"],
            helped,
            "{spec}: {stages_run:?}"
        );
        if let Err(why) = check_against_reference(&op, &parsed.input, seed + i as u64) {
            failures.push(format!("{spec}: {why}"));
        }
        let src = random_bytes(byte_len(&parsed.input), seed + 500 + i as u64);
        let want = relayout_reference::reference(&op, &parsed.input, &src).unwrap();
        failures.extend(guarded_pieces_failures(spec, &kernel, &src, &want));
        failures.extend(misaligned_destination_failure(spec, &kernel, &src, &want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Compiles `op` for `input`, runs it guarded on random data, and compares with the reference
/// implementation.
fn check_against_reference(op: &Op, input: &TensorType, seed: u64) -> Result<(), String> {
    let kernel = compile(op, input).map_err(|e| format!("does not compile: {e}"))?;
    let src = random_bytes(byte_len(input), seed);
    let want = relayout_reference::reference(op, input, &src)
        .map_err(|e| format!("the reference refused it: {e}"))?;
    let output = kernel.output_type().clone();
    match run_guarded(&kernel, &src, &|got| {
        compare(&output, &want, got, None).map_err(|m| m.to_string())
    }) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

#[test]
fn every_conformance_case_in_guarded_buffers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let (mut ran, mut failures) = (0, Vec::new());
    for path in find_cases(&dir) {
        let case = load_case(&path).unwrap_or_else(|e| panic!("{e}"));
        // Invalid cases never reach machine code; tests/conformance.rs checks their errors.
        let (
            Expected::Output {
                ty,
                bytes,
                tolerance,
            },
            Some(input),
        ) = (&case.expected, &case.input_bytes)
        else {
            continue;
        };
        let kernel = match Op::from_attrs(&case.op_name, &case.attrs)
            .map_err(relayout::Error::from)
            .and_then(|op| compile(&op, &case.input))
        {
            Ok(k) => k,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        if let Some(why) = run_guarded(&kernel, input, &|got| {
            compare(ty, bytes, got, *tolerance).map_err(|m| m.to_string())
        }) {
            failures.push(format!("{}: {why}", case.name));
        }
        ran += 1;
    }
    assert!(
        ran >= 100,
        "only {ran} valid cases found under {}",
        dir.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The op of a bench/suite.json entry on a small input of the same attributes: each input dim
/// is shrunk to the smallest value from 3 up that keeps the op valid (so divisibility by the
/// block sizes, crops and paddings stays as it was). Col2Im's input is fixed by its attributes,
/// so its image is shrunk instead and the input recomputed.
fn small_variant(entry: &serde_json::Value) -> (String, Op, TensorType) {
    let name = entry["name"].as_str().expect("a name").to_string();
    let mut attrs = relayout::attrs_from_json(&entry["attrs"]).expect("suite attributes");
    let dtype = DType::from_name(entry["dtype"].as_str().expect("a dtype")).expect("a dtype");
    let mut shape: Vec<u64> = entry["input_shape"]
        .as_array()
        .expect("an input shape")
        .iter()
        .map(|d| d.as_u64().expect("a dim"))
        .collect();
    let op_name = entry["op"].as_str().expect("an op");
    if op_name == "Col2Im" {
        return small_col2im(name, &mut attrs, dtype, &shape);
    }
    let op = Op::from_attrs(op_name, &attrs).expect("a valid suite op");
    for i in 0..shape.len() {
        let full = shape[i];
        let candidates = full.min(3)..=full.min(256);
        if let Some(v) = candidates.into_iter().find(|&v| {
            let mut trial = shape.clone();
            trial[i] = v;
            op.output_type(&TensorType::new(dtype, trial)).is_ok()
        }) {
            shape[i] = v;
        }
    }
    (name, op, TensorType::new(dtype, shape))
}

fn small_col2im(
    name: String,
    attrs: &mut relayout::Attrs,
    dtype: DType,
    shape: &[u64],
) -> (String, Op, TensorType) {
    let Op::Col2Im {
        image_shape,
        block_shape,
        dilations,
        pads,
        strides,
    } = Op::from_attrs("Col2Im", attrs).expect("a valid suite op")
    else {
        unreachable!("Col2Im attributes make a Col2Im")
    };
    let m = image_shape.len();
    let mut blocks = 1i64;
    let mut image = Vec::with_capacity(m);
    for i in 0..m {
        let (pb, pe) = (pads[i], pads[m + i]);
        let span = dilations[i] * (block_shape[i] - 1) + 1;
        let img = image_shape[i].min(6).max(span - pb - pe);
        blocks *= (img + pb + pe - span) / strides[i] + 1;
        image.push(img);
    }
    let k: i64 = block_shape.iter().product();
    let op = Op::Col2Im {
        image_shape: image,
        block_shape,
        dilations,
        pads,
        strides,
    };
    // Two images of two channels, and an integer type of the suite's width, so that sums are
    // exact in any order.
    let dtype = match dtype.size() {
        1 => DType::U8,
        2 => DType::I16,
        4 => DType::I32,
        _ => DType::I64,
    };
    let input = TensorType::new(dtype, [shape[0].min(2), 2 * k as u64, blocks as u64]);
    (name, op, input)
}

#[test]
fn bench_suite_ops_on_small_shapes() {
    suite_ops_on_small_shapes("bench/suite.json");
}

/// The same for the ops around the seeds (Transpose, Pad, Slice, Tile, Reshape, Im2Col).
#[test]
fn bench_suite_beyond_ops_on_small_shapes() {
    suite_ops_on_small_shapes("bench/suite_beyond.json");
}

fn suite_ops_on_small_shapes(suite: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(suite);
    let text = std::fs::read_to_string(&path).expect("the suite file");
    let suite: Vec<serde_json::Value> = serde_json::from_str(&text).expect("a JSON array");
    assert!(!suite.is_empty());
    let mut failures = Vec::new();
    for (i, entry) in suite.iter().enumerate() {
        let (name, op, input) = small_variant(entry);
        let size = input.size_bytes().expect("small");
        assert!(size <= 256 << 10, "{name}: {input} is not small");
        if let Err(why) = check_against_reference(&op, &input, i as u64) {
            failures.push(format!("{name} ({op:?} on {input}): {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Statements are split over threads only when they move at least twice 256 KiB, so these
/// shapes are large enough that `run_threaded` really cuts them (and their bands) at the guard
/// pages' edges.
#[test]
fn medium_shapes_split_over_threads() {
    let specs = [
        "SpaceToDepth {block_size = 2} : tensor<2x64x64x32xf32>",
        r#"SpaceToDepth {block_size = 4, data_format = "NCHW_VECT_C"} : tensor<4x8x96x64x4xi8>"#,
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x64x64x64xf32>"#,
        r#"DepthToSpace {block_size = 3, data_format = "NCHW"} : tensor<3x27x61x59xf16>"#,
        "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 2], [1, 2]]} : tensor<2x61x61x32xf32>",
        "SpaceToBatch {block_size = 2, paddings = [[0, 1], [1, 0]]} : tensor<4x95x95x24xui8>",
        "BatchToSpaceND {block_shape = [2, 2], crops = [[1, 2], [1, 2]]} : tensor<8x34x34x32xf32>",
        "BatchToSpace {block_size = 3, crops = [[1, 1], [0, 2]]} : tensor<9x21x23x17xcomplex<f64>>",
        "SpaceToBatchND {block_shape = [8], paddings = [[3, 5]]} : tensor<4x4000x16xf32>",
        "Col2Im {image_shape = [32, 32], block_shape = [3, 3], pads = [1, 1, 1, 1]} : tensor<2x144x1024xi32>",
        // Whole rows whose kernel positions add over windows of them: the vectors at a
        // window's ends are loaded inside the window, so none reads past the source's ends.
        "Col2Im {image_shape = [8, 12, 10], block_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]} : tensor<2x432x960xf32>",
        // The same kind of rows for each kernel depth run through one body, given each
        // depth's addresses and count of planes (`group-alike`, codegen's shared bodies).
        "Col2Im {image_shape = [6, 7, 5], block_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]} : tensor<16x54x210xf64>",
        "Col2Im {image_shape = [8, 12, 10], block_shape = [3, 3, 3], dilations = [2, 1, 1], pads = [2, 1, 1, 2, 1, 1]} : tensor<2x432x960xi64>",
        "Col2Im {image_shape = [20, 23], block_shape = [3, 3], dilations = [2, 2], pads = [2, 2, 2, 2]} : tensor<3x144x460xf64>",
        // Half-precision sums run in the JIT's sum helper (no generated code), in bands whose
        // shared loops the JIT runs and cuts over threads.
        "Col2Im {image_shape = [32, 32], block_shape = [3, 3], pads = [1, 1, 1, 1]} : tensor<4x144x1024xf16>",
        "Col2Im {image_shape = [32, 33], block_shape = [4, 4], pads = [1, 1, 1, 1], strides = [2, 2]} : tensor<4x256x256xbf16>",
        "Col2Im {image_shape = [8, 12, 10], block_shape = [3, 3, 3], pads = [1, 1, 1, 1, 1, 1]} : tensor<2x432x960xf16>",
        // Windows apart (strides equal to the kernel): sums of one term per element, in
        // shuffle blocks (a 16x16 kernel, cut into a band of two statements), in paired
        // phases (2x2), of complex parts, of bools and bf16 (bit operations), and a copy for
        // integers.
        "Col2Im {image_shape = [96, 96], block_shape = [16, 16], strides = [16, 16]} : tensor<8x768x36xf32>",
        "Col2Im {image_shape = [48, 48], block_shape = [3, 3], strides = [3, 3]} : tensor<4x288x256xf64>",
        "Col2Im {image_shape = [64, 64], block_shape = [2, 2], strides = [2, 2]} : tensor<2x256x1024xf32>",
        "Col2Im {image_shape = [32, 32], block_shape = [4, 4], strides = [4, 4]} : tensor<2x512x64xcomplex<f32>>",
        "Col2Im {image_shape = [64, 64], block_shape = [4, 4], strides = [4, 4]} : tensor<2x512x256xi16>",
        "Col2Im {image_shape = [64, 128], block_shape = [4, 4], strides = [4, 4]} : tensor<2x512x512xi1>",
        "Col2Im {image_shape = [64, 64], block_shape = [2, 2], strides = [2, 2]} : tensor<2x256x1024xbf16>",
        // The ops around the seeds, at shapes where the passes fuse bands (Im2Col's padding
        // and rows, reflect Pad's planes with their rows' bands nested), tile transposes and
        // gather with steps.
        "Im2Col {block_shape = [3, 3], pads = [1, 1, 1, 1]} : tensor<2x32x48x48xf32>",
        "Im2Col {block_shape = [2, 3], pads = [0, 1, 2, 0], strides = [2, 1], dilations = [1, 2]} : tensor<2x32x64x64xi16>",
        // ViT's patches (16x16 of 224x224 maps): register blocks in a band of two pieces,
        // the second laid over the first's last columns (14 = 12 + 2 and 8 + 6).
        "Im2Col {block_shape = [16, 16], strides = [16, 16]} : tensor<2x3x224x224xf32>",
        "Im2Col {block_shape = [16, 16], strides = [16, 16]} : tensor<4x3x224x224xf16>",
        "Col2Im {image_shape = [224, 224], block_shape = [16, 16], strides = [16, 16]} : tensor<4x768x196xbf16>",
        r#"Pad {pads = [0, 0, 1, 1, 0, 0, 1, 1], mode = "reflect"} : tensor<2x32x48x48xf32>"#,
        r#"Pad {pads = [0, 0, 2, 3, 0, 0, 1, 2], mode = "edge"} : tensor<4x32x64x65xui8>"#,
        // Bands over rows nested in bands over planes, beside the top rows' own loops.
        r#"Pad {pads = [0, 0, 2, 2, 0, 0, 2, 2], mode = "wrap"} : tensor<2x32x64x64xf16>"#,
        r#"Pad {pads = [0, 1, 1, 0, 0, 1, 1, 0], mode = "constant", constant_value = 1.5} : tensor<2x32x32x64xf32>"#,
        "Slice {starts = [0, 1], ends = [64, 64], axes = [2, 3], steps = [2, 2]} : tensor<2x32x64x64xf32>",
        "Slice {starts = [1, 0], ends = [99, 99], axes = [2, 3], steps = [3, 3]} : tensor<8x8x99x99xui8>",
        "Slice {starts = [-1], ends = [-1000], axes = [3], steps = [-2]} : tensor<8x8x64x65xf16>",
        "Transpose {perm = [1, 0]} : tensor<512x512xf32>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x64x40x40xf32>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<20x96x96x3xui8>",
        // 16x16 byte and 8x8 16-bit register blocks inside cache blocks, and one with leftovers.
        "Transpose {perm = [1, 0]} : tensor<640x1024xui8>",
        "Transpose {perm = [1, 0]} : tensor<320x1024xbf16>",
        "Transpose {perm = [0, 2, 1]} : tensor<16x200x96xf16>",
        // 7x7 maps: 48 positions in register blocks, the 49th a statement of its own.
        "Transpose {perm = [0, 2, 3, 1]} : tensor<8x512x7x7xf32>",
        // Blocks of 64 channels (the source loop of 48 positions is too short for row blocks).
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x2048x7x7xf32>",
        // Blocks of 1024 pixels (9 MiB into channel planes 256 KiB apart, which alias).
        "Transpose {perm = [0, 3, 1, 2]} : tensor<1x256x256x36xf32>",
        // Lane rows that alias in L1 (power-of-two maps), walked by source lines.
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x32x64x64xf32>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<3x24x64x64xf16>",
        // A batch between the two axes that swap, inside the loops of register blocks.
        "Transpose {perm = [2, 1, 0]} : tensor<64x64x64xf32>",
        "Transpose {perm = [0, 3, 2, 1]} : tensor<2x64x48x44xf16>",
        "Transpose {perm = [2, 1, 0]} : tensor<32x48x64xf64>",
        // ... and a batch that `interchange` put outermost, moved inside for aliasing rows.
        "Transpose {perm = [2, 1, 0]} : tensor<128x64x32xf32>",
        "Transpose {perm = [2, 1, 0]} : tensor<256x32x16xf32>",
        // A large plane cut into cache blocks and strip-mined edges on both loops.
        "Transpose {perm = [1, 0]} : tensor<300x1100xf32>",
        // Memory-bound planes of long destination rows, walked a few whole rows at a time.
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x256x40x40xf32>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<4x512x24x24xf16>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<1x384x64x64xi32>",
        "Tile {repeats = [4, 1, 1]} : tensor<1x256x768xf32>",
    ];
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (op, parsed) = op_of(spec);
        let size = parsed.input.size_bytes().unwrap();
        assert!(size >= 512 << 10, "{spec} is too small to be split");
        if let Err(why) = check_against_reference(&op, &parsed.input, i as u64) {
            failures.push(format!("{spec}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Statements and bands whose two outer loops are both too short for the pieces asked run
/// with those loops collapsed into one (a piece starts and ends inside a row of the first
/// loop): forced splits into up to 20 pieces, in guarded buffers, checked against the
/// reference or the interpreter, and each must really run collapsed.
#[test]
fn collapsed_outer_loops_in_guarded_buffers() {
    let specs = [
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x12x3x96xf32>"#,
        "Transpose {perm = [1, 0, 2]} : tensor<3x2x129xi8>",
    ];
    let mut kernels: Vec<(String, relayout::CompiledLoops, Vec<u8>, Vec<u8>)> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (op, parsed) = op_of(spec);
        let loops = relayout::lower(&op, &parsed.input).unwrap().loops;
        let src = random_bytes(byte_len(&parsed.input), i as u64);
        let want = relayout_reference::reference(&op, &parsed.input, &src).unwrap();
        let kernel = relayout::compile_loops(loops).unwrap();
        kernels.push((spec.to_string(), kernel, src, want));
    }
    let band = relayout::ir::parse_loop_kernel(
        "loops @band(%src: tensor<3x5x8xf32>) -> (%dst: tensor<3x5x8xf32>) {\n\
           fused for i0 in 0 to 3, i1 in 0 to 5 {\n\
             fill 32 bytes %dst[0 + 160 * i0 + 32 * i1] = 0\n\
                 for i0 in 0 to 3, i1 in 0 to 5\n\
             copy 16 bytes %dst[8 + 160 * i0 + 32 * i1] = %src[0 + 160 * i0 + 32 * i1]\n\
                 for i0 in 0 to 3, i1 in 0 to 5\n\
           }\n\
         }\n",
    )
    .unwrap();
    let src = random_bytes(480, 9);
    let mut want = random_bytes(480, 99);
    relayout::ir::interpret_loops(&band, &src, &mut want).unwrap();
    kernels.push((
        "band".into(),
        relayout::compile_loops(band).unwrap(),
        src,
        want,
    ));
    for (name, kernel, src, want) in &kernels {
        let extent = kernel.loops().stmts[0].loops[0].extent;
        for guard in Guard::BOTH {
            for pieces in [4, 7, 20] {
                let src = GuardedBuf::from_bytes(src, guard);
                let mut dst = GuardedBuf::from_bytes(&random_bytes(want.len(), 99), guard);
                let report = kernel
                    .run_split(&src, &mut dst, relayout::Split::Pieces(pieces))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                report
                    .check_forced(pieces)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    report.statements.iter().all(|s| s.outer_extent > extent),
                    "{name} in {pieces} pieces did not run collapsed: {report:?}"
                );
                assert!(
                    dst[..] == want[..],
                    "{name}, {pieces} pieces, guard at {guard:?}"
                );
            }
        }
    }
}

/// Kernels with at least 8 MiB of output write their long runs of whole cache lines with
/// streaming stores through helper calls (`relayout_codegen::streams`; runs that start or end
/// inside a line are written with ordinary stores). These shapes make streamed copies and
/// padding fills of 64 to 512 bytes per run, in guarded buffers (which end at a page, so
/// the destination's start is as aligned as its size makes it), on one and two threads. Each
/// must really stream, or the test proves nothing. The two Slices stream runs that are not
/// back to back (rows written in reverse, every other row read), which the helper
/// prefetches a few runs ahead (a prefetch never faults, so the guard cannot see where it
/// points: `helpers/ahead.rs` tests that it visits the nest's runs and nothing else).
#[test]
fn streaming_stores_in_guarded_buffers() {
    let specs = [
        "SpaceToBatchND {block_shape = [8], paddings = [[0, 0]]} : tensor<1x32800x64xf32>",
        "SpaceToBatchND {block_shape = [8], paddings = [[8, 8]]} : tensor<1x131056x64xi8>",
        "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 2], [1, 2]]} : tensor<1x257x257x32xf32>",
        "DepthToSpace {block_size = 2} : tensor<1x64x128x256xf32>",
        "BatchToSpaceND {block_shape = [2, 2], crops = [[1, 0], [0, 1]]} : tensor<4x129x129x32xf32>",
        "Slice {starts = [-1], ends = [-9223372036854775808], axes = [1], steps = [-1]} : tensor<2x4100x256xf32>",
        "Slice {starts = [0], ends = [128], axes = [2], steps = [2]} : tensor<2x130x128x128xf32>",
    ];
    let mut failures = Vec::new();
    let mut without_code = 0;
    for (i, spec) in specs.iter().enumerate() {
        let (op, parsed) = op_of(spec);
        let stages = relayout::lower(&op, &parsed.input).unwrap_or_else(|e| panic!("{e}"));
        let clif = relayout::clif_text(&stages.loops).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            clif.contains("relayout_stream_copy_nest") && clif.contains("relayout_store_fence"),
            "{spec} does not stream:\n{}",
            stages.loops
        );
        // The Slices' runs (1 KiB and 512 bytes) are prefetched ahead of the copy.
        let notes = relayout::codegen_notes(&stages.loops);
        if spec.starts_with("Slice") {
            assert!(
                notes.iter().all(|n| n.contains("prefetched")),
                "{spec}: {notes:?}"
            );
        }
        if let Err(why) = check_against_reference(&op, &parsed.input, 100 + i as u64) {
            failures.push(format!("{spec}: {why}"));
        }
        // Where every statement streams its whole nest, the JIT calls the helpers itself and
        // compiles no code; forced pieces cut the statements' outer loops (or, where those
        // are short, run their wide variants, which are compiled).
        let kernel = relayout_jit::CompiledKernel::compile(&stages.loops).unwrap();
        let stages_run: Vec<&str> = kernel.compile_timings().iter().map(|t| t.stage).collect();
        if stages_run == ["verify", "helpers"] {
            without_code += 1;
        } else {
            assert!(stages_run.contains(&"cranelift"), "{spec}: {stages_run:?}");
        }
        let src = random_bytes(byte_len(&parsed.input), 500 + i as u64);
        let want = relayout_reference::reference(&op, &parsed.input, &src).unwrap();
        failures.extend(guarded_pieces_failures(spec, &kernel, &src, &want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        without_code >= 3,
        "only {without_code} kernels ran without code"
    );
}

/// True transposes of 4- and 8-byte elements into outputs of at least 8 MiB run as 4x4 and
/// 2x2 register transposes with streaming stores, in a helper the JIT calls itself
/// (`relayout_codegen::TransposeBlocks`): NCHW -> NHWC and back, 2-D transposes (whose tiling
/// leaves statements of several sizes), integer types. Each must really take that path (and compile no code); each runs in guarded buffers
/// whole and in 1, 3 and 7 pieces, and once more into a destination 4 bytes off 16-byte
/// alignment, where the helper must fall back to ordinary stores.
#[test]
fn streamed_transposes_in_guarded_buffers() {
    let specs = [
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x64x128x128xf32>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<2x120x120x80xf32>",
        "Transpose {perm = [1, 0]} : tensor<2000x2000xf32>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<1x192x112x112xi32>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<1x64x128x128xf64>",
        "Transpose {perm = [1, 0]} : tensor<1000x1152xi64>",
        // Walked by whole destination rows (1 KiB apart), which the helper streams in order.
        "Transpose {perm = [0, 2, 3, 1]} : tensor<2x256x72x72xf32>",
    ];
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (op, parsed) = op_of(spec);
        let stages = relayout::lower(&op, &parsed.input).unwrap_or_else(|e| panic!("{e}"));
        let notes = relayout::codegen_notes(&stages.loops);
        assert!(
            notes.len() == stages.loops.stmts.len()
                && notes.iter().all(|n| n.contains("register transposes")),
            "{spec}: not every statement is a streamed transpose ({notes:?}):\n{}",
            stages.loops
        );
        let kernel = relayout_jit::CompiledKernel::compile(&stages.loops).unwrap();
        let stages_run: Vec<&str> = kernel.compile_timings().iter().map(|t| t.stage).collect();
        assert_eq!(stages_run, ["verify", "helpers"], "{spec}");
        let src = random_bytes(byte_len(&parsed.input), 700 + i as u64);
        let want = relayout_reference::reference(&op, &parsed.input, &src).unwrap();
        failures.extend(guarded_pieces_failures(spec, &kernel, &src, &want));
        failures.extend(misaligned_destination_failure(spec, &kernel, &src, &want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Random transposes of 4- and 8-byte elements into outputs just above 8 MiB, of 2 to 4 dims
/// of shapes that models have (and odd ones), in every permutation: where the passes leave a
/// statement that the streamed register transposes take, the kernel runs in guarded buffers,
/// whole and in pieces, against the reference. Enough of them must run without generated code
/// (every statement a helper call) for the test to prove something.
#[test]
fn random_large_transposes_in_guarded_buffers() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let dims = [
        4u64, 8, 12, 16, 28, 56, 60, 64, 100, 112, 120, 128, 192, 250,
    ];
    let dtypes = [DType::F32, DType::I32, DType::U32, DType::F64, DType::I64];
    let (mut streamed, mut failures) = (0, Vec::new());
    for case in 0..24u64 {
        let dtype = dtypes[next(dtypes.len() as u64) as usize];
        let rank = 2 + next(3) as usize;
        let mut shape: Vec<u64> = (0..rank - 1)
            .map(|_| dims[next(dims.len() as u64) as usize])
            .collect();
        // The last dim brings the tensor to a little over 8 MiB.
        let elements = ((8u64 << 20) + (1 << 18)) / dtype.size();
        shape.push(
            elements
                .div_ceil(shape.iter().product())
                .next_multiple_of(4),
        );
        let mut perm: Vec<i64> = (0..rank as i64).collect();
        while perm.windows(2).all(|w| w[0] < w[1]) {
            for i in (1..rank).rev() {
                perm.swap(i, next(i as u64 + 1) as usize);
            }
        }
        let input = TensorType::new(dtype, shape.clone());
        let op = Op::Transpose {
            perm: Some(perm.clone()),
        };
        let spec = format!("Transpose {perm:?} of {input}");
        let stages = relayout::lower(&op, &input).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let notes = relayout::codegen_notes(&stages.loops);
        if !notes.iter().any(|n| n.contains("register transposes")) {
            continue;
        }
        let kernel = relayout_jit::CompiledKernel::compile(&stages.loops).unwrap();
        // Every statement a helper call: no generated code (else some run as generated code).
        let stages_run: Vec<&str> = kernel.compile_timings().iter().map(|t| t.stage).collect();
        streamed += usize::from(stages_run == ["verify", "helpers"]);
        let src = random_bytes(byte_len(&input), 900 + case);
        let want = relayout_reference::reference(&op, &input, &src).unwrap();
        failures.extend(guarded_pieces_failures(&spec, &kernel, &src, &want));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        streamed >= 6,
        "only {streamed} of 24 transposes ran without code"
    );
}

/// Strided Slices run as shuffle blocks that load whole 16-byte vectors, skipped elements
/// included, while the verifier proved in bounds only the elements read. Here the last (or,
/// reversed, the first) element read is the last (first) element of the buffer: steps 2 from
/// start 1 to the end, odd rows, step 3, reversed steps, every element size. Each must really
/// take that path, and stay inside its guarded buffers.
#[test]
fn strided_slices_reaching_the_buffer_ends() {
    let specs = [
        "Slice {starts = [1], ends = [128], axes = [1], steps = [2]} : tensor<3x128xf32>",
        "Slice {starts = [0], ends = [127], axes = [1], steps = [2]} : tensor<5x127xf32>",
        "Slice {starts = [1], ends = [127], axes = [1], steps = [2]} : tensor<5x127xf32>",
        "Slice {starts = [0], ends = [94], axes = [1], steps = [3]} : tensor<4x94xf32>",
        "Slice {starts = [2], ends = [98], axes = [1], steps = [3]} : tensor<3x98xi8>",
        "Slice {starts = [1], ends = [64], axes = [1], steps = [2]} : tensor<3x64xui8>",
        "Slice {starts = [3], ends = [64], axes = [1], steps = [4]} : tensor<3x64xf16>",
        "Slice {starts = [1], ends = [9], axes = [1], steps = [2]} : tensor<7x9xf64>",
        "Slice {starts = [2], ends = [11], axes = [1], steps = [3]} : tensor<5x11xi64>",
        "Slice {starts = [-1], ends = [-9223372036854775808], axes = [1], steps = [-2]} : tensor<3x64xf32>",
        "Slice {starts = [-2], ends = [-9223372036854775808], axes = [1], steps = [-2]} : tensor<3x65xf32>",
        "Slice {starts = [-1], ends = [-9223372036854775808], axes = [1], steps = [-3]} : tensor<2x97xui8>",
        "Slice {starts = [1, 1], ends = [64, 64], axes = [2, 3], steps = [2, 2]} : tensor<2x3x64x64xf32>",
        "Slice {starts = [0, 1], ends = [33, 33], axes = [2, 3], steps = [2, 2]} : tensor<2x2x33x33xf16>",
    ];
    let mut failures = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (op, parsed) = op_of(spec);
        let stages = relayout::lower(&op, &parsed.input).unwrap_or_else(|e| panic!("{e}"));
        let notes = relayout::codegen_notes(&stages.loops);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("gathered from whole vectors")),
            "{spec} does not load whole vectors: {notes:?}\n{}",
            stages.loops
        );
        if let Err(why) = check_against_reference(&op, &parsed.input, 200 + i as u64) {
            failures.push(format!("{spec}: {why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Slices of every other element of the last axis into outputs of 8 MiB run in a helper the
/// JIT calls itself (`relayout_codegen::EveryOther`), which loads each row as whole 16-byte
/// vectors, skipped elements included, the last one a vector one element early so that no
/// load passes the row's last element. Every element size, the even and the odd elements,
/// rows whose last element is the last of the source (the odd elements of an even axis, the
/// even ones of an odd axis, from element 1 of an odd axis), and the generated shuffle blocks
/// instead below 8 MiB or for rows of 128 bytes (an Im2Col of stride 2). Whole, in 1, 3 and 7 pieces and on two threads, in guarded buffers,
/// against the reference; and once into a destination 4 bytes off 16-byte alignment, where the
/// helper must fall back to ordinary stores.
#[test]
fn every_other_element_rows_in_guarded_buffers() {
    let helper = [
        "Slice {starts = [0, 0], ends = [128, 128], axes = [2, 3], steps = [2, 2]} : tensor<8x64x128x128xf32>",
        "Slice {starts = [1], ends = [129], axes = [3], steps = [2]} : tensor<8x64x64x129xf32>",
        "Slice {starts = [1], ends = [128], axes = [3], steps = [2]} : tensor<8x64x64x128xf32>",
        "Slice {starts = [0], ends = [127], axes = [1], steps = [2]} : tensor<32768x127xf32>",
        "Slice {starts = [0], ends = [128], axes = [1], steps = [2]} : tensor<131072x128xui8>",
        "Slice {starts = [1], ends = [256], axes = [2], steps = [2]} : tensor<32x1024x256xf16>",
        "Slice {starts = [0], ends = [32], axes = [2], steps = [2]} : tensor<64x1024x32xf64>",
    ];
    let generated = [
        "Slice {starts = [1], ends = [128], axes = [3], steps = [2]} : tensor<4x64x64x128xf32>",
        "Im2Col {block_shape = [2, 2], dilations = [1, 1], pads = [0, 0, 0, 0], strides = [2, 2]} : tensor<4x128x64x64xf32>",
    ];
    helper_kernel_failures(&helper, &generated, "every other source element", 300);
}

/// Pixels of three byte channels into planes by the JIT's deinterleave helper (loads of 16
/// and 32 bytes): batches of images, one image (its pixels cut into rows, the channel loop
/// outside them), pixel counts that leave single pixels after the last whole step, the
/// channel loop outside the pixel loop, and shapes that keep generated code (too few pixels,
/// no row cut for one image, four channels). Each must really take its path (the listing and the compile stages say so), in
/// guarded buffers, whole and in pieces, into a misaligned destination, against the reference.
#[test]
fn deinterleaved_pixels_in_guarded_buffers() {
    let helper = [
        "Transpose {perm = [0, 3, 1, 2]} : tensor<16x224x224x3xui8>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<5x7x13x3xui8>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<3x1x97x3xbool>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<2x32x56x3xi8>",
        // A single image: its channel loop is outside its pixel loop, and threads cut the
        // helper's rows of pixels, not the channels.
        "Transpose {perm = [0, 3, 1, 2]} : tensor<1x64x64x3xi8>",
        "Transpose {perm = [1, 0]} : tensor<8192x3xui8>",
        "Transpose {perm = [2, 0, 1]} : tensor<32x56x3xui8>",
    ];
    let generated = [
        "Transpose {perm = [0, 3, 1, 2]} : tensor<8x3x7x3xui8>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<1x97x3x3xui8>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<4x64x64x4xui8>",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<4x64x64x3xf32>",
    ];
    helper_kernel_failures(&helper, &generated, "into three planes", 900);
}

/// The mirror image of the test above: planes of three byte channels into pixels by the
/// JIT's interleave helper (NCHW -> NHWC and CHW -> HWC), and shapes that keep generated code.
#[test]
fn interleaved_pixels_in_guarded_buffers() {
    let helper = [
        "Transpose {perm = [0, 2, 3, 1]} : tensor<16x3x224x224xui8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<5x3x7x13xui8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<1x3x64x64xi8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<3x3x1x97xbool>",
        "Transpose {perm = [1, 0]} : tensor<3x8192xui8>",
        "Transpose {perm = [1, 2, 0]} : tensor<3x2x384xui8>",
    ];
    let generated = [
        "Transpose {perm = [0, 2, 3, 1]} : tensor<8x3x3x7xui8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<1x3x97x3xui8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<4x4x64x64xui8>",
        "Transpose {perm = [0, 2, 3, 1]} : tensor<4x3x64x64xf32>",
    ];
    helper_kernel_failures(&helper, &generated, "from three planes", 1900);
}

/// Bands of two and three shared loops whose members gather every other element (the
/// shuffle planner loads whole vectors with the skipped bytes): inside a band, a member's nest
/// starts at a point of the shared loops, so its vector loads are proven against the source
/// less what the outer shared loops add. The odd elements' last vector of a row would read
/// four bytes past the source's end in the last band iteration; proven against the whole
/// source from the band's first iteration it would be taken, and the guard page after the
/// source would catch it. Whole runs and runs cut into pieces, both guards, against the
/// interpreter.
#[test]
fn deep_bands_of_gathers_in_guarded_buffers() {
    let depth2 = "loops @gather(%src: tensor<4x8x64xf32>) -> (%dst: tensor<4x8x2x32xf32>) {\n\
           fused for i0 in 0 to 4, i1 in 0 to 8 {\n\
             copy 4 bytes %dst[0 + 2048 * i0 + 256 * i1 + 4 * i2] = %src[0 + 2048 * i0 + 256 * i1 + 8 * i2]\n\
                 for i0 in 0 to 4, i1 in 0 to 8, i2 in 0 to 32\n\
             copy 4 bytes %dst[128 + 2048 * i0 + 256 * i1 + 4 * i2] = %src[4 + 2048 * i0 + 256 * i1 + 8 * i2]\n\
                 for i0 in 0 to 4, i1 in 0 to 8, i2 in 0 to 32\n\
           }\n\
         }\n";
    let depth3 = "loops @gather(%src: tensor<4x2x4x64xf32>) -> (%dst: tensor<4x2x4x2x32xf32>) {\n\
           fused for i0 in 0 to 4, i1 in 0 to 2, i2 in 0 to 4 {\n\
             copy 4 bytes %dst[128 + 2048 * i0 + 1024 * i1 + 256 * i2 + 4 * i3] = %src[4 + 2048 * i0 + 1024 * i1 + 256 * i2 + 8 * i3]\n\
                 for i0 in 0 to 4, i1 in 0 to 2, i2 in 0 to 4, i3 in 0 to 32\n\
             copy 4 bytes %dst[0 + 2048 * i0 + 1024 * i1 + 256 * i2 + 4 * i3] = %src[0 + 2048 * i0 + 1024 * i1 + 256 * i2 + 8 * i3]\n\
                 for i0 in 0 to 4, i1 in 0 to 2, i2 in 0 to 4, i3 in 0 to 32\n\
           }\n\
         }\n";
    for (k, text) in [depth2, depth3].into_iter().enumerate() {
        let loops = relayout::ir::parse_loop_kernel(text).unwrap();
        let depth = loops.bands[0].depth;
        let notes = relayout::codegen_notes(&loops);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("gathered from whole vectors")),
            "depth {depth}: no whole-vector gather: {notes:?}"
        );
        let src = random_bytes(8192, 300 + k as u64);
        let mut want = random_bytes(8192, 400);
        relayout::ir::interpret_loops(&loops, &src, &mut want).unwrap();
        let kernel = relayout::compile_loops(loops).unwrap();
        for guard in Guard::BOTH {
            for split in [relayout::Split::Pieces(1), relayout::Split::Pieces(3)] {
                let src = GuardedBuf::from_bytes(&src, guard);
                let mut dst = GuardedBuf::from_bytes(&random_bytes(8192, 400), guard);
                kernel
                    .run_split(&src, &mut dst, split)
                    .unwrap_or_else(|e| panic!("depth {depth}: {e}"));
                assert!(
                    dst[..] == want[..],
                    "depth {depth}, {split:?}, guard at {guard:?}"
                );
            }
        }
    }
}

/// Random small ops of all thirteen kinds through the differential body, which runs the JIT in
/// guarded buffers.
#[test]
fn random_ops_in_guarded_buffers() {
    for seed in 0..300u64 {
        let data = random_bytes(48, seed);
        bodies::differential_bytes(&data);
    }
}

/// Random loop kernels whose accesses reach exactly the first and last byte of each buffer:
/// the verifier's bounds, the code generator's vector and memcpy paths, and the guard pages
/// all meet at the edge.
#[test]
fn random_tight_loop_kernels_in_guarded_buffers() {
    for seed in 0..300u64 {
        let data = random_bytes(96, seed ^ 0x5eed);
        bodies::tight_loops_bytes(&data);
    }
}

// ---------------------------------------------------------------------------------------------
// Proof that the guard works: a child process writes one byte outside a guarded buffer and
// must die of SIGSEGV.

/// What the child test does, from this environment variable: `end` and `start` write just
/// outside the buffer, `far-end` and `far-start` one stride plus one run of the largest
/// possible kernel (two buffer lengths) outside it, `inside` writes its last byte (and must
/// survive).
const CHILD_ENV: &str = "RELAYOUT_GUARD_CHILD";

/// Not a test of its own: the body of the child process of `the_guard_catches_overruns`.
/// Without the environment variable it does nothing.
#[test]
fn guard_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    let guard = match mode.as_str() {
        "start" | "far-start" => Guard::Start,
        _ => Guard::End,
    };
    // Larger than a page, so that `far-*` jumps a single guard page.
    const LEN: usize = 10_000;
    let mut buf = GuardedBuf::new(LEN, guard);
    if mode == "inside" {
        buf[LEN - 1] = 1;
        buf[0] = 1;
        return;
    }
    let distance = if mode.starts_with("far") { 2 * LEN } else { 1 };
    buf.poke_outside(distance);
    panic!("the write outside the buffer did not fault");
}

/// Runs `guard_child` in a child process with `mode`, and returns its exit status.
fn run_child(mode: &str) -> std::process::ExitStatus {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args(["guard_child", "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, mode)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The filter must have matched, or the child "passed" without doing anything.
    assert!(
        mode != "inside" || stdout.contains("1 passed"),
        "the child ran no test:\n{stdout}"
    );
    out.status
}

#[test]
fn the_guard_catches_overruns_and_underruns() {
    use std::os::unix::process::ExitStatusExt;
    const SIGSEGV: i32 = 11;
    let inside = run_child("inside");
    assert!(
        inside.success(),
        "writing inside the buffer failed: {inside:?}"
    );
    for mode in ["end", "start", "far-end", "far-start"] {
        let status = run_child(mode);
        assert_eq!(
            status.signal(),
            Some(SIGSEGV),
            "a write outside a buffer guarded at the {mode} was not caught: {status:?}"
        );
    }
}

/// Kernels of `relayout_codegen::MANY_STATEMENTS` statements or more (a padded Im2Col of a
/// large kernel: about one statement per kernel position) run every copy and fill in the
/// JIT's nest helpers and compile no code; smaller ones keep generated code. Both against the
/// reference in guarded buffers, threaded, in pieces and into a misaligned destination.
#[test]
fn kernels_of_many_statements_in_guarded_buffers() {
    let helper = [
        "Im2Col {block_shape = [17, 17], pads = [8, 8, 8, 8]} : tensor<1x2x20x20xf32>",
        "Im2Col {block_shape = [17, 17], pads = [8, 8, 8, 8]} : tensor<2x3x19x21xi8>",
        "Im2Col {block_shape = [300], pads = [150, 149]} : tensor<1x3x320xf64>",
    ];
    let generated =
        ["Im2Col {block_shape = [13, 13], pads = [6, 6, 6, 6]} : tensor<1x2x20x20xf32>"];
    helper_kernel_failures(&helper, &generated, "by the JIT's nest helper", 2900);
}

/// The nest helpers' fills of other values than zero, and copies, in a band and outside one:
/// a kernel of `MANY_STATEMENTS` statements given as loop IR, against the interpreter.
#[test]
fn many_statements_of_fills_and_copies_in_guarded_buffers() {
    let n = relayout_codegen::MANY_STATEMENTS + 8;
    // Each statement writes 12 bytes of its own 16 in every row of 4 x (16 n) bytes; the first
    // half in a band over the rows, the second half one statement after another.
    let row = 16 * n as i64;
    let mut text = format!(
        "loops @many(%src: tensor<4x{}xf32>) -> (%dst: tensor<4x{}xf32>) {{\n",
        4 * n,
        4 * n
    );
    let stmt = |j: usize| {
        let at = 16 * j as i64;
        let body = if j % 3 == 0 {
            format!("fill 12 bytes %dst[{at} + {row} * i0] = -0.5")
        } else {
            format!(
                "copy 12 bytes %dst[{at} + {row} * i0] = %src[{} + {row} * i0]",
                at + 4
            )
        };
        format!("{body}\n    for i0 in 0 to 4\n")
    };
    text.push_str("fused for i0 in 0 to 4 {\n");
    for j in 0..n / 2 {
        text.push_str(&stmt(j));
    }
    text.push_str("}\n");
    for j in n / 2..n {
        text.push_str(&stmt(j));
    }
    text.push_str("}\n");
    let loops = relayout::ir::parse_loop_kernel(&text).unwrap();
    assert_eq!(loops.bands.len(), 1);
    let notes = relayout::codegen_notes(&loops);
    assert!(
        notes.iter().all(|n| n.contains("by the JIT's nest helper")),
        "{notes:?}"
    );
    let bytes = 4 * 16 * n;
    let src = random_bytes(bytes, 3100);
    let mut want = random_bytes(bytes, 3101);
    relayout::ir::interpret_loops(&loops, &src, &mut want).unwrap();
    // The fills did write -0.5 (the test is not vacuous).
    assert_eq!(want[..4], (-0.5f32).to_le_bytes());
    let kernel = relayout::compile_loops(loops).unwrap();
    for guard in Guard::BOTH {
        for split in [relayout::Split::Pieces(1), relayout::Split::Pieces(3)] {
            let src = GuardedBuf::from_bytes(&src, guard);
            let mut dst = GuardedBuf::from_bytes(&random_bytes(bytes, 3101), guard);
            kernel.run_split(&src, &mut dst, split).unwrap();
            assert!(dst[..] == want[..], "{split:?}, guard at {guard:?}");
        }
    }
}

/// A padded Im2Col of a large kernel whose band over channels writes more than
/// `MAX_ITERATION_FOOTPRINT` bytes an iteration (17x17 of 48x48 maps: 2.7 MB)
/// is still fused, since its band has `MANY_MEMBERS` members or more (each of which would
/// otherwise sweep the whole output), and runs in the JIT's nest helpers (`MANY_STATEMENTS`):
/// against the reference in guarded buffers, threaded and in pieces.
#[test]
fn bands_of_many_members_in_guarded_buffers() {
    let spec = "Im2Col {block_shape = [17, 17], pads = [8, 8, 8, 8]} : tensor<2x2x48x48xf32>";
    let (op, parsed) = op_of(spec);
    let stages = relayout::lower(&op, &parsed.input).unwrap();
    let loops = &stages.loops;
    assert_eq!(loops.bands.len(), 1, "{loops}");
    let band = &loops.bands[0];
    assert!(
        band.len >= relayout::passes::passes::MANY_MEMBERS,
        "{loops}"
    );
    let member = &loops.stmts[band.first];
    let iteration = member.loops[0].dst_stride.unsigned_abs();
    assert!(
        iteration > relayout::passes::passes::MAX_ITERATION_FOOTPRINT,
        "{loops}"
    );
    helper_kernel_failures(&[spec], &[], "by the JIT's nest helper", 3300);
}
