//! The registry, pipeline strings, the pass manager and the public convenience API.

mod common;

use relayout_ir::{parse_kernel, AnyKernel, Kernel};
use relayout_passes::{
    default_loop_pipeline, default_pipeline, find_pass, lower_to_loops, optimize_index, Level,
    PassError, PassManager, Pipeline, DEFAULT_PIPELINE, PASSES,
};

const S2D: &str = "kernel @space_to_depth(%src: tensor<1x4x6x3xf32>) -> (%dst: tensor<1x2x3x12xf32>) {
  copy %dst[d0, d1, d2, d3] = %src[d0, d1 * 2 + d3 floordiv 6, d2 * 2 + d3 floordiv 3 mod 2, d3 mod 3]
      for d0 in 0 to 1, d1 in 0 to 2, d2 in 0 to 3, d3 in 0 to 12
}";

fn s2d() -> Kernel {
    parse_kernel(S2D).unwrap()
}

#[test]
fn registry_is_consistent() {
    for (i, p) in PASSES.iter().enumerate() {
        let pass = (p.create)();
        assert_eq!(pass.name(), p.name);
        assert_eq!(pass.input_level(), p.level);
        assert!(p.name.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
        assert!(!p.summary.is_empty() && !p.summary.contains('\n'));
        assert!(
            PASSES[..i].iter().all(|q| q.name != p.name),
            "{} twice",
            p.name
        );
        assert_eq!(find_pass(p.name).map(|q| q.name), Some(p.name));
    }
    assert_eq!(find_pass("split-dims").unwrap().camel_name(), "SplitDims");
    assert_eq!(
        find_pass("drop-unit-dims").unwrap().camel_name(),
        "DropUnitDims"
    );
}

#[test]
fn pipelines_print_back_to_themselves() {
    for text in [
        "canonicalize,split-dims,drop-unit-dims",
        DEFAULT_PIPELINE,
        "linearize,coalesce",
        "",
    ] {
        assert_eq!(Pipeline::parse(text).unwrap().to_string(), text);
    }
    assert_eq!(default_pipeline().to_string(), DEFAULT_PIPELINE);
    assert_eq!(
        DEFAULT_PIPELINE,
        "canonicalize,split-dims,split-guards,peel-dims,drop-unit-dims,linearize,output-stationary,coalesce,interchange,coalesce,tile-transposes,pair-phases,fuse-nests,reroll,long-runs-first,group-alike"
    );
    let spaced = Pipeline::parse(" canonicalize , split-dims ").unwrap();
    assert_eq!(spaced.to_string(), "canonicalize,split-dims");
    assert_eq!(
        default_pipeline().index_prefix().to_string(),
        "canonicalize,split-dims,split-guards,peel-dims,drop-unit-dims"
    );
    assert_eq!(
        default_loop_pipeline().to_string(),
        "output-stationary,coalesce,interchange,coalesce,tile-transposes,pair-phases,fuse-nests,reroll,long-runs-first,group-alike"
    );
}

#[test]
fn unknown_pass_lists_the_known_ones() {
    let e = Pipeline::parse("canonicalize,split-dimz").unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, PassError::UnknownPass { ref name, .. } if name == "split-dimz"));
    for p in PASSES {
        assert!(text.contains(p.name), "{text}");
    }
    assert!(matches!(
        Pipeline::parse("canonicalize,,coalesce"),
        Err(PassError::EmptyPassName { position: 1, .. })
    ));
}

#[test]
fn passes_reject_the_wrong_level() {
    let loops = AnyKernel::Loops(lower_to_loops(&s2d()).unwrap());
    let index = AnyKernel::Index(s2d());
    for p in PASSES {
        let (wrong, given) = match p.level {
            Level::Index => (loops.clone(), Level::Loops),
            Level::Loops => (index.clone(), Level::Index),
        };
        let e = (p.create)().run(wrong).unwrap_err();
        assert_eq!(
            e,
            PassError::WrongLevel {
                pass: p.name,
                expected: p.level,
                given
            }
        );
        assert!(e.to_string().contains(p.name));
    }
}

#[test]
fn print_after_all_uses_mlir_headers() {
    let run = PassManager::new(default_pipeline()).run_collect(AnyKernel::Index(s2d()));
    assert!(run.result.is_ok());
    assert_eq!(run.dumps.len(), default_pipeline().passes().len());
    assert_eq!(
        run.dumps[1].header(),
        "// -----// IR Dump After SplitDims (split-dims) //----- //"
    );
    let text: String = run.dumps.iter().map(|d| format!("{d}\n")).collect();
    insta::assert_snapshot!("print_after_all_space_to_depth", text);
    // The printed dumps parse back: the headers are comments.
    for d in &run.dumps {
        let printed = d.to_string();
        assert_eq!(relayout_ir::parse_any(&printed).unwrap(), d.ir);
    }
}

#[test]
fn callback_sees_every_pass() {
    let mut seen = Vec::new();
    PassManager::new(default_pipeline())
        .run_with(AnyKernel::Index(s2d()), &mut |info, _| seen.push(info.name))
        .unwrap();
    let names: Vec<&str> = default_pipeline().passes().iter().map(|p| p.name).collect();
    assert_eq!(seen, names);
}

/// An access out of bounds: `d0 + 1` reaches 4 in a tensor of 4 elements.
const OUT_OF_BOUNDS: &str = "kernel @bad(%src: tensor<4xf32>) -> (%dst: tensor<4xf32>) {
  copy %dst[d0] = %src[d0 + 1]
      for d0 in 0 to 4
}";

#[test]
fn verification_names_the_failing_pass() {
    let bad = AnyKernel::Index(parse_kernel(OUT_OF_BOUNDS).unwrap());
    let pm = PassManager::new(Pipeline::parse("canonicalize,drop-unit-dims").unwrap());
    let e = pm.clone().verify_each(true).run(bad.clone()).unwrap_err();
    assert!(matches!(e, PassError::InvalidInput { .. }), "{e}");
    let e = pm
        .clone()
        .verify_each(true)
        .verify_input(false)
        .run(bad.clone())
        .unwrap_err();
    assert!(
        matches!(
            e,
            PassError::Verification {
                pass: "canonicalize",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("after pass `canonicalize`"), "{e}");
    // With verification off, nothing checks.
    assert!(pm.verify_each(false).run(bad).is_ok());
}

#[test]
fn dumps_include_the_ir_that_failed() {
    let bad = AnyKernel::Index(parse_kernel(OUT_OF_BOUNDS).unwrap());
    let run = PassManager::new(Pipeline::parse("canonicalize,drop-unit-dims").unwrap())
        .verify_each(true)
        .verify_input(false)
        .run_collect(bad);
    assert!(run.result.is_err());
    assert_eq!(run.dumps.len(), 1);
    assert_eq!(run.dumps[0].pass, "canonicalize");
}

#[test]
fn convenience_api() {
    let k = s2d();
    let opt = optimize_index(&k).unwrap();
    assert!(!opt.to_string().contains("floordiv"));
    let loops = lower_to_loops(&k).unwrap();
    assert_eq!(loops.stmts.len(), 1);
    assert_eq!(loops.stmts[0].bytes, 24);
    common::check_preserves(DEFAULT_PIPELINE, &k);
    // The index pipeline then linearize gives what lower_to_loops gives.
    let pm = PassManager::new(Pipeline::parse("linearize,coalesce,interchange,coalesce").unwrap());
    assert_eq!(pm.run_to_loops(&opt).unwrap(), loops);
    // Asking a pipeline for the wrong output level is an error, not a panic.
    let e = PassManager::new(Pipeline::parse("canonicalize").unwrap())
        .run_to_loops(&k)
        .unwrap_err();
    assert!(matches!(e, PassError::WrongOutputLevel { .. }));
}

#[test]
fn passes_are_deterministic() {
    for p in PASSES.iter().filter(|p| p.level == Level::Index) {
        let a = (p.create)().run(AnyKernel::Index(s2d()));
        let b = (p.create)().run(AnyKernel::Index(s2d()));
        assert_eq!(a, b, "{}", p.name);
    }
}

#[test]
fn peel_dims_reports_its_budget() {
    // d0 * 39997 mod 40000 changes quotient at almost every one of the 40000 values of d0:
    // more pieces than the budget of peel-dims allows.
    let text = "kernel @big(%src: tensor<40000xui8>) -> (%dst: tensor<40000xui8>) {
  copy %dst[d0] = %src[d0 * 39997 mod 40000]
      for d0 in 0 to 40000
}";
    let k = parse_kernel(text).unwrap();
    let e = PassManager::new(Pipeline::parse("peel-dims").unwrap())
        .run(AnyKernel::Index(k))
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("peel-dims") && msg.contains("statement 0"),
        "{msg}"
    );
}

#[test]
fn linearize_reports_accesses_outside_their_tensor() {
    // For a kernel in bounds every offset and stride fits in i64. These do not verify; given
    // unverified, linearize reports the access with a typed error instead of wrapping around.
    const HUGE_EMPTY: &str = "tensor<0x4611686018427387904x4611686018427387904xf32>";
    const P62: i64 = 1 << 62;
    for (src, access, lo, what) in [
        (HUGE_EMPTY, "%src[0, d0]", 0, "has no element"),
        (
            "tensor<4x1xf32>",
            "%src[d0 + 4611686018427387904, 0]",
            0,
            "offset at the first point",
        ),
        (
            "tensor<4x1xf32>",
            "%src[d0 * 4611686018427387904, 0]",
            0,
            "stride of d0",
        ),
        (
            "tensor<4x1xf32>",
            "%src[d0 * 4, 0]",
            P62,
            "overflows i64 at the first point",
        ),
    ] {
        let text = format!(
            "kernel @oob(%src: {src}) -> (%dst: tensor<2xf32>) {{
  copy %dst[d0 - {lo}] = {access}
      for d0 in {lo} to {}
}}",
            lo + 2
        );
        let k = AnyKernel::Index(parse_kernel(&text).unwrap());
        let pm = PassManager::new(Pipeline::parse("linearize").unwrap());
        let e = pm.clone().verify_each(false).run(k.clone()).unwrap_err();
        assert!(
            matches!(
                e,
                PassError::OutOfBounds {
                    pass: "linearize",
                    ..
                }
            ),
            "{text}\n{e}"
        );
        assert!(e.to_string().contains(what), "{text}\n{e}");
        let e = pm.verify_each(true).run(k).unwrap_err();
        assert!(matches!(e, PassError::InvalidInput { .. }), "{text}\n{e}");
    }
}
