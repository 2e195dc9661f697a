//! Typed op errors. Every invalid op description is rejected with one of these before any code
//! is generated; the category is exactly one of the conformance format's category strings, and
//! the message names the rule and the values involved.

use std::fmt;

/// The rule an invalid op breaks (conformance/FORMAT.md, "Error categories"), plus the few
/// rules of ours that the format has no category for.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ErrorCategory {
    /// `block_size_too_small`: a block size below 2 (SpaceToDepth, DepthToSpace, the TF v1
    /// batch ops) or a block dim below 1 (the ND batch ops).
    BlockSizeTooSmall,
    /// `not_divisible`: a dim that must be a multiple of the block (or of the block's area)
    /// is not.
    NotDivisible,
    /// `crops_too_large`: crops of a spatial dim whose sum exceeds the dim's uncropped size.
    CropsTooLarge,
    /// `bad_rank`: an input of the wrong rank for the op or its data format.
    BadRank,
    /// `bad_paddings`: paddings that are negative, or not one `[begin, end]` pair per spatial
    /// dim.
    BadPaddings,
    /// `bad_crops`: crops that are negative, or not one `[begin, end]` pair per spatial dim.
    BadCrops,
    /// `bad_vect_c`: an NCHW_VECT_C input whose last dim is not 4.
    BadVectC,
    /// `bad_mode`: an unknown DepthToSpace mode, or CRD with a format other than NCHW.
    BadMode,
    /// `bad_data_format`: an unknown data format.
    BadDataFormat,
    /// `bad_col2im_L`: a Col2Im input whose last dim is not the number of block positions
    /// that the image, pads, dilations and strides give.
    BadCol2ImL,
    /// `bad_col2im_attrs`: Col2Im attributes of the wrong length or out of range.
    BadCol2ImAttrs,
    /// `bad_perm`: a Transpose `perm` that is not a permutation of `0..rank-1`.
    BadPerm,
    /// `bad_pads`: Pad pads of the wrong length, bad axes, a negative output dim, or a pad
    /// that the edge, reflect and wrap modes refuse.
    BadPads,
    /// `bad_slice`: Slice lists of different lengths, a zero step, or a bad axis.
    BadSlice,
    /// `bad_repeats`: Tile repeats not one per dim, or negative.
    BadRepeats,
    /// `bad_shape`: a Reshape target shape that does not fit the input.
    BadShape,
    /// `bad_im2col_attrs`: Im2Col attributes of the wrong length or out of range.
    BadIm2ColAttrs,
    /// An unknown or missing attribute, or an attribute of the wrong kind.
    BadAttribute,
    /// `unknown_op`: an op name relayout does not know.
    UnknownOp,
    /// A shape whose element count, byte size or index arithmetic overflows.
    SizeOverflow,
    /// A data buffer whose length does not match its tensor type. Not a rule of the op
    /// description: it is what a direct evaluation (the reference implementation) reports
    /// when handed the wrong bytes.
    BufferLength,
}

impl ErrorCategory {
    /// Every category, in declaration order.
    pub const ALL: [ErrorCategory; 21] = [
        ErrorCategory::BlockSizeTooSmall,
        ErrorCategory::NotDivisible,
        ErrorCategory::CropsTooLarge,
        ErrorCategory::BadRank,
        ErrorCategory::BadPaddings,
        ErrorCategory::BadCrops,
        ErrorCategory::BadVectC,
        ErrorCategory::BadMode,
        ErrorCategory::BadDataFormat,
        ErrorCategory::BadCol2ImL,
        ErrorCategory::BadCol2ImAttrs,
        ErrorCategory::BadPerm,
        ErrorCategory::BadPads,
        ErrorCategory::BadSlice,
        ErrorCategory::BadRepeats,
        ErrorCategory::BadShape,
        ErrorCategory::BadIm2ColAttrs,
        ErrorCategory::BadAttribute,
        ErrorCategory::UnknownOp,
        ErrorCategory::SizeOverflow,
        ErrorCategory::BufferLength,
    ];

    /// The category with this conformance string, if any.
    pub fn from_name(name: &str) -> Option<ErrorCategory> {
        ErrorCategory::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// The category string of the conformance format (`block_size_too_small`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::BlockSizeTooSmall => "block_size_too_small",
            ErrorCategory::NotDivisible => "not_divisible",
            ErrorCategory::CropsTooLarge => "crops_too_large",
            ErrorCategory::BadRank => "bad_rank",
            ErrorCategory::BadPaddings => "bad_paddings",
            ErrorCategory::BadCrops => "bad_crops",
            ErrorCategory::BadVectC => "bad_vect_c",
            ErrorCategory::BadMode => "bad_mode",
            ErrorCategory::BadDataFormat => "bad_data_format",
            ErrorCategory::BadCol2ImL => "bad_col2im_L",
            ErrorCategory::BadCol2ImAttrs => "bad_col2im_attrs",
            ErrorCategory::BadPerm => "bad_perm",
            ErrorCategory::BadPads => "bad_pads",
            ErrorCategory::BadSlice => "bad_slice",
            ErrorCategory::BadRepeats => "bad_repeats",
            ErrorCategory::BadShape => "bad_shape",
            ErrorCategory::BadIm2ColAttrs => "bad_im2col_attrs",
            ErrorCategory::BadAttribute => "bad_attribute",
            ErrorCategory::UnknownOp => "unknown_op",
            ErrorCategory::SizeOverflow => "size_overflow",
            ErrorCategory::BufferLength => "buffer_length",
        }
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An invalid op description: which rule it breaks, and a message with the values involved
/// (e.g. "SpaceToDepth: input height 5 (dim 1) is not divisible by block_size 2").
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{message} [{category}]")]
pub struct OpError {
    /// The rule broken.
    pub category: ErrorCategory,
    /// What is wrong, with the values involved.
    pub message: String,
}

impl OpError {
    /// An error in `category` with this message.
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> OpError {
        OpError {
            category,
            message: message.into(),
        }
    }

    /// The conformance category string.
    pub fn category(&self) -> &'static str {
        self.category.as_str()
    }
}
