//! One case file (FORMAT.md, "Case object") to a typed [`Case`].

use crate::data::encode;
use crate::error::{LoadError, LoadErrorKind};
use relayout_ir::{DType, TensorType};
use relayout_ops::{AttrValue, Attrs, Op, OpError};
use serde_json::{Map, Value};
use std::path::Path;

/// A conformance case: an op with attributes, an input, and what must come out.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The case's unique name (the file stem).
    pub name: String,
    /// The op string (`SpaceToDepth`, ...), as given: an unknown op is for
    /// [`relayout_ops::Op::from_attrs`] to reject.
    pub op_name: String,
    /// The attributes, as given (defaults are applied by `Op::from_attrs`).
    pub attrs: Attrs,
    /// The input's type.
    pub input: TensorType,
    /// The input's little-endian bytes, or `None` when the file has no `data` (enough to lower
    /// the op, not to run it).
    pub input_bytes: Option<Vec<u8>>,
    /// What the op must produce, or the error it must be refused with.
    pub expected: Expected,
    /// Where the expected result came from (information only).
    pub source: Option<String>,
}

/// What a case expects.
#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// A valid case: the exact output (or within `(rtol, atol)` for float Col2Im cases).
    Output {
        /// The output's type.
        ty: TensorType,
        /// The output's little-endian bytes.
        bytes: Vec<u8>,
        /// `(rtol, atol)` when floats may differ by rounding; `None` for a bit-exact match.
        tolerance: Option<(f64, f64)>,
    },
    /// An invalid case: the op must be refused with this category (`not_divisible`, ...).
    Error(String),
}

impl Case {
    /// The case's op, built from its name and attributes. An invalid case may already fail
    /// here (an unknown `data_format` is `bad_data_format`).
    pub fn op(&self) -> Result<Op, OpError> {
        Op::from_attrs(&self.op_name, &self.attrs)
    }
}

/// Reads and parses a case file.
pub fn load_case(path: &Path) -> Result<Case, LoadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| LoadError::new(&file, LoadErrorKind::Io, e.to_string()))?;
    parse_case(&text, &file)
}

/// Parses the text of a case file; `file` names it in errors.
pub fn parse_case(text: &str, file: &str) -> Result<Case, LoadError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| LoadError::new(file, LoadErrorKind::Json, e.to_string()))?;
    Parser { file }.case(&value)
}

/// Reads JSON values, naming the file in every error.
struct Parser<'a> {
    file: &'a str,
}

impl Parser<'_> {
    fn err(&self, kind: LoadErrorKind, message: impl Into<String>) -> LoadError {
        LoadError::new(self.file, kind, message)
    }

    fn schema(&self, message: impl Into<String>) -> LoadError {
        self.err(LoadErrorKind::Schema, message)
    }

    fn object<'v>(&self, v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, LoadError> {
        v.as_object()
            .ok_or_else(|| self.schema(format!("{what} must be an object, got {}", kind_of(v))))
    }

    fn string<'v>(&self, obj: &'v Map<String, Value>, key: &str) -> Result<&'v str, LoadError> {
        match obj.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(v) => Err(self.schema(format!("`{key}` must be a string, got {}", kind_of(v)))),
            None => Err(self.schema(format!("missing `{key}`"))),
        }
    }

    /// An object's keys must be among `known`: a misspelt key (`tolerence`) would otherwise be
    /// silently ignored.
    fn only(&self, obj: &Map<String, Value>, what: &str, known: &[&str]) -> Result<(), LoadError> {
        match obj.keys().find(|k| !known.contains(&k.as_str())) {
            Some(key) => Err(self.schema(format!(
                "{what}: unknown key `{key}`; the keys are {}",
                known.join(", ")
            ))),
            None => Ok(()),
        }
    }

    fn case(&self, v: &Value) -> Result<Case, LoadError> {
        let obj = self.object(v, "a case")?;
        self.only(
            obj,
            "a case",
            &[
                "name",
                "op",
                "attrs",
                "input",
                "output",
                "error",
                "tolerance",
                "source",
            ],
        )?;
        let name = self.string(obj, "name")?.to_string();
        let op_name = self.string(obj, "op")?.to_string();
        let attrs = match obj.get("attrs") {
            Some(a) => self.attrs(a)?,
            None => return Err(self.schema("missing `attrs`")),
        };
        let (input, input_bytes) = match obj.get("input") {
            Some(t) => self.tensor(t, "input", false)?,
            None => return Err(self.schema("missing `input`")),
        };
        let expected = match (obj.get("output"), obj.get("error")) {
            (Some(out), None) => {
                let (ty, bytes) = self.tensor(out, "output", true)?;
                Expected::Output {
                    ty,
                    bytes: bytes.unwrap_or_default(),
                    tolerance: obj
                        .get("tolerance")
                        .map(|t| self.tolerance(t))
                        .transpose()?,
                }
            }
            (None, Some(Value::String(category))) => Expected::Error(category.clone()),
            (None, Some(v)) => {
                return Err(self.schema(format!("`error` must be a string, got {}", kind_of(v))))
            }
            (Some(_), Some(_)) => {
                return Err(self.schema("a case has `output` or `error`, not both"))
            }
            (None, None) => return Err(self.schema("a case needs `output` or `error`")),
        };
        let source = match obj.get("source") {
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        Ok(Case {
            name,
            op_name,
            attrs,
            input,
            input_bytes,
            expected,
            source,
        })
    }

    fn attrs(&self, v: &Value) -> Result<Attrs, LoadError> {
        self.object(v, "`attrs`")?
            .iter()
            .map(|(k, v)| Ok((k.clone(), self.attr(k, v)?)))
            .collect()
    }

    fn attr(&self, key: &str, v: &Value) -> Result<AttrValue, LoadError> {
        match v {
            // Integers stay exact (int64 and uint64 values use the full range); other numbers
            // are floats, which only Pad's constant_value takes.
            Value::Number(n) => Ok(match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => AttrValue::Int(i),
                (None, Some(u), _) => AttrValue::UInt(u),
                (None, None, Some(x)) => AttrValue::Float(x),
                _ => return Err(self.schema(format!("attribute `{key}`: {n} is not a number"))),
            }),
            Value::Bool(b) => Ok(AttrValue::Bool(*b)),
            Value::String(s) => Ok(AttrValue::Str(s.clone())),
            Value::Array(items) => items
                .iter()
                .map(|i| self.attr(key, i))
                .collect::<Result<_, _>>()
                .map(AttrValue::List),
            other => Err(self.schema(format!(
                "attribute `{key}`: {} is not an integer, a string or a list",
                kind_of(other)
            ))),
        }
    }

    /// A tensor object; `data` is required only when `need_data`.
    fn tensor(
        &self,
        v: &Value,
        what: &str,
        need_data: bool,
    ) -> Result<(TensorType, Option<Vec<u8>>), LoadError> {
        let obj = self.object(v, &format!("`{what}`"))?;
        self.only(obj, what, &["dtype", "shape", "data"])?;
        let dtype_name = self.string(obj, "dtype")?;
        let dtype = DType::from_name(dtype_name).ok_or_else(|| {
            self.err(
                LoadErrorKind::UnknownDType,
                format!("{what}: unknown dtype \"{dtype_name}\""),
            )
        })?;
        let shape = match obj.get("shape") {
            Some(Value::Array(dims)) => dims
                .iter()
                .map(|d| {
                    d.as_u64().ok_or_else(|| {
                        self.schema(format!(
                            "{what}: shape entry {d} is not a non-negative integer"
                        ))
                    })
                })
                .collect::<Result<Vec<u64>, _>>()?,
            Some(other) => {
                return Err(self.schema(format!(
                    "{what}: `shape` must be a list, got {}",
                    kind_of(other)
                )))
            }
            None => return Err(self.schema(format!("{what}: missing `shape`"))),
        };
        let ty = TensorType::new(dtype, shape);
        let data = match obj.get("data") {
            None if need_data => return Err(self.schema(format!("{what}: missing `data`"))),
            None => return Ok((ty, None)),
            Some(Value::Array(data)) => data,
            Some(other) => {
                return Err(self.schema(format!(
                    "{what}: `data` must be a list, got {}",
                    kind_of(other)
                )))
            }
        };
        let count = ty.num_elements().ok();
        if count != Some(data.len() as u64) {
            return Err(self.err(
                LoadErrorKind::DataLength,
                format!(
                    "{what}: `data` has {} elements but shape {ty} has {}",
                    data.len(),
                    count.map_or("more than 2^63".to_string(), |c| c.to_string())
                ),
            ));
        }
        let bytes = encode(dtype, data)
            .map_err(|e| self.err(LoadErrorKind::Data, format!("{what}: {e}")))?;
        Ok((ty, Some(bytes)))
    }

    fn tolerance(&self, v: &Value) -> Result<(f64, f64), LoadError> {
        let obj = self.object(v, "`tolerance`")?;
        self.only(obj, "tolerance", &["rtol", "atol"])?;
        let get = |key: &str| {
            obj.get(key)
                .and_then(Value::as_f64)
                .filter(|t| *t >= 0.0)
                .ok_or_else(|| self.schema(format!("tolerance: `{key}` must be a number >= 0")))
        };
        Ok((get("rtol")?, get("atol")?))
    }
}

/// The JSON kind of a value, for messages.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
