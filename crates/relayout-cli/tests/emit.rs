//! `relayout lower --emit vcode|asm`: the machine code of every generated function, and the
//! error a build without the disassembler gives for `asm`.

use std::process::{Command, Output};

const OP: &str = "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>";
/// Col2Im on f16 adds through a helper the JIT provides, and pads with a fill: two functions,
/// one of which calls out.
const COL2IM_F16: &str =
    "Col2Im {image_shape = [4, 4], block_shape = [3, 3], pads = [1, 1, 1, 1]} : tensor<1x9x16xf16>";

fn relayout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the relayout binary runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = relayout(args);
    assert!(
        out.status.success(),
        "relayout {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

#[test]
fn vcode_lists_every_function_after_its_statement() {
    let text = stdout_of(&["lower", OP, "--emit", "vcode"]);
    assert!(text.starts_with("; copy 8 bytes %dst["), "{text}");
    assert!(
        text.contains("function %space_to_depth_0: "),
        "no function header:\n{text}"
    );
    assert!(text.contains("ret"), "no return:\n{text}");

    let text = stdout_of(&["lower", COL2IM_F16, "--emit", "vcode"]);
    let functions = text
        .lines()
        .filter(|l| l.starts_with("function %col2im_"))
        .count();
    let statements = stdout_of(&["lower", COL2IM_F16, "--emit", "loop"])
        .lines()
        .filter(|l| {
            let l = l.trim_start();
            l.starts_with("copy") || l.starts_with("fill") || l.starts_with("accumulate")
        })
        .count();
    assert!(statements >= 2, "expected several statements (the cells)");
    assert_eq!(functions, statements, "one function per statement:\n{text}");
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
fn asm_is_the_disassembly_of_every_function() {
    let text = stdout_of(&["lower", OP, "--emit", "asm"]);
    assert!(text.starts_with("; copy 8 bytes %dst["), "{text}");
    assert!(text.contains("function %space_to_depth_0: "), "{text}");
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
