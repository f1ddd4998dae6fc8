//! [`Error`]: everything that can go wrong in this crate, each naming its input.

use std::fmt;

/// A memory token that could not be resolved, and where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissingKey {
    /// The key inside the token (`merchant_email` for `${merchant_email}`).
    pub key: String,
    /// The JSON path of the string holding the token, e.g. `$.credentials[0].email`.
    pub path: String,
}

impl fmt::Display for MissingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} at {}", self.key, self.path)
    }
}

fn list(missing: &[MissingKey]) -> String {
    missing
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why an operation of this crate failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A trail file is not valid YAML or not a valid trail.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        /// The file (or the name the caller gave the text).
        file: String,
        /// 1-based line; 0 when the parser gave no position.
        line: usize,
        /// 1-based column; 0 when the parser gave no position.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A trail could not be written as YAML. The parser refuses what the writer cannot
    /// express, so a trail that was read always writes back; this reports the rest.
    #[error("cannot write the trail as YAML: {message}")]
    Encode {
        /// What the YAML writer reported.
        message: String,
    },
    /// A trail could not be read from or written to its file.
    #[error("trail file {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// Memory tokens that name no key, all of them, with their paths.
    #[error("unresolved memory keys: {}", list(.missing))]
    Unresolved {
        /// Every token that could not be resolved.
        missing: Vec<MissingKey>,
    },
    /// A JSON value nests deeper than this crate walks.
    #[error("value nested deeper than {limit} levels at {path}")]
    TooDeep {
        /// Where the limit was reached.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// Tool parameters that are not valid JSON, or not representable in YAML or JSON.
    #[error("parameters of tool {tool:?}: {message}")]
    Parameters {
        /// The tool.
        tool: String,
        /// What is wrong.
        message: String,
    },
    /// Recording generation was given logs but no step to put them in.
    #[error("{logs} tool log(s) but no objective to attach them to")]
    NoObjective {
        /// How many logs.
        logs: usize,
    },
    /// A store failed.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
