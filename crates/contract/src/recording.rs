//! The recording operations: recorded tool calls kept in a session (`recording_append`) or
//! imported from a file (`recording_import`), turned into a trail whose literals from memory
//! are `${key}` tokens (`recording_templatize`), checked for literals that will go stale
//! (`recording_lint`), written in canonical form (`recording_fmt`), and replayed on a device:
//! planned whole (`recording_replay`) or one call at a time (`recording_next_call`).
//!
//! Tool logs travel as the documents `agent-memory recording import` reads (Trailblaze's
//! camelCase tool-log JSON, `toolName`, `memorySnapshot`, ...): that is their format. Files
//! an input names (`logs_path`, `trail_path`, `memory_path`, ...) are read as the
//! environment's [`FileAccess`] allows; steps and tools are numbered from 1 wherever an
//! output numbers them, and indexed from 0 where a field says `index`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::files::{self, FileAccess};
use crate::{Env, Error, ErrorKind, Result, ResultExt};
use agent_memory_core::Error as CoreError;
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::tool_log::{ToolLog, ToolLogStore};
use agent_memory_core::{SessionId, Timestamp};
use agent_memory_recording::{
    Action, Found, GenerationPolicy, Memory, MemoryWrites, MissingKey, MissingKeys, Objective,
    Origin, Provenance, ReplayOptions, Replayer, Seeds, Snapshot, StepAction, StepKind,
    TemplatePolicy, ToolLogFile, Trail, generate_recording, lint_trail, read_tool_logs,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One recorded tool call with the agent's memory after it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolLogDocument {
    /// The session the call belongs to; may be left out when appending to a session.
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub session: Option<String>,
    /// The tool's name, e.g. `inputText`.
    #[serde(deserialize_with = "unquoted")]
    pub tool_name: String,
    /// The call's parameters, as the tool received them.
    #[schemars(schema_with = "crate::portable::json_object")]
    pub parameters: Value,
    /// Whether the tool reported success.
    #[serde(deserialize_with = "unquoted")]
    pub successful: bool,
    /// The tool's error message when it failed.
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub exception_message: Option<String>,
    /// How long the call took, in milliseconds.
    #[serde(default, deserialize_with = "unquoted")]
    pub duration_ms: u64,
    /// When the call finished, in milliseconds since the epoch.
    #[serde(deserialize_with = "unquoted")]
    pub timestamp: i64,
    /// The trace the call belongs to; repeated entries of one execution share it.
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub trace_id: Option<String>,
    /// The agent's memory after the call, one entry per key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_snapshot: Option<Vec<SnapshotEntryDocument>>,
}

/// One key of a memory snapshot.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotEntryDocument {
    /// The memory key.
    #[serde(deserialize_with = "unquoted")]
    pub key: String,
    /// The value; left out for a sensitive key (a sensitive value is never kept).
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<String>,
    /// The key holds a secret: only its name is kept.
    #[serde(default, deserialize_with = "unquoted")]
    pub sensitive: bool,
    /// The tool whose call last wrote the key.
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub written_by: Option<String>,
    /// When the key was last written, in milliseconds since the epoch.
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub written_at: Option<i64>,
    /// Whether the key existed before the call (default true).
    #[serde(
        default,
        deserialize_with = "unquoted",
        skip_serializing_if = "Option::is_none"
    )]
    pub existed_before: Option<bool>,
}

/// A field of a tool log document read as `T`. A value of the wrong type is named by its JSON
/// type only, never quoted: any value of a tool log may be a secret (an integer PIN marked
/// sensitive), and serde's own message would quote it.
fn unquoted<'de, D, T>(deserializer: D) -> std::result::Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    T::deserialize(&value).map_err(|e| {
        let message = e.to_string();
        // serde's message is `invalid type: integer `1234`, expected a string`: only what it
        // expected is kept.
        let expected = message
            .find("expected ")
            .map_or("of another type", |at| &message[at..]);
        let got = match &value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "a list",
            Value::Object(_) => "an object",
        };
        serde::de::Error::custom(format!("invalid value: {got}, {expected}"))
    })
}

/// The stored form of `documents`, each in `session` unless it names one. They are read
/// together, as the lines of one `recording import` file: a value any snapshot of them marks
/// sensitive is scrubbed from every field of every one, the earlier ones included, before
/// anything is returned. An error names the document as `logs:LINE`, the LINE-th document.
fn read_documents(documents: &[ToolLogDocument], session: &str) -> Result<Vec<ToolLog>> {
    let mut lines = String::new();
    for (i, document) in documents.iter().enumerate() {
        let mut document = document.clone();
        document.session.get_or_insert_with(|| session.to_owned());
        lines.push_str(&serde_json::to_string(&document).with_context(|| format!("logs[{i}]"))?);
        lines.push('\n');
    }
    let file = read_tool_logs(&lines, "logs").map_err(|e| Error::invalid("logs", e.to_string()))?;
    Ok(file.logs)
}

fn session_id(name: &str) -> Result<SessionId> {
    SessionId::new(name).with_context(|| format!("session {}", Excerpt::quoted(name)))
}

/// A stored tool log as a document of the format `recording_import` reads (Trailblaze's
/// camelCase tool-log JSON); `null` for a log the format cannot hold.
pub fn tool_log_document(log: &ToolLog) -> Value {
    agent_memory_recording::tool_log_to_json(log)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .unwrap_or(Value::Null)
}

/// Tool logs to append to a session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendInput {
    /// The session.
    pub session: String,
    /// The tool logs, in the order the calls ran.
    pub logs: Vec<ToolLogDocument>,
    /// Who logged them (`tool:NAME`, `model:NAME`, `user`, ...); default each call's own
    /// tool, `tool:TOOL_NAME`.
    #[serde(default)]
    pub source: Option<String>,
}

/// What an append stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AppendOutput {
    /// The session.
    pub session: String,
    /// Tool logs appended.
    pub appended: u64,
    /// Tool logs the session holds now.
    pub logs: u64,
}

/// Appends the logs to the session. Every log is read and checked before the first write,
/// so a bad document writes nothing.
pub fn append(env: &Env<'_>, input: AppendInput) -> Result<AppendOutput> {
    let session = session_id(&input.session)?;
    if input.logs.is_empty() {
        return Err(Error::invalid(
            "logs",
            "give at least one tool log to append",
        ));
    }
    for (i, document) in input.logs.iter().enumerate() {
        let at = format!("logs[{i}]");
        if let Some(other) = document.session.as_deref().filter(|s| *s != input.session) {
            return Err(Error::invalid(
                at.as_str(),
                format!(
                    "{at}: a tool log of session {other:?} cannot be appended to session {:?}",
                    input.session
                ),
            ));
        }
    }
    // Every secret the batch reveals is scrubbed from every log of it before the store sees
    // any: the store never receives one.
    let source = crate::evidence::source_input(input.source.as_deref())?;
    let mut logs = read_documents(&input.logs, &input.session)?;
    // Each log keeps who logged it: the caller's source or the call's own tool, through the
    // door's client, at the log's own time.
    for log in &mut logs {
        let source = source
            .clone()
            .unwrap_or_else(|| agent_memory_core::Source::Tool(log.tool_name.clone()));
        log.provenance = Some(crate::evidence::door_writer(env, source, log.timestamp));
    }
    if logs.is_empty() {
        return Err(Error::invalid(
            "logs",
            "no tool log to keep (every one was skipped)",
        ));
    }
    // One transaction: every log or none.
    env.store.append_tool_logs(&logs)?;
    let held = env.store.list_tool_logs(&session)?.len() as u64;
    Ok(AppendOutput {
        session: input.session.clone(),
        appended: logs.len() as u64,
        logs: held,
    })
}

/// An objective of the session: a step of the trail to generate.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjectiveInput {
    /// An action step's text (give this or `verify`).
    #[serde(default)]
    pub step: Option<String>,
    /// A check's text (give this or `step`).
    #[serde(default)]
    pub verify: Option<String>,
    /// When the agent started on it, in milliseconds since the epoch like the logs'
    /// timestamps: the logs from here to the next objective belong to it.
    pub started_at: i64,
}

impl ObjectiveInput {
    /// The objective, or `None` unless exactly one of `step` and `verify` is given.
    fn objective(&self) -> Option<Objective> {
        let (kind, text) = match (&self.step, &self.verify) {
            (Some(text), None) => (StepKind::Step, text),
            (None, Some(text)) => (StepKind::Verify, text),
            _ => return None,
        };
        Some(Objective::new(
            kind,
            text.clone(),
            Timestamp::from_millis(self.started_at),
        ))
    }
}

/// The fewest characters an ordinary value needs to become a token, or to count in a lint,
/// when the input does not say.
pub const DEFAULT_MIN_CHARS: usize = 8;

/// The device classifier recordings are filed under when a templatize input does not say.
pub const DEFAULT_DEVICE: &str = "android-phone";

/// Tool logs to turn into a trail.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplatizeInput {
    /// A stored session (or `logs`, `logs_path`).
    #[serde(default)]
    pub session: Option<String>,
    /// The tool logs of one session (or `session`, `logs_path`).
    #[serde(default)]
    pub logs: Option<Vec<ToolLogDocument>>,
    /// A tool-log file, ours or Trailblaze's (or `session`, `logs`).
    // Its documents stand one a line or pretty-printed one after another; the ones
    // Trailblaze's recording generator skips are skipped and reported (`skipped`). Over MCP
    // the file is in an `--allow-dir` folder and at most 4 MiB, as every file a tool reads.
    #[serde(default)]
    pub logs_path: Option<String>,
    /// The objectives, in order; else `objectives_path`'s, those logged, or one step.
    // "Those logged": the objectives Trailblaze logged in `logs_path`; without any, one step
    // holds every call.
    #[serde(default)]
    pub objectives: Vec<ObjectiveInput>,
    /// A JSON file of `objectives`.
    #[serde(default)]
    pub objectives_path: Option<String>,
    /// The device classifier (default `android-phone`).
    #[serde(default)]
    pub device: Option<String>,
    /// Fewest characters a value needs to become a token (default 8).
    #[serde(default)]
    pub min_chars: Option<usize>,
    /// Report the substitutions only; no trail.
    #[serde(default)]
    pub dry_run: bool,
    /// Also template a value inside a longer string (`Hi, ${name}`).
    // Only a known writer's value of at least `min_chars` characters, as a whole value is.
    #[serde(default)]
    pub inside: bool,
    /// The trail's `config.title`.
    #[serde(default)]
    pub title: Option<String>,
}

/// The generated trail and what was templated in it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TemplatizeOutput {
    /// The trail YAML (unified form); absent with `dry_run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trail: Option<String>,
    /// Steps in the trail.
    pub steps: u64,
    /// Every literal replaced by a `${key}` token.
    pub substitutions: Vec<SubstitutionEntry>,
    /// The documents of `logs_path` not kept as tool logs, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedDocument>,
}

/// One literal replaced by a token.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubstitutionEntry {
    /// The index of the tool log (from 0).
    pub tool_index: u64,
    /// The JSON path of the parameter.
    pub path: String,
    /// The memory key whose token replaced it.
    pub key: String,
    /// Why: `sensitive`, `known writer`, `long value` or `scrubbed secret`.
    pub reason: String,
}

/// A document of a tool-log file that was read but not kept as a tool log.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SkippedDocument {
    /// The line the document starts on (from 1).
    pub line: u64,
    /// The tool, for a tool log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Why, as Trailblaze's recording generator skips it: `not recordable`, `nested in
    /// another call`, `repeated verification`, `not a tool log (CLASS)`, ...
    pub reason: String,
}

/// How many documents were skipped for each reason, the reasons in order:
/// `2 nested in another call, 1 not recordable`.
pub fn skip_summary(skipped: &[SkippedDocument]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for document in skipped {
        *counts.entry(document.reason.as_str()).or_default() += 1;
    }
    counts
        .into_iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A file of tool logs, read.
struct LogFile {
    /// The tool logs kept, the documents skipped and the objectives Trailblaze logged.
    file: ToolLogFile,
    /// The documents not kept, and why.
    skipped: Vec<SkippedDocument>,
    /// The numbers of the file's non-blank lines, in order: the line of each log in a file
    /// of one document a line with nothing skipped.
    lines: Vec<usize>,
}

/// The tool logs of the file at `path` (as `access` allows; errors name the file, its line
/// and the field). A file with no tool log to keep is an `invalid_input` error about it.
fn read_log_file(path: &str, access: &FileAccess) -> Result<LogFile> {
    let text = files::read_bulk(
        Path::new(path),
        access,
        &format!("cannot read tool logs {path}"),
    )?;
    let file = read_tool_logs(&text, path)?;
    let skipped: Vec<SkippedDocument> = file
        .skipped
        .iter()
        .map(|s| SkippedDocument {
            line: s.line as u64,
            tool: s.tool.clone(),
            reason: s.reason.describe(),
        })
        .collect();
    if file.logs.is_empty() {
        let why = match skipped.is_empty() {
            true => String::new(),
            false => format!(
                " ({} document(s) skipped: {})",
                skipped.len(),
                skip_summary(&skipped)
            ),
        };
        return Err(Error::invalid(
            path,
            format!("{path} holds no tool logs; nothing to import{why}"),
        ));
    }
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, _)| index + 1)
        .collect();
    Ok(LogFile {
        file,
        skipped,
        lines,
    })
}

/// The stored tool logs of session `id`; a session with none is a `not_found` error.
fn stored_logs(env: &Env<'_>, id: &str) -> Result<Vec<ToolLog>> {
    let logs = env.store.list_tool_logs(&session_id(id)?)?;
    if logs.is_empty() {
        return Err(Error::not_found(
            id,
            format!(
                "session {id:?} has no tool logs in {}",
                env.store.location()
            ),
        ));
    }
    Ok(logs)
}

/// The session's (or the given, or the file's) tool logs as a trail with memory tokens.
pub fn templatize(env: &Env<'_>, input: TemplatizeInput) -> Result<TemplatizeOutput> {
    let mut logged = Vec::new();
    let mut skipped = Vec::new();
    let (logs, name) = match (&input.session, &input.logs, &input.logs_path) {
        (Some(id), None, None) => (stored_logs(env, id)?, format!("session {id}")),
        (None, Some(documents), None) => {
            // Read together, so a secret a later log reveals is masked in the earlier ones.
            let logs = read_documents(documents, "inline")?;
            let sessions: BTreeSet<&str> = logs.iter().map(|l| l.session.as_str()).collect();
            if sessions.len() > 1 {
                return Err(Error::invalid(
                    "logs",
                    format!(
                        "the tool logs belong to {} sessions ({}); templatize one session at a time",
                        sessions.len(),
                        sessions.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            (logs, "the tool logs".to_owned())
        }
        (None, None, Some(path)) => {
            let LogFile {
                file,
                skipped: file_skipped,
                ..
            } = read_log_file(path, &env.files)?;
            let sessions: BTreeSet<&str> = file.logs.iter().map(|l| l.session.as_str()).collect();
            if sessions.len() > 1 {
                return Err(Error::invalid(
                    path.as_str(),
                    format!(
                        "{path} holds the tool logs of {} sessions ({}); import it and templatize one with --session",
                        sessions.len(),
                        sessions.into_iter().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            if let Some(first) = file.logs.first() {
                logged = file.objectives_of(&first.session);
            }
            skipped = file_skipped;
            (file.logs, path.clone())
        }
        _ => {
            return Err(Error::invalid(
                "session",
                "give exactly one of session, logs and logs_path to templatize",
            ));
        }
    };
    let mut objectives = objectives(env, &input)?;
    if objectives.is_empty() {
        objectives = logged;
    }
    if objectives.is_empty() {
        let session = logs.first().map(|l| l.session.as_str()).unwrap_or_default();
        objectives.push(Objective::new(
            StepKind::Step,
            format!("Replay the tool calls of session {session}"),
            Timestamp::from_millis(i64::MIN),
        ));
    }
    let template = TemplatePolicy::default()
        .with_min_chars(input.min_chars.unwrap_or(DEFAULT_MIN_CHARS))
        .with_dry_run(input.dry_run)
        .with_inside(input.inside);
    let mut policy =
        GenerationPolicy::for_classifier(input.device.as_deref().unwrap_or(DEFAULT_DEVICE))
            .with_template(template);
    if let Some(title) = &input.title {
        policy = policy.with_config("title", title.as_str());
    }
    let generated = generate_recording(&objectives, &logs, &policy)
        .with_context(|| format!("templatizing {name}"))?;
    let trail = match input.dry_run {
        true => None,
        false => Some(generated.trail.to_yaml_string()?),
    };
    Ok(TemplatizeOutput {
        trail,
        steps: objectives.len() as u64,
        substitutions: generated
            .substitutions
            .iter()
            .map(|s| SubstitutionEntry {
                tool_index: s.tool_index as u64,
                path: s.path.clone(),
                key: s.key.clone(),
                reason: s.reason.to_string(),
            })
            .collect(),
        skipped,
    })
}

/// The objectives `input` gives, inline or in a file (not both); none when it gives none.
fn objectives(env: &Env<'_>, input: &TemplatizeInput) -> Result<Vec<Objective>> {
    let Some(path) = &input.objectives_path else {
        return input
            .objectives
            .iter()
            .enumerate()
            .map(|(i, o)| {
                o.objective().ok_or_else(|| {
                    Error::invalid(
                        format!("objectives[{i}]"),
                        format!("objective {i} needs exactly one of `step` and `verify`"),
                    )
                })
            })
            .collect();
    };
    if !input.objectives.is_empty() {
        return Err(Error::invalid(
            "objectives_path",
            "give objectives or objectives_path, not both",
        ));
    }
    let text = files::read_file(
        Path::new(path),
        &env.files,
        &format!("cannot read objectives {path}"),
    )?;
    let documents: Vec<ObjectiveInput> =
        serde_json::from_str(&files::without_bom(text)).map_err(|e| json_error(path, &e))?;
    documents
        .iter()
        .enumerate()
        .map(|(i, o)| {
            o.objective().ok_or_else(|| {
                Error::invalid(
                    path.as_str(),
                    format!("{path}: objective {i} needs exactly one of `step` and `verify`"),
                )
            })
        })
        .collect()
}

/// A JSON error in the file `path` as `path:line:column: message`, an `invalid_input` error
/// about the file.
fn json_error(path: &str, error: &serde_json::Error) -> Error {
    let message = error.to_string();
    let message = message
        .find(" at line ")
        .map_or(message.as_str(), |cut| &message[..cut]);
    Error::invalid(
        path,
        format!("{path}:{}:{}: {message}", error.line(), error.column()),
    )
}

/// The trail of `text` or `path` (exactly one, the file read as `env` allows), and how
/// errors name it.
fn read_trail(env: &Env<'_>, text: Option<&str>, path: Option<&str>) -> Result<(Trail, String)> {
    match (text, path) {
        (Some(text), None) => Ok((Trail::from_yaml_str(text, "trail")?, "trail".to_owned())),
        (None, Some(path)) => {
            let text =
                files::read_file(Path::new(path), &env.files, &format!("trail file {path}"))?;
            let trail = Trail::from_yaml_str(&text, path)?;
            Ok((trail, path.to_owned()))
        }
        _ => Err(Error::invalid(
            "trail",
            "give exactly one of trail and trail_path",
        )),
    }
}

/// The memory values of a replay or a lint: those of the file `memory_path`, then `memory`,
/// then `secrets`, each winning over the ones before on a key; a key sensitive anywhere stays
/// sensitive.
fn seeds(
    env: &Env<'_>,
    memory_path: Option<&str>,
    memory: &BTreeMap<String, String>,
    secrets: &BTreeMap<String, String>,
) -> Result<Seeds> {
    let mut seeds = Seeds::new();
    if let Some(path) = memory_path {
        for (key, value, sensitive) in memory_file(env, path)? {
            match sensitive {
                true => seeds.secrets.insert(key, value),
                false => seeds.memory.insert(key, value),
            };
        }
    }
    for (key, value) in memory {
        match seeds.secrets.contains_key(key) {
            true => seeds.secrets.insert(key.clone(), value.clone()),
            false => seeds.memory.insert(key.clone(), value.clone()),
        };
    }
    for (key, value) in secrets {
        seeds.memory.remove(key);
        seeds.secrets.insert(key.clone(), value.clone());
    }
    Ok(seeds)
}

/// The values of the memory file `path`: one JSON object whose members are strings, numbers,
/// booleans or `{"value": ..., "sensitive": true}`, each as `(key, value, sensitive)`.
fn memory_file(env: &Env<'_>, path: &str) -> Result<Vec<(String, String, bool)>> {
    let text = files::read_file(
        Path::new(path),
        &env.files,
        &format!("cannot read memory values {path}"),
    )?;
    let object: serde_json::Map<String, Value> =
        serde_json::from_str(&files::without_bom(text)).map_err(|e| json_error(path, &e))?;
    object
        .into_iter()
        .map(|(key, value)| {
            let (text, sensitive) = memory_file_value(path, &key, value)?;
            Ok((key, text, sensitive))
        })
        .collect()
}

/// One value of the memory file `path`: a string, number or boolean, or `{"value": ...,
/// "sensitive": true}`. Errors name the file and key, never the value.
fn memory_file_value(path: &str, key: &str, value: Value) -> Result<(String, bool)> {
    let scalar = |value: Value| match value {
        Value::String(text) => Some(text),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    let shape = |value: &Value| match value {
        Value::Null => "null",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
        _ => "a scalar",
    };
    let refuse = |message: String| Error::invalid(path, format!("{path}: {message}"));
    let Value::Object(mut entry) = value else {
        let kind = shape(&value);
        let text = scalar(value).ok_or_else(|| {
            refuse(format!(
                "memory value {key:?} is {kind}, not a string, number, boolean or {{\"value\": ..., \"sensitive\": true}}"
            ))
        })?;
        return Ok((text, false));
    };
    let sensitive = match entry.remove("sensitive") {
        None => false,
        Some(Value::Bool(flag)) => flag,
        Some(_) => {
            return Err(refuse(format!(
                "`sensitive` of memory value {key:?} must be true or false"
            )));
        }
    };
    if let Some(field) = entry.keys().find(|k| *k != "value") {
        return Err(refuse(format!(
            "memory value {key:?} has an unknown field {field:?}; the fields are `value` and `sensitive`"
        )));
    }
    let Some(value) = entry.remove("value") else {
        return Err(refuse(format!("memory value {key:?} has no `value`")));
    };
    let kind = shape(&value);
    let text = scalar(value).ok_or_else(|| {
        refuse(format!(
            "`value` of memory value {key:?} is {kind}, not a string, number or boolean"
        ))
    })?;
    Ok((text, sensitive))
}

/// A trail to check for literals that equal memory values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintInput {
    /// The trail YAML (or `trail_path`).
    #[serde(default)]
    pub trail: Option<String>,
    /// A trail file (or `trail`); over MCP, in an `--allow-dir` folder.
    #[serde(default)]
    pub trail_path: Option<String>,
    /// A JSON file of memory values: `{"k": "v", "pin": {"value": 1, "sensitive": true}}`.
    // Read as `trail_path` is; its values are strings, numbers or booleans.
    #[serde(default)]
    pub memory_path: Option<String>,
    /// Current memory values, by key.
    // They win over `memory_path`'s.
    #[serde(default)]
    pub memory: BTreeMap<String, String>,
    /// Current secret values, by key, never shown.
    // They win over `memory` and `memory_path`, and are found as their tokens.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Also check this stored session's past values.
    #[serde(default)]
    pub session: Option<String>,
    /// Fewest characters a value needs to count (default 8).
    #[serde(default)]
    pub min_chars: Option<usize>,
}

/// Literals that will go stale when memory changes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LintOutput {
    /// Every literal that equals or holds a memory value; empty when the trail is clean.
    pub findings: Vec<LintFinding>,
}

/// One stale literal.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LintFinding {
    /// The step, tool and JSON path of the literal.
    pub location: String,
    /// Whether the literal is the value (`equals`) or holds it inside (`contains`).
    pub kind: LiteralKind,
    /// The memory key whose token should replace the value.
    pub key: String,
    /// Why the key was chosen.
    pub reason: String,
    /// Which memory holds the value: `current memory`, or a stored session's snapshot after
    /// a tool (`session first-run, after tool 1`, tools numbered from 1).
    pub found_in: String,
}

/// How a literal holds a memory value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LiteralKind {
    /// The whole literal is the value.
    Equals,
    /// The value stands inside a longer literal.
    Contains,
}

impl LiteralKind {
    /// Its word: `equals` or `contains`.
    pub fn as_str(self) -> &'static str {
        match self {
            LiteralKind::Equals => "equals",
            LiteralKind::Contains => "contains",
        }
    }
}

/// The trail's literals that equal or hold current or past memory values.
pub fn lint(env: &Env<'_>, input: LintInput) -> Result<LintOutput> {
    let (trail, _) = read_trail(env, input.trail.as_deref(), input.trail_path.as_deref())?;
    let seeds = seeds(
        env,
        input.memory_path.as_deref(),
        &input.memory,
        &input.secrets,
    )?;
    let mut memory = Memory::new();
    let at = || Provenance::unknown(Timestamp::from_millis(0));
    for (key, value) in &seeds.memory {
        memory.remember(key.clone(), value.clone(), at());
    }
    for (key, value) in &seeds.secrets {
        memory.remember_secret(key.clone(), value.clone(), at());
    }
    let policy =
        TemplatePolicy::default().with_min_chars(input.min_chars.unwrap_or(DEFAULT_MIN_CHARS));
    // Each past snapshot with the index of the tool log that holds it.
    let past: Vec<(usize, Snapshot)> = match &input.session {
        Some(id) => stored_logs(env, id)?
            .iter()
            .enumerate()
            .filter_map(|(i, log)| Some((i, Snapshot::from_stored(log.memory_snapshot.as_ref()?))))
            .collect(),
        None => Vec::new(),
    };
    let snapshots: Vec<Snapshot> = past.iter().map(|(_, s)| s.clone()).collect();
    let findings = lint_trail(&trail, &memory.snapshot(), &snapshots, &policy)?;
    Ok(LintOutput {
        findings: findings
            .into_iter()
            .map(|f| LintFinding {
                location: f.location,
                kind: match f.found {
                    Found::Contains => LiteralKind::Contains,
                    _ => LiteralKind::Equals,
                },
                key: f.key,
                reason: f.reason.to_string(),
                found_in: match f.origin {
                    Origin::Current => "current memory".to_owned(),
                    Origin::Past(i) => match (past.get(i), &input.session) {
                        (Some((tool, _)), Some(id)) => {
                            format!("session {id}, after tool {}", tool + 1)
                        }
                        _ => format!("past snapshot {i}"),
                    },
                },
            })
            .collect(),
    })
}

/// A trail to replay on a device, and the values it starts from.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayInput {
    /// The trail YAML (or `trail_path`).
    #[serde(default)]
    pub trail: Option<String>,
    /// A trail file of at most 4 MiB (or `trail`), in either of Trailblaze's forms.
    #[serde(default)]
    pub trail_path: Option<String>,
    /// The device classifier; the closest recording wins (`android-phone`, then `android`).
    pub device: String,
    /// A JSON file of starting memory values (as `recording_lint`).
    #[serde(default)]
    pub memory_path: Option<String>,
    /// Memory the replay starts with, beside the trail's `config.memory`; wins over
    /// `memory_path`.
    #[serde(default)]
    pub memory: BTreeMap<String, String>,
    /// Secret values the replay starts with: used in calls, masked in outputs; win over
    /// `memory` and `memory_path`.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Values of the arguments the trail declares under `config.args`, each coerced to its
    /// declared type (`"3"` for an `integer` is 3).
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

/// Every step of a replay with its calls, or the memory tokens nothing resolves.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReplayOutput {
    /// Every step, numbered from 1, with its calls resolved as memory stands before the run
    /// (a token a known writer produces later stays a token), secrets masked; empty when
    /// tokens are unresolved.
    pub steps: Vec<PlannedStepEntry>,
    /// Every memory token the replay cannot resolve (memory lacks it and no earlier call is
    /// a known writer of it): the replay cannot run until memory has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<UnresolvedToken>,
}

/// One step of a planned replay.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlannedStepEntry {
    /// The step's number, from 1.
    pub step: u64,
    /// `step` or `verify`; absent for legacy top-level `tools`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ObjectiveKind>,
    /// The step's text; absent for legacy top-level `tools`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Whether the step is the trail's trailhead.
    pub trailhead: bool,
    /// The classifier whose recording was chosen (unified form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classifier: Option<String>,
    /// `replay` (its recorded calls, none for a deliberate no-op) or `agent` (no recording
    /// for the device: the agent drives it).
    pub action: PlannedAction,
    /// The calls replayed, in order.
    pub calls: Vec<PlannedCall>,
}

/// The kind of a trail step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ObjectiveKind {
    /// An action step.
    Step,
    /// A check.
    Verify,
}

impl ObjectiveKind {
    /// Its word: `step` or `verify`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectiveKind::Step => "step",
            ObjectiveKind::Verify => "verify",
        }
    }
}

/// What a planned step does on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlannedAction {
    /// Replays its recorded calls.
    Replay,
    /// The agent drives it.
    Agent,
}

/// A call of a planned step.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlannedCall {
    /// The tool.
    pub tool: String,
    /// Its parameters, sensitive values masked as their tokens.
    #[schemars(schema_with = "crate::portable::json_object")]
    pub parameters: Value,
    /// Where the call is in the trail (`trail[1].recording.android-phone[0]`).
    pub location: String,
}

/// A memory token nothing resolves, and where it is used.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UnresolvedToken {
    /// The key inside the token (`merchant_email` for `${merchant_email}`).
    pub key: String,
    /// The step's number, from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// The tool whose parameters hold the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The token's place: the call's place, tool and JSON path.
    pub path: String,
}

impl From<&MissingKey> for UnresolvedToken {
    fn from(missing: &MissingKey) -> Self {
        UnresolvedToken {
            key: missing.key.clone(),
            step: missing.step.map(|s| s as u64 + 1),
            tool: missing.tool.clone(),
            path: missing.path.clone(),
        }
    }
}

impl From<StepKind> for ObjectiveKind {
    fn from(kind: StepKind) -> Self {
        match kind {
            StepKind::Verify => ObjectiveKind::Verify,
            _ => ObjectiveKind::Step,
        }
    }
}

/// The replay's seeds: `memory_path`, `memory` and `secrets` as [`seeds`] reads them, and the
/// trail's arguments.
fn replay_seeds(
    env: &Env<'_>,
    memory_path: Option<&str>,
    memory: &BTreeMap<String, String>,
    secrets: &BTreeMap<String, String>,
    args: &BTreeMap<String, String>,
) -> Result<Seeds> {
    let mut seeds = seeds(env, memory_path, memory, secrets)?;
    for (name, value) in args {
        seeds
            .args
            .insert(name.clone(), Value::String(value.clone()));
    }
    Ok(seeds)
}

/// Every step of the replay of a trail on a device, its calls resolved under the values
/// given; or every token nothing resolves.
pub fn replay(env: &Env<'_>, input: ReplayInput) -> Result<ReplayOutput> {
    let (trail, name) = read_trail(env, input.trail.as_deref(), input.trail_path.as_deref())?;
    let seeds = replay_seeds(
        env,
        input.memory_path.as_deref(),
        &input.memory,
        &input.secrets,
        &input.args,
    )?;
    // The plan shows each call as memory stands before the run: a token a known writer
    // produces later stays a token.
    let options = ReplayOptions::default().with_missing(MissingKeys::Leave);
    let mut replayer = Replayer::new(&trail, &input.device, &seeds, options)
        .with_context(|| format!("replaying {name}"))?;
    let missing = replayer.analysis()?;
    if !missing.is_empty() {
        return Ok(ReplayOutput {
            steps: Vec::new(),
            unresolved: missing.iter().map(UnresolvedToken::from).collect(),
        });
    }
    let mut steps: Vec<PlannedStepEntry> = replayer
        .outline()
        .iter()
        .enumerate()
        .map(|(i, step)| PlannedStepEntry {
            step: i as u64 + 1,
            kind: step.objective.as_ref().map(|(kind, _)| (*kind).into()),
            objective: step.objective.as_ref().map(|(_, text)| text.clone()),
            trailhead: step.trailhead,
            classifier: step.classifier.clone(),
            action: match step.action {
                StepAction::Replay(_) => PlannedAction::Replay,
                StepAction::Agent => PlannedAction::Agent,
            },
            calls: Vec::new(),
        })
        .collect();
    while let Some(dispatch) = replayer.next_dispatch()? {
        if let (Action::Call(call), Some(step)) = (&dispatch.action, steps.get_mut(dispatch.step)) {
            step.calls.push(PlannedCall {
                tool: call.tool.clone(),
                parameters: call.masked_parameters().clone(),
                location: call.location.clone(),
            });
        }
        replayer.complete(MemoryWrites::new())?;
    }
    Ok(ReplayOutput {
        steps,
        unresolved: Vec::new(),
    })
}

/// Where a replay stands: the trail, the device, the memory it started with and what each
/// call made so far wrote to memory. The server keeps no state: the same input gives the same
/// next call, resolved against memory as the earlier calls left it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextCallInput {
    /// The trail YAML (or `trail_path`).
    #[serde(default)]
    pub trail: Option<String>,
    /// A trail file (or `trail`); over MCP, in an `--allow-dir` folder.
    #[serde(default)]
    pub trail_path: Option<String>,
    /// The device classifier; the closest recording wins (`android-phone`, `android`).
    pub device: String,
    /// A JSON file of starting memory values (as `recording_lint`).
    #[serde(default)]
    pub memory_path: Option<String>,
    /// Starting memory, beside the trail's `config.memory`.
    #[serde(default)]
    pub memory: BTreeMap<String, String>,
    /// Secret starting values: used in calls, masked in outputs.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
    /// Values of the trail's `config.args`, as their declared types.
    #[serde(default)]
    pub args: BTreeMap<String, String>,
    /// What each call made so far wrote, in order (`{}` for nothing):
    /// `{"set": {..}, "secrets": {..}, "delete": [..]}`.
    #[serde(default)]
    #[schemars(schema_with = "crate::portable::json_objects")]
    pub writes: Vec<Value>,
}

/// The next call, resolved against memory as the earlier calls left it, or `done`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct NextCallOutput {
    /// Every call is made: nothing more to do.
    pub done: bool,
    /// Calls (and agent-driven steps) in the whole replay.
    pub dispatches_total: u64,
    /// The next dispatch: `index`, `step`, `kind`, `objective`, `classifier`, and either a
    /// call (`tool`, `parameters`, with sensitive values masked as their tokens) or
    /// `agent: true` for a step with no recording on this device. Absent when done, or when
    /// its call holds tokens memory cannot resolve.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub next: Option<Value>,
    /// The memory tokens of the next call that memory cannot resolve: report writes that
    /// hold them (or start with them) to go on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<UnresolvedToken>,
}

/// The next call of the replay `input` describes.
pub fn next_call(env: &Env<'_>, input: NextCallInput) -> Result<NextCallOutput> {
    let (trail, name) = read_trail(env, input.trail.as_deref(), input.trail_path.as_deref())?;
    let seeds = replay_seeds(
        env,
        input.memory_path.as_deref(),
        &input.memory,
        &input.secrets,
        &input.args,
    )?;
    let writes = input
        .writes
        .iter()
        .enumerate()
        .map(|(i, w)| {
            MemoryWrites::from_json(w)
                .map_err(|e| Error::invalid(format!("writes[{i}]"), e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    let replay = Replayer::resume(
        &trail,
        &input.device,
        &seeds,
        ReplayOptions::default(),
        &writes,
    )
    .with_context(|| name.clone())?;
    let total = replay.len() as u64;
    let next = match replay.next_dispatch() {
        Ok(next) => next,
        Err(agent_memory_recording::Error::Unresolved { missing }) => {
            return Ok(NextCallOutput {
                done: false,
                dispatches_total: total,
                next: None,
                unresolved: missing.iter().map(UnresolvedToken::from).collect(),
            });
        }
        Err(other) => return Err(Error::from(other).context(&name)),
    };
    Ok(NextCallOutput {
        done: next.is_none(),
        dispatches_total: total,
        next: next.map(|d| serde_json::to_value(&d)).transpose()?,
        unresolved: Vec::new(),
    })
}

/// Trails to write in canonical form.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FmtInput {
    /// A trail's YAML (give this or `paths`).
    #[serde(default)]
    pub trail: Option<String>,
    /// Trail files of at most 4 MiB each (or `trail`).
    #[serde(default)]
    pub paths: Vec<String>,
}

/// Each trail in canonical form. Every trail is read first: one that does not parse fails
/// the whole call.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FmtOutput {
    /// The trails, in the order given.
    pub trails: Vec<FormattedTrail>,
}

/// One trail in canonical form.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FormattedTrail {
    /// The file, or `trail` for the text given.
    pub file: String,
    /// Whether the text was already in canonical form, byte for byte.
    pub canonical: bool,
    /// The canonical form.
    pub formatted: String,
}

/// Every trail of `input` in canonical form, as Trailblaze writes it; a trail Trailblaze
/// would refuse is an error, and no trail is answered.
pub fn fmt(env: &Env<'_>, input: FmtInput) -> Result<FmtOutput> {
    let texts: Vec<(String, String)> = match (&input.trail, input.paths.as_slice()) {
        (Some(text), []) => vec![("trail".to_owned(), text.clone())],
        (None, paths) if !paths.is_empty() => paths
            .iter()
            .map(|path| {
                let text = files::read_file(
                    Path::new(path),
                    &env.files,
                    &format!("cannot read trail {path}"),
                )?;
                Ok((path.clone(), text))
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(Error::invalid(
                "trail",
                "give exactly one of trail and paths (at least one path)",
            ));
        }
    };
    let trails = texts
        .into_iter()
        .map(|(file, text)| {
            let trail = Trail::from_yaml_str(&text, &file)?;
            let formatted = trail.to_yaml_string()?;
            Ok(FormattedTrail {
                canonical: text == formatted,
                file,
                formatted,
            })
        })
        .collect::<Result<_>>()?;
    Ok(FmtOutput { trails })
}

/// A file of tool logs to import.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ImportInput {
    /// The file: one JSON document per line, or pretty-printed documents one after another,
    /// of this library's form or Trailblaze's (for a server's clients, only inside the
    /// folders it allows).
    pub path: String,
}

/// What an import stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOutput {
    /// Each session of the file, in order of name.
    pub sessions: Vec<ImportedSession>,
    /// The documents not kept as tool logs, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedDocument>,
}

/// A session of an imported file.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportedSession {
    /// The session.
    pub session: String,
    /// Its tool logs in the file.
    pub logs: u64,
    /// Whether the database already held exactly these logs (nothing was written for it).
    pub already_imported: bool,
}

/// A file of tool logs read and checked, not yet stored: [`import`] in two halves, for a
/// caller that opens the store only once the file is known to be good.
#[derive(Debug)]
pub struct ToolLogImport {
    path: String,
    logs: Vec<ToolLog>,
    /// The line of each log (the file's non-blank lines, in order).
    lines: Vec<usize>,
    skipped: Vec<SkippedDocument>,
}

impl ToolLogImport {
    /// Reads and checks every document of the file `input` names (as `access` allows). A
    /// file with no tool log to keep is an error.
    pub fn read(input: &ImportInput, access: &FileAccess) -> Result<ToolLogImport> {
        let read = read_log_file(&input.path, access)?;
        Ok(ToolLogImport {
            path: input.path.clone(),
            logs: read.file.logs,
            lines: read.lines,
            skipped: read.skipped,
        })
    }

    /// The documents not kept as tool logs, and why.
    pub fn skipped(&self) -> &[SkippedDocument] {
        &self.skipped
    }

    /// Stores the logs in one transaction, into sessions that hold none yet: all of them or,
    /// on any error, none. A session stored with the same logs is already imported and stays
    /// as it is; one stored with other logs is a `conflict`, naming the file's first line
    /// that differs.
    pub fn store(self, env: &Env<'_>) -> Result<ImportOutput> {
        let sessions = match self.store_new_sessions(env)? {
            Some(sessions) => sessions,
            // Another import stored one of the sessions between the comparison and the
            // write (nothing was written): compare again with what it stored.
            None => self.store_new_sessions(env)?.ok_or_else(|| {
                conflict(
                    &self.path,
                    format!(
                        "the sessions of {} changed in {} while importing; nothing was imported",
                        self.path,
                        env.store.location()
                    ),
                )
            })?,
        };
        Ok(ImportOutput {
            sessions,
            skipped: self.skipped,
        })
    }

    /// Stores the sessions of the logs that the store does not hold, after checking that the
    /// ones it holds hold the same logs; `None` when another import stored one of the new
    /// sessions meanwhile (and nothing was written).
    fn store_new_sessions(&self, env: &Env<'_>) -> Result<Option<Vec<ImportedSession>>> {
        let path = &self.path;
        // Each session's logs with the line of the file that holds each.
        let mut sessions: BTreeMap<&str, Vec<(usize, &ToolLog)>> = BTreeMap::new();
        for (i, log) in self.logs.iter().enumerate() {
            let line = self.lines.get(i).copied().unwrap_or(i + 1);
            sessions
                .entry(log.session.as_str())
                .or_default()
                .push((line, log));
        }
        // A session stored with the same logs is already imported and stays as it is; one
        // stored with other logs is refused, naming the first line that differs.
        let mut report = Vec::with_capacity(sessions.len());
        let mut new_logs: Vec<ToolLog> = Vec::new();
        let mut new_lines: Vec<usize> = Vec::new();
        for (session, file_logs) in &sessions {
            let stored = env.store.list_tool_logs(&file_logs[0].1.session)?;
            let already_imported = !stored.is_empty();
            if already_imported {
                if let Some((line, what)) = first_difference(file_logs, &stored) {
                    return Err(conflict(
                        path,
                        format!(
                            "{path}:{line}: session {session:?} is already stored in {} with other tool logs: {what}; nothing was imported",
                            env.store.location()
                        ),
                    ));
                }
            } else {
                // An imported log is the import's, through the door's client.
                new_logs.extend(file_logs.iter().map(|(_, log)| {
                    let source = agent_memory_core::Source::Import("trailblaze".to_owned());
                    ToolLog {
                        provenance: Some(crate::evidence::door_writer(env, source, log.timestamp)),
                        ..(*log).clone()
                    }
                }));
                new_lines.extend(file_logs.iter().map(|(line, _)| *line));
            }
            report.push(ImportedSession {
                session: (*session).to_owned(),
                logs: file_logs.len() as u64,
                already_imported,
            });
        }
        if new_logs.is_empty() {
            return Ok(Some(report));
        }
        match env.store.import_tool_logs(&new_logs) {
            Ok(()) => Ok(Some(report)),
            Err(CoreError::Conflict { .. }) => Ok(None),
            Err(CoreError::InvalidInput { field, reason }) => {
                // The store names a log by its place in the batch: name its line instead.
                let line = field.strip_prefix("tool log ").and_then(|rest| {
                    let (number, what) = rest.split_once(' ').unwrap_or((rest, ""));
                    let index = number.parse::<usize>().ok()?.checked_sub(1)?;
                    Some((new_lines.get(index).copied()?, what.to_owned()))
                });
                let message = match line {
                    Some((line, what)) if what.is_empty() => format!("{path}:{line}: {reason}"),
                    Some((line, what)) => format!("{path}:{line}: {what}: {reason}"),
                    None => format!("{path}: invalid {field}: {reason}"),
                };
                Err(Error::invalid(path, message))
            }
            Err(other) => Err(other.into()),
        }
    }
}

/// Imports a file of tool logs into the store, in one transaction: [`ToolLogImport::read`],
/// then [`ToolLogImport::store`].
pub fn import(env: &Env<'_>, input: ImportInput) -> Result<ImportOutput> {
    ToolLogImport::read(&input, &env.files)?.store(env)
}

/// A `conflict` error about `input`.
fn conflict(input: &str, message: String) -> Error {
    Error::new(ErrorKind::Conflict, message).about(input)
}

/// The first line of a session's logs in a file (with the line of each) that differs from
/// the stored logs of the session, and what differs; `None` when they are the same. Values
/// are not shown (parameters and snapshots may hold secrets), only which field differs.
fn first_difference(file: &[(usize, &ToolLog)], stored: &[ToolLog]) -> Option<(usize, String)> {
    for (i, (line, log)) in file.iter().enumerate() {
        let Some(kept) = stored.get(i) else {
            return Some((
                *line,
                format!(
                    "the stored session ends before this log (it holds {} tool log(s))",
                    stored.len()
                ),
            ));
        };
        if log.tool_name != kept.tool_name {
            let what = format!(
                "tool {:?} where the stored log {} has {:?}",
                log.tool_name,
                i + 1,
                kept.tool_name
            );
            return Some((*line, what));
        }
        let fields = [
            ("parameters", log.parameters != kept.parameters),
            ("success", log.success != kept.success),
            ("error", log.error != kept.error),
            ("duration_ms", log.duration_ms != kept.duration_ms),
            ("timestamp", log.timestamp != kept.timestamp),
            ("trace_id", log.trace_id != kept.trace_id),
            (
                "memory snapshot",
                log.memory_snapshot != kept.memory_snapshot,
            ),
        ];
        let differing: Vec<&str> = fields
            .iter()
            .filter(|(_, differs)| *differs)
            .map(|(name, _)| *name)
            .collect();
        if !differing.is_empty() {
            let what = format!(
                "{} of {} differ from the stored log {}",
                differing.join(", "),
                log.tool_name,
                i + 1
            );
            return Some((*line, what));
        }
    }
    let last = file.last().map_or(1, |(line, _)| *line);
    (stored.len() > file.len()).then(|| {
        (
            last,
            format!(
                "the stored session holds {} more tool log(s) after this last one",
                stored.len() - file.len()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::env_on;
    use serde_json::json;

    fn log(tool: &str, parameters: Value, at: i64, snapshot: Value) -> ToolLogDocument {
        serde_json::from_value(json!({
            "toolName": tool,
            "parameters": parameters,
            "successful": true,
            "durationMs": 5,
            "timestamp": at,
            "memorySnapshot": snapshot,
        }))
        .expect("document")
    }

    /// Memory after a call; `created`: the call wrote the keys for the first time.
    fn snapshot(created: bool) -> Value {
        json!([
            {"key": "merchant_email", "value": "shop+coffee.abc123@example.com",
             "writtenBy": "merchantFactory_loadAccount", "writtenAt": 1000, "existedBefore": !created},
            {"key": "merchant_password", "sensitive": true,
             "writtenBy": "merchantFactory_loadAccount", "writtenAt": 1000, "existedBefore": !created}
        ])
    }

    fn session_logs() -> Vec<ToolLogDocument> {
        vec![
            log(
                "merchantFactory_loadAccount",
                json!({"account": "coffee-shop"}),
                1000,
                snapshot(true),
            ),
            log(
                "signIn",
                json!({"email": "shop+coffee.abc123@example.com", "password": "${merchant_password}"}),
                2000,
                snapshot(false),
            ),
        ]
    }

    #[test]
    fn appended_logs_templatize_into_a_trail_that_replays_step_by_step() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let appended = append(
            &env,
            AppendInput {
                session: "first-run".to_owned(),
                logs: session_logs(),
                source: None,
            },
        )
        .expect("append");
        assert_eq!((appended.appended, appended.logs), (2, 2));
        let generated = templatize(
            &env,
            TemplatizeInput {
                session: Some("first-run".to_owned()),
                logs: None,
                objectives: vec![
                    ObjectiveInput {
                        step: Some("Load the account".to_owned()),
                        verify: None,
                        started_at: 0,
                    },
                    ObjectiveInput {
                        step: Some("Sign in".to_owned()),
                        verify: None,
                        started_at: 1500,
                    },
                ],
                device: None,
                min_chars: None,
                dry_run: false,
                logs_path: None,
                objectives_path: None,
                inside: false,
                title: None,
            },
        )
        .expect("templatize");
        let trail = generated.trail.expect("a trail");
        assert!(trail.contains("email: ${merchant_email}"), "{trail}");
        assert_eq!(generated.steps, 2);
        // Step by step: the provisioning call's writes reach the sign-in, with no memory
        // known up front.
        let step = |writes: Vec<serde_json::Value>| {
            next_call(
                &env,
                NextCallInput {
                    trail: Some(trail.clone()),
                    trail_path: None,
                    device: "android-phone-large".to_owned(),
                    memory_path: None,
                    memory: BTreeMap::new(),
                    secrets: BTreeMap::new(),
                    args: BTreeMap::new(),
                    writes,
                },
            )
        };
        let first = step(Vec::new()).expect("call 0");
        let next = first.next.expect("a first call");
        assert_eq!(next["tool"], "merchantFactory_loadAccount");
        assert_eq!(next["classifier"], "android-phone");
        let writes = serde_json::json!({
            "set": {"merchant_email": "new@example.com"},
            "secrets": {"merchant_password": "pw-canary"}
        });
        let second = step(vec![writes.clone()]).expect("call 1");
        let next = second.next.expect("the sign-in");
        assert_eq!(next["parameters"]["email"], "new@example.com");
        assert_eq!(next["objective"], "Sign in");
        assert!(
            !next.to_string().contains("pw-canary"),
            "a secret is masked: {next}"
        );
        let done = step(vec![writes.clone(), serde_json::json!({})]).expect("done");
        assert!(done.done);
        assert_eq!(done.dispatches_total, 2);
        let lint = lint(
            &env,
            LintInput {
                trail: Some(
                    "- tools:\n  - signIn:\n      email: shop+coffee.abc123@example.com\n"
                        .to_owned(),
                ),
                trail_path: None,
                memory_path: None,
                memory: BTreeMap::new(),
                secrets: BTreeMap::new(),
                session: Some("first-run".to_owned()),
                min_chars: None,
            },
        )
        .expect("lint");
        assert_eq!(lint.findings.len(), 1);
        assert_eq!(lint.findings[0].key, "merchant_email");
        assert_eq!(lint.findings[0].found_in, "session first-run, after tool 1");
    }

    #[test]
    fn a_bad_log_appends_nothing() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let mut logs = session_logs();
        logs[1].session = Some("other".to_owned());
        let error = append(
            &env,
            AppendInput {
                session: "first-run".to_owned(),
                logs,
                source: None,
            },
        )
        .expect_err("foreign session");
        assert_eq!(
            error.to_string(),
            "logs[1]: a tool log of session \"other\" cannot be appended to session \"first-run\""
        );
        let mut logs = session_logs();
        logs[1].tool_name = String::new();
        let error = append(
            &env,
            AppendInput {
                session: "first-run".to_owned(),
                logs,
                source: None,
            },
        )
        .expect_err("bad tool name");
        // Documents are read as the lines of an import: the second one is line 2.
        assert!(error.to_string().starts_with("logs:2: "), "{error}");
        assert!(store.tool_log_sessions().expect("sessions").is_empty());
    }

    /// `name` called from JSON through the operation table, as every door calls it.
    fn call(env: &Env<'_>, name: &str, input: Value) -> Result<Value> {
        crate::operations::find(name)
            .expect("an operation")
            .call(env, input)
    }

    #[test]
    fn a_file_imports_once_then_plans_and_formats_through_the_table() {
        let store = crate::tests::in_memory();
        let env = env_on(&store);
        let dir = tempfile::tempdir().expect("folder");
        let logs = dir.path().join("run.jsonl");
        let lines: Vec<String> = session_logs()
            .into_iter()
            .map(|mut log| {
                log.session = Some("filed".to_owned());
                serde_json::to_string(&log).expect("line")
            })
            .collect();
        std::fs::write(&logs, lines.join("\n")).expect("write logs");
        let path = logs.display().to_string();
        let first = call(&env, "recording_import", json!({"path": path})).expect("import");
        assert_eq!(
            first,
            json!({"sessions": [{"session": "filed", "logs": 2, "already_imported": false}]})
        );
        let again = call(&env, "recording_import", json!({"path": path})).expect("again");
        assert_eq!(again["sessions"][0]["already_imported"], true);

        // A session stored with other logs is refused, naming the file's line that differs.
        std::fs::write(&logs, &lines[0]).expect("rewrite logs");
        let refused = call(&env, "recording_import", json!({"path": path})).expect_err("other");
        assert_eq!(refused.kind(), ErrorKind::Conflict);
        assert!(
            refused
                .message()
                .contains("stored session holds 1 more tool log"),
            "{refused}"
        );

        let trail = call(&env, "recording_templatize", json!({"session": "filed"}))
            .expect("templatize")["trail"]
            .as_str()
            .expect("a trail")
            .to_owned();
        let unresolved = call(
            &env,
            "recording_replay",
            json!({"trail": "- tools:\n  - signIn:\n      email: ${nobody}\n", "device": "web"}),
        )
        .expect("a plan");
        assert_eq!(unresolved["unresolved"][0]["key"], "nobody", "{unresolved}");
        let plan = call(
            &env,
            "recording_replay",
            json!({"trail": trail, "device": "android-phone", "secrets": {"merchant_password": "pw-canary"}}),
        )
        .expect("a plan");
        assert_eq!(plan["steps"][0]["step"], 1, "{plan}");
        assert_eq!(
            plan["steps"][0]["calls"][0]["tool"],
            "merchantFactory_loadAccount"
        );
        assert!(!plan.to_string().contains("pw-canary"), "{plan}");

        let formatted = call(&env, "recording_fmt", json!({"trail": trail})).expect("fmt");
        assert_eq!(formatted["trails"][0]["canonical"], true, "{formatted}");
        let loose = "- tools:\n    - signIn:\n        email: a@example.com\n";
        let formatted = call(&env, "recording_fmt", json!({"trail": loose})).expect("fmt");
        assert_eq!(formatted["trails"][0]["canonical"], false, "{formatted}");
        let again = formatted["trails"][0]["formatted"].clone();
        let twice = call(&env, "recording_fmt", json!({"trail": again})).expect("fmt twice");
        assert_eq!(twice["trails"][0]["canonical"], true, "{twice}");
    }
}
