//! The error every store trait returns, and the conventions for reporting failures
//! without `memory-core` knowing which backend is behind a trait.
//!
//! - A missing record that the caller named is [`Error::NotFound`]; a lookup that may
//!   legitimately find nothing returns `Ok(None)` instead.
//! - A write that contradicts what the store holds (a compare-and-set that lost, a
//!   duplicate id) is [`Error::Conflict`]; the store is unchanged.
//! - Input that breaks a rule of the domain is [`Error::InvalidInput`] or
//!   [`Error::InvalidName`], naming the field and the rule.
//! - Stored data that cannot be read back is [`Error::Corrupt`].
//! - Anything the backend itself reports (I/O, SQL, locking) is [`Error::Backend`], with the
//!   backend's own error as the [`source`](std::error::Error::source).

use std::error::Error as StdError;
use std::fmt;

use crate::excerpt::Excerpt;

/// Result alias used across the memory traits.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a memory operation. Messages are lowercase and name the input.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A name (partition, session id, scope, key) broke its rules.
    InvalidName {
        /// What kind of name, e.g. `"partition"`.
        kind: &'static str,
        /// The rejected value, whole (the message quotes it cut, see [`Excerpt`]).
        value: String,
        /// Which rule it broke.
        reason: &'static str,
    },
    /// A field of an input value broke a rule of the domain.
    InvalidInput {
        /// The field, as a path a user recognises (`"fingerprint.env"`, `"limit"`).
        field: String,
        /// Which rule it broke.
        reason: String,
    },
    /// The record the caller named does not exist.
    NotFound {
        /// What kind of record, e.g. `"run"`.
        entity: &'static str,
        /// Its key.
        key: String,
    },
    /// The write contradicts the stored state; nothing was changed.
    Conflict {
        /// What kind of record, e.g. `"meta entry"`.
        entity: &'static str,
        /// Its key.
        key: String,
        /// Why the write was refused.
        reason: String,
    },
    /// Stored data could not be decoded.
    Corrupt {
        /// Where the bad data is (a table and key, a file and line).
        location: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The backend failed (I/O, SQL, locking).
    Backend {
        /// The backend's name, e.g. `"sqlite"`.
        backend: &'static str,
        /// What the store was doing, e.g. `"append tool log"`.
        operation: String,
        /// The backend's own error.
        source: Box<dyn StdError + Send + Sync + 'static>,
    },
}

impl Error {
    /// An [`Error::InvalidInput`] for `field`.
    pub fn invalid_input(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidInput {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// An [`Error::NotFound`] for the `entity` with `key`.
    pub fn not_found(entity: &'static str, key: impl Into<String>) -> Self {
        Error::NotFound {
            entity,
            key: key.into(),
        }
    }

    /// An [`Error::Conflict`] for the `entity` with `key`.
    pub fn conflict(
        entity: &'static str,
        key: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Conflict {
            entity,
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// An [`Error::Corrupt`] at `location`.
    pub fn corrupt(location: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            location: location.into(),
            reason: reason.into(),
        }
    }

    /// An [`Error::Backend`] wrapping the backend's own error.
    pub fn backend(
        backend: &'static str,
        operation: impl Into<String>,
        source: impl Into<Box<dyn StdError + Send + Sync + 'static>>,
    ) -> Self {
        Error::Backend {
            backend,
            operation: operation.into(),
            source: source.into(),
        }
    }

    /// Whether this is [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// Whether this is [`Error::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidName {
                kind,
                value,
                reason,
            } => write!(f, "invalid {kind} {}: {reason}", Excerpt::quoted(value)),
            Error::InvalidInput { field, reason } => write!(f, "invalid {field}: {reason}"),
            Error::NotFound { entity, key } => {
                write!(f, "{entity} {} not found", Excerpt::quoted(key))
            }
            Error::Conflict {
                entity,
                key,
                reason,
            } => write!(f, "conflict on {entity} {}: {reason}", Excerpt::quoted(key)),
            Error::Corrupt { location, reason } => {
                write!(f, "corrupt data at {location}: {reason}")
            }
            Error::Backend {
                backend,
                operation,
                source,
            } => write!(f, "{backend} store failed to {operation}: {source}"),
        }
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Error::Backend { source, .. } => Some(&**source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_input() {
        let cases: Vec<(Error, &str)> = vec![
            (
                Error::invalid_input("limit", "must be at least 1"),
                "invalid limit: must be at least 1",
            ),
            (Error::not_found("run", "run_1"), "run \"run_1\" not found"),
            (
                Error::conflict("meta entry", "k", "expected \"a\", found \"b\""),
                "conflict on meta entry \"k\": expected \"a\", found \"b\"",
            ),
            (
                Error::corrupt("episodes row 7", "bad json"),
                "corrupt data at episodes row 7: bad json",
            ),
            (
                Error::backend("sqlite", "append tool log", "disk I/O error"),
                "sqlite store failed to append tool log: disk I/O error",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }

    #[test]
    fn backend_error_keeps_its_source() {
        let error = Error::backend("sqlite", "read", "locked");
        assert_eq!(
            error.source().map(|s| s.to_string()).as_deref(),
            Some("locked")
        );
        assert!(Error::not_found("x", "y").is_not_found());
        assert!(Error::conflict("x", "y", "z").is_conflict());
    }
}
