//! Pass tests as files: each `tests/passes/*.ir` starts with `// RUN: <pipeline>` and holds
//! IR text of either level. The pipeline runs on it (verifying after every pass), the result
//! is checked to compute the same bytes as the input on random data, and the printed result
//! (or the error) is snapshot-tested.

mod common;

use relayout_ir::parse_any;
use relayout_passes::{PassManager, Pipeline};

/// The pipeline of a `// RUN: <pipeline>` first line.
fn run_line(text: &str) -> &str {
    text.lines()
        .next()
        .and_then(|l| l.strip_prefix("// RUN:"))
        .expect("the first line is `// RUN: <pipeline>`")
        .trim()
}

#[test]
fn pass_files() {
    insta::glob!("passes/*.ir", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let pipeline = Pipeline::parse(run_line(&text)).unwrap();
        let input = parse_any(&text).unwrap_or_else(|e| panic!("{}", e.render(&text)));
        let pm = PassManager::new(pipeline).verify_each(true);
        let output = match pm.run(input.clone()) {
            Ok(out) => {
                check_same_bytes(&input, &out);
                common::show(&out)
            }
            Err(e) => format!("error: {e}\n"),
        };
        insta::assert_snapshot!(output);
    });
}

/// The input and the output compute the same bytes from the same random data.
fn check_same_bytes(input: &relayout_ir::AnyKernel, output: &relayout_ir::AnyKernel) {
    let (src_ty, dst_ty) = match input {
        relayout_ir::AnyKernel::Index(k) => (&k.src, &k.dst),
        relayout_ir::AnyKernel::Loops(k) => (&k.src, &k.dst),
    };
    let src = common::random_bytes(src_ty.size_bytes().unwrap() as usize, 7);
    let dst0 = common::random_bytes(dst_ty.size_bytes().unwrap() as usize, 8);
    assert_eq!(
        common::run_any(input, &src, &dst0),
        common::run_any(output, &src, &dst0),
        "the pipeline changed the result:\n{}",
        common::show(output)
    );
}
