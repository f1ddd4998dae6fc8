//! Lists kept in one column: a trajectory's steps, a site's session log, a run's artifact
//! paths. Each is a sequence of `<byte length>:<text>` items, the format of
//! [`memory_core::store::trajectory::encode_texts`], with a fixed number of items per entry.
//! Decoding borrows from the column and fails (`None`) on anything that is not such a list.

use std::fmt::Write as _;

use memory_core::store::browser::{SessionEntry, TrajectoryStep};

/// Items per encoded step: url, action, snapshot hash, verified, expected effect.
const STEP_ITEMS: usize = 5;
/// Items per encoded session: id, goal, outcome, success, final url, timestamp, turns used,
/// duration.
const SESSION_ITEMS: usize = 8;

/// Appends one item.
fn push(out: &mut String, item: &str) {
    // Writing to a `String` cannot fail.
    let _ = write!(out, "{}:", item.len());
    out.push_str(item);
}

fn flag(value: bool) -> &'static str {
    if value { "1" } else { "0" }
}

fn parse_flag(item: &str) -> Option<bool> {
    match item {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

/// The items of an encoded list, borrowed; `None` when the text is not such a list.
pub(crate) fn items(mut text: &str) -> Option<Vec<&str>> {
    let mut items = Vec::new();
    while !text.is_empty() {
        let colon = text.find(':')?;
        let len: usize = text[..colon].parse().ok()?;
        let rest = &text[colon + 1..];
        items.push(rest.get(..len)?);
        text = &rest[len..];
    }
    Some(items)
}

/// Decodes a list of entries of `width` items each.
fn decode_entries<T>(
    text: &str,
    width: usize,
    entry: impl Fn(&[&str]) -> Option<T>,
) -> Option<Vec<T>> {
    let items = items(text)?;
    if items.len() % width != 0 {
        return None;
    }
    items.chunks_exact(width).map(entry).collect()
}

/// Encodes plain texts (artifact paths).
pub(crate) fn encode_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    texts.into_iter().for_each(|t| push(&mut out, t));
    out
}

/// Decodes [`encode_texts`].
pub(crate) fn decode_texts(text: &str) -> Option<Vec<String>> {
    Some(items(text)?.into_iter().map(str::to_owned).collect())
}

/// Encodes a trajectory's steps.
pub(crate) fn encode_steps(steps: &[TrajectoryStep]) -> String {
    let mut out = String::with_capacity(steps.len() * 128);
    for s in steps {
        push(&mut out, &s.url);
        push(&mut out, &s.action);
        push(&mut out, &s.snapshot_hash);
        push(&mut out, flag(s.verified));
        match &s.expected_effect {
            None => out.push_str("0:"),
            Some(effect) => {
                let _ = write!(out, "{}:=", effect.len() + 1);
                out.push_str(effect);
            }
        }
    }
    out
}

/// Decodes [`encode_steps`].
pub(crate) fn decode_steps(text: &str) -> Option<Vec<TrajectoryStep>> {
    decode_entries(text, STEP_ITEMS, |s| {
        Some(TrajectoryStep {
            url: s[0].to_owned(),
            action: s[1].to_owned(),
            snapshot_hash: s[2].to_owned(),
            verified: parse_flag(s[3])?,
            expected_effect: match s[4] {
                "" => None,
                effect => Some(effect.strip_prefix('=')?.to_owned()),
            },
        })
    })
}

/// Encodes a site's session log.
pub(crate) fn encode_sessions(sessions: &[SessionEntry]) -> String {
    let mut out = String::with_capacity(sessions.len() * 160);
    for s in sessions {
        push(&mut out, &s.id);
        push(&mut out, &s.goal);
        push(&mut out, &s.outcome);
        push(&mut out, flag(s.success));
        push(&mut out, &s.final_url);
        push(&mut out, &s.timestamp);
        push(&mut out, &s.turns_used.to_string());
        push(&mut out, &s.duration_ms.to_string());
    }
    out
}

/// Decodes [`encode_sessions`].
pub(crate) fn decode_sessions(text: &str) -> Option<Vec<SessionEntry>> {
    decode_entries(text, SESSION_ITEMS, |s| {
        Some(SessionEntry {
            id: s[0].to_owned(),
            goal: s[1].to_owned(),
            outcome: s[2].to_owned(),
            success: parse_flag(s[3])?,
            final_url: s[4].to_owned(),
            timestamp: s[5].to_owned(),
            turns_used: s[6].parse().ok()?,
            duration_ms: s[7].parse().ok()?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(effect: Option<&str>, verified: bool) -> TrajectoryStep {
        TrajectoryStep {
            url: "https://shop.example.com/ä?q=1:2".to_owned(),
            action: "{\"action\":\"click\",\"selector\":\"@e3\"}".to_owned(),
            snapshot_hash: "a1b2".to_owned(),
            verified,
            expected_effect: effect.map(str::to_owned),
        }
    }

    #[test]
    fn steps_round_trip_and_keep_an_empty_expected_effect_apart_from_none() {
        let steps = vec![
            step(None, true),
            step(Some(""), false),
            step(Some("=cart shows 1"), true),
        ];
        let encoded = encode_steps(&steps);
        assert_eq!(decode_steps(&encoded), Some(steps));
        assert_eq!(decode_steps(""), Some(Vec::new()));
    }

    #[test]
    fn sessions_round_trip() {
        let sessions = vec![SessionEntry {
            id: "run_1".to_owned(),
            goal: "buy: a watch".to_owned(),
            outcome: "".to_owned(),
            success: false,
            final_url: "https://x.test/".to_owned(),
            timestamp: "2026-01-01T00:00:00.000Z".to_owned(),
            turns_used: u32::MAX,
            duration_ms: u64::MAX,
        }];
        assert_eq!(decode_sessions(&encode_sessions(&sessions)), Some(sessions));
    }

    #[test]
    fn malformed_lists_are_refused() {
        for bad in [
            "3:ab",                 // shorter than its length
            "x:ab",                 // no length
            "2:ab",                 // a step needs five items
            "1:a1:b1:c1:20:",       // verified is neither 0 nor 1
            "1:a1:b1:c1:11:x",      // an expected effect without its marker
            "1:a1:b1:c1:11:=extra", // a trailing partial item
        ] {
            assert_eq!(decode_steps(bad), None, "{bad:?}");
        }
        assert_eq!(decode_sessions("1:a1:b1:c1:11:d1:e1:x1:0"), None);
        assert_eq!(decode_texts("5:a"), None);
        assert_eq!(
            decode_texts(&encode_texts(["a", "", "ü"])),
            Some(vec!["a".to_owned(), String::new(), "ü".to_owned()])
        );
    }
}
