//! The ops: what an op is ([`Op`]), and the dispatch of validation and lowering to the file of
//! each op family (`depth.rs`, `batch.rs`, `col2im.rs`).
//!
//! Validation produces a plan (the op's sizes, checked and converted to unsigned); the output
//! type and the lowering both come from the plan, so they cannot disagree about what is valid.

use crate::batch::{self, BatchPlan};
use crate::col2im::{self, Col2ImAttrs, Col2ImPlan};
use crate::depth::{self, DepthPlan};
use crate::{from_attrs, Attrs, OpError};
use relayout_ir::{Action, Kernel, TensorType};

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

impl DataFormat {
    /// The name used by TensorFlow and the conformance format.
    pub fn name(self) -> &'static str {
        match self {
            DataFormat::Nhwc => "NHWC",
            DataFormat::Nchw => "NCHW",
            DataFormat::NchwVectC => "NCHW_VECT_C",
        }
    }

    /// Parses `NHWC`, `NCHW` or `NCHW_VECT_C`.
    pub fn from_name(name: &str) -> Option<DataFormat> {
        [DataFormat::Nhwc, DataFormat::Nchw, DataFormat::NchwVectC]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

impl DepthToSpaceMode {
    /// The name used by ONNX and the conformance format.
    pub fn name(self) -> &'static str {
        match self {
            DepthToSpaceMode::Dcr => "DCR",
            DepthToSpaceMode::Crd => "CRD",
        }
    }

    /// Parses `DCR` or `CRD`.
    pub fn from_name(name: &str) -> Option<DepthToSpaceMode> {
        [DepthToSpaceMode::Dcr, DepthToSpaceMode::Crd]
            .into_iter()
            .find(|m| m.name() == name)
    }
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

/// A validated op: its family's plan, and which direction of the family it is.
enum Plan {
    SpaceToDepth(DepthPlan),
    DepthToSpace(DepthPlan, DepthToSpaceMode),
    SpaceToBatch(BatchPlan),
    BatchToSpace(BatchPlan),
    Col2Im(Col2ImPlan),
}

impl Plan {
    fn output_type(&self) -> &TensorType {
        match self {
            Plan::SpaceToDepth(p) | Plan::DepthToSpace(p, _) => &p.output_type,
            Plan::SpaceToBatch(p) | Plan::BatchToSpace(p) => &p.output_type,
            Plan::Col2Im(p) => &p.output_type,
        }
    }
}

impl Op {
    /// Builds an op from its name (`SpaceToDepth`, ...) and attributes, applying the documented
    /// defaults. Rejects unknown names and attributes, wrong attribute kinds, unknown
    /// `data_format` (`bad_data_format`) and `mode` (`bad_mode`) strings.
    pub fn from_attrs(name: &str, attrs: &Attrs) -> Result<Op, OpError> {
        from_attrs::from_attrs(name, attrs)
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

    /// The name of the lowered kernel: the op's name in snake case (`space_to_batch_nd`).
    pub fn kernel_name(&self) -> &'static str {
        match self {
            Op::SpaceToDepth { .. } => "space_to_depth",
            Op::DepthToSpace { .. } => "depth_to_space",
            Op::SpaceToBatchNd { .. } => "space_to_batch_nd",
            Op::BatchToSpaceNd { .. } => "batch_to_space_nd",
            Op::SpaceToBatch { .. } => "space_to_batch",
            Op::BatchToSpace { .. } => "batch_to_space",
            Op::Col2Im { .. } => "col2im",
        }
    }

    fn plan(&self, input: &TensorType) -> Result<Plan, OpError> {
        Ok(match self {
            Op::SpaceToDepth {
                block_size,
                data_format,
            } => Plan::SpaceToDepth(depth::plan_space_to_depth(
                *block_size,
                *data_format,
                input,
            )?),
            Op::DepthToSpace {
                block_size,
                data_format,
                mode,
            } => Plan::DepthToSpace(
                depth::plan_depth_to_space(*block_size, *data_format, *mode, input)?,
                *mode,
            ),
            Op::SpaceToBatchNd {
                block_shape,
                paddings,
            } => Plan::SpaceToBatch(batch::plan_space_to_batch_nd(
                self.name(),
                block_shape,
                paddings,
                input,
            )?),
            Op::BatchToSpaceNd { block_shape, crops } => Plan::BatchToSpace(
                batch::plan_batch_to_space_nd(self.name(), block_shape, crops, input)?,
            ),
            Op::SpaceToBatch {
                block_size,
                paddings,
            } => Plan::SpaceToBatch(batch::plan_space_to_batch(*block_size, paddings, input)?),
            Op::BatchToSpace { block_size, crops } => {
                Plan::BatchToSpace(batch::plan_batch_to_space(*block_size, crops, input)?)
            }
            Op::Col2Im {
                image_shape,
                block_shape,
                dilations,
                pads,
                strides,
            } => Plan::Col2Im(col2im::plan_col2im(
                &Col2ImAttrs {
                    image_shape,
                    block_shape,
                    dilations,
                    pads,
                    strides,
                },
                input,
            )?),
        })
    }

    /// Validates the op against `input` and returns the output type.
    pub fn output_type(&self, input: &TensorType) -> Result<TensorType, OpError> {
        Ok(self.plan(input)?.output_type().clone())
    }

    /// Validates and lowers to the index-map IR, unsimplified.
    ///
    /// Zero-sized tensors are valid. An empty output gets a kernel without statements (there
    /// is nothing to write, and the maps of the op would divide by the zero-sized dims). An
    /// empty input with a non-empty output (SpaceToBatch of an empty tensor with padding) keeps
    /// only the zero fill, since there is nothing to read.
    pub fn lower(&self, input: &TensorType) -> Result<Kernel, OpError> {
        let plan = self.plan(input)?;
        let output = plan.output_type();
        if output.num_elements().ok() == Some(0) {
            return Ok(Kernel {
                name: self.kernel_name().into(),
                src: input.clone(),
                dst: output.clone(),
                stmts: Vec::new(),
            });
        }
        let name = self.kernel_name();
        let mut kernel = match &plan {
            Plan::SpaceToDepth(p) => depth::lower_space_to_depth(p, input)?,
            Plan::DepthToSpace(p, mode) => depth::lower_depth_to_space(p, *mode, input)?,
            Plan::SpaceToBatch(p) => batch::lower_space_to_batch(name, p, input)?,
            Plan::BatchToSpace(p) => batch::lower_batch_to_space(name, p, input)?,
            Plan::Col2Im(p) => col2im::lower_col2im(p, input)?,
        };
        if input.num_elements().ok() == Some(0) {
            kernel.stmts.retain(|s| s.action == Action::Fill);
        }
        Ok(kernel)
    }
}
