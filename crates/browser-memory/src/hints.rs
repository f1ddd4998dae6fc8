//! Cross-domain optimization hints from analysing finished runs: turn efficiency, accuracy
//! against ground truth, high-failure actions, stale refs, stuck loops, slow goals and common
//! failures, rendered as the reference's `FEEDBACK FROM PREVIOUS RUNS:` block.
//!
//! The runs come either from a test suite's evaluation ([`EvaluatedRun`] built by the caller)
//! or from the stored trajectories ([`EvaluatedRun::from_trajectory`]).

use std::collections::HashMap;

use agent_memory_core::store::browser::Trajectory;

use crate::extract::{Turn, action_name};
use crate::json::{Json, js_number};
use crate::utf16::utf16_prefix;

/// The reason given to a stored step whose expected effect was not observed.
pub const UNVERIFIED_EFFECT: &str = "expected effect not observed";

/// One evaluated run of a test suite, or a stored trajectory read as one
/// ([`EvaluatedRun::from_trajectory`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluatedRun {
    /// The test case's name.
    pub name: String,
    /// The goal (its first line, cut to 80 UTF-16 code units, groups runs).
    pub goal: String,
    /// The turns.
    pub turns: Vec<Turn>,
    /// Whether the agent said it succeeded.
    pub agent_success: bool,
    /// Whether ground truth confirmed success.
    pub verified: bool,
    /// Skipped runs are left out.
    pub skipped: bool,
    /// The judge's verdict.
    pub verdict: Option<String>,
    /// Details of failed criteria, when criteria were checked.
    pub failed_criteria: Option<Vec<String>>,
    /// Turns used.
    pub turns_used: u32,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

impl EvaluatedRun {
    /// What a stored trajectory tells about its run, for [`generate_hints`].
    ///
    /// A trajectory keeps less than a suite's evaluation: its success stands for both what the
    /// agent said and what was confirmed (so no accuracy warning comes from trajectories); a
    /// step that named an expected effect and was not verified counts as a failed turn; errors,
    /// verdicts and failed criteria are not stored, so stale refs and common failures never
    /// show. Efficiency, high-failure actions, stuck loops and slow goals come out as for
    /// evaluated runs.
    pub fn from_trajectory(trajectory: Trajectory) -> EvaluatedRun {
        let turns: Vec<Turn> = trajectory
            .steps
            .into_iter()
            .map(|step| Turn {
                verification_failure: (step.expected_effect.is_some() && !step.verified)
                    .then(|| UNVERIFIED_EFFECT.to_owned()),
                url: step.url,
                snapshot: String::new(),
                action: step.action,
                verified: step.verified,
                expected_effect: step.expected_effect,
                duration_ms: 0,
                reasoning: None,
                error: None,
            })
            .collect();
        EvaluatedRun {
            name: trajectory.id,
            goal: trajectory.goal,
            turns_used: u32::try_from(turns.len()).unwrap_or(u32::MAX),
            turns,
            agent_success: trajectory.success,
            verified: trajectory.success,
            skipped: false,
            verdict: None,
            failed_criteria: None,
            duration_ms: trajectory.duration_ms,
        }
    }
}

fn percent(rate: f64) -> String {
    js_number((rate * 100.0).round())
}

fn action_key(action: &Json) -> String {
    let field = |name: &str| Json::template_text(action.get(name));
    match action_name(action) {
        "click" => format!("click:{}", field("selector")),
        "type" => format!("type:{}", field("selector")),
        "press" => format!("press:{}:{}", field("selector"), field("key")),
        "scroll" => format!("scroll:{}", field("direction")),
        "navigate" => format!("navigate:{}", field("url")),
        other => other.to_owned(),
    }
}

/// The hints for `runs`, or an empty string when nothing stands out.
pub fn generate_hints(runs: &[EvaluatedRun]) -> String {
    let runs: Vec<&EvaluatedRun> = runs.iter().filter(|r| !r.skipped).collect();
    let mut hints = Vec::new();

    // One pass over the turns, each action parsed once: wasted turns, (action, selector)
    // patterns with their occurrences and failures in first-seen order, and stuck loops
    // (three equal actions in a row within a run).
    let mut total = 0usize;
    let mut wasted = 0usize;
    let mut patterns: Vec<(String, Option<String>, usize, usize)> = Vec::new();
    let mut pattern_at: HashMap<(String, Option<String>), usize> = HashMap::new();
    let mut loops = 0usize;
    for r in &runs {
        let mut keys = Vec::with_capacity(r.turns.len());
        for turn in &r.turns {
            let action = turn.parsed_action();
            let name = action_name(&action);
            let failed = turn.error.is_some() || turn.verification_failure.is_some();
            total += 1;
            wasted += usize::from(
                failed
                    || (name == "wait"
                        && matches!(action.get("ms"), Some(Json::Number(ms)) if *ms == 0.0)),
            );
            let key = (
                name.to_owned(),
                action.get("selector").map(|s| Json::template_text(Some(s))),
            );
            let at = match pattern_at.get(&key) {
                Some(&at) => at,
                None => {
                    patterns.push((key.0.clone(), key.1.clone(), 0, 0));
                    pattern_at.insert(key, patterns.len() - 1);
                    patterns.len() - 1
                }
            };
            patterns[at].2 += 1;
            patterns[at].3 += usize::from(failed);
            keys.push(action_key(&action));
        }
        loops += keys
            .windows(3)
            .filter(|w| w[0] == w[1] && w[1] == w[2])
            .count();
    }

    let efficiency = if total > 0 {
        (total - wasted) as f64 / total as f64
    } else {
        1.0
    };
    if efficiency < 0.7 {
        hints.push(format!(
            "EFFICIENCY WARNING: Only {}% of turns are productive. {wasted} turns were wasted on errors, retries, or repeated actions.",
            percent(efficiency)
        ));
    }

    let says = runs.iter().filter(|r| r.agent_success).count();
    let confirmed = runs
        .iter()
        .filter(|r| r.agent_success && r.verified)
        .count();
    let false_positive = if says > 0 {
        (says - confirmed) as f64 / says as f64
    } else {
        0.0
    };
    if false_positive > 0.1 {
        hints.push(format!(
            "ACCURACY WARNING: The agent reports success {}% more often than ground-truth confirms. Be more conservative with \"complete\" — verify the goal state thoroughly before completing.",
            percent(false_positive)
        ));
    }

    patterns.sort_by_key(|p| std::cmp::Reverse(p.2));
    let mut failing: Vec<_> = patterns
        .iter()
        .filter(|p| p.2 >= 3 && p.3 as f64 / p.2 as f64 > 0.3)
        .collect();
    failing.sort_by(|a, b| (b.3 as f64 / b.2 as f64).total_cmp(&(a.3 as f64 / a.2 as f64)));
    if !failing.is_empty() {
        let described: Vec<String> = failing
            .iter()
            .take(3)
            .map(|(name, selector, count, failures)| {
                let on = selector
                    .as_ref()
                    .map(|s| format!(" on \"{s}\""))
                    .unwrap_or_default();
                format!(
                    "\"{name}\"{on} fails {}% of the time ({failures}/{count})",
                    percent(*failures as f64 / *count as f64)
                )
            })
            .collect();
        hints.push(format!(
            "HIGH-FAILURE ACTIONS: {}. Try alternative approaches.",
            described.join("; ")
        ));
    }

    let stale: usize = runs
        .iter()
        .flat_map(|r| &r.turns)
        .filter(|t| t.error.as_deref().is_some_and(|e| e.contains("Stale ref")))
        .count();
    if stale > 0 {
        hints.push(format!(
            "STALE REFS: {stale} turns wasted on stale @ref selectors. Always use refs from the CURRENT observation, not previous turns."
        ));
    }

    if loops > 0 {
        hints.push(format!(
            "STUCK LOOPS DETECTED: The agent repeated the same action sequence {loops} time(s). When an action doesn't produce the expected effect after 2 attempts, try a completely different strategy."
        ));
    }

    // (goal prefix, attempts, total turns) in first-seen order.
    let mut goals: Vec<(String, usize, u64)> = Vec::new();
    let mut goal_at: HashMap<String, usize> = HashMap::new();
    for r in &runs {
        // The reference's `split('\n')[0].slice(0, 80)`: 80 UTF-16 code units.
        let first_line = r.goal.split('\n').next().unwrap_or_default();
        let prefix = utf16_prefix(first_line, 80).into_owned();
        let at = *goal_at.entry(prefix.clone()).or_insert_with(|| {
            goals.push((prefix, 0, 0));
            goals.len() - 1
        });
        goals[at].1 += 1;
        goals[at].2 += u64::from(r.turns_used);
    }
    let mut slow: Vec<(String, f64)> = goals
        .into_iter()
        .map(|(prefix, attempts, turns)| (prefix, attempts, turns as f64 / attempts as f64))
        .filter(|(_, attempts, avg)| *avg > 15.0 && *attempts >= 2)
        .map(|(prefix, _, avg)| (prefix, avg))
        .collect();
    slow.sort_by(|a, b| b.1.total_cmp(&a.1));
    if !slow.is_empty() {
        let described: Vec<String> = slow
            .iter()
            .take(2)
            .map(|(prefix, avg)| format!("\"{prefix}\" averages {} turns", js_number(avg.round())))
            .collect();
        hints.push(format!(
            "SLOW GOALS: {}. Consider more direct navigation strategies.",
            described.join("; ")
        ));
    }

    let mut reasons: Vec<(String, usize)> = Vec::new();
    let mut reason_at: HashMap<String, usize> = HashMap::new();
    for r in runs.iter().filter(|r| !r.verified) {
        let found: &[String] = match (&r.failed_criteria, &r.verdict) {
            (Some(details), _) => details,
            (None, Some(verdict)) => std::slice::from_ref(verdict),
            (None, None) => &[],
        };
        for reason in found {
            let at = *reason_at.entry(reason.clone()).or_insert_with(|| {
                reasons.push((reason.clone(), 0));
                reasons.len() - 1
            });
            reasons[at].1 += 1;
        }
    }
    reasons.sort_by_key(|r| std::cmp::Reverse(r.1));
    if !reasons.is_empty() {
        let top: Vec<&str> = reasons.iter().take(3).map(|(r, _)| r.as_str()).collect();
        hints.push(format!("COMMON FAILURES: {}", top.join("; ")));
    }

    if hints.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = hints.iter().map(|h| format!("- {h}")).collect();
    format!("FEEDBACK FROM PREVIOUS RUNS:\n{}", lines.join("\n"))
}
