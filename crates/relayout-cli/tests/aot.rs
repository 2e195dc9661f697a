//! `relayout aot`: the object and header it writes, a C program linked with the object alone
//! (when a C compiler exists), and its errors. The bit-exact comparison of objects with the
//! JIT on every conformance case is crates/relayout-capi/tests/aot.rs.

mod support;
use support::relayout;

use std::path::PathBuf;
use std::process::Command;

fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-aot");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const PROGRAM: &str = r#"
#include "s2d.h"
#include <stdio.h>
#include <string.h>

int main(void) {
    float src[16] = {1, 2, 5, 6, 3, 4, 7, 8, 9, 10, 13, 14, 11, 12, 15, 16}, dst[16], dst2[16];
    s2d(src, dst);
    for (uint64_t i = 0; i < S2D_OUTER; i++) s2d_range(src, dst2, i, i + 1);
    for (int i = 0; i < 16; i++)
        if (dst[i] != (float)(i + 1) || dst2[i] != dst[i]) return 1;
    printf("%s: ok, %d bytes\n", S2D_OP, (int)S2D_OUTPUT_BYTES);
    return 0;
}
"#;

#[test]
fn writes_an_object_and_a_header_that_link_alone() {
    let dir = scratch();
    let (object, header) = (dir.join("s2d.o"), dir.join("s2d.h"));
    let op = "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>";
    let out = relayout(&[
        "aot",
        op,
        "--symbol",
        "s2d",
        "-o",
        object.to_str().unwrap(),
        "--header",
        header.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(stdout.contains("needs no runtime library"), "{stdout}");
    let h = std::fs::read_to_string(&header).unwrap();
    for line in [
        "void s2d(const void *src, void *dst);",
        "void s2d_range(const void *src, void *dst, uint64_t start, uint64_t end);",
        "#define S2D_INPUT_BYTES UINT64_C(64)",
        "#define S2D_OUTER UINT64_C(2)",
        "#define S2D_NEEDS_RUNTIME 0",
        r#"#define S2D_OP "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>""#,
    ] {
        assert!(h.contains(line), "{line} is not in\n{h}");
    }
    let bytes = std::fs::read(&object).unwrap();
    if cfg!(target_os = "linux") {
        assert_eq!(&bytes[..4], b"\x7fELF");
    }

    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if !Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("no C compiler (cc, or $CC): skipping the link of the object");
        return;
    }
    let prog = dir.join("prog.c");
    std::fs::write(&prog, PROGRAM).unwrap();
    let exe = dir.join("prog");
    let built = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I"])
        .arg(&dir)
        .arg(&prog)
        .arg(&object)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
    let ran = Command::new(&exe).output().unwrap();
    assert!(ran.status.success(), "{ran:?}");
    assert!(String::from_utf8_lossy(&ran.stdout).contains(": ok, 64 bytes"));
}

#[test]
fn says_when_the_runtime_library_is_needed() {
    let dir = scratch();
    let object = dir.join("c2i.o");
    let out = relayout(&[
        "aot",
        "Col2Im {image_shape = [5, 5], block_shape = [2, 2]} : tensor<1x4x16xf16>",
        "--symbol",
        "c2i",
        "-o",
        object.to_str().unwrap(),
        "--header",
        dir.join("c2i.h").to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("relayout_f16_add") && stdout.contains("librelayout_capi"),
        "{stdout}"
    );
    let h = std::fs::read_to_string(dir.join("c2i.h")).unwrap();
    assert!(
        h.contains("#define C2I_NEEDS_RUNTIME 1") && h.contains("must also link librelayout_capi")
    );
}

#[test]
fn refuses_bad_symbols_and_ops_with_one_line() {
    let object = scratch().join("bad.o");
    for (args, needle) in [
        (
            vec![
                "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>",
                "--symbol",
                "2x",
            ],
            "C identifier",
        ),
        (
            vec![
                "SpaceToDepth {block_size = 2} : tensor<1x5x4x1xf32>",
                "--symbol",
                "s",
            ],
            "not_divisible",
        ),
        (
            vec![
                "SpaceToDepth {block_size 2} : tensor<1xf32>",
                "--symbol",
                "s",
            ],
            "column",
        ),
    ] {
        let mut all = vec!["aot"];
        all.extend(args);
        all.extend(["-o", object.to_str().unwrap()]);
        let out = relayout(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.lines().count() == 1,
            "{stderr}"
        );
        assert!(stderr.contains(needle), "{stderr}");
    }
}
