//! The one table of passes: name, one-line summary, constructor. Pipeline strings are read
//! against it, and `relayout --list-passes` prints it.

use crate::pass::{IndexPass, LoopPass};
use crate::passes::{
    Canonicalize, Coalesce, DropUnitDims, FuseNests, GroupAlike, Interchange, Linearize,
    LongRunsFirst, OutputStationary, PairPhases, PeelDims, Reroll, SplitDims, SplitGuards,
    TileTransposes,
};
use crate::{Level, Pass};

/// One registered pass.
pub struct PassInfo {
    /// The kebab-case name used in pipeline strings.
    pub name: &'static str,
    /// What the pass does, in one line.
    pub summary: &'static str,
    /// The level of IR the pass accepts.
    pub level: Level,
    /// The level of IR the pass produces (differs from `level` only for the lowering).
    pub output: Level,
    /// Makes the pass (passes hold no state, so this is cheap).
    pub create: fn() -> Box<dyn Pass>,
}

impl PassInfo {
    /// The name in CamelCase, as MLIR's IR dumps print it: `split-dims` -> `SplitDims`.
    pub fn camel_name(&self) -> String {
        self.name
            .split('-')
            .map(|w| {
                let mut c = w.chars();
                match c.next() {
                    Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                    None => String::new(),
                }
            })
            .collect()
    }
}

impl std::fmt::Debug for PassInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// One entry of [`PASSES`]: the name and levels come from the pass's own declaration (its
/// `NAME` and which trait it implements), so each is written once.
macro_rules! registered {
    (index $t:ident, $summary:expr) => {
        registered!(@entry $t, <$t as IndexPass>::NAME, Index, Index, $summary)
    };
    (loops $t:ident, $summary:expr) => {
        registered!(@entry $t, <$t as LoopPass>::NAME, Loops, Loops, $summary)
    };
    (lowering $t:ident, $summary:expr) => {
        registered!(@entry $t, <$t>::NAME, Index, Loops, $summary)
    };
    (@entry $t:ident, $name:expr, $level:ident, $output:ident, $summary:expr) => {
        PassInfo {
            name: $name,
            summary: $summary,
            level: Level::$level,
            output: Level::$output,
            create: || Box::new(<$t>::default()),
        }
    };
}

/// Every pass, index-map passes first, then the lowering, then loop passes.
pub static PASSES: &[PassInfo] = &[
    registered!(index Canonicalize, "fold constants, flatten sums, simplify floordiv/mod and guards with the dims' ranges"),
    registered!(index SplitDims, "replace a dim used through floordiv/mod by its mixed-radix digits"),
    registered!(index DropUnitDims, "remove dims with one value, and dims a copy or fill does not read"),
    registered!(index SplitGuards, "split guarded statements into guard-free boxes; shrink fills to what no copy overwrites"),
    registered!(index PeelDims, "last resort: split or peel dims until no floordiv, mod or guard is left"),
    registered!(lowering Linearize, "lower index maps to byte offsets over loop nests (index-map IR -> loop IR)"),
    registered!(loops OutputStationary, "sum all contributions to each output cell of consecutive accumulations with innermost reduction loops"),
    registered!(loops Coalesce, "merge loops that are contiguous for every operand, and inner runs into bytes"),
    registered!(loops Interchange, "order loops so the innermost is unit-stride for the destination or the source"),
    registered!(loops TileTransposes, "strip-mine the source-contiguous loop of small-element transposes for register blocks"),
    registered!(loops PairPhases, "merge the even- and odd-element phases of sums from +0.0 into one sum over both, for interleaved vector stores"),
    registered!(loops FuseNests, "fuse consecutive statements over shared outer loops whose iterations write disjoint bytes"),
    registered!(loops Reroll, "merge statements that are one statement moved by a constant step (consecutive, or moved past statements they commute with) into one with a loop over the steps"),
    registered!(loops LongRunsFirst, "inside each band, move the copies and fills with the longest runs in front of shorter ones they commute with, so lines are first written in order"),
    registered!(loops GroupAlike, "inside each band, move each member next to the last one before it that differs only in offsets and one count, where they commute, so they share a body in codegen"),
];

/// The registered pass named `name`.
pub fn find_pass(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
