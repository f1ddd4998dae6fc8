//! [`Error`]: everything that can go wrong in this crate, each naming its input.

use std::fmt;

/// A memory token that could not be resolved, and where it was.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MissingKey {
    /// The key inside the token (`merchant_email` for `${merchant_email}`).
    pub key: String,
    /// The path of the string holding the token: its JSON path (`$.credentials[0].email`),
    /// or in a trail the call's place, tool and JSON path
    /// (`trail[1].recording.android-phone[0].signIn.email`).
    pub path: String,
    /// In a replay, the step (its index in [`crate::Replayer::outline`]).
    pub step: Option<usize>,
    /// In a replay, the tool whose parameters hold the token.
    pub tool: Option<String>,
}

impl MissingKey {
    /// `key` missing at `path`.
    pub fn new(key: impl Into<String>, path: impl Into<String>) -> Self {
        MissingKey {
            key: key.into(),
            path: path.into(),
            step: None,
            tool: None,
        }
    }
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
    /// A token that starts with `args.` but is not a dotted path (`args.name`,
    /// `args.name.field`): tokens are never expressions.
    #[error(
        "malformed args token {{{{{token}}}}} at {path}: tokens are dotted paths only (`args.name` or `args.name.field`), never expressions"
    )]
    MalformedToken {
        /// The token's body, between its delimiters.
        token: String,
        /// Where it is.
        path: String,
    },
    /// Trail arguments that do not bind to the trail's declarations.
    #[error("trail args: {message}")]
    Args {
        /// What is wrong, naming the argument.
        message: String,
    },
    /// A tool log document that cannot be read.
    #[error("{file}:{line}: {message}")]
    Log {
        /// The file (or `tool log` for a single document).
        file: String,
        /// The 1-based line the document (or the JSON error) is on.
        line: usize,
        /// What is wrong, naming the field (never a value).
        message: String,
    },
    /// Memory writes reported to a replay that are not what a replay reads.
    #[error("memory writes: {message}")]
    Writes {
        /// What is wrong, naming the field (never a value).
        message: String,
    },
    /// A replay was asked for no device while the trail holds recordings: every one of them
    /// would be dropped and the agent would drive every step.
    #[error(
        "no device classifier given, but the trail holds recordings; name the device (`android-phone`, `ios-iphone`, ...) so that its recordings replay"
    )]
    NoDevice,
    /// A replay was told of more completed dispatches than the trail makes.
    #[error("the replay is over: the trail makes {dispatches} dispatch(es) and all have completed")]
    ReplayFinished {
        /// How many dispatches the trail makes.
        dispatches: usize,
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
