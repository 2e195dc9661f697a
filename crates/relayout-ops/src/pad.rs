//! Pad (ONNX opset 19+, with `pads`, `constant_value` and `axes` as attributes), all four
//! modes. Negative pads crop.
//!
//! Every mode lowers to guard-free statements over boxes of the output, so no mode needs
//! anything special in codegen:
//! - `constant`: the copy of the box the input lands in (`out[i] = x[i - b]`), and fills of
//!   the value over the slabs around it (per axis: the part before and after the box, within
//!   the box on the earlier axes), so that every output element is written once.
//! - `edge`, `reflect`, `wrap`: after the crops, each padded axis has up to three regions,
//!   the padding before, the kept input, and the padding after, and on each region the source
//!   index is affine (edge: a constant; reflect: `c - i`; wrap: `i +- c`). One copy per
//!   combination of regions over the axes.

use crate::lowering::{d, identity};
use crate::validate::{check_tensor, fail, list, normalize_axes};
use crate::{ErrorCategory, OpError};
use relayout_ir::{Action, AffineExpr, DType, DimRange, Kernel, Scalar, Stmt, TensorType};

const OP: &str = "Pad";

/// How Pad fills the new elements.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PadMode {
    /// `constant_value` everywhere outside the input.
    Constant,
    /// Mirror without repeating the edge element.
    Reflect,
    /// Repeat the edge element.
    Edge,
    /// Wrap around (circular padding).
    Wrap,
}

impl PadMode {
    /// The ONNX name (`constant`, `reflect`, `edge`, `wrap`).
    pub fn name(self) -> &'static str {
        match self {
            PadMode::Constant => "constant",
            PadMode::Reflect => "reflect",
            PadMode::Edge => "edge",
            PadMode::Wrap => "wrap",
        }
    }

    /// Parses an ONNX mode name; case-sensitive, as ONNX is.
    pub fn from_name(name: &str) -> Option<PadMode> {
        [
            PadMode::Constant,
            PadMode::Reflect,
            PadMode::Edge,
            PadMode::Wrap,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// Pad's `constant_value` as given, before it meets the input's dtype.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum PadValue {
    /// An integer (any dtype whose values include it exactly).
    Int(i128),
    /// A float, by its `f64` bits so that `-0.0` and NaN payloads are kept.
    Float(u64),
    /// `true` or `false` (bool only).
    Bool(bool),
    /// A complex value `[re, im]`, each part by its `f64` bits.
    Complex(u64, u64),
}

impl PadValue {
    /// The default, zero in every dtype.
    pub const ZERO: PadValue = PadValue::Int(0);

    /// A float value.
    pub fn float(x: f64) -> PadValue {
        PadValue::Float(x.to_bits())
    }

    /// The value's bits in `dtype`, or `None` when `dtype` has no such value: a float is
    /// rounded to the nearest value of a float dtype; an integer must be exact (a float only
    /// when integral), a bool must be 0 or 1.
    pub fn to_scalar(self, dtype: DType) -> Option<Scalar> {
        // A float constant is cast to a float dtype as ONNX casts its constant_value tensor
        // to the data's type: rounded to nearest (FORMAT.md's cases are exact anyway).
        let float = |x: f64, dtype: DType| Scalar::from_f64(dtype, round_to(dtype, x));
        match (self, dtype) {
            (PadValue::Bool(b), DType::Bool) => Some(Scalar(u128::from(b))),
            (PadValue::Int(v @ (0 | 1)), DType::Bool) => Some(Scalar(v as u128)),
            (PadValue::Int(v), DType::F16 | DType::BF16 | DType::F32 | DType::F64) => {
                float(v as f64, dtype)
            }
            (PadValue::Int(v), DType::C64 | DType::C128) => {
                PadValue::Complex((v as f64).to_bits(), 0).to_scalar(dtype)
            }
            (PadValue::Int(v), _) => Scalar::parse(dtype, &v.to_string()),
            (PadValue::Float(bits), DType::F16 | DType::BF16 | DType::F32 | DType::F64) => {
                float(f64::from_bits(bits), dtype)
            }
            (PadValue::Float(bits), DType::C64 | DType::C128) => {
                PadValue::Complex(bits, 0).to_scalar(dtype)
            }
            (PadValue::Float(bits), DType::Bool) => None.filter(|_| bits == 0),
            (PadValue::Float(bits), _) => {
                let x = f64::from_bits(bits);
                // An integral float (`3.0`) is that integer.
                (x.fract() == 0.0 && x.abs() < 1e39)
                    .then(|| PadValue::Int(x as i128).to_scalar(dtype))
                    .flatten()
            }
            (PadValue::Complex(re, im), DType::C64) => {
                let re = float(f64::from_bits(re), DType::F32)?;
                let im = float(f64::from_bits(im), DType::F32)?;
                // (each part rounded to f32 by `float`)
                Some(Scalar(re.0 | (im.0 << 32)))
            }
            (PadValue::Complex(re, im), DType::C128) => {
                Some(Scalar(u128::from(re) | (u128::from(im) << 64)))
            }
            _ => None,
        }
    }
}

/// `x` rounded to the nearest value of the float dtype `dtype` (as f64); other dtypes unchanged.
fn round_to(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F32 | DType::C64 => f64::from(x as f32),
        DType::F16 => half::f16::from_f64(x).to_f64(),
        DType::BF16 => half::bf16::from_f64(x).to_f64(),
        _ => x,
    }
}

impl std::fmt::Display for PadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let float = |bits: u64| {
            let x = f64::from_bits(bits);
            if x.is_nan() {
                "\"nan\"".to_string()
            } else if x.is_infinite() {
                format!("\"{}inf\"", if x < 0.0 { "-" } else { "" })
            } else {
                format!("{x:?}")
            }
        };
        match *self {
            PadValue::Int(v) => write!(f, "{v}"),
            PadValue::Float(bits) => f.write_str(&float(bits)),
            PadValue::Bool(b) => write!(f, "{b}"),
            PadValue::Complex(re, im) => write!(f, "[{}, {}]", float(re), float(im)),
        }
    }
}

/// One axis of a validated Pad: the pads as given and, for the non-constant modes, what the
/// crops leave.
#[derive(Clone, Copy, Debug)]
struct AxisPad {
    dim: u64,
    begin: i64,
    end: i64,
}

/// A validated Pad.
#[derive(Clone, Debug)]
pub(crate) struct PadPlan {
    mode: PadMode,
    value: Scalar,
    axes: Vec<AxisPad>,
    pub output_type: TensorType,
}

/// The attributes as given to the op.
pub(crate) struct PadAttrs<'a> {
    pub pads: &'a [i64],
    pub mode: PadMode,
    pub constant_value: PadValue,
    pub axes: Option<&'a [i64]>,
}

fn bad<T>(message: String) -> Result<T, OpError> {
    fail(ErrorCategory::BadPads, format!("{OP}: {message}"))
}

/// Validates, in order: axes in range and distinct, the length of `pads`, the constant's
/// dtype (constant mode), each axis's output size and the rules of the mode.
pub(crate) fn plan_pad(a: &PadAttrs, ty: &TensorType) -> Result<PadPlan, OpError> {
    check_tensor(OP, "input", ty)?;
    let rank = ty.rank();
    let all: Vec<i64> = (0..rank as i64).collect();
    let axes = a.axes.unwrap_or(&all);
    let mut per_dim: Vec<AxisPad> = ty
        .shape
        .iter()
        .map(|&dim| AxisPad {
            dim,
            begin: 0,
            end: 0,
        })
        .collect();
    let normal = normalize_axes(OP, ErrorCategory::BadPads, axes, ty)?;
    if a.pads.len() != 2 * axes.len() {
        return bad(format!(
            "pads {} must have 2 * {} entries (all begins, then all ends, one pair per axis of {})",
            list(a.pads),
            axes.len(),
            list(axes)
        ));
    }
    let k = axes.len();
    for (i, &ax) in normal.iter().enumerate() {
        per_dim[ax].begin = a.pads[i];
        per_dim[ax].end = a.pads[k + i];
    }
    let value = match a.mode {
        PadMode::Constant => a.constant_value.to_scalar(ty.dtype).ok_or_else(|| {
            OpError::new(
                ErrorCategory::BadAttribute,
                format!(
                    "{OP}: constant_value {} is not a value of {} exactly",
                    a.constant_value,
                    ty.dtype.name()
                ),
            )
        })?,
        _ => Scalar::ZERO,
    };
    if a.mode == PadMode::Wrap {
        if let Some(i) = ty.shape.iter().position(|&n| n == 0) {
            return bad(format!(
                "wrap mode needs a non-empty input, but dim {i} of the input {ty} is 0"
            ));
        }
    }
    let mut shape = Vec::with_capacity(rank);
    for (i, p) in per_dim.iter().enumerate() {
        let (dim, b, e) = (i128::from(p.dim), i128::from(p.begin), i128::from(p.end));
        let out = dim + b + e;
        if out < 0 {
            return bad(format!(
                "output dim {i} = {dim} + {b} + {e} = {out} is negative (pads {})",
                list(a.pads)
            ));
        }
        if a.mode != PadMode::Constant && (b != 0 || e != 0) {
            let kept = dim + b.min(0) + e.min(0);
            if kept < 1 {
                return bad(format!(
                    "{} mode: dim {i} of size {dim} is cropped by {} to {kept} elements, but \
                     a padded or cropped axis must keep at least one",
                    a.mode.name(),
                    -(b.min(0) + e.min(0))
                ));
            }
            let limit = if a.mode == PadMode::Reflect {
                kept - 1
            } else {
                kept
            };
            let (pb, pe) = (b.max(0), e.max(0));
            if a.mode != PadMode::Edge && (pb > limit || pe > limit) {
                return bad(format!(
                    "{} mode: dim {i} pads {b} and {e} exceed {limit}, the most a {} pad \
                     of an axis of {kept} kept elements can take",
                    a.mode.name(),
                    a.mode.name()
                ));
            }
            // The end pad reflects output index `o` to `c - o`, with `c` the crop, twice the
            // last kept index and the begin pad (see `regions`): `c` must be an i64, which
            // only an axis of more than 2^62 elements can break (the sums here are i128).
            let crop = (-b).max(0);
            let reflected = 2 * (kept - 1) + crop + pb;
            if a.mode == PadMode::Reflect && pe > 0 && reflected > i128::from(i64::MAX) {
                return fail(
                    ErrorCategory::SizeOverflow,
                    format!(
                        "{OP}: reflect mode: dim {i} keeps {kept} elements, too many for the \
                         reflected index of its end pad: 2 * ({kept} - 1) + {} overflows \
                         2^63 - 1",
                        crop + pb
                    ),
                );
            }
        }
        shape.push(u64::try_from(out).unwrap_or(u64::MAX));
    }
    let output_type = TensorType::new(ty.dtype, shape);
    check_tensor(OP, "output", &output_type)?;
    Ok(PadPlan {
        mode: a.mode,
        value,
        axes: per_dim,
        output_type,
    })
}

/// An output range of one axis and the source index expression of `d{axis}` on it.
type Region = (DimRange, AffineExpr);

/// `e + k`, leaving out a zero.
fn plus(e: AffineExpr, k: i64) -> AffineExpr {
    if k == 0 {
        e
    } else {
        e + k
    }
}

pub(crate) fn lower_pad(plan: &PadPlan, ty: &TensorType) -> Kernel {
    let out = &plan.output_type.shape;
    let stmts = match plan.mode {
        PadMode::Constant => constant_stmts(plan, out),
        mode => region_stmts(
            &plan
                .axes
                .iter()
                .enumerate()
                .map(|(i, p)| regions(mode, i, *p))
                .collect::<Vec<_>>(),
        ),
    };
    Kernel {
        name: "pad".into(),
        src: ty.clone(),
        dst: plan.output_type.clone(),
        stmts,
    }
}

/// The copy of the box the input lands in, and fills of the slabs around it.
fn constant_stmts(plan: &PadPlan, out: &[u64]) -> Vec<Stmt> {
    let full: Vec<DimRange> = out.iter().map(|&n| DimRange::upto(n)).collect();
    // Output dims and pads are below 2^63 in magnitude, so these fit i64.
    let inner: Vec<DimRange> = plan
        .axes
        .iter()
        .zip(out)
        .map(|(p, &n)| {
            let lo = p.begin.max(0);
            let hi = (i128::from(p.begin) + i128::from(p.dim)).min(i128::from(n));
            DimRange::new(lo, i64::try_from(hi.max(i128::from(lo))).unwrap_or(lo))
        })
        .collect();
    let fill = |domain: Vec<DimRange>| Stmt {
        dst: identity(domain.len()),
        domain,
        guard: Vec::new(),
        action: Action::Fill { value: plan.value },
    };
    if inner.iter().any(DimRange::is_empty) {
        return vec![fill(full)];
    }
    let mut stmts = Vec::new();
    for a in 0..out.len() {
        let slab = |range: DimRange| {
            let mut domain = full.clone();
            domain[..a].copy_from_slice(&inner[..a]);
            domain[a] = range;
            domain
        };
        if inner[a].lo > 0 {
            stmts.push(fill(slab(DimRange::new(0, inner[a].lo))));
        }
        if inner[a].hi < full[a].hi {
            stmts.push(fill(slab(DimRange::new(inner[a].hi, full[a].hi))));
        }
    }
    let src = plan
        .axes
        .iter()
        .enumerate()
        .map(|(i, p)| plus(d(i), -p.begin))
        .collect();
    stmts.push(Stmt {
        dst: identity(inner.len()),
        domain: inner,
        guard: Vec::new(),
        action: Action::Copy { src },
    });
    stmts
}

/// The regions of axis `i` in an edge, reflect or wrap Pad: before, kept, after.
fn regions(mode: PadMode, i: usize, p: AxisPad) -> Vec<Region> {
    let dim = p.dim as i64;
    let off = (-p.begin).max(0);
    let kept = dim + p.begin.min(0) + p.end.min(0);
    let (pb, pe) = (p.begin.max(0), p.end.max(0));
    let mut out = Vec::with_capacity(3);
    if pb > 0 {
        let src = match mode {
            PadMode::Edge => AffineExpr::Const(off),
            PadMode::Reflect => d(i) * -1 + (off + pb),
            _ => plus(d(i), off + kept - pb),
        };
        out.push((DimRange::new(0, pb), src));
    }
    out.push((DimRange::new(pb, pb + kept), plus(d(i), off - pb)));
    if pe > 0 {
        let src = match mode {
            PadMode::Edge => AffineExpr::Const(off + kept - 1),
            PadMode::Reflect => d(i) * -1 + (off + 2 * (kept - 1) + pb),
            _ => plus(d(i), off - pb - kept),
        };
        out.push((DimRange::new(pb + kept, pb + kept + pe), src));
    }
    out
}

/// One copy per combination of the axes' regions, in row-major order of the regions.
fn region_stmts(axes: &[Vec<Region>]) -> Vec<Stmt> {
    let mut stmts = Vec::new();
    let mut pick = vec![0usize; axes.len()];
    loop {
        let (domain, src): (Vec<DimRange>, Vec<AffineExpr>) = pick
            .iter()
            .zip(axes)
            .map(|(&k, regions)| regions[k].clone())
            .unzip();
        stmts.push(Stmt {
            dst: identity(domain.len()),
            domain,
            guard: Vec::new(),
            action: Action::Copy { src },
        });
        let mut a = axes.len();
        loop {
            if a == 0 {
                return stmts;
            }
            a -= 1;
            pick[a] += 1;
            if pick[a] < axes[a].len() {
                break;
            }
            pick[a] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_cast_to_the_dtype() {
        let bits = |v: PadValue, d: DType| v.to_scalar(d).map(|s| s.to_le_bytes(d));
        // Floats round to nearest in float dtypes, as a cast of ONNX's constant tensor would.
        assert_eq!(
            bits(PadValue::float(0.1), DType::F16),
            Some(half::f16::from_f64(0.1).to_le_bytes().to_vec())
        );
        assert_eq!(
            bits(PadValue::float(0.1), DType::F32),
            Some((0.1f32).to_le_bytes().to_vec())
        );
        assert_eq!(
            bits(PadValue::float(-0.0), DType::BF16),
            Some(half::bf16::from_f64(-0.0).to_le_bytes().to_vec())
        );
        assert_eq!(
            bits(PadValue::Int(16_777_217), DType::F32),
            Some((16_777_216f32).to_le_bytes().to_vec())
        );
        // Integers must be exact; integral floats are integers.
        assert_eq!(bits(PadValue::float(3.0), DType::I8), Some(vec![3]));
        assert_eq!(bits(PadValue::float(2.5), DType::I32), None);
        assert_eq!(bits(PadValue::Int(300), DType::U8), None);
        assert_eq!(
            bits(PadValue::Int(i128::from(u64::MAX)), DType::U64),
            Some(u64::MAX.to_le_bytes().to_vec())
        );
        assert_eq!(bits(PadValue::Bool(true), DType::Bool), Some(vec![1]));
        assert_eq!(bits(PadValue::Int(2), DType::Bool), None);
        assert_eq!(
            bits(
                PadValue::Complex(1.5f64.to_bits(), (-2.0f64).to_bits()),
                DType::C64
            ),
            Some([1.5f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat())
        );
    }
}
