use relayout_ir::{DType, TensorType};
use relayout_ops::*;
#[test]
fn show() {
    let t = |s: &[u64]| TensorType::new(DType::F32, s.to_vec());
    let cases: Vec<(Op, TensorType)> = vec![
        (
            Op::SpaceToDepth {
                block_size: 1,
                data_format: DataFormat::Nhwc,
            },
            t(&[1, 2, 2, 1]),
        ),
        (
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::Nhwc,
            },
            t(&[1, 3, 2, 1]),
        ),
        (
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::Nhwc,
            },
            t(&[1, 3, 2]),
        ),
        (
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::NchwVectC,
            },
            t(&[1, 1, 2, 2, 3]),
        ),
        (
            Op::DepthToSpace {
                block_size: 2,
                data_format: DataFormat::Nhwc,
                mode: DepthToSpaceMode::Crd,
            },
            t(&[1, 1, 1, 4]),
        ),
        (
            Op::DepthToSpace {
                block_size: 2,
                data_format: DataFormat::Nhwc,
                mode: DepthToSpaceMode::Dcr,
            },
            t(&[1, 1, 1, 6]),
        ),
        (
            Op::DepthToSpace {
                block_size: 2,
                data_format: DataFormat::NchwVectC,
                mode: DepthToSpaceMode::Dcr,
            },
            t(&[1, 1, 2, 2, 4]),
        ),
        (
            Op::SpaceToBatchNd {
                block_shape: vec![2, 2],
                paddings: vec![vec![0, 0]],
            },
            t(&[1, 2, 2, 1]),
        ),
        (
            Op::SpaceToBatchNd {
                block_shape: vec![2, 2],
                paddings: vec![vec![0, 0], vec![0, 1]],
            },
            t(&[1, 2, 2, 1]),
        ),
        (
            Op::BatchToSpaceNd {
                block_shape: vec![2, 2],
                crops: vec![vec![0, 0], vec![0, 5]],
            },
            t(&[4, 2, 2, 1]),
        ),
        (
            Op::BatchToSpaceNd {
                block_shape: vec![2, 2],
                crops: vec![vec![0, 0], vec![0, 0]],
            },
            t(&[6, 2, 2, 1]),
        ),
        (
            Op::BatchToSpace {
                block_size: 2,
                crops: vec![vec![0, 0], vec![0, -1]],
            },
            t(&[4, 2, 2, 1]),
        ),
        (
            Op::Col2Im {
                image_shape: vec![3, 3],
                block_shape: vec![2, 2],
                dilations: vec![1, 1],
                pads: vec![0; 4],
                strides: vec![1, 1],
            },
            t(&[1, 4, 5]),
        ),
        (
            Op::Col2Im {
                image_shape: vec![3, 3],
                block_shape: vec![2, 2],
                dilations: vec![1, 1],
                pads: vec![0; 3],
                strides: vec![1, 1],
            },
            t(&[1, 4, 4]),
        ),
        (
            Op::Col2Im {
                image_shape: vec![3, 3],
                block_shape: vec![2, 2],
                dilations: vec![3, 1],
                pads: vec![0; 4],
                strides: vec![1, 1],
            },
            t(&[1, 4, 4]),
        ),
        (
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::Nhwc,
            },
            t(&[1 << 40, 2, 2, 1 << 22]),
        ),
        (
            Op::SpaceToDepth {
                block_size: 2,
                data_format: DataFormat::Nhwc,
            },
            t(&[0, 2, 2, u64::MAX]),
        ),
    ];
    for (op, ty) in cases {
        println!("{}", op.output_type(&ty).unwrap_err());
    }
}
