//! The `relayout` command-line tool: print an op's IR at every stage, run the built-in demo,
//! run passes on IR text like mlir-opt, and run conformance cases.

#![forbid(unsafe_code)]

/// See Cargo.toml: compiles spend a fifth of their time in glibc's malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `print!` to standard output that ends the program quietly when the reader has gone
/// (`relayout lower OP | head`), as Unix tools do, instead of panicking as `print!` does.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to standard output, as [`out!`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

mod aot;
mod bench;
mod commands;
mod run;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

// What `--help` prints after the options, for the tool and for each subcommand: commands to
// copy, then notes. A new user reads these before any other documentation, so every
// subcommand has an `Examples:` block (tests/help.rs checks it).
const TOP_EXAMPLES: &str = "\
Examples:
  relayout demo
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>'
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit loop
  relayout run 'DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>' --input x.npy --output y.npy
  relayout conformance tests/conformance
  relayout explain 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --svg s2d.svg
  relayout aot 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --symbol s2d -o s2d.o --header s2d.h

Ops are written as `Name {attribute = value, ...} : tensor<DIMSxTYPE>`, with the TensorFlow or
ONNX attribute names; `relayout help SUBCOMMAND` shows each subcommand's options.";

const LOWER_EXAMPLES: &str = "\
Examples:
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>'
  relayout lower --case tests/conformance/SpaceToDepth/s2d_tfdoc_1_1x2x2x1.json --emit loop
  relayout lower 'Col2Im {image_shape = [5, 5], block_shape = [2, 2]} : tensor<1x4x16xf32>' --print-after-all
  relayout lower 'DepthToSpace {block_size = 2, data_format = \"NCHW\", mode = \"CRD\"} : tensor<1x8x3x3xf32>' --emit vcode
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit loop,clif
  relayout lower --ir kernel.ir --emit loop,vcode
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --passes canonicalize,split-dims,linearize --emit loop
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --print-after-change --emit loop
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit loop --timings
  relayout lower 'Transpose {perm = [0, 3, 1, 2]} : tensor<1x4x4x8xf32>' --then 'DepthToSpace {block_size = 2, data_format = \"NCHW\", mode = \"CRD\"}' --then 'Transpose {perm = [0, 2, 3, 1]}' --emit loop

--emit asm needs a build with the disassembler (capstone, which needs a C compiler):
  cargo run --release -p relayout-cli --features disas -- lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit asm";

const DEMO_EXAMPLES: &str = "\
Examples:
  relayout demo
  cargo run --release -p relayout-cli -- demo

The op is the third worked example of TensorFlow's SpaceToDepth documentation.";

const OPT_EXAMPLES: &str = "\
Examples:
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit lowered > k.ir
  relayout opt k.ir --passes canonicalize,split-dims --print-after-all
  relayout opt k.ir --print-after-change
  relayout opt k.ir --print-after linearize --print-after fuse-nests
  relayout opt k.ir --timings
  relayout opt --print-pipeline
  relayout opt k.ir
  relayout lower 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --emit lowered | relayout opt - --passes canonicalize";

const CONFORMANCE_EXAMPLES: &str = "\
Examples:
  relayout conformance tests/conformance
  relayout conformance tests/conformance/SpaceToDepth tests/conformance/DepthToSpace
  relayout conformance -v tests/conformance

The last line is exactly `N passed, M failed`; the exit status is 0 only when M is 0.";

const RUN_EXAMPLES: &str = "\
Examples:
  relayout run 'DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>'
  relayout run 'Pad {pads = [1, 2], mode = \"reflect\"} : tensor<6xi32>'
  python3 -c 'import numpy as np; np.save(\"x.npy\", np.arange(16, dtype=np.float32).reshape(1, 2, 2, 4))'
  relayout run 'DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>' --input x.npy --output y.npy
  python3 -c 'import numpy as np; print(np.load(\"y.npy\"))'
  relayout run --case tests/conformance/SpaceToDepth/s2d_tfdoc_1_1x2x2x1.json --output y.npy
  relayout run 'DepthToSpace {block_size = 2}' --input x.npy --time
  relayout run 'DepthToSpace {block_size = 2}' --then 'Transpose {perm = [0, 3, 1, 2]}' --input x.npy
  relayout lower 'DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>' --emit loop > k.ir
  relayout run --ir k.ir --input x.npy

An input type given in the op must be the file's dtype and shape; without one, the file's is
used. Without an input file (or a case's data), the input is 0, 1, 2, ... in the input type,
printed before the result. --then adds ops after it, composed into one kernel. A kernel given
as IR (--ir) runs on a file of its source type (or on 0, 1, 2, ...): index-map IR through the
default pipeline, loop IR as it is. Without --output the result is printed.";

const EXPLAIN_EXAMPLES: &str = "\
Examples:
  relayout explain 'DepthToSpace {block_size = 2, data_format = \"NCHW\", mode = \"CRD\"} : tensor<1x8x2x2xf32>' --svg d2s.svg
  relayout explain 'SpaceToBatchND {block_shape = [2, 2], paddings = [[1, 0], [0, 1]]} : tensor<1x3x3x1xf32>' --svg s2b.svg
  relayout explain 'Col2Im {image_shape = [3, 3], block_shape = [2, 2]} : tensor<1x4x4xf32>' --svg col2im.svg
  relayout explain 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' > s2d.svg

Each output element is coloured and labelled by the input element it comes from (its flat
index), padding is grey; for Col2Im, by how many input elements are summed into it. Shapes of
more than 2048 elements are refused: explain the op on a small shape of the same kind.";

const BENCH_EXAMPLES: &str = "\
Examples:
  relayout bench bench/suite.json --threads 1
  relayout bench bench/suite.json --filter d2s_ --reps 20
  BENCH_THREADS=2 relayout bench bench/suite.json --json > results.jsonl
  relayout bench --op 'SpaceToDepth {block_size = 2} : tensor<8x3x640x640xf32>' --op 'DepthToSpace {block_size = 2} : tensor<1x64x256x256xf32>'

--json prints one line per case: {\"case\", \"median_ns\", \"compile_ns\", \"memcpy_ns\", \"threads\", \"reps\", \"ratio\"}.
ratio = kernel time / memcpy time of the same output bytes; for Col2Im, which reads several
times what it writes, of as many bytes as the kernel reads and writes.";

const AOT_EXAMPLES: &str = "\
Examples:
  relayout aot 'SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>' --symbol s2d -o s2d.o --header s2d.h
  cc prog.c s2d.o -o prog
  relayout aot 'Col2Im {image_shape = [5, 5], block_shape = [2, 2]} : tensor<1x4x16xf16>' --symbol c2i -o c2i.o --header c2i.h

The object defines NAME(src, dst) and NAME_range(src, dst, start, end) (the outer loop's
iterations, for the caller's own threads); the header declares them, with the byte sizes, the
outer range and the op as constants. A kernel that calls relayout's helpers (f16/bf16 adds,
streaming stores for outputs of 8 MiB or more) needs librelayout_capi at link time too: the
command and the header say so.";

#[derive(Parser)]
#[command(
    name = "relayout",
    version,
    about = "Compile tensor relayout ops to shape-specialised machine code, and show every stage.",
    after_help = TOP_EXAMPLES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The stages `lower --emit` can print.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The op's index-map IR as lowered, before any pass.
    Lowered,
    /// The index-map IR after the index-level passes.
    Index,
    /// The final loop IR.
    Loop,
    /// The Cranelift IR of the kernel's function, after its schedule.
    Clif,
    /// Cranelift's listing of the machine instructions of the kernel's function (VCode), in any build.
    Vcode,
    /// The disassembly of the machine code of the kernel's function; needs a build with `--features disas`.
    Asm,
}

#[derive(Subcommand)]
enum Command {
    /// Lower an op (or IR text, with --ir) and print its IR: the index-map IR, the loop IR and the CLIF.
    #[command(after_help = LOWER_EXAMPLES)]
    Lower {
        /// The op, e.g. 'DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x3x3xf32>'.
        op: Option<String>,
        /// Read the op from a conformance case file instead (its op, attrs and input type).
        #[arg(long, conflicts_with = "op")]
        case: Option<PathBuf>,
        /// Start from a file of IR text instead (index-map or loop IR, as `opt` prints it), or
        /// - for standard input: hand-written or `opt`-produced IR down to machine code.
        #[arg(long, conflicts_with_all = ["op", "case"])]
        ir: Option<PathBuf>,
        /// Then apply this op to the output (repeatable, in order): the chain is composed into
        /// one kernel, as `compile_chain` does. Written without a type, which the op before
        /// gives, e.g. 'DepthToSpace {block_size = 2}'.
        #[arg(long, value_name = "OP", conflicts_with = "ir")]
        then: Vec<String>,
        /// Run this pipeline (comma-separated pass names) instead of the default one. On loop IR
        /// the default is no pass.
        #[arg(long)]
        passes: Option<String>,
        /// Print only these stages (comma-separated or repeated), each under a header when
        /// there are several.
        #[arg(long, value_enum, value_delimiter = ',')]
        emit: Vec<Emit>,
        #[command(flatten)]
        print: PrintFlags,
    },
    /// Run the main job on a built-in example: lower, print the IR, compile, run, show the data.
    #[command(after_help = DEMO_EXAMPLES)]
    Demo,
    /// Run a pass pipeline on IR text (the printer's format), like mlir-opt.
    #[command(after_help = OPT_EXAMPLES)]
    Opt {
        /// A file of IR text, or - for standard input.
        #[arg(required_unless_present = "print_pipeline")]
        file: Option<PathBuf>,
        /// Comma-separated pass names. When absent: the default pipeline on index-map IR, and
        /// on loop IR the default pipeline's loop passes (those after `linearize`, in order).
        #[arg(long)]
        passes: Option<String>,
        #[command(flatten)]
        print: PrintFlags,
    },
    /// Run every conformance case (*.json) under the given directories through the JIT.
    #[command(after_help = CONFORMANCE_EXAMPLES)]
    Conformance {
        /// Directories to search for case files, recursively.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// One line per case (`ok` or `FAIL`), then a summary per op, before the total.
        #[arg(short, long)]
        verbose: bool,
    },
    /// Run an op, or a kernel given as IR text, on a NumPy .npy file; print the result or write it as .npy.
    #[command(after_help = RUN_EXAMPLES)]
    Run(run::RunArgs),
    /// Draw what an op does on a small shape, as SVG: where each output element comes from.
    #[command(after_help = EXPLAIN_EXAMPLES)]
    Explain {
        /// The op, e.g. 'DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"} : tensor<1x8x2x2xf32>'.
        op: String,
        /// Write the SVG to this file instead of standard output.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Benchmark the cases of a suite file: compile time, kernel time and memcpy time of the same bytes.
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(bench::BenchArgs),
    /// Compile an op ahead of time into an object file and a C header, for programs that link their kernels.
    #[command(after_help = AOT_EXAMPLES)]
    Aot(aot::AotArgs),
}

/// MLIR-style IR dumps of a pipeline run, shared by `lower` and `opt`. In `lower`, the stages
/// that --emit names follow the dumps.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PrintFlags {
    /// Print the IR after every pass, with MLIR-style headers.
    #[arg(long)]
    print_after_all: bool,
    /// Print the IR after every pass that changed it.
    #[arg(long)]
    print_after_change: bool,
    /// Print the IR after this pass (repeatable).
    #[arg(long = "print-after", value_name = "PASS")]
    print_after: Vec<String>,
    /// Print the pipeline that would run, as a string `opt --passes` accepts, and stop. Given
    /// loop IR and no --passes, `opt` prints the default pipeline's loop passes, and `lower`
    /// (which then runs no pass) an empty line.
    #[arg(long)]
    print_pipeline: bool,
    /// Print where the time went on standard error, as MLIR's -mlir-timing: every pass (and
    /// the verification after it), and for `lower` the whole compile down to machine code
    /// (the second of two cold compiles, leaving out the JIT's one-time set-up).
    #[arg(long)]
    timings: bool,
}

impl PrintFlags {
    fn selection(&self) -> relayout::PrintAfter {
        relayout::PrintAfter {
            all: self.print_after_all,
            changed: self.print_after_change,
            passes: self.print_after.clone(),
        }
    }
}

/// `opt --help`'s text after the options: the examples, then every registered pass with the
/// level of IR it takes and what it does, in the default pipeline's order of registration.
fn opt_after_help() -> String {
    let mut text = format!(
        "{OPT_EXAMPLES}\n\nThe default pipeline:\n  {}\n\
         On loop IR, without --passes, its loop passes:\n  {}\n\n\
         Passes (name, the IR it takes, what it does):\n",
        relayout::passes::DEFAULT_PIPELINE,
        relayout::passes::default_loop_pipeline()
    );
    // The name column fits the longest name, so that every row lines up.
    let width = relayout::passes::PASSES
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(0);
    for p in relayout::passes::PASSES {
        use relayout::passes::Level;
        let level = match (p.level, p.output) {
            (Level::Index, Level::Loops) => "index-map -> loop",
            (Level::Index, Level::Index) => "index-map",
            (Level::Loops, _) => "loop",
        };
        text.push_str(&format!(
            "  {:<width$} {:<18} {}\n",
            p.name, level, p.summary
        ));
    }
    text
}

/// Writes to standard output. A closed pipe ends the program with status 141 (128 + SIGPIPE,
/// the status of a Unix tool that the signal ended); another write error ends it with status
/// 1 and the error on standard error.
fn write_stdout(args: std::fmt::Arguments) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("error: writing to standard output: {e}");
        std::process::exit(1);
    }
}

fn main() -> ExitCode {
    let command = Cli::command().mut_subcommand("opt", |c| c.after_help(opt_after_help()));
    let cli = Cli::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Lower {
            op,
            case,
            ir,
            then,
            passes,
            emit,
            print,
        } => commands::lower(
            commands::Source { op, case, ir, then },
            passes.as_deref(),
            &emit,
            &print,
        ),
        Command::Demo => commands::demo(),
        Command::Opt {
            file,
            passes,
            print,
        } => commands::opt(file.as_deref(), passes.as_deref(), &print),
        Command::Conformance { dirs, verbose } => commands::conformance(&dirs, verbose),
        Command::Run(args) => run::run(args),
        Command::Bench(args) => bench::bench(args),
        Command::Explain { op, svg } => commands::explain(&op, svg.as_deref()),
        Command::Aot(args) => aot::aot(args),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
