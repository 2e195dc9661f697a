//! The interpreter: runs either IR level on byte buffers, one element (or one run) at a time,
//! with every index checked. It is deliberately simple, because it is the oracle that every
//! pass and the generated code are compared against.

use crate::{Action, Band, Kernel, LoopAction, LoopKernel, Stmt, Unit};

/// Why a kernel could not be interpreted: a buffer of the wrong length, an index outside its
/// tensor, or arithmetic that overflows. A verified kernel never produces the last two.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{message}")]
pub struct InterpError {
    /// What went wrong, with the statement and point.
    pub message: String,
}

fn err(message: impl Into<String>) -> InterpError {
    InterpError {
        message: message.into(),
    }
}

fn check_lengths(
    src_ty: &crate::TensorType,
    dst_ty: &crate::TensorType,
    src: &[u8],
    dst: &[u8],
) -> Result<(), InterpError> {
    for (name, ty, len) in [
        ("source", src_ty, src.len()),
        ("destination", dst_ty, dst.len()),
    ] {
        let want = ty.size_bytes().map_err(|e| err(e.to_string()))?;
        if want != len as u64 {
            return Err(err(format!(
                "{name} buffer is {len} bytes but {ty} needs {want}"
            )));
        }
    }
    Ok(())
}

/// Row-major element offset of `index` in `shape`, or `None` when out of bounds.
fn element_offset(shape: &[u64], index: &[i64]) -> Option<u64> {
    if shape.len() != index.len() {
        return None;
    }
    let mut off = 0u64;
    for (&n, &i) in shape.iter().zip(index) {
        if i < 0 || i as u64 >= n {
            return None;
        }
        off = off * n + i as u64;
    }
    Some(off)
}

/// Runs an index-map kernel: `dst` must hold the destination's bytes (it is written, not
/// cleared first), `src` the source's.
pub fn interpret(kernel: &Kernel, src: &[u8], dst: &mut [u8]) -> Result<(), InterpError> {
    check_lengths(&kernel.src, &kernel.dst, src, dst)?;
    let esize = kernel.dst.dtype.size() as usize;
    if kernel.src.dtype != kernel.dst.dtype {
        return Err(err(format!(
            "source type {} and destination type {} differ in element type",
            kernel.src, kernel.dst
        )));
    }
    for (si, stmt) in kernel.stmts.iter().enumerate() {
        let mut index = Vec::new();
        for_each_point(stmt, &mut |point| {
            for c in &stmt.guard {
                let v = c
                    .expr
                    .eval(point)
                    .ok_or_else(|| err(format!("statement {si}: guard {c} overflows")))?;
                if v < c.lo || v >= c.hi {
                    return Ok(());
                }
            }
            let at = |map: &[crate::AffineExpr],
                      shape: &[u64],
                      index: &mut Vec<i64>,
                      what: &str| {
                index.clear();
                for e in map {
                    index.push(e.eval(point).ok_or_else(|| {
                        err(format!(
                            "statement {si}: {what} index {e} overflows at {point:?}"
                        ))
                    })?);
                }
                element_offset(shape, index)
                    .map(|o| o as usize * esize)
                    .ok_or_else(|| err(format!("statement {si}: {what} index {index:?} is outside {shape:?} at {point:?}")))
            };
            let d = at(&stmt.dst, &kernel.dst.shape, &mut index, "destination")?;
            match &stmt.action {
                Action::Fill { value } => {
                    dst[d..d + esize].copy_from_slice(&value.to_le_bytes(kernel.dst.dtype))
                }
                Action::Copy { src: map } => {
                    let s = at(map, &kernel.src.shape, &mut index, "source")?;
                    dst[d..d + esize].copy_from_slice(&src[s..s + esize]);
                }
                Action::Accumulate { src: map } => {
                    let s = at(map, &kernel.src.shape, &mut index, "source")?;
                    kernel
                        .dst
                        .dtype
                        .add_assign(&mut dst[d..d + esize], &src[s..s + esize]);
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Calls `f` on every point of the statement's domain in row-major order (last dim fastest).
fn for_each_point(
    stmt: &Stmt,
    f: &mut dyn FnMut(&[i64]) -> Result<(), InterpError>,
) -> Result<(), InterpError> {
    if stmt.domain.iter().any(|r| r.is_empty()) {
        return Ok(());
    }
    let mut point: Vec<i64> = stmt.domain.iter().map(|r| r.lo).collect();
    loop {
        f(&point)?;
        // Advance like an odometer.
        let mut k = point.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            point[k] += 1;
            if point[k] < stmt.domain[k].hi {
                break;
            }
            point[k] = stmt.domain[k].lo;
        }
    }
}

/// Runs a loop kernel on byte buffers, checking every run against its buffer. A band runs
/// its shared loops once and, at each of their iterations, every member's inner loops in
/// statement order, a band nested in it in its place.
pub fn interpret_loops(kernel: &LoopKernel, src: &[u8], dst: &mut [u8]) -> Result<(), InterpError> {
    check_lengths(&kernel.src, &kernel.dst, src, dst)?;
    for unit in kernel.units() {
        match unit {
            Unit::Stmt(si) => run_loop_stmt(kernel, si, &[], src, dst)?,
            Unit::Band(band) => run_band(kernel, band, &[], src, dst)?,
        }
    }
    Ok(())
}

/// Runs `band` with its outermost loops fixed at `outer` (those of the bands it is nested
/// in): at each iteration of its further shared loops, each unit inside it in order.
fn run_band(
    kernel: &LoopKernel,
    band: Band,
    outer: &[u64],
    src: &[u8],
    dst: &mut [u8],
) -> Result<(), InterpError> {
    let members = kernel
        .stmts
        .get(band.members())
        .ok_or_else(|| err(format!("band {band:?} leaves the kernel")))?;
    let shared: Vec<u64> = members[0]
        .loops
        .get(outer.len()..band.depth)
        .ok_or_else(|| err(format!("band {band:?} is deeper than its first member")))?
        .iter()
        .map(|l| l.extent)
        .collect();
    let units = kernel.units_in(band);
    let mut inner = Vec::with_capacity(shared.len());
    let mut all = Vec::with_capacity(band.depth);
    for_each_counter(&shared, &mut inner, &mut |inner| {
        all.clear();
        all.extend_from_slice(outer);
        all.extend_from_slice(inner);
        for &unit in &units {
            match unit {
                Unit::Stmt(si) => run_loop_stmt(kernel, si, &all, src, dst)?,
                Unit::Band(nested) => run_band(kernel, nested, &all, src, dst)?,
            }
        }
        Ok(())
    })
}

/// Calls `f` with `counters` set to every point of `extents` in row-major order (none when an
/// extent is 0).
fn for_each_counter(
    extents: &[u64],
    counters: &mut Vec<u64>,
    f: &mut dyn FnMut(&[u64]) -> Result<(), InterpError>,
) -> Result<(), InterpError> {
    if extents.contains(&0) {
        return Ok(());
    }
    counters.clear();
    counters.resize(extents.len(), 0);
    loop {
        f(counters)?;
        let mut k = counters.len();
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            counters[k] += 1;
            if counters[k] < extents[k] {
                break;
            }
            counters[k] = 0;
        }
    }
}

/// Runs statement `si` with its outermost loops fixed at `outer` (all of its loops when
/// `outer` is empty), checking every run against its buffer.
fn run_loop_stmt(
    kernel: &LoopKernel,
    si: usize,
    outer: &[u64],
    src: &[u8],
    dst: &mut [u8],
) -> Result<(), InterpError> {
    let stmt = &kernel.stmts[si];
    let dtype = kernel.dtype();
    let esize = dtype.size() as usize;
    let bytes = usize::try_from(stmt.bytes)
        .map_err(|_| err(format!("statement {si}: run of {} bytes", stmt.bytes)))?;
    if bytes == 0 || bytes % esize != 0 {
        return Err(err(format!("statement {si}: run of {bytes} bytes is not a positive multiple of the element size {esize}")));
    }
    let inner: Vec<u64> = stmt
        .loops
        .get(outer.len()..)
        .ok_or_else(|| err(format!("statement {si}: fewer loops than its band")))?
        .iter()
        .map(|l| l.extent)
        .collect();
    let mut counters = Vec::new();
    let mut all = Vec::with_capacity(stmt.loops.len());
    for_each_counter(&inner, &mut counters, &mut |inner| {
        all.clear();
        all.extend_from_slice(outer);
        all.extend_from_slice(inner);
        let counters = &all;
        let offset = |base: i64, stride: &dyn Fn(usize) -> i64| -> Option<i64> {
            counters.iter().enumerate().try_fold(base, |acc, (i, &c)| {
                acc.checked_add(stride(i).checked_mul(c as i64)?)
            })
        };
        let range = |off: Option<i64>,
                     len: usize,
                     what: &str|
         -> Result<std::ops::Range<usize>, InterpError> {
            off.and_then(|o| usize::try_from(o).ok())
                .filter(|&o| o.checked_add(bytes).is_some_and(|end| end <= len))
                .map(|o| o..o + bytes)
                .ok_or_else(|| err(format!("statement {si}: {what} run at {off:?} of {bytes} bytes leaves its {len}-byte buffer at {counters:?}")))
        };
        let d = range(
            offset(stmt.dst_offset, &|i| stmt.loops[i].dst_stride),
            dst.len(),
            "destination",
        )?;
        match stmt.action {
            LoopAction::Fill { value } => {
                let elem = value.to_le_bytes(kernel.dst.dtype);
                for chunk in dst[d].chunks_mut(elem.len()) {
                    chunk.copy_from_slice(&elem);
                }
            }
            LoopAction::Copy => {
                let s = range(
                    offset(stmt.src_offset, &|i| stmt.loops[i].src_stride),
                    src.len(),
                    "source",
                )?;
                dst[d].copy_from_slice(&src[s]);
            }
            LoopAction::Accumulate | LoopAction::Sum => {
                // With a window, the term adds (and reads) only the run bytes of its window.
                let (lo, hi) = match (stmt.window, counters.last()) {
                    (None, _) => (0, bytes),
                    (Some(w), Some(&k)) => w
                        .at(k, stmt.bytes)
                        .map(|(lo, hi)| (lo as usize, hi as usize))
                        .ok_or_else(|| err(format!("statement {si}: window overflows")))?,
                    (Some(_), None) => {
                        return Err(err(format!("statement {si}: a window without loops")))
                    }
                };
                let s = offset(stmt.src_offset, &|i| stmt.loops[i].src_stride)
                    .and_then(|o| o.checked_add(lo as i64))
                    .and_then(|o| usize::try_from(o).ok())
                    .filter(|&o| o.checked_add(hi - lo).is_some_and(|end| end <= src.len()))
                    .map(|o| o..o + (hi - lo))
                    // An empty window reads nothing, wherever its offset lies.
                    .or((lo == hi).then_some(0..0))
                    .ok_or_else(|| {
                        err(format!(
                            "statement {si}: source run of {} bytes leaves its {}-byte buffer at \
                             {counters:?}",
                            hi - lo,
                            src.len()
                        ))
                    })?;
                if stmt.action == LoopAction::Sum {
                    // The first point of the reduction loops starts the sums from +0.0.
                    let reductions = stmt.reduction_loops();
                    if counters[counters.len() - reductions..]
                        .iter()
                        .all(|&c| c == 0)
                    {
                        dst[d.clone()].fill(0);
                    }
                }
                for (a, x) in dst[d.start + lo..d.start + hi]
                    .chunks_exact_mut(esize)
                    .zip(src[s].chunks_exact(esize))
                {
                    dtype.add_assign(a, x);
                }
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AffineExpr, Constraint, DType, DimRange, Loop, LoopStmt, TensorType};

    #[test]
    fn index_kernel_pads_and_copies() {
        let d0 = AffineExpr::dim(0);
        let k = Kernel {
            name: "pad".into(),
            src: TensorType::new(DType::U8, [2]),
            dst: TensorType::new(DType::U8, [4]),
            stmts: vec![
                Stmt {
                    domain: vec![DimRange::new(0, 4)],
                    guard: vec![],
                    dst: vec![d0.clone()],
                    action: Action::ZERO_FILL,
                },
                Stmt {
                    domain: vec![DimRange::new(0, 4)],
                    guard: vec![Constraint {
                        expr: d0.clone() - 1,
                        lo: 0,
                        hi: 2,
                    }],
                    dst: vec![d0.clone()],
                    action: Action::Copy { src: vec![d0 - 1] },
                },
            ],
        };
        let mut dst = [9u8; 4];
        interpret(&k, &[5, 6], &mut dst).unwrap();
        assert_eq!(dst, [0, 5, 6, 0]);
        assert!(interpret(&k, &[5], &mut dst).is_err());
    }

    #[test]
    fn loop_kernel_transposes_and_rejects_out_of_bounds() {
        let mut k = LoopKernel {
            bands: Vec::new(),
            name: "t".into(),
            src: TensorType::new(DType::U8, [2, 3]),
            dst: TensorType::new(DType::U8, [3, 2]),
            stmts: vec![LoopStmt {
                action: LoopAction::Copy,
                bytes: 1,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![
                    Loop {
                        extent: 3,
                        src_stride: 1,
                        dst_stride: 2,
                    },
                    Loop {
                        extent: 2,
                        src_stride: 3,
                        dst_stride: 1,
                    },
                ],
                window: None,
            }],
        };
        let mut dst = [0u8; 6];
        interpret_loops(&k, &[0, 1, 2, 3, 4, 5], &mut dst).unwrap();
        assert_eq!(dst, [0, 3, 1, 4, 2, 5]);
        k.stmts[0].src_offset = 1;
        assert!(interpret_loops(&k, &[0, 1, 2, 3, 4, 5], &mut dst).is_err());
    }

    #[test]
    fn loop_accumulate_adds_elements() {
        let k = LoopKernel {
            bands: Vec::new(),
            name: "acc".into(),
            src: TensorType::new(DType::I16, [2]),
            dst: TensorType::new(DType::I16, [2]),
            stmts: vec![LoopStmt {
                action: LoopAction::Accumulate,
                bytes: 4,
                src_offset: 0,
                dst_offset: 0,
                loops: vec![Loop {
                    extent: 2,
                    src_stride: 0,
                    dst_stride: 0,
                }],
                window: None,
            }],
        };
        let src: Vec<u8> = [3i16, -4].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut dst: Vec<u8> = [1i16, 1].iter().flat_map(|v| v.to_le_bytes()).collect();
        interpret_loops(&k, &src, &mut dst).unwrap();
        assert_eq!(
            dst,
            [7i16, -7]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>()
        );
    }
}
