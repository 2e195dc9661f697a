//! insta snapshots of the IR at every stage, stored in snapshots/ at the repository root and
//! reviewed like code. CI runs with INSTA_UPDATE=no, so a changed stage fails until the new
//! snapshot is reviewed and accepted (`cargo insta review`).

use relayout::{parse_op_spec, Op};

/// One op variant per line: a snapshot name and the op in the command-line syntax.
const VARIANTS: &[(&str, &str)] = &[
    (
        "s2d_nhwc_tfdoc3",
        r#"SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>"#,
    ),
    (
        "s2d_nhwc_c3_b3",
        r#"SpaceToDepth {block_size = 3, data_format = "NHWC"} : tensor<2x6x9x3xi16>"#,
    ),
    (
        "s2d_nchw",
        r#"SpaceToDepth {block_size = 2, data_format = "NCHW"} : tensor<1x3x4x6xf32>"#,
    ),
    (
        "s2d_vect_c",
        r#"SpaceToDepth {block_size = 2, data_format = "NCHW_VECT_C"} : tensor<1x2x4x4x4xi8>"#,
    ),
    (
        "d2s_nhwc_tfdoc3",
        r#"DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>"#,
    ),
    (
        "d2s_nchw_dcr",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "DCR"} : tensor<1x8x3x3xf32>"#,
    ),
    (
        "d2s_nchw_crd",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x3x3xf32>"#,
    ),
    (
        "d2s_vect_c",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW_VECT_C"} : tensor<1x4x2x2x4xi8>"#,
    ),
    (
        "s2b_nd_m1",
        r#"SpaceToBatchND {block_shape = [3], paddings = [[1, 2]]} : tensor<2x6x5xf32>"#,
    ),
    (
        "s2b_nd_m2_pad",
        r#"SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 2], [1, 2]]} : tensor<2x5x5x3xf32>"#,
    ),
    (
        "s2b_nd_m3",
        r#"SpaceToBatchND {block_shape = [2, 1, 2], paddings = [[0, 0], [0, 0], [1, 1]]} : tensor<1x2x3x2x2xui16>"#,
    ),
    (
        "s2b_nd_identity",
        r#"SpaceToBatchND {block_shape = [1, 1], paddings = [[0, 0], [0, 0]]} : tensor<2x3x4x5xf32>"#,
    ),
    (
        "b2s_nd_m2_crop",
        r#"BatchToSpaceND {block_shape = [2, 2], crops = [[0, 1], [1, 0]]} : tensor<8x2x3x2xf32>"#,
    ),
    (
        "b2s_nd_m1",
        r#"BatchToSpaceND {block_shape = [4], crops = [[1, 2]]} : tensor<4x3x2xf64>"#,
    ),
    (
        "s2b_v1",
        r#"SpaceToBatch {block_size = 2, paddings = [[0, 1], [1, 0]]} : tensor<1x3x3x2xf32>"#,
    ),
    (
        "b2s_v1",
        r#"BatchToSpace {block_size = 2, crops = [[0, 0], [2, 0]]} : tensor<8x1x3x1xf32>"#,
    ),
    (
        "col2im_2d",
        r#"Col2Im {image_shape = [4, 5], block_shape = [2, 3], pads = [1, 0, 1, 1], strides = [2, 1], dilations = [1, 1]} : tensor<1x12x12xf32>"#,
    ),
    (
        "col2im_3d",
        r#"Col2Im {image_shape = [3, 3, 3], block_shape = [2, 2, 2]} : tensor<1x8x8xi32>"#,
    ),
    (
        "transpose_nchw_to_nhwc",
        r#"Transpose {perm = [0, 2, 3, 1]} : tensor<2x3x4x5xf32>"#,
    ),
    ("transpose_default", r#"Transpose : tensor<6x8xi16>"#),
    // A batch between the two axes that swap: it runs inside the loops of register blocks.
    (
        "transpose_cube_reversed",
        r#"Transpose {perm = [2, 1, 0]} : tensor<8x8x8xf32>"#,
    ),
    (
        "pad_constant_value",
        r#"Pad {pads = [0, 1, -1, 0, 2, 1], constant_value = -0.5} : tensor<2x4x3xf32>"#,
    ),
    (
        "pad_reflect",
        r#"Pad {pads = [1, 2, 2, 1], mode = "reflect"} : tensor<4x5xf32>"#,
    ),
    (
        "pad_edge_axes",
        r#"Pad {pads = [2, 1], mode = "edge", axes = [-1]} : tensor<3x4xui8>"#,
    ),
    (
        "pad_wrap_crop",
        r#"Pad {pads = [2, -1], mode = "wrap"} : tensor<6xi32>"#,
    ),
    (
        "slice_reverse_step2",
        r#"Slice {starts = [-1, 1], ends = [-9223372036854775808, 6], axes = [0, 1], steps = [-1, 2]} : tensor<4x7xf32>"#,
    ),
    ("tile", r#"Tile {repeats = [2, 1, 3]} : tensor<2x3x4xf32>"#),
    (
        "reshape",
        r#"Reshape {shape = [0, -1]} : tensor<2x3x4xf64>"#,
    ),
    (
        "im2col_pad_stride",
        r#"Im2Col {block_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : tensor<1x2x5x5xf32>"#,
    ),
];

fn stages(spec: &str) -> relayout::Stages {
    let spec = parse_op_spec(spec).unwrap();
    let op = Op::from_attrs(&spec.name, &spec.attrs).unwrap();
    relayout::lower(&op, &spec.input).unwrap_or_else(|e| panic!("{}: {e}", spec.name))
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path("../snapshots");
    s.set_prepend_module_to_snapshot(false);
    s.set_omit_expression(true);
    s
}

#[test]
fn lowered_index_map_ir() {
    settings().bind(|| {
        for (name, spec) in VARIANTS {
            insta::assert_snapshot!(
                format!("{name}.lowered"),
                stages(spec).lowered.to_string(),
                spec
            );
        }
    });
}

#[test]
fn simplified_index_map_ir() {
    settings().bind(|| {
        for (name, spec) in VARIANTS {
            insta::assert_snapshot!(
                format!("{name}.index"),
                stages(spec).optimized.to_string(),
                spec
            );
        }
    });
}

#[test]
fn loop_ir() {
    settings().bind(|| {
        for (name, spec) in VARIANTS {
            insta::assert_snapshot!(
                format!("{name}.loops"),
                stages(spec).loops.to_string(),
                spec
            );
        }
    });
}

/// The Cranelift IR of the seed examples (CLIF is long, so only a few).
#[test]
fn cranelift_ir() {
    settings().bind(|| {
        for name in [
            "s2d_nhwc_tfdoc3",
            "d2s_nchw_crd",
            "s2b_nd_m2_pad",
            "col2im_2d",
        ] {
            let spec = VARIANTS.iter().find(|(n, _)| *n == name).unwrap().1;
            let clif = relayout::clif_text(&stages(spec).loops).unwrap();
            insta::assert_snapshot!(format!("{name}.clif"), clif, spec);
        }
    });
}

/// The full-pipeline loop IR of every case of the benchmark suite (real model shapes).
#[test]
fn bench_suite_loop_ir() {
    suite_loop_ir(include_str!("../bench/suite.json"));
}

/// The loop IR of every case of bench/suite_beyond.json (the ops beyond the seeds at real
/// model shapes), as for bench/suite.json.
#[test]
fn bench_suite_beyond_loop_ir() {
    suite_loop_ir(include_str!("../bench/suite_beyond.json"));
}

/// Snapshots the loop IR of every case of a benchmark suite (JSON text) as `bench_<name>.loops`.
fn suite_loop_ir(json: &str) {
    let suite: serde_json::Value = serde_json::from_str(json).unwrap();
    settings().bind(|| {
        for case in suite.as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let attrs = relayout::attrs_from_json(&case["attrs"]).unwrap();
            let op = Op::from_attrs(case["op"].as_str().unwrap(), &attrs).unwrap();
            let dtype = relayout::ir::DType::from_name(case["dtype"].as_str().unwrap()).unwrap();
            let shape: Vec<u64> = case["input_shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            let stages =
                relayout::lower(&op, &relayout::ir::TensorType::new(dtype, shape)).unwrap();
            insta::assert_snapshot!(
                format!("bench_{name}.loops"),
                stages.loops.to_string(),
                name
            );
        }
    });
}
