//! The printed CLIF, and Cranelift's verifier on the functions of many kernels.

use cranelift_codegen::settings;
use relayout_codegen::{clif_text, text_target_config, translate_stmt, CodegenError, TextImports};
use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};

fn kernel(dtype: DType, action: LoopAction, bytes: u64, loops: Vec<Loop>) -> LoopKernel {
    LoopKernel {
        bands: Vec::new(),
        name: "k".into(),
        src: TensorType::new(dtype, [1 << 20]),
        dst: TensorType::new(dtype, [1 << 20]),
        stmts: vec![LoopStmt {
            action,
            bytes,
            src_offset: 0,
            dst_offset: 0,
            loops,
            window: None,
        }],
    }
}

fn lp(extent: u64, src_stride: i64, dst_stride: i64) -> Loop {
    Loop {
        extent,
        src_stride,
        dst_stride,
    }
}

#[test]
fn clif_text_prints_the_kernel_function_after_its_schedule() {
    let mut k = kernel(
        DType::F16,
        LoopAction::Accumulate,
        6,
        vec![lp(4, 6, 8), lp(3, 48, 2)],
    );
    k.stmts.push(LoopStmt {
        action: LoopAction::Copy,
        bytes: 1 << 16,
        src_offset: 16,
        dst_offset: 0,
        loops: vec![],
        window: None,
    });
    let text = clif_text(&k).unwrap();
    // One function, with the kernel signature (an entry argument before start and end).
    assert_eq!(text.matches("function %").count(), 1, "{text}");
    assert!(
        text.contains("function %k(i64, i64, i64, i64, i64) system_v {"),
        "{text}"
    );
    assert!(text.contains("%relayout_f16_add"), "{text}");
    assert!(text.contains("%Memcpy"), "{text}");
    // The schedule first: each statement under its entry, with what codegen made of it.
    let entry0 = text
        .find("; entry 0:\n;   accumulate 6 bytes")
        .expect("entry 0");
    let entry1 = text
        .find("; entry 1:\n;   copy 65536 bytes")
        .expect("entry 1");
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(";   codegen: "))
        .collect();
    assert_eq!(notes.len(), 2, "{text}");
    assert!(
        entry0 < entry1 && entry1 < text.find("function %").unwrap(),
        "{text}"
    );
    // Stable: the same kernel prints the same text.
    assert_eq!(clif_text(&k).unwrap(), text);
}

#[test]
fn generated_functions_pass_the_cranelift_verifier() {
    let flags = settings::Flags::new(settings::builder());
    let loop_sets = [
        vec![],
        vec![lp(0, 4, 4)],
        vec![lp(1, 4, 4)],
        vec![lp(7, 4, 4)],
        vec![lp(9, -48, 0), lp(5, 0, 16)],
        vec![lp(3, 1 << 40, 1 << 33), lp(6, 16, -16)],
        vec![lp(2, 2, 2), lp(3, 3, 3), lp(4, 4, 4), lp(5, 5, 5)],
    ];
    for dtype in DType::ALL {
        for action in [
            LoopAction::Copy,
            LoopAction::ZERO_FILL,
            LoopAction::Accumulate,
        ] {
            for elems in [1u64, 3, 8, 16, 17, 100, 1000] {
                for loops in &loop_sets {
                    let k = kernel(dtype, action, elems * dtype.size(), loops.clone());
                    let func =
                        translate_stmt(&k, 0, text_target_config(), &mut TextImports).unwrap();
                    if let Err(errors) = cranelift_codegen::verify_function(&func, &flags) {
                        panic!(
                            "{k}\n{}",
                            cranelift_codegen::print_errors::pretty_verifier_error(
                                &func, None, errors
                            )
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn malformed_statements_are_errors() {
    let k = kernel(DType::F32, LoopAction::Copy, 6, vec![]);
    assert!(matches!(
        clif_text(&k),
        Err(CodegenError::BadRun {
            stmt: 0,
            bytes: 6,
            size: 4,
            ..
        })
    ));
    let k = kernel(DType::F32, LoopAction::Copy, 0, vec![]);
    assert!(matches!(clif_text(&k), Err(CodegenError::BadRun { .. })));
    let err = translate_stmt(&k, 3, text_target_config(), &mut TextImports).unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel @k has 1 statements, so statement 3 does not exist"
    );
}

/// A statement that streams (8 MiB of output or more, whole cache lines) moves its whole
/// nest with one helper call: the loops are laid out in a stack slot (count, destination and
/// source strides per loop, outermost first) and the function has no loop of its own, only
/// the check of the `start..end` range it was given. A zero fill passes source strides of 0.
#[test]
fn streaming_statements_call_the_helper_once_per_nest() {
    let mut k = kernel(
        DType::F32,
        LoopAction::Copy,
        256,
        vec![lp(8, 1 << 20, 1 << 19), lp(16, 512, 1024), lp(4, 256, 256)],
    );
    k.src = TensorType::new(DType::F32, [4 << 20]);
    k.dst = TensorType::new(DType::F32, [4 << 20]);
    let flags = settings::Flags::new(settings::builder());
    for (action, helper, src_strides) in [
        (
            LoopAction::Copy,
            "%relayout_stream_copy_nest",
            [1 << 20, 512, 256],
        ),
        (
            LoopAction::ZERO_FILL,
            "%relayout_stream_zero_nest",
            [0, 0, 0],
        ),
    ] {
        k.stmts[0].action = action;
        let func = translate_stmt(&k, 0, text_target_config(), &mut TextImports).unwrap();
        cranelift_codegen::verify_function(&func, &flags).unwrap();
        let text = func.display().to_string();
        let calls: Vec<&str> = text.lines().filter(|l| l.contains("call fn0(")).collect();
        assert_eq!(calls.len(), 1, "{text}");
        assert!(text.contains(&format!("fn0 = {helper}")), "{text}");
        assert!(text.contains("explicit_slot 72"), "{text}");
        // One conditional branch: the range check; no loop.
        assert_eq!(text.matches("brif").count(), 1, "{text}");
        // The inner loops' words, as constants stored into the slot.
        for (word, value) in [
            (32, 1024),
            (40, src_strides[1]),
            (48, 4),
            (56, 256),
            (64, src_strides[2]),
        ] {
            let stored = text.lines().any(|l| {
                l.contains("store notrap")
                    && l.contains(&format!("+{word} "))
                    && l.ends_with(&format!("= {value}"))
            });
            assert!(stored, "word {word} = {value}:\n{text}");
        }
    }
}

/// A band member's constants (here a fill's pattern vector) are made inside the band's
/// loops, where the member's nest starts: made before them, they were live across every other
/// member's loops, which cost the register allocator work for nothing.
#[test]
fn band_members_make_their_constants_inside_the_band() {
    let text = "loops @k(%src: tensor<64x64xf32>) -> (%dst: tensor<64x96xf32>) {
  fused for i0 in 0 to 64 {
    fill 64 bytes %dst[0 + 384 * i0] = -0.5
        for i0 in 0 to 64
    copy 256 bytes %dst[64 + 384 * i0] = %src[0 + 256 * i0]
        for i0 in 0 to 64
    fill 64 bytes %dst[320 + 384 * i0] = 0
        for i0 in 0 to 64
  }
}
";
    let k = relayout_ir::parse_loop_kernel(text).unwrap();
    assert_eq!(k.bands.len(), 1, "{k}");
    let clif = clif_text(&k).unwrap();
    let function = &clif[clif.find("function %").expect("a function")..];
    // The band's loop: its header compares the index with the end of the range.
    let header = function.find("icmp ult").expect("the band's loop header");
    // Both fills' patterns (the zero one too) are vector constants.
    let constants: Vec<usize> = function
        .match_indices("vconst.i8x16")
        .map(|(at, _)| at)
        .collect();
    assert_eq!(constants.len(), 2, "{function}");
    for at in constants {
        assert!(
            at > header,
            "a constant made before the band's loop:\n{function}"
        );
    }
}
