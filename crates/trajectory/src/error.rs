//! [`Error`]: everything that can go wrong in procedural memory.

/// What went wrong. Messages are lowercase and name the offending input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration broke one or more rules; every problem is listed.
    #[error("invalid trajectory configuration:\n  - {}", .0.join("\n  - "))]
    InvalidConfig(Vec<String>),
    /// `record_episode` was given a fingerprint without some configured fields.
    #[error("record_episode fingerprint is missing required field(s): {}", py_list(.0))]
    MissingFields(Vec<String>),
    /// `recall` was given fields that are not fingerprint fields.
    #[error(
        "recall fingerprint has unknown field(s): {}; expected subset of {}",
        py_list(unknown),
        py_list(expected)
    )]
    UnknownFields {
        /// The fields that are not configured.
        unknown: Vec<String>,
        /// The configured fingerprint fields.
        expected: Vec<String>,
    },
    /// `compute_fingerprint_of` was asked for a feature the map does not hold.
    #[error("feature {0:?} is not in the feature map")]
    MissingFeature(String),
    /// A recall weight is not a finite number.
    #[error("recall weight {name} must be a finite number, got {value}")]
    InvalidWeight {
        /// Which weight (`confidence` or `recency`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// The store failed or refused the call.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A list of names as Python prints one (`['a', 'b']`), so messages read as popoto's do.
fn py_list(names: &[String]) -> String {
    let quoted: Vec<String> = names
        .iter()
        .map(|n| format!("'{}'", n.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect();
    format!("[{}]", quoted.join(", "))
}
