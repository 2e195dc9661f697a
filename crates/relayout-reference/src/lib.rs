//! # relayout-reference
//!
//! Direct implementations of every op, written from the TensorFlow and ONNX documentation and
//! independent of the IR: plain loops over multi-indices on byte buffers, no affine maps, no
//! interpreter. They are an oracle beside the interpreter: `interpret(op.lower(..))` and
//! [`reference`](fn@reference) are two readings of the same documentation, and the tests
//! demand that they agree with each other and with the conformance cases.
//!
//! To stay independent of the lowering, which gathers (one loop over the output, reading the
//! input through the op's index formula), the reference mostly scatters: it walks the input
//! and computes where each element goes, as the documentation tells the story. Only
//! validation is shared, through [`Op::output_type`], so both see the same valid inputs.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod beyond;
mod col2im;
mod depth;
mod tensor;

use relayout_ir::TensorType;
use relayout_ops::{ErrorCategory, Op, OpError};
use tensor::{size, Dense};

/// Validated attribute values as sizes (validation has made them non-negative).
fn sizes(values: &[i64]) -> Result<Vec<usize>, OpError> {
    values.iter().map(|&v| size(v.unsigned_abs())).collect()
}

/// The paddings or crops as begins and ends.
fn pairs(values: &[Vec<i64>]) -> Result<(Vec<usize>, Vec<usize>), OpError> {
    let mut begin = Vec::with_capacity(values.len());
    let mut end = Vec::with_capacity(values.len());
    for p in values {
        let p = sizes(p)?;
        begin.push(p.first().copied().unwrap_or(0));
        end.push(p.get(1).copied().unwrap_or(0));
    }
    Ok((begin, end))
}

/// Runs `op` on the little-endian bytes `src` of a tensor of type `input` and returns the
/// output's bytes. The op is validated with [`Op::output_type`]; `src` must have exactly the
/// input's byte size (else a `buffer_length` error).
pub fn reference(op: &Op, input: &TensorType, src: &[u8]) -> Result<Vec<u8>, OpError> {
    let output = op.output_type(input)?;
    let want = input
        .size_bytes()
        .map_err(|e| OpError::new(ErrorCategory::SizeOverflow, e.to_string()))?;
    if want != src.len() as u64 {
        return Err(OpError::new(
            ErrorCategory::BufferLength,
            format!(
                "{}: input buffer has {} bytes but {input} needs {want}",
                op.name(),
                src.len()
            ),
        ));
    }
    let t = Dense {
        shape: input
            .shape
            .iter()
            .map(|&d| size(d))
            .collect::<Result<_, _>>()?,
        esize: size(input.dtype.size())?,
        bytes: src.to_vec(),
    };
    // Tile's and Reshape's output shapes are all there is to compute; they come from
    // validation (shared), and the elements' positions from this crate.
    let out_shape =
        || -> Result<Vec<usize>, OpError> { output.shape.iter().map(|&d| size(d)).collect() };
    let out = match op {
        Op::SpaceToDepth {
            block_size,
            data_format,
        } => depth::space_to_depth(&t, size(block_size.unsigned_abs())?, *data_format)?,
        Op::DepthToSpace {
            block_size,
            data_format,
            mode,
        } => depth::depth_to_space(&t, size(block_size.unsigned_abs())?, *data_format, *mode)?,
        Op::SpaceToBatchNd {
            block_shape,
            paddings,
        } => {
            let (begin, end) = pairs(paddings)?;
            batch::space_to_batch(&t, &sizes(block_shape)?, &begin, &end)?
        }
        Op::SpaceToBatch {
            block_size,
            paddings,
        } => {
            let (begin, end) = pairs(paddings)?;
            let b = size(block_size.unsigned_abs())?;
            batch::space_to_batch(&t, &[b, b], &begin, &end)?
        }
        Op::BatchToSpaceNd { block_shape, crops } => {
            let (begin, end) = pairs(crops)?;
            batch::batch_to_space(&t, &sizes(block_shape)?, &begin, &end)?
        }
        Op::BatchToSpace { block_size, crops } => {
            let (begin, end) = pairs(crops)?;
            let b = size(block_size.unsigned_abs())?;
            batch::batch_to_space(&t, &[b, b], &begin, &end)?
        }
        Op::Col2Im {
            image_shape,
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            let m = image_shape.len();
            let pads = sizes(pads)?;
            let a = col2im::Col2Im {
                image: sizes(image_shape)?,
                block: sizes(block_shape)?,
                dilations: sizes(dilations)?,
                strides: sizes(strides)?,
                pad_begin: pads[..m].to_vec(),
                pad_end: pads[m..].to_vec(),
            };
            col2im::col2im(&t, input.dtype, &a)?
        }
        Op::Transpose { perm } => beyond::transpose(&t, perm.as_deref())?,
        Op::Pad {
            pads,
            mode,
            constant_value,
            axes,
        } => beyond::pad(
            &t,
            input.dtype,
            pads,
            *mode,
            *constant_value,
            axes.as_deref(),
        )?,
        Op::Slice {
            starts,
            ends,
            axes,
            steps,
        } => beyond::slice(
            &t,
            starts,
            ends,
            axes.as_deref(),
            steps.as_deref(),
            out_shape()?,
        )?,
        Op::Tile { .. } => beyond::tile(&t, out_shape()?)?,
        Op::Reshape { .. } => beyond::reshape(&t, out_shape()?),
        Op::Im2Col {
            block_shape,
            dilations,
            pads,
            strides,
        } => {
            let m = block_shape.len();
            let pads = match pads {
                Some(p) => sizes(p)?,
                None => vec![0; 2 * m],
            };
            let a = beyond::Im2Col {
                block: sizes(block_shape)?,
                dilations: dilations.as_deref().map_or(Ok(vec![1; m]), sizes)?,
                strides: strides.as_deref().map_or(Ok(vec![1; m]), sizes)?,
                pad_begin: pads[..m].to_vec(),
                pad_end: pads[m..].to_vec(),
            };
            beyond::im2col(&t, &a)?
        }
    };
    // The reference computes its own output shape; the tests hold it to the validated one.
    debug_assert_eq!(
        out.shape.iter().map(|&d| d as u64).collect::<Vec<_>>(),
        output.shape
    );
    Ok(out.bytes)
}
