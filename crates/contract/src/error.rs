//! The contract's one error: a [`kind`](ErrorKind) a program branches on, the message a
//! person reads, and the input it is about. Every operation fails with it, every door shows
//! it (the command line's `error:` line and `--json` document, the MCP tool error, the
//! language packages' exception classes, one per kind, generated from [`ErrorKind::ALL`]),
//! and `schemas/error.json` enumerates its kinds.
//!
//! An error of a memory or store crate becomes one through `From` (so `?` converts it),
//! classified by the first cause that says what kind it is; [`ResultExt::context`] puts what
//! was being done in front of the message, as `anyhow`'s context does, keeping the kind.

use agent_memory_core::excerpt::{EXCERPT_CHARS, Excerpt, bounded};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What kind of failure an error is: a stable word a program can branch on. Each package's
/// exception classes are generated from these variants and their documentation (through
/// `schemas/error.json`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// A command used wrongly (an unknown flag, a missing argument).
    Usage,
    /// An input the contract refuses: a missing field, a bad name, a value out of range.
    InvalidInput,
    /// What the input names does not exist: a partition, session, run, note or database.
    NotFound,
    /// The write conflicts with what is stored (another configuration, another event); nothing
    /// was changed.
    Conflict,
    /// Stored data that is not what the store wrote.
    Corrupt,
    /// A file could not be read or written.
    Io,
    /// The database failed or refused: a file that is not ours, a lost connection, a lock held
    /// too long.
    Database,
    /// Anything else: a failure no input explains.
    #[serde(rename = "error")]
    Other,
}

impl ErrorKind {
    /// Every kind, in the order the packages list their exception classes.
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::Usage,
        ErrorKind::InvalidInput,
        ErrorKind::NotFound,
        ErrorKind::Conflict,
        ErrorKind::Corrupt,
        ErrorKind::Io,
        ErrorKind::Database,
        ErrorKind::Other,
    ];

    /// Its word on the wire: `invalid_input`, `not_found`, ..., `error` for [`ErrorKind::Other`].
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Io => "io",
            ErrorKind::Database => "database",
            ErrorKind::Other => "error",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What went wrong: the error every operation fails with, and the one JSON object it becomes
/// (`{"kind", "message", "input"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ErrorBody")]
pub struct Error {
    /// A stable word a program can branch on: `usage`, `invalid_input`, `not_found`,
    /// `conflict`, `corrupt`, `io`, `database` or `error`.
    kind: ErrorKind,
    /// The message a person reads; the same text the command prints without `--json`.
    message: String,
    /// The input the error is about (a file, a field, a name), when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<String>,
}

/// A result whose error is the contract's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error of `kind` with `message`, about no input in particular. The message is
    /// [`bounded`]: every error quotes its inputs cut where it is made, and this holds for a
    /// message another library wrote too.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: bounded_string(message.into()),
            input: None,
        }
    }

    /// An `invalid_input` error about `input`.
    pub fn invalid(input: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::InvalidInput, message).about(input)
    }

    /// A `not_found` error about `input`.
    pub fn not_found(input: impl Into<String>, message: impl Into<String>) -> Self {
        Error::new(ErrorKind::NotFound, message).about(input)
    }

    /// The same error, about `input` (cut as [`Excerpt`] cuts a long one).
    pub fn about(mut self, input: impl Into<String>) -> Self {
        self.input = Some(excerpt(input.into()));
        self
    }

    /// The same error as one of `kind` about `input`.
    pub fn with_kind(mut self, kind: ErrorKind, input: impl Into<String>) -> Self {
        self.kind = kind;
        self.about(input)
    }

    /// Its kind.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message a person reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The input it is about, when one is known.
    pub fn input(&self) -> Option<&str> {
        self.input.as_deref()
    }

    /// The same error with `what` (what was being done) in front of its message, as
    /// `what: message`, unless the message already starts with it.
    pub fn context(mut self, what: impl std::fmt::Display) -> Self {
        let what = what.to_string();
        if !self.message.starts_with(&what) {
            self.message = bounded_string(format!("{what}: {}", self.message));
        }
        self
    }

    /// An error of `kind` from any error: its message is the error and its causes on one line
    /// ([`one_line`]).
    pub fn from_std(kind: ErrorKind, error: &(dyn std::error::Error + 'static)) -> Self {
        Error::new(kind, one_line(error))
    }

    /// The error `error` is or holds, classified by the first of its causes that says what
    /// kind it is (an error of a memory or store crate, a file's I/O error); any other error
    /// is [`ErrorKind::Other`]. The message is the whole chain on one line.
    pub fn classify(error: &(dyn std::error::Error + 'static)) -> Self {
        let message = one_line(error);
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(current) = cause {
            if let Some(found) = classify_one(current) {
                return Error { message, ..found };
            }
            cause = current.source();
        }
        Error::new(ErrorKind::Other, message)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// `message` [`bounded`].
fn bounded_string(message: String) -> String {
    match bounded(&message) {
        std::borrow::Cow::Borrowed(_) => message,
        std::borrow::Cow::Owned(cut) => cut,
    }
}

/// `input` cut as [`Excerpt`] cuts a long one; an input already cut (its excerpt and the
/// length after it) is left as it is, so an input cut twice is cut once.
fn excerpt(input: String) -> String {
    if Excerpt::plain(&input).within(EXCERPT_CHARS + 64).is_cut() {
        return Excerpt::plain(&input).to_string();
    }
    input
}

/// The error and its causes on one line, "what failed: why", each cause once: an error that
/// already ends with its cause's message (as many `thiserror` messages do) does not repeat it.
/// The line is [`bounded`], however long a message a cause wrote.
pub fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        let text = current.to_string();
        if !line.ends_with(&text) {
            if !line.is_empty() {
                line.push_str(": ");
            }
            line.push_str(&text);
        }
        cause = current.source();
    }
    bounded_string(line)
}

/// The kind and input `cause` itself says, if it is an error this crate knows.
fn classify_one(cause: &(dyn std::error::Error + 'static)) -> Option<Error> {
    let kind = |kind, input: Option<String>| {
        Some(Error {
            kind,
            message: String::new(),
            input,
        })
    };
    if let Some(error) = cause.downcast_ref::<Error>() {
        return Some(error.clone());
    }
    // A notes command's own failure: its message is the memory tool's text, and its kind says
    // what a program may branch on.
    if let Some(agent_memory_notes::Error::Command { kind: k, input, .. }) = cause.downcast_ref() {
        use agent_memory_notes::ErrorKind as N;
        let k = match k {
            N::NotFound => ErrorKind::NotFound,
            N::AlreadyExists | N::Conflict => ErrorKind::Conflict,
            _ => ErrorKind::InvalidInput,
        };
        return kind(k, Some(input.clone()));
    }
    // A feature crate's store error is transparent: its source skips the store's own error,
    // so look inside it here.
    if let Some(core) = store_error_of(cause) {
        let (k, input) = classify_core(core);
        return kind(k, input);
    }
    if let Some(input) = trajectory_input_of(cause) {
        return kind(ErrorKind::InvalidInput, Some(input));
    }
    if let Some((k, input)) = browser_kind_of(cause)
        .or_else(|| recording_kind_of(cause))
        .or_else(|| turns_kind_of(cause))
    {
        return kind(k, input);
    }
    if let Some(core) = cause.downcast_ref::<agent_memory_core::Error>() {
        let (k, input) = classify_core(core);
        return kind(k, input);
    }
    if cause.downcast_ref::<agent_memory_sqlite::Error>().is_some()
        || cause
            .downcast_ref::<agent_memory_postgres::Error>()
            .is_some()
    {
        // The caller knows the database's path and names it as the input.
        return kind(ErrorKind::Database, None);
    }
    if cause.downcast_ref::<std::io::Error>().is_some() {
        return kind(ErrorKind::Io, None);
    }
    None
}

/// The input a procedural-memory error of the caller's making is about (a recall's unknown
/// fingerprint field, a weight, the configuration), if `cause` is one.
fn trajectory_input_of(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    use agent_memory_trajectory::Error as E;
    Some(match cause.downcast_ref::<E>()? {
        E::MissingFields { .. } | E::UnknownFields { .. } => "fingerprint".to_owned(),
        E::InvalidWeight { name, .. } => format!("{name}_weight"),
        E::UnknownWeight(name) => name.clone(),
        E::MissingFeature(_) | E::InvalidFeatures(_) => "features".to_owned(),
        E::InvalidConfig(_) => "configuration".to_owned(),
        _ => return None,
    })
}

/// A file that is not there is not found; any other failure to read one is I/O.
fn io_kind(error: &std::io::Error) -> ErrorKind {
    match error.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        _ => ErrorKind::Io,
    }
}

/// The kind of a browser memory's error and the input it is about, if `cause` is one.
fn browser_kind_of(
    cause: &(dyn std::error::Error + 'static),
) -> Option<(ErrorKind, Option<String>)> {
    use agent_memory_browser::Error as E;
    let path = |p: &std::path::Path| Some(p.display().to_string());
    Some(match cause.downcast_ref::<E>()? {
        E::RunNotFound(run) => (ErrorKind::NotFound, Some(run.clone())),
        E::Read { path: p, source } => (io_kind(source), path(p)),
        E::Write { path: p, .. } => (ErrorKind::Io, path(p)),
        E::Format { path: p, .. }
        | E::Field { path: p, .. }
        | E::OutsideRoot { path: p, .. }
        | E::TooLarge { path: p, .. } => (ErrorKind::InvalidInput, path(p)),
        _ => return None,
    })
}

/// The kind of a recording's error and the input it is about, if `cause` is one: what a
/// trail, a log or a replay's input holds is the caller's to fix.
fn recording_kind_of(
    cause: &(dyn std::error::Error + 'static),
) -> Option<(ErrorKind, Option<String>)> {
    use agent_memory_recording::Error as E;
    let invalid = |input: &str| (ErrorKind::InvalidInput, Some(input.to_owned()));
    Some(match cause.downcast_ref::<E>()? {
        E::Io { file, .. } => (ErrorKind::Io, Some(file.clone())),
        E::Parse { file, .. } | E::Log { file, .. } => invalid(file),
        E::Unresolved { .. } => invalid("memory"),
        E::TooDeep { path, .. } | E::MalformedToken { path, .. } => invalid(path),
        E::Parameters { tool, .. } => invalid(tool),
        E::Args { .. } => invalid("args"),
        E::Writes { .. } | E::ReplayFinished { .. } => invalid("writes"),
        E::NoDevice => invalid("device"),
        E::NoObjective { .. } => invalid("objectives"),
        _ => return None,
    })
}

/// The kind of a turn memory's error and the input it is about, if `cause` is one: events or
/// a log that do not form a session are the caller's to fix; a stored event that does not
/// decode is corrupt.
fn turns_kind_of(cause: &(dyn std::error::Error + 'static)) -> Option<(ErrorKind, Option<String>)> {
    use agent_memory_turns::Error as E;
    let path = |p: &std::path::Path| Some(p.display().to_string());
    Some(match cause.downcast_ref::<E>()? {
        E::InvalidConfig { .. } => (ErrorKind::InvalidInput, Some("configuration".to_owned())),
        E::InvalidSessionFile { session, .. } => (ErrorKind::InvalidInput, Some(session.clone())),
        E::CorruptLine { path: p, .. } | E::Import { path: p, .. } => {
            (ErrorKind::InvalidInput, path(p))
        }
        E::Inconsistent { session, .. } => (ErrorKind::InvalidInput, Some(session.clone())),
        E::Unstarted { .. } => (ErrorKind::InvalidInput, None),
        E::CorruptEvent { session, .. } => (ErrorKind::Corrupt, Some(session.clone())),
        E::Compaction { session, .. } => (ErrorKind::InvalidInput, Some(session.clone())),
        E::Io {
            path: p, source, ..
        } => (io_kind(source), path(p)),
        E::Unsupported { .. } => (ErrorKind::InvalidInput, None),
        // The scope's word only: the text that looks like a secret is never an error's input.
        E::SecretInMemory { scope, .. } => (ErrorKind::InvalidInput, Some(scope.to_string())),
        _ => return None,
    })
}

/// The store error inside a feature crate's `Store` variant, if `cause` is one.
fn store_error_of<'e>(
    cause: &'e (dyn std::error::Error + 'static),
) -> Option<&'e agent_memory_core::Error> {
    if let Some(agent_memory_browser::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_recording::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_trajectory::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_turns::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    if let Some(agent_memory_notes::Error::Store(core)) = cause.downcast_ref() {
        return Some(core);
    }
    None
}

fn classify_core(error: &agent_memory_core::Error) -> (ErrorKind, Option<String>) {
    use agent_memory_core::Error as E;
    match error {
        E::InvalidName { value, .. } => (ErrorKind::InvalidInput, Some(value.clone())),
        E::InvalidInput { field, .. } => (ErrorKind::InvalidInput, Some(field.clone())),
        E::NotFound { key, .. } => (ErrorKind::NotFound, Some(key.clone())),
        E::Conflict { key, .. } => (ErrorKind::Conflict, Some(key.clone())),
        E::Corrupt { location, .. } => (ErrorKind::Corrupt, Some(location.clone())),
        _ => (ErrorKind::Database, None),
    }
}

/// `From` for the errors of the crates below the contract: `?` classifies them.
macro_rules! classified {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for Error {
            fn from(error: $error) -> Self {
                Error::classify(&error)
            }
        }
    )*};
}

classified!(
    agent_memory_core::Error,
    agent_memory_trajectory::Error,
    agent_memory_browser::Error,
    agent_memory_recording::Error,
    agent_memory_turns::Error,
    agent_memory_notes::Error,
    agent_memory_sqlite::Error,
    agent_memory_postgres::Error,
    std::io::Error,
    serde_json::Error,
);

/// What was being done, in front of an error's message (`anyhow`'s `context`, for the
/// contract's [`Error`]).
pub trait ResultExt<T> {
    /// On error, `what: message`, keeping the kind and input.
    fn context(self, what: impl std::fmt::Display) -> Result<T>;

    /// [`ResultExt::context`] with the text made only on error.
    fn with_context<D: std::fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T>;
}

impl<T, E: Into<Error>> ResultExt<T> for std::result::Result<T, E> {
    fn context(self, what: impl std::fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(what))
    }

    fn with_context<D: std::fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.map_err(|e| e.into().context(what()))
    }
}

impl<T> ResultExt<T> for Option<T> {
    fn context(self, what: impl std::fmt::Display) -> Result<T> {
        self.ok_or_else(|| Error::new(ErrorKind::Other, what.to_string()))
    }

    fn with_context<D: std::fmt::Display>(self, what: impl FnOnce() -> D) -> Result<T> {
        self.ok_or_else(|| Error::new(ErrorKind::Other, what().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_word() {
        for kind in ErrorKind::ALL {
            let word = serde_json::to_value(kind).expect("JSON");
            assert_eq!(word, kind.as_str(), "{kind:?}");
        }
        assert_eq!(ErrorKind::ALL.len(), 8);
    }

    #[test]
    fn causes_join_on_one_line_each_once() {
        #[derive(Debug)]
        struct Outer(std::io::Error, &'static str);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.1)
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let repeated = Outer(io(), "trail file t.yaml: no such file");
        assert_eq!(one_line(&repeated), "trail file t.yaml: no such file");
        let distinct = Outer(io(), "cannot read t.yaml");
        assert_eq!(one_line(&distinct), "cannot read t.yaml: no such file");
        // The I/O error inside makes it an `io` error.
        assert_eq!(Error::classify(&distinct).kind(), ErrorKind::Io);
    }

    #[test]
    fn context_keeps_the_kind_and_input() {
        let failed: Result<()> = Err(Error::not_found("run-1", "run \"run-1\" not found"));
        let error = failed.context("resuming").expect_err("failed");
        assert_eq!(error.kind(), ErrorKind::NotFound);
        assert_eq!(error.input(), Some("run-1"));
        assert_eq!(error.message(), "resuming: run \"run-1\" not found");
        let json = serde_json::to_value(&error).expect("JSON");
        assert_eq!(
            json,
            serde_json::json!({"kind": "not_found", "message": "resuming: run \"run-1\" not found", "input": "run-1"})
        );
    }
}
