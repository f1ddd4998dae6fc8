//! Replay as Trailblaze runs a trail: step by step, each call resolved against memory as it
//! stands when the call runs, after the earlier tools wrote to it.
//!
//! A [`Replayer`] starts from the trail's `config.memory` seeds, the caller's values and
//! secrets ([`Seeds`]), and the trail arguments bound to `config.args`. It hands out one
//! [`Dispatch`] at a time: a call to execute, or a step the agent must drive because the
//! device has no recording for it. The caller executes it and reports the memory the tool
//! wrote ([`MemoryWrites`]); only then is the next call resolved. A provisioning tool can so
//! load a new account whose address the sign-in call after it uses.
//!
//! Before anything runs, [`Replayer::analysis`] lists the tokens that cannot resolve: a key
//! memory lacks and that no earlier known writer (a tool matching the known-writer patterns)
//! produces. A known writer with a string `variable` parameter (`rememberText`,
//! `inputTextRandom`, ...) writes that key; any other known writer may write any key.
//!
//! A replay needs no state of its own between calls: [`Replayer::resume`] rebuilds it from
//! the trail, the seeds and the writes reported so far, so a stateless server can compute
//! the next call from `(trail, device, seeds, writes so far)`.
//!
//! Secrets (seeds given as secrets, sensitive writes, and arguments that captured one) are
//! resolved into the calls, since the tools need them, but [`Dispatch`] serializes with every
//! secret masked as its `${key}` token, and [`Replayer::mask`] masks any other value.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use agent_memory_core::Timestamp;
use agent_memory_core::excerpt::Excerpt;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value as Json;

use crate::args::{ARGS_PREFIX, Args, malformed, token_bodies};
use crate::error::{Error, MissingKey, Result};
use crate::interpolate::{MissingKeys, Resolution, interpolate_at, interpolate_str, resolve};
use crate::memory::{Lookup, Memory, Provenance};
use crate::path::{JsonPath, MAX_DEPTH};
use crate::templatize::{DEFAULT_KNOWN_WRITERS, SecretSet, matches_pattern};
use crate::trail::{
    DeviceRecordings, LegacyItem, LegacyTrailhead, Step, StepKind, ToolCall, Trail,
};

/// The values a replay starts from, on top of the trail's `config.memory`.
///
/// Precedence is Trailblaze's: `config.memory`, then [`Seeds::memory`], then
/// [`Seeds::secrets`], each winning over the ones before on the same key.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Seeds {
    /// Plain memory values (`--memory`, `--set`).
    pub memory: BTreeMap<String, String>,
    /// Sensitive memory values (`--secret`): resolved into calls, masked in output.
    pub secrets: BTreeMap<String, String>,
    /// Values of the trail's declared arguments (`--arg`), coerced to their types.
    pub args: BTreeMap<String, Json>,
}

impl Seeds {
    /// No values.
    pub fn new() -> Self {
        Seeds::default()
    }

    /// With the plain value `key` = `value`.
    #[must_use]
    pub fn with_memory(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.memory.insert(key.into(), value.into());
        self
    }

    /// With the secret `key` = `value`.
    #[must_use]
    pub fn with_secret(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets.insert(key.into(), value.into());
        self
    }

    /// With the argument `name` = `value`.
    #[must_use]
    pub fn with_arg(mut self, name: impl Into<String>, value: Json) -> Self {
        self.args.insert(name.into(), value);
        self
    }
}

/// How a replay treats what it cannot resolve and whom it trusts to write memory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// A token memory lacks when its call is dispatched: by default the dispatch fails,
    /// naming it; [`MissingKeys::Leave`] sends it as written (what Trailblaze does).
    pub missing: MissingKeys,
    /// Tool name patterns (exact, or a prefix ending in `*`) whose calls write memory.
    pub known_writers: Vec<String>,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            missing: MissingKeys::Fail,
            known_writers: DEFAULT_KNOWN_WRITERS
                .iter()
                .map(|p| (*p).to_owned())
                .collect(),
        }
    }
}

impl ReplayOptions {
    /// The defaults, with `missing` as the policy for unresolved tokens.
    #[must_use]
    pub fn with_missing(mut self, missing: MissingKeys) -> Self {
        self.missing = missing;
        self
    }
}

/// What a step does on the device replayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepAction {
    /// Replay this many recorded calls (zero: a deliberate no-op).
    Replay(usize),
    /// No recording for this device (or `recordable: false`): the agent drives the step.
    Agent,
}

/// One step of a replay, before anything runs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedStep {
    /// The step's kind and text; `None` for legacy top-level `tools`.
    pub objective: Option<(StepKind, String)>,
    /// Whether the step is the trail's trailhead (its step 0).
    pub trailhead: bool,
    /// The classifier whose recording was chosen (unified form only).
    pub classifier: Option<String>,
    /// What happens.
    pub action: StepAction,
}

/// A call ready to execute.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ResolvedCall {
    /// The tool.
    pub tool: String,
    /// Its parameters, every token resolved (secrets included: not for printing).
    pub parameters: Json,
    /// Where the call is in the trail (`trail[1].recording.android-phone[0]`).
    pub location: String,
    masked: Json,
}

impl ResolvedCall {
    /// The parameters with every secret masked as its `${key}` token: what may be shown.
    pub fn masked_parameters(&self) -> &Json {
        &self.masked
    }
}

impl fmt::Debug for ResolvedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedCall")
            .field("tool", &self.tool)
            .field("parameters", &self.masked)
            .field("location", &self.location)
            .finish()
    }
}

/// What to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Execute this call, then report what it wrote to memory.
    Call(ResolvedCall),
    /// The agent drives this step, then reports what it wrote to memory.
    Agent,
}

/// One thing a replay hands out: a call or an agent-driven step, with its place.
///
/// Serializes (and debug-prints) with secrets masked.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Dispatch {
    /// How many dispatches came before this one.
    pub index: usize,
    /// The step (its index in [`Replayer::outline`]).
    pub step: usize,
    /// The step's kind and text; `None` for legacy top-level `tools`.
    pub objective: Option<(StepKind, String)>,
    /// The classifier whose recording the call comes from (unified form).
    pub classifier: Option<String>,
    /// What to do.
    pub action: Action,
    /// The memory keys masked in the shown parameters (the caller fills their tokens).
    pub masked_keys: Vec<String>,
}

impl Serialize for Dispatch {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("index", &self.index)?;
        map.serialize_entry("step", &self.step)?;
        if let Some((kind, text)) = &self.objective {
            map.serialize_entry("kind", kind.key())?;
            map.serialize_entry("objective", text)?;
        }
        if let Some(classifier) = &self.classifier {
            map.serialize_entry("classifier", classifier)?;
        }
        match &self.action {
            Action::Call(call) => {
                map.serialize_entry("action", "call")?;
                map.serialize_entry("tool", &call.tool)?;
                map.serialize_entry("parameters", &call.masked)?;
                map.serialize_entry("location", &call.location)?;
            }
            Action::Agent => map.serialize_entry("action", "agent")?,
        }
        if !self.masked_keys.is_empty() {
            map.serialize_entry("masked", &self.masked_keys)?;
        }
        map.end()
    }
}

/// What one call (or agent-driven step) wrote to memory. Sets apply before deletions, so a
/// key in both is deleted, as in Trailblaze.
#[derive(Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemoryWrites {
    /// Plain values written (a key marked sensitive stays sensitive).
    pub set: BTreeMap<String, String>,
    /// Sensitive values written.
    pub secrets: BTreeMap<String, String>,
    /// Keys deleted (their sensitive marks stay).
    pub delete: Vec<String>,
}

impl fmt::Debug for MemoryWrites {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryWrites")
            .field("set", &self.set)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("delete", &self.delete)
            .finish()
    }
}

impl MemoryWrites {
    /// Nothing written.
    pub fn new() -> Self {
        MemoryWrites::default()
    }

    /// With `key` = `value` written.
    #[must_use]
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set.insert(key.into(), value.into());
        self
    }

    /// With the secret `key` = `value` written.
    #[must_use]
    pub fn secret(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.secrets.insert(key.into(), value.into());
        self
    }

    /// With `key` deleted.
    #[must_use]
    pub fn delete(mut self, key: impl Into<String>) -> Self {
        self.delete.push(key.into());
        self
    }

    /// Reads writes from their JSON form, `{"set": {...}, "secrets": {...}, "delete": [...]}`
    /// (every field optional). Errors name the field and never quote a value.
    pub fn from_json(value: &Json) -> Result<Self> {
        let bad = |message: String| Error::Writes { message };
        let Json::Object(map) = value else {
            return Err(bad(format!(
                "memory writes are a JSON object with `set`, `secrets` and `delete`, not {}",
                kind_of(value)
            )));
        };
        let mut writes = MemoryWrites::new();
        for (field, value) in map {
            match field.as_str() {
                "set" => writes.set = string_map("set", value)?,
                "secrets" => writes.secrets = string_map("secrets", value)?,
                "delete" => {
                    let Json::Array(keys) = value else {
                        return Err(bad(format!(
                            "`delete` is a list of keys, not {}",
                            kind_of(value)
                        )));
                    };
                    for (i, key) in keys.iter().enumerate() {
                        let Json::String(key) = key else {
                            return Err(bad(format!(
                                "`delete[{i}]` is a key (a string), not {}",
                                kind_of(key)
                            )));
                        };
                        writes.delete.push(key.clone());
                    }
                }
                other => {
                    return Err(bad(format!(
                        "unknown field {}; memory writes have `set`, `secrets` and `delete`",
                        Excerpt::quoted(other)
                    )));
                }
            }
        }
        Ok(writes)
    }

    /// The JSON form [`MemoryWrites::from_json`] reads. It holds secret values as given:
    /// keep it as the secrets themselves are kept.
    pub fn to_json(&self) -> Json {
        serde_json::json!({
            "set": self.set,
            "secrets": self.secrets,
            "delete": self.delete,
        })
    }
}

fn kind_of(value: &Json) -> &'static str {
    match value {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// A JSON object of strings; an error names the field and key, never the value.
fn string_map(field: &str, value: &Json) -> Result<BTreeMap<String, String>> {
    let Json::Object(map) = value else {
        return Err(Error::Writes {
            message: format!(
                "`{field}` is an object of keys to strings, not {}",
                kind_of(value)
            ),
        });
    };
    map.iter()
        .map(|(key, value)| match value {
            Json::String(text) => Ok((key.clone(), text.clone())),
            other => Err(Error::Writes {
                message: format!("`{field}.{key}` must be a string, not {}", kind_of(other)),
            }),
        })
        .collect()
}

/// One thing to hand out, before resolution.
#[derive(Clone, Debug)]
struct Item<'t> {
    step: usize,
    call: Option<(&'t ToolCall, String)>,
}

/// Memory and arguments, as interpolation reads them.
#[derive(Clone, Default)]
struct State {
    memory: Memory,
    args: Args,
    /// Arguments whose value captured a secret: masked for good, even when the secret's
    /// key is later deleted (Trailblaze's sticky taint).
    tainted_args: BTreeSet<String>,
    /// Every secret value ever held, with its key: masked for good.
    secrets: BTreeMap<String, String>,
}

impl Lookup for State {
    fn lookup(&self, key: &str) -> Option<&str> {
        self.memory.lookup(key)
    }

    fn args(&self) -> Option<&Args> {
        Some(&self.args)
    }
}

impl State {
    fn remember_secret(&mut self, key: &str, value: &str, provenance: Provenance) {
        self.memory.remember_secret(key, value, provenance);
        self.note_secret(key, value);
    }

    fn note_secret(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.secrets.insert(value.to_owned(), key.to_owned());
        }
    }

    fn remember(&mut self, key: &str, value: &str, provenance: Provenance) {
        self.memory.remember(key, value, provenance);
        if self.memory.is_sensitive(key) {
            self.note_secret(key, value);
        }
    }

    /// The secrets to mask, each replaced by its token: memory secrets by `${key}`, tainted
    /// arguments by `${args.name}`.
    fn secret_set(&self) -> SecretSet<'_> {
        let mut pairs: Vec<(&str, String)> = self
            .secrets
            .iter()
            .map(|(value, key)| (value.as_str(), format!("${{{key}}}")))
            .collect();
        for name in &self.tainted_args {
            if let Some(Json::String(value)) = self.args.get(name) {
                pairs.push((value.as_str(), format!("${{{ARGS_PREFIX}{name}}}")));
            }
        }
        SecretSet::new(pairs)
    }
}

/// Replays a trail on one device, one dispatch at a time.
///
/// ```
/// use agent_memory_recording::{Action, MemoryWrites, ReplayOptions, Replayer, Seeds, Trail};
///
/// let trail = Trail::from_yaml_str(
///     "trail:\n\
///      - step: Load a merchant\n  recording:\n    android:\n    - merchantFactory_load: {}\n\
///      - step: Sign in\n  recording:\n    android:\n    - signIn:\n        email: ${merchant_email}\n",
///     "t.yaml",
/// )?;
/// let mut replay = Replayer::new(&trail, "android-phone", &Seeds::new(), ReplayOptions::default())?;
/// // Memory lacks `merchant_email`, but the known writer before the sign-in produces it.
/// assert!(replay.analysis()?.is_empty());
///
/// let first = replay.next_dispatch()?.expect("a call");
/// assert!(matches!(&first.action, Action::Call(call) if call.tool == "merchantFactory_load"));
/// replay.complete(MemoryWrites::new().set("merchant_email", "new@example.com"))?;
///
/// let second = replay.next_dispatch()?.expect("a call");
/// let Action::Call(call) = &second.action else { panic!("a call") };
/// assert_eq!(call.parameters["email"], "new@example.com");
/// replay.complete(MemoryWrites::new())?;
/// assert!(replay.next_dispatch()?.is_none());
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
#[derive(Clone)]
pub struct Replayer<'t> {
    classifier: String,
    options: ReplayOptions,
    outline: Vec<PlannedStep>,
    items: Vec<Item<'t>>,
    state: State,
    done: Vec<MemoryWrites>,
}

impl fmt::Debug for Replayer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replayer")
            .field("classifier", &self.classifier)
            .field("options", &self.options)
            .field("outline", &self.outline)
            .field("dispatches", &self.items.len())
            .field("completed", &self.done.len())
            .field("memory", &self.state.memory)
            .finish_non_exhaustive()
    }
}

impl<'t> Replayer<'t> {
    /// Prepares the replay of `trail` on the device `classifier` (`android-phone`: the
    /// closest recording wins): seeds memory from `config.memory` and `seeds`, and binds the
    /// trail's arguments. Fails when the arguments do not bind, or when `classifier` is empty
    /// and the trail holds recordings (they would all be dropped silently).
    pub fn new(
        trail: &'t Trail,
        classifier: &str,
        seeds: &Seeds,
        options: ReplayOptions,
    ) -> Result<Self> {
        if classifier.trim().is_empty() && trail.has_recordings() {
            return Err(Error::NoDevice);
        }
        let (outline, items) = plan(trail, classifier);
        let state = seed(trail, seeds)?;
        Ok(Replayer {
            classifier: classifier.to_owned(),
            options,
            outline,
            items,
            state,
            done: Vec::new(),
        })
    }

    /// The replay of [`Replayer::new`], after the dispatches whose writes are `done` (one
    /// entry per completed dispatch, in order). Fails when `done` holds more entries than the
    /// trail has dispatches.
    ///
    /// This is what a stateless server needs: each request carries the trail, the device,
    /// the seeds and the writes so far, and the answer is the next dispatch, serialized with
    /// its secrets masked.
    ///
    /// ```
    /// use agent_memory_recording::{MemoryWrites, ReplayOptions, Replayer, Seeds, Trail};
    ///
    /// let trail = Trail::from_yaml_str(
    ///     "trail:\n- step: a\n  recording:\n    android:\n    - load: {}\n    - signIn:\n        pin: ${pin}\n",
    ///     "t.yaml",
    /// )?;
    /// // The client sent the writes of the first call, as JSON.
    /// let done = [MemoryWrites::from_json(&serde_json::json!({"secrets": {"pin": "9999zq"}}))?];
    /// let replay = Replayer::resume(&trail, "android", &Seeds::new(), ReplayOptions::default(), &done)?;
    /// let next = replay.next_dispatch()?.expect("the sign-in");
    /// let shown = serde_json::to_value(&next).expect("a dispatch serializes");
    /// assert_eq!(shown["tool"], "signIn");
    /// assert_eq!(shown["parameters"]["pin"], "${pin}");
    /// # Ok::<(), agent_memory_recording::Error>(())
    /// ```
    pub fn resume(
        trail: &'t Trail,
        classifier: &str,
        seeds: &Seeds,
        options: ReplayOptions,
        done: &[MemoryWrites],
    ) -> Result<Self> {
        let mut replayer = Replayer::new(trail, classifier, seeds, options)?;
        if done.len() > replayer.items.len() {
            return Err(Error::ReplayFinished {
                dispatches: replayer.items.len(),
            });
        }
        for writes in done {
            replayer.complete(writes.clone())?;
        }
        Ok(replayer)
    }

    /// Every step, before anything runs.
    pub fn outline(&self) -> &[PlannedStep] {
        &self.outline
    }

    /// The device classifier replayed.
    pub fn classifier(&self) -> &str {
        &self.classifier
    }

    /// How many dispatches the replay has in all.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the replay has no dispatch at all.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The writes reported so far, one per completed dispatch: with the trail and the seeds,
    /// all [`Replayer::resume`] needs.
    pub fn completed(&self) -> &[MemoryWrites] {
        &self.done
    }

    /// Whether every dispatch has completed.
    pub fn is_finished(&self) -> bool {
        self.done.len() >= self.items.len()
    }

    /// Memory as it stands now.
    pub fn memory(&self) -> &Memory {
        &self.state.memory
    }

    /// The bound trail arguments.
    pub fn args(&self) -> &Args {
        &self.state.args
    }

    /// Every token of the dispatches still to come that cannot resolve: memory lacks its key
    /// and no earlier call is by a known writer of it (or an `args.` token names no bound
    /// argument), each with its step, tool and path. Fails on an `args.` token that is not
    /// a dotted path.
    pub fn analysis(&self) -> Result<Vec<MissingKey>> {
        let mut missing = Vec::new();
        let mut written: BTreeSet<String> = BTreeSet::new();
        let mut any_key = false;
        for item in &self.items[self.done.len().min(self.items.len())..] {
            let Some((call, location)) = &item.call else {
                continue;
            };
            let params = call.params_json();
            let mut path = JsonPath::with_prefix(format!("{location}.{}", call.name));
            let mut check = |key: &str, at: &JsonPath<'_>| -> Result<()> {
                let resolves =
                    match resolve(&self.state, key).map_err(|_| malformed(key, at.render()))? {
                        Resolution::Text(_) | Resolution::Deferred => true,
                        Resolution::Missing if key.starts_with(ARGS_PREFIX) => false,
                        Resolution::Missing => {
                            let plain = key.strip_prefix("memory.").unwrap_or(key);
                            any_key || written.contains(plain) || written.contains(key)
                        }
                    };
                if !resolves {
                    missing.push(MissingKey {
                        key: key.to_owned(),
                        path: at.render(),
                        step: Some(item.step),
                        tool: Some(call.name.clone()),
                    });
                }
                Ok(())
            };
            each_token(&params, &mut path, &mut check)?;
            if self.is_known_writer(&call.name) {
                match params.get("variable") {
                    Some(Json::String(key)) => {
                        written.insert(key.clone());
                    }
                    _ => any_key = true,
                }
            }
        }
        Ok(missing)
    }

    fn is_known_writer(&self, tool: &str) -> bool {
        self.options
            .known_writers
            .iter()
            .any(|pattern| matches_pattern(pattern, tool))
    }

    /// The next dispatch, resolved against memory as it stands now; `None` when the replay
    /// is over. Asking again before [`Replayer::complete`] gives the same dispatch.
    pub fn next_dispatch(&self) -> Result<Option<Dispatch>> {
        let index = self.done.len();
        let Some(item) = self.items.get(index) else {
            return Ok(None);
        };
        let planned = &self.outline[item.step];
        let secrets = self.state.secret_set();
        let (action, masked_keys) = match &item.call {
            None => (Action::Agent, Vec::new()),
            Some((call, location)) => {
                let params = call.params_json();
                let path = JsonPath::with_prefix(format!("{location}.{}", call.name));
                let parameters =
                    match interpolate_at(&params, &self.state, self.options.missing, path) {
                        Ok(resolved) => resolved.into_owned(),
                        Err(Error::Unresolved { missing }) => {
                            let missing = missing
                                .into_iter()
                                .map(|mut m| {
                                    m.step = Some(item.step);
                                    m.tool = Some(call.name.clone());
                                    m
                                })
                                .collect();
                            return Err(Error::Unresolved { missing });
                        }
                        Err(other) => return Err(other),
                    };
                let masked = secrets.scrub_json(&parameters).into_owned();
                let masked_keys = masked_keys(&masked, &self.state);
                let call = ResolvedCall {
                    tool: call.name.clone(),
                    parameters,
                    location: location.clone(),
                    masked,
                };
                (Action::Call(call), masked_keys)
            }
        };
        Ok(Some(Dispatch {
            index,
            step: item.step,
            objective: planned.objective.clone(),
            classifier: planned.classifier.clone(),
            action,
            masked_keys,
        }))
    }

    /// Takes what the current dispatch wrote to memory and moves to the next one. Fails when
    /// the replay is over.
    pub fn complete(&mut self, writes: MemoryWrites) -> Result<()> {
        let index = self.done.len();
        let Some(item) = self.items.get(index) else {
            return Err(Error::ReplayFinished {
                dispatches: self.items.len(),
            });
        };
        let writer = item.call.as_ref().map(|(call, _)| call.name.clone());
        // Each dispatch is one tick of a replay clock, so later writes count as more recent.
        let at = Timestamp::from_millis(i64::try_from(index).unwrap_or(i64::MAX));
        let provenance = || match &writer {
            Some(tool) => Provenance::tool(tool.clone(), at),
            None => Provenance::unknown(at),
        };
        for (key, value) in &writes.set {
            self.state.remember(key, value, provenance());
        }
        for (key, value) in &writes.secrets {
            self.state.remember_secret(key, value, provenance());
        }
        for key in &writes.delete {
            self.state.memory.forget(key);
        }
        self.done.push(writes);
        Ok(())
    }

    /// `value` with every secret of the replay so far masked as its `${key}` token.
    pub fn mask(&self, value: &Json) -> Json {
        self.state.secret_set().scrub_json(value).into_owned()
    }

    /// `text` with every secret of the replay so far masked as its `${key}` token.
    pub fn mask_str(&self, text: &str) -> String {
        self.state.secret_set().scrub(text, |_| {}).into_owned()
    }
}

/// The keys whose tokens stand in the masked parameters.
fn masked_keys(masked: &Json, state: &State) -> Vec<String> {
    let mut keys = BTreeSet::new();
    let mut path = JsonPath::default();
    let _ = each_token(masked, &mut path, &mut |key, _| {
        let sensitive = match key.strip_prefix(ARGS_PREFIX) {
            Some(name) => state.tainted_args.contains(name),
            None => state.secrets.values().any(|k| k == key),
        };
        if sensitive {
            keys.insert(key.to_owned());
        }
        Ok(())
    });
    keys.into_iter().collect()
}

/// Calls `f` with every token body in every string of `value`, and the string's path.
fn each_token<'v>(
    value: &'v Json,
    path: &mut JsonPath<'v>,
    f: &mut dyn FnMut(&str, &JsonPath<'v>) -> Result<()>,
) -> Result<()> {
    if path.depth() > MAX_DEPTH {
        return Err(path.too_deep());
    }
    match value {
        Json::String(text) => {
            for body in token_bodies(text) {
                f(body, path)?;
            }
        }
        Json::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push_index(i);
                each_token(item, path, f)?;
                path.pop();
            }
        }
        Json::Object(map) => {
            for (key, item) in map {
                path.push_key(key);
                each_token(item, path, f)?;
                path.pop();
            }
        }
        Json::Null | Json::Bool(_) | Json::Number(_) => {}
    }
    Ok(())
}

/// Memory and arguments at the start of a replay: `config.memory`, then the plain seeds,
/// then the secrets; then the arguments, bound and resolved against that memory.
fn seed(trail: &Trail, seeds: &Seeds) -> Result<State> {
    let mut state = State::default();
    let at = Timestamp::from_millis(0);
    let config = trail.config();
    let from_trail = config.map_or(&[][..], |c| c.memory());
    for (key, value) in from_trail {
        if !seeds.secrets.contains_key(key) && !seeds.memory.contains_key(key) {
            state.remember(key, value, Provenance::unknown(at));
        }
    }
    for (key, value) in &seeds.memory {
        if !seeds.secrets.contains_key(key) {
            state.remember(key, value, Provenance::unknown(at));
        }
    }
    for (key, value) in &seeds.secrets {
        state.remember_secret(key, value, Provenance::unknown(at));
    }
    let declared = config.map_or(&[][..], |c| c.args());
    state.args = Args::bind(declared, &seeds.args)?;
    resolve_arg_strings(&mut state)?;
    let secrets: Vec<&str> = state.secrets.keys().map(String::as_str).collect();
    for (name, value) in state.args.iter() {
        let text = match value {
            Json::String(text) => text.clone(),
            other => other.to_string(),
        };
        if secrets.iter().any(|secret| text.contains(secret)) {
            state.tainted_args.insert(name.to_owned());
        }
    }
    Ok(state)
}

/// Resolves the tokens inside string arguments (a memory token in a default, or another
/// argument) until nothing changes: at most one pass per argument, after which what is left
/// is a cycle, left as written.
fn resolve_arg_strings(state: &mut State) -> Result<()> {
    let names = state.args.names();
    for _ in 0..names.len().max(1) {
        let mut changed = false;
        for name in &names {
            let Some(Json::String(text)) = state.args.get(name) else {
                continue;
            };
            let resolved = interpolate_str(text, &*state, MissingKeys::Leave, &mut |_| {})?;
            if let std::borrow::Cow::Owned(new) = resolved {
                state.args.set(name, Json::String(new));
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(())
}

/// The outline of `trail` on `classifier` and the dispatches it makes.
fn plan<'t>(trail: &'t Trail, classifier: &str) -> (Vec<PlannedStep>, Vec<Item<'t>>) {
    let mut outline = Vec::new();
    let mut items = Vec::new();
    let mut add = |planned: PlannedStep, calls: Option<Vec<(&'t ToolCall, String)>>| {
        let step = outline.len();
        match calls {
            Some(calls) => items.extend(calls.into_iter().map(|call| Item {
                step,
                call: Some(call),
            })),
            None => items.push(Item { step, call: None }),
        }
        outline.push(planned);
    };
    match trail {
        Trail::Legacy(entries) => {
            for (i, item) in entries.iter().enumerate() {
                match item {
                    LegacyItem::Config(_) => {}
                    LegacyItem::Trailhead(trailhead) => {
                        let (planned, calls) = legacy_trailhead(trailhead, i);
                        add(planned, calls);
                    }
                    LegacyItem::Tools(calls) => {
                        let planned = PlannedStep {
                            objective: None,
                            trailhead: false,
                            classifier: None,
                            action: StepAction::Replay(calls.len()),
                        };
                        add(planned, Some(located(calls, &format!("[{i}].tools"))));
                    }
                    LegacyItem::Prompts(steps) => {
                        for (j, step) in steps.iter().enumerate() {
                            let calls =
                                step.recording
                                    .as_ref()
                                    .filter(|_| step.recordable)
                                    .map(|r| {
                                        located(
                                            &r.tools,
                                            &format!("[{i}].prompts[{j}].recording.tools"),
                                        )
                                    });
                            let planned = PlannedStep {
                                objective: Some((step.kind, step.text.clone())),
                                trailhead: false,
                                classifier: None,
                                action: calls
                                    .as_ref()
                                    .map_or(StepAction::Agent, |c| StepAction::Replay(c.len())),
                            };
                            add(planned, calls);
                        }
                    }
                }
            }
        }
        Trail::Unified(unified) => {
            if let Some(head) = &unified.trailhead {
                let (planned, calls) = unified_step(head, "trailhead", true, classifier);
                add(planned, calls);
            }
            for (i, step) in unified.steps().iter().enumerate() {
                let (planned, calls) =
                    unified_step(step, &format!("trail[{i}]"), false, classifier);
                add(planned, calls);
            }
        }
    }
    (outline, items)
}

fn located<'t>(calls: &'t [ToolCall], prefix: &str) -> Vec<(&'t ToolCall, String)> {
    calls
        .iter()
        .enumerate()
        .map(|(k, call)| (call, format!("{prefix}[{k}]")))
        .collect()
}

fn legacy_trailhead(
    trailhead: &LegacyTrailhead,
    i: usize,
) -> (PlannedStep, Option<Vec<(&ToolCall, String)>>) {
    let text = trailhead
        .step
        .clone()
        .unwrap_or_else(|| LegacyTrailhead::DEFAULT_STEP.to_owned());
    let calls = trailhead
        .tools
        .as_ref()
        .map(|tools| located(tools, &format!("[{i}].trailhead.tools")));
    let planned = PlannedStep {
        objective: Some((StepKind::Step, text)),
        trailhead: true,
        classifier: None,
        action: calls
            .as_ref()
            .map_or(StepAction::Agent, |c| StepAction::Replay(c.len())),
    };
    (planned, calls)
}

fn unified_step<'t>(
    step: &'t Step<DeviceRecordings>,
    at: &str,
    trailhead: bool,
    classifier: &str,
) -> (PlannedStep, Option<Vec<(&'t ToolCall, String)>>) {
    let chosen = step
        .recording
        .as_ref()
        .filter(|_| step.recordable)
        .and_then(|r| r.closest(classifier));
    let calls = chosen.map(|(name, calls)| {
        if trailhead {
            calls
                .iter()
                .map(|call| (call, format!("{at}.recording.{name}")))
                .collect()
        } else {
            located(calls, &format!("{at}.recording.{name}"))
        }
    });
    let planned = PlannedStep {
        objective: Some((step.kind, step.text.clone())),
        trailhead,
        classifier: chosen.map(|(name, _)| name.to_owned()),
        action: calls
            .as_ref()
            .map_or(StepAction::Agent, |c: &Vec<_>| StepAction::Replay(c.len())),
    };
    (planned, calls)
}
