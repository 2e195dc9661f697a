//! The ops.

use crate::{Attrs, OpError};
use relayout_ir::{Kernel, TensorType};

/// Layout of a SpaceToDepth / DepthToSpace tensor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DataFormat {
    /// `[N, H, W, C]`.
    Nhwc,
    /// `[N, C, H, W]`.
    Nchw,
    /// `[N, C / 4, H, W, 4]`; logical channel `outer * 4 + inner`.
    NchwVectC,
}

/// DepthToSpace channel order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DepthToSpaceMode {
    /// Depth-column-row (TensorFlow, ONNX default): input channel `(by * b + bx) * C + c`.
    Dcr,
    /// Column-row-depth (ONNX CRD, PyTorch pixel_shuffle): input channel `c * b * b + by * b + bx`.
    /// Only with NCHW.
    Crd,
}

/// One relayout op with its attributes. Attribute values are stored as given (even invalid
/// ones); [`Op::output_type`] and [`Op::lower`] validate them against an input type.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    SpaceToDepth {
        block_size: i64,
        data_format: DataFormat,
    },
    DepthToSpace {
        block_size: i64,
        data_format: DataFormat,
        mode: DepthToSpaceMode,
    },
    /// `paddings[i] = [begin, end]` for spatial dim `i`.
    SpaceToBatchNd {
        block_shape: Vec<i64>,
        paddings: Vec<Vec<i64>>,
    },
    BatchToSpaceNd {
        block_shape: Vec<i64>,
        crops: Vec<Vec<i64>>,
    },
    /// TensorFlow v1: 4-D NHWC, scalar block size >= 2.
    SpaceToBatch {
        block_size: i64,
        paddings: Vec<Vec<i64>>,
    },
    BatchToSpace {
        block_size: i64,
        crops: Vec<Vec<i64>>,
    },
    /// ONNX opset 18. `pads` is all begins, then all ends.
    Col2Im {
        image_shape: Vec<i64>,
        block_shape: Vec<i64>,
        dilations: Vec<i64>,
        pads: Vec<i64>,
        strides: Vec<i64>,
    },
}

impl Op {
    /// Builds an op from its name (`SpaceToDepth`, ...) and attributes, applying the documented
    /// defaults. Rejects unknown names and attributes, wrong attribute kinds, unknown
    /// `data_format` (`bad_data_format`) and `mode` (`bad_mode`) strings.
    pub fn from_attrs(name: &str, attrs: &Attrs) -> Result<Op, OpError> {
        todo!("{name} {attrs:?}")
    }

    /// The op's name as in the conformance format.
    pub fn name(&self) -> &'static str {
        match self {
            Op::SpaceToDepth { .. } => "SpaceToDepth",
            Op::DepthToSpace { .. } => "DepthToSpace",
            Op::SpaceToBatchNd { .. } => "SpaceToBatchND",
            Op::BatchToSpaceNd { .. } => "BatchToSpaceND",
            Op::SpaceToBatch { .. } => "SpaceToBatch",
            Op::BatchToSpace { .. } => "BatchToSpace",
            Op::Col2Im { .. } => "Col2Im",
        }
    }

    /// Validates the op against `input` and returns the output type.
    pub fn output_type(&self, input: &TensorType) -> Result<TensorType, OpError> {
        todo!("{input}")
    }

    /// Validates and lowers to the index-map IR, unsimplified.
    pub fn lower(&self, input: &TensorType) -> Result<Kernel, OpError> {
        todo!("{input}")
    }
}
