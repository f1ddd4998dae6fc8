//! The one error type of this crate.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong. Messages are lowercase and name the offending input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed or refused the call.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
    /// A file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file or directory could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A memory file is not what its format says.
    #[error("{path}: line {line}, column {column}: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong.
        reason: String,
    },
    /// A field of a memory file has a value its format does not allow.
    #[error("{path}: field {field}: {reason}")]
    Field {
        /// The file.
        path: PathBuf,
        /// The field, as a path (`facts[2].type`).
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A path would leave the memory root (a `..` component, an absolute path, a symlink
    /// pointing outside).
    #[error("{path} is outside the memory root {root}")]
    OutsideRoot {
        /// The offending path.
        path: PathBuf,
        /// The memory root.
        root: PathBuf,
    },
    /// A memory file is larger than any file of the format can reasonably be.
    #[error("{path} is {bytes} bytes, over the {limit}-byte limit of a memory file")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// [`MAX_FILE_BYTES`](crate::MAX_FILE_BYTES).
        limit: u64,
    },
    /// A run the caller named does not exist.
    #[error("run {0:?} not found")]
    RunNotFound(String),
    /// Data could not be encoded as JSON.
    #[error("cannot encode {what} as JSON: {source}")]
    Encode {
        /// What was being encoded.
        what: String,
        /// The encoder's error.
        source: serde_json::Error,
    },
}
