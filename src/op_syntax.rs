//! The short op syntax of the command line, MLIR-flavoured:
//!
//! ```text
//! SpaceToDepth {block_size = 2, data_format = "NHWC"} : tensor<1x4x4x1xf32>
//! SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 2], [1, 2]]} : tensor<4x129x129x256xf32>
//! ```
//!
//! An op name, an optional attribute dictionary (integers, strings, nested lists), a colon and
//! the input tensor type.

use relayout_ir::TensorType;
use relayout_ops::{AttrValue, Attrs};

/// An op description read from text: its name, attributes and input type.
#[derive(Clone, PartialEq, Debug)]
pub struct OpSpec {
    /// The op's name, as [`Op::from_attrs`](crate::Op::from_attrs) takes it.
    pub name: String,
    /// The attributes, as written (defaults are applied by `Op::from_attrs`).
    pub attrs: Attrs,
    /// The input tensor type.
    pub input: TensorType,
}

/// A syntax error with the 1-based column where it was found.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("column {col}: {message}")]
pub struct SyntaxError {
    /// The 1-based column, in characters.
    pub col: usize,
    /// What was expected there.
    pub message: String,
}

struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn error<T>(&self, message: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            col: self.text[..self.pos].chars().count() + 1,
            message: message.into(),
        })
    }

    fn skip_ws(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.pos..].chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<(), SyntaxError> {
        if self.eat(c) {
            Ok(())
        } else {
            let found = self
                .peek()
                .map_or("the end".to_string(), |f| format!("'{f}'"));
            self.error(format!("expected '{c}', found {found}"))
        }
    }

    fn take_while(&mut self, mut f: impl FnMut(char) -> bool) -> &'a str {
        self.skip_ws();
        let rest = &self.text[self.pos..];
        let len = rest.find(|c: char| !f(c)).unwrap_or(rest.len());
        self.pos += len;
        &rest[..len]
    }

    fn ident(&mut self, what: &str) -> Result<&'a str, SyntaxError> {
        let id = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
        if id.is_empty() {
            return self.error(format!("expected {what}"));
        }
        Ok(id)
    }

    /// A number: an integer (`-3`, and up to `u64::MAX`), or a float (`-0.125`, `1e-3`), which
    /// only Pad's `constant_value` takes.
    fn number(&mut self) -> Result<AttrValue, SyntaxError> {
        let start = self.pos;
        self.skip_ws();
        let neg = self.eat('-');
        let digits = self.take_while(|c| c.is_ascii_digit());
        if digits.is_empty() {
            self.pos = start;
            return self.error("expected a number");
        }
        let mut text = if neg {
            format!("-{digits}")
        } else {
            digits.to_string()
        };
        if self.text[self.pos..].starts_with('.') || self.text[self.pos..].starts_with(['e', 'E']) {
            let mut prev = ' ';
            let rest = self.take_while(|c| {
                let ok = c.is_ascii_digit()
                    || matches!(c, '.' | 'e' | 'E')
                    || (matches!(c, '-' | '+') && matches!(prev, 'e' | 'E'));
                prev = c;
                ok
            });
            text.push_str(rest);
            return match text.parse::<f64>() {
                Ok(x) => Ok(AttrValue::Float(x)),
                Err(_) => self.error(format!("{text} is not a number")),
            };
        }
        if let Ok(i) = text.parse::<i64>() {
            return Ok(AttrValue::Int(i));
        }
        match text.parse::<u64>() {
            Ok(u) => Ok(AttrValue::UInt(u)),
            Err(_) => self.error(format!("integer {text} does not fit in 64 bits")),
        }
    }

    fn value(&mut self) -> Result<AttrValue, SyntaxError> {
        match self.peek() {
            Some('[') => {
                self.expect('[')?;
                let mut items = Vec::new();
                if !self.eat(']') {
                    loop {
                        items.push(self.value()?);
                        if self.eat(']') {
                            break;
                        }
                        self.expect(',')?;
                    }
                }
                Ok(AttrValue::List(items))
            }
            Some('"') => {
                self.expect('"')?;
                let s = self.take_while(|c| c != '"');
                self.expect('"')?;
                Ok(AttrValue::Str(s.to_string()))
            }
            Some(c) if c == '-' || c.is_ascii_digit() => self.number(),
            Some('t' | 'f') => match self.take_while(|c| c.is_ascii_alphabetic()) {
                "true" => Ok(AttrValue::Bool(true)),
                "false" => Ok(AttrValue::Bool(false)),
                word => self.error(format!("expected true or false, found {word}")),
            },
            _ => self.error("expected a number, true, false, a \"string\" or a [list]"),
        }
    }
}

/// Parses `tensor<1x4x4x1xf32>`.
pub fn parse_tensor_type(text: &str) -> Result<TensorType, SyntaxError> {
    let mut c = Cursor { text, pos: 0 };
    let ty = tensor_type(&mut c)?;
    if c.peek().is_some() {
        return c.error("unexpected text after the tensor type");
    }
    Ok(ty)
}

fn tensor_type(c: &mut Cursor<'_>) -> Result<TensorType, SyntaxError> {
    // The type runs to the `>` that closes `tensor<` (an element type may nest one pair,
    // `complex<f32>`); relayout-ir reads it, with the grammar of the IR's types.
    c.skip_ws();
    let rest = &c.text[c.pos..];
    let mut depth = 0usize;
    let mut end = rest.len();
    for (i, ch) in rest.char_indices() {
        match ch {
            '<' => depth += 1,
            '>' if depth <= 1 => {
                end = i + 1;
                break;
            }
            '>' => depth -= 1,
            _ => {}
        }
    }
    match rest[..end].parse::<TensorType>() {
        Ok(ty) => {
            c.pos += end;
            Ok(ty)
        }
        Err(e) => {
            // The error's column counts from the type's first character (one line).
            let before: usize = rest[..end]
                .lines()
                .take(e.line.saturating_sub(1))
                .map(|l| l.len() + 1)
                .sum();
            let at = rest[before..end]
                .char_indices()
                .nth(e.col.saturating_sub(1))
                .map_or(end, |(k, _)| before + k);
            c.pos += at;
            c.error(e.message)
        }
    }
}

/// Parses `Name {attr = value, ...} : tensor<...>`.
pub fn parse_op_spec(text: &str) -> Result<OpSpec, SyntaxError> {
    let mut c = Cursor { text, pos: 0 };
    let (name, attrs) = name_and_attrs(&mut c)?;
    c.expect(':')?;
    let input = tensor_type(&mut c)?;
    if c.peek().is_some() {
        return c.error("unexpected text after the input type");
    }
    Ok(OpSpec { name, attrs, input })
}

/// Parses an op of a chain, whose input type is what the op before it gives: `Name {attrs}`,
/// the op syntax without `: tensor<...>` (`DepthToSpace {block_size = 2}`). Returns the name
/// and the attributes as written. (The Python package parses the ops whose type comes from
/// an array this way too.)
pub fn parse_chained_op(text: &str) -> Result<(String, Attrs), SyntaxError> {
    let mut c = Cursor { text, pos: 0 };
    let op = name_and_attrs(&mut c)?;
    if c.peek() == Some(':') {
        return c.error(
            "an op of a chain takes the type the op before it gives: leave out the ': tensor<...>'",
        );
    }
    if c.peek().is_some() {
        return c.error("unexpected text after the attributes");
    }
    Ok(op)
}

/// `Name` or `Name {key = value, ...}`.
fn name_and_attrs(c: &mut Cursor) -> Result<(String, Attrs), SyntaxError> {
    let name = c.ident("an op name such as SpaceToDepth")?.to_string();
    let mut attrs = Attrs::new();
    if c.eat('{') && !c.eat('}') {
        loop {
            let key = c.ident("an attribute name")?.to_string();
            c.expect('=')?;
            let v = c.value()?;
            if attrs.insert(key.clone(), v).is_some() {
                return c.error(format!("attribute '{key}' is given twice"));
            }
            if c.eat('}') {
                break;
            }
            c.expect(',')?;
        }
    }
    Ok((name, attrs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use relayout_ir::DType;

    #[test]
    fn parses_ops() {
        let s = parse_op_spec(r#"SpaceToBatchND {block_shape = [2, 2], paddings = [[1, -2], [0, 0]]} : tensor<4x5x5x2xbf16>"#).unwrap();
        assert_eq!(s.name, "SpaceToBatchND");
        assert_eq!(s.input, TensorType::new(DType::BF16, [4, 5, 5, 2]));
        assert_eq!(
            s.attrs["paddings"],
            AttrValue::List(vec![
                AttrValue::List(vec![AttrValue::Int(1), AttrValue::Int(-2)]),
                AttrValue::List(vec![AttrValue::Int(0), AttrValue::Int(0)])
            ])
        );
        let t = parse_op_spec("DepthToSpace {block_size = 2, mode = \"CRD\", data_format = \"NCHW\"} : tensor<1x8x2x2xcomplex<f32>>").unwrap();
        assert_eq!(t.input.dtype, DType::C64);
        assert_eq!(
            parse_op_spec("SpaceToDepth : tensor<f16>")
                .unwrap()
                .input
                .shape,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn parses_chained_ops() {
        let (name, attrs) = parse_chained_op("DepthToSpace {block_size = 2}").unwrap();
        assert_eq!(name, "DepthToSpace");
        assert_eq!(attrs["block_size"], AttrValue::Int(2));
        assert_eq!(parse_chained_op(" Transpose ").unwrap().0, "Transpose");
        let typed = parse_chained_op("Transpose : tensor<2xf32>").unwrap_err();
        assert_eq!(typed.col, 11, "{typed}");
        assert!(typed.message.contains("leave out"), "{typed}");
        assert!(parse_chained_op("Transpose {perm = [1, 0]} x").is_err());
    }

    #[test]
    fn reports_columns() {
        assert_eq!(
            parse_op_spec("SpaceToDepth {block_size 2} : tensor<1xf32>")
                .unwrap_err()
                .col,
            26
        );
        assert!(parse_op_spec("SpaceToDepth : tensor<1xf33>")
            .unwrap_err()
            .message
            .contains("f33"));
        assert!(parse_op_spec("SpaceToDepth : tensor<99999999999999999999xf32>").is_err());
        assert!(parse_op_spec("").is_err());
        assert!(parse_op_spec("X {a = [[[[").is_err());
    }
}
