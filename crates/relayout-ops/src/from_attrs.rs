//! [`Op::from_attrs`]: an op name and attributes (from a JSON case or the CLI's op syntax) to an
//! [`Op`], with the documented defaults.
//!
//! Only the kind of each value is checked here (an integer, a string, a list of integers, a
//! list of pairs) and the two enumerations (`data_format`, `mode`). The values themselves are
//! validated against the input type by [`Op::output_type`], so that a negative padding or a
//! wrong number of pairs is reported as `bad_paddings` with the same message however the op
//! was built.

use crate::validate::fail;
use crate::{
    AttrValue, Attrs, DataFormat, DepthToSpaceMode, ErrorCategory, Op, OpError, PadMode, PadValue,
};

/// Reads the attributes of one op, naming the op in every message.
struct Reader<'a> {
    op: &'a str,
    attrs: &'a Attrs,
}

impl<'a> Reader<'a> {
    /// Rejects attributes the op does not have, before any value is read, so a misspelt
    /// optional attribute is an error rather than a silently applied default.
    fn only(&self, known: &[&str]) -> Result<(), OpError> {
        if let Some(name) = self.attrs.keys().find(|k| !known.contains(&k.as_str())) {
            return fail(
                ErrorCategory::BadAttribute,
                format!(
                    "{}: unknown attribute `{name}`; the attributes are {}",
                    self.op,
                    known.join(", ")
                ),
            );
        }
        Ok(())
    }

    fn wrong_kind<T>(&self, name: &str, want: &str, got: &AttrValue) -> Result<T, OpError> {
        fail(
            ErrorCategory::BadAttribute,
            format!("{}: attribute `{name}` must be {want}, got {got}", self.op),
        )
    }

    fn required(&self, name: &str) -> Result<&'a AttrValue, OpError> {
        self.attrs.get(name).ok_or_else(|| {
            OpError::new(
                ErrorCategory::BadAttribute,
                format!("{}: missing required attribute `{name}`", self.op),
            )
        })
    }

    fn int(&self, name: &str) -> Result<i64, OpError> {
        match self.required(name)? {
            AttrValue::Int(v) => Ok(*v),
            other => self.wrong_kind(name, "an integer", other),
        }
    }

    fn int_list(&self, name: &str, value: &AttrValue) -> Result<Vec<i64>, OpError> {
        let AttrValue::List(items) = value else {
            return self.wrong_kind(name, "a list of integers", value);
        };
        items
            .iter()
            .map(|v| match v {
                AttrValue::Int(i) => Ok(*i),
                _ => self.wrong_kind(name, "a list of integers", value),
            })
            .collect()
    }

    fn ints(&self, name: &str) -> Result<Vec<i64>, OpError> {
        self.int_list(name, self.required(name)?)
    }

    /// An optional list of integers, or `default` when absent.
    fn ints_or(&self, name: &str, default: Vec<i64>) -> Result<Vec<i64>, OpError> {
        match self.attrs.get(name) {
            Some(v) => self.int_list(name, v),
            None => Ok(default),
        }
    }

    fn string(&self, name: &str) -> Result<Option<&'a str>, OpError> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(AttrValue::Str(s)) => Ok(Some(s)),
            Some(other) => self.wrong_kind(name, "a string", other),
        }
    }

    /// A list of `[begin, end]` lists, kept as given: a wrong count or a pair of the wrong
    /// length is for validation to report. A flat list of integers is the wrong shape of the
    /// right kind, so it is reported in `shape_category` (`bad_paddings` / `bad_crops`) too.
    fn pairs(&self, name: &str, shape_category: ErrorCategory) -> Result<Vec<Vec<i64>>, OpError> {
        let value = self.required(name)?;
        let want = "a list of [begin, end] lists of integers";
        let AttrValue::List(items) = value else {
            return self.wrong_kind(name, want, value);
        };
        let mut pairs = Vec::with_capacity(items.len());
        for item in items {
            match item {
                AttrValue::List(_) => pairs.push(self.int_list(name, item)?),
                AttrValue::Int(_) => {
                    return fail(
                        shape_category,
                        format!(
                            "{}: {name} must be a list of [begin, end] pairs, got {value}",
                            self.op
                        ),
                    )
                }
                _ => return self.wrong_kind(name, want, value),
            }
        }
        Ok(pairs)
    }

    /// An optional list of integers, `None` when absent (its default depends on the input).
    fn opt_ints(&self, name: &str) -> Result<Option<Vec<i64>>, OpError> {
        self.attrs
            .get(name)
            .map(|v| self.int_list(name, v))
            .transpose()
    }

    /// Pad's `mode`, defaulting to constant; case-sensitive.
    fn pad_mode(&self) -> Result<PadMode, OpError> {
        match self.string("mode")? {
            None => Ok(PadMode::Constant),
            Some(s) => PadMode::from_name(s).ok_or_else(|| {
                OpError::new(
                    ErrorCategory::BadMode,
                    format!(
                        "{}: unknown mode \"{s}\"; expected constant, reflect, edge or wrap",
                        self.op
                    ),
                )
            }),
        }
    }

    /// Pad's `constant_value`, written like a tensor element: a number, `"nan"`, `"inf"`,
    /// `"-inf"`, a bool, or `[re, im]`; zero when absent.
    fn pad_value(&self) -> Result<PadValue, OpError> {
        let Some(value) = self.attrs.get("constant_value") else {
            return Ok(PadValue::ZERO);
        };
        let want = "a number, \"nan\", \"inf\", \"-inf\", a bool or [re, im]";
        let real = |v: &AttrValue| -> Option<f64> {
            match v {
                AttrValue::Int(i) => Some(*i as f64).filter(|x| *x as i64 == *i),
                AttrValue::Float(x) => Some(*x),
                AttrValue::Str(s) => match s.as_str() {
                    "nan" => Some(f64::NAN),
                    "inf" => Some(f64::INFINITY),
                    "-inf" => Some(f64::NEG_INFINITY),
                    _ => None,
                },
                _ => None,
            }
        };
        Ok(match value {
            AttrValue::Int(i) => PadValue::Int(i128::from(*i)),
            AttrValue::UInt(u) => PadValue::Int(i128::from(*u)),
            AttrValue::Bool(b) => PadValue::Bool(*b),
            AttrValue::List(parts) => match parts.as_slice() {
                [re, im] => match (real(re), real(im)) {
                    (Some(re), Some(im)) => PadValue::Complex(re.to_bits(), im.to_bits()),
                    _ => return self.wrong_kind("constant_value", want, value),
                },
                _ => return self.wrong_kind("constant_value", want, value),
            },
            other => match real(other) {
                Some(x) => PadValue::float(x),
                None => return self.wrong_kind("constant_value", want, value),
            },
        })
    }

    /// Reshape's `allowzero`: 0 (default) or 1.
    fn allowzero(&self) -> Result<bool, OpError> {
        match self.attrs.get("allowzero") {
            None | Some(AttrValue::Int(0)) => Ok(false),
            Some(AttrValue::Int(1)) => Ok(true),
            Some(other) => self.wrong_kind("allowzero", "0 or 1", other),
        }
    }

    /// `data_format`, defaulting to NHWC.
    fn data_format(&self) -> Result<DataFormat, OpError> {
        match self.string("data_format")? {
            None => Ok(DataFormat::Nhwc),
            Some(s) => DataFormat::from_name(s).ok_or_else(|| {
                OpError::new(
                    ErrorCategory::BadDataFormat,
                    format!(
                        "{}: unknown data_format \"{s}\"; expected NHWC, NCHW or NCHW_VECT_C",
                        self.op
                    ),
                )
            }),
        }
    }

    /// `mode`, defaulting to DCR.
    fn mode(&self) -> Result<DepthToSpaceMode, OpError> {
        match self.string("mode")? {
            None => Ok(DepthToSpaceMode::Dcr),
            Some(s) => DepthToSpaceMode::from_name(s).ok_or_else(|| {
                OpError::new(
                    ErrorCategory::BadMode,
                    format!("{}: unknown mode \"{s}\"; expected DCR or CRD", self.op),
                )
            }),
        }
    }
}

/// The op names of the conformance format, in the order of [`Op`]'s variants.
pub const OP_NAMES: [&str; 13] = [
    "SpaceToDepth",
    "DepthToSpace",
    "SpaceToBatchND",
    "BatchToSpaceND",
    "SpaceToBatch",
    "BatchToSpace",
    "Col2Im",
    "Transpose",
    "Pad",
    "Slice",
    "Tile",
    "Reshape",
    "Im2Col",
];

/// The attribute names op `name` (one of [`OP_NAMES`]) accepts, or `None` for an unknown op.
///
/// ```
/// assert_eq!(
///     relayout_ops::known_attributes("DepthToSpace"),
///     Some(&["block_size", "data_format", "mode"][..])
/// );
/// assert_eq!(relayout_ops::known_attributes("Gather"), None);
/// ```
pub fn known_attributes(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "SpaceToDepth" => &["block_size", "data_format"],
        "DepthToSpace" => &["block_size", "data_format", "mode"],
        "SpaceToBatchND" => &["block_shape", "paddings"],
        "BatchToSpaceND" => &["block_shape", "crops"],
        "SpaceToBatch" => &["block_size", "paddings"],
        "BatchToSpace" => &["block_size", "crops"],
        "Col2Im" => &["image_shape", "block_shape", "dilations", "pads", "strides"],
        "Transpose" => &["perm"],
        "Pad" => &["pads", "mode", "constant_value", "axes"],
        "Slice" => &["starts", "ends", "axes", "steps"],
        "Tile" => &["repeats"],
        "Reshape" => &["shape", "allowzero"],
        "Im2Col" => &["block_shape", "dilations", "pads", "strides"],
        _ => return None,
    })
}

fn unknown_op(name: &str) -> OpError {
    OpError::new(
        ErrorCategory::UnknownOp,
        format!("unknown op `{name}`; the ops are {}", OP_NAMES.join(", ")),
    )
}

pub(crate) fn from_attrs(name: &str, attrs: &Attrs) -> Result<Op, OpError> {
    let r = Reader { op: name, attrs };
    r.only(known_attributes(name).ok_or_else(|| unknown_op(name))?)?;
    Ok(match name {
        "SpaceToDepth" => Op::SpaceToDepth {
            block_size: r.int("block_size")?,
            data_format: r.data_format()?,
        },
        "DepthToSpace" => Op::DepthToSpace {
            block_size: r.int("block_size")?,
            data_format: r.data_format()?,
            mode: r.mode()?,
        },
        "SpaceToBatchND" => Op::SpaceToBatchNd {
            block_shape: r.ints("block_shape")?,
            paddings: r.pairs("paddings", ErrorCategory::BadPaddings)?,
        },
        "BatchToSpaceND" => Op::BatchToSpaceNd {
            block_shape: r.ints("block_shape")?,
            crops: r.pairs("crops", ErrorCategory::BadCrops)?,
        },
        "SpaceToBatch" => Op::SpaceToBatch {
            block_size: r.int("block_size")?,
            paddings: r.pairs("paddings", ErrorCategory::BadPaddings)?,
        },
        "BatchToSpace" => Op::BatchToSpace {
            block_size: r.int("block_size")?,
            crops: r.pairs("crops", ErrorCategory::BadCrops)?,
        },
        "Col2Im" => {
            // The optional attributes default to the spatial rank of image_shape.
            let image_shape = r.ints("image_shape")?;
            let m = image_shape.len();
            Op::Col2Im {
                block_shape: r.ints("block_shape")?,
                dilations: r.ints_or("dilations", vec![1; m])?,
                pads: r.ints_or("pads", vec![0; 2 * m])?,
                strides: r.ints_or("strides", vec![1; m])?,
                image_shape,
            }
        }
        "Transpose" => Op::Transpose {
            perm: r.opt_ints("perm")?,
        },
        "Pad" => Op::Pad {
            pads: r.ints("pads")?,
            mode: r.pad_mode()?,
            constant_value: r.pad_value()?,
            axes: r.opt_ints("axes")?,
        },
        "Slice" => Op::Slice {
            starts: r.ints("starts")?,
            ends: r.ints("ends")?,
            axes: r.opt_ints("axes")?,
            steps: r.opt_ints("steps")?,
        },
        "Tile" => Op::Tile {
            repeats: r.ints("repeats")?,
        },
        "Reshape" => Op::Reshape {
            shape: r.ints("shape")?,
            allowzero: r.allowzero()?,
        },
        "Im2Col" => Op::Im2Col {
            block_shape: r.ints("block_shape")?,
            dilations: r.opt_ints("dilations")?,
            pads: r.opt_ints("pads")?,
            strides: r.opt_ints("strides")?,
        },
        _ => return Err(unknown_op(name)),
    })
}
