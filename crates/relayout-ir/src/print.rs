//! The one printer of both IRs. `Display` and `Debug` of every IR type go through here, so a
//! failing `assert_eq!` shows the text IR, and `parse::parse_any(print(k)) == k`.
//!
//! Index-map IR:
//!
//! ```text
//! kernel @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {
//!   copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 2, d2 * 2 + d3 mod 2, 0]
//!       for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 2, d3 in 0 to 4
//! }
//! ```
//!
//! Ranges are half-open (`0 to 4` is 0, 1, 2, 3), as in MLIR's `affine.for`. A guard follows on
//! a `where` line as comma-separated `lo <= expr < hi`.
//!
//! Loop IR (byte offsets, loops outermost first):
//!
//! ```text
//! loops @space_to_depth(%src: tensor<1x4x4x1xf32>) -> (%dst: tensor<1x2x2x4xf32>) {
//!   copy 4 bytes %dst[0 + 32 * i0 + 16 * i1] = %src[0 + 16 * i0 + 4 * i1]
//!       for i0 in 0 to 2, i1 in 0 to 2
//! }
//! ```
//!
//! An accumulation may add each term over a window of its run only (`Window`), written after
//! the source: `accumulate 32 bytes %dst[0] = 0 + %src[4 + 28 * i0] within bytes -4 + 4 * i0
//! to 28 + 4 * i0`.

use crate::{
    Action, AffineExpr, Constraint, DType, Kernel, LoopAction, LoopKernel, LoopStmt, Scalar, Stmt,
    Unit,
};
use std::fmt::{self, Display, Formatter, Write};

/// Binding strength, as in MLIR: `+` binds loosest; `*`, `floordiv` and `mod` bind equally
/// tighter and associate to the left.
fn precedence(e: &AffineExpr) -> u8 {
    match e {
        AffineExpr::Add(..) => 1,
        AffineExpr::Mul(..) | AffineExpr::FloorDiv(..) | AffineExpr::Mod(..) => 2,
        AffineExpr::Dim(_) => 3,
        // A negative constant on the left of `*` still reads correctly (`-2 * d0`).
        AffineExpr::Const(_) => 3,
    }
}

fn write_operand(f: &mut Formatter<'_>, e: &AffineExpr, min_prec: u8) -> fmt::Result {
    if precedence(e) < min_prec {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

impl Display for AffineExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            AffineExpr::Dim(i) => write!(f, "d{i}"),
            AffineExpr::Const(c) => write!(f, "{c}"),
            AffineExpr::Add(a, b) => {
                write_operand(f, a, 1)?;
                match **b {
                    // `a - 3` reads better than `a + -3`; i64::MIN has no positive twin.
                    AffineExpr::Const(c) if c < 0 && c != i64::MIN => write!(f, " - {}", -c),
                    _ => {
                        f.write_str(" + ")?;
                        // The right operand of `+` needs parentheses when it is itself a sum,
                        // so that the tree (not just the value) round-trips.
                        write_operand(f, b, 2)
                    }
                }
            }
            AffineExpr::Mul(a, k) => {
                write_operand(f, a, 2)?;
                write!(f, " * {k}")
            }
            AffineExpr::FloorDiv(a, k) => {
                write_operand(f, a, 2)?;
                write!(f, " floordiv {k}")
            }
            AffineExpr::Mod(a, k) => {
                write_operand(f, a, 2)?;
                write!(f, " mod {k}")
            }
        }
    }
}

impl fmt::Debug for AffineExpr {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

fn write_map(f: &mut impl Write, operand: &str, map: &[AffineExpr]) -> fmt::Result {
    write!(f, "%{operand}[")?;
    for (i, e) in map.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{e}")?;
    }
    f.write_str("]")
}

impl Display for Constraint {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "{} <= {} < {}", self.lo, self.expr, self.hi)
    }
}

impl fmt::Debug for Constraint {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

/// Continuation lines of a statement are indented by this much more than its first line.
const CONTINUATION: &str = "    ";

/// A fill's value: typed when the statement is printed in its kernel (`-0.5`, `true`), as hex
/// bits when printed alone (a statement does not know its dtype), `0` for zero either way.
fn fill_text(value: Scalar, dtype: Option<DType>) -> String {
    match dtype {
        Some(dtype) => value.display(dtype),
        None if value.is_zero() => "0".to_string(),
        None => format!("0x{:x}", value.0),
    }
}

/// A statement printed inside its kernel, which gives the dtype of its fill value.
struct InKernel<'a, T>(&'a T, DType);

impl Display for InKernel<'_, Stmt> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.0.write(f, Some(self.1))
    }
}

impl Display for InKernel<'_, LoopStmt> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.0.write(f, Some(self.1))
    }
}

impl Display for Stmt {
    /// One statement, without leading indentation; continuation lines are indented by four
    /// spaces relative to the first (the kernel printer adds its own indentation to each line).
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl Stmt {
    fn write(&self, f: &mut Formatter<'_>, dtype: Option<DType>) -> fmt::Result {
        write!(f, "{} ", self.action.keyword())?;
        write_map(f, "dst", &self.dst)?;
        match &self.action {
            Action::Copy { src } => {
                f.write_str(" = ")?;
                write_map(f, "src", src)?;
            }
            Action::Fill { value } => write!(f, " = {}", fill_text(*value, dtype))?,
            Action::Accumulate { src } => {
                f.write_str(" += ")?;
                write_map(f, "src", src)?;
            }
        }
        if !self.domain.is_empty() {
            write!(f, "\n{CONTINUATION}for ")?;
            for (i, r) in self.domain.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "d{i} in {} to {}", r.lo, r.hi)?;
            }
        }
        if !self.guard.is_empty() {
            write!(f, "\n{CONTINUATION}where ")?;
            for (i, c) in self.guard.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for Stmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

fn write_indented(f: &mut Formatter<'_>, body: &str) -> fmt::Result {
    for line in body.lines() {
        writeln!(f, "  {line}")?;
    }
    Ok(())
}

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "kernel @{}(%src: {}) -> (%dst: {}) {{",
            self.name, self.src, self.dst
        )?;
        for s in &self.stmts {
            write_indented(f, &InKernel(s, self.dst.dtype).to_string())?;
        }
        f.write_str("}\n")
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

fn write_offset(
    f: &mut impl Write,
    operand: &str,
    offset: i64,
    strides: impl Iterator<Item = i64>,
) -> fmt::Result {
    write!(f, "%{operand}[{offset}")?;
    for (i, s) in strides.enumerate() {
        write_term(f, s, i)?;
    }
    f.write_str("]")
}

/// ` + S * iN` (` - S * iN` for a negative stride, nothing for 0), as offsets and windows
/// write a loop's term.
fn write_term(f: &mut impl Write, stride: i64, i: usize) -> fmt::Result {
    match stride {
        0 => Ok(()),
        s if s < 0 && s != i64::MIN => write!(f, " - {} * i{i}", -s),
        s => write!(f, " + {s} * i{i}"),
    }
}

impl Display for LoopStmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        self.write(f, None)
    }
}

impl LoopStmt {
    fn write(&self, f: &mut Formatter<'_>, dtype: Option<DType>) -> fmt::Result {
        write!(f, "{} {} bytes ", self.action.keyword(), self.bytes)?;
        write_offset(
            f,
            "dst",
            self.dst_offset,
            self.loops.iter().map(|l| l.dst_stride),
        )?;
        let src = |f: &mut Formatter<'_>| {
            write_offset(
                f,
                "src",
                self.src_offset,
                self.loops.iter().map(|l| l.src_stride),
            )
        };
        match self.action {
            LoopAction::Copy => {
                f.write_str(" = ")?;
                src(f)?;
            }
            LoopAction::Fill { value } => write!(f, " = {}", fill_text(value, dtype))?,
            LoopAction::Accumulate => {
                f.write_str(" += ")?;
                src(f)?;
            }
            LoopAction::Sum => {
                f.write_str(" = 0 + ")?;
                src(f)?;
            }
        }
        if let Some(w) = self.window {
            let innermost = self.loops.len().saturating_sub(1);
            let bound = |f: &mut Formatter<'_>, at: i64| {
                write!(f, "{at}")?;
                write_term(f, w.step, innermost)
            };
            f.write_str(" within bytes ")?;
            bound(f, w.start)?;
            f.write_str(" to ")?;
            bound(f, w.end)?;
        }
        if !self.loops.is_empty() {
            write!(f, "\n{CONTINUATION}for ")?;
            for (i, l) in self.loops.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "i{i} in 0 to {}", l.extent)?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for LoopStmt {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

impl Display for LoopKernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "loops @{}(%src: {}) -> (%dst: {}) {{",
            self.name, self.src, self.dst
        )?;
        for unit in self.units() {
            write_indented(f, &self.unit_text(unit))?;
        }
        f.write_str("}\n")
    }
}

impl LoopKernel {
    /// One unit of the schedule as the kernel prints it, without the kernel's indentation: a
    /// statement (its `for` line below it), or a band as `fused for i0 in 0 to 256 {`, its
    /// members and nested bands indented by two spaces, and `}`.
    pub fn unit_text(&self, unit: Unit) -> String {
        self.unit_text_with(unit, |_| None)
    }

    /// [`LoopKernel::unit_text`] with `note(i)`, when it is some, as a line under statement
    /// `i`, indented like the statement (what a listing says about each statement).
    pub fn unit_text_with(&self, unit: Unit, note: impl Fn(usize) -> Option<String>) -> String {
        let mut body = String::new();
        self.write_unit(&mut body, unit, "", &note);
        // A statement's text ends with its last line, as `Display` prints it.
        if body.ends_with('\n') {
            body.pop();
        }
        body
    }

    /// Writes `unit` to `body`, each line after `indent`: a statement and its note, or a band
    /// and, indented by two more spaces, the units inside it (statements and nested bands).
    fn write_unit(
        &self,
        body: &mut String,
        unit: Unit,
        indent: &str,
        note: &dyn Fn(usize) -> Option<String>,
    ) {
        // Writing to a String cannot fail.
        match unit {
            Unit::Stmt(i) => {
                for line in InKernel(&self.stmts[i], self.dst.dtype).to_string().lines() {
                    let _ = writeln!(body, "{indent}{line}");
                }
                if let Some(note) = note(i) {
                    let _ = writeln!(body, "{indent}{note}");
                }
            }
            Unit::Band(band) => {
                // The shared loops, as the members' own loop lists spell them (the parser
                // checks that they agree).
                let _ = write!(body, "{indent}fused for ");
                for (i, l) in self.stmts[band.first].loops[..band.depth]
                    .iter()
                    .enumerate()
                {
                    if i > 0 {
                        body.push_str(", ");
                    }
                    let _ = write!(body, "i{i} in 0 to {}", l.extent);
                }
                body.push_str(" {\n");
                let inner = format!("{indent}  ");
                for unit in self.units_in(band) {
                    self.write_unit(body, unit, &inner, note);
                }
                let _ = writeln!(body, "{indent}}}");
            }
        }
    }
}

impl fmt::Debug for LoopKernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, DimRange, Loop, TensorType};

    fn d(i: usize) -> AffineExpr {
        AffineExpr::dim(i)
    }

    #[test]
    fn expressions_print_like_mlir() {
        assert_eq!(
            (d(0) * 4 + d(1)).floor_div(4).to_string(),
            "(d0 * 4 + d1) floordiv 4"
        );
        assert_eq!(
            (d(0) * 2 + d(3).floor_div(2)).to_string(),
            "d0 * 2 + d3 floordiv 2"
        );
        assert_eq!((d(1) - 1).to_string(), "d1 - 1");
        assert_eq!((d(0) + (d(1) + d(2))).to_string(), "d0 + (d1 + d2)");
        assert_eq!(
            d(0).modulo(2).floor_div(3).to_string(),
            "d0 mod 2 floordiv 3"
        );
    }

    #[test]
    fn kernels_print() {
        let k = Kernel {
            name: "pad".into(),
            src: TensorType::new(DType::F32, [2]),
            dst: TensorType::new(DType::F32, [4]),
            stmts: vec![
                Stmt {
                    domain: vec![DimRange::new(0, 4)],
                    guard: vec![Constraint {
                        expr: d(0) - 1,
                        lo: 0,
                        hi: 2,
                    }],
                    dst: vec![d(0)],
                    action: Action::Copy {
                        src: vec![d(0) - 1],
                    },
                },
                Stmt {
                    domain: vec![DimRange::new(3, 4)],
                    guard: vec![],
                    dst: vec![d(0)],
                    action: Action::ZERO_FILL,
                },
            ],
        };
        assert_eq!(
            k.to_string(),
            "kernel @pad(%src: tensor<2xf32>) -> (%dst: tensor<4xf32>) {\n  copy %dst[d0] = %src[d0 - 1]\n      for d0 in 0 to 4\n      where 0 <= d0 - 1 < 2\n  fill %dst[d0] = 0\n      for d0 in 3 to 4\n}\n"
        );
        let l = LoopKernel {
            bands: Vec::new(),
            name: "t".into(),
            src: TensorType::new(DType::F32, [2, 2]),
            dst: TensorType::new(DType::F32, [2, 2]),
            stmts: vec![LoopStmt {
                action: LoopAction::Copy,
                bytes: 4,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![
                    Loop {
                        extent: 2,
                        src_stride: 4,
                        dst_stride: 8,
                    },
                    Loop {
                        extent: 2,
                        src_stride: 8,
                        dst_stride: 4,
                    },
                ],
                window: None,
            }],
        };
        assert_eq!(
            l.to_string(),
            "loops @t(%src: tensor<2x2xf32>) -> (%dst: tensor<2x2xf32>) {\n  copy 4 bytes %dst[0 + 8 * i0 + 4 * i1] = %src[0 + 4 * i0 + 8 * i1]\n      for i0 in 0 to 2, i1 in 0 to 2\n}\n"
        );
    }
}
