//! Reading a benchmark suite file: a JSON array of cases
//! `{"name", "op", "attrs", "dtype", "input_shape"}`.
//!
//! A file that cannot be read or is not a JSON array of objects is an error for the whole run.
//! A case whose fields are wrong (an unknown dtype, a negative dimension, ...) becomes a case
//! that fails on its own, so one bad entry does not hide the results of the others.

use relayout::ir::{DType, TensorType};
use relayout::{AttrValue, Attrs};
use serde_json::{Map, Value};
use std::path::Path;

/// One case of the suite, as far as it could be read.
#[derive(Debug)]
pub struct SuiteCase {
    pub name: String,
    /// The op, its attributes and the input type, or why the entry is unusable.
    pub spec: Result<CaseSpec, String>,
}

#[derive(Debug)]
pub struct CaseSpec {
    pub op_name: String,
    pub attrs: Attrs,
    pub input: TensorType,
}

/// Reads and parses the suite file; the error is one line that names the file.
pub fn load(path: &Path) -> Result<Vec<SuiteCase>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Vec<SuiteCase>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Array(entries) = value else {
        return Err("the suite must be a JSON array of cases".into());
    };
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| parse_entry(i, entry))
        .collect()
}

fn parse_entry(index: usize, entry: &Value) -> Result<SuiteCase, String> {
    let Value::Object(fields) = entry else {
        return Err(format!("case #{index} is not a JSON object"));
    };
    // Without a name the case could not be reported at all, so that is a file-level error.
    let name = match fields.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err(format!("case #{index} has no string \"name\"")),
    };
    Ok(SuiteCase {
        name,
        spec: case_spec(fields),
    })
}

fn case_spec(fields: &Map<String, Value>) -> Result<CaseSpec, String> {
    let op_name = match fields.get("op") {
        Some(Value::String(s)) => s.clone(),
        _ => return Err("no string \"op\"".into()),
    };
    let attrs = match fields.get("attrs") {
        None => Attrs::new(),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), attr_value(k, v)?)))
            .collect::<Result<_, String>>()?,
        Some(_) => return Err("\"attrs\" is not an object".into()),
    };
    let dtype = match fields.get("dtype") {
        Some(Value::String(s)) => {
            DType::from_name(s).ok_or_else(|| format!("unknown dtype \"{s}\""))?
        }
        _ => return Err("no string \"dtype\"".into()),
    };
    let shape = match fields.get("input_shape") {
        Some(Value::Array(dims)) => dims
            .iter()
            .map(dimension)
            .collect::<Result<Vec<u64>, String>>()?,
        _ => return Err("no array \"input_shape\"".into()),
    };
    Ok(CaseSpec {
        op_name,
        attrs,
        input: TensorType::new(dtype, shape),
    })
}

fn dimension(v: &Value) -> Result<u64, String> {
    v.as_u64()
        .ok_or_else(|| format!("input_shape: {v} is not a non-negative integer"))
}

/// JSON to an attribute value, as the conformance format reads it: integers, strings and
/// (nested) lists of them.
fn attr_value(key: &str, v: &Value) -> Result<AttrValue, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(AttrValue::Int)
            .ok_or_else(|| format!("attribute `{key}`: {n} is not a 64-bit integer")),
        Value::String(s) => Ok(AttrValue::Str(s.clone())),
        Value::Array(items) => items
            .iter()
            .map(|i| attr_value(key, i))
            .collect::<Result<_, _>>()
            .map(AttrValue::List),
        other => Err(format!(
            "attribute `{key}`: {other} is not an integer, a string or a list"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_case() {
        let cases = parse(r#"[{"name": "a", "op": "SpaceToDepth", "attrs": {"block_size": 2, "paddings": [[0, 1]]}, "dtype": "float32", "input_shape": [1, 2, 2, 1]}]"#).unwrap();
        assert_eq!(cases.len(), 1);
        let spec = cases[0].spec.as_ref().unwrap();
        assert_eq!(spec.input, TensorType::new(DType::F32, [1, 2, 2, 1]));
        assert_eq!(spec.attrs["block_size"], AttrValue::Int(2));
        assert_eq!(
            spec.attrs["paddings"],
            AttrValue::List(vec![AttrValue::List(vec![
                AttrValue::Int(0),
                AttrValue::Int(1)
            ])])
        );
    }

    #[test]
    fn a_bad_case_fails_alone() {
        let cases = parse(r#"[{"name": "a", "op": "X", "dtype": "float128", "input_shape": [1]}, {"name": "b", "op": "X", "dtype": "int8", "input_shape": [-1]}]"#).unwrap();
        assert!(cases[0].spec.as_ref().err().unwrap().contains("float128"));
        assert!(cases[1].spec.is_err());
    }

    #[test]
    fn a_bad_file_is_one_error() {
        assert!(parse("{").unwrap_err().starts_with("not valid JSON"));
        assert!(parse("{}").is_err());
        assert!(parse("[1]").is_err());
        assert!(parse(r#"[{"op": "X"}]"#).is_err());
    }
}
