//! `relayout lower --emit vcode|asm`: the machine code of every generated function, and the
//! error a build without the disassembler gives for `asm`.

mod support;
use support::{relayout, stdout_of};

const OP: &str = "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>";
/// Col2Im on f16 adds through a helper the JIT provides, and pads with a fill: two functions,
/// one of which calls out.
const COL2IM_F16: &str =
    "Col2Im {image_shape = [4, 4], block_shape = [3, 3], pads = [1, 1, 1, 1]} : tensor<1x9x16xf16>";

#[test]
fn vcode_lists_the_kernel_function_after_its_schedule() {
    let text = stdout_of(&["lower", OP, "--emit", "vcode"]);
    assert!(
        text.starts_with("; @space_to_depth: entry e runs"),
        "{text}"
    );
    assert!(
        text.contains("; entry 0:\n;   copy 8 bytes %dst["),
        "{text}"
    );
    assert!(
        text.contains("function %space_to_depth: "),
        "no function header:\n{text}"
    );
    assert!(text.contains("ret"), "no return:\n{text}");

    // A kernel of several statements, some in a fused band: one function, which the JIT
    // compiles, and every statement of the loop IR in the schedule above it.
    let text = stdout_of(&["lower", COL2IM_F16, "--emit", "vcode"]);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("function %")).count(),
        1,
        "one function per kernel:\n{text}"
    );
    let loops = stdout_of(&["lower", COL2IM_F16, "--emit", "loop"]);
    let statements: Vec<&str> = loops
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("copy") || l.starts_with("fill") || l.starts_with("accumulate"))
        .collect();
    assert!(
        statements.len() >= 2,
        "expected several statements (the cells)"
    );
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(';'))
        .map(str::trim_start)
        .filter(|l| l.starts_with("copy") || l.starts_with("fill") || l.starts_with("accumulate"))
        .collect();
    assert_eq!(listed, statements, "{text}");
    let bands = loops.matches("fused for").count();
    assert_eq!(text.matches(";   fused for").count(), bands, "{text}");
}

#[cfg(not(feature = "disas"))]
#[test]
fn asm_without_the_disassembler_says_how_to_build_it() {
    let out = relayout(&["lower", OP, "--emit", "asm"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "printed something anyway");
    let line = stderr.strip_suffix('\n').unwrap_or(&stderr);
    assert!(!line.contains('\n'), "more than one line: {stderr}");
    assert!(line.starts_with("error: --emit asm"), "{stderr}");
    assert!(
        line.contains("cargo run --release -p relayout-cli --features disas -- lower"),
        "{stderr}"
    );
    assert!(line.contains("--emit vcode"), "{stderr}");
}

#[cfg(feature = "disas")]
#[test]
fn asm_is_the_disassembly_of_the_kernel_function() {
    let text = stdout_of(&["lower", OP, "--emit", "asm"]);
    assert!(
        text.contains("; entry 0:\n;   copy 8 bytes %dst["),
        "{text}"
    );
    assert!(text.contains("function %space_to_depth: "), "{text}");
    // capstone's output: block labels with their offsets, AT&T mnemonics.
    assert!(text.contains("block0: ; offset 0x0"), "{text}");
    assert!(text.contains("retq"), "{text}");
    assert!(
        text.contains("vmovdqu") || text.contains("movdqu"),
        "{text}"
    );

    // The call to the f16 helper is shown as a relocation against its symbol.
    let text = stdout_of(&["lower", COL2IM_F16, "--emit", "asm"]);
    assert!(text.contains("%relayout_f16_add"), "{text}");
}

/// A reader that stops early (`relayout lower OP | head`) ends the tool quietly, with the
/// status of a Unix tool that SIGPIPE ended (141), not a panic. The IR is larger than a pipe
/// holds, so the tool is still writing when the reader goes.
#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    let op = "Im2Col {block_shape = [31, 31], pads = [15, 15, 15, 15]} : tensor<1x1x32x32xf32>";
    let mut child = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(["lower", op, "--emit", "loop"])
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the relayout binary runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("loops @im2col"), "{first}");
    // The reader is dropped here: the pipe is closed.
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
