//! `relayout run`: an op on a .npy file. Not written yet.

use std::process::ExitCode;

#[derive(clap::Args)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> Result<ExitCode, String> {
    Err("`relayout run` is not implemented yet".into())
}
