//! Reverse templating: turning literals that came from memory back into `${key}` tokens.
//!
//! A [`SnapshotIndex`] is built once per snapshot: a map from each eligible value to the one
//! key chosen for it, and a set of secrets to scrub. Templating a call then costs one hash
//! lookup per string parameter plus a scan of that string for secrets, whatever the size of
//! the snapshot ([`baseline`] holds the parameters × keys algorithm it replaces, for tests and
//! benchmarks).
//!
//! Secrets are scrubbed with a two-byte prefix filter: a 64 Ki-bit table says whether any
//! secret starts with the byte pair at a position, so most positions cost one bit test; the
//! rare hits try the secrets starting with that byte, longest first (leftmost-longest
//! match). One-byte secrets have their own 256-entry table.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;

use serde_json::Value;

use crate::error::Result;
use crate::memory::{Snapshot, SnapshotItem};
use crate::path::{JsonPath, MAX_DEPTH};

/// The tools whose writes are trusted regardless of the value's length, by default.
pub const DEFAULT_KNOWN_WRITERS: &[&str] = &[
    "merchantFactory_*",
    "testUser_*",
    "rememberWithAi",
    "rememberText",
    "rememberNumber",
    "inputTextRandom",
];

/// The rules of reverse templating.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TemplatePolicy {
    /// The fewest characters (Unicode scalar values) an ordinary value needs to be
    /// templated. Default 8.
    pub min_chars: usize,
    /// Tool name patterns (exact, or a prefix ending in `*`) whose writes are templated
    /// whatever their length.
    pub known_writers: Vec<String>,
    /// Report substitutions without changing the parameters.
    pub dry_run: bool,
    /// Also template a known writer's value of at least `min_chars` characters where it
    /// stands inside a longer string (`Welcome, ${merchant_name}`). Off by default: Decision
    /// 024's rule is the exact full-field match.
    pub inside: bool,
}

impl Default for TemplatePolicy {
    fn default() -> Self {
        TemplatePolicy {
            min_chars: 8,
            known_writers: DEFAULT_KNOWN_WRITERS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
            dry_run: false,
            inside: false,
        }
    }
}

impl TemplatePolicy {
    /// Only sensitive values are templated and scrubbed: what a tool log keeps.
    pub fn secrets_only() -> Self {
        TemplatePolicy {
            min_chars: usize::MAX,
            known_writers: Vec::new(),
            dry_run: false,
            inside: false,
        }
    }

    /// With `min_chars` as the fewest characters an ordinary value needs.
    #[must_use]
    pub fn with_min_chars(mut self, min_chars: usize) -> Self {
        self.min_chars = min_chars;
        self
    }

    /// With `patterns` as the known writers.
    #[must_use]
    pub fn with_known_writers(mut self, patterns: Vec<String>) -> Self {
        self.known_writers = patterns;
        self
    }

    /// Reporting only, or not.
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Templating known writers' values inside longer strings, or not.
    #[must_use]
    pub fn with_inside(mut self, inside: bool) -> Self {
        self.inside = inside;
        self
    }

    fn is_known_writer(&self, tool: &str) -> bool {
        self.known_writers
            .iter()
            .any(|pattern| matches_pattern(pattern, tool))
    }
}

/// Whether `tool` matches `pattern`: the exact name, or a prefix ending in `*`.
pub(crate) fn matches_pattern(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => tool == pattern,
    }
}

/// Why a literal became a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The value is sensitive: it is always templated.
    Sensitive,
    /// The key was written by a known writer.
    KnownWriter,
    /// The value is at least the minimum length.
    LongValue,
    /// A secret inside a longer string was replaced by its token.
    ScrubbedSecret,
    /// A known writer's value inside a longer string was replaced by its token.
    Inside,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reason::Sensitive => "sensitive",
            Reason::KnownWriter => "known writer",
            Reason::LongValue => "long value",
            Reason::ScrubbedSecret => "scrubbed secret",
            Reason::Inside => "known writer, inside a string",
        })
    }
}

/// One substitution, for review.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Substitution {
    /// The index of the tool call in the caller's list, from 0. Shown numbered from 1
    /// (`tool 1` is the first call), as every command prints tools.
    pub tool_index: usize,
    /// The JSON path of the string.
    pub path: String,
    /// The key whose token replaced the literal.
    pub key: String,
    /// Why.
    pub reason: Reason,
}

impl fmt::Display for Substitution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tool {} {}: ${{{}}} ({})",
            self.tool_index + 1,
            self.path,
            self.key,
            self.reason
        )
    }
}

/// The key chosen for one value.
#[derive(Clone, Copy, Debug)]
struct Choice<'s> {
    key: &'s str,
    reason: Reason,
    known_writer: bool,
    written_at: Option<i64>,
}

impl Choice<'_> {
    /// The deterministic order among keys with one value: known writer first, then the
    /// most recently written, then the smallest key.
    fn better_than(&self, other: &Choice<'_>) -> bool {
        let rank = other
            .known_writer
            .cmp(&self.known_writer)
            .then_with(|| other.written_at.cmp(&self.written_at))
            .then_with(|| self.key.cmp(other.key));
        rank == Ordering::Less
    }
}

/// Whether `${key}` would read back as the key under interpolation.
pub(crate) fn is_token_safe_key(key: &str) -> bool {
    !key.is_empty()
        && !key.contains('}')
        && !key.starts_with("memory.")
        && !key.starts_with("args.")
}

fn holds_token(text: &str) -> bool {
    text.contains("${") || text.contains("{{")
}

/// Decides whether `item` under `key` may be templated, and why.
fn eligibility<'s>(
    key: &'s str,
    item: &'s SnapshotItem,
    policy: &TemplatePolicy,
    honor_self_reference: bool,
) -> Option<(&'s str, Choice<'s>)> {
    let value = item.value.as_deref()?;
    if value.is_empty() || !is_token_safe_key(key) || holds_token(value) {
        return None;
    }
    if honor_self_reference && !item.existed_before {
        return None;
    }
    let known_writer = item
        .written_by
        .as_deref()
        .is_some_and(|tool| policy.is_known_writer(tool));
    let reason = if item.sensitive {
        Reason::Sensitive
    } else if known_writer {
        Reason::KnownWriter
    } else if value.chars().count() >= policy.min_chars {
        Reason::LongValue
    } else {
        return None;
    };
    let choice = Choice {
        key,
        reason,
        known_writer,
        written_at: item.written_at.map(agent_memory_core::Timestamp::as_millis),
    };
    Some((value, choice))
}

/// The secrets of a snapshot, with the prefix tables that make scanning for them cheap.
#[derive(Debug)]
pub(crate) struct SecretSet<'s> {
    /// `(secret, replacement)`, sorted longest first.
    secrets: Vec<(&'s str, String)>,
    /// Indexes into `secrets` by first byte, longest first.
    by_first_byte: HashMap<u8, Vec<usize>>,
    /// Bit `b0 << 8 | b1` set: some secret of two or more bytes starts with `b0 b1`.
    pairs: Vec<u64>,
    /// Entry `b` set: some one-byte secret is `b`.
    singles: [bool; 256],
}

impl<'s> SecretSet<'s> {
    /// A set of `(secret, replacement)` pairs; empty secrets are ignored.
    pub(crate) fn new(mut secrets: Vec<(&'s str, String)>) -> Self {
        secrets.retain(|(secret, _)| !secret.is_empty());
        secrets.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(b.0)));
        secrets.dedup_by(|a, b| a.0 == b.0);
        let mut set = SecretSet {
            secrets: Vec::new(),
            by_first_byte: HashMap::new(),
            pairs: if secrets.is_empty() {
                Vec::new()
            } else {
                vec![0; 1024]
            },
            singles: [false; 256],
        };
        for (i, (secret, _)) in secrets.iter().enumerate() {
            let bytes = secret.as_bytes();
            set.by_first_byte.entry(bytes[0]).or_default().push(i);
            match bytes {
                [single] => set.singles[usize::from(*single)] = true,
                [b0, b1, ..] => {
                    let bit = usize::from(*b0) << 8 | usize::from(*b1);
                    set.pairs[bit / 64] |= 1 << (bit % 64);
                }
                [] => {}
            }
        }
        set.secrets = secrets;
        set
    }

    /// Whether the set holds no secret.
    pub(crate) fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// `value` with every secret replaced in every string, number and object key, at any
    /// depth (values nested deeper than [`MAX_DEPTH`] are replaced whole by `[too deep]`, so
    /// no secret survives in them); borrowed when none occurs. A number whose digits hold a
    /// secret (a PIN sent as `1234`) becomes the string of its masked digits.
    pub(crate) fn scrub_json<'v>(&self, value: &'v Value) -> Cow<'v, Value> {
        self.scrub_json_at(value, 0)
    }

    fn scrub_json_at<'v>(&self, value: &'v Value, depth: usize) -> Cow<'v, Value> {
        if self.secrets.is_empty() {
            return Cow::Borrowed(value);
        }
        if depth > MAX_DEPTH {
            return Cow::Owned(Value::String("[too deep]".to_owned()));
        }
        match value {
            Value::String(text) => match self.scrub(text, |_| {}) {
                Cow::Borrowed(_) => Cow::Borrowed(value),
                Cow::Owned(new) => Cow::Owned(Value::String(new)),
            },
            Value::Array(items) => {
                let mut out: Option<Vec<Value>> = None;
                for (i, item) in items.iter().enumerate() {
                    if let Cow::Owned(new) = self.scrub_json_at(item, depth + 1) {
                        out.get_or_insert_with(|| items.clone())[i] = new;
                    }
                }
                out.map_or(Cow::Borrowed(value), |items| {
                    Cow::Owned(Value::Array(items))
                })
            }
            Value::Object(map) => {
                let mut out: Option<serde_json::Map<String, Value>> = None;
                for (i, (k, v)) in map.iter().enumerate() {
                    let key = self.scrub(k, |_| {});
                    let item = self.scrub_json_at(v, depth + 1);
                    if out.is_none()
                        && (matches!(key, Cow::Owned(_)) || matches!(item, Cow::Owned(_)))
                    {
                        out = Some(
                            map.iter()
                                .take(i)
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect(),
                        );
                    }
                    if let Some(out) = out.as_mut() {
                        out.insert(key.into_owned(), item.into_owned());
                    }
                }
                out.map_or(Cow::Borrowed(value), |map| Cow::Owned(Value::Object(map)))
            }
            Value::Number(number) => match self.scrub(&number.to_string(), |_| {}) {
                Cow::Borrowed(_) => Cow::Borrowed(value),
                Cow::Owned(masked) => Cow::Owned(Value::String(masked)),
            },
            Value::Null | Value::Bool(_) => Cow::Borrowed(value),
        }
    }

    fn may_start_at(&self, bytes: &[u8], at: usize) -> bool {
        let b0 = bytes[at];
        if self.singles[usize::from(b0)] {
            return true;
        }
        match bytes.get(at + 1) {
            Some(&b1) => {
                let bit = usize::from(b0) << 8 | usize::from(b1);
                self.pairs[bit / 64] & (1 << (bit % 64)) != 0
            }
            None => false,
        }
    }

    /// `text` with every secret replaced, leftmost-longest; borrowed when none occurs.
    pub(crate) fn scrub<'t>(
        &self,
        text: &'t str,
        mut on_scrub: impl FnMut(&'s str),
    ) -> Cow<'t, str> {
        if self.secrets.is_empty() {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        let mut out: Option<String> = None;
        let mut copied = 0;
        let mut at = 0;
        while at < bytes.len() {
            if !self.may_start_at(bytes, at) {
                at += 1;
                continue;
            }
            let hit = self.by_first_byte.get(&bytes[at]).and_then(|candidates| {
                candidates
                    .iter()
                    .map(|&i| &self.secrets[i])
                    .find(|(secret, _)| bytes[at..].starts_with(secret.as_bytes()))
            });
            let Some((secret, replacement)) = hit else {
                at += 1;
                continue;
            };
            // A secret is valid UTF-8 and its first byte matched here, so `at` and
            // `at + secret.len()` are character boundaries.
            let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buffer.push_str(&text[copied..at]);
            buffer.push_str(replacement);
            on_scrub(secret);
            at += secret.len();
            copied = at;
        }
        match out {
            None => Cow::Borrowed(text),
            Some(mut buffer) => {
                buffer.push_str(&text[copied..]);
                Cow::Owned(buffer)
            }
        }
    }
}

/// A snapshot prepared for templating: built once, used for any number of calls.
///
/// ```
/// use agent_memory_core::Timestamp;
/// use agent_memory_recording::{Memory, Provenance, Reason, SnapshotIndex, TemplatePolicy};
/// use serde_json::json;
///
/// let mut memory = Memory::new();
/// let at = Timestamp::from_millis(1);
/// memory.remember("merchant_email", "shop+abc123@example.com", Provenance::tool("merchantFactory_load", at));
/// memory.remember("country", "US", Provenance::unknown(at));
/// let snapshot = memory.snapshot();
/// let policy = TemplatePolicy::default();
/// let index = SnapshotIndex::new(&snapshot, &policy);
///
/// let mut report = Vec::new();
/// let call = json!({"email": "shop+abc123@example.com", "country": "US"});
/// let templated = index.templatize(&call, 0, &mut report)?;
/// assert_eq!(*templated, json!({"email": "${merchant_email}", "country": "US"}));
/// assert_eq!(report[0].reason, Reason::KnownWriter);
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
#[derive(Debug)]
pub struct SnapshotIndex<'s> {
    by_value: HashMap<&'s str, Choice<'s>>,
    secrets: SecretSet<'s>,
    /// Values matched inside longer strings (templated with `inside`, reported by lint).
    inside: SecretSet<'s>,
    dry_run: bool,
    templates_inside: bool,
}

/// Which values are looked for inside longer strings.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inside {
    /// None.
    Nothing,
    /// Known writers' values of at least the minimum length (templating with `inside`).
    KnownWriters,
    /// Every secret, and every eligible value of at least the minimum length (the lint's
    /// `contains`).
    Eligible,
}

impl<'s> SnapshotIndex<'s> {
    /// Indexes `snapshot` under `policy`. Keys that this very call created (not
    /// `existed_before`) are not eligible.
    pub fn new(snapshot: &'s Snapshot, policy: &TemplatePolicy) -> Self {
        let inside = if policy.inside {
            Inside::KnownWriters
        } else {
            Inside::Nothing
        };
        SnapshotIndex::build(snapshot, policy, true, inside)
    }

    pub(crate) fn build(
        snapshot: &'s Snapshot,
        policy: &TemplatePolicy,
        honor_self_reference: bool,
        inside: Inside,
    ) -> Self {
        let mut by_value: HashMap<&'s str, Choice<'s>> = HashMap::new();
        let mut secrets = Vec::new();
        for (key, item) in &snapshot.entries {
            if item.sensitive
                && let Some(value) = item.value.as_deref().filter(|v| !v.is_empty())
            {
                let replacement = if is_token_safe_key(key) {
                    format!("${{{key}}}")
                } else {
                    "[sensitive]".to_owned()
                };
                secrets.push((value, replacement));
            }
            let Some((value, choice)) = eligibility(key, item, policy, honor_self_reference) else {
                continue;
            };
            by_value
                .entry(value)
                .and_modify(|held| {
                    if choice.better_than(held) {
                        *held = choice;
                    }
                })
                .or_insert(choice);
        }
        for (key, value) in snapshot.retired_secrets() {
            let replacement = if is_token_safe_key(key) {
                format!("${{{key}}}")
            } else {
                "[sensitive]".to_owned()
            };
            secrets.push((value.as_str(), replacement));
        }
        let long_enough = |value: &str| value.chars().count() >= policy.min_chars.max(1);
        let inside_values = by_value
            .iter()
            .filter(|(value, choice)| match inside {
                Inside::Nothing => false,
                Inside::KnownWriters => choice.known_writer && long_enough(value),
                Inside::Eligible => choice.reason == Reason::Sensitive || long_enough(value),
            })
            .map(|(value, choice)| (*value, format!("${{{}}}", choice.key)))
            .collect();
        SnapshotIndex {
            by_value,
            secrets: SecretSet::new(secrets),
            inside: SecretSet::new(inside_values),
            dry_run: policy.dry_run,
            templates_inside: inside == Inside::KnownWriters,
        }
    }

    /// The keys of the values standing inside `text` (leftmost-longest, in order), for a
    /// text that is not itself a value.
    pub(crate) fn keys_inside(&self, text: &str) -> Vec<(&'s str, Reason)> {
        if holds_token(text) || self.by_value.contains_key(text) {
            return Vec::new();
        }
        let mut found = Vec::new();
        let _ = self.inside.scrub(text, |value| {
            if let Some(choice) = self.by_value.get(value) {
                found.push((choice.key, choice.reason));
            }
        });
        found
    }

    /// The key a whole-field literal would be templated to, and why.
    pub fn key_for(&self, literal: &str) -> Option<(&'s str, Reason)> {
        if holds_token(literal) {
            return None;
        }
        self.by_value
            .get(literal)
            .map(|choice| (choice.key, choice.reason))
    }

    /// `text` with every secret of the snapshot replaced by its token.
    pub fn scrub<'t>(&self, text: &'t str) -> Cow<'t, str> {
        self.secrets.scrub(text, |_| {})
    }

    /// Templates the parameters of call `tool_index`, appending each substitution to
    /// `report`. Returns the input borrowed when nothing changes (always, in dry-run mode).
    pub fn templatize<'v>(
        &self,
        parameters: &'v Value,
        tool_index: usize,
        report: &mut Vec<Substitution>,
    ) -> Result<Cow<'v, Value>> {
        let mut path = JsonPath::default();
        let changed = self.walk(parameters, tool_index, &mut path, report)?;
        Ok(match changed {
            Some(new) if !self.dry_run => Cow::Owned(new),
            _ => Cow::Borrowed(parameters),
        })
    }

    fn walk<'v>(
        &self,
        value: &'v Value,
        tool_index: usize,
        path: &mut JsonPath<'v>,
        report: &mut Vec<Substitution>,
    ) -> Result<Option<Value>> {
        if path.depth() > MAX_DEPTH {
            return Err(path.too_deep());
        }
        match value {
            Value::String(text) => Ok(self
                .string(text, tool_index, path, report)
                .map(Value::String)),
            Value::Array(items) => {
                let mut out: Option<Vec<Value>> = None;
                for (i, item) in items.iter().enumerate() {
                    path.push_index(i);
                    let changed = self.walk(item, tool_index, path, report)?;
                    path.pop();
                    if let Some(new) = changed {
                        out.get_or_insert_with(|| items.clone())[i] = new;
                    }
                }
                Ok(out.map(Value::Array))
            }
            Value::Object(map) => {
                let mut out: Option<serde_json::Map<String, Value>> = None;
                for (key, item) in map {
                    path.push_key(key);
                    let changed = self.walk(item, tool_index, path, report)?;
                    let scrubbed_key = self.secrets.scrub(key, |_| {});
                    if let Cow::Owned(_) = scrubbed_key {
                        report.push(self.scrubbed(tool_index, path, "[object key]"));
                    }
                    path.pop();
                    if changed.is_none() && matches!(scrubbed_key, Cow::Borrowed(_)) {
                        continue;
                    }
                    let out = out.get_or_insert_with(|| map.clone());
                    let new = match changed {
                        Some(new) => new,
                        None => item.clone(),
                    };
                    if let Cow::Owned(new_key) = scrubbed_key {
                        out.remove(key);
                        out.insert(new_key, new);
                    } else {
                        out.insert(key.clone(), new);
                    }
                }
                Ok(out.map(Value::Object))
            }
            // Non-string scalars are never templated; but a number whose digits hold a secret
            // (a PIN sent as `1234`) becomes the string of its masked digits, so the secret
            // is never stored.
            Value::Number(number) => Ok(
                match self.scrub_secrets(&number.to_string(), tool_index, path, report) {
                    Cow::Borrowed(_) => None,
                    Cow::Owned(masked) => Some(Value::String(masked)),
                },
            ),
            Value::Null | Value::Bool(_) => Ok(None),
        }
    }

    fn string(
        &self,
        text: &str,
        tool_index: usize,
        path: &JsonPath<'_>,
        report: &mut Vec<Substitution>,
    ) -> Option<String> {
        if let Some((key, reason)) = self.key_for(text) {
            report.push(Substitution {
                tool_index,
                path: path.render(),
                key: key.to_owned(),
                reason,
            });
            return Some(format!("${{{key}}}"));
        }
        let out = self.scrub_secrets(text, tool_index, path, report);
        // Inside a longer string only when the string holds no token syntax (its own or a
        // scrubbed secret's): then the template reads back exactly.
        let out = match out {
            Cow::Borrowed(text) if self.templates_inside && !holds_token(text) => {
                let mut inserted = Vec::new();
                let templated = self.inside.scrub(text, |value| inserted.push(value));
                for value in inserted {
                    if let Some(choice) = self.by_value.get(value) {
                        report.push(Substitution {
                            tool_index,
                            path: path.render(),
                            key: choice.key.to_owned(),
                            reason: Reason::Inside,
                        });
                    }
                }
                templated
            }
            other => other,
        };
        match out {
            Cow::Borrowed(_) => None,
            Cow::Owned(new) => Some(new),
        }
    }

    /// `text` with every secret replaced, each replacement reported under its key.
    fn scrub_secrets<'t>(
        &self,
        text: &'t str,
        tool_index: usize,
        path: &JsonPath<'_>,
        report: &mut Vec<Substitution>,
    ) -> Cow<'t, str> {
        let mut scrubbed = Vec::new();
        let out = self.secrets.scrub(text, |secret| scrubbed.push(secret));
        for secret in scrubbed {
            let key = self
                .by_value
                .get(secret)
                .map_or("[sensitive]", |choice| choice.key);
            report.push(self.scrubbed(tool_index, path, key));
        }
        out
    }

    fn scrubbed(&self, tool_index: usize, path: &JsonPath<'_>, key: &str) -> Substitution {
        Substitution {
            tool_index,
            path: path.render(),
            key: key.to_owned(),
            reason: Reason::ScrubbedSecret,
        }
    }
}

/// What [`templatize`] returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Templated<'v> {
    /// The parameters with tokens (the input, borrowed, when nothing changed).
    pub parameters: Cow<'v, Value>,
    /// Every substitution, in the order met.
    pub substitutions: Vec<Substitution>,
}

/// Templates one call's parameters under its snapshot (builds a [`SnapshotIndex`]; to
/// template many calls under one snapshot, build the index once instead).
pub fn templatize<'v>(
    parameters: &'v Value,
    snapshot: &Snapshot,
    policy: &TemplatePolicy,
) -> Result<Templated<'v>> {
    let index = SnapshotIndex::new(snapshot, policy);
    let mut substitutions = Vec::new();
    let parameters = index.templatize(parameters, 0, &mut substitutions)?;
    Ok(Templated {
        parameters,
        substitutions,
    })
}

pub mod baseline {
    //! The benchmark baseline and test oracle of reverse templating: the parameters × keys
    //! algorithm, comparing every string with every key of the snapshot. Same rules, same
    //! answers as [`SnapshotIndex`](super::SnapshotIndex) for whole-field matches, without
    //! secret scrubbing or templating inside strings. Not for production use: its cost grows
    //! with parameters × keys.

    use serde_json::Value;

    use super::{TemplatePolicy, eligibility};
    use crate::memory::Snapshot;

    /// Templates `parameters` by comparing every string with every key.
    pub fn templatize(parameters: &Value, snapshot: &Snapshot, policy: &TemplatePolicy) -> Value {
        match parameters {
            Value::String(text) => {
                let mut best: Option<super::Choice<'_>> = None;
                for (key, item) in &snapshot.entries {
                    let Some((value, choice)) = eligibility(key, item, policy, true) else {
                        continue;
                    };
                    if value == text
                        && !super::holds_token(text)
                        && best.is_none_or(|held| choice.better_than(&held))
                    {
                        best = Some(choice);
                    }
                }
                match best {
                    Some(choice) => Value::String(format!("${{{}}}", choice.key)),
                    None => parameters.clone(),
                }
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| templatize(item, snapshot, policy))
                    .collect(),
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| (k.clone(), templatize(v, snapshot, policy)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}
