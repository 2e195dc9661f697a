//! Snapshots of `explain_svg`'s pictures for a few ops (approved SVG text in snapshots/, as
//! the IR snapshots), and its refusals.

use relayout::{explain_svg, parse_op_spec, Op};

/// One op of each kind of movement: an interleave, a channel shuffle, padding, overlapping sums.
const PICTURES: &[(&str, &str)] = &[
    (
        "explain_s2d_nhwc",
        "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>",
    ),
    (
        "explain_d2s_crd",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x2x2xf32>"#,
    ),
    (
        "explain_s2b_padded",
        "SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 0], [0, 1]]} : tensor<1x3x3x1xu8>",
    ),
    (
        "explain_col2im",
        "Col2Im {image_shape = [3, 3], block_shape = [2, 2]} : tensor<1x4x4xf32>",
    ),
];

fn svg(spec: &str) -> Result<String, relayout::Error> {
    let spec = parse_op_spec(spec).unwrap();
    let op = Op::from_attrs(&spec.name, &spec.attrs).unwrap();
    explain_svg(&[op], &spec.input)
}

#[test]
fn pictures() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for (name, spec) in PICTURES {
            insta::assert_snapshot!(*name, svg(spec).unwrap(), spec);
        }
    });
}

#[test]
fn pictures_say_where_each_element_comes_from() {
    // SpaceToDepth 2x2 on a 2x2 image: the one output pixel holds input elements 0, 1, 2, 3.
    let s = svg("SpaceToDepth {block_size = 2} : tensor<1x2x2x1xf32>").unwrap();
    assert_eq!(s.matches("<rect x=").count(), 8);
    // Padding is marked: SpaceToBatchND's 9 pixels padded to 16 leave 7 padding elements.
    let s = svg(PICTURES[2].1).unwrap();
    assert_eq!(s.matches(">pad</text>").count(), 7);
    // Col2Im: the centre of the 3x3 image is covered by all four 2x2 blocks.
    let s = svg(PICTURES[3].1).unwrap();
    assert!(s.contains(">4</text>"));
    assert!(s.contains("summed"));
}

#[test]
fn refuses_large_shapes_and_invalid_ops() {
    let err = svg("SpaceToDepth {block_size = 2} : tensor<1x64x64x4xf32>").unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("16384 elements, too many to draw"),
        "{message}"
    );
    let err = svg("SpaceToDepth {block_size = 2} : tensor<1x3x4x1xf32>").unwrap_err();
    assert_eq!(err.category(), Some("not_divisible"));
    // A chain is drawn as one op.
    let spec = parse_op_spec("DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>").unwrap();
    let d2s = Op::from_attrs(&spec.name, &spec.attrs).unwrap();
    let s2d = Op::from_attrs("SpaceToDepth", &spec.attrs).unwrap();
    let s = explain_svg(&[d2s, s2d], &spec.input).unwrap();
    assert!(s.contains("DepthToSpace then SpaceToDepth"));
}
