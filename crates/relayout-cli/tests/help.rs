//! The help a new user reads first: the tool's `--help` and every subcommand's must end with
//! commands to copy, under `Examples:`.

use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_relayout"))
        .args(args)
        .output()
        .expect("the relayout binary runs");
    assert!(out.status.success(), "relayout {args:?} failed: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands, read from the tool's own help so that a new one cannot be missed.
fn subcommands() -> Vec<String> {
    let top = help(&["--help"]);
    let list = top
        .split("Commands:\n")
        .nth(1)
        .expect("the help lists the commands");
    list.lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_subcommand_has_examples() {
    let names = subcommands();
    for expected in [
        "lower",
        "demo",
        "opt",
        "conformance",
        "run",
        "bench",
        "explain",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} is missing from {names:?}"
        );
    }
    let top = help(&["--help"]);
    assert!(top.contains("\nExamples:\n  relayout "), "{top}");
    for name in &names {
        for args in [vec![name.as_str(), "--help"], vec!["help", name.as_str()]] {
            let text = help(&args);
            let examples = text
                .split("\nExamples:\n")
                .nth(1)
                .unwrap_or_else(|| panic!("relayout {args:?} has no Examples: block:\n{text}"));
            // At least one example invokes the subcommand itself.
            assert!(
                examples.contains(&format!("relayout {name}"))
                    || examples.contains(&format!("-- {name}")),
                "the examples of relayout {args:?} never run it:\n{text}"
            );
        }
    }
}

#[test]
fn lower_help_names_every_stage_and_the_disas_build() {
    let text = help(&["lower", "--help"]);
    for stage in ["lowered", "index", "loop", "clif", "vcode", "asm"] {
        assert!(text.contains(stage), "{stage} missing:\n{text}");
    }
    assert!(text.contains("--features disas"), "{text}");
}
