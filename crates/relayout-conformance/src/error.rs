//! Why a case file could not be loaded.

use std::fmt;

/// What was wrong with a case file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LoadErrorKind {
    /// The file could not be read.
    Io,
    /// The file is not JSON.
    Json,
    /// The JSON does not have the shape of a case: a missing key, a value of the wrong kind.
    Schema,
    /// A `dtype` that is none of the 15 of the format.
    UnknownDType,
    /// `len(data) != prod(shape)`.
    DataLength,
    /// An element that is not a value of its dtype (out of range, not a number, ...).
    Data,
}

impl fmt::Display for LoadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LoadErrorKind::Io => "cannot read",
            LoadErrorKind::Json => "not JSON",
            LoadErrorKind::Schema => "not a case",
            LoadErrorKind::UnknownDType => "unknown dtype",
            LoadErrorKind::DataLength => "wrong data length",
            LoadErrorKind::Data => "bad data",
        })
    }
}

/// A case file that could not be loaded, with the file's name.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("{file}: {kind}: {message}")]
pub struct LoadError {
    /// The file, as given.
    pub file: String,
    /// What kind of problem.
    pub kind: LoadErrorKind,
    /// The details.
    pub message: String,
}

impl LoadError {
    /// An error of `kind` in `file`.
    pub fn new(file: &str, kind: LoadErrorKind, message: impl Into<String>) -> LoadError {
        LoadError {
            file: file.to_string(),
            kind,
            message: message.into(),
        }
    }
}
