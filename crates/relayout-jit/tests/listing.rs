//! Listings of the generated machine code: the kernel's one function, after its schedule;
//! refused for kernels that do not verify; and the disassembly only in builds that have a
//! disassembler.

use relayout_ir::{DType, Loop, LoopAction, LoopKernel, LoopStmt, TensorType};
use relayout_jit::{machine_code_text, JitError, Listing, HAS_DISASSEMBLER};

/// A zero fill of 8 f16 elements, then `dst[i] += src[i]`: the accumulate calls the f16 helper.
fn fill_then_accumulate_f16() -> LoopKernel {
    let stmt = |action, bytes| LoopStmt {
        action,
        bytes,
        src_offset: 0,
        dst_offset: 0,
        loops: vec![Loop {
            extent: 8 * 2 / bytes,
            // A fill does not read the source, and the verifier wants that to show.
            src_stride: if action.is_fill() { 0 } else { bytes as i64 },
            dst_stride: bytes as i64,
        }],
        window: None,
    };
    LoopKernel {
        bands: Vec::new(),
        name: "fill_acc".into(),
        src: TensorType::new(DType::F16, [8]),
        dst: TensorType::new(DType::F16, [8]),
        stmts: vec![
            stmt(LoopAction::ZERO_FILL, 16),
            stmt(LoopAction::Accumulate, 2),
        ],
    }
}

#[test]
fn vcode_lists_the_schedule_then_the_kernel_function() {
    let text = machine_code_text(&fill_then_accumulate_f16(), Listing::VCode).unwrap();
    let fill = text
        .find("; entry 0:\n;   fill 16 bytes")
        .expect("the fill statement");
    let acc = text
        .find("; entry 1:\n;   accumulate 2 bytes")
        .expect("the accumulate statement");
    let f = text.find("function %fill_acc: ").expect("the function");
    assert!(fill < acc && acc < f, "out of order:\n{text}");
    assert_eq!(text.matches("function %").count(), 1, "{text}");
    assert_eq!(text.matches("ret").count(), 1, "{text}");
    // The helper call is left to the linker: the listing names its symbol.
    assert!(text[f..].contains("relayout_f16_add"), "{text}");
}

#[test]
fn unverified_kernels_are_not_listed() {
    let mut k = fill_then_accumulate_f16();
    k.stmts[1].loops[0].extent = 9;
    for listing in [Listing::VCode, Listing::Asm] {
        let err = machine_code_text(&k, listing).unwrap_err();
        // Without a disassembler, Asm is refused before the kernel is looked at.
        if listing == Listing::VCode || HAS_DISASSEMBLER {
            assert!(matches!(err, JitError::Verify { .. }), "{err}");
        }
    }
}

#[cfg(not(feature = "disas"))]
#[test]
fn asm_needs_the_disas_feature() {
    const { assert!(!HAS_DISASSEMBLER) };
    let err = machine_code_text(&fill_then_accumulate_f16(), Listing::Asm).unwrap_err();
    assert_eq!(err, JitError::NoDisassembler);
    assert!(err.to_string().contains("`disas` feature"), "{err}");
}

#[cfg(feature = "disas")]
#[test]
fn asm_is_capstones_disassembly() {
    assert!(HAS_DISASSEMBLER);
    let text = machine_code_text(&fill_then_accumulate_f16(), Listing::Asm).unwrap();
    assert!(text.contains("function %fill_acc: "), "{text}");
    assert!(text.contains("block0: ; offset 0x0"), "{text}");
    assert_eq!(text.matches("retq").count(), 1, "{text}");
    assert!(
        text.contains("; reloc_external") && text.contains("%relayout_f16_add"),
        "{text}"
    );
}
