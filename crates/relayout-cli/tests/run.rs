//! `relayout run` through the binary: .npy files in and out, and the errors a user meets.
//! The .npy files are written and read here by hand (the format is a short header and the raw
//! bytes), independently of the crate the tool uses.

mod support;
use support::relayout;

use std::path::{Path, PathBuf};
use std::process::Output;

/// A fresh directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "relayout-run-{test}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A version 1.0 .npy file: magic, version, header length, the header dict padded with spaces
/// to a multiple of 64 bytes and ended by a newline, then the data.
fn npy(descr: &str, fortran: bool, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let fortran = if fortran { "True" } else { "False" };
    let mut header =
        format!("{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// The header text and the data of a version 1.0 .npy file.
fn parse_npy(bytes: &[u8]) -> (String, Vec<u8>) {
    assert_eq!(
        &bytes[..8],
        b"\x93NUMPY\x01\x00",
        "not a version 1.0 .npy file"
    );
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = String::from_utf8(bytes[10..10 + len].to_vec()).unwrap();
    (header, bytes[10 + len..].to_vec())
}

/// The dims of the `'shape'` tuple of a header, whatever its spacing and trailing comma.
fn shape_of(header: &str) -> Vec<u64> {
    let start = header.find("'shape': (").expect("a shape") + "'shape': (".len();
    let end = start + header[start..].find(')').expect("a closed shape");
    header[start..end]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().unwrap())
        .collect()
}

fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

fn run_op(op: &str, input: &Path, output: &Path) -> Output {
    relayout(&[
        "run",
        op,
        "--input",
        input.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
    ])
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Writes `x.npy` in `dir`, a 1x4x4x2 float32 array of 0, 0.5, 1, ...: its bytes and path.
fn write_input(dir: &TempDir) -> (Vec<u8>, PathBuf) {
    let data = f32_bytes((0..32).map(|i| i as f32 * 0.5));
    let x = dir.path("x.npy");
    std::fs::write(&x, npy("<f4", false, &[1, 4, 4, 2], &data)).unwrap();
    (data, x)
}

#[test]
fn space_to_depth_then_depth_to_space_gives_the_input_back() {
    let dir = TempDir::new("roundtrip");
    let (data, x) = write_input(&dir);
    let (y, z) = (dir.path("y.npy"), dir.path("z.npy"));

    let out = run_op(
        "SpaceToDepth {block_size = 2} : tensor<1x4x4x2xf32>",
        &x,
        &y,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (header, moved) = parse_npy(&std::fs::read(&y).unwrap());
    assert!(header.contains("'descr': '<f4'"), "{header}");
    assert_eq!(shape_of(&header), [1, 2, 2, 8], "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    assert_ne!(moved, data);

    let out = run_op(
        "DepthToSpace {block_size = 2} : tensor<1x2x2x8xf32>",
        &y,
        &z,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (header, back) = parse_npy(&std::fs::read(&z).unwrap());
    assert_eq!(shape_of(&header), [1, 4, 4, 2], "{header}");
    assert_eq!(back, data);
}

/// The same round trip as one composed kernel (`--then`), and a chain whose ops each move the
/// data: its output is what running the ops one by one writes.
#[test]
fn a_chain_runs_as_one_kernel() {
    let dir = TempDir::new("chain");
    let (data, x) = write_input(&dir);
    let run = |op: &str, then: &[&str], input: &Path, output: &Path| {
        let mut args = vec![
            "run",
            op,
            "--input",
            input.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
        ];
        for t in then {
            args.extend(["--then", t]);
        }
        let out = relayout(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        parse_npy(&std::fs::read(output).unwrap())
    };
    let y = dir.path("y.npy");
    let (header, back) = run(
        "SpaceToDepth {block_size = 2}",
        &["DepthToSpace {block_size = 2}"],
        &x,
        &y,
    );
    assert_eq!(shape_of(&header), [1, 4, 4, 2], "{header}");
    assert_eq!(back, data);

    let (s2d, t) = (dir.path("s2d.npy"), dir.path("t.npy"));
    run("SpaceToDepth {block_size = 2}", &[], &x, &s2d);
    let (_, one_by_one) = run("Transpose {perm = [0, 3, 1, 2]}", &[], &s2d, &t);
    let (header, chained) = run(
        "SpaceToDepth {block_size = 2}",
        &["Transpose {perm = [0, 3, 1, 2]}"],
        &x,
        &dir.path("chained.npy"),
    );
    assert_eq!(shape_of(&header), [1, 8, 2, 2], "{header}");
    assert_ne!(chained, data);
    assert_eq!(chained, one_by_one);
}

#[test]
fn every_numpy_dtype_goes_through() {
    let dir = TempDir::new("dtypes");
    for (descr, mlir, size) in [
        ("<f2", "f16", 2),
        ("<f8", "f64", 8),
        ("|i1", "i8", 1),
        ("<i2", "i16", 2),
        ("<i4", "i32", 4),
        ("<i8", "i64", 8),
        ("|u1", "ui8", 1),
        ("<u2", "ui16", 2),
        ("<u4", "ui32", 4),
        ("<u8", "ui64", 8),
        ("|b1", "i1", 1),
        ("<c8", "complex<f32>", 8),
        ("<c16", "complex<f64>", 16),
    ] {
        // Eight elements, each of distinct bytes (booleans: a 0/1 pattern that the
        // permutation below changes), so a wrong order or a dropped byte shows.
        const BOOLS: [u8; 8] = [1, 0, 0, 0, 1, 1, 0, 1];
        let element = |e: usize| -> Vec<u8> {
            if descr == "|b1" {
                vec![BOOLS[e]]
            } else {
                (0..size).map(|k| (e * size + k + 1) as u8).collect()
            }
        };
        let data: Vec<u8> = (0..8).flat_map(element).collect();
        let x = dir.path("x.npy");
        let y = dir.path("y.npy");
        std::fs::write(&x, npy(descr, false, &[1, 2, 4, 1], &data)).unwrap();
        let op = format!("SpaceToDepth {{block_size = 2}} : tensor<1x2x4x1x{mlir}>");
        let out = run_op(&op, &x, &y);
        assert!(out.status.success(), "{descr}: {}", stderr(&out));
        let (header, got) = parse_npy(&std::fs::read(&y).unwrap());
        assert!(header.contains(&format!("'descr': '{descr}'")), "{header}");
        assert_eq!(shape_of(&header), [1, 1, 2, 4], "{header}");
        // Output pixel j holds the 2x2 block of columns 2j and 2j+1: elements (h, w) = (0,
        // 2j), (0, 2j+1), (1, 2j), (1, 2j+1) of the 2x4 image.
        let want: Vec<u8> = [0, 1, 4, 5, 2, 3, 6, 7]
            .into_iter()
            .flat_map(element)
            .collect();
        assert_ne!(
            want, data,
            "{descr}: the test data must not be permutation-invariant"
        );
        assert_eq!(got, want, "{descr}");
    }
}

#[test]
fn a_case_supplies_its_own_input() {
    let dir = TempDir::new("case");
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/conformance/SpaceToDepth/s2d_tfdoc_1_1x2x2x1.json");
    let y = dir.path("y.npy");
    let out = relayout(&[
        "run",
        "--case",
        case.to_str().unwrap(),
        "--output",
        y.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (header, got) = parse_npy(&std::fs::read(&y).unwrap());
    assert_eq!(shape_of(&header), [1, 1, 1, 4], "{header}");
    assert_eq!(got, f32_bytes([1.0, 2.0, 3.0, 4.0]));
}

#[test]
fn a_file_of_another_dtype_is_refused_naming_both() {
    let dir = TempDir::new("dtype");
    let x = dir.path("x.npy");
    std::fs::write(&x, npy("<f8", false, &[1, 2, 2, 1], &[0; 32])).unwrap();
    let out = run_op(
        "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>",
        &x,
        &dir.path("y.npy"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("tensor<1x2x2x1xf64>"), "{err}");
    assert!(err.contains("tensor<1x2x2x1xf32>"), "{err}");
    assert!(!dir.path("y.npy").exists());
}

#[test]
fn a_missing_file_is_an_error() {
    let dir = TempDir::new("missing");
    let out = run_op(
        "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>",
        &dir.path("nothing-here.npy"),
        &dir.path("y.npy"),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("cannot open") && err.contains("nothing-here.npy"),
        "{err}"
    );
}

#[test]
fn layouts_relayout_cannot_take_are_refused_clearly() {
    let dir = TempDir::new("layouts");
    let x = dir.path("x.npy");
    let y = dir.path("y.npy");
    let op = "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>";
    let expect = |file: Vec<u8>, op: &str, needle: &str| {
        std::fs::write(&x, file).unwrap();
        let out = run_op(op, &x, &y);
        assert_eq!(out.status.code(), Some(2), "{needle}");
        let err = stderr(&out);
        assert!(err.contains(needle), "expected '{needle}' in: {err}");
        assert!(!err.contains("panicked"), "{err}");
    };
    expect(
        npy("<f4", true, &[1, 2, 2, 1], &[0; 16]),
        op,
        "Fortran order",
    );
    expect(npy(">f4", false, &[1, 2, 2, 1], &[0; 16]), op, "big-endian");
    expect(
        npy("<U1", false, &[1, 2, 2, 1], &[0; 64]),
        op,
        "not one relayout supports",
    );
    expect(
        npy("<f4", false, &[1, 2, 2, 1], &[0; 12]),
        op,
        "only 12 bytes",
    );
    expect(
        npy("<f4", false, &[1, 2, 2, 1], &[0; 20]),
        op,
        "more than 16 bytes",
    );
    expect(b"not numpy".to_vec(), op, "not a .npy file");
    let huge = [1u64 << 40, 1 << 40, 1 << 40];
    expect(npy("<f4", false, &huge, &[]), op, "too large");
    let bf16 = "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xbf16>";
    expect(
        npy("<f2", false, &[1, 2, 2, 1], &[0; 8]),
        bf16,
        "bfloat16 has no NumPy dtype",
    );
}

#[test]
fn without_an_input_file_the_input_counts_up() {
    let dir = TempDir::new("counting");
    // The same op on 0, 1, 2, ... written as a file, and with no file at all.
    let x = dir.path("x.npy");
    std::fs::write(
        &x,
        npy(
            "<f4",
            false,
            &[1, 2, 2, 4],
            &f32_bytes((0..16).map(|i| i as f32)),
        ),
    )
    .unwrap();
    let op = "DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>";
    let (from_file, counted) = (dir.path("a.npy"), dir.path("b.npy"));
    let out = run_op(op, &x, &from_file);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = relayout(&["run", op, "--output", counted.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("input tensor<1x2x2x4xf32> (0, 1, 2, ...") && text.contains("[12.0, 13.0"),
        "{text}"
    );
    let (_, data) = parse_npy(&std::fs::read(&counted).unwrap());
    assert_eq!(data, parse_npy(&std::fs::read(&from_file).unwrap()).1);
    assert_eq!(
        data,
        f32_bytes([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15].map(|i| i as f32))
    );
    // Integers count modulo their range: int8 wraps after 127, and the printed result shows
    // where each element came from.
    let out = relayout(&["run", "Transpose {perm = [1, 0]} : tensor<2x130xi8>"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("[0, -126], [1, -125]"), "{text}");
    // A kernel given as IR runs on its source type counted up too.
    let ir = relayout(&["lower", op, "--emit", "loop"]);
    assert!(ir.status.success(), "{}", stderr(&ir));
    let file = dir.path("k.ir");
    std::fs::write(&file, &ir.stdout).unwrap();
    let from_ir = dir.path("c.npy");
    let out = relayout(&[
        "run",
        "--ir",
        file.to_str().unwrap(),
        "--output",
        from_ir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(parse_npy(&std::fs::read(&from_ir).unwrap()).1, data);
}

#[test]
fn an_op_without_a_type_or_an_input_is_an_error() {
    let out = relayout(&["run", "SpaceToDepth {block_size = 2}"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("input type") && err.contains("--input"),
        "{err}"
    );
}

#[test]
fn the_input_type_may_come_from_the_file_and_the_result_is_printed() {
    let dir = TempDir::new("untyped");
    let x = dir.path("x.npy");
    std::fs::write(
        &x,
        npy(
            "<f4",
            false,
            &[1, 2, 2, 1],
            &f32_bytes([1.0, 2.0, 3.0, 4.0]),
        ),
    )
    .unwrap();
    // No `: tensor<...>`, no --output: the type is the file's and the result is printed.
    let out = relayout(&[
        "run",
        "SpaceToDepth {block_size = 2}",
        "--input",
        x.to_str().unwrap(),
        "--time",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tensor<1x1x1x4xf32>"), "{text}");
    // The one pixel of depth 4 holds the 2x2 block in order.
    assert!(
        text.contains("1, 2, 3, 4") || text.contains("1.0, 2.0, 3.0, 4.0"),
        "{text}"
    );
    // --time prints both times with units.
    let time = text
        .lines()
        .find(|l| l.starts_with("compile "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        time.contains(", run ") && ["ns", "us", "ms"].iter().any(|u| time.contains(u)),
        "{time}"
    );
    // A type given in the op must still be the file's.
    let out = relayout(&[
        "run",
        "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf64>",
        "--input",
        x.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn zero_threads_is_an_error() {
    let dir = TempDir::new("zerothreads");
    let x = dir.path("x.npy");
    std::fs::write(&x, npy("<f4", false, &[1, 2, 2, 1], &f32_bytes([1.0; 4]))).unwrap();
    let out = relayout(&[
        "run",
        "SpaceToDepth {block_size = 2}",
        "--input",
        x.to_str().unwrap(),
        "--threads",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--threads"), "{}", stderr(&out));
}

#[test]
fn ir_text_runs_on_a_file_of_its_source_type() {
    let dir = TempDir::new("ir");
    let x = dir.path("x.npy");
    std::fs::write(
        &x,
        npy(
            "<f4",
            false,
            &[1, 2, 2, 1],
            &f32_bytes([1.0, 2.0, 3.0, 4.0]),
        ),
    )
    .unwrap();
    let op = "SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>";
    let expected = relayout(&["run", op, "--input", x.to_str().unwrap()]);
    assert!(expected.status.success(), "{}", stderr(&expected));
    // Both levels of IR, as `lower` prints them: index-map IR through the default pipeline,
    // loop IR as it is. Each gives what the op gives.
    for emit in ["lowered", "loop"] {
        let ir = relayout(&["lower", op, "--emit", emit]);
        assert!(ir.status.success(), "{}", stderr(&ir));
        let file = dir.path(&format!("{emit}.ir"));
        std::fs::write(&file, &ir.stdout).unwrap();
        let out = relayout(&[
            "run",
            "--ir",
            file.to_str().unwrap(),
            "--input",
            x.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{emit}: {}", stderr(&out));
        assert_eq!(out.stdout, expected.stdout, "{emit}");
    }
    // A file of another type is refused, naming both.
    let y = dir.path("y.npy");
    std::fs::write(&y, npy("<f4", false, &[4], &f32_bytes([1.0; 4]))).unwrap();
    let out = relayout(&[
        "run",
        "--ir",
        dir.path("loop.ir").to_str().unwrap(),
        "--input",
        y.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("tensor<4xf32>") && err.contains("tensor<1x2x2x1xf32>"),
        "{err}"
    );
}

#[test]
fn more_threads_than_work_is_reported() {
    let dir = TempDir::new("fewpieces");
    let x = dir.path("x.npy");
    std::fs::write(&x, npy("<f4", false, &[1, 2, 2, 1], &f32_bytes([1.0; 4]))).unwrap();
    let out = relayout(&[
        "run",
        "SpaceToDepth {block_size = 2}",
        "--input",
        x.to_str().unwrap(),
        "--threads",
        "4",
        "--time",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // 16 bytes give one piece: the note says so, and so does the timing line.
    assert!(
        stderr(&out).contains("4 threads asked, but the work gave at most 1 piece"),
        "{}",
        stderr(&out)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 of 4 threads used"), "{text}");
    // A frame large enough for two pieces uses both threads asked: no note.
    let big = dir.path("big.npy");
    let n = 12 * 64 * 256;
    std::fs::write(
        &big,
        npy(
            "<f4",
            false,
            &[1, 12, 64, 256],
            &f32_bytes((0..n).map(|i| i as f32)),
        ),
    )
    .unwrap();
    let out = relayout(&[
        "run",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"}"#,
        "--input",
        big.to_str().unwrap(),
        "--output",
        dir.path("out.npy").to_str().unwrap(),
        "--threads",
        "2",
        "--time",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(one call, 2 threads,"), "{text}");
    // One thread asked, one used: no note.
    let out = relayout(&[
        "run",
        "SpaceToDepth {block_size = 2}",
        "--input",
        x.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!stderr(&out).contains("note:"), "{}", stderr(&out));
}

#[test]
fn print_shows_the_result_also_when_it_is_written() {
    let dir = TempDir::new("print");
    let (x, y) = (dir.path("x.npy"), dir.path("y.npy"));
    std::fs::write(
        &x,
        npy(
            "<f4",
            false,
            &[1, 2, 2, 4],
            &f32_bytes((0..16).map(|v| v as f32)),
        ),
    )
    .unwrap();
    let out = relayout(&[
        "run",
        "DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>",
        "--input",
        x.to_str().unwrap(),
        "--output",
        y.to_str().unwrap(),
        "--print",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    // The written file is named, then the result tensor follows with its type.
    assert!(
        text.contains(&format!("{}: tensor<1x4x4x1xf32>", y.display())),
        "{text}"
    );
    assert!(text.contains("tensor<1x4x4x1xf32>:\n"), "{text}");
    // DepthToSpace spreads each pixel's depth over a 2x2 block: the first output row is the
    // first two elements of pixels 0 and 1.
    let values: Vec<f32> = text
        .split("tensor<1x4x4x1xf32>:\n")
        .nth(1)
        .unwrap()
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(
        values,
        [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15].map(|v| v as f32),
        "{text}"
    );
    // And the file holds the same values.
    let (_, data) = parse_npy(&std::fs::read(&y).unwrap());
    assert_eq!(data, f32_bytes(values));
}
