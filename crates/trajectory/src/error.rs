//! [`Error`]: everything that can go wrong in procedural memory.

/// What went wrong. Messages are lowercase and name the offending input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration broke one or more rules; every problem is listed.
    #[error("invalid trajectory configuration:\n  - {}", .0.join("\n  - "))]
    InvalidConfig(Vec<String>),
    /// `record_episode` was given a fingerprint without some configured fields.
    #[error(
        "episode fingerprint is missing {}; expected every one of {}",
        fields_named(missing),
        expected.join(", ")
    )]
    MissingFields {
        /// The configured fields the fingerprint lacks.
        missing: Vec<String>,
        /// The configured fingerprint fields.
        expected: Vec<String>,
    },
    /// `recall` was given fields that are not fingerprint fields.
    #[error(
        "unknown {}; expected a subset of {}",
        fields_named(unknown),
        expected.join(", ")
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
    /// The features given as JSON text are not a JSON object of finite numbers.
    #[error("{0}")]
    InvalidFeatures(String),
    /// A recall weight is not a finite number, or its name is not a weight.
    #[error("recall weight {name} must be a finite number, got {value}")]
    InvalidWeight {
        /// Which weight (`confidence` or `recency`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A weight was named that does not exist.
    #[error("unknown weight {0:?}; expected confidence or recency (also called last_reinforced)")]
    UnknownWeight(String),
    /// The store failed or refused the call.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `field x` or `fields x, y`.
fn fields_named(names: &[String]) -> String {
    match names {
        [one] => format!("field {one}"),
        _ => format!("fields {}", names.join(", ")),
    }
}
