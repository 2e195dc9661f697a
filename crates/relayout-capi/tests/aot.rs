//! Ahead-of-time objects linked into C programs, checked bit-exact against the JIT: every
//! public conformance case with an output, and two large kernels that stream their stores.
//!
//! Objects that need no helper are linked into a program with nothing but the C library
//! (`cc driver.c k0.o k1.o ...`); the others (f16/bf16 Col2Im, streaming stores) into one that
//! also links librelayout_capi. The driver is tests/c/aot_driver.c; it runs `NAME` and
//! `NAME_range` cut over three pthreads, and this test compares both outputs with the JIT's.

mod support;

use relayout::conformance::{compare, find_cases, load_case, Expected};
use relayout::ir::{DType, TensorType};
use relayout::{compile, compile_aot, AotObject, Helper, Op};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use support::{build, compiler, op_text, run, scratch, Link, CRATE};

/// One kernel to compile ahead of time.
struct Job {
    name: String,
    text: String,
    op: Op,
    input: TensorType,
    bytes: Vec<u8>,
}

/// The public cases with an output whose op this build knows, then the streaming kernels.
fn jobs() -> Vec<Job> {
    let root = Path::new(CRATE).join("../../tests/conformance");
    let mut jobs = Vec::new();
    for path in find_cases(&root) {
        let case = load_case(&path).unwrap();
        let (
            Expected::Output {
                ty,
                bytes,
                tolerance,
            },
            Some(input),
        ) = (&case.expected, &case.input_bytes)
        else {
            continue;
        };
        // Ops are being added to the library; a case of an op it does not know is not ours.
        let Ok(op) = case.op() else { continue };
        // The JIT, the reference the objects are compared with, passes the case.
        let jit = compile(&op, &case.input)
            .unwrap()
            .run_to_vec(input)
            .unwrap();
        compare(ty, bytes, &jit, *tolerance).unwrap();
        jobs.push(Job {
            name: case.name.clone(),
            text: op_text(&case),
            op,
            input: case.input.clone(),
            bytes: input.clone(),
        });
    }
    // Outputs of 16 MiB with runs of a cache line or more: streaming copies and zero fills.
    for text in [
        "SpaceToDepth {block_size = 2} : tensor<1x512x512x16xf32>",
        "SpaceToBatchND {block_shape = [2, 2], paddings = [[2, 2], [2, 2]]} : tensor<1x508x508x16xf32>",
    ] {
        let spec = relayout::parse_op_spec(text).unwrap();
        let op = Op::from_attrs(&spec.name, &spec.attrs).unwrap();
        let len = spec.input.size_bytes().unwrap() as usize;
        let bytes = (0..len).map(|i| (i * 31 + i / 4093) as u8).collect();
        jobs.push(Job {
            name: format!("stream_{}", jobs.len()),
            text: text.to_string(),
            op,
            input: spec.input,
            bytes,
        });
    }
    jobs
}

/// Writes the objects, headers, inputs and `kernels.inc` of `group` into `dir`; returns the
/// object files.
fn write_group(dir: &Path, group: &[(&Job, AotObject)]) -> Vec<PathBuf> {
    let mut inc = String::new();
    let mut table = String::from("static const struct kernel kernels[] = {\n");
    let mut objects = Vec::new();
    for (job, aot) in group {
        let sym = &aot.symbol;
        let object = dir.join(format!("{sym}.o"));
        std::fs::write(&object, &aot.object).unwrap();
        std::fs::write(dir.join(format!("{sym}.h")), aot.header(&job.text)).unwrap();
        std::fs::write(dir.join(format!("{}.in", job.name)), &job.bytes).unwrap();
        objects.push(object);
        let upper = sym.to_ascii_uppercase();
        writeln!(inc, "#include \"{sym}.h\"").unwrap();
        writeln!(
            table,
            "    {{\"{}\", {sym}, {sym}_range, {upper}_INPUT_BYTES, {upper}_OUTPUT_BYTES, {upper}_OUTER}},",
            job.name
        )
        .unwrap();
    }
    table.push_str("};\n");
    std::fs::write(dir.join("kernels.inc"), inc + &table).unwrap();
    objects
}

#[test]
fn aot_objects_match_the_jit_bit_for_bit() {
    let Some(cc) = compiler("CC", "cc") else {
        eprintln!("no C compiler (cc, or $CC): skipping the ahead-of-time tests");
        return;
    };
    let jobs = jobs();
    let compiled: Vec<(&Job, AotObject)> = jobs
        .iter()
        .enumerate()
        .map(|(i, job)| {
            (
                job,
                compile_aot(&job.op, &job.input, &format!("k{i}")).unwrap(),
            )
        })
        .collect();

    // Which kernels need librelayout_capi: exactly the f16 and bf16 Col2Im kernels (their
    // adds), and the large kernels that stream.
    let mut runtime_names = Vec::new();
    for (job, aot) in &compiled {
        let half_adds = matches!(job.op, Op::Col2Im { .. })
            && matches!(job.input.dtype, DType::F16 | DType::BF16);
        let streams = job.name.starts_with("stream_");
        assert_eq!(
            !aot.helpers.is_empty(),
            half_adds || streams,
            "{}: helpers {:?}",
            job.name,
            aot.helpers
        );
        if streams {
            assert!(
                aot.helpers.contains(&Helper::StreamCopy)
                    || aot.helpers.contains(&Helper::StreamZero)
            );
            assert!(aot.helpers.contains(&Helper::StoreFence), "{}", job.name);
        }
        if !aot.helpers.is_empty() {
            runtime_names.push(job.name.clone());
        }
    }
    let helpers: Vec<Helper> = compiled
        .iter()
        .flat_map(|(_, a)| a.helpers.clone())
        .collect();
    for h in [Helper::F16Add, Helper::StreamCopy, Helper::StreamZero] {
        assert!(helpers.contains(&h), "no kernel calls {h:?}");
    }

    let driver = Path::new(CRATE).join("tests/c/aot_driver.c");
    let mut checked = 0;
    for (group, link) in [("alone", Link::Alone), ("runtime", Link::Shared)] {
        let members: Vec<(&Job, AotObject)> = compiled
            .iter()
            .filter(|(_, a)| a.helpers.is_empty() == matches!(link, Link::Alone))
            .map(|(j, a)| (*j, a.clone()))
            .collect();
        let dir = scratch(&format!("aot_{group}"));
        let objects = write_group(&dir, &members);
        let exe = dir.join("driver");
        let mut sources = vec![driver.clone()];
        sources.extend(objects);
        let include = format!("-I{}", dir.display());
        build(
            &cc,
            &sources,
            &["-std=c11", "-O1", "-pthread", &include],
            link,
            &exe,
        );
        let out = run(&exe, &[dir.to_str().unwrap()]);
        assert!(
            out.contains(&format!("{} kernels run, 0 failures", members.len())),
            "{out}"
        );
        for (job, _) in &members {
            let jit = compile(&job.op, &job.input)
                .unwrap()
                .run_to_vec(&job.bytes)
                .unwrap();
            for kind in ["whole", "range"] {
                let got = std::fs::read(dir.join(format!("{}.{kind}", job.name))).unwrap();
                assert!(
                    got == jit,
                    "{} ({kind}): the object's output differs from the JIT's",
                    job.name
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, jobs.len());
    eprintln!(
        "ahead-of-time: {checked} kernels bit-exact with the JIT, {} of them linked with \
         librelayout_capi: {runtime_names:?}",
        runtime_names.len()
    );
}

#[test]
fn a_symbol_must_be_a_c_identifier() {
    let op = Op::SpaceToDepth {
        block_size: 2,
        data_format: relayout::DataFormat::Nhwc,
    };
    let input = TensorType::new(DType::F32, [1, 4, 4, 1]);
    for bad in ["", "2fast", "a-b", "a b", "é"] {
        let err = compile_aot(&op, &input, bad).unwrap_err();
        assert!(err.to_string().contains("C identifier"), "{bad:?}: {err}");
    }
    // An invalid op is refused with its category before anything is compiled.
    let bad_op = TensorType::new(DType::F32, [1, 5, 4, 1]);
    let err = compile_aot(&op, &bad_op, "s2d").unwrap_err();
    assert_eq!(err.category(), Some("not_divisible"));
}
