//! [`Error`]: everything that can go wrong in procedural memory.

use agent_memory_core::excerpt::{Excerpt, capped_list};

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
        capped_list(expected.iter().map(|f| Excerpt::plain(f)))
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
        capped_list(expected.iter().map(|f| Excerpt::plain(f)))
    )]
    UnknownFields {
        /// The fields that are not configured.
        unknown: Vec<String>,
        /// The configured fingerprint fields.
        expected: Vec<String>,
    },
    /// `compute_fingerprint_of` was asked for a feature the map does not hold.
    #[error("feature {} is not in the feature map", Excerpt::quoted(.0))]
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
    #[error(
        "unknown weight {}; expected confidence or recency (also called last_reinforced)",
        Excerpt::quoted(.0)
    )]
    UnknownWeight(String),
    /// The store failed or refused the call.
    #[error(transparent)]
    Store(#[from] agent_memory_core::Error),
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `field x` or `fields x, y`, each name and the list cut when long.
fn fields_named(names: &[String]) -> String {
    match names {
        [one] => format!("field {}", Excerpt::plain(one)),
        _ => format!(
            "fields {}",
            capped_list(names.iter().map(|n| Excerpt::plain(n)))
        ),
    }
}
