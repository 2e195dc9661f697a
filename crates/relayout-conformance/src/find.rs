//! Finding case files.

use std::path::{Path, PathBuf};

/// Every `*.json` file under `dir`, recursively, sorted. Anything else (FORMAT.md) is skipped,
/// and so is a directory that cannot be read: a missing case then shows up as a missing name
/// in the caller's count, not as a crash.
pub fn find_cases(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}
