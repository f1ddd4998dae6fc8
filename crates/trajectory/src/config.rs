//! [`Config`]: the settings of a [`TrajectoryMemory`](crate::TrajectoryMemory), validated once
//! with every problem reported together.

use crate::error::{Error, Result};

/// How recall weighs a pattern's confidence against its recency. A weight at or below zero
/// drops its term.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weights {
    /// Weight of the confidence (popoto: 0.6).
    pub confidence: f64,
    /// Weight of the decayed recency of `last_reinforced` (popoto: 0.4).
    pub recency: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            confidence: 0.6,
            recency: 0.4,
        }
    }
}

impl Weights {
    pub(crate) fn check(&self) -> Result<()> {
        for (name, value) in [("confidence", self.confidence), ("recency", self.recency)] {
            if !value.is_finite() {
                return Err(Error::InvalidWeight { name, value });
            }
        }
        Ok(())
    }
}

/// The settings of procedural memory. `Config::new(fields)` has popoto's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The fingerprint fields, in the order they are reported.
    pub fingerprint_fields: Vec<String>,
    /// Episodes a group needs before it becomes a pattern (popoto: 3).
    pub cluster_threshold: u64,
    /// The evidence cap of the confidence rule (popoto: 20).
    pub evidence_cap: u64,
    /// A new pattern's confidence before its first observation (popoto: 0.5).
    pub initial_confidence: f64,
    /// Default recall weights.
    pub weights: Weights,
    /// Default recall limit (popoto: 5).
    pub recall_limit: usize,
    /// The recency decay rate (popoto: 0.1).
    pub decay_rate: f64,
    /// Confidence modulation strength of the decay; 0 turns it off (popoto: 0.5, on).
    pub modulation_strength: f64,
    /// Observed episodes older than this many milliseconds may be pruned (`None`: keep all).
    pub retention_millis: Option<i64>,
}

impl Config {
    /// popoto's defaults for `fingerprint_fields`.
    pub fn new<S: Into<String>>(fingerprint_fields: impl IntoIterator<Item = S>) -> Self {
        Config {
            fingerprint_fields: fingerprint_fields.into_iter().map(Into::into).collect(),
            cluster_threshold: 3,
            evidence_cap: 20,
            initial_confidence: 0.5,
            weights: Weights::default(),
            recall_limit: 5,
            decay_rate: 0.1,
            modulation_strength: 0.5,
            retention_millis: None,
        }
    }

    /// Checks every rule and lists every problem found.
    pub fn validate(&self) -> Result<()> {
        let mut problems = Vec::new();
        if self.fingerprint_fields.is_empty() {
            problems.push("fingerprint_fields must be a non-empty list of field names".to_owned());
        }
        for (i, field) in self.fingerprint_fields.iter().enumerate() {
            if field.is_empty() {
                problems.push(format!("fingerprint_fields[{i}] is empty"));
            } else if self.fingerprint_fields[..i].contains(field) {
                problems.push(format!("fingerprint field {field:?} is listed twice"));
            }
        }
        if self.cluster_threshold < 1 {
            problems.push(format!(
                "cluster_threshold must be at least 1, got {}",
                self.cluster_threshold
            ));
        }
        if self.evidence_cap < 1 {
            problems.push(format!(
                "evidence_cap must be at least 1, got {}",
                self.evidence_cap
            ));
        }
        if !(0.0..=1.0).contains(&self.initial_confidence) {
            problems.push(format!(
                "initial_confidence must be in [0, 1], got {}",
                self.initial_confidence
            ));
        }
        for (name, value) in [
            ("weights.confidence", self.weights.confidence),
            ("weights.recency", self.weights.recency),
            ("decay_rate", self.decay_rate),
            ("modulation_strength", self.modulation_strength),
        ] {
            if value.is_nan() || value < 0.0 || value.is_infinite() {
                problems.push(format!("{name} must be a finite number >= 0, got {value}"));
            }
        }
        if self.retention_millis.is_some_and(|r| r < 0) {
            problems.push(format!(
                "retention_millis must not be negative, got {:?}",
                self.retention_millis
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::InvalidConfig(problems))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(config: &Config) -> Vec<String> {
        match config.validate() {
            Ok(()) => Vec::new(),
            Err(Error::InvalidConfig(problems)) => problems,
            Err(other) => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn defaults_are_popotos_and_valid() {
        let config = Config::new(["a", "b"]);
        assert_eq!(problems(&config), Vec::<String>::new());
        assert_eq!(config.cluster_threshold, 3);
        assert_eq!(config.evidence_cap, 20);
        assert_eq!(config.initial_confidence, 0.5);
        assert_eq!(
            config.weights,
            Weights {
                confidence: 0.6,
                recency: 0.4
            }
        );
        assert_eq!(config.recall_limit, 5);
    }

    #[test]
    fn every_problem_is_reported_together() {
        let mut config = Config::new(["a", "", "a"]);
        config.cluster_threshold = 0;
        config.evidence_cap = 0;
        config.initial_confidence = 1.5;
        config.weights = Weights {
            confidence: f64::NAN,
            recency: -1.0,
        };
        config.retention_millis = Some(-1);
        let found = problems(&config);
        let expected = [
            "fingerprint_fields[1] is empty",
            "fingerprint field \"a\" is listed twice",
            "cluster_threshold must be at least 1, got 0",
            "evidence_cap must be at least 1, got 0",
            "initial_confidence must be in [0, 1], got 1.5",
            "weights.confidence must be a finite number >= 0, got NaN",
            "weights.recency must be a finite number >= 0, got -1",
            "retention_millis must not be negative, got Some(-1)",
        ];
        assert_eq!(found, expected);
        let message = config.validate().expect_err("invalid").to_string();
        assert!(
            message.starts_with("invalid trajectory configuration:\n  - fingerprint_fields[1]"),
            "{message}"
        );
    }

    #[test]
    fn empty_fields_are_named() {
        let check = |fields: Vec<&str>, expected: &[&str]| {
            assert_eq!(problems(&Config::new(fields)), expected);
        };
        check(
            vec![],
            &["fingerprint_fields must be a non-empty list of field names"],
        );
        check(vec!["x"], &[]);
    }
}
