//! Trail YAML: the legacy list form (`- config`, `- tools`, `- prompts`) and the unified
//! form (`config:`, `trailhead:`, `trail:` with recordings keyed by device classifier), both
//! read and written. Tools the crate does not know round-trip unchanged: a tool is its name
//! and its parameters as YAML, nothing more.
//!
//! A step's recording has three states: absent (`None`, replay asks the agent), empty (a
//! deliberate no-op) and non-empty (replayed in order).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_yaml::{Mapping, Value as Yaml};

use crate::error::{Error, Result};

/// One tool call in a trail: `toolName: {parameters}`.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The tool's name.
    pub name: String,
    /// Its parameters, as written.
    pub params: Yaml,
}

impl ToolCall {
    /// A call of `name` with JSON parameters.
    pub fn from_json(name: impl Into<String>, params: &serde_json::Value) -> Result<Self> {
        let name = name.into();
        let params = serde_yaml::to_value(params).map_err(|e| Error::Parameters {
            tool: name.clone(),
            message: e.to_string(),
        })?;
        Ok(ToolCall { name, params })
    }

    /// The parameters as JSON (fails on YAML that JSON cannot hold, such as non-string keys).
    pub fn params_json(&self) -> Result<serde_json::Value> {
        serde_json::to_value(&self.params).map_err(|e| Error::Parameters {
            tool: self.name.clone(),
            message: e.to_string(),
        })
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry(&self.name, &self.params)?;
        map.end()
    }
}

fn tool_from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<ToolCall, A::Error> {
    let Some((name, params)) = map.next_entry::<String, Yaml>()? else {
        return Err(de::Error::custom(
            "a tool is a map with one entry, its name; found an empty map",
        ));
    };
    if let Some(other) = map.next_key::<String>()? {
        return Err(de::Error::custom(format!(
            "a tool is a map with one entry, its name; found {name:?} and {other:?}"
        )));
    }
    Ok(ToolCall { name, params })
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
                tool_from_map(map)
            }
        }
        deserializer.deserialize_map(ToolVisitor)
    }
}

/// The tools recorded for one device classifier: a list, or one tool written inline as a
/// map (as trailheads often are).
#[derive(Clone, Debug, PartialEq)]
pub struct Tools {
    /// The calls, in order.
    pub calls: Vec<ToolCall>,
    /// Written as a single map rather than a list (only meaningful with one call).
    pub inline: bool,
}

impl Tools {
    /// A list of calls.
    pub fn list(calls: Vec<ToolCall>) -> Self {
        Tools {
            calls,
            inline: false,
        }
    }
}

impl Serialize for Tools {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.calls.as_slice() {
            [single] if self.inline => single.serialize(serializer),
            calls => {
                let mut seq = serializer.serialize_seq(Some(calls.len()))?;
                for call in calls {
                    seq.serialize_element(call)?;
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Tools {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ToolsVisitor;
        impl<'de> Visitor<'de> for ToolsVisitor {
            type Value = Tools;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of tool calls or one tool call")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tools, A::Error> {
                let mut calls = Vec::new();
                while let Some(call) = seq.next_element()? {
                    calls.push(call);
                }
                Ok(Tools::list(calls))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tools, A::Error> {
                Ok(Tools {
                    calls: vec![tool_from_map(map)?],
                    inline: true,
                })
            }
        }
        deserializer.deserialize_any(ToolsVisitor)
    }
}

/// Whether a step acts or checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// `step:` an action.
    Step,
    /// `verify:` a check.
    Verify,
}

/// One step of a trail with its recording `R` (absent, empty or non-empty).
#[derive(Clone, Debug, PartialEq)]
pub struct Step<R> {
    /// Action or check.
    pub kind: StepKind,
    /// The natural-language objective.
    pub text: String,
    /// The recording; `None` when the step has none.
    pub recording: Option<R>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep<R> {
    step: Option<String>,
    verify: Option<String>,
    recording: Option<R>,
}

#[derive(Serialize)]
struct RawStepRef<'a, R> {
    #[serde(skip_serializing_if = "Option::is_none")]
    step: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verify: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    recording: Option<&'a R>,
}

impl<R: Serialize> Serialize for Step<R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = Some(self.text.as_str());
        RawStepRef {
            step: text.filter(|_| self.kind == StepKind::Step),
            verify: text.filter(|_| self.kind == StepKind::Verify),
            recording: self.recording.as_ref(),
        }
        .serialize(serializer)
    }
}

impl<'de, R: Deserialize<'de>> Deserialize<'de> for Step<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawStep::<R>::deserialize(deserializer)?;
        let (kind, text) = match (raw.step, raw.verify) {
            (Some(text), None) => (StepKind::Step, text),
            (None, Some(text)) => (StepKind::Verify, text),
            (Some(_), Some(_)) => {
                return Err(de::Error::custom(
                    "a step has `step:` or `verify:`, not both",
                ));
            }
            (None, None) => return Err(de::Error::custom("a step needs `step:` or `verify:`")),
        };
        Ok(Step {
            kind,
            text,
            recording: raw.recording,
        })
    }
}

/// A legacy step's recording: `recording: {tools: [...]}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LegacyRecording {
    /// The calls, in order.
    pub tools: Vec<ToolCall>,
}

/// One item of the legacy list form.
#[derive(Clone, Debug, PartialEq)]
pub enum LegacyItem {
    /// `- config: {...}`
    Config(Mapping),
    /// `- tools: [...]`: calls replayed as they are, outside any step.
    Tools(Vec<ToolCall>),
    /// `- prompts: [...]`
    Prompts(Vec<Step<LegacyRecording>>),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
struct RawLegacyItem {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<Mapping>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<ToolCall>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompts: Option<Vec<Step<LegacyRecording>>>,
}

impl Serialize for LegacyItem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            LegacyItem::Config(config) => map.serialize_entry("config", config)?,
            LegacyItem::Tools(tools) => map.serialize_entry("tools", tools)?,
            LegacyItem::Prompts(prompts) => map.serialize_entry("prompts", prompts)?,
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for LegacyItem {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawLegacyItem::deserialize(deserializer)?;
        match (raw.config, raw.tools, raw.prompts) {
            (Some(config), None, None) => Ok(LegacyItem::Config(config)),
            (None, Some(tools), None) => Ok(LegacyItem::Tools(tools)),
            (None, None, Some(prompts)) => Ok(LegacyItem::Prompts(prompts)),
            _ => Err(de::Error::custom(
                "a legacy trail item has exactly one of `config`, `tools`, `prompts`",
            )),
        }
    }
}

/// Recordings of a unified step, by device classifier (`android-phone`, `android`, ...).
pub type DeviceRecordings = BTreeMap<String, Tools>;

/// The unified form.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnifiedTrail {
    /// `config:` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Mapping>,
    /// `trailhead:`: the step that sets the scene.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trailhead: Option<Step<DeviceRecordings>>,
    /// `trail:`: the steps, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trail: Vec<Step<DeviceRecordings>>,
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
    /// Parses trail YAML; `file` names the text in errors.
    pub fn from_yaml_str(text: &str, file: &str) -> Result<Self> {
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
        match document {
            Yaml::Sequence(_) => serde_yaml::from_str(text)
                .map(Trail::Legacy)
                .map_err(|e| parse_error(file, &e)),
            Yaml::Mapping(_) => serde_yaml::from_str(text)
                .map(Trail::Unified)
                .map_err(|e| parse_error(file, &e)),
            _ => Err(Error::Parse {
                file: file.to_owned(),
                line: 1,
                column: 1,
                message: "a trail is a list (legacy form) or a map (unified form)".to_owned(),
            }),
        }
    }

    /// Reads and parses a trail file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            file: file.clone(),
            source,
        })?;
        Trail::from_yaml_str(&text, &file)
    }

    /// The trail as YAML text.
    pub fn to_yaml_string(&self) -> Result<String> {
        let text = match self {
            Trail::Legacy(items) => serde_yaml::to_string(items),
            Trail::Unified(trail) => serde_yaml::to_string(trail),
        };
        text.map_err(|e| Error::Encode {
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
}
