//! `relayout bench`. Not written yet.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct BenchArgs {}

pub fn bench(_args: BenchArgs) -> Result<ExitCode, String> {
    Err("`relayout bench` is not implemented yet".into())
}
