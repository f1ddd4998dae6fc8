//! Validated names shared by every feature: partitions, scopes, sessions, runs, meta keys.
//!
//! A name is non-empty, at most [`MAX_NAME_BYTES`] bytes, and holds no control characters,
//! so it is safe to print, to use as a database key and to show in an error. Holding one of
//! these types means the check was done; functions that take them do not check again.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// The longest name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 256;

fn validate(kind: &'static str, value: &str) -> Result<()> {
    let reason = if value.is_empty() {
        "must not be empty"
    } else if value.len() > MAX_NAME_BYTES {
        "must be at most 256 bytes"
    } else if value.chars().any(char::is_control) {
        "must not contain control characters"
    } else {
        return Ok(());
    };
    Err(Error::InvalidName {
        kind,
        value: value.to_owned(),
        reason,
    })
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(String);

        impl $name {
            /// Validates `value` and wraps it.
            pub fn new(value: impl Into<String>) -> Result<Self> {
                let value = value.into();
                validate($kind, &value)?;
                Ok($name(value))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The name as an owned string.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(value: &str) -> Result<Self> {
                $name::new(value)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = Error;
            fn try_from(value: &str) -> Result<Self> {
                $name::new(value)
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(value: String) -> Result<Self> {
                $name::new(value)
            }
        }

        impl From<$name> for String {
            fn from(name: $name) -> String {
                name.0
            }
        }
    };
}

name_type!(
    /// A partition of procedural memory (a tenant, a project): patterns never cross one.
    Partition,
    "partition"
);
name_type!(
    /// A memory scope of the browser agent: `shared` by default, or one per run.
    Scope,
    "scope"
);
name_type!(
    /// The id of one agent session (a conversation, a recorded test session).
    SessionId,
    "session id"
);
name_type!(
    /// The id of one agent run.
    RunId,
    "run id"
);
name_type!(
    /// A key of the store's own metadata (see [`MetaStore`](crate::MetaStore)).
    MetaKey,
    "meta key"
);

impl Scope {
    /// The default scope that every run shares.
    pub fn shared() -> Self {
        Scope("shared".to_owned())
    }
}

impl Default for Scope {
    fn default() -> Self {
        Scope::shared()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(value: &str, expected: std::result::Result<(), &str>) {
        let got = Partition::new(value).map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned), "value {value:?}");
    }

    #[test]
    fn names_follow_the_rules() {
        check("bench", Ok(()));
        check("tenant/a b", Ok(()));
        check("", Err("invalid partition \"\": must not be empty"));
        check(
            "a\nb",
            Err("invalid partition \"a\\nb\": must not contain control characters"),
        );
        check(&"x".repeat(256), Ok(()));
        let long = "x".repeat(257);
        let err = Partition::new(long).map(|_| ()).map_err(|e| e.to_string());
        assert!(matches!(err, Err(m) if m.ends_with("must be at most 256 bytes")));
    }

    #[test]
    fn scope_defaults_to_shared() {
        assert_eq!(Scope::default().as_str(), "shared");
        assert_eq!(
            "run-1".parse::<Scope>().map(String::from).ok().as_deref(),
            Some("run-1")
        );
    }
}
