//! The pass manager: runs a pipeline, verifies after every pass (behind one switch), and can
//! report the IR after every pass with MLIR's header.

use crate::registry::PassInfo;
use crate::{Level, PassError, Pipeline};
use relayout_ir::{verify_kernel, verify_loop_kernel, AnyKernel, VerifyError};
use std::fmt;
use std::time::{Duration, Instant};

/// Runs a [`Pipeline`].
#[derive(Clone, Debug)]
pub struct PassManager {
    pipeline: Pipeline,
    verify: bool,
    verify_input: bool,
}

/// The IR after one pass, printed with MLIR's header:
///
/// ```text
/// // -----// IR Dump After SplitDims (split-dims) //----- //
/// kernel @k(...) -> (...) {
/// ...
/// ```
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct IrDump {
    /// The kebab-case name of the pass.
    pub pass: &'static str,
    /// The name in CamelCase (`SplitDims`).
    pub camel: String,
    /// The IR the pass produced.
    pub ir: AnyKernel,
}

impl IrDump {
    /// The header line, without a newline.
    pub fn header(&self) -> String {
        format!(
            "// -----// IR Dump After {} ({}) //----- //",
            self.camel, self.pass
        )
    }
}

impl fmt::Display for IrDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.header())?;
        match &self.ir {
            AnyKernel::Index(k) => write!(f, "{k}"),
            AnyKernel::Loops(k) => write!(f, "{k}"),
        }
    }
}

/// The result of [`PassManager::run_collect`]: the IR after every pass that ran, and the
/// final IR or the error that stopped the pipeline.
#[derive(Clone, Debug)]
pub struct PipelineRun {
    /// The IR after each pass that ran, in order (including a failing pass whose output did
    /// not verify).
    pub dumps: Vec<IrDump>,
    /// The final IR, or the error that stopped the pipeline.
    pub result: Result<AnyKernel, PassError>,
    /// How long each pass that ran took, in order (what `--timings` prints).
    pub timings: Vec<PassTiming>,
}

/// The wall time of one pass of a pipeline run: the pass itself, and the verification of its
/// output (zero when verification is off). Copying the IR for a dump is not counted.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PassTiming {
    /// The kebab-case name of the pass.
    pub pass: &'static str,
    /// Time in the pass.
    pub run: Duration,
    /// Time in the verifier after it.
    pub verify: Duration,
}

impl PassManager {
    /// A manager for `pipeline`. Verification after every pass is on in debug builds (and so
    /// in tests) and off in release builds; see [`PassManager::verify_each`].
    pub fn new(pipeline: Pipeline) -> PassManager {
        PassManager {
            pipeline,
            verify: cfg!(debug_assertions),
            verify_input: cfg!(debug_assertions),
        }
    }

    /// Turns verification of the input and of the output of every pass on or off.
    pub fn verify_each(mut self, on: bool) -> PassManager {
        self.verify = on;
        self.verify_input = on;
        self
    }

    /// Turns verification of the pipeline's input on or off, independently of the output of
    /// each pass (set it after [`PassManager::verify_each`]). With it off, an invalid input is
    /// reported as the failure of the first pass, which is what the tests of the manager use.
    pub fn verify_input(mut self, on: bool) -> PassManager {
        self.verify_input = on;
        self
    }

    /// The pipeline this manager runs.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Runs the pipeline.
    pub fn run(&self, ir: AnyKernel) -> Result<AnyKernel, PassError> {
        self.run_with(ir, &mut |_, _| {})
    }

    /// Runs the pipeline and calls `after_pass` with each pass and the IR it produced (before
    /// that IR is verified, so that a dump shows the IR that failed).
    pub fn run_with(
        &self,
        ir: AnyKernel,
        after_pass: &mut dyn FnMut(&PassInfo, &AnyKernel),
    ) -> Result<AnyKernel, PassError> {
        self.run_timed_with(ir, after_pass, &mut Vec::new())
    }

    /// Runs the pipeline and returns, with its result, how long each pass took (the input's
    /// verification is not a pass and is not counted).
    pub fn run_timed(&self, ir: AnyKernel) -> (Result<AnyKernel, PassError>, Vec<PassTiming>) {
        let mut timings = Vec::with_capacity(self.pipeline.passes().len());
        let result = self.run_timed_with(ir, &mut |_, _| {}, &mut timings);
        (result, timings)
    }

    /// [`run_with`](Self::run_with), appending each pass's timing to `timings` (a pass that
    /// fails is timed too).
    fn run_timed_with(
        &self,
        ir: AnyKernel,
        after_pass: &mut dyn FnMut(&PassInfo, &AnyKernel),
        timings: &mut Vec<PassTiming>,
    ) -> Result<AnyKernel, PassError> {
        if self.verify_input {
            verify(&ir).map_err(|error| PassError::InvalidInput { error })?;
        }
        let mut ir = ir;
        for info in self.pipeline.passes() {
            let started = Instant::now();
            let pass = (info.create)();
            let out = pass.run(ir);
            let mut timing = PassTiming {
                pass: info.name,
                run: started.elapsed(),
                verify: Duration::ZERO,
            };
            ir = match out {
                Ok(ir) => ir,
                Err(e) => {
                    timings.push(timing);
                    return Err(e);
                }
            };
            after_pass(info, &ir);
            if self.verify {
                let started = Instant::now();
                let verified = verify(&ir);
                timing.verify = started.elapsed();
                timings.push(timing);
                verified.map_err(|error| PassError::Verification {
                    pass: info.name,
                    error,
                })?;
            } else {
                timings.push(timing);
            }
        }
        Ok(ir)
    }

    /// Runs the pipeline and returns the IR after every pass (what `--print-after-all` prints),
    /// with the final result.
    pub fn run_collect(&self, ir: AnyKernel) -> PipelineRun {
        let mut dumps = Vec::new();
        let mut timings = Vec::new();
        let result = self.run_timed_with(
            ir,
            &mut |info, ir| {
                dumps.push(IrDump {
                    pass: info.name,
                    camel: info.camel_name(),
                    ir: ir.clone(),
                })
            },
            &mut timings,
        );
        PipelineRun {
            dumps,
            result,
            timings,
        }
    }

    /// Runs the pipeline on an index-map kernel and returns the index-map kernel it produces.
    pub fn run_index(&self, k: &relayout_ir::Kernel) -> Result<relayout_ir::Kernel, PassError> {
        match self.run(AnyKernel::Index(k.clone()))? {
            AnyKernel::Index(k) => Ok(k),
            AnyKernel::Loops(_) => Err(self.wrong_output(Level::Index, Level::Loops)),
        }
    }

    /// Runs the pipeline on an index-map kernel and returns the loop kernel it produces.
    pub fn run_to_loops(
        &self,
        k: &relayout_ir::Kernel,
    ) -> Result<relayout_ir::LoopKernel, PassError> {
        match self.run(AnyKernel::Index(k.clone()))? {
            AnyKernel::Loops(k) => Ok(k),
            AnyKernel::Index(_) => Err(self.wrong_output(Level::Loops, Level::Index)),
        }
    }

    fn wrong_output(&self, want: Level, got: Level) -> PassError {
        PassError::WrongOutputLevel {
            pipeline: self.pipeline.to_string(),
            want,
            got,
        }
    }
}

fn verify(ir: &AnyKernel) -> Result<(), VerifyError> {
    match ir {
        AnyKernel::Index(k) => verify_kernel(k),
        AnyKernel::Loops(k) => verify_loop_kernel(k),
    }
}
