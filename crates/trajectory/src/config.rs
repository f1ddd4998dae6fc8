//! [`Config`]: the settings of a [`TrajectoryMemory`](crate::TrajectoryMemory), validated once
//! with every problem reported together.

use crate::error::{Error, Result};

/// How recall weighs a pattern's confidence against its recency. A weight at or below zero
/// drops its term; with no positive weight, recall returns nothing (as popoto).
///
/// ```
/// use agent_memory_trajectory::Weights;
///
/// assert_eq!(Weights::default(), Weights::new(0.6, 0.4));
/// // Naming weights replaces the default set, as popoto's `score_weights` does.
/// assert_eq!(Weights::from_named([("confidence", 1.0)])?, Weights::new(1.0, 0.0));
/// # Ok::<(), agent_memory_trajectory::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
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
    /// Weights of `confidence` and `recency`.
    pub fn new(confidence: f64, recency: f64) -> Self {
        Weights {
            confidence,
            recency,
        }
    }

    /// Weights from `(name, value)` pairs, as popoto's `score_weights` takes them: a weight
    /// not named is 0 (the defaults are replaced, not amended). Names are `confidence` and
    /// `recency` (popoto's field name `last_reinforced` also works); another name is an
    /// error, and so is a weight that is not finite.
    pub fn from_named<'a>(pairs: impl IntoIterator<Item = (&'a str, f64)>) -> Result<Self> {
        let mut weights = Weights::new(0.0, 0.0);
        for (name, value) in pairs {
            match name {
                "confidence" => weights.confidence = value,
                "recency" | "last_reinforced" => weights.recency = value,
                other => return Err(Error::UnknownWeight(other.to_owned())),
            }
        }
        weights.check()?;
        Ok(weights)
    }

    /// Whether some weight is above zero (recall ranks by nothing otherwise).
    pub fn any_positive(&self) -> bool {
        self.confidence > 0.0 || self.recency > 0.0
    }

    pub(crate) fn check(&self) -> Result<()> {
        for (name, value) in [("confidence", self.confidence), ("recency", self.recency)] {
            if !value.is_finite() {
                return Err(Error::InvalidWeight { name, value });
            }
        }
        Ok(())
    }
}

/// The settings of procedural memory. `Config::new(fields)` has popoto's defaults; the
/// `with_*` methods change one setting each.
///
/// ```
/// use agent_memory_trajectory::Config;
///
/// let config = Config::new(["task", "env"]).with_cluster_threshold(5).with_evidence_cap(10);
/// assert_eq!((config.cluster_threshold, config.evidence_cap), (5, 10));
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
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

    /// With `threshold` episodes needed before a group becomes a pattern.
    pub fn with_cluster_threshold(mut self, threshold: u64) -> Self {
        self.cluster_threshold = threshold;
        self
    }

    /// With `cap` as the evidence cap of the confidence rule.
    pub fn with_evidence_cap(mut self, cap: u64) -> Self {
        self.evidence_cap = cap;
        self
    }

    /// With `confidence` as a new pattern's confidence before its first observation.
    pub fn with_initial_confidence(mut self, confidence: f64) -> Self {
        self.initial_confidence = confidence;
        self
    }

    /// With `weights` as the default recall weights.
    pub fn with_weights(mut self, weights: Weights) -> Self {
        self.weights = weights;
        self
    }

    /// With `limit` as the default recall limit.
    pub fn with_recall_limit(mut self, limit: usize) -> Self {
        self.recall_limit = limit;
        self
    }

    /// With `rate` as the recency decay rate.
    pub fn with_decay_rate(mut self, rate: f64) -> Self {
        self.decay_rate = rate;
        self
    }

    /// With `strength` as the confidence modulation strength (0 turns it off).
    pub fn with_modulation_strength(mut self, strength: f64) -> Self {
        self.modulation_strength = strength;
        self
    }

    /// Observed episodes older than `millis` may be pruned (`None`: keep all).
    pub fn with_retention_millis(mut self, millis: Option<i64>) -> Self {
        self.retention_millis = millis;
        self
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
        assert_eq!(config.weights, Weights::new(0.6, 0.4));
        assert_eq!(config.recall_limit, 5);
    }

    #[test]
    fn every_problem_is_reported_together() {
        let mut config = Config::new(["a", "", "a"]);
        config.cluster_threshold = 0;
        config.evidence_cap = 0;
        config.initial_confidence = 1.5;
        config.weights = Weights::new(f64::NAN, -1.0);
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
    fn named_weights_replace_the_defaults() {
        // The old reading amended the defaults: `confidence=1` kept recency at 0.4.
        let check = |pairs: &[(&str, f64)], expected: Weights| {
            let weights = Weights::from_named(pairs.iter().copied()).expect("valid weights");
            assert_eq!(weights, expected, "{pairs:?}");
        };
        check(&[("confidence", 1.0)], Weights::new(1.0, 0.0));
        check(&[("recency", 0.3)], Weights::new(0.0, 0.3));
        check(&[("last_reinforced", 0.3)], Weights::new(0.0, 0.3));
        check(&[], Weights::new(0.0, 0.0));
        check(
            &[("confidence", 1.0), ("confidence", 2.0)],
            Weights::new(2.0, 0.0),
        );
        let unknown = Weights::from_named([("speed", 1.0)]).expect_err("unknown name");
        assert_eq!(
            unknown.to_string(),
            "unknown weight \"speed\"; expected confidence or recency (also called last_reinforced)"
        );
        let infinite = Weights::from_named([("recency", f64::INFINITY)]).expect_err("infinite");
        assert_eq!(
            infinite.to_string(),
            "recall weight recency must be a finite number, got inf"
        );
        assert!(!Weights::new(0.0, -1.0).any_positive());
        assert!(Weights::new(0.0, 0.1).any_positive());
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
