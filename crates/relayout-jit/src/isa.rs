//! The host ISA, built once per process.
//!
//! The flags are set here rather than by `JITBuilder::new`. `opt_level` is `none`: the code
//! generator already emits what Cranelift's mid-end would make of it (pointer-bumping loops,
//! no repeated loads, constants that fold into immediates), and on the benchmark suite the
//! machine code at `none` and at `speed` differed only in instruction order and a few
//! instructions outside the loops, with the same kernel times, while compiling took 10-40%
//! less time (the most for kernels of many statements, such as Col2Im). Cranelift's IR verifier costs about a
//! third of compile time, so it runs in debug builds (where it guards the code generator's
//! development) and not in release builds.
//!
//! The register allocator stays Cranelift's default, `backtracking`. `single_pass` would cut
//! a Col2Im compile by a quarter (callgrind instructions of the three Col2Im cases of the
//! benchmark suite, -24% to -29%), but it keeps every value that lives across a block
//! boundary in a stack slot, so each loop iteration stores and reloads its counters and
//! pointers and the loop-carried chain goes through memory: kernels whose data fit in the
//! caches ran 1.3-3x slower (a 16x16 3x3 Col2Im 1.6x, a 3x3x3 one 2x, DepthToSpace 1.5x, a
//! 2x2 SpaceToDepth of a small tensor 3x), and only Col2Im kernels that stream tens of
//! megabytes from memory hid it. Kernel speed comes first, so it is not used, not even for
//! large kernels: a size threshold would trade speed for compile time on every kernel of
//! that size that runs more than a few thousand times.

use crate::JitError;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use std::sync::OnceLock;

/// The ISA of this machine with relayout's flags, shared by every kernel.
pub(crate) fn host() -> Result<OwnedTargetIsa, JitError> {
    static HOST: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    HOST.get_or_init(|| build(false, false))
        .clone()
        .map_err(JitError::Host)
}

/// The host ISA with the same flags but position-independent code, for object files that
/// link into position-independent executables (`aot_object`): calls to `memcpy` and the
/// helpers go through the GOT instead of absolute addresses; everything else is the same.
pub(crate) fn host_pic() -> Result<OwnedTargetIsa, JitError> {
    static PIC: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    PIC.get_or_init(|| build(false, true))
        .clone()
        .map_err(JitError::Host)
}

/// The host ISA with the same flags plus `machine_code_cfg_info`, which records where each
/// block starts so that a disassembly can label the blocks. The flag adds metadata only: the
/// instructions are the ones `host` generates.
pub(crate) fn host_for_listing() -> Result<OwnedTargetIsa, JitError> {
    static LISTING: OnceLock<Result<OwnedTargetIsa, String>> = OnceLock::new();
    LISTING
        .get_or_init(|| build(true, false))
        .clone()
        .map_err(JitError::Host)
}

fn build(block_offsets: bool, pic: bool) -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    let verifier = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    for (name, value) in [
        ("opt_level", "none"),
        // JIT code is placed at fixed addresses and calls libc and the helpers through
        // absolute addresses, which may be anywhere in the address space; object files are
        // position-independent (`host_pic`).
        ("is_pic", if pic { "true" } else { "false" }),
        ("use_colocated_libcalls", "false"),
        ("enable_verifier", verifier),
        (
            "machine_code_cfg_info",
            if block_offsets { "true" } else { "false" },
        ),
    ] {
        flags
            .set(name, value)
            .map_err(|e| format!("setting {name}={value}: {e}"))?;
    }
    let builder = cranelift_native::builder().map_err(|e| e.to_string())?;
    builder
        .finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}
