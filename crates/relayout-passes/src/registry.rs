//! The one table of passes: name, one-line summary, constructor. Pipeline strings are read
//! against it, and `relayout --list-passes` prints it.

use crate::passes::{
    Canonicalize, Coalesce, DropUnitDims, FuseNests, Interchange, Linearize, OutputStationary,
    PairPhases, PeelDims, Reroll, SplitDims, SplitGuards, TileTransposes,
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

/// Every pass, index-map passes first, then the lowering, then loop passes.
pub static PASSES: &[PassInfo] = &[
    PassInfo {
        name: "canonicalize",
        summary: "fold constants, flatten sums, simplify floordiv/mod and guards with the dims' ranges",
        level: Level::Index,
        create: || Box::new(Canonicalize),
    },
    PassInfo {
        name: "split-dims",
        summary: "replace a dim used through floordiv/mod by its mixed-radix digits",
        level: Level::Index,
        create: || Box::new(SplitDims),
    },
    PassInfo {
        name: "drop-unit-dims",
        summary: "remove dims with one value, and dims a copy or fill does not read",
        level: Level::Index,
        create: || Box::new(DropUnitDims),
    },
    PassInfo {
        name: "split-guards",
        summary: "split guarded statements into guard-free boxes; shrink fills to what no copy overwrites",
        level: Level::Index,
        create: || Box::new(SplitGuards),
    },
    PassInfo {
        name: "peel-dims",
        summary: "last resort: split or peel dims until no floordiv, mod or guard is left",
        level: Level::Index,
        create: || Box::new(PeelDims),
    },
    PassInfo {
        name: "linearize",
        summary: "lower index maps to byte offsets over loop nests (index-map IR -> loop IR)",
        level: Level::Index,
        create: || Box::new(Linearize),
    },
    PassInfo {
        name: "output-stationary",
        summary: "sum all contributions to each output cell of consecutive accumulations with innermost reduction loops",
        level: Level::Loops,
        create: || Box::new(OutputStationary),
    },
    PassInfo {
        name: "coalesce",
        summary: "merge loops that are contiguous for every operand, and inner runs into bytes",
        level: Level::Loops,
        create: || Box::new(Coalesce),
    },
    PassInfo {
        name: "interchange",
        summary: "order loops so the innermost is unit-stride for the destination or the source",
        level: Level::Loops,
        create: || Box::new(Interchange),
    },
    PassInfo {
        name: "tile-transposes",
        summary: "strip-mine the source-contiguous loop of small-element transposes for register blocks",
        level: Level::Loops,
        create: || Box::new(TileTransposes),
    },
    PassInfo {
        name: "pair-phases",
        summary: "merge the even- and odd-element phases of sums from +0.0 into one sum over both, for interleaved vector stores",
        level: Level::Loops,
        create: || Box::new(PairPhases),
    },
    PassInfo {
        name: "fuse-nests",
        summary: "fuse consecutive statements over shared outer loops whose iterations write disjoint bytes",
        level: Level::Loops,
        create: || Box::new(FuseNests::default()),
    },
    PassInfo {
        name: "reroll",
        summary: "merge consecutive statements that are one statement shifted by a constant step into one with a loop over the steps",
        level: Level::Loops,
        create: || Box::new(Reroll),
    },
];

/// The registered pass named `name`.
pub fn find_pass(name: &str) -> Option<&'static PassInfo> {
    PASSES.iter().find(|p| p.name == name)
}
