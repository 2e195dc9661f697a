//! `relayout explain`: the same SVG as the library's `explain_svg`, to a file or standard
//! output, and a clear refusal of shapes too large to draw.

mod support;
use support::relayout;

const OP: &str =
    "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 0], [0, 1]]} : tensor<1x3x3x1xf32>";

#[test]
fn writes_the_library_picture() {
    let spec = relayout::parse_op_spec(OP).unwrap();
    let op = relayout::Op::from_attrs(&spec.name, &spec.attrs).unwrap();
    let expected = relayout::explain_svg(&[op], &spec.input).unwrap();

    let out = relayout(&["explain", OP]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);

    let file = std::env::temp_dir().join(format!("relayout-explain-{}.svg", std::process::id()));
    let out = relayout(&["explain", OP, "--svg", file.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), expected);
    std::fs::remove_file(&file).unwrap();
}

#[test]
fn refuses_large_shapes() {
    let out = relayout(&[
        "explain",
        "SpaceToDepth {block_size = 2} : tensor<1x64x64x4xf32>",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("too many to draw"), "{err}");
    assert!(out.stdout.is_empty());
}
