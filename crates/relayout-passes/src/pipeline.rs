//! Pipelines: a list of registered passes, written as a string (`canonicalize,split-dims`)
//! that prints back to itself.

use crate::registry::{find_pass, PassInfo, PASSES};
use crate::PassError;
use std::fmt;

/// The default pipeline: every index-map pass, the lowering, and the loop passes.
///
/// `split-dims` runs before `split-guards` because SpaceToBatch's guards are written on the
/// digits of the batch dim; `peel-dims` is the last resort for whatever floordiv, mod or guard
/// is left; `coalesce` runs once before `interchange` (which reads the merged loops) and once
/// after (which merges what the new order made adjacent); `fuse-nests` runs on the
/// final loops of every statement, and `reroll`, `long-runs-first` and `group-alike` after it, on
/// the final bands (`group-alike` last, which `long-runs-first` would undo).
pub const DEFAULT_PIPELINE: &str = "canonicalize,split-dims,split-guards,peel-dims,\
drop-unit-dims,linearize,output-stationary,coalesce,interchange,coalesce,tile-transposes,pair-phases,fuse-nests,reroll,long-runs-first,group-alike";

/// An ordered list of passes.
#[derive(Clone, Debug)]
pub struct Pipeline {
    passes: Vec<&'static PassInfo>,
}

impl PartialEq for Pipeline {
    fn eq(&self, other: &Pipeline) -> bool {
        self.passes.len() == other.passes.len()
            && self
                .passes
                .iter()
                .zip(&other.passes)
                .all(|(a, b)| a.name == b.name)
    }
}

impl Eq for Pipeline {}

impl Pipeline {
    /// Reads a comma-separated list of pass names. Whitespace around names is allowed; the
    /// empty string is the empty pipeline. An unknown name is an error that lists the known
    /// ones.
    pub fn parse(text: &str) -> Result<Pipeline, PassError> {
        if text.trim().is_empty() {
            return Ok(Pipeline { passes: Vec::new() });
        }
        let passes = text
            .split(',')
            .enumerate()
            .map(|(i, name)| {
                let name = name.trim();
                if name.is_empty() {
                    return Err(PassError::EmptyPassName {
                        pipeline: text.to_string(),
                        position: i,
                    });
                }
                find_pass(name).ok_or_else(|| PassError::UnknownPass {
                    name: name.to_string(),
                    pipeline: text.to_string(),
                    known: PASSES.iter().map(|p| p.name).collect::<Vec<_>>().join(", "),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Pipeline { passes })
    }

    /// The passes in order.
    pub fn passes(&self) -> &[&'static PassInfo] {
        &self.passes
    }

    /// The passes before the first one that does not run on index-map IR: the index-map part
    /// of a pipeline.
    pub fn index_prefix(&self) -> Pipeline {
        Pipeline {
            passes: self
                .passes
                .iter()
                .copied()
                .take_while(|p| p.level == crate::Level::Index && p.output == crate::Level::Index)
                .collect(),
        }
    }
}

impl Pipeline {
    /// The passes after [`Pipeline::index_prefix`]: the lowering and the loop passes.
    pub fn after_index_prefix(&self) -> Pipeline {
        Pipeline {
            passes: self.passes[self.index_prefix().passes.len()..].to_vec(),
        }
    }
}

impl fmt::Display for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.passes.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(p.name)?;
        }
        Ok(())
    }
}

/// The default pipeline ([`DEFAULT_PIPELINE`]).
pub fn default_pipeline() -> Pipeline {
    Pipeline::parse(DEFAULT_PIPELINE).expect("the default pipeline names registered passes")
}

/// The loop-level part of the default pipeline: its passes after `linearize`, in order. This
/// is what runs on loop IR when no pipeline is given (`relayout opt` on loop IR text), since
/// the index-map passes and the lowering cannot take it.
pub fn default_loop_pipeline() -> Pipeline {
    Pipeline {
        passes: default_pipeline()
            .after_index_prefix()
            .passes
            .into_iter()
            .filter(|p| p.level == crate::Level::Loops)
            .collect(),
    }
}
