//! The lint: literals in a trail that equal a memory value, current or past, or hold one
//! inside a longer string (`Welcome, Lindenhof Bakery`). Each is a recording that goes stale
//! when memory changes.

use serde_json::Value;

use crate::error::Result;
use crate::memory::Snapshot;
use crate::path::{JsonPath, MAX_DEPTH};
use crate::templatize::{Inside, Reason, SnapshotIndex, TemplatePolicy};
use crate::trail::Trail;

/// Which memory a stale literal was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// The memory given as current.
    Current,
    /// A past snapshot (by its index in the list given).
    Past(usize),
}

/// How a literal holds a memory value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Found {
    /// The whole literal is the value: its token would replace it.
    Equals,
    /// The value stands inside a longer literal (`contains`).
    Contains,
}

impl Found {
    /// `equals` or `contains`.
    pub fn name(self) -> &'static str {
        match self {
            Found::Equals => "equals",
            Found::Contains => "contains",
        }
    }
}

/// A literal that equals a memory value, or holds one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StaleLiteral {
    /// Where: the step, the tool and the JSON path (`trail[1].recording.android-phone[0].inputText.text`).
    pub location: String,
    /// The key whose value it equals (its token would replace it).
    pub key: String,
    /// Why the key was chosen.
    pub reason: Reason,
    /// Where the value was found.
    pub origin: Origin,
    /// Whether the literal is the value or holds it.
    pub found: Found,
}

/// Finds literals in `trail` equal to eligible values of `current` or of `past` snapshots
/// (the same rules as reverse templating; a literal found in the current memory is not
/// reported again for a past one), and literals holding an eligible value of at least
/// `policy.min_chars` characters inside them (kind [`Found::Contains`]). Self-reference does
/// not apply to linting.
pub fn lint_trail(
    trail: &Trail,
    current: &Snapshot,
    past: &[Snapshot],
    policy: &TemplatePolicy,
) -> Result<Vec<StaleLiteral>> {
    let mut indexes = vec![(
        Origin::Current,
        SnapshotIndex::build(current, policy, false, Inside::Eligible),
    )];
    for (i, snapshot) in past.iter().enumerate() {
        indexes.push((
            Origin::Past(i),
            SnapshotIndex::build(snapshot, policy, false, Inside::Eligible),
        ));
    }
    let mut findings = Vec::new();
    for (location, call) in trail.recorded_calls() {
        let params = call.params_json();
        let mut path = JsonPath::with_prefix(format!("{location}.{}", call.name));
        walk(&params, &mut path, &indexes, &mut findings)?;
    }
    Ok(findings)
}

fn walk<'v>(
    value: &'v Value,
    path: &mut JsonPath<'v>,
    indexes: &[(Origin, SnapshotIndex<'_>)],
    findings: &mut Vec<StaleLiteral>,
) -> Result<()> {
    if path.depth() > MAX_DEPTH {
        return Err(path.too_deep());
    }
    match value {
        Value::String(text) => {
            let hit = indexes
                .iter()
                .find_map(|(origin, index)| index.key_for(text).map(|found| (*origin, found)));
            if let Some((origin, (key, reason))) = hit {
                findings.push(StaleLiteral {
                    location: path.render(),
                    key: key.to_owned(),
                    reason,
                    origin,
                    found: Found::Equals,
                });
                return Ok(());
            }
            let mut seen: Vec<&str> = Vec::new();
            for (origin, index) in indexes {
                for (key, reason) in index.keys_inside(text) {
                    if seen.contains(&key) {
                        continue;
                    }
                    seen.push(key);
                    findings.push(StaleLiteral {
                        location: path.render(),
                        key: key.to_owned(),
                        reason,
                        origin: *origin,
                        found: Found::Contains,
                    });
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push_index(i);
                walk(item, path, indexes, findings)?;
                path.pop();
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                path.push_key(key);
                walk(item, path, indexes, findings)?;
                path.pop();
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
    Ok(())
}
