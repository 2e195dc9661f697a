//! `include/relayout.h` is written by hand; this test checks that it declares exactly the
//! `extern "C"` functions of `src/lib.rs`, each with the same parameter and return types
//! (Rust types mapped to their C spelling by one table), and the two opaque typedefs.

use std::collections::BTreeMap;

const RUST: &str = include_str!("../src/lib.rs");
const HEADER: &str = include_str!("../include/relayout.h");

/// A function's signature in C spelling, without spaces: return type, then parameter types.
type Signature = (String, Vec<String>);

/// The C spelling of a Rust type of the API.
fn c_type(rust: &str) -> String {
    let rust: String = rust.split_whitespace().collect::<Vec<_>>().join(" ");
    let c = match rust.as_str() {
        "*const c_char" => "const char*",
        "*mut c_char" => "char*",
        "*const *const c_char" => "const char *const *",
        "*const relayout_kernel" => "const relayout_kernel_t*",
        "*mut relayout_kernel" => "relayout_kernel_t*",
        "*const relayout_error" => "const relayout_error_t*",
        "*mut relayout_error" => "relayout_error_t*",
        "*mut *mut relayout_error" => "relayout_error_t**",
        "*const std::ffi::c_void" => "const void*",
        "*mut std::ffi::c_void" => "void*",
        "usize" => "size_t",
        "i64" => "int64_t",
        "c_int" => "int",
        "" => "void",
        other => panic!("no C spelling for the Rust type `{other}`: add it to c_type"),
    };
    c.replace(' ', "")
}

/// The text between the parenthesis at `open` and its match, and the rest after it.
fn parenthesised(text: &str, open: usize) -> (&str, &str) {
    let mut depth = 0;
    for (i, ch) in text[open..].char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (&text[open + 1..open + i], &text[open + i + 1..]);
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses");
}

/// Every `extern "C" fn` of the crate.
fn rust_functions() -> BTreeMap<String, Signature> {
    let mut out = BTreeMap::new();
    for (at, _) in RUST.match_indices("extern \"C\" fn ") {
        let rest = &RUST[at + "extern \"C\" fn ".len()..];
        let open = rest.find('(').unwrap();
        let name = rest[..open].trim().to_string();
        let (params, after) = parenthesised(rest, open);
        let params = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| c_type(p.split_once(':').expect("name: type").1.trim()))
            .collect();
        let ret = after[..after.find('{').unwrap()].trim();
        let ret = c_type(ret.strip_prefix("->").unwrap_or(ret).trim());
        out.insert(name, (ret, params));
    }
    out
}

/// The header without its comments.
fn header_code() -> String {
    let mut code = String::new();
    let mut rest = HEADER;
    while let Some(start) = rest.find("/*") {
        code.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("unclosed comment");
        rest = &rest[start + end + 2..];
    }
    code.push_str(rest);
    code
}

/// A C declaration `TYPE NAME` (or `TYPE *NAME`) split into the type without spaces and the
/// name.
fn split_declarator(decl: &str) -> (String, String) {
    let decl = decl.trim();
    let name_start = decl
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    (
        decl[..name_start].replace(' ', ""),
        decl[name_start..].to_string(),
    )
}

/// Every function declared in the header.
fn header_functions() -> BTreeMap<String, Signature> {
    let code = header_code();
    let mut out = BTreeMap::new();
    for stmt in code.split(';') {
        let stmt = stmt
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ")
            .replace("extern \"C\" {", "")
            .replace('}', "");
        let Some(open) = stmt.find('(') else { continue };
        if stmt.trim_start().starts_with("typedef") {
            continue;
        }
        let (ret, name) = split_declarator(&stmt[..open]);
        let (params, _) = parenthesised(&stmt, open);
        let params = params
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty() && *p != "void")
            .map(|p| split_declarator(p).0)
            .collect();
        out.insert(name, (ret, params));
    }
    out
}

#[test]
fn the_header_declares_every_function_with_its_types() {
    let rust = rust_functions();
    let c = header_functions();
    assert!(
        rust.len() >= 14,
        "found only {} functions in src/lib.rs",
        rust.len()
    );
    for (name, sig) in &rust {
        match c.get(name) {
            None => panic!("relayout.h does not declare {name}"),
            Some(decl) => assert_eq!(decl, sig, "{name}: the header's types differ from Rust's"),
        }
    }
    for name in c.keys() {
        assert!(
            rust.contains_key(name),
            "relayout.h declares {name}, which src/lib.rs does not define"
        );
    }
}

#[test]
fn the_header_has_the_opaque_typedefs_and_a_guard() {
    let code = header_code()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for typedef in [
        "typedef struct relayout_kernel relayout_kernel_t;",
        "typedef struct relayout_error relayout_error_t;",
    ] {
        assert!(code.contains(typedef), "missing `{typedef}`");
    }
    assert!(code.contains("#ifndef RELAYOUT_H") && code.contains("extern \"C\" {"));
}

#[test]
fn every_function_documents_itself() {
    // Each declaration is preceded by a comment, which states what it owns and borrows.
    let lines: Vec<&str> = HEADER.lines().collect();
    for name in header_functions().keys() {
        // The declaration's line: code, not comment, that names the function.
        let at = lines
            .iter()
            .position(|l| {
                let l = l.trim_start();
                !l.starts_with('*') && !l.starts_with("/*") && l.contains(&format!("{name}("))
            })
            .unwrap_or_else(|| panic!("{name} not found"));
        let previous = lines[at - 1].trim_end();
        assert!(previous.ends_with("*/"), "{name} has no comment above it");
    }
}
