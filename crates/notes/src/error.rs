//! The error of a notes command. A command's own failures carry the text the memory tool's
//! documentation gives for them, so a model reads what it was trained on.

/// What kind of failure a command met, for a caller that branches on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The path names nothing (or a directory where a file is needed).
    NotFound,
    /// The path (or the destination) is taken.
    AlreadyExists,
    /// The note changed under the command more often than it retries.
    Conflict,
    /// An argument breaks a rule: a path outside `/memories`, a line out of range, a text
    /// that does not occur once, an empty query.
    InvalidInput,
    /// A note or the whole tree would pass its size limit.
    TooLarge,
}

/// Why a notes command failed; nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure of the command itself. `message` is the memory tool's documented text where
    /// it documents one (as its reference SDK words it, without the `Error: ` prefix, since a
    /// tool result marks an error by itself), and a sentence naming the input otherwise.
    #[error("{message}")]
    Command {
        /// What kind of failure.
        kind: ErrorKind,
        /// The input it is about: a path as `/memories/...`, or an argument's name.
        input: String,
        /// What the tool answers.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(agent_memory_core::Error),
}

impl Error {
    /// A command failure of `kind` about `input`.
    pub(crate) fn command(kind: ErrorKind, input: impl Into<String>, message: String) -> Self {
        Error::Command {
            kind,
            input: input.into(),
            message,
        }
    }

    /// The kind of a command failure; `None` for a store failure.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            Error::Command { kind, .. } => Some(*kind),
            Error::Store(_) => None,
        }
    }

    /// The input a command failure is about.
    pub fn input(&self) -> Option<&str> {
        match self {
            Error::Command { input, .. } => Some(input),
            Error::Store(_) => None,
        }
    }
}

impl From<agent_memory_core::Error> for Error {
    fn from(error: agent_memory_core::Error) -> Self {
        match error {
            // A limit the store enforces is the caller's to fix, and its message names it.
            agent_memory_core::Error::InvalidInput { ref field, .. } => {
                let input = field.clone();
                Error::command(ErrorKind::TooLarge, input, error.to_string())
            }
            // A path that a rename would make too long or too deep.
            agent_memory_core::Error::InvalidName { ref value, .. } => {
                let input = agent_memory_core::excerpt::Excerpt::plain(value).to_string();
                Error::command(ErrorKind::InvalidInput, input, error.to_string())
            }
            other => Error::Store(other),
        }
    }
}

/// The result of a notes command.
pub type Result<T, E = Error> = std::result::Result<T, E>;
