//! One pass per file, each named after its pipeline name.

mod canonicalize;
mod coalesce;
mod drop_unit_dims;
mod fuse_nests;
mod interchange;
mod linearize;
mod output_stationary;
mod peel_dims;
mod split_dims;
mod split_guards;
mod tile_transposes;

pub use canonicalize::Canonicalize;
pub use coalesce::Coalesce;
pub use drop_unit_dims::DropUnitDims;
pub use fuse_nests::FuseNests;
pub use interchange::Interchange;
pub use linearize::Linearize;
pub use output_stationary::OutputStationary;
pub use peel_dims::PeelDims;
pub use split_dims::SplitDims;
pub use split_guards::SplitGuards;
pub use tile_transposes::TileTransposes;
