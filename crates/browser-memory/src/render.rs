//! The text blocks the agent's prompt receives, byte for byte as the reference renders them:
//! the reference trajectory, session history, app knowledge and known selectors.

use agent_memory_core::store::browser::{Fact, SelectorEntry, SessionEntry, Trajectory};

use crate::json::{Json, js_number, to_compact};
use crate::time::minute;
use crate::utf16::{utf16_len, utf16_prefix};

/// Facts below this confidence are left out of the rendered knowledge.
pub const RENDER_MIN_CONFIDENCE: f64 = 0.5;
/// How many selectors the rendered cache shows.
pub const RENDER_SELECTOR_LIMIT: usize = 20;
/// Sessions shown with their final url.
const DETAILED_SESSIONS: usize = 2;
/// Older sessions' outcomes are cut to this many UTF-16 code units (the reference's
/// `slice(0, 80)` on a JavaScript string).
const OUTCOME_UNITS: usize = 80;

/// One action as a line of text (`click @b3`, `type "x" into @t1`, `navigate to …`); an
/// action of another kind, or one that is not JSON, is shown as its compact JSON.
pub fn format_action(action_json: &str) -> String {
    let Ok(action) = serde_json::from_str::<Json>(action_json) else {
        return action_json.to_owned();
    };
    let field = |name: &str| Json::template_text(action.get(name));
    match action.get("action").and_then(Json::as_str) {
        Some("click") => format!("click {}", field("selector")),
        Some("type") => format!("type \"{}\" into {}", field("text"), field("selector")),
        Some("press") => format!("press {} on {}", field("key"), field("selector")),
        Some("scroll") => format!("scroll {}", field("direction")),
        Some("navigate") => format!("navigate to {}", field("url")),
        Some("wait") => format!("wait {}ms", field("ms")),
        _ => to_compact(&action).unwrap_or_else(|_| action_json.to_owned()),
    }
}

/// `Goal: …`, `Steps (N total):` and one line per step.
pub fn reference_trajectory(trajectory: &Trajectory) -> String {
    let mut lines = vec![
        format!("Goal: {}", trajectory.goal),
        format!("Steps ({} total):", trajectory.steps.len()),
    ];
    for (i, step) in trajectory.steps.iter().enumerate() {
        let verified = if step.verified { " [verified]" } else { "" };
        lines.push(format!(
            "  {}. {} (on {}){verified}",
            i + 1,
            format_action(&step.action),
            step.url
        ));
    }
    lines.join("\n")
}

/// A reference text (a [`reference_trajectory`], with hints appended in the compatibility
/// layout) wrapped as the prompt shows it.
pub fn reference_block(reference: &str) -> String {
    format!(
        "\nREFERENCE TRAJECTORY — A similar task was completed before:\n{reference}\nUse this as a guide, but adapt to the current page state.\n"
    )
}

/// Sessions newest first (by timestamp text; ties keep log order).
pub fn newest_first(sessions: &[SessionEntry]) -> Vec<&SessionEntry> {
    let mut sorted: Vec<&SessionEntry> = sessions.iter().collect();
    sorted.sort_by(|a, b| b.timestamp.cmp(&a.timestamp));
    sorted
}

/// `SESSION HISTORY (N previous run[s] on this site):` and one line per session, newest
/// first; empty without sessions. Each timestamp is shown from its own text (see
/// [`minute`](crate::compat::minute)); the outcomes of sessions older than the two newest
/// are cut at 80 UTF-16 code units, as the reference cuts a JavaScript string.
pub fn session_history(sessions: &[SessionEntry]) -> String {
    let sessions = newest_first(sessions);
    if sessions.is_empty() {
        return String::new();
    }
    let count = sessions.len();
    let plural = if count == 1 { "" } else { "s" };
    let mut lines = vec![format!(
        "SESSION HISTORY ({count} previous run{plural} on this site):"
    )];
    for (i, s) in sessions.iter().enumerate() {
        let icon = if s.success { '✓' } else { '✗' };
        let seconds = js_round(s.duration_ms as f64 / 1000.0);
        let stats = format!("{} turns, {}s", s.turns_used, js_number(seconds));
        let head = format!("[{}] {icon} \"{}\" →", minute(&s.timestamp), s.goal);
        if i < DETAILED_SESSIONS {
            lines.push(format!("{head} {} ({stats})", s.outcome));
            if !s.final_url.is_empty() {
                lines.push(format!("  Final URL: {}", s.final_url));
            }
        } else {
            let cut = utf16_prefix(&s.outcome, OUTCOME_UNITS);
            let more = if utf16_len(&s.outcome) > OUTCOME_UNITS {
                "…"
            } else {
                ""
            };
            lines.push(format!("{head} {cut}{more} ({stats})"));
        }
    }
    lines.join("\n")
}

/// `APP KNOWLEDGE (learned from previous runs):` with facts of confidence >= 0.5, grouped by
/// kind in first-seen order, highest confidence first; empty without such facts.
pub fn app_knowledge(facts: &[Fact]) -> String {
    let shown: Vec<&Fact> = facts
        .iter()
        .filter(|f| f.confidence >= RENDER_MIN_CONFIDENCE)
        .collect();
    if shown.is_empty() {
        return String::new();
    }
    let mut groups: Vec<(&str, Vec<&Fact>)> = Vec::new();
    for fact in shown {
        let kind = fact.kind.as_str();
        match groups.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, group)) => group.push(fact),
            None => groups.push((kind, vec![fact])),
        }
    }
    let mut lines = vec!["APP KNOWLEDGE (learned from previous runs):".to_owned()];
    for (kind, mut group) in groups {
        lines.push(format!("  {}:", kind.to_uppercase()));
        // A stable sort: equal confidences keep first-seen order.
        group.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
        for f in group {
            lines.push(format!(
                "    - {}: {} ({}% confidence, {} observations)",
                f.key,
                f.value,
                percent(f.confidence),
                f.sources
            ));
        }
    }
    lines.join("\n")
}

/// Session history, a blank line, then app knowledge: the block the reference's knowledge
/// store renders (either part may be absent).
pub fn knowledge_block(sessions: &[SessionEntry], facts: &[Fact]) -> String {
    let history = session_history(sessions);
    let knowledge = app_knowledge(facts);
    match (history.is_empty(), knowledge.is_empty()) {
        (false, false) => format!("{history}\n\n{knowledge}"),
        (false, true) => history,
        _ => knowledge,
    }
}

/// `KNOWN SELECTORS (from previous runs):` with the 20 most used entries (ties keep
/// insertion order); empty without entries.
pub fn known_selectors(entries: &[SelectorEntry]) -> String {
    let mut ranked: Vec<&SelectorEntry> = entries.iter().collect();
    ranked.sort_by_key(|e| std::cmp::Reverse(e.success_count));
    ranked.truncate(RENDER_SELECTOR_LIMIT);
    if ranked.is_empty() {
        return String::new();
    }
    let mut lines = vec!["KNOWN SELECTORS (from previous runs):".to_owned()];
    for e in ranked {
        let selector = e
            .stable_selector
            .as_deref()
            .filter(|s| !s.is_empty())
            .or(e.last_ref.as_deref().filter(|s| !s.is_empty()))
            .unwrap_or("(unknown)");
        lines.push(format!(
            "  - {} → {selector} (used {}x)",
            e.element, e.success_count
        ));
    }
    lines.join("\n")
}

/// `confidence * 100` rounded half up, as `toFixed(0)` does on the exact binary value.
pub fn percent(confidence: f64) -> String {
    js_number((confidence * 100.0).round())
}

/// JavaScript's `Math.round`: halves go up.
pub fn js_round(x: f64) -> f64 {
    let floor = x.floor();
    if x - floor >= 0.5 { floor + 1.0 } else { floor }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_render_like_the_reference() {
        let table = [
            (r#"{"action":"click","selector":"@b3"}"#, "click @b3"),
            (
                r#"{"action":"type","selector":"@t1","text":"smart watch"}"#,
                "type \"smart watch\" into @t1",
            ),
            (
                r#"{"action":"press","selector":"@t1","key":"Enter"}"#,
                "press Enter on @t1",
            ),
            (r#"{"action":"scroll","direction":"down"}"#, "scroll down"),
            (
                r#"{"action":"navigate","url":"https://x.test/"}"#,
                "navigate to https://x.test/",
            ),
            (r#"{"action":"wait","ms":1500}"#, "wait 1500ms"),
            (
                r#"{"action":"type","selector":"@t1"}"#,
                "type \"undefined\" into @t1",
            ),
            (
                r#"{"action":"hover","selector":"@h1","n":2.0}"#,
                r#"{"action":"hover","selector":"@h1","n":2}"#,
            ),
        ];
        for (action, expected) in table {
            assert_eq!(format_action(action), expected);
        }
    }

    #[test]
    fn percentages_round_half_up() {
        assert_eq!(percent(0.625), "63");
        assert_eq!(percent(0.6799999999999999), "68");
        assert_eq!(percent(0.6), "60");
        assert_eq!(percent(1.0), "100");
        assert_eq!(js_round(9.5), 10.0);
        assert_eq!(js_round(0.4999), 0.0);
    }
}
