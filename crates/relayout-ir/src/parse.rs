//! The one parser of both IRs: the exact inverse of [`print`](crate::print), so that
//! `parse_kernel(&k.to_string()) == Ok(k)` for every index-map kernel and
//! `parse_loop_kernel(&k.to_string()) == Ok(k)` for every loop kernel.
//!
//! It is a hand-written lexer and a recursive-descent parser with one token of lookahead.
//! Whitespace and newlines may appear between any two tokens, and `//` starts a comment that
//! runs to the end of the line (so MLIR-style `// -----// IR Dump After ...` headers are
//! skipped). Statements need no separator: each starts with its action keyword.
//!
//! Expressions follow MLIR's affine grammar:
//!
//! ```text
//! expr    := term (('+' | '-') term)*             (left-associative)
//! term    := unary (('*' | 'floordiv' | 'mod') unary)*   (left-associative)
//! unary   := '-' INT | '-' unary | primary         (`-d0` is `d0 * -1`)
//! primary := INT | 'd'N | '(' expr ')'
//! ```
//!
//! `a - 3` is `a + (-3)` and `a - e` is `a + e * -1`, the trees the printer prints back as
//! `a - 3` and `a + e * -1`. One side of `*` must be a constant: `3 * d0` reads as `d0 * 3`
//! (the printer always puts the constant on the right, so no printed text is read differently),
//! and `d0 * d1` is an error. The divisor of `floordiv` and `mod` must be a constant; its sign is
//! left to the verifier, so that every kernel the printer can print parses back.
//!
//! Errors carry the 1-based line and column (counted in characters) of the offending token and
//! its text. The parser never panics: integer literals that do not fit in 64 bits, dims that
//! are not declared by the `for` clause and expressions nested deeper than
//! [`MAX_EXPR_DEPTH`] are errors.

use crate::{
    Action, AffineExpr, Band, Constraint, DType, DimRange, Kernel, Loop, LoopAction, LoopKernel,
    LoopStmt, Scalar, Stmt, TensorType, Window,
};
use std::fmt::Write;

/// The deepest expression tree (and the deepest nesting of parentheses and unary minus) the
/// parser accepts. Rationale: every walk over an expression (printing, `bounds`, `==`, `Drop`)
/// recurses, so an unbounded tree read from text could overflow the stack; real kernels stay
/// far below this (a sum over eight dims is about twenty deep). The verifier enforces the same
/// bound, so every verified kernel prints to text that parses back.
pub const MAX_EXPR_DEPTH: usize = 256;

pub use crate::any::AnyKernel;

/// A parse error with the 1-based line and column where it was found.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub struct ParseError {
    /// The 1-based line.
    pub line: usize,
    /// The 1-based column, in characters.
    pub col: usize,
    /// What was expected.
    pub message: String,
    /// The text of the offending token (shortened when long), or `end of input`.
    pub found: String,
}

impl ParseError {
    /// The error followed by the offending line of `source` and a caret under the column, as
    /// rustc shows it. `source` should be the text that was parsed.
    pub fn render(&self, source: &str) -> String {
        let mut out = format!("error: {self}\n");
        if let Some(text) = source.lines().nth(self.line.saturating_sub(1)) {
            let pad: String = text
                .chars()
                .take(self.col.saturating_sub(1))
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "  | {text}\n  | {pad}^");
        }
        out
    }
}

/// Parses an index-map kernel (`kernel @name(...) -> (...) { ... }`).
pub fn parse_kernel(text: &str) -> Result<Kernel, ParseError> {
    let mut p = Parser::new(text);
    let k = p.index_kernel()?;
    p.expect_end()?;
    Ok(k)
}

/// Parses a loop kernel (`loops @name(...) -> (...) { ... }`).
pub fn parse_loop_kernel(text: &str) -> Result<LoopKernel, ParseError> {
    let mut p = Parser::new(text);
    let k = p.loop_kernel()?;
    p.expect_end()?;
    Ok(k)
}

/// Parses either level, told apart by the first keyword (`kernel` or `loops`).
pub fn parse_any(text: &str) -> Result<AnyKernel, ParseError> {
    let mut p = Parser::new(text);
    let tok = p.peek()?;
    let k = match &tok.kind {
        Kind::Ident(w) if w == "kernel" => AnyKernel::Index(p.index_kernel()?),
        Kind::Ident(w) if w == "loops" => AnyKernel::Loops(p.loop_kernel()?),
        _ => return Err(unexpected(tok, "`kernel` or `loops`")),
    };
    p.expect_end()?;
    Ok(k)
}

// ---------------------------------------------------------------------------------------------
// Lexer

/// What a token is. Keywords, dims (`d0`) and loop counters (`i0`) are all identifiers; the
/// parser tells them apart by context.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Ident(String),
    /// A non-negative integer literal; a leading `-` is a separate token.
    Int(u64),
    /// A number that is not a plain integer (`1.5`, `1e-7`, `0x7fc00000`): only fill values
    /// have them, and [`Scalar::parse`] reads them in the fill's dtype.
    Number(String),
    /// `@name`.
    Symbol(String),
    /// `%src`, `%dst`.
    Operand(String),
    /// `tensor<...>`, lexed as one token because `4x4xf32` does not split into ordinary tokens.
    Type(TensorType),
    Punct(&'static str),
    Eof,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    line: usize,
    col: usize,
    /// The source text of the token, for error messages.
    text: String,
}

/// Longer token texts are cut in error messages.
const MAX_FOUND_CHARS: usize = 40;

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_FOUND_CHARS {
        text.to_string()
    } else {
        let head: String = text.chars().take(MAX_FOUND_CHARS).collect();
        format!("{head}...")
    }
}

/// An error at a token: `message` should say what was expected.
fn error_at(tok: &Token, message: impl Into<String>) -> ParseError {
    ParseError {
        line: tok.line,
        col: tok.col,
        message: message.into(),
        found: tok.text.clone(),
    }
}

fn describe(tok: &Token) -> String {
    match tok.kind {
        Kind::Eof => "end of input".to_string(),
        _ => format!("`{}`", tok.text),
    }
}

fn unexpected(tok: &Token, expected: &str) -> ParseError {
    error_at(tok, format!("expected {expected}, found {}", describe(tok)))
}

/// Punctuation, longest first so that `->`, `+=` and `<=` win over their prefixes.
const PUNCTS: [&str; 17] = [
    "->", "+=", "<=", "(", ")", "[", "]", "{", "}", "<", ">", ",", ":", "=", "+", "-", "*",
];

struct Lexer<'a> {
    src: &'a str,
    /// Byte offset of the next character.
    pos: usize,
    line: usize,
    col: usize,
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl<'a> Lexer<'a> {
    fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            pos: 0,
            line: 1,
            col: 1,
        }
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek_char(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek_char()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    /// Consumes characters while `f` holds and returns them.
    fn take_while(&mut self, mut f: impl FnMut(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek_char().is_some_and(&mut f) {
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// Skips whitespace and `//` comments.
    fn skip_trivia(&mut self) {
        loop {
            if self.rest().starts_with("//") {
                self.take_while(|c| c != '\n');
            } else if self.peek_char().is_some_and(char::is_whitespace) {
                self.bump();
            } else {
                return;
            }
        }
    }

    /// An error at the current position (for lexical errors inside a token).
    fn error_here(&self, message: impl Into<String>) -> ParseError {
        let found = self
            .rest()
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("");
        ParseError {
            line: self.line,
            col: self.col,
            message: message.into(),
            found: shorten(found),
        }
    }

    fn next_token(&mut self) -> Result<Token, ParseError> {
        self.skip_trivia();
        let (line, col, start) = (self.line, self.col, self.pos);
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                kind: Kind::Eof,
                line,
                col,
                text: "end of input".to_string(),
            });
        };
        let kind = if c.is_ascii_digit() {
            self.number()?
        } else if c.is_ascii_alphabetic() || c == '_' {
            let word = self.take_while(is_ident_char);
            if word == "tensor" {
                Kind::Type(self.tensor_body(line, col)?)
            } else {
                Kind::Ident(word.to_string())
            }
        } else if c == '@' || c == '%' {
            self.bump();
            let name = self.take_while(is_ident_char).to_string();
            if name.is_empty() {
                return Err(self.error_here(format!("expected a name after `{c}`")));
            }
            if c == '@' {
                Kind::Symbol(name)
            } else {
                Kind::Operand(name)
            }
        } else if let Some(p) = PUNCTS.into_iter().find(|p| self.rest().starts_with(p)) {
            for _ in 0..p.len() {
                self.bump();
            }
            Kind::Punct(p)
        } else {
            return Err(ParseError {
                line,
                col,
                message: format!("unexpected character `{c}`"),
                found: c.to_string(),
            });
        };
        Ok(Token {
            kind,
            line,
            col,
            text: shorten(&self.src[start..self.pos]),
        })
    }

    /// An integer, or a [`Kind::Number`] when the digits go on as a decimal fraction, an
    /// exponent or hex digits after `0x`.
    fn number(&mut self) -> Result<Kind, ParseError> {
        let rest = self.rest();
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let after = rest.as_bytes().get(digits).copied();
        let is_number = match after {
            Some(b'.' | b'e' | b'E') => true,
            Some(b'x' | b'X') => digits == 1 && rest.starts_with('0'),
            _ => false,
        };
        if !is_number {
            return Ok(Kind::Int(self.integer()?));
        }
        let mut prev = ' ';
        let text = self.take_while(|c| {
            // A sign only right after an exponent's `e` (`1e-7`), never after hex digits.
            let ok = c.is_ascii_alphanumeric()
                || c == '.'
                || (matches!(c, '+' | '-') && matches!(prev, 'e' | 'E'));
            prev = c;
            ok
        });
        Ok(Kind::Number(text.to_string()))
    }

    /// A run of decimal digits as a `u64`; a literal that does not fit is an error.
    fn integer(&mut self) -> Result<u64, ParseError> {
        let (line, col) = (self.line, self.col);
        let digits = self.take_while(|c| c.is_ascii_digit());
        digits.parse::<u64>().map_err(|_| ParseError {
            line,
            col,
            message: format!(
                "integer literal {} does not fit in 64 bits",
                shorten(digits)
            ),
            found: shorten(digits),
        })
    }

    /// The rest of `tensor<4x4xf32>` after the word `tensor`: dims, each followed by `x`, then
    /// an element type (`f32`, `complex<f32>`, a long name such as `float32`, or `u8`, `u16`,
    /// `u32`, `u64`), then `>`. Whitespace is allowed between the parts. A dynamic dim (`?`)
    /// is an error of its own: a kernel is compiled for one fixed shape.
    fn tensor_body(&mut self, line: usize, col: usize) -> Result<TensorType, ParseError> {
        self.skip_trivia();
        if self.peek_char() != Some('<') {
            return Err(self.error_here("expected `<` after `tensor`"));
        }
        self.bump();
        let mut shape = Vec::new();
        loop {
            self.skip_trivia();
            if self.peek_char() == Some('?') {
                return Err(self.error_here(format!(
                    "dim {} is dynamic (`?`): relayout compiles a kernel for one fixed shape, so \
                     every dim must be a number",
                    shape.len()
                )));
            }
            if !self.peek_char().is_some_and(|c| c.is_ascii_digit()) {
                break;
            }
            shape.push(self.integer()?);
            self.skip_trivia();
            if self.peek_char() != Some('x') {
                return Err(self.error_here("expected `x` after a dimension size"));
            }
            self.bump();
        }
        let (dline, dcol) = (self.line, self.col);
        let mut name = self.take_while(is_ident_char).to_string();
        if name == "complex" {
            // `complex<f32>`: the only element type with punctuation in its name.
            self.skip_trivia();
            if self.peek_char() != Some('<') {
                return Err(self.error_here("expected `<` after `complex`"));
            }
            self.bump();
            self.skip_trivia();
            let part = self.take_while(is_ident_char);
            self.skip_trivia();
            if self.peek_char() != Some('>') {
                return Err(self.error_here("expected `>` to close `complex<`"));
            }
            self.bump();
            name = format!("complex<{part}>");
        }
        let Some(dtype) = element_type(&name) else {
            let message = if name.is_empty() {
                "expected a dimension size or an element type".to_string()
            } else {
                let names: Vec<&str> = DType::ALL.iter().map(|d| d.mlir_name()).collect();
                format!(
                    "unknown element type `{name}`; the element types are {} (or their long \
                     names, or u8, u16, u32, u64)",
                    names.join(", ")
                )
            };
            return Err(ParseError {
                line: dline,
                col: dcol,
                message,
                found: shorten(&name),
            });
        };
        self.skip_trivia();
        if self.peek_char() != Some('>') {
            let at = self.error_here("expected `>` to close `tensor<`");
            return Err(ParseError {
                // Point at the problem, but say which type it belongs to.
                message: format!("{} (the type starting at {line}:{col})", at.message),
                ..at
            });
        }
        self.bump();
        Ok(TensorType::new(dtype, shape))
    }
}

/// An element type by its MLIR name (`f32`, `ui8`), its long name (`float32`, `uint8`), or
/// the short unsigned names `u8`, `u16`, `u32`, `u64` that Rust and many tools use.
fn element_type(name: &str) -> Option<DType> {
    let name = match name {
        "u8" => "ui8",
        "u16" => "ui16",
        "u32" => "ui32",
        "u64" => "ui64",
        other => other,
    };
    DType::from_name(name)
}

/// `tensor<4x4xf32>` alone, as the IR writes a type (the op syntax of the command line and of
/// the bindings reads its type with this too, so that there is one grammar of types).
impl std::str::FromStr for TensorType {
    type Err = ParseError;

    fn from_str(text: &str) -> Result<TensorType, ParseError> {
        let mut lexer = Lexer::new(text);
        lexer.skip_trivia();
        let (line, col) = (lexer.line, lexer.col);
        if lexer.take_while(is_ident_char) != "tensor" {
            return Err(ParseError {
                line,
                col,
                message: "expected a tensor type (`tensor<...>`)".into(),
                found: shorten(text.trim()),
            });
        }
        // The type is the whole text: an unclosed `tensor<` need not say where it started.
        let ty = lexer.tensor_body(line, col).map_err(|e| ParseError {
            message: e
                .message
                .replace(&format!(" (the type starting at {line}:{col})"), ""),
            ..e
        })?;
        lexer.skip_trivia();
        if lexer.peek_char().is_some() {
            return Err(lexer.error_here("unexpected text after the tensor type"));
        }
        Ok(ty)
    }
}

// ---------------------------------------------------------------------------------------------
// Parser

/// An expression with the depth of its tree, so that depth is checked as the tree is built.
struct Node {
    expr: AffineExpr,
    depth: usize,
}

impl Node {
    fn leaf(expr: AffineExpr) -> Node {
        Node { expr, depth: 1 }
    }
}

/// A dim or loop counter used somewhere in a statement, remembered until the `for` clause
/// that must declare it has been read.
struct Use {
    index: usize,
    tok: Token,
}

struct Parser<'a> {
    lex: Lexer<'a>,
    peeked: Option<Token>,
    /// Current nesting of parentheses and unary minus (each is one level of recursion).
    nesting: usize,
    /// Dims used by the statement being parsed.
    uses: Vec<Use>,
    /// The destination's element type, from the kernel header: the type of fill values.
    dtype: DType,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Parser<'a> {
        Parser {
            lex: Lexer::new(text),
            peeked: None,
            nesting: 0,
            uses: Vec::new(),
            dtype: DType::F32,
        }
    }

    fn peek(&mut self) -> Result<&Token, ParseError> {
        let tok = match self.peeked.take() {
            Some(t) => t,
            None => self.lex.next_token()?,
        };
        Ok(self.peeked.insert(tok))
    }

    fn next(&mut self) -> Result<Token, ParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex.next_token(),
        }
    }

    fn peek_is_punct(&mut self, p: &str) -> Result<bool, ParseError> {
        Ok(matches!(self.peek()?.kind, Kind::Punct(q) if q == p))
    }

    fn peek_is_word(&mut self, w: &str) -> Result<bool, ParseError> {
        Ok(matches!(&self.peek()?.kind, Kind::Ident(x) if x == w))
    }

    /// Consumes the punctuation `p` if it comes next.
    fn eat_punct(&mut self, p: &str) -> Result<bool, ParseError> {
        let found = self.peek_is_punct(p)?;
        if found {
            self.next()?;
        }
        Ok(found)
    }

    fn expect_punct(&mut self, p: &str) -> Result<Token, ParseError> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Punct(q) if q == p => Ok(tok),
            _ => Err(unexpected(&tok, &format!("`{p}`"))),
        }
    }

    fn expect_word(&mut self, w: &str) -> Result<Token, ParseError> {
        let tok = self.next()?;
        match &tok.kind {
            Kind::Ident(x) if x == w => Ok(tok),
            _ => Err(unexpected(&tok, &format!("`{w}`"))),
        }
    }

    fn expect_operand(&mut self, name: &str) -> Result<(), ParseError> {
        let tok = self.next()?;
        match &tok.kind {
            Kind::Operand(x) if x == name => Ok(()),
            _ => Err(unexpected(&tok, &format!("`%{name}`"))),
        }
    }

    fn expect_end(&mut self) -> Result<(), ParseError> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Eof => Ok(()),
            _ => Err(unexpected(
                &tok,
                "end of input after the kernel's closing `}`",
            )),
        }
    }

    fn unsigned(&mut self, what: &str) -> Result<u64, ParseError> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Int(v) => Ok(v),
            _ => Err(unexpected(&tok, what)),
        }
    }

    /// An integer literal, possibly negative, that must fit in `i64`.
    fn signed(&mut self, what: &str) -> Result<i64, ParseError> {
        let negative = self.peek_is_punct("-")?;
        let sign = if negative { Some(self.next()?) } else { None };
        let tok = self.next()?;
        let Kind::Int(v) = tok.kind else {
            return Err(unexpected(&tok, what));
        };
        let at = sign.as_ref().unwrap_or(&tok);
        to_i64(v, negative).ok_or_else(|| {
            let minus = if negative { "-" } else { "" };
            error_at(
                at,
                format!("integer {minus}{v} does not fit in a signed 64-bit integer"),
            )
        })
    }

    // --- kernels -------------------------------------------------------------------------

    /// `KEYWORD @name(%src: TYPE) -> (%dst: TYPE) {`
    fn header(&mut self, keyword: &str) -> Result<(String, TensorType, TensorType), ParseError> {
        self.expect_word(keyword)?;
        let tok = self.next()?;
        let Kind::Symbol(name) = tok.kind else {
            return Err(unexpected(&tok, "the kernel name (`@name`)"));
        };
        self.expect_punct("(")?;
        let src = self.operand_type("src")?;
        self.expect_punct(")")?;
        self.expect_punct("->")?;
        self.expect_punct("(")?;
        let dst = self.operand_type("dst")?;
        self.expect_punct(")")?;
        self.expect_punct("{")?;
        self.dtype = dst.dtype;
        Ok((name, src, dst))
    }

    /// `%name: TYPE`
    fn operand_type(&mut self, name: &str) -> Result<TensorType, ParseError> {
        self.expect_operand(name)?;
        self.expect_punct(":")?;
        let tok = self.next()?;
        match tok.kind {
            Kind::Type(t) => Ok(t),
            _ => Err(unexpected(&tok, "a tensor type (`tensor<...>`)")),
        }
    }

    /// Statements up to and including the closing `}`.
    fn body<T>(
        &mut self,
        stmt: impl Fn(&mut Self, Token) -> Result<T, ParseError>,
    ) -> Result<Vec<T>, ParseError> {
        let mut stmts = Vec::new();
        loop {
            let tok = self.next()?;
            match &tok.kind {
                Kind::Punct("}") => return Ok(stmts),
                Kind::Ident(w) if matches!(w.as_str(), "copy" | "fill" | "accumulate") => {
                    stmts.push(stmt(self, tok)?);
                }
                _ => {
                    return Err(unexpected(
                        &tok,
                        "a statement (`copy`, `fill` or `accumulate`) or `}`",
                    ))
                }
            }
        }
    }

    fn index_kernel(&mut self) -> Result<Kernel, ParseError> {
        let (name, src, dst) = self.header("kernel")?;
        let stmts = self.body(Self::index_stmt)?;
        Ok(Kernel {
            name,
            src,
            dst,
            stmts,
        })
    }

    fn loop_kernel(&mut self) -> Result<LoopKernel, ParseError> {
        let (name, src, dst) = self.header("loops")?;
        let mut stmts = Vec::new();
        let mut bands = Vec::new();
        loop {
            let tok = self.next()?;
            match &tok.kind {
                Kind::Punct("}") => break,
                Kind::Ident(w) if w == "fused" => self.band(tok, &[], &mut stmts, &mut bands)?,
                Kind::Ident(w) if matches!(w.as_str(), "copy" | "fill" | "accumulate") => {
                    stmts.push(self.loop_stmt(tok)?);
                }
                _ => {
                    return Err(unexpected(
                        &tok,
                        "a statement (`copy`, `fill` or `accumulate`), `fused` or `}`",
                    ))
                }
            }
        }
        Ok(LoopKernel {
            name,
            src,
            dst,
            stmts,
            bands,
        })
    }

    /// A band after its keyword `fused`: `for i0 in 0 to N, ... { statements and bands }`,
    /// pushed to `bands` before the bands nested in it. Every member must start with the
    /// band's loops (same extents); there must be at least two members. `outer`: the loops of
    /// the band this one is nested in (none at the top), which this one must extend.
    fn band(
        &mut self,
        kw: Token,
        outer: &[u64],
        stmts: &mut Vec<LoopStmt>,
        bands: &mut Vec<Band>,
    ) -> Result<(), ParseError> {
        self.expect_word("for")?;
        let shared = self.loops()?;
        if !(shared.len() > outer.len() && shared.starts_with(outer)) {
            return Err(error_at(
                &kw,
                format!(
                    "a band nested in another must share the other's loops and more \
                     (extents {outer:?} and at least one more); this one shares {shared:?}"
                ),
            ));
        }
        self.expect_punct("{")?;
        let first = stmts.len();
        let at = bands.len();
        bands.push(Band {
            first,
            len: 0,
            depth: shared.len(),
        });
        loop {
            let tok = self.next()?;
            match &tok.kind {
                Kind::Punct("}") => break,
                Kind::Ident(w) if w == "fused" => self.band(tok, &shared, stmts, bands)?,
                Kind::Ident(w) if matches!(w.as_str(), "copy" | "fill" | "accumulate") => {
                    let stmt = self.loop_stmt(tok.clone())?;
                    let own: Vec<u64> = stmt.loops.iter().map(|l| l.extent).collect();
                    if !own.starts_with(&shared) {
                        return Err(error_at(
                            &tok,
                            format!(
                                "a member of a band must start with the band's loops \
                                 (extents {shared:?}); this one has extents {own:?}"
                            ),
                        ));
                    }
                    stmts.push(stmt);
                }
                _ => {
                    return Err(unexpected(
                        &tok,
                        "a statement (`copy`, `fill` or `accumulate`), `fused` or `}`",
                    ))
                }
            }
        }
        let len = stmts.len() - first;
        if len < 2 {
            return Err(error_at(
                &kw,
                format!("a band fuses at least two statements; this one has {len}"),
            ));
        }
        if bands[at + 1..]
            .iter()
            .any(|b| b.first == first && b.len == len)
        {
            return Err(error_at(
                &kw,
                "a band must have more members than a band nested in it; the band nested here \
                 has all of them",
            ));
        }
        bands[at].len = len;
        Ok(())
    }

    // --- index-map statements --------------------------------------------------------------

    /// One statement after its keyword `kw`:
    /// `%dst[map] (= %src[map] | = 0 | += %src[map]) [for d0 in A to B, ...] [where ...]`.
    fn index_stmt(&mut self, kw: Token) -> Result<Stmt, ParseError> {
        self.uses.clear();
        let dst = self.map("dst")?;
        let action = match &kw.kind {
            Kind::Ident(w) if w == "copy" => {
                self.expect_punct("=")?;
                Action::Copy {
                    src: self.map("src")?,
                }
            }
            Kind::Ident(w) if w == "accumulate" => {
                self.expect_punct("+=")?;
                Action::Accumulate {
                    src: self.map("src")?,
                }
            }
            _ => {
                self.expect_punct("=")?;
                Action::Fill {
                    value: self.fill_value()?,
                }
            }
        };
        let domain = if self.peek_is_word("for")? {
            self.next()?;
            self.domain()?
        } else {
            Vec::new()
        };
        let guard = if self.peek_is_word("where")? {
            self.next()?;
            self.guard()?
        } else {
            Vec::new()
        };
        // The `where` clause comes after `for`, so its dims are in `uses` too.
        self.check_declared(domain.len(), 'd')?;
        Ok(Stmt {
            domain,
            guard,
            dst,
            action,
        })
    }

    /// The value of `fill ... = VALUE`, in the kernel's destination dtype: `0`, `-46`,
    /// `-0.125`, `inf`, `nan`, `true`, `0x7fc00001`, or `(re, im)` for complex.
    fn fill_value(&mut self) -> Result<Scalar, ParseError> {
        let first = self.peek()?.clone();
        let mut text = String::new();
        let complex = matches!(first.kind, Kind::Punct("("));
        if complex {
            self.next()?;
            text.push('(');
            self.fill_part(&mut text)?;
            self.expect_punct(",")?;
            text.push(',');
            self.fill_part(&mut text)?;
            self.expect_punct(")")?;
            text.push(')');
        } else {
            self.fill_part(&mut text)?;
        }
        let dtype = self.dtype;
        Scalar::parse(dtype, &text).ok_or_else(|| ParseError {
            line: first.line,
            col: first.col,
            message: format!(
                "`{text}` is not a value of {} (a fill writes one element of the destination's \
                 dtype, exactly)",
                dtype.mlir_name()
            ),
            found: shorten(&text),
        })
    }

    /// One real number of a fill value: an optional `-`, then digits, a number, or a word
    /// (`true`, `inf`, `nan`).
    fn fill_part(&mut self, text: &mut String) -> Result<(), ParseError> {
        let mut tok = self.next()?;
        if matches!(tok.kind, Kind::Punct("-")) {
            text.push('-');
            tok = self.next()?;
        }
        match tok.kind {
            Kind::Int(v) => text.push_str(&v.to_string()),
            Kind::Number(n) => text.push_str(&n),
            Kind::Ident(w) => text.push_str(&w),
            _ => return Err(unexpected(&tok, "a fill value (`0`, `-1.5`, `true`, ...)")),
        }
        Ok(())
    }

    /// `%name[e, e, ...]`, possibly empty.
    fn map(&mut self, name: &str) -> Result<Vec<AffineExpr>, ParseError> {
        self.expect_operand(name)?;
        self.expect_punct("[")?;
        let mut map = Vec::new();
        if self.eat_punct("]")? {
            return Ok(map);
        }
        loop {
            map.push(self.expr()?.expr);
            let tok = self.next()?;
            match tok.kind {
                Kind::Punct(",") => {}
                Kind::Punct("]") => return Ok(map),
                _ => return Err(unexpected(&tok, "`,` or `]` after an index")),
            }
        }
    }

    /// `d0 in A to B, d1 in A to B, ...`: dims in order, from `d0`.
    fn domain(&mut self) -> Result<Vec<DimRange>, ParseError> {
        let mut domain = Vec::new();
        loop {
            self.counter_decl('d', domain.len())?;
            let lo = self.signed("the range's lower bound")?;
            self.expect_word("to")?;
            let hi = self.signed("the range's upper bound")?;
            domain.push(DimRange { lo, hi });
            if !self.eat_punct(",")? {
                return Ok(domain);
            }
        }
    }

    /// `NAME in`, where NAME must be the counter `{prefix}{expected}`.
    fn counter_decl(&mut self, prefix: char, expected: usize) -> Result<(), ParseError> {
        let tok = self.next()?;
        let want = format!("`{prefix}{expected}`");
        match counter_index(&tok, prefix) {
            Some(i) if i == expected => {}
            // Dims are declared in order, because a dim's name is its position.
            _ => return Err(unexpected(&tok, &want)),
        }
        self.expect_word("in")?;
        Ok(())
    }

    /// `A <= e < B, ...`
    fn guard(&mut self) -> Result<Vec<Constraint>, ParseError> {
        let mut guard = Vec::new();
        loop {
            let lo = self.signed("a guard's lower bound (`lo <= expr < hi`)")?;
            self.expect_punct("<=")?;
            let expr = self.expr()?.expr;
            self.expect_punct("<")?;
            let hi = self.signed("a guard's upper bound (`lo <= expr < hi`)")?;
            guard.push(Constraint { expr, lo, hi });
            if !self.eat_punct(",")? {
                return Ok(guard);
            }
        }
    }

    /// Every counter used in the statement must be one of the `declared` ones.
    fn check_declared(&self, declared: usize, prefix: char) -> Result<(), ParseError> {
        let Some(u) = self.uses.iter().find(|u| u.index >= declared) else {
            return Ok(());
        };
        let declared = match declared {
            0 => "the statement has no `for` clause".to_string(),
            1 => format!("the `for` clause declares only {prefix}0"),
            n => format!("the `for` clause declares {prefix}0 to {prefix}{}", n - 1),
        };
        Err(error_at(
            &u.tok,
            format!("{prefix}{} is not declared: {declared}", u.index),
        ))
    }

    // --- expressions -----------------------------------------------------------------------

    /// A node built from children: fails when the tree gets deeper than [`MAX_EXPR_DEPTH`].
    fn node(&self, expr: AffineExpr, children: &[usize], at: &Token) -> Result<Node, ParseError> {
        let depth = 1 + children.iter().copied().max().unwrap_or(0);
        if depth > MAX_EXPR_DEPTH {
            return Err(error_at(
                at,
                format!("expression is nested deeper than {MAX_EXPR_DEPTH} levels"),
            ));
        }
        Ok(Node { expr, depth })
    }

    /// `term (('+' | '-') term)*`
    fn expr(&mut self) -> Result<Node, ParseError> {
        let mut lhs = self.term()?;
        loop {
            let minus = if self.peek_is_punct("+")? {
                false
            } else if self.peek_is_punct("-")? {
                true
            } else {
                return Ok(lhs);
            };
            let op = self.next()?;
            let rhs = self.term()?;
            let rhs = if minus { self.negate(rhs, &op)? } else { rhs };
            let expr = AffineExpr::Add(Box::new(lhs.expr), Box::new(rhs.expr));
            lhs = self.node(expr, &[lhs.depth, rhs.depth], &op)?;
        }
    }

    /// `-e`: a constant is negated (`a - 3` is `a + -3`), anything else multiplied by -1.
    fn negate(&self, e: Node, op: &Token) -> Result<Node, ParseError> {
        match e.expr {
            AffineExpr::Const(c) => c
                .checked_neg()
                .map(|n| Node::leaf(AffineExpr::Const(n)))
                .ok_or_else(|| {
                    error_at(
                        op,
                        format!("negating {c} overflows a signed 64-bit integer"),
                    )
                }),
            expr => self.node(AffineExpr::Mul(Box::new(expr), -1), &[e.depth], op),
        }
    }

    /// `unary (('*' | 'floordiv' | 'mod') unary)*`
    fn term(&mut self) -> Result<Node, ParseError> {
        let mut lhs = self.unary()?;
        loop {
            let op = match &self.peek()?.kind {
                Kind::Punct("*") => "*",
                Kind::Ident(w) if w == "floordiv" => "floordiv",
                Kind::Ident(w) if w == "mod" => "mod",
                _ => return Ok(lhs),
            };
            let op_tok = self.next()?;
            let rhs = self.unary()?;
            lhs = match (op, lhs.expr, rhs.expr) {
                // The printed form `e * k` wins over `k * e`, so that `2 * 3` stays `Mul(2, 3)`.
                ("*", l, AffineExpr::Const(k)) => {
                    self.node(AffineExpr::Mul(Box::new(l), k), &[lhs.depth], &op_tok)?
                }
                ("*", AffineExpr::Const(k), r) => {
                    self.node(AffineExpr::Mul(Box::new(r), k), &[rhs.depth], &op_tok)?
                }
                ("*", l, r) => {
                    return Err(error_at(
                        &op_tok,
                        format!(
                            "`{} * {}` is not affine: one side of `*` must be an integer constant",
                            operand(&l),
                            operand(&r)
                        ),
                    ))
                }
                (_, l, AffineExpr::Const(k)) => {
                    let e = if op == "mod" {
                        AffineExpr::Mod(Box::new(l), k)
                    } else {
                        AffineExpr::FloorDiv(Box::new(l), k)
                    };
                    self.node(e, &[lhs.depth], &op_tok)?
                }
                (_, _, r) => {
                    return Err(error_at(
                        &op_tok,
                        format!("`{op} {r}` is not affine: the divisor of `{op}` must be an integer constant"),
                    ))
                }
            };
        }
    }

    /// Runs `f` one level deeper, failing beyond [`MAX_EXPR_DEPTH`] levels so that deeply
    /// nested text cannot overflow the stack.
    fn nested(
        &mut self,
        at: &Token,
        f: impl FnOnce(&mut Self) -> Result<Node, ParseError>,
    ) -> Result<Node, ParseError> {
        if self.nesting >= MAX_EXPR_DEPTH {
            return Err(error_at(
                at,
                format!("expression is nested deeper than {MAX_EXPR_DEPTH} levels"),
            ));
        }
        self.nesting += 1;
        let r = f(self);
        self.nesting -= 1;
        r
    }

    /// `'-' INT | '-' unary | primary`
    fn unary(&mut self) -> Result<Node, ParseError> {
        if !self.peek_is_punct("-")? {
            return self.primary();
        }
        let minus = self.next()?;
        if let Kind::Int(v) = self.peek()?.kind {
            let tok = self.next()?;
            return to_i64(v, true)
                .map(|c| Node::leaf(AffineExpr::Const(c)))
                .ok_or_else(|| {
                    error_at(
                        &tok,
                        format!("integer -{v} does not fit in a signed 64-bit integer"),
                    )
                });
        }
        let e = self.nested(&minus, Self::unary)?;
        self.node(AffineExpr::Mul(Box::new(e.expr), -1), &[e.depth], &minus)
    }

    /// `INT | dN | '(' expr ')'`
    fn primary(&mut self) -> Result<Node, ParseError> {
        let tok = self.next()?;
        match &tok.kind {
            Kind::Int(v) => i64::try_from(*v)
                .map(|c| Node::leaf(AffineExpr::Const(c)))
                .map_err(|_| {
                    error_at(
                        &tok,
                        format!("integer {v} does not fit in a signed 64-bit integer"),
                    )
                }),
            Kind::Punct("(") => {
                let e = self.nested(&tok, Self::expr)?;
                self.expect_punct(")")?;
                Ok(e)
            }
            Kind::Ident(_) => match counter_index(&tok, 'd') {
                Some(index) => {
                    self.uses.push(Use {
                        index,
                        tok: tok.clone(),
                    });
                    Ok(Node::leaf(AffineExpr::Dim(index)))
                }
                None => Err(unexpected(
                    &tok,
                    "an expression (a dim `dN`, an integer or `(`)",
                )),
            },
            _ => Err(unexpected(
                &tok,
                "an expression (a dim `dN`, an integer or `(`)",
            )),
        }
    }

    // --- loop statements -------------------------------------------------------------------

    /// One loop statement after its keyword `kw`:
    /// `N bytes %dst[OFF + S * i0 ...] (= %src[...] | = 0 | += %src[...] | = 0 + %src[...])
    /// [for i0 in 0 to N, ...]`.
    fn loop_stmt(&mut self, kw: Token) -> Result<LoopStmt, ParseError> {
        self.uses.clear();
        let bytes = self.unsigned("the run length in bytes")?;
        self.expect_word("bytes")?;
        let (dst_offset, dst_terms) = self.offset("dst")?;
        let (action, src_offset, src_terms) = match &kw.kind {
            Kind::Ident(w) if w == "copy" || w == "accumulate" => {
                let action = if w == "copy" {
                    self.expect_punct("=")?;
                    LoopAction::Copy
                } else if self.peek_is_punct("=")? {
                    // `= 0 + %src[...]`: the sums start from +0.0.
                    self.next()?;
                    let zero = self.next()?;
                    if zero.kind != Kind::Int(0) {
                        return Err(unexpected(
                            &zero,
                            "`0` (a sum from +0.0: `= 0 + %src[...]`)",
                        ));
                    }
                    self.expect_punct("+")?;
                    LoopAction::Sum
                } else {
                    self.expect_punct("+=")?;
                    LoopAction::Accumulate
                };
                let (off, terms) = self.offset("src")?;
                (action, off, terms)
            }
            _ => {
                self.expect_punct("=")?;
                let value = self.fill_value()?;
                (LoopAction::Fill { value }, 0, Vec::new())
            }
        };
        let window = if action.is_accumulate() && self.peek_is_word("within")? {
            self.next()?;
            self.expect_word("bytes")?;
            let (start, start_term) = self.window_bound()?;
            self.expect_word("to")?;
            let (end, end_term) = self.window_bound()?;
            Some((start, start_term, end, end_term))
        } else {
            None
        };
        let extents = if self.peek_is_word("for")? {
            self.next()?;
            self.loops()?
        } else {
            Vec::new()
        };
        self.check_declared(extents.len(), 'i')?;
        let window = match window {
            None => None,
            Some((start, start_term, end, end_term)) => {
                Some(window_of(extents.len(), start, start_term, end, end_term)?)
            }
        };
        let mut loops: Vec<Loop> = extents
            .into_iter()
            .map(|extent| Loop {
                extent,
                src_stride: 0,
                dst_stride: 0,
            })
            .collect();
        // Every index names a loop (checked just above), so no term is dropped here.
        for (i, s) in dst_terms {
            if let Some(l) = loops.get_mut(i) {
                l.dst_stride = s;
            }
        }
        for (i, s) in src_terms {
            if let Some(l) = loops.get_mut(i) {
                l.src_stride = s;
            }
        }
        Ok(LoopStmt {
            action,
            bytes,
            src_offset,
            dst_offset,
            loops,
            window,
        })
    }

    /// One end of a window, `START [(+ | -) STEP * iN]`: the bytes at iteration 0 and the
    /// step with the counter that carries it (`None` for a step of 0).
    fn window_bound(&mut self) -> Result<(i64, Option<(i64, Token)>), ParseError> {
        let at = self.signed("the window's first byte or end")?;
        let minus = if self.peek_is_punct("+")? {
            false
        } else if self.peek_is_punct("-")? {
            true
        } else {
            return Ok((at, None));
        };
        let sign = self.next()?;
        let step = self.stride(minus, &sign)?;
        self.expect_punct("*")?;
        let var = self.next()?;
        Ok((at, Some((step, var))))
    }

    /// `%name[OFF (('+' | '-') S '*' iN)*]`: the offset and the (loop, stride) terms. A loop
    /// without a term has stride 0.
    fn offset(&mut self, name: &str) -> Result<(i64, Terms), ParseError> {
        self.expect_operand(name)?;
        self.expect_punct("[")?;
        let offset = self.signed("the byte offset")?;
        let mut terms = Terms::new();
        loop {
            let tok = self.next()?;
            let minus = match tok.kind {
                Kind::Punct("]") => return Ok((offset, terms)),
                Kind::Punct("+") => false,
                Kind::Punct("-") => true,
                _ => return Err(unexpected(&tok, "`+`, `-` or `]`")),
            };
            let stride = self.stride(minus, &tok)?;
            self.expect_punct("*")?;
            let var = self.next()?;
            let Some(index) = counter_index(&var, 'i') else {
                return Err(unexpected(&var, "a loop counter `iN`"));
            };
            if terms.iter().any(|&(i, _)| i == index) {
                return Err(error_at(
                    &var,
                    format!("i{index} appears twice in the offset of %{name}"),
                ));
            }
            self.uses.push(Use { index, tok: var });
            terms.push((index, stride));
        }
    }

    /// The stride after a `+` or `-` sign token: an integer literal, itself possibly negative
    /// (the printer writes `+ -9223372036854775808 * i0` because that stride has no positive
    /// twin).
    fn stride(&mut self, minus: bool, sign: &Token) -> Result<i64, ParseError> {
        let s = self.signed("a stride")?;
        if !minus {
            return Ok(s);
        }
        s.checked_neg().ok_or_else(|| {
            error_at(
                sign,
                format!("stride -({s}) does not fit in a signed 64-bit integer"),
            )
        })
    }

    /// `i0 in 0 to N, i1 in 0 to N, ...`: the extents.
    fn loops(&mut self) -> Result<Vec<u64>, ParseError> {
        let mut extents = Vec::new();
        loop {
            self.counter_decl('i', extents.len())?;
            let tok = self.next()?;
            if tok.kind != Kind::Int(0) {
                return Err(unexpected(&tok, "`0` (loops start at 0)"));
            }
            self.expect_word("to")?;
            extents.push(self.unsigned("the loop's extent")?);
            if !self.eat_punct(",")? {
                return Ok(extents);
            }
        }
    }
}

/// The window `within bytes START [+ STEP * iN] to END [+ STEP * iN]` of a statement of `loops`
/// loops: both ends step by the same bytes, with the innermost loop's counter.
fn window_of(
    loops: usize,
    start: i64,
    start_term: Option<(i64, Token)>,
    end: i64,
    end_term: Option<(i64, Token)>,
) -> Result<Window, ParseError> {
    let step = |term: &Option<(i64, Token)>| -> Result<i64, ParseError> {
        let Some((step, var)) = term else {
            return Ok(0);
        };
        match counter_index(var, 'i') {
            Some(i) if i + 1 == loops => Ok(*step),
            _ if loops == 0 => Err(error_at(
                var,
                "a window steps with the innermost loop, and this statement has no loop",
            )),
            _ => Err(unexpected(
                var,
                &format!("i{} (a window steps with the innermost loop)", loops - 1),
            )),
        }
    };
    let (a, b) = (step(&start_term)?, step(&end_term)?);
    if let (true, Some((_, tok))) = (a != b, end_term.as_ref().or(start_term.as_ref())) {
        return Err(error_at(
            tok,
            format!(
                "the two ends of a window step by the same bytes per iteration, not {a} and {b}"
            ),
        ));
    }
    Ok(Window {
        start,
        end,
        step: a,
    })
}

/// `e` as an operand of `*` in a message: parenthesised unless it is a dim or a constant.
fn operand(e: &AffineExpr) -> String {
    match e {
        AffineExpr::Dim(_) | AffineExpr::Const(_) => e.to_string(),
        _ => format!("({e})"),
    }
}

/// The `(loop, stride)` terms of a byte offset, in the order written.
type Terms = Vec<(usize, i64)>;

/// `N` when the token is the identifier `{prefix}N` (`d3`, `i0`).
fn counter_index(tok: &Token, prefix: char) -> Option<usize> {
    let Kind::Ident(w) = &tok.kind else {
        return None;
    };
    let digits = w.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The literal `v`, negated when `negative`, if it fits in `i64` (`-9223372036854775808` does).
fn to_i64(v: u64, negative: bool) -> Option<i64> {
    if negative {
        0i64.checked_sub_unsigned(v)
    } else {
        i64::try_from(v).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(text: &str) -> Result<AffineExpr, ParseError> {
        let k = parse_kernel(&format!(
            "kernel @k(%src: tensor<f32>) -> (%dst: tensor<1xf32>) {{ fill %dst[{text}] = 0 for d0 in 0 to 1, d1 in 0 to 1 }}"
        ))?;
        Ok(k.stmts[0].dst[0].clone())
    }

    fn d(i: usize) -> AffineExpr {
        AffineExpr::dim(i)
    }

    #[test]
    fn expressions_follow_mlir_precedence() {
        assert_eq!(expr("d0 * 2 + d1"), Ok(d(0) * 2 + d(1)));
        assert_eq!(expr("d0 - 3"), Ok(d(0) - 3));
        assert_eq!(expr("d0 - d1"), Ok(d(0) + d(1) * -1));
        assert_eq!(expr("3 * d0"), Ok(d(0) * 3));
        assert_eq!(expr("2 * 3"), Ok(AffineExpr::constant(2) * 3));
        assert_eq!(expr("-d0"), Ok(d(0) * -1));
        assert_eq!(
            expr("(d0 * 4 + d1) floordiv 4 mod 2"),
            Ok((d(0) * 4 + d(1)).floor_div(4).modulo(2))
        );
        assert_eq!(
            expr("-9223372036854775808"),
            Ok(AffineExpr::constant(i64::MIN))
        );
    }

    #[test]
    fn non_affine_products_are_rejected() {
        let e = expr("d0 * d1").unwrap_err();
        assert!(e.message.contains("not affine"), "{e}");
        assert_eq!((e.line, e.col, e.found.as_str()), (1, 70, "*"));
        assert!(expr("d0 floordiv d1").is_err());
        assert!(expr("9223372036854775808").is_err());
        assert!(expr("d0 - -9223372036854775808").is_err());
    }
}
