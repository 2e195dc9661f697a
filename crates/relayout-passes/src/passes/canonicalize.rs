//! `canonicalize`: puts every expression into canonical form and simplifies it with the ranges
//! of the dims.
//!
//! What it does, per statement (see `simplify` for every rule and its precondition):
//! - folds constants and flattens sums into `sum(coef * atom) + constant`, atoms in a fixed
//!   order (dims, then `floordiv`s, then `mod`s);
//! - simplifies `floordiv` and `mod` with the dims' ranges: `(d0 * 4 + d1) floordiv 4 -> d0`
//!   and `(d0 * 4 + d1) mod 4 -> d1` when `d1` is in `[0, 4)`, nested `floordiv`s, `mod` of a
//!   `mod`, `floordiv` of a `mod`, a `mod` of a value known to lie in one period;
//! - drops guard constraints the ranges prove always true, turns a constraint on a single dim
//!   into a narrower range for that dim, and removes statements whose guard is provably false
//!   or whose domain is empty.
//!
//! What it does not do: change the number of dims or statements other than by removing
//! statements that do nothing, reorder points, or split anything (`split-dims`,
//! `split-guards` and `peel-dims` do that). A `floordiv` the ranges do not allow to simplify
//! stays: `(d0 * 4 + d1) floordiv 4` with `d1` in `[0, 5)` becomes `d0 + d1 floordiv 4`, not
//! `d0`.

use crate::pass::{impl_pass, IndexPass};
use crate::stmt::canonicalize_owned;
use crate::PassError;
use relayout_ir::Kernel;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Canonicalize;

impl IndexPass for Canonicalize {
    const NAME: &'static str = "canonicalize";

    fn run_index(&self, mut k: Kernel) -> Result<Kernel, PassError> {
        k.stmts = std::mem::take(&mut k.stmts)
            .into_iter()
            .filter_map(canonicalize_owned)
            .collect();
        Ok(k)
    }
}

impl_pass!(index Canonicalize);
