//! Attribute values as they come from JSON cases or the CLI's op syntax, before validation.

use std::collections::BTreeMap;
use std::fmt;

/// An attribute value: an integer, a string, or a list of values (`[[1, 2], [0, 0]]`); floats,
/// bools and integers above `i64::MAX` only for Pad's `constant_value`.
#[derive(Clone, PartialEq, Debug)]
pub enum AttrValue {
    /// An integer (`2`).
    Int(i64),
    /// An integer above `i64::MAX` (a uint64 `constant_value`).
    UInt(u64),
    /// A number that is not an integer (`-0.125`, `-0.0`).
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// A string (`"NCHW"`).
    Str(String),
    /// A list of values (`[1, 2]`, `[[0, 1], [1, 0]]`).
    List(Vec<AttrValue>),
}

/// Attributes by name.
pub type Attrs = BTreeMap<String, AttrValue>;

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::Int(i) => write!(f, "{i}"),
            AttrValue::UInt(i) => write!(f, "{i}"),
            AttrValue::Float(x) => write!(f, "{x:?}"),
            AttrValue::Bool(b) => write!(f, "{b}"),
            AttrValue::Str(s) => write!(f, "\"{s}\""),
            AttrValue::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
        }
    }
}
