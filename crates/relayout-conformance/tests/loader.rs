//! The case loader: every dtype to exact bytes, absent data, and typed errors (with the file's
//! name) for every way a file can be wrong; plus `find_cases`.

use proptest::prelude::*;
use relayout_conformance::{find_cases, parse_case, Expected, LoadErrorKind};
use relayout_ir::{DType, TensorType};
use relayout_ops::AttrValue;
use std::path::Path;

fn case_with_input(input: &str) -> String {
    format!(
        r#"{{"name": "t", "op": "SpaceToDepth", "attrs": {{"block_size": 2}},
            "input": {input}, "error": "bad_rank", "source": "test"}}"#
    )
}

fn input_bytes(dtype: &str, shape: &str, data: &str) -> Vec<u8> {
    let text = case_with_input(&format!(
        r#"{{"dtype": "{dtype}", "shape": {shape}, "data": {data}}}"#
    ));
    parse_case(&text, "t.json")
        .unwrap_or_else(|e| panic!("{e}"))
        .input_bytes
        .unwrap()
}

fn load_error(text: &str) -> (LoadErrorKind, String) {
    let e = parse_case(text, "cases/bad.json").expect_err("must not load");
    assert_eq!(e.file, "cases/bad.json");
    assert!(e.to_string().starts_with("cases/bad.json: "), "{e}");
    (e.kind, e.message)
}

#[test]
fn a_valid_case_loads_completely() {
    let text = r#"{
      "name": "col2im_x", "op": "Col2Im",
      "attrs": {"image_shape": [2, 2], "block_shape": [1, 1], "pads": [0, 0, 0, 0], "mode": "x"},
      "input": {"dtype": "float32", "shape": [1, 1, 4], "data": [1.0, 2.0, "nan", -0.0]},
      "output": {"dtype": "float32", "shape": [1, 1, 2, 2], "data": [1.0, 2.0, "nan", -0.0]},
      "tolerance": {"rtol": 1e-05, "atol": 0.001},
      "source": "here"
    }"#;
    let c = parse_case(text, "x.json").unwrap();
    assert_eq!(c.name, "col2im_x");
    assert_eq!(c.op_name, "Col2Im");
    assert_eq!(
        c.attrs["image_shape"],
        AttrValue::List(vec![AttrValue::Int(2), AttrValue::Int(2)])
    );
    assert_eq!(c.attrs["mode"], AttrValue::Str("x".into()));
    assert_eq!(c.input, TensorType::new(DType::F32, [1, 1, 4]));
    assert_eq!(c.source.as_deref(), Some("here"));
    let Expected::Output {
        ty,
        bytes,
        tolerance,
    } = c.expected
    else {
        panic!("expected an output");
    };
    assert_eq!(ty, TensorType::new(DType::F32, [1, 1, 2, 2]));
    assert_eq!(bytes.len(), 16);
    assert_eq!(tolerance, Some((1e-5, 1e-3)));
    assert_eq!(&bytes[12..], &(-0.0f32).to_le_bytes());
}

#[test]
fn data_may_be_absent_from_the_input() {
    let c = parse_case(
        &case_with_input(r#"{"dtype": "int8", "shape": [2, 3]}"#),
        "t.json",
    )
    .unwrap();
    assert_eq!(c.input_bytes, None);
    assert_eq!(c.input, TensorType::new(DType::I8, [2, 3]));
    assert_eq!(c.expected, Expected::Error("bad_rank".into()));
}

#[test]
fn every_dtype_converts_exactly() {
    assert_eq!(
        input_bytes("float64", "[2]", "[0.1, -1e308]"),
        [0.1f64.to_le_bytes(), (-1e308f64).to_le_bytes()].concat()
    );
    assert_eq!(
        input_bytes("float16", "[1]", "[-2.5]"),
        half::f16::from_f32(-2.5).to_le_bytes()
    );
    assert_eq!(
        input_bytes("bfloat16", "[1]", r#"["-inf"]"#),
        half::bf16::NEG_INFINITY.to_le_bytes()
    );
    assert_eq!(input_bytes("int8", "[2]", "[-128, 127]"), [0x80, 0x7f]);
    assert_eq!(input_bytes("uint8", "[1]", "[255]"), [255]);
    assert_eq!(input_bytes("int16", "[1]", "[-2]"), (-2i16).to_le_bytes());
    assert_eq!(
        input_bytes("uint16", "[1]", "[65535]"),
        65535u16.to_le_bytes()
    );
    assert_eq!(
        input_bytes("int32", "[1]", "[-2147483648]"),
        i32::MIN.to_le_bytes()
    );
    assert_eq!(
        input_bytes("uint32", "[1]", "[4294967295]"),
        u32::MAX.to_le_bytes()
    );
    assert_eq!(
        input_bytes("int64", "[1]", "[-9223372036854775808]"),
        i64::MIN.to_le_bytes()
    );
    assert_eq!(
        input_bytes("uint64", "[1]", "[18446744073709551615]"),
        u64::MAX.to_le_bytes()
    );
    assert_eq!(input_bytes("bool", "[2]", "[true, false]"), [1, 0]);
    assert_eq!(
        input_bytes("complex64", "[1]", r#"[[1.5, -0.0]]"#),
        [1.5f32.to_le_bytes(), (-0.0f32).to_le_bytes()].concat()
    );
    assert_eq!(
        input_bytes("complex128", "[1]", r#"[["nan", "inf"]]"#)[8..],
        f64::INFINITY.to_le_bytes()
    );
    // Integers just above 2^53 are not rounded through f64.
    assert_eq!(
        input_bytes("int64", "[1]", "[9007199254740993]"),
        9007199254740993i64.to_le_bytes()
    );
    assert_eq!(input_bytes("float32", "[0]", "[]"), Vec::<u8>::new());
}

#[test]
fn malformed_files_are_typed_errors() {
    assert_eq!(load_error("{").0, LoadErrorKind::Json);
    assert_eq!(load_error("[]").0, LoadErrorKind::Schema);
    assert_eq!(
        load_error(r#"{"op": "X", "attrs": {}, "input": {}, "error": "e"}"#).0,
        LoadErrorKind::Schema
    );
    let no_expectation =
        r#"{"name": "t", "op": "X", "attrs": {}, "input": {"dtype": "bool", "shape": []}}"#;
    assert_eq!(load_error(no_expectation).0, LoadErrorKind::Schema);
    let (kind, msg) = load_error(&case_with_input(
        r#"{"dtype": "float8", "shape": [1], "data": [1]}"#,
    ));
    assert_eq!(kind, LoadErrorKind::UnknownDType);
    assert!(msg.contains("float8"), "{msg}");
    let (kind, msg) = load_error(&case_with_input(
        r#"{"dtype": "int8", "shape": [2, 2], "data": [1, 2, 3]}"#,
    ));
    assert_eq!(kind, LoadErrorKind::DataLength);
    assert!(msg.contains("3 elements") && msg.contains("4"), "{msg}");
    for bad_data in [
        r#"{"dtype": "int8", "shape": [1], "data": [128]}"#,
        r#"{"dtype": "uint64", "shape": [1], "data": [-1]}"#,
        r#"{"dtype": "int32", "shape": [1], "data": [1.5]}"#,
        r#"{"dtype": "float32", "shape": [1], "data": ["NaN"]}"#,
        r#"{"dtype": "float32", "shape": [1], "data": [true]}"#,
        r#"{"dtype": "bool", "shape": [1], "data": [0]}"#,
        r#"{"dtype": "complex64", "shape": [1], "data": [1.0]}"#,
        r#"{"dtype": "complex64", "shape": [1], "data": [[1.0, 2.0, 3.0]]}"#,
    ] {
        assert_eq!(
            load_error(&case_with_input(bad_data)).0,
            LoadErrorKind::Data,
            "{bad_data}"
        );
    }
    for bad_shape in [
        r#"{"dtype": "int8", "shape": [-1], "data": []}"#,
        r#"{"dtype": "int8", "shape": 3, "data": []}"#,
        r#"{"dtype": "int8", "shape": [1], "data": 3}"#,
        r#"{"dtype": 8, "shape": [1], "data": [1]}"#,
    ] {
        assert_eq!(
            load_error(&case_with_input(bad_shape)).0,
            LoadErrorKind::Schema,
            "{bad_shape}"
        );
    }
    // An element count that overflows cannot match any data.
    let huge = r#"{"dtype": "int8", "shape": [18446744073709551615, 2], "data": [1]}"#;
    assert_eq!(
        load_error(&case_with_input(huge)).0,
        LoadErrorKind::DataLength
    );
    let both = r#"{"name": "t", "op": "X", "attrs": {}, "input": {"dtype": "bool", "shape": []},
        "error": "e", "output": {"dtype": "bool", "shape": [], "data": [true]}}"#;
    assert_eq!(load_error(both).0, LoadErrorKind::Schema);
    // A float attribute loads (Pad's constant_value is one); the op refuses it where it
    // wants an integer.
    let float_attr = r#"{"name": "t", "op": "SpaceToDepth", "attrs": {"block_size": 2.5},
        "input": {"dtype": "bool", "shape": []}, "error": "e"}"#;
    let case = parse_case(float_attr, "t.json").expect("a float attribute loads");
    assert_eq!(case.attrs["block_size"], AttrValue::Float(2.5));
    assert_eq!(case.op().unwrap_err().category(), "bad_attribute");
    let null_attr = r#"{"name": "t", "op": "X", "attrs": {"block_size": null},
        "input": {"dtype": "bool", "shape": []}, "error": "e"}"#;
    assert_eq!(load_error(null_attr).0, LoadErrorKind::Schema);
    let output_without_data = r#"{"name": "t", "op": "X", "attrs": {},
        "input": {"dtype": "bool", "shape": []}, "output": {"dtype": "bool", "shape": []}}"#;
    assert_eq!(load_error(output_without_data).0, LoadErrorKind::Schema);
}

#[test]
fn unknown_keys_are_errors() {
    // A misspelt key at the case level or in a tensor would otherwise be silently ignored.
    let misspelt = r#"{"name": "t", "op": "SpaceToDepth", "attrs": {"block_size": 2},
        "input": {"dtype": "float32", "shape": [1]}, "error": "bad_rank", "tolerence": 1}"#;
    let (kind, message) = load_error(misspelt);
    assert_eq!(kind, LoadErrorKind::Schema);
    assert!(message.contains("unknown key `tolerence`"), "{message}");
    let (_, message) = load_error(&case_with_input(
        r#"{"dtype": "float32", "shape": [1], "strides": [4]}"#,
    ));
    assert!(message.contains("unknown key `strides`"), "{message}");
    let tolerance = r#"{"name": "t", "op": "Col2Im", "attrs": {},
        "input": {"dtype": "float32", "shape": [1], "data": [1]},
        "output": {"dtype": "float32", "shape": [1], "data": [1]},
        "tolerance": {"rtol": 0, "atol": 0, "ulp": 1}}"#;
    let (kind, message) = load_error(tolerance);
    assert_eq!(kind, LoadErrorKind::Schema);
    assert!(
        message.contains("tolerance: unknown key `ulp`"),
        "{message}"
    );
}

#[test]
fn missing_files_are_io_errors() {
    let e = relayout_conformance::load_case(Path::new("no/such/case.json")).unwrap_err();
    assert_eq!(e.kind, LoadErrorKind::Io);
    assert!(e.to_string().contains("case.json"), "{e}");
}

#[test]
fn find_cases_lists_json_files_recursively_in_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance");
    let cases = find_cases(&root);
    assert!(!cases.is_empty());
    assert!(cases.windows(2).all(|w| w[0] < w[1]));
    assert!(cases
        .iter()
        .all(|p| p.extension().is_some_and(|e| e == "json")));
    assert!(cases
        .iter()
        .any(|p| p.ends_with("SpaceToDepth/s2d_tfdoc_1_1x2x2x1.json")));
    assert!(find_cases(&root.join("no-such-dir")).is_empty());
}

proptest! {
    /// Any finite f32, written as JSON the way Python writes its f64 value, reads back to
    /// the same bits.
    #[test]
    fn float32_text_round_trips(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        prop_assume!(x.is_finite());
        let text = serde_json::to_string(&f64::from(x)).unwrap();
        let b = input_bytes("float32", "[1]", &format!("[{text}]"));
        prop_assert_eq!(b, x.to_le_bytes().to_vec());
    }

    #[test]
    fn float64_text_round_trips(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let text = serde_json::to_string(&x).unwrap();
        let b = input_bytes("float64", "[1]", &format!("[{text}]"));
        prop_assert_eq!(b, x.to_le_bytes().to_vec());
    }

    #[test]
    fn int64_and_uint64_are_exact(i in any::<i64>(), u in any::<u64>()) {
        prop_assert_eq!(input_bytes("int64", "[1]", &format!("[{i}]")), i.to_le_bytes().to_vec());
        prop_assert_eq!(input_bytes("uint64", "[1]", &format!("[{u}]")), u.to_le_bytes().to_vec());
    }
}
