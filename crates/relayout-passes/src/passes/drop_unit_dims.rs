//! `drop-unit-dims`: removes dims that do not contribute a loop.
//!
//! What it does, per statement:
//! - a dim whose range holds one value is replaced by that constant and removed;
//! - in a `copy` or a `fill`, a dim that no map and no guard reads is fixed to its first value
//!   and removed. Reason: every value of it rewrites the same elements with the same values,
//!   and the last write to each element (the one that counts) reads the same source element
//!   with or without the repetition;
//! - a statement with an empty range is removed (it does nothing);
//! - the statements it changes are re-canonicalized, to fold the constants it substituted.
//!
//! What it does not do: drop an unread dim of an `accumulate` (each value of it adds again),
//! merge dims, or reorder anything.

use crate::pass::{impl_pass, IndexPass};
use crate::stmt::{canonicalize_stmt, exprs, fix_dim};
use crate::PassError;
use relayout_ir::{Action, Kernel, Stmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct DropUnitDims;

impl IndexPass for DropUnitDims {
    const NAME: &'static str = "drop-unit-dims";

    fn run_index(&self, k: &Kernel) -> Result<Kernel, PassError> {
        Ok(k.with_stmts(k.stmts.iter().filter_map(drop_dims).collect()))
    }
}

impl_pass!(index DropUnitDims);

/// The statement without its droppable dims, or `None` when it does nothing.
fn drop_dims(stmt: &Stmt) -> Option<Stmt> {
    if stmt.domain.iter().any(|r| r.is_empty()) {
        return None;
    }
    let repeatable = matches!(stmt.action, Action::Copy { .. } | Action::Fill { .. });
    let mut s = stmt.clone();
    // From the last dim down, so that fixing one does not renumber those still to visit.
    for d in (0..s.domain.len()).rev() {
        let unit = s.domain[d].len() == 1;
        let unread = repeatable && !exprs(&s).any(|e| e.dims_used().contains(&d));
        if unit || unread {
            s = fix_dim(&s, d, s.domain[d].lo);
        }
    }
    if s == *stmt {
        return Some(s);
    }
    canonicalize_stmt(&s)
}
