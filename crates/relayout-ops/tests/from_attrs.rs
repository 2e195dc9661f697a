//! `Op::from_attrs`: names, defaults, and the errors of attribute kinds and enumerations.

use relayout_ops::{AttrValue, Attrs, DataFormat, DepthToSpaceMode, ErrorCategory, Op, OP_NAMES};

fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

fn s(v: &str) -> AttrValue {
    AttrValue::Str(v.into())
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::List(v.iter().map(|&i| int(i)).collect())
}

fn pairs(v: &[[i64; 2]]) -> AttrValue {
    AttrValue::List(v.iter().map(|p| ints(p)).collect())
}

fn attrs(items: &[(&str, AttrValue)]) -> Attrs {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn category(name: &str, a: &Attrs) -> ErrorCategory {
    Op::from_attrs(name, a)
        .expect_err("must be refused")
        .category
}

#[test]
fn defaults_apply() {
    assert_eq!(
        Op::from_attrs("SpaceToDepth", &attrs(&[("block_size", int(2))])),
        Ok(Op::SpaceToDepth {
            block_size: 2,
            data_format: DataFormat::Nhwc
        })
    );
    assert_eq!(
        Op::from_attrs("DepthToSpace", &attrs(&[("block_size", int(3))])),
        Ok(Op::DepthToSpace {
            block_size: 3,
            data_format: DataFormat::Nhwc,
            mode: DepthToSpaceMode::Dcr
        })
    );
    assert_eq!(
        Op::from_attrs(
            "Col2Im",
            &attrs(&[
                ("image_shape", ints(&[5, 6, 7])),
                ("block_shape", ints(&[1, 2, 3]))
            ])
        ),
        Ok(Op::Col2Im {
            image_shape: vec![5, 6, 7],
            block_shape: vec![1, 2, 3],
            dilations: vec![1, 1, 1],
            pads: vec![0; 6],
            strides: vec![1, 1, 1],
        })
    );
}

#[test]
fn every_op_parses_with_every_attribute() {
    let all = [
        (
            "SpaceToDepth",
            attrs(&[("block_size", int(2)), ("data_format", s("NCHW_VECT_C"))]),
        ),
        (
            "DepthToSpace",
            attrs(&[
                ("block_size", int(2)),
                ("data_format", s("NCHW")),
                ("mode", s("CRD")),
            ]),
        ),
        (
            "SpaceToBatchND",
            attrs(&[
                ("block_shape", ints(&[2, 3])),
                ("paddings", pairs(&[[0, 1], [2, 3]])),
            ]),
        ),
        (
            "BatchToSpaceND",
            attrs(&[("block_shape", ints(&[2])), ("crops", pairs(&[[0, 1]]))]),
        ),
        (
            "SpaceToBatch",
            attrs(&[
                ("block_size", int(2)),
                ("paddings", pairs(&[[0, 1], [2, 3]])),
            ]),
        ),
        (
            "BatchToSpace",
            attrs(&[("block_size", int(2)), ("crops", pairs(&[[0, 1], [2, 3]]))]),
        ),
        (
            "Col2Im",
            attrs(&[
                ("image_shape", ints(&[4, 4])),
                ("block_shape", ints(&[2, 2])),
                ("dilations", ints(&[1, 2])),
                ("pads", ints(&[0, 1, 1, 0])),
                ("strides", ints(&[2, 1])),
            ]),
        ),
        ("Transpose", attrs(&[("perm", ints(&[1, 0, 2]))])),
        (
            "Pad",
            attrs(&[
                ("pads", ints(&[1, 0, -1, 2])),
                ("mode", s("constant")),
                ("constant_value", AttrValue::Float(-0.5)),
                ("axes", ints(&[0, -1])),
            ]),
        ),
        (
            "Slice",
            attrs(&[
                ("starts", ints(&[0, -1])),
                ("ends", ints(&[4, i64::MIN])),
                ("axes", ints(&[0, 1])),
                ("steps", ints(&[2, -1])),
            ]),
        ),
        ("Tile", attrs(&[("repeats", ints(&[2, 1]))])),
        (
            "Reshape",
            attrs(&[("shape", ints(&[-1, 0])), ("allowzero", int(0))]),
        ),
        (
            "Im2Col",
            attrs(&[
                ("block_shape", ints(&[2, 2])),
                ("dilations", ints(&[1, 2])),
                ("pads", ints(&[0, 1, 1, 0])),
                ("strides", ints(&[2, 1])),
            ]),
        ),
    ];
    for (name, a) in &all {
        let op = Op::from_attrs(name, a).unwrap();
        assert_eq!(op.name(), *name);
    }
    let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, OP_NAMES);
    assert_eq!(
        Op::from_attrs("DepthToSpace", &all[1].1),
        Ok(Op::DepthToSpace {
            block_size: 2,
            data_format: DataFormat::Nchw,
            mode: DepthToSpaceMode::Crd
        })
    );
}

#[test]
fn enumerations_have_their_own_categories() {
    let a = attrs(&[("block_size", int(2)), ("data_format", s("NWHC"))]);
    assert_eq!(category("SpaceToDepth", &a), ErrorCategory::BadDataFormat);
    let e = Op::from_attrs("SpaceToDepth", &a).unwrap_err();
    assert!(e.message.contains("NWHC"), "{e}");
    let a = attrs(&[("block_size", int(2)), ("mode", s("RCD"))]);
    assert_eq!(category("DepthToSpace", &a), ErrorCategory::BadMode);
    // Case matters, as in TensorFlow and ONNX.
    let a = attrs(&[("block_size", int(2)), ("mode", s("dcr"))]);
    assert_eq!(category("DepthToSpace", &a), ErrorCategory::BadMode);
}

#[test]
fn names_kinds_and_missing_attributes_are_bad_attributes() {
    let two = attrs(&[("block_size", int(2))]);
    assert_eq!(category("SpaceToDepthh", &two), ErrorCategory::UnknownOp);
    // `mode` exists only for DepthToSpace.
    let a = attrs(&[("block_size", int(2)), ("mode", s("DCR"))]);
    assert_eq!(category("SpaceToDepth", &a), ErrorCategory::BadAttribute);
    assert_eq!(
        category("SpaceToDepth", &attrs(&[])),
        ErrorCategory::BadAttribute
    );
    let a = attrs(&[("block_size", s("2"))]);
    assert_eq!(category("SpaceToDepth", &a), ErrorCategory::BadAttribute);
    let a = attrs(&[("block_size", int(2)), ("data_format", int(1))]);
    assert_eq!(category("SpaceToDepth", &a), ErrorCategory::BadAttribute);
    let a = attrs(&[("block_shape", int(2)), ("paddings", pairs(&[[0, 0]]))]);
    assert_eq!(category("SpaceToBatchND", &a), ErrorCategory::BadAttribute);
    let a = attrs(&[("block_shape", ints(&[2]))]);
    assert_eq!(category("SpaceToBatchND", &a), ErrorCategory::BadAttribute);
    let a = attrs(&[("block_shape", ints(&[2])), ("padding", pairs(&[[0, 0]]))]);
    assert_eq!(category("SpaceToBatchND", &a), ErrorCategory::BadAttribute);
    let a = attrs(&[
        ("image_shape", ints(&[2, 2])),
        ("block_shape", ints(&[1, 1])),
        ("pads", s("same")),
    ]);
    assert_eq!(category("Col2Im", &a), ErrorCategory::BadAttribute);
    let e = Op::from_attrs("SpaceToBatchND", &attrs(&[("block_shape", ints(&[2]))])).unwrap_err();
    assert!(e.message.contains("paddings"), "{e}");
}

#[test]
fn pair_lists_keep_their_structure_for_validation() {
    // A wrong count or pair length is kept, for validation to report as bad_paddings.
    let a = attrs(&[
        ("block_shape", ints(&[2, 2])),
        ("paddings", pairs(&[[0, 0]])),
    ]);
    assert_eq!(
        Op::from_attrs("SpaceToBatchND", &a),
        Ok(Op::SpaceToBatchNd {
            block_shape: vec![2, 2],
            paddings: vec![vec![0, 0]]
        })
    );
    let odd = AttrValue::List(vec![ints(&[0, 0, 0]), ints(&[1])]);
    let a = attrs(&[("block_size", int(2)), ("crops", odd)]);
    assert_eq!(
        Op::from_attrs("BatchToSpace", &a),
        Ok(Op::BatchToSpace {
            block_size: 2,
            crops: vec![vec![0, 0, 0], vec![1]]
        })
    );
    // A flat list is the right kind in the wrong shape.
    let a = attrs(&[("block_shape", ints(&[2])), ("paddings", ints(&[0, 0]))]);
    assert_eq!(category("SpaceToBatchND", &a), ErrorCategory::BadPaddings);
    let a = attrs(&[("block_size", int(2)), ("crops", ints(&[0, 0, 0, 0]))]);
    assert_eq!(category("BatchToSpace", &a), ErrorCategory::BadCrops);
}
