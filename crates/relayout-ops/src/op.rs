//! The ops: what an op is ([`Op`]), and the dispatch of validation and lowering to the file of
//! each op family (`depth.rs`, `batch.rs`, `col2im.rs`).
//!
//! Validation produces a plan (the op's sizes, checked and converted to unsigned); the output
//! type and the lowering both come from the plan, so they cannot disagree about what is valid.

use crate::batch::{self, BatchPlan};
use crate::col2im::{self, Col2ImAttrs, Col2ImPlan};
use crate::depth::{self, DepthPlan};
use crate::im2col::{self, Im2ColAttrs, Im2ColPlan};
use crate::pad::{self, PadAttrs, PadMode, PadPlan, PadValue};
use crate::reshape::{self, ReshapePlan};
use crate::slice::{self, SliceAttrs, SlicePlan};
use crate::tile::{self, TilePlan};
use crate::transpose::{self, TransposePlan};
use crate::{from_attrs, Attrs, OpError};
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
///
/// Each variant is the typed constructor of one op, and its fields carry the TensorFlow or
/// ONNX attribute names; [`Op::from_attrs`] builds the same values from a name and an
/// attribute map, applying the documented defaults.
///
/// ```
/// use relayout_ir::{DType, TensorType};
/// use relayout_ops::{DataFormat, DepthToSpaceMode, Op};
///
/// // torch.nn.PixelShuffle(2), which ONNX exports as DepthToSpace in CRD mode.
/// let op = Op::DepthToSpace {
///     block_size: 2,
///     data_format: DataFormat::Nchw,
///     mode: DepthToSpaceMode::Crd,
/// };
/// let out = op.output_type(&TensorType::new(DType::F32, [1, 12, 4, 4])).unwrap();
/// assert_eq!(out, TensorType::new(DType::F32, [1, 3, 8, 8]));
///
/// // Invalid attributes are refused with the rule and the values.
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let err = op.output_type(&TensorType::new(DType::F32, [1, 5, 4, 1])).unwrap_err();
/// assert_eq!(err.category(), "not_divisible");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Op {
    /// TensorFlow `tf.nn.space_to_depth`: moves each `block_size x block_size` block of
    /// pixels into the channels.
    SpaceToDepth {
        /// The side of the square block; at least 2.
        block_size: i64,
        /// The input's layout; TensorFlow's default is NHWC.
        data_format: DataFormat,
    },
    /// TensorFlow `tf.nn.depth_to_space` and ONNX `DepthToSpace`: the inverse of
    /// SpaceToDepth, moving channels into `block_size x block_size` blocks of pixels.
    DepthToSpace {
        /// The side of the square block; at least 2.
        block_size: i64,
        /// The input's layout; TensorFlow's default is NHWC, ONNX's is NCHW.
        data_format: DataFormat,
        /// The order of the channels within a block (ONNX `mode`; TensorFlow is always DCR).
        mode: DepthToSpaceMode,
    },
    /// TensorFlow `tf.space_to_batch_nd`: zero-pads the `M = block_shape.len()` spatial dims
    /// (dims `1..=M`) and moves each block's offsets into the batch dim.
    SpaceToBatchNd {
        /// The block of each spatial dim; each at least 1.
        block_shape: Vec<i64>,
        /// `paddings[i] = [begin, end]`: zeros added before and after spatial dim `i`.
        paddings: Vec<Vec<i64>>,
    },
    /// TensorFlow `tf.batch_to_space` (v2, `BatchToSpaceND`): the inverse of
    /// SpaceToBatchND, moving batch entries into the spatial dims and cropping.
    BatchToSpaceNd {
        /// The block of each spatial dim; each at least 1.
        block_shape: Vec<i64>,
        /// `crops[i] = [begin, end]`: elements removed from the start and end of spatial dim
        /// `i`.
        crops: Vec<Vec<i64>>,
    },
    /// TensorFlow v1 `SpaceToBatch`: SpaceToBatchND on a 4-D NHWC input with the same block
    /// for height and width.
    SpaceToBatch {
        /// The side of the square block; at least 2.
        block_size: i64,
        /// `[[top, bottom], [left, right]]`.
        paddings: Vec<Vec<i64>>,
    },
    /// TensorFlow v1 `BatchToSpace`: BatchToSpaceND on a 4-D NHWC input with the same block
    /// for height and width.
    BatchToSpace {
        /// The side of the square block; at least 2.
        block_size: i64,
        /// `[[top, bottom], [left, right]]`.
        crops: Vec<Vec<i64>>,
    },
    /// ONNX `Col2Im` (opset 18): rearranges the columns `[N, C * prod(block_shape), L]` of an
    /// im2col into an image `[N, C, *image_shape]`, summing where blocks overlap.
    Col2Im {
        /// The spatial size of the output image; at least 2 dims.
        image_shape: Vec<i64>,
        /// The spatial size of one block (the convolution's kernel).
        block_shape: Vec<i64>,
        /// The spacing between the elements of a block, per spatial dim (default all 1).
        dilations: Vec<i64>,
        /// The image's padding: all begins, then all ends (default all 0).
        pads: Vec<i64>,
        /// The step between blocks, per spatial dim (default all 1).
        strides: Vec<i64>,
    },
    /// ONNX `Transpose`: output dim `i` is input dim `perm[i]`.
    Transpose {
        /// A permutation of `0..rank`; `None` reverses the dims.
        perm: Option<Vec<i64>>,
    },
    /// ONNX `Pad` (opset 19+): adds (or, with negative pads, removes) elements at both ends
    /// of the given axes.
    Pad {
        /// All the begins, then all the ends, one pair per entry of `axes`.
        pads: Vec<i64>,
        /// How new elements are made.
        mode: PadMode,
        /// The value of new elements in constant mode (default zero).
        constant_value: PadValue,
        /// The padded axes (negative ones count from the end); `None` is every axis.
        axes: Option<Vec<i64>>,
    },
    /// ONNX `Slice` (opset 13): a strided window of the given axes, with ONNX's clamping.
    Slice {
        /// Where each sliced axis starts (negative: from the end).
        starts: Vec<i64>,
        /// Where each sliced axis ends, exclusive (negative: from the end).
        ends: Vec<i64>,
        /// The sliced axes; `None` is `0..starts.len()`.
        axes: Option<Vec<i64>>,
        /// The step of each sliced axis, nonzero; `None` is all 1.
        steps: Option<Vec<i64>>,
    },
    /// ONNX `Tile`: repeats the whole input `repeats[i]` times along each dim.
    Tile {
        /// One non-negative count per input dim.
        repeats: Vec<i64>,
    },
    /// ONNX `Reshape` (opset 14+): the same elements in the same order, another shape.
    Reshape {
        /// The target shape: sizes, at most one -1 (inferred), and 0s (see `allowzero`).
        shape: Vec<i64>,
        /// With `false` (ONNX's default 0), a 0 copies the input dim at its index; with
        /// `true`, a 0 is a real size-0 dim.
        allowzero: bool,
    },
    /// Im2Col, the inverse layout of Col2Im: `[N, C, *S]` to the columns
    /// `[N, C * prod(block_shape), L]` of every block position, zero in the padding.
    Im2Col {
        /// The spatial size of one block; one entry per spatial dim of the input.
        block_shape: Vec<i64>,
        /// The spacing between a block's elements; `None` is all 1.
        dilations: Option<Vec<i64>>,
        /// All begins, then all ends; `None` is all 0.
        pads: Option<Vec<i64>>,
        /// The step between blocks; `None` is all 1.
        strides: Option<Vec<i64>>,
    },
}

/// A validated op: its family's plan, and which direction of the family it is.
enum Plan {
    SpaceToDepth(DepthPlan),
    DepthToSpace(DepthPlan, DepthToSpaceMode),
    SpaceToBatch(BatchPlan),
    BatchToSpace(BatchPlan),
    Col2Im(Col2ImPlan),
    Transpose(TransposePlan),
    Pad(PadPlan),
    Slice(SlicePlan),
    Tile(TilePlan),
    Reshape(ReshapePlan),
    Im2Col(Im2ColPlan),
}

impl Plan {
    fn output_type(&self) -> &TensorType {
        match self {
            Plan::SpaceToDepth(p) | Plan::DepthToSpace(p, _) => &p.output_type,
            Plan::SpaceToBatch(p) | Plan::BatchToSpace(p) => &p.output_type,
            Plan::Col2Im(p) => &p.output_type,
            Plan::Transpose(p) => &p.output_type,
            Plan::Pad(p) => &p.output_type,
            Plan::Slice(p) => &p.output_type,
            Plan::Tile(p) => &p.output_type,
            Plan::Reshape(p) => &p.output_type,
            Plan::Im2Col(p) => &p.output_type,
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
            Op::Transpose { .. } => "Transpose",
            Op::Pad { .. } => "Pad",
            Op::Slice { .. } => "Slice",
            Op::Tile { .. } => "Tile",
            Op::Reshape { .. } => "Reshape",
            Op::Im2Col { .. } => "Im2Col",
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
            Op::Transpose { .. } => "transpose",
            Op::Pad { .. } => "pad",
            Op::Slice { .. } => "slice",
            Op::Tile { .. } => "tile",
            Op::Reshape { .. } => "reshape",
            Op::Im2Col { .. } => "im2col",
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
            Op::Transpose { perm } => {
                Plan::Transpose(transpose::plan_transpose(perm.as_deref(), input)?)
            }
            Op::Pad {
                pads,
                mode,
                constant_value,
                axes,
            } => Plan::Pad(pad::plan_pad(
                &PadAttrs {
                    pads,
                    mode: *mode,
                    constant_value: *constant_value,
                    axes: axes.as_deref(),
                },
                input,
            )?),
            Op::Slice {
                starts,
                ends,
                axes,
                steps,
            } => Plan::Slice(slice::plan_slice(
                &SliceAttrs {
                    starts,
                    ends,
                    axes: axes.as_deref(),
                    steps: steps.as_deref(),
                },
                input,
            )?),
            Op::Tile { repeats } => Plan::Tile(tile::plan_tile(repeats, input)?),
            Op::Reshape { shape, allowzero } => {
                Plan::Reshape(reshape::plan_reshape(shape, *allowzero, input)?)
            }
            Op::Im2Col {
                block_shape,
                dilations,
                pads,
                strides,
            } => Plan::Im2Col(im2col::plan_im2col(
                &Im2ColAttrs {
                    block_shape,
                    dilations: dilations.as_deref(),
                    pads: pads.as_deref(),
                    strides: strides.as_deref(),
                },
                input,
            )?),
        })
    }

    /// Validates the op against `input` and returns the output type.
    pub fn output_type(&self, input: &TensorType) -> Result<TensorType, OpError> {
        Ok(self.plan(input)?.output_type().clone())
    }

    /// [`Op::lower`], but every statement writes `dst[d]` at point `d` over a box of the
    /// output (a gather, or a fill), which is what a chain needs of an op whose output another
    /// op reads. The same kernel as [`Op::lower`] for every op but Im2Col (whose `lower`
    /// scatters its blocks) and Col2Im (a scatter-add, which has no gather form: its `lower`
    /// is returned, and chains refuse it).
    pub fn lower_gather(&self, input: &TensorType) -> Result<Kernel, OpError> {
        self.lower_as(input, true)
    }

    /// Validates and lowers to the index-map IR, unsimplified.
    ///
    /// Zero-sized tensors are valid. An empty output gets a kernel without statements (there
    /// is nothing to write, and the maps of the op would divide by the zero-sized dims). An
    /// empty input with a non-empty output (SpaceToBatch of an empty tensor with padding) keeps
    /// only the zero fill, since there is nothing to read.
    pub fn lower(&self, input: &TensorType) -> Result<Kernel, OpError> {
        self.lower_as(input, false)
    }

    /// [`Op::lower`], or with `gather` [`Op::lower_gather`]: the same rules for empty tensors.
    fn lower_as(&self, input: &TensorType, gather: bool) -> Result<Kernel, OpError> {
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
            Plan::Transpose(p) => transpose::lower_transpose(p, input),
            Plan::Pad(p) => pad::lower_pad(p, input),
            Plan::Slice(p) => slice::lower_slice(p, input),
            Plan::Tile(p) => tile::lower_tile(p, input)?,
            Plan::Reshape(p) => reshape::lower_reshape(p, input)?,
            Plan::Im2Col(p) if gather => im2col::lower_im2col_gather(p, input)?,
            Plan::Im2Col(p) => im2col::lower_im2col(p, input)?,
        };
        if input.num_elements().ok() == Some(0) {
            kernel.stmts.retain(|s| s.action.is_fill());
        }
        Ok(kernel)
    }
}
