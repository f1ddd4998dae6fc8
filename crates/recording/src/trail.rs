//! Trail YAML: the legacy list form (`- config`, `- trailhead`, `- tools`, `- prompts`) and the
//! unified form (`config:`, `trailhead:`, `trail:` with recordings keyed by device classifier),
//! both read and written. Tools the crate does not know round-trip unchanged: a tool is its
//! name and its parameters as YAML, nothing more.
//!
//! The grammar is Trailblaze's, read strictly: a document Trailblaze refuses is refused here
//! with its file, line and column, and so is a key Trailblaze's strict reading refuses (an
//! unknown step key). A step's recording has three states: absent (`None`, replay asks the
//! agent), empty (a deliberate no-op) and non-empty (replayed in order); a trailhead's
//! recording has the same three states, one tool per device at most.
//!
//! [`Trail::to_yaml_string`] writes the canonical form `recording fmt` produces: reading it
//! back gives the same trail, with a YAML 1.2 reader and with a YAML 1.1 one (PyYAML,
//! SnakeYAML 1.x): a string such as `8:00` or `yes` is quoted, since those read it as a number
//! or a boolean.

use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_yaml::{Mapping, Value as Yaml};

use crate::config::Config;
use crate::error::{Error, Result};

/// One tool call in a trail: `toolName: {parameters}`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its parameters, as written.
    pub params: Yaml,
}

impl ToolCall {
    /// A call of `name` with YAML parameters.
    pub fn new(name: impl Into<String>, params: Yaml) -> Self {
        ToolCall {
            name: name.into(),
            params,
        }
    }

    /// A call of `name` with JSON parameters.
    pub fn from_json(name: impl Into<String>, params: &serde_json::Value) -> Result<Self> {
        let name = name.into();
        let params = serde_yaml::to_value(params).map_err(|e| Error::Parameters {
            tool: name.clone(),
            message: e.to_string(),
        })?;
        Ok(ToolCall { name, params })
    }

    /// The parameters as JSON. A mapping key that is not a string is written as its YAML
    /// text; `null` parameters (`- pressBack:`) read as `null`.
    pub fn params_json(&self) -> serde_json::Value {
        crate::config::yaml_to_json(&self.params)
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.name, &self.params)?;
        map.end()
    }
}

fn tool_from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Option<ToolCall>, A::Error> {
    let Some((name, params)) = map.next_entry::<String, Yaml>()? else {
        return Ok(None);
    };
    if let Some(other) = map.next_key::<String>()? {
        return Err(de::Error::custom(format!(
            "a tool is a map with one entry, its name; found {name:?} and {other:?}"
        )));
    }
    Ok(Some(ToolCall { name, params }))
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ToolVisitor;
        impl<'de> Visitor<'de> for ToolVisitor {
            type Value = ToolCall;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a tool call `name: {parameters}`")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ToolCall, A::Error> {
                tool_from_map(map)?.ok_or_else(|| {
                    de::Error::custom(
                        "a tool is a map with one entry, its name; found an empty map",
                    )
                })
            }
        }
        deserializer.deserialize_map(ToolVisitor)
    }
}

/// Whether a step acts or checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// `step:` an action.
    Step,
    /// `verify:` a check.
    Verify,
}

impl StepKind {
    /// The key the step is written under: `step` or `verify`.
    pub fn key(self) -> &'static str {
        match self {
            StepKind::Step => "step",
            StepKind::Verify => "verify",
        }
    }
}

/// One step of a trail with its recording `R` (absent, empty or non-empty).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Step<R> {
    /// Action or check.
    pub kind: StepKind,
    /// The natural-language objective.
    pub text: String,
    /// `recordable: false`: the agent always drives the step, nothing is recorded for it.
    pub recordable: bool,
    /// `maxRetries:`: the step's own retry budget when the agent drives it.
    pub max_retries: Option<i32>,
    /// The recording; `None` when the step has none.
    pub recording: Option<R>,
}

impl<R> Step<R> {
    /// A recordable step of `kind` with no recording.
    pub fn new(kind: StepKind, text: impl Into<String>) -> Self {
        Step {
            kind,
            text: text.into(),
            recordable: true,
            max_retries: None,
            recording: None,
        }
    }

    /// The step with `recording`.
    #[must_use]
    pub fn with_recording(mut self, recording: R) -> Self {
        self.recording = Some(recording);
        self
    }
}

/// A legacy step's recording: `recording: {tools: [...]}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct LegacyRecording {
    /// The calls, in order (empty: a deliberate no-op).
    pub tools: Vec<ToolCall>,
}

impl LegacyRecording {
    /// A recording of `tools`, in order.
    pub fn new(tools: Vec<ToolCall>) -> Self {
        LegacyRecording { tools }
    }
}

/// Recordings of a unified step by device classifier (`android-phone`, `android`, ...), in the
/// order written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceRecordings {
    entries: Vec<(String, Vec<ToolCall>)>,
}

impl DeviceRecordings {
    /// No recording for any device.
    pub fn new() -> Self {
        DeviceRecordings::default()
    }

    /// Sets the calls of `classifier` (replacing any it had).
    pub fn insert(&mut self, classifier: impl Into<String>, calls: Vec<ToolCall>) {
        let classifier = classifier.into();
        match self.entries.iter_mut().find(|(c, _)| *c == classifier) {
            Some((_, held)) => *held = calls,
            None => self.entries.push((classifier, calls)),
        }
    }

    /// The calls recorded for exactly `classifier`.
    pub fn get(&self, classifier: &str) -> Option<&[ToolCall]> {
        self.entries
            .iter()
            .find(|(c, _)| c == classifier)
            .map(|(_, calls)| calls.as_slice())
    }

    /// Every classifier with its calls, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[ToolCall])> {
        self.entries
            .iter()
            .map(|(c, calls)| (c.as_str(), calls.as_slice()))
    }

    /// How many classifiers have a recording.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no classifier has a recording.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether some classifier has at least one call.
    pub fn has_calls(&self) -> bool {
        self.entries.iter().any(|(_, calls)| !calls.is_empty())
    }

    /// The recording closest to `classifier`: the exact one, else the one named by each
    /// shorter `-`-separated prefix (`android-phone`, then `android`), as Trailblaze's
    /// classifier lineage resolves it.
    pub fn closest(&self, classifier: &str) -> Option<(&str, &[ToolCall])> {
        let mut candidate = classifier;
        loop {
            if let Some(found) = self.entries.iter().find(|(c, _)| c == candidate) {
                return Some((found.0.as_str(), found.1.as_slice()));
            }
            candidate = &candidate[..candidate.rfind('-')?];
        }
    }
}

impl Serialize for DeviceRecordings {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (classifier, calls) in &self.entries {
            map.serialize_entry(classifier, calls)?;
        }
        map.end()
    }
}

/// A trailhead's recordings: each classifier maps to one tool (a map) or `{}`.
struct TrailheadRecordings<'r>(&'r DeviceRecordings);

impl Serialize for TrailheadRecordings<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.entries.len()))?;
        for (classifier, calls) in &self.0.entries {
            match calls.as_slice() {
                [] => map.serialize_entry(classifier, &Mapping::new())?,
                [call] => map.serialize_entry(classifier, call)?,
                _ => {
                    return Err(serde::ser::Error::custom(format!(
                        "trailhead recording `{classifier}:` holds {} tool calls; a trailhead has \
                         at most one tool per device",
                        calls.len()
                    )));
                }
            }
        }
        map.end()
    }
}

/// Reads `recording:` of a unified step (lists) or trailhead (one tool or `{}`).
struct RecordingsSeed {
    trailhead: bool,
}

impl<'de> DeserializeSeed<'de> for RecordingsSeed {
    type Value = DeviceRecordings;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RecordingsSeed {
    type Value = DeviceRecordings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`recording:` as a map of device classifiers to tool calls")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut recordings = DeviceRecordings::new();
        while let Some(classifier) = map.next_key::<String>()? {
            let calls = if self.trailhead {
                map.next_value_seed(TrailheadTool {
                    classifier: &classifier,
                })?
                .into_iter()
                .collect()
            } else {
                map.next_value_seed(ToolList {
                    classifier: &classifier,
                })?
            };
            if recordings.get(&classifier).is_some() {
                return Err(de::Error::custom(format!(
                    "recording `{classifier}:` appears twice"
                )));
            }
            recordings.insert(classifier, calls);
        }
        Ok(recordings)
    }
}

/// A trail step's calls for one classifier: a list.
struct ToolList<'c> {
    classifier: &'c str,
}

impl<'de> DeserializeSeed<'de> for ToolList<'_> {
    type Value = Vec<ToolCall>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ToolList<'_> {
    type Value = Vec<ToolCall>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recording `{c}:` as a list of tool calls (`{c}: []` for a deliberate no-op)",
            c = self.classifier
        )
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut calls = Vec::new();
        while let Some(call) = seq.next_element::<ToolCall>()? {
            calls.push(call);
        }
        Ok(calls)
    }
}

/// A trailhead's call for one classifier: one tool, or `{}` for none.
struct TrailheadTool<'c> {
    classifier: &'c str,
}

impl<'de> DeserializeSeed<'de> for TrailheadTool<'_> {
    type Value = Option<ToolCall>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TrailheadTool<'_> {
    type Value = Option<ToolCall>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "trailhead recording `{c}:` as one tool call (`{c}: {{tool: {{...}}}}`) or `{c}: {{}}` \
             for a deliberate no-op; a trailhead is at most one tool per device, not a list",
            c = self.classifier
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some((name, params)) = map.next_entry::<String, Yaml>()? else {
            return Ok(None);
        };
        if map.next_key::<String>()?.is_some() {
            return Err(de::Error::custom(format!(
                "trailhead recording `{}:` holds more than one tool call; a trailhead is at most \
                 one tool per device",
                self.classifier
            )));
        }
        Ok(Some(ToolCall { name, params }))
    }
}

/// A map key that must be one of `allowed`: an unknown one is refused at its own position.
#[derive(Clone, Copy)]
struct KeySeed<'a> {
    allowed: &'a [&'a str],
    /// The message for an unknown key; `{key}` stands for the key.
    unknown: &'a str,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "one of the keys {}", self.allowed.join(", "))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<String, E> {
        if self.allowed.contains(&key) {
            Ok(key.to_owned())
        } else {
            Err(E::custom(self.unknown.replace("{key}", key)))
        }
    }
}

/// Which step grammar a step is read with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum StepForm {
    /// A `- prompts:` step: `recording: {tools: [...]}`.
    Legacy,
    /// A `trail:` step: `recording: {classifier: [...]}`.
    Unified,
    /// The unified `trailhead:`: no `verify`, one tool per classifier.
    Trailhead,
}

/// A step's text: a scalar, read as Trailblaze reads it into a string.
struct StepText;

impl<'de> DeserializeSeed<'de> for StepText {
    type Value = String;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StepText {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the step's natural-language text")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }
}

/// `recordable:`: a boolean, or the strings Trailblaze reads as one.
struct Recordable;

impl<'de> DeserializeSeed<'de> for Recordable {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Recordable {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`recordable:` as true or false")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        match v {
            "true" | "True" | "TRUE" => Ok(true),
            "false" | "False" | "FALSE" => Ok(false),
            _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

/// `maxRetries:`: a 32-bit integer, as Trailblaze reads it.
struct MaxRetries;

impl<'de> DeserializeSeed<'de> for MaxRetries {
    type Value = i32;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for MaxRetries {
    type Value = i32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`maxRetries:` as a whole number")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i32, E> {
        i32::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<i32, E> {
        v.parse()
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

struct StepSeed<R> {
    form: StepForm,
    recording: std::marker::PhantomData<R>,
}

impl<R> StepSeed<R> {
    fn new(form: StepForm) -> Self {
        StepSeed {
            form,
            recording: std::marker::PhantomData,
        }
    }
}

/// How a step's `recording:` value is read, and whether it holds calls.
trait ReadRecording: Sized {
    fn read<'de, A: MapAccess<'de>>(map: &mut A, form: StepForm) -> Result<Option<Self>, A::Error>;
    fn has_calls(&self) -> bool;
}

impl ReadRecording for LegacyRecording {
    fn read<'de, A: MapAccess<'de>>(map: &mut A, _: StepForm) -> Result<Option<Self>, A::Error> {
        map.next_value::<Option<LegacyRecording>>()
    }

    fn has_calls(&self) -> bool {
        !self.tools.is_empty()
    }
}

impl ReadRecording for DeviceRecordings {
    fn read<'de, A: MapAccess<'de>>(map: &mut A, form: StepForm) -> Result<Option<Self>, A::Error> {
        let recordings = map.next_value_seed(RecordingsSeed {
            trailhead: form == StepForm::Trailhead,
        })?;
        // `recording: {}` declares nothing, exactly like no `recording:` at all.
        Ok(Some(recordings).filter(|r| !r.is_empty()))
    }

    fn has_calls(&self) -> bool {
        DeviceRecordings::has_calls(self)
    }
}

impl<'de, R: ReadRecording> DeserializeSeed<'de> for StepSeed<R> {
    type Value = Step<R>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, R: ReadRecording> Visitor<'de> for StepSeed<R> {
    type Value = Step<R>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step: a map with `step:` or `verify:`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut step = None;
        let mut verify = None;
        let mut recordable = None;
        let mut max_retries = None;
        let mut recording = None;
        let mut seen: Vec<String> = Vec::new();
        let unknown = if self.form == StepForm::Legacy {
            "unknown step key `{key}`; the keys are `step`, `verify`, `recording`, `recordable`, \
             `maxRetries`"
        } else {
            "unknown step key `{key}`; the keys are `step`, `verify`, `recording`, `recordable`, \
             `maxRetries`; device classifiers nest under `recording:`"
        };
        let keys = KeySeed {
            allowed: &["step", "verify", "recordable", "maxRetries", "recording"],
            unknown,
        };
        while let Some(key) = map.next_key_seed(keys)? {
            if seen.contains(&key) {
                return Err(de::Error::custom(format!("a step has `{key}:` twice")));
            }
            match key.as_str() {
                "step" => step = Some(map.next_value_seed(StepText)?),
                "verify" if self.form == StepForm::Trailhead => {
                    return Err(de::Error::custom(
                        "a trailhead cannot be `verify:`: it is a deterministic bootstrap, not a \
                         check; use `step:`",
                    ));
                }
                "verify" => verify = Some(map.next_value_seed(StepText)?),
                "recordable" => recordable = Some(map.next_value_seed(Recordable)?),
                "maxRetries" => max_retries = Some(map.next_value_seed(MaxRetries)?),
                _ => recording = R::read(&mut map, self.form)?,
            }
            seen.push(key);
        }
        let (kind, text) = match (step, verify) {
            (Some(text), None) => (StepKind::Step, text),
            (None, Some(text)) => (StepKind::Verify, text),
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(
                    "a step has both `step:` and `verify:`; write exactly one",
                ));
            }
            (None, None) => {
                return Err(de::Error::custom(
                    "a step needs its natural-language `step:` (or `verify:`); recording-only \
                     steps are not allowed",
                ));
            }
        };
        let recordable = recordable.unwrap_or(true);
        if self.form != StepForm::Legacy
            && !recordable
            && recording.as_ref().is_some_and(R::has_calls)
        {
            return Err(de::Error::custom(
                "a step has `recordable: false` and a non-empty recording; they exclude each other",
            ));
        }
        Ok(Step {
            kind,
            text,
            recordable,
            max_retries,
            recording,
        })
    }
}

impl<'de> Deserialize<'de> for Step<LegacyRecording> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StepSeed::new(StepForm::Legacy).deserialize(deserializer)
    }
}

impl<'de> Deserialize<'de> for Step<DeviceRecordings> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        StepSeed::new(StepForm::Unified).deserialize(deserializer)
    }
}

/// A step as written, with its recording written by `R`.
struct StepOut<'s, R, W> {
    step: &'s Step<R>,
    recording: Option<W>,
}

impl<R, W: Serialize> Serialize for StepOut<'_, R, W> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let step = self.step;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(step.kind.key(), &step.text)?;
        if let Some(recording) = &self.recording {
            map.serialize_entry("recording", recording)?;
        }
        if !step.recordable {
            map.serialize_entry("recordable", &false)?;
        }
        if let Some(max) = step.max_retries {
            map.serialize_entry("maxRetries", &max)?;
        }
        map.end()
    }
}

impl Serialize for Step<LegacyRecording> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StepOut {
            step: self,
            recording: self.recording.as_ref(),
        }
        .serialize(serializer)
    }
}

impl Serialize for Step<DeviceRecordings> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        StepOut {
            step: self,
            recording: self.recording.as_ref(),
        }
        .serialize(serializer)
    }
}

/// The unified `trailhead:` as written.
struct TrailheadOut<'s>(&'s Step<DeviceRecordings>);

impl Serialize for TrailheadOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.kind == StepKind::Verify {
            return Err(serde::ser::Error::custom(
                "a trailhead cannot be a `verify:` step",
            ));
        }
        StepOut {
            step: self.0,
            recording: self.0.recording.as_ref().map(TrailheadRecordings),
        }
        .serialize(serializer)
    }
}

/// The legacy `- trailhead:` item: the trail's step 0. Written as a bare tool name
/// (`trailhead: launchApp`, one call with no parameters), as `{step, tools}`, or as natural
/// language only (`{step}`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LegacyTrailhead {
    /// What the starting state is, in natural language.
    pub step: Option<String>,
    /// The calls that reach it: `None` when not declared (the agent reaches it), empty for a
    /// deliberate no-op.
    pub tools: Option<Vec<ToolCall>>,
    /// The trailhead's own retry budget when the agent drives it.
    pub max_retries: Option<i32>,
    /// Whether it was written as a bare tool name: the canonical form keeps that shorthand
    /// while it still says the same (one call, no parameters, no step). It is how the
    /// trailhead is written, not what it means, so equality leaves it out.
    pub shorthand: bool,
}

impl PartialEq for LegacyTrailhead {
    fn eq(&self, other: &Self) -> bool {
        self.step == other.step
            && self.tools == other.tools
            && self.max_retries == other.max_retries
    }
}

impl LegacyTrailhead {
    /// The text the trailhead runs under when it has none of its own (Trailblaze's).
    pub const DEFAULT_STEP: &'static str = "Reach the trailhead starting state";

    /// A trailhead of `step` and `tools`. At least one of them must be given, and an empty
    /// list of tools needs a step.
    pub fn new(step: Option<String>, tools: Option<Vec<ToolCall>>) -> Result<Self> {
        let trailhead = LegacyTrailhead {
            step,
            tools,
            max_retries: None,
            shorthand: false,
        };
        match trailhead.problem() {
            Some(message) => Err(Error::Parse {
                file: "<trailhead>".to_owned(),
                line: 0,
                column: 0,
                message: message.to_owned(),
            }),
            None => Ok(trailhead),
        }
    }

    fn problem(&self) -> Option<&'static str> {
        let has_tools = self.tools.as_ref().is_some_and(|t| !t.is_empty());
        (self.step.is_none() && !has_tools).then_some(
            "a trailhead needs a `step:`, at least one tool, or both: write `trailhead: <tool>` \
             for one bootstrap tool, or `trailhead: {step: ..., tools: [...]}`",
        )
    }
}

impl LegacyTrailhead {
    /// The tool name the shorthand writes, when it was written so and still says the same.
    fn shorthand_tool(&self) -> Option<&str> {
        if !self.shorthand || self.step.is_some() || self.max_retries.is_some() {
            return None;
        }
        match self.tools.as_deref() {
            Some([call]) if call.params.as_mapping().is_some_and(Mapping::is_empty) => {
                Some(&call.name)
            }
            _ => None,
        }
    }
}

impl Serialize for LegacyTrailhead {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(tool) = self.shorthand_tool() {
            return serializer.serialize_str(tool);
        }
        let mut map = serializer.serialize_map(None)?;
        if let Some(step) = &self.step {
            map.serialize_entry("step", step)?;
        }
        if let Some(tools) = &self.tools {
            map.serialize_entry("tools", tools)?;
        }
        if let Some(max) = self.max_retries {
            map.serialize_entry("maxRetries", &max)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for LegacyTrailhead {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TrailheadVisitor;
        impl<'de> Visitor<'de> for TrailheadVisitor {
            type Value = LegacyTrailhead;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a trailhead: a tool name, or a map with `step:` and `tools:`")
            }

            /// The shorthand `trailhead: toolName`: one call with no parameters.
            fn visit_str<E: de::Error>(self, name: &str) -> Result<LegacyTrailhead, E> {
                Ok(LegacyTrailhead {
                    step: None,
                    tools: Some(vec![ToolCall::new(name, Yaml::Mapping(Mapping::new()))]),
                    max_retries: None,
                    shorthand: true,
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LegacyTrailhead, A::Error> {
                let mut trailhead = LegacyTrailhead {
                    step: None,
                    tools: None,
                    max_retries: None,
                    shorthand: false,
                };
                let mut seen: Vec<String> = Vec::new();
                let keys = KeySeed {
                    allowed: &["step", "tools", "maxRetries"],
                    unknown: "unknown trailhead key `{key}`; the keys are `step`, `tools`, \
                              `maxRetries`",
                };
                while let Some(key) = map.next_key_seed(keys)? {
                    if seen.contains(&key) {
                        return Err(de::Error::custom(format!("a trailhead has `{key}:` twice")));
                    }
                    match key.as_str() {
                        "step" => trailhead.step = Some(map.next_value_seed(StepText)?),
                        "tools" => trailhead.tools = map.next_value()?,
                        _ => trailhead.max_retries = Some(map.next_value_seed(MaxRetries)?),
                    }
                    seen.push(key);
                }
                match trailhead.problem() {
                    Some(message) => Err(de::Error::custom(message)),
                    None => Ok(trailhead),
                }
            }
        }
        deserializer.deserialize_any(TrailheadVisitor)
    }
}

/// One item of the legacy list form.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LegacyItem {
    /// `- config: {...}`: at most one, first.
    Config(Config),
    /// `- trailhead: ...`: at most one, after the config and before every step.
    Trailhead(LegacyTrailhead),
    /// `- tools: [...]`: calls replayed as they are, outside any step.
    Tools(Vec<ToolCall>),
    /// `- prompts: [...]`
    Prompts(Vec<Step<LegacyRecording>>),
}

impl Serialize for LegacyItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            LegacyItem::Config(config) => map.serialize_entry("config", config)?,
            LegacyItem::Trailhead(trailhead) => map.serialize_entry("trailhead", trailhead)?,
            LegacyItem::Tools(tools) => map.serialize_entry("tools", tools)?,
            LegacyItem::Prompts(prompts) => map.serialize_entry("prompts", prompts)?,
        }
        map.end()
    }
}

/// What the legacy items read so far allow next.
#[derive(Default)]
struct LegacyOrder {
    items: usize,
    config: bool,
    trailhead: bool,
    steps: bool,
}

struct LegacyItemSeed<'o> {
    order: &'o mut LegacyOrder,
}

impl<'de> DeserializeSeed<'de> for LegacyItemSeed<'_> {
    type Value = LegacyItem;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LegacyItemSeed<'_> {
    type Value = LegacyItem;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a trail item: a map with one of `config`, `trailhead`, `tools`, `prompts`")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let order = self.order;
        let keys = KeySeed {
            allowed: &["config", "trailhead", "tools", "prompts"],
            unknown: "unknown trail item `{key}`; the items are `config`, `trailhead`, `tools`, \
                      `prompts`",
        };
        let Some(key) = map.next_key_seed(keys)? else {
            return Err(de::Error::custom(
                "a trail item is a map with one of `config`, `trailhead`, `tools`, `prompts`; \
                 found an empty map",
            ));
        };
        let item = match key.as_str() {
            "config" => {
                if order.items > 0 {
                    return Err(de::Error::custom(
                        "only one `config` item is allowed, and it must be the first item",
                    ));
                }
                order.config = true;
                LegacyItem::Config(map.next_value()?)
            }
            "trailhead" => {
                if order.trailhead {
                    return Err(de::Error::custom("only one `trailhead` item is allowed"));
                }
                if order.steps {
                    return Err(de::Error::custom(
                        "the `trailhead` item must come before every `prompts`/`tools` item: it is \
                         the trail's step 0",
                    ));
                }
                order.trailhead = true;
                LegacyItem::Trailhead(map.next_value()?)
            }
            "tools" => {
                order.steps = true;
                LegacyItem::Tools(map.next_value()?)
            }
            _ => {
                order.steps = true;
                LegacyItem::Prompts(map.next_value()?)
            }
        };
        if let Some(other) = map.next_key::<String>()? {
            return Err(de::Error::custom(format!(
                "a trail item has exactly one key; found `{key}` and `{other}`"
            )));
        }
        order.items += 1;
        Ok(item)
    }
}

struct LegacyItems;

impl<'de> Visitor<'de> for LegacyItems {
    type Value = Vec<LegacyItem>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of trail items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut order = LegacyOrder::default();
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(LegacyItemSeed { order: &mut order })? {
            items.push(item);
        }
        Ok(items)
    }
}

/// The unified form.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct UnifiedTrail {
    /// `config:` as written.
    pub config: Option<Config>,
    /// `trailhead:`: the step that sets the scene (never `verify:`; one tool per device).
    pub trailhead: Option<Step<DeviceRecordings>>,
    /// `trail:`: the steps, in order. `None` only in a config-only document (a `config:`
    /// with neither `trail:` nor `trailhead:`); `trail: []` is kept as written.
    pub trail: Option<Vec<Step<DeviceRecordings>>>,
}

impl UnifiedTrail {
    /// A trail of `steps`, with no config and no trailhead.
    pub fn new(steps: Vec<Step<DeviceRecordings>>) -> Self {
        UnifiedTrail {
            config: None,
            trailhead: None,
            trail: Some(steps),
        }
    }

    /// The steps (none in a config-only document).
    pub fn steps(&self) -> &[Step<DeviceRecordings>] {
        self.trail.as_deref().unwrap_or_default()
    }

    fn problem(&self) -> Option<&'static str> {
        let empty = self.trail.as_ref().is_none_or(Vec::is_empty);
        if !empty || (self.config.is_some() && self.trailhead.is_none()) {
            return None;
        }
        Some(
            "a unified trail needs a non-empty `trail:`; the only document without steps is a \
             config-only one (a `config:` with no `trail:` and no `trailhead:`)",
        )
    }
}

impl Serialize for UnifiedTrail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(problem) = self.problem() {
            return Err(serde::ser::Error::custom(problem));
        }
        let mut map = serializer.serialize_map(None)?;
        if let Some(config) = &self.config {
            map.serialize_entry("config", config)?;
        }
        if let Some(trailhead) = &self.trailhead {
            map.serialize_entry("trailhead", &TrailheadOut(trailhead))?;
        }
        if let Some(trail) = &self.trail {
            map.serialize_entry("trail", trail)?;
        }
        map.end()
    }
}

struct TrailheadSeed;

impl<'de> DeserializeSeed<'de> for TrailheadSeed {
    type Value = Step<DeviceRecordings>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        StepSeed::new(StepForm::Trailhead).deserialize(deserializer)
    }
}

struct StepsSeed;

impl<'de> DeserializeSeed<'de> for StepsSeed {
    type Value = Vec<Step<DeviceRecordings>>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StepsSeed {
    type Value = Vec<Step<DeviceRecordings>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`trail:` as a list of steps")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut steps = Vec::new();
        while let Some(step) = seq.next_element::<Step<DeviceRecordings>>()? {
            steps.push(step);
        }
        Ok(steps)
    }
}

impl<'de> Deserialize<'de> for UnifiedTrail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct UnifiedVisitor;
        impl<'de> Visitor<'de> for UnifiedVisitor {
            type Value = UnifiedTrail;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a unified trail: a map of `config`, `trailhead`, `trail`")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UnifiedTrail, A::Error> {
                let mut trail = UnifiedTrail::default();
                let mut seen: Vec<String> = Vec::new();
                let keys = KeySeed {
                    allowed: &["config", "trailhead", "trail"],
                    unknown: "unknown top-level key `{key}`; a unified trail has `config`, \
                              `trailhead` and `trail`",
                };
                while let Some(key) = map.next_key_seed(keys)? {
                    if seen.contains(&key) {
                        return Err(de::Error::custom(format!("`{key}:` appears twice")));
                    }
                    match key.as_str() {
                        "config" => trail.config = Some(map.next_value()?),
                        "trailhead" => trail.trailhead = Some(map.next_value_seed(TrailheadSeed)?),
                        _ => trail.trail = Some(map.next_value_seed(StepsSeed)?),
                    }
                    seen.push(key);
                }
                match trail.problem() {
                    Some(message) => Err(de::Error::custom(message)),
                    None => Ok(trail),
                }
            }
        }
        deserializer.deserialize_map(UnifiedVisitor)
    }
}

/// A trail file in either form.
///
/// ```
/// use agent_memory_recording::Trail;
///
/// let text = "- prompts:\n  - step: Sign in\n    recording:\n      tools:\n      - signIn:\n          email: ${merchant_email}\n";
/// let trail = Trail::from_yaml_str(text, "sign-in.trail.yaml")?;
/// let again = Trail::from_yaml_str(&trail.to_yaml_string()?, "again")?;
/// assert_eq!(trail, again);
///
/// let err = Trail::from_yaml_str("- prompts:\n  - step: a\n    bogus: 1\n", "bad.trail.yaml").unwrap_err();
/// assert!(err.to_string().starts_with("bad.trail.yaml:3:5: "), "{err}");
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Trail {
    /// The legacy list form.
    Legacy(Vec<LegacyItem>),
    /// The unified form.
    Unified(UnifiedTrail),
}

fn parse_error(file: &str, error: &serde_yaml::Error) -> Error {
    let (line, column) = error
        .location()
        .map_or((0, 0), |at| (at.line(), at.column()));
    let message = error.to_string();
    // serde_yaml appends the position to its message; the error already leads with it.
    let message = match message.find(" at line ") {
        Some(cut) => message[..cut].to_owned(),
        None => message,
    };
    Error::Parse {
        file: file.to_owned(),
        line,
        column,
        message,
    }
}

/// What a trail document may not hold: its YAML never carries these, and not every one of
/// them can be written back.
enum Unsupported {
    /// A local tag (`!name`), as written.
    Tag(String),
    /// A mapping key that is itself a list or a map (`? [a, b]: c`).
    ComplexKey,
}

/// The first unsupported construct anywhere in `value`.
fn first_unsupported(value: &Yaml) -> Option<Unsupported> {
    match value {
        Yaml::Tagged(tagged) => Some(Unsupported::Tag(tagged.tag.to_string())),
        Yaml::Sequence(items) => items.iter().find_map(first_unsupported),
        Yaml::Mapping(map) => map.iter().find_map(|(k, v)| {
            if matches!(k, Yaml::Sequence(_) | Yaml::Mapping(_)) {
                return Some(Unsupported::ComplexKey);
            }
            first_unsupported(k).or_else(|| first_unsupported(v))
        }),
        _ => None,
    }
}

/// The 1-based line and column of the first `needle` in `text` (1:1 when absent).
fn position_of(text: &str, needle: &str) -> (usize, usize) {
    text.find(needle).map_or((1, 1), |at| {
        let before = &text[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |nl| nl + 1) + 1;
        (line, column)
    })
}

impl Trail {
    /// Parses trail YAML; `file` names the text in errors. A UTF-8 byte-order mark before
    /// the text is skipped.
    pub fn from_yaml_str(text: &str, file: &str) -> Result<Self> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let document: Yaml = serde_yaml::from_str(text).map_err(|e| parse_error(file, &e))?;
        if let Some(unsupported) = first_unsupported(&document) {
            // Refused rather than mangled: a trail that reads must write back.
            let (needle, message) = match unsupported {
                Unsupported::Tag(tag) => (
                    tag.clone(),
                    format!("YAML tag {tag} is not part of the trail format"),
                ),
                Unsupported::ComplexKey => (
                    "? ".to_owned(),
                    "a mapping key that is a list or a map is not part of the trail format"
                        .to_owned(),
                ),
            };
            let (line, column) = position_of(text, &needle);
            return Err(Error::Parse {
                file: file.to_owned(),
                line,
                column,
                message,
            });
        }
        let read = match document {
            Yaml::Sequence(_) => serde_yaml::Deserializer::from_str(text)
                .deserialize_seq(LegacyItems)
                .map(Trail::Legacy),
            Yaml::Mapping(_) => serde_yaml::from_str(text).map(Trail::Unified),
            _ => {
                return Err(Error::Parse {
                    file: file.to_owned(),
                    line: 1,
                    column: 1,
                    message: "a trail is a list (legacy form) or a map (unified form)".to_owned(),
                });
            }
        };
        read.map_err(|e| parse_error(file, &e))
    }

    /// Reads and parses a trail file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            file: file.clone(),
            source,
        })?;
        // A byte-order mark some editors write is not part of the document.
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        Trail::from_yaml_str(text, &file)
    }

    /// The trail as YAML text, in canonical form.
    pub fn to_yaml_string(&self) -> Result<String> {
        let text = match self {
            Trail::Legacy(items) => serde_yaml::to_string(items),
            Trail::Unified(trail) => serde_yaml::to_string(trail),
        };
        // Quoted also where only a YAML 1.1 reader would read another type (`8:00`, `yes`).
        text.map(|text| crate::yaml11::requote(&text))
            .map_err(|e| Error::Encode {
                message: e.to_string(),
            })
    }

    /// Writes the trail to `path`.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        std::fs::write(path, self.to_yaml_string()?).map_err(|source| Error::Io {
            file: path.display().to_string(),
            source,
        })
    }

    /// The trail's `config:` block, when it has one.
    pub fn config(&self) -> Option<&Config> {
        match self {
            Trail::Legacy(items) => items.iter().find_map(|item| match item {
                LegacyItem::Config(config) => Some(config),
                _ => None,
            }),
            Trail::Unified(trail) => trail.config.as_ref(),
        }
    }

    /// Every recorded call of every device, with its place in the trail
    /// (`trail[1].recording.android-phone[0]`), in document order.
    pub fn recorded_calls(&self) -> Vec<(String, &ToolCall)> {
        fn list<'c>(prefix: String, calls: &'c [ToolCall], out: &mut Vec<(String, &'c ToolCall)>) {
            for (k, call) in calls.iter().enumerate() {
                out.push((format!("{prefix}[{k}]"), call));
            }
        }
        let mut out = Vec::new();
        match self {
            Trail::Legacy(items) => {
                for (i, item) in items.iter().enumerate() {
                    match item {
                        LegacyItem::Config(_) => {}
                        LegacyItem::Trailhead(t) => {
                            if let Some(tools) = &t.tools {
                                list(format!("[{i}].trailhead.tools"), tools, &mut out);
                            }
                        }
                        LegacyItem::Tools(tools) => list(format!("[{i}].tools"), tools, &mut out),
                        LegacyItem::Prompts(steps) => {
                            for (j, step) in steps.iter().enumerate() {
                                if let Some(r) = &step.recording {
                                    let at = format!("[{i}].prompts[{j}].recording.tools");
                                    list(at, &r.tools, &mut out);
                                }
                            }
                        }
                    }
                }
            }
            Trail::Unified(trail) => {
                if let Some(head) = &trail.trailhead {
                    for (classifier, calls) in head.recording.iter().flat_map(|r| r.iter()) {
                        for call in calls {
                            out.push((format!("trailhead.recording.{classifier}"), call));
                        }
                    }
                }
                for (i, step) in trail.steps().iter().enumerate() {
                    for (classifier, calls) in step.recording.iter().flat_map(|r| r.iter()) {
                        list(
                            format!("trail[{i}].recording.{classifier}"),
                            calls,
                            &mut out,
                        );
                    }
                }
            }
        }
        out
    }

    /// Whether some step (or the trailhead) records a call for some device.
    pub fn has_recordings(&self) -> bool {
        match self {
            Trail::Legacy(items) => items.iter().any(|item| match item {
                LegacyItem::Config(_) => false,
                LegacyItem::Trailhead(t) => t.tools.as_ref().is_some_and(|t| !t.is_empty()),
                LegacyItem::Tools(tools) => !tools.is_empty(),
                LegacyItem::Prompts(steps) => steps
                    .iter()
                    .any(|s| s.recording.as_ref().is_some_and(|r| !r.tools.is_empty())),
            }),
            Trail::Unified(trail) => trail.trailhead.iter().chain(trail.steps()).any(|s| {
                s.recording
                    .as_ref()
                    .is_some_and(DeviceRecordings::has_calls)
            }),
        }
    }
}
