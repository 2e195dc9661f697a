//! Cranelift's own passes, timed, for `--timings`: most of a compile is Cranelift's work, and
//! most of that register allocation, which only shows when the `cranelift` stage is cut into
//! its passes.
//!
//! Cranelift reports the start and end of each of its passes to a per-thread
//! [`Profiler`]; the one installed here (once per compiling thread, replacing Cranelift's
//! default, which keeps totals that no public accessor reads) records each pass's time, and
//! [`parts`] adds them up into the three passes a compile's cost is made of.

use cranelift_codegen::timing::{set_thread_profiler, Pass, Profiler};
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

thread_local! {
    /// The passes recorded since [`start`], as they ended.
    static PASSES: RefCell<Vec<(Pass, Duration)>> = const { RefCell::new(Vec::new()) };
    static INSTALLED: Cell<bool> = const { Cell::new(false) };
    /// Whether passes are recorded: from [`start`] to [`parts`], so that the compiles between
    /// (machine-code listings, object files) do not grow the list in a long-running process.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

struct Recorder;

/// Cranelift drops the token when the pass ends.
struct Running {
    pass: Pass,
    start: Instant,
}

impl Drop for Running {
    fn drop(&mut self) {
        if RECORDING.get() {
            let time = self.start.elapsed();
            PASSES.with(|p| p.borrow_mut().push((self.pass, time)));
        }
    }
}

impl Profiler for Recorder {
    fn start_pass(&self, pass: Pass) -> Box<dyn Any> {
        Box::new(Running {
            pass,
            start: Instant::now(),
        })
    }
}

/// Installs the recorder on this thread, if it is not yet, and forgets what it recorded.
pub(crate) fn start() {
    if !INSTALLED.get() {
        // The previous profiler is Cranelift's default one, which records nothing we read.
        drop(set_thread_profiler(Box::new(Recorder)));
        INSTALLED.set(true);
    }
    PASSES.with(|p| p.borrow_mut().clear());
    RECORDING.set(true);
}

/// The time of Cranelift's passes since [`start`] on this thread: instruction selection
/// (lowering Cranelift IR to machine instructions on virtual registers), register allocation,
/// and emission (machine instructions to bytes, branches resolved). Recording stops here.
pub(crate) fn parts() -> [(&'static str, Duration); 3] {
    RECORDING.set(false);
    let sum = |which: &[Pass]| {
        PASSES.with(|p| {
            p.borrow()
                .iter()
                .filter(|(pass, _)| which.contains(pass))
                .map(|(_, t)| *t)
                .sum()
        })
    };
    [
        ("instruction selection", sum(&[Pass::vcode_lower])),
        ("register allocation", sum(&[Pass::regalloc])),
        (
            "emission",
            sum(&[Pass::vcode_emit, Pass::vcode_emit_finish]),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::{parts, start, PASSES};
    use cranelift_codegen::timing;

    #[test]
    fn records_between_start_and_parts_only() {
        start();
        drop(timing::regalloc());
        drop(timing::vcode_lower());
        drop(timing::vcode_lower());
        assert_eq!(PASSES.with(|p| p.borrow().len()), 3);
        let names: Vec<&str> = parts().iter().map(|(name, _)| *name).collect();
        assert_eq!(
            names,
            ["instruction selection", "register allocation", "emission"]
        );
        // After `parts`, compiles outside a timed one (listings, objects) record nothing.
        drop(timing::regalloc());
        assert_eq!(PASSES.with(|p| p.borrow().len()), 3);
        // A new `start` forgets the last compile's passes.
        start();
        assert_eq!(PASSES.with(|p| p.borrow().len()), 0);
    }
}
