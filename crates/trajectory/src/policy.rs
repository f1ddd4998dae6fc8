//! popoto's numbers: the capped-evidence confidence rule, the outcome-to-signal mapping,
//! the recency decay with confidence modulation, and the modal canonical trajectory. The two
//! extension points are traits: [`SignalMapping`] and [`CanonicalAggregator`].

use std::cmp::Reverse;

use agent_memory_core::Timestamp;
use agent_memory_core::store::trajectory::{PatternStats, TrajectoryTally};
use serde_json::Value;

use crate::compat::python_float;

/// Signals at or above this count as corroborations, below as contradictions.
pub const CORROBORATION_THRESHOLD: f64 = 0.5;

/// One step of the capped-evidence rule: `n_eff = min(evidence + 1, cap)`,
/// `c += (signal - c) / (n_eff + 1)`, clamped to `[0, 1]`. Plain `f64`, the same operations
/// in the same order as popoto, so results match its stored values bit for bit.
///
/// ```
/// use agent_memory_trajectory::policy::update_confidence;
///
/// let mut c = 0.5;
/// for n in 0..3 {
///     c = update_confidence(c, n, 0.9, 20);
/// }
/// assert_eq!(c, 0.7999999999999999);
/// assert_eq!(update_confidence(0.01, 0, 0.9, 20), 0.455);
/// ```
pub fn update_confidence(confidence: f64, evidence_count: u64, signal: f64, cap: u64) -> f64 {
    let n_eff = evidence_count.saturating_add(1).min(cap) as f64;
    let next = confidence + (signal - confidence) / (n_eff + 1.0);
    next.clamp(0.0, 1.0)
}

/// Applies one observation to a pattern's statistics.
pub fn observe(stats: &mut PatternStats, signal: f64, recorded_at: Timestamp, cap: u64) {
    stats.confidence = update_confidence(stats.confidence, stats.evidence_count, signal, cap);
    stats.evidence_count += 1;
    if signal >= CORROBORATION_THRESHOLD {
        stats.corroborations += 1;
    } else {
        stats.contradictions += 1;
    }
    stats.last_reinforced = stats.last_reinforced.max(recorded_at);
}

/// Maps an episode's outcome to a confidence signal in `[0, 1]` (popoto's
/// `_episode_signal`, which it lets subclasses override).
pub trait SignalMapping: Send + Sync {
    /// The signal of `outcome`.
    fn signal(&self, outcome: &Value) -> f64;
}

/// popoto's mapping: `{"success": true}` -> 0.9, `false` -> 0.1; a number under `success`,
/// or a string Python's `float()` reads as one (see
/// [`compat::python_float`](crate::compat::python_float)), is clamped to `[0, 1]`; a bare number is
/// clamped; anything else is 0.5.
#[derive(Clone, Copy, Debug, Default)]
pub struct SuccessSignal;

impl SignalMapping for SuccessSignal {
    fn signal(&self, outcome: &Value) -> f64 {
        match outcome {
            Value::Object(map) => match map.get("success") {
                Some(Value::Bool(true)) => 0.9,
                Some(Value::Bool(false)) => 0.1,
                Some(Value::Number(n)) => n.as_f64().map_or(0.5, python_clamp),
                Some(Value::String(s)) => python_float(s).map_or(0.5, python_clamp),
                _ => 0.5,
            },
            Value::Number(n) => n.as_f64().map_or(0.5, python_clamp),
            _ => 0.5,
        }
    }
}

/// `max(0.0, min(1.0, x))` as Python evaluates it (NaN compares false, so it yields 1.0).
fn python_clamp(x: f64) -> f64 {
    if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) }
}

/// Chooses a group's canonical ("what worked") trajectory (popoto's `_canonical_sequence`).
///
/// Crystallize is incremental, so the aggregator sees the group's current canonical tally
/// (first, when there is one) and every tally that changed in this run. Tallies only grow,
/// so an aggregator whose preference never drops for a tally that grows (like the modal
/// rule) reaches the same choice as one that saw every tally.
pub trait CanonicalAggregator: Send + Sync {
    /// The index in `candidates` of the canonical trajectory (`candidates` is non-empty).
    fn choose(&self, candidates: &[&TrajectoryTally]) -> usize;
}

/// popoto's rule: the modal trajectory; ties go to the one whose newest episode is most
/// recent; an exact tie of times goes to the one seen first.
#[derive(Clone, Copy, Debug, Default)]
pub struct ModalTrajectory;

impl CanonicalAggregator for ModalTrajectory {
    fn choose(&self, candidates: &[&TrajectoryTally]) -> usize {
        candidates
            .iter()
            .enumerate()
            .max_by_key(|(_, t)| (t.count, t.newest, Reverse(t.first_seq)))
            .map_or(0, |(i, _)| i)
    }
}

/// popoto's recency decay of a pattern last reinforced `elapsed_days` ago, with confidence
/// modulation (`strength` 0 turns it off): `d = max(elapsed, 0.01)`, `r = d^-rate`, and
/// with modulation `r *= max(d, 1)^-(eff - rate)` where
/// `eff = rate * 2^(strength * 2 * (c0 - c))`.
///
/// ```
/// use agent_memory_trajectory::policy::recency;
///
/// assert_eq!(recency(0.0, 0.7, 0.1, 0.5, 0.5), 1.5848931924611136);
/// ```
pub fn recency(elapsed_days: f64, confidence: f64, rate: f64, strength: f64, c0: f64) -> f64 {
    let elapsed = elapsed_days.max(0.01);
    let d = elapsed.powf(-rate);
    let c = confidence.clamp(0.0, 1.0);
    let eff = rate * 2f64.powf(strength * 2.0 * (c0 - c));
    d * elapsed.max(1.0).powf(-(eff - rate))
}
