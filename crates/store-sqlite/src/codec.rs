//! Lists kept in one column: a trajectory's steps and a site's session log (whose codec is
//! the site log's, `agent_memory_core::store::site_log`). Each is a list in the format of
//! [`encode_texts`] (`<byte length>:<text>` items), a fixed number of items per entry;
//! decoding fails (`None`) on anything that is not such a list. A run's artifact paths are a
//! plain [`encode_texts`] list.

use agent_memory_core::store::browser::TrajectoryStep;
use agent_memory_core::store::trajectory::{decode_texts, encode_texts, next_text};

/// Items per encoded step: url, action, snapshot hash, verified, expected effect.
const STEP_ITEMS: usize = 5;

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

/// Decodes a list of entries of `width` items each; `entry` takes its items from the iterator
/// in order.
fn decode_entries<T>(
    text: &str,
    width: usize,
    mut entry: impl FnMut(&mut std::vec::IntoIter<String>) -> Option<T>,
) -> Option<Vec<T>> {
    let items = decode_texts(text)?;
    if items.len() % width != 0 {
        return None;
    }
    let count = items.len() / width;
    let mut items = items.into_iter();
    (0..count).map(|_| entry(&mut items)).collect()
}

/// Encodes a trajectory's steps. An expected effect is its text behind a `=`, so an empty
/// effect stays apart from none (the empty item).
pub(crate) fn encode_steps(steps: &[TrajectoryStep]) -> String {
    let effects: Vec<String> = steps
        .iter()
        .map(|s| {
            s.expected_effect
                .as_ref()
                .map_or_else(String::new, |e| format!("={e}"))
        })
        .collect();
    encode_texts(steps.iter().zip(&effects).flat_map(|(s, effect)| {
        [
            s.url.as_str(),
            &s.action,
            &s.snapshot_hash,
            flag(s.verified),
            effect,
        ]
    }))
}

/// Decodes [`encode_steps`].
pub(crate) fn decode_steps(text: &str) -> Option<Vec<TrajectoryStep>> {
    decode_entries(text, STEP_ITEMS, |s| {
        Some(TrajectoryStep {
            url: s.next()?,
            action: s.next()?,
            snapshot_hash: s.next()?,
            verified: parse_flag(&s.next()?)?,
            expected_effect: match s.next()? {
                effect if effect.is_empty() => None,
                effect => Some(effect.strip_prefix('=')?.to_owned()),
            },
        })
    })
}

/// How many steps [`encode_steps`] encoded in `text`, and how many of them are verified,
/// read without copying an item; `None` when `text` is not such a list.
pub(crate) fn step_counts(mut text: &str) -> Option<(usize, usize)> {
    let (mut steps, mut verified) = (0, 0);
    while !text.is_empty() {
        let mut flag = "";
        for item in 0..STEP_ITEMS {
            let (value, rest) = next_text(text)?;
            if item == 3 {
                flag = value;
            }
            text = rest;
        }
        steps += 1;
        verified += usize::from(parse_flag(flag)?);
    }
    Some((steps, verified))
}

pub(crate) use agent_memory_core::store::site_log::{decode_sessions, encode_sessions};

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
    fn step_counts_agree_with_the_decoded_steps() {
        let steps = vec![
            step(None, true),
            step(Some(""), false),
            step(Some("=cart shows 1"), true),
        ];
        assert_eq!(step_counts(&encode_steps(&steps)), Some((3, 2)));
        assert_eq!(step_counts(""), Some((0, 0)));
        // Not a step list: a step cut short, or a verified flag that is no flag.
        assert_eq!(step_counts("1:a1:b"), None);
        assert_eq!(step_counts("1:a1:b1:c1:x0:"), None);
    }

    #[test]
    fn sessions_round_trip() {
        let sessions = vec![agent_memory_core::store::browser::SessionEntry {
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
    }
}
