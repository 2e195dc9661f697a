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
use crate::stmt::{canonicalize_owned, exprs, substitute};
use crate::PassError;
use relayout_ir::{Action, AffineExpr, Kernel, Stmt};

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct DropUnitDims;

impl IndexPass for DropUnitDims {
    const NAME: &'static str = "drop-unit-dims";

    fn run_index(&self, mut k: Kernel) -> Result<Kernel, PassError> {
        k.stmts = std::mem::take(&mut k.stmts)
            .into_iter()
            .filter_map(drop_dims)
            .collect();
        Ok(k)
    }
}

impl_pass!(index DropUnitDims);

/// The statement without its droppable dims, or `None` when it does nothing.
fn drop_dims(stmt: Stmt) -> Option<Stmt> {
    if stmt.domain.iter().any(|r| r.is_empty()) {
        return None;
    }
    let repeatable = matches!(stmt.action, Action::Copy { .. } | Action::Fill { .. });
    let n = stmt.domain.len();
    let mut read = vec![false; n];
    if repeatable {
        for e in exprs(&stmt) {
            e.walk(&mut |x| {
                if let AffineExpr::Dim(i) = *x {
                    if let Some(r) = read.get_mut(i) {
                        *r = true;
                    }
                }
            });
        }
    }
    let dropped: Vec<bool> = (0..n)
        .map(|d| stmt.domain[d].len() == 1 || (repeatable && !read[d]))
        .collect();
    if !dropped.contains(&true) {
        return Some(stmt);
    }
    // All the dropped dims are fixed in one substitution, each to its first value, the others
    // renumbered down past them: the same statement as fixing them one by one from the last,
    // without rebuilding it once per dim.
    let mut renumbered = Vec::with_capacity(n);
    let mut kept = 0;
    for &gone in &dropped {
        renumbered.push(kept);
        kept += usize::from(!gone);
    }
    let domain = (0..n)
        .filter(|&d| !dropped[d])
        .map(|d| stmt.domain[d])
        .collect();
    let s = substitute(&stmt, domain, &|i| match dropped.get(i) {
        Some(true) => AffineExpr::Const(stmt.domain[i].lo),
        Some(false) => AffineExpr::Dim(renumbered[i]),
        // A dim beyond the domain (which the verifier rejects) moves down past them all.
        None => AffineExpr::Dim(i - (n - kept)),
    });
    canonicalize_owned(s)
}
