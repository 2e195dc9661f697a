//! `relayout lower OP --then OP ...`: a chain of ops composed into one kernel, as
//! `compile_chain` composes it, and the errors a chain can give on the command line.

mod support;
use support::{stderr_of_failure, stdout_of};

use relayout::ir::{DType, TensorType};
use relayout::{compile_chain, DataFormat, DepthToSpaceMode, Op};

/// DepthToSpace (CRD) between NHWC -> NCHW and NCHW -> NHWC Transposes, as exporters write it:
/// the command line prints the loop IR that `compile_chain` compiles, one statement.
#[test]
fn then_composes_the_chain_as_compile_chain_does() {
    let text = stdout_of(&[
        "lower",
        "Transpose {perm = [0, 3, 1, 2]} : tensor<1x4x6x8xf32>",
        "--then",
        r#"DepthToSpace {block_size = 2, data_format = "NCHW", mode = "CRD"}"#,
        "--then",
        "Transpose {perm = [0, 2, 3, 1]}",
        "--emit",
        "loop",
    ]);
    let ops = [
        Op::Transpose {
            perm: Some(vec![0, 3, 1, 2]),
        },
        Op::DepthToSpace {
            block_size: 2,
            data_format: DataFormat::Nchw,
            mode: DepthToSpaceMode::Crd,
        },
        Op::Transpose {
            perm: Some(vec![0, 2, 3, 1]),
        },
    ];
    let chain = compile_chain(&ops, &TensorType::new(DType::F32, [1, 4, 6, 8])).unwrap();
    assert_eq!(text, chain.stages().loops.to_string());
    assert!(
        text.starts_with("loops @transpose_then_depth_to_space_then_transpose("),
        "{text}"
    );
    assert_eq!(chain.stages().loops.stmts.len(), 1, "{text}");
}

/// The pass dumps name the chain in the lowering's header.
#[test]
fn the_dumps_name_the_chain() {
    let text = stdout_of(&[
        "lower",
        "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>",
        "--then",
        "DepthToSpace {block_size = 2}",
        "--print-after-all",
    ]);
    assert!(
        text.starts_with(
            "// -----// IR Dump After Lowering (chain SpaceToDepth then DepthToSpace) //----- //\n\
             kernel @space_to_depth_then_depth_to_space("
        ),
        "{text}"
    );
}

/// A chained op written with a type, an op invalid for the type the chain gives it, an unknown
/// op, a Col2Im anywhere, and --timings or --ir with --then: each a clear error, naming the op.
#[test]
fn chain_errors_name_the_op() {
    const S2D: &str = "SpaceToDepth {block_size = 2} : tensor<1x4x4x1xf32>";
    let typed = stderr_of_failure(&[
        "lower",
        S2D,
        "--then",
        "DepthToSpace {block_size = 2} : tensor<1x2x2x4xf32>",
    ]);
    assert!(
        typed.contains("in --then op 1") && typed.contains("leave out the ': tensor<...>'"),
        "{typed}"
    );
    let invalid = stderr_of_failure(&["lower", S2D, "--then", "DepthToSpace {block_size = 3}"]);
    assert!(
        invalid.contains(
            "op 1 of the chain (DepthToSpace) is invalid for its input tensor<1x2x2x4xf32>"
        ) && invalid.contains("[not_divisible]"),
        "{invalid}"
    );
    let unknown = stderr_of_failure(&["lower", S2D, "--then", "Bogus"]);
    assert!(
        unknown.contains("in --then op 1") && unknown.contains("[unknown_op]"),
        "{unknown}"
    );
    let col2im = stderr_of_failure(&[
        "lower",
        "Reshape {shape = [1, 4, 4]} : tensor<1x16xf32>",
        "--then",
        "Col2Im {image_shape = [3, 3], block_shape = [2, 2]}",
    ]);
    assert!(
        col2im.contains("op 1 of the chain (Col2Im) cannot be composed"),
        "{col2im}"
    );
    let timed = stderr_of_failure(&["lower", S2D, "--then", "Transpose", "--timings"]);
    assert!(timed.contains("not of a chain"), "{timed}");
    let ir = stderr_of_failure(&["lower", "--ir", "-", "--then", "Transpose"]);
    assert!(ir.contains("cannot be used with"), "{ir}");
}
