//! Where the time of a compile goes, stage by stage and pass by pass: what `relayout lower
//! --timings` and `relayout opt --timings` print, in the layout of MLIR's `-mlir-timing`.

use crate::passes::PassTiming;
use std::fmt;
use std::time::Duration;

/// The timed stages of one run, in order, as a tree (each entry's `depth` says how deep it
/// sits under the entries before it; a parent's time includes its children's).
///
/// ```
/// use relayout::ir::{DType, TensorType};
/// use relayout::{compile_timed, DataFormat, Op};
///
/// let op = Op::SpaceToDepth { block_size: 2, data_format: DataFormat::Nhwc };
/// let (kernel, timings) = compile_timed(&op, &TensorType::new(DType::F32, [1, 4, 4, 1]))?;
/// assert!(timings.entries.iter().any(|t| t.name == "split-dims" && t.depth == 1));
/// assert!(timings.to_string().contains("Total Execution Time"));
/// # let _ = kernel;
/// # Ok::<(), relayout::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// The stages in the order they ran.
    pub entries: Vec<Timing>,
}

/// One timed stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// What ran: a stage (`Lowering`, `Pipeline`, `JIT`), a pass (`split-dims`), or a part of
    /// one (`verify`).
    pub name: String,
    /// 0 for a top-level stage, 1 for a part of one, and so on.
    pub depth: usize,
    /// Its wall time, including its parts'.
    pub time: Duration,
}

impl Timings {
    /// Appends a stage.
    pub fn push(&mut self, name: impl Into<String>, depth: usize, time: Duration) {
        self.entries.push(Timing {
            name: name.into(),
            depth,
            time,
        });
    }

    /// The sum of the top-level stages.
    pub fn total(&self) -> Duration {
        self.entries
            .iter()
            .filter(|t| t.depth == 0)
            .map(|t| t.time)
            .sum()
    }

    /// Appends a pipeline's passes under a `Pipeline` stage at `depth`: each pass, with the
    /// verification of its output as a part when it ran.
    pub(crate) fn push_pipeline(&mut self, depth: usize, passes: &[PassTiming]) {
        let total = passes.iter().map(|p| p.run + p.verify).sum();
        self.push("Pipeline", depth, total);
        for p in passes {
            self.push(p.pass, depth + 1, p.run + p.verify);
            if !p.verify.is_zero() {
                self.push("verify", depth + 2, p.verify);
            }
        }
    }
}

impl fmt::Display for Timings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule =
            "===-------------------------------------------------------------------------===";
        let total = self.total();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(f, "{rule}")?;
        writeln!(f, "{:>49}", "... Execution time report ...")?;
        writeln!(f, "{rule}")?;
        writeln!(f, "  Total Execution Time: {:.4} ms", ms(total))?;
        writeln!(f)?;
        writeln!(f, "  ----Wall Time (ms)----  ----Name----")?;
        let share = |d: Duration| {
            if total.is_zero() {
                0.0
            } else {
                100.0 * d.as_secs_f64() / total.as_secs_f64()
            }
        };
        for t in &self.entries {
            writeln!(
                f,
                "  {:>10.4} ({:>5.1}%)  {}{}",
                ms(t.time),
                share(t.time),
                "  ".repeat(t.depth),
                t.name
            )?;
        }
        writeln!(f, "  {:>10.4} ({:>5.1}%)  Total", ms(total), share(total))
    }
}
