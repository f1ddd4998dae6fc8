//! Tool logs as JSON documents, in two forms: this crate's own (sessions exported and
//! archived; a log written before memory snapshots existed has no `memorySnapshot` and still
//! loads) and Trailblaze's `TrailblazeLog` documents (`TrailblazeToolLog` with
//! `trailblazeTool {toolName, raw}`, ISO timestamps, `isRecordable`, `isTopLevelToolCall`,
//! `rawTrailblazeTool`; `ObjectiveStartLog` for the steps).
//!
//! [`read_tool_logs`] reads a file of such documents, one per line or pretty-printed one
//! after another, and keeps what Trailblaze's recording generator keeps: a Trailblaze call
//! that is not recordable, one nested inside another call of the same step, and the
//! dispatch-layer copy of a call the executor also logged are skipped, each reported. A call
//! is kept as authored (`rawTrailblazeTool`, its memory tokens intact) when Trailblaze logged
//! both forms.
//!
//! A snapshot entry marked sensitive may arrive with its value. That value is then replaced
//! by its `${key}` token in every string of every log read with it, earlier logs and other
//! sessions included (tool name, parameters and their keys, error message, trace id, other
//! snapshot values), and dropped from the snapshot. No error message of this module quotes a
//! value.

use std::borrow::Cow;
use std::collections::BTreeMap;

use agent_memory_core::store::tool_log::{MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLog};
use agent_memory_core::{SessionId, Timestamp};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::generate::Objective;
use crate::templatize::{SecretSet, is_token_safe_key};
use crate::trail::StepKind;

/// A tool log document that was read but not kept, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SkippedLog {
    /// The line the document starts on (1-based).
    pub line: usize,
    /// The tool, for a tool log.
    pub tool: Option<String>,
    /// Why it was not kept.
    pub reason: SkipReason,
}

/// Why a document of a log file was not kept as a tool log.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// A Trailblaze call with `isRecordable: false`.
    NotRecordable,
    /// A Trailblaze call made inside another call of the same step (not top level).
    Nested,
    /// The dispatch-layer (`llm-…` trace) copy of a call the executor (`tool-…`) also logged.
    LayerDuplicate,
    /// A verification repeating an earlier one of the same step (its `reason` aside).
    RepeatedVerification,
    /// Another Trailblaze log (its class's short name): no tool call.
    NotAToolLog(String),
}

impl SkipReason {
    /// A short description, the same for every log skipped for this reason.
    pub fn describe(&self) -> String {
        match self {
            SkipReason::NotRecordable => "not recordable".to_owned(),
            SkipReason::Nested => "nested in another call".to_owned(),
            SkipReason::LayerDuplicate => "dispatch-layer copy of an executor log".to_owned(),
            SkipReason::RepeatedVerification => "repeated verification".to_owned(),
            SkipReason::NotAToolLog(class) => format!("not a tool log ({class})"),
        }
    }
}

/// What [`read_tool_logs`] read from a file.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ToolLogFile {
    /// The tool logs kept, in file order, secrets scrubbed.
    pub logs: Vec<ToolLog>,
    /// The steps Trailblaze logged (`ObjectiveStartLog`), by session, in file order.
    pub objectives: Vec<(SessionId, Objective)>,
    /// Every document not kept, with its reason.
    pub skipped: Vec<SkippedLog>,
}

impl ToolLogFile {
    /// The objectives logged for `session`, in order.
    pub fn objectives_of(&self, session: &SessionId) -> Vec<Objective> {
        self.objectives
            .iter()
            .filter(|(s, _)| s == session)
            .map(|(_, o)| o.clone())
            .collect()
    }
}

/// A document read from a log file.
enum Document {
    /// A tool log, with the secrets its snapshot revealed and, for a Trailblaze call, what
    /// its skip rules need.
    Tool {
        // Boxed: a log is large beside the other documents.
        log: Box<ToolLog>,
        secrets: Vec<(String, String)>,
        trailblaze: Option<TrailblazeFlags>,
    },
    /// A Trailblaze `ObjectiveStartLog`.
    Objective(SessionId, Objective),
    /// Another Trailblaze log.
    Other(String),
}

#[derive(Clone, Copy)]
struct TrailblazeFlags {
    recordable: bool,
    top_level: bool,
    verification: bool,
}

/// Where a document is, for error messages.
struct At<'a> {
    file: &'a str,
    line: usize,
}

impl At<'_> {
    fn error(&self, message: impl Into<String>) -> Error {
        Error::Log {
            file: self.file.to_owned(),
            line: self.line,
            message: message.into(),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Typed reads of a document's fields; errors name the field, never its value.
struct Fields<'d> {
    map: &'d Map<String, Value>,
    prefix: String,
    at: &'d At<'d>,
}

impl<'d> Fields<'d> {
    fn name(&self, field: &str) -> String {
        format!("{}{field}", self.prefix)
    }

    fn wrong(&self, field: &str, expected: &str, got: &Value) -> Error {
        self.at.error(format!(
            "`{}` must be {expected}, not {}",
            self.name(field),
            kind_of(got)
        ))
    }

    fn missing(&self, field: &str) -> Error {
        self.at.error(format!("`{}` is missing", self.name(field)))
    }

    fn present(&self, field: &str) -> Option<&'d Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn string(&self, field: &str) -> Result<&'d str> {
        self.opt_string(field)?.ok_or_else(|| self.missing(field))
    }

    fn opt_string(&self, field: &str) -> Result<Option<&'d str>> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.wrong(field, "a string", other)),
        }
    }

    fn bool(&self, field: &str, default: Option<bool>) -> Result<bool> {
        match (self.present(field), default) {
            (Some(Value::Bool(b)), _) => Ok(*b),
            (Some(other), _) => Err(self.wrong(field, "true or false", other)),
            (None, Some(default)) => Ok(default),
            (None, None) => Err(self.missing(field)),
        }
    }

    fn millis(&self, field: &str) -> Result<u64> {
        match self.present(field) {
            Some(value @ Value::Number(n)) => n
                .as_u64()
                .ok_or_else(|| self.wrong(field, "a whole number of milliseconds", value)),
            Some(other) => Err(self.wrong(field, "a whole number of milliseconds", other)),
            None => Err(self.missing(field)),
        }
    }

    /// A time: milliseconds since the epoch, or an ISO-8601 text (`2026-07-21T10:15:30.123Z`).
    fn time(&self, field: &str) -> Result<Timestamp> {
        match self.present(field) {
            Some(value @ Value::Number(n)) => n
                .as_i64()
                .map(Timestamp::from_millis)
                .ok_or_else(|| self.wrong(field, "milliseconds since the epoch", value)),
            Some(Value::String(text)) => {
                parse_iso(text).map(Timestamp::from_millis).ok_or_else(|| {
                    self.at.error(format!(
                        "`{}` is not an ISO-8601 time like 2026-07-21T10:15:30.123Z",
                        self.name(field)
                    ))
                })
            }
            Some(other) => Err(self.wrong(field, "a time", other)),
            None => Err(self.missing(field)),
        }
    }

    fn object(&self, field: &str) -> Result<Option<Fields<'d>>> {
        match self.present(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Fields {
                map,
                prefix: format!("{}.", self.name(field)),
                at: self.at,
            })),
            Some(other) => Err(self.wrong(field, "an object", other)),
        }
    }
}

fn session(fields: &Fields<'_>) -> Result<SessionId> {
    let text = fields.string("session")?;
    SessionId::new(text).map_err(|_| {
        fields.at.error(
            "`session` must be a non-empty name of at most 256 bytes without control characters",
        )
    })
}

/// The short name of a Trailblaze log class (`TrailblazeToolLog`).
fn short_class(class: &str) -> &str {
    class.rsplit(['.', '$']).next().unwrap_or(class)
}

fn read_document(value: &Value, at: &At<'_>) -> Result<Document> {
    let Value::Object(map) = value else {
        return Err(at.error(format!(
            "a tool log is a JSON object, not {}",
            kind_of(value)
        )));
    };
    let fields = Fields {
        map,
        prefix: String::new(),
        at,
    };
    let class = fields.opt_string("class")?.map(short_class);
    match class {
        Some("TrailblazeToolLog") => trailblaze_tool_log(&fields),
        Some("ObjectiveStartLog") => objective(&fields),
        Some(other) => Ok(Document::Other(other.to_owned())),
        None if map.contains_key("trailblazeTool") => trailblaze_tool_log(&fields),
        None if map.contains_key("parameters") => own_log(&fields),
        None => Err(at.error(
            "neither a tool log of this crate (no `parameters`) nor a Trailblaze log (no `class`)",
        )),
    }
}

/// This crate's own form.
fn own_log(fields: &Fields<'_>) -> Result<Document> {
    let session = session(fields)?;
    let tool_name = fields.string("toolName")?.to_owned();
    let Some(parameters) = fields.map.get("parameters") else {
        return Err(fields.missing("parameters"));
    };
    let mut secrets = Vec::new();
    let memory_snapshot = match fields.present("memorySnapshot") {
        None => None,
        Some(Value::Array(entries)) => Some(snapshot(fields, entries, &mut secrets)?),
        Some(other) => return Err(fields.wrong("memorySnapshot", "a list", other)),
    };
    let log = ToolLog {
        session,
        tool_name,
        parameters: parameters.to_string(),
        success: fields.bool("successful", None)?,
        error: fields.opt_string("exceptionMessage")?.map(str::to_owned),
        duration_ms: fields.millis("durationMs")?,
        timestamp: fields.time("timestamp")?,
        trace_id: fields.opt_string("traceId")?.map(str::to_owned),
        memory_snapshot,
        provenance: None,
    };
    Ok(Document::Tool {
        log: Box::new(log),
        secrets,
        trailblaze: None,
    })
}

fn snapshot(
    fields: &Fields<'_>,
    entries: &[Value],
    secrets: &mut Vec<(String, String)>,
) -> Result<MemorySnapshot> {
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let field = format!("memorySnapshot[{i}]");
        let Value::Object(map) = entry else {
            return Err(fields.wrong(&field, "an object", entry));
        };
        let entry = Fields {
            map,
            prefix: format!("{field}."),
            at: fields.at,
        };
        let key = entry.string("key")?.to_owned();
        let sensitive = entry.bool("sensitive", Some(false))?;
        let value = entry.opt_string("value")?;
        let value = match (sensitive, value) {
            (true, value) => {
                if let Some(value) = value.filter(|v| !v.is_empty()) {
                    secrets.push((value.to_owned(), key.clone()));
                }
                SnapshotValue::Sensitive
            }
            (false, Some(value)) => SnapshotValue::Plain(value.to_owned()),
            (false, None) => {
                return Err(fields.at.error(format!(
                    "`{field}` (key {key:?}) has no value and is not sensitive"
                )));
            }
        };
        let written_at = match entry.present("writtenAt") {
            None => None,
            Some(_) => Some(entry.time("writtenAt")?),
        };
        out.push(SnapshotEntry {
            key,
            value,
            written_by: entry.opt_string("writtenBy")?.map(str::to_owned),
            written_at,
            existed_before: entry.bool("existedBefore", Some(true))?,
        });
    }
    Ok(MemorySnapshot { entries: out })
}

/// A Trailblaze tool: `{toolName, raw}`, or the legacy `{class, ...fields}`. Returns its
/// parameters.
fn trailblaze_tool(fields: &Fields<'_>, field: &str) -> Result<Option<Value>> {
    let Some(tool) = fields.object(field)? else {
        return Ok(None);
    };
    if tool.present("toolName").is_some() {
        return match tool.present("raw") {
            None => Ok(Some(Value::Object(Map::new()))),
            Some(raw @ Value::Object(_)) => Ok(Some(raw.clone())),
            Some(other) => Err(tool.wrong("raw", "an object", other)),
        };
    }
    if tool.present("class").is_some() {
        let raw: Map<String, Value> = tool
            .map
            .iter()
            .filter(|(k, _)| *k != "class")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        return Ok(Some(Value::Object(raw)));
    }
    Err(fields.at.error(format!(
        "`{}` has neither `toolName` nor a legacy `class`",
        fields.name(field)
    )))
}

fn trailblaze_tool_log(fields: &Fields<'_>) -> Result<Document> {
    let session = session(fields)?;
    let tool_name = fields.string("toolName")?.to_owned();
    let dispatched = trailblaze_tool(fields, "trailblazeTool")?
        .ok_or_else(|| fields.missing("trailblazeTool"))?;
    // The recording keeps the call as authored: the token-bearing form when the dispatch
    // boundary resolved memory tokens, as Trailblaze's generator does.
    let authored = trailblaze_tool(fields, "rawTrailblazeTool")?.unwrap_or(dispatched);
    let log = ToolLog {
        session,
        tool_name,
        parameters: authored.to_string(),
        success: fields.bool("successful", None)?,
        error: fields.opt_string("exceptionMessage")?.map(str::to_owned),
        duration_ms: fields.millis("durationMs")?,
        timestamp: fields.time("timestamp")?,
        trace_id: fields.opt_string("traceId")?.map(str::to_owned),
        memory_snapshot: None,
        provenance: None,
    };
    let flags = TrailblazeFlags {
        recordable: fields.bool("isRecordable", Some(true))?,
        top_level: fields.bool("isTopLevelToolCall", Some(false))?,
        verification: fields.bool("isVerification", Some(false))?,
    };
    Ok(Document::Tool {
        log: Box::new(log),
        secrets: Vec::new(),
        trailblaze: Some(flags),
    })
}

fn objective(fields: &Fields<'_>) -> Result<Document> {
    let session = session(fields)?;
    let step = fields
        .object("promptStep")?
        .ok_or_else(|| fields.missing("promptStep"))?;
    let (kind, text) = match (step.opt_string("step")?, step.opt_string("verify")?) {
        (Some(text), _) => (StepKind::Step, text),
        (None, Some(text)) => (StepKind::Verify, text),
        (None, None) => {
            return Err(fields
                .at
                .error("`promptStep` has neither `step` nor `verify`"));
        }
    };
    let objective = Objective::new(kind, text, fields.time("timestamp")?);
    Ok(Document::Objective(session, objective))
}

/// Reads one tool log document, of this crate's form or Trailblaze's `TrailblazeToolLog`.
/// A secret its own snapshot reveals is scrubbed from it; Trailblaze's skip rules need the
/// other logs of the session, so only [`read_tool_logs`] applies them.
///
/// ```
/// let old = r#"{"session":"s1","toolName":"tapOn","parameters":{"text":"OK"},"successful":true,"durationMs":3,"timestamp":10}"#;
/// let log = agent_memory_recording::tool_log_from_json(old)?;
/// assert!(log.memory_snapshot.is_none());
/// assert_eq!(agent_memory_recording::tool_log_from_json(&agent_memory_recording::tool_log_to_json(&log)?)?, log);
///
/// let trailblaze = r#"{"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.TrailblazeToolLog",
///   "trailblazeTool":{"toolName":"inputText","raw":{"text":"ada@example.com"}},
///   "rawTrailblazeTool":{"toolName":"inputText","raw":{"text":"{{email}}"}},
///   "toolName":"inputText","successful":true,"traceId":"tool-1","durationMs":12,
///   "session":"s2","timestamp":"2026-07-21T10:15:30.123Z"}"#;
/// let log = agent_memory_recording::tool_log_from_json(trailblaze)?;
/// assert_eq!(log.parameters, r#"{"text":"{{email}}"}"#);
/// assert_eq!(log.timestamp.as_millis(), 1_784_628_930_123);
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
pub fn tool_log_from_json(text: &str) -> Result<ToolLog> {
    let at = At {
        file: "tool log",
        line: 1,
    };
    let value: Value = serde_json::from_str(text)
        .map_err(|e| at.error(format!("not JSON: {}", json_message(&e))))?;
    match read_document(&value, &at)? {
        Document::Tool {
            mut log, secrets, ..
        } => {
            let mut scrubber = Scrubber::default();
            scrubber.learn(&secrets);
            scrub(&scrubber.set(), &mut log, &at)?;
            log.validate().map_err(|e| at.error(e.to_string()))?;
            Ok(*log)
        }
        Document::Objective(..) => Err(at.error("an ObjectiveStartLog, not a tool log")),
        Document::Other(class) => Err(at.error(format!("a {class}, not a tool log"))),
    }
}

/// A serde_json message without its position (the caller names the place).
fn json_message(error: &serde_json::Error) -> String {
    let message = error.to_string();
    match message.find(" at line ") {
        Some(cut) => message[..cut].to_owned(),
        None => message,
    }
}

/// The secrets the logs read together reveal, each with the token that replaces it.
#[derive(Default)]
struct Scrubber {
    secrets: BTreeMap<String, String>,
}

impl Scrubber {
    fn learn(&mut self, secrets: &[(String, String)]) {
        for (value, key) in secrets {
            let token = if is_token_safe_key(key) {
                format!("${{{key}}}")
            } else {
                "[sensitive]".to_owned()
            };
            self.secrets.insert(value.clone(), token);
        }
    }

    /// The secrets learnt, to scrub logs with; built once for all the logs of a file.
    fn set(&self) -> SecretSet<'_> {
        SecretSet::new(
            self.secrets
                .iter()
                .map(|(value, token)| (value.as_str(), token.clone()))
                .collect(),
        )
    }
}

/// `log` with every secret of `set` replaced by its token.
fn scrub(set: &SecretSet<'_>, log: &mut ToolLog, at: &At<'_>) -> Result<()> {
    if set.is_empty() {
        return Ok(());
    }
    let text = |s: &mut String| {
        if let Cow::Owned(new) = set.scrub(s, |_| {}) {
            *s = new;
        }
    };
    text(&mut log.tool_name);
    if let Some(error) = log.error.as_mut() {
        text(error);
    }
    if let Some(trace) = log.trace_id.as_mut() {
        text(trace);
    }
    let session = log.session.as_str().to_owned();
    if let Cow::Owned(new) = set.scrub(&session, |_| {}) {
        log.session = SessionId::new(new)
            .map_err(|_| at.error("`session` holds a secret and is not a name without it"))?;
    }
    let parameters: Value = serde_json::from_str(&log.parameters)
        .map_err(|e| at.error(format!("`parameters`: {}", json_message(&e))))?;
    if let Cow::Owned(new) = set.scrub_json(&parameters) {
        log.parameters = new.to_string();
    }
    if let Some(snapshot) = log.memory_snapshot.as_mut() {
        for entry in &mut snapshot.entries {
            if let SnapshotValue::Plain(value) = &mut entry.value {
                text(value);
            }
            if let Some(writer) = entry.written_by.as_mut() {
                text(writer);
            }
        }
    }
    Ok(())
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Reads a file of tool log documents (`file` names it in errors): one JSON document per
/// line, or pretty-printed documents one after another, of this crate's form or Trailblaze's.
/// Keeps the tool logs Trailblaze's recording generator keeps, scrubs every secret a
/// snapshot reveals from every log of the file (earlier ones included), and collects
/// Trailblaze's objectives. An error names the file, the line and the field.
///
/// ```
/// let text = r#"
/// {"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.ObjectiveStartLog","promptStep":{"class":"xyz.block.trailblaze.yaml.DirectionStep","step":"Sign in"},"session":"s","timestamp":"2026-07-21T10:00:00Z"}
/// {"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.TrailblazeToolLog","trailblazeTool":{"toolName":"signIn","raw":{"email":"a@example.com"}},"toolName":"signIn","successful":true,"traceId":"tool-1","durationMs":900,"session":"s","timestamp":"2026-07-21T10:00:01Z","isTopLevelToolCall":true}
/// {"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.TrailblazeToolLog","trailblazeTool":{"toolName":"tapOn","raw":{"text":"Sign in"}},"toolName":"tapOn","successful":true,"traceId":"tool-2","durationMs":40,"session":"s","timestamp":"2026-07-21T10:00:01.500Z"}
/// "#;
/// let file = agent_memory_recording::read_tool_logs(text, "session.jsonl")?;
/// assert_eq!(file.logs.len(), 1, "the tap inside the sign-in is not a top-level call");
/// assert_eq!(file.skipped.len(), 1);
/// assert_eq!(file.objectives[0].1.text, "Sign in");
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
pub fn read_tool_logs(text: &str, file: &str) -> Result<ToolLogFile> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let documents = documents(text, file)?;
    let mut out = ToolLogFile::default();
    // Every document is read before any log is kept: a secret the snapshot of a later log
    // reveals is scrubbed from the earlier ones too, and from the other sessions of the file
    // (over-masking a secret is the safe failure).
    let mut read = Vec::with_capacity(documents.len());
    let mut scrubber = Scrubber::default();
    for (line, value) in &documents {
        let document = read_document(value, &At { file, line: *line })?;
        if let Document::Tool { secrets, .. } = &document {
            scrubber.learn(secrets);
        }
        read.push((*line, document));
    }
    drop(documents);
    let secrets = scrubber.set();
    // Per session, its Trailblaze calls by objective window.
    let mut windows: BTreeMap<SessionId, usize> = BTreeMap::new();
    let mut kept: Vec<Kept> = Vec::new();
    for (line, document) in read {
        let at = At { file, line };
        match document {
            Document::Tool {
                mut log,
                trailblaze,
                ..
            } => {
                scrub(&secrets, &mut log, &at)?;
                log.validate().map_err(|e| at.error(e.to_string()))?;
                let window = windows.get(&log.session).copied().unwrap_or(0);
                kept.push(Kept {
                    line,
                    log: *log,
                    trailblaze,
                    window,
                });
            }
            Document::Objective(session, objective) => {
                *windows.entry(session.clone()).or_default() += 1;
                out.objectives.push((session, objective));
            }
            Document::Other(class) => out.skipped.push(SkippedLog {
                line,
                tool: None,
                reason: SkipReason::NotAToolLog(class),
            }),
        }
    }
    let reasons = trailblaze_skips(&kept);
    for (kept, reason) in kept.into_iter().zip(reasons) {
        match reason {
            None => out.logs.push(kept.log),
            Some(reason) => out.skipped.push(SkippedLog {
                line: kept.line,
                tool: Some(kept.log.tool_name),
                reason,
            }),
        }
    }
    out.skipped.sort_by_key(|s| s.line);
    Ok(out)
}

/// The JSON documents of `text`, each with the line it starts on. JSON Lines (the first
/// line is a whole document) are read line by line, so a torn line is reported as itself;
/// anything else as pretty-printed documents one after another.
fn documents(text: &str, file: &str) -> Result<Vec<(usize, Value)>> {
    let error = |line: usize, e: &serde_json::Error| Error::Log {
        file: file.to_owned(),
        line,
        message: format!("not JSON: {} (column {})", json_message(e), e.column()),
    };
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    if serde_json::from_str::<Value>(first).is_ok() {
        let mut documents = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let value = serde_json::from_str(line).map_err(|e| error(i + 1, &e))?;
            documents.push((i + 1, value));
        }
        return Ok(documents);
    }
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut documents = Vec::new();
    let mut offset = 0;
    loop {
        let start = offset + text[offset..].len() - text[offset..].trim_start().len();
        let line = line_of(text, start);
        match stream.next() {
            None => break,
            Some(Ok(value)) => documents.push((line, value)),
            Some(Err(e)) => return Err(error(e.line(), &e)),
        }
        offset = stream.byte_offset();
    }
    Ok(documents)
}

struct Kept {
    line: usize,
    log: ToolLog,
    trailblaze: Option<TrailblazeFlags>,
    /// How many objectives of the session started before it.
    window: usize,
}

/// Why each log is skipped, by Trailblaze's generator rules, applied to its calls within one
/// session and objective window: not recordable; when some call of the window is marked top
/// level, every other one; else a call whose span lies inside a strictly longer one; the
/// `llm-` copy of a call also logged with a `tool-` trace; and a verification repeating an
/// earlier one (its `reason` aside).
fn trailblaze_skips(kept: &[Kept]) -> Vec<Option<SkipReason>> {
    let mut reasons: Vec<Option<SkipReason>> = kept
        .iter()
        .map(|k| match k.trailblaze {
            Some(flags) if !flags.recordable => Some(SkipReason::NotRecordable),
            _ => None,
        })
        .collect();
    let mut groups: BTreeMap<(&str, usize), Vec<usize>> = BTreeMap::new();
    for (i, k) in kept.iter().enumerate() {
        if k.trailblaze.is_some() && reasons[i].is_none() {
            groups
                .entry((k.log.session.as_str(), k.window))
                .or_default()
                .push(i);
        }
    }
    for members in groups.values() {
        let top: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| kept[i].trailblaze.is_some_and(|f| f.top_level))
            .collect();
        let selected: Vec<usize> = if top.is_empty() {
            let span = |i: usize| {
                let start = kept[i].log.timestamp.as_millis();
                let length = i64::try_from(kept[i].log.duration_ms).unwrap_or(i64::MAX);
                (start, start.saturating_add(length), length)
            };
            members
                .iter()
                .copied()
                .filter(|&candidate| {
                    let (start, end, length) = span(candidate);
                    let nested = members.iter().any(|&container| {
                        let (c_start, c_end, c_length) = span(container);
                        container != candidate
                            && c_start <= start
                            && c_end >= end
                            && c_length > length
                    });
                    if nested {
                        reasons[candidate] = Some(SkipReason::Nested);
                    }
                    !nested
                })
                .collect()
        } else {
            for &i in members {
                if !top.contains(&i) {
                    reasons[i] = Some(SkipReason::Nested);
                }
            }
            top
        };
        for i in layer_duplicates(kept, &selected) {
            reasons[i] = Some(SkipReason::LayerDuplicate);
        }
        let mut checked: Vec<(&str, Value)> = Vec::new();
        for &i in &selected {
            let log = &kept[i].log;
            if reasons[i].is_some() || !kept[i].trailblaze.is_some_and(|f| f.verification) {
                continue;
            }
            // The same check again, whatever the `reason` the agent gave: read-only and
            // idempotent, so the repeat replays nothing new.
            let mut fingerprint = serde_json::from_str(&log.parameters).unwrap_or(Value::Null);
            drop_reasons(&mut fingerprint, 0);
            if checked
                .iter()
                .any(|(tool, seen)| *tool == log.tool_name && *seen == fingerprint)
            {
                reasons[i] = Some(SkipReason::RepeatedVerification);
            } else {
                checked.push((log.tool_name.as_str(), fingerprint));
            }
        }
    }
    reasons
}

/// `value` without any `reason` field, at any depth (the limit of a JSON document read here).
fn drop_reasons(value: &mut Value, depth: usize) {
    if depth > crate::path::MAX_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            map.remove("reason");
            map.values_mut().for_each(|v| drop_reasons(v, depth + 1));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| drop_reasons(v, depth + 1)),
        _ => {}
    }
}

/// The `llm-` traced logs of calls (same tool, parameters and outcome) also logged with a
/// `tool-` trace.
fn layer_duplicates(kept: &[Kept], selected: &[usize]) -> Vec<usize> {
    let prefix = |i: usize| {
        kept[i]
            .log
            .trace_id
            .as_deref()
            .and_then(|t| t.split_once('-'))
            .map(|(p, _)| p)
            .filter(|p| !p.is_empty())
    };
    let mut groups: BTreeMap<(&str, &str, bool), Vec<usize>> = BTreeMap::new();
    for &i in selected {
        let log = &kept[i].log;
        groups
            .entry((log.tool_name.as_str(), log.parameters.as_str(), log.success))
            .or_default()
            .push(i);
    }
    let mut dropped = Vec::new();
    for members in groups.values() {
        let has = |p: &str| members.iter().any(|&i| prefix(i) == Some(p));
        if has("llm") && has("tool") {
            dropped.extend(
                members
                    .iter()
                    .copied()
                    .filter(|&i| prefix(i) == Some("llm")),
            );
        }
    }
    dropped
}

/// Milliseconds since the epoch of an ISO-8601 / RFC 3339 time
/// (`2026-07-21T10:15:30.123456789Z`, `...+02:00`); fractions below a millisecond are
/// dropped.
fn parse_iso(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't')
    {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut at = 19;
    let mut millis = 0;
    if bytes.get(at) == Some(&b'.') {
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        let fraction = &text[at + 1..at + 1 + digits.min(3)];
        millis =
            fraction.parse::<i64>().ok()? * 10_i64.pow(3 - u32::try_from(fraction.len()).ok()?);
        at += 1 + digits;
    }
    let offset_minutes = match &text[at..] {
        "Z" | "z" => 0,
        zone if zone.len() == 6
            && matches!(zone.as_bytes()[0], b'+' | b'-')
            && zone.as_bytes()[3] == b':' =>
        {
            let minutes = number(at + 1..at + 3)? * 60 + number(at + 4..at + 6)?;
            if zone.starts_with('-') {
                -minutes
            } else {
                minutes
            }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1_000 + millis)
}

/// Writes a tool log as its JSON document (a sensitive entry keeps only its key).
pub fn tool_log_to_json(log: &ToolLog) -> Result<String> {
    let parameters: Value = serde_json::from_str(&log.parameters).map_err(|e| Error::Log {
        file: "tool log".to_owned(),
        line: 1,
        message: format!("`parameters` of {:?}: {}", log.tool_name, json_message(&e)),
    })?;
    let mut doc = Map::new();
    doc.insert("session".into(), log.session.as_str().into());
    doc.insert("toolName".into(), log.tool_name.clone().into());
    doc.insert("parameters".into(), parameters);
    doc.insert("successful".into(), log.success.into());
    if let Some(error) = &log.error {
        doc.insert("exceptionMessage".into(), error.clone().into());
    }
    doc.insert("durationMs".into(), log.duration_ms.into());
    doc.insert("timestamp".into(), log.timestamp.as_millis().into());
    if let Some(trace) = &log.trace_id {
        doc.insert("traceId".into(), trace.clone().into());
    }
    if let Some(snapshot) = &log.memory_snapshot {
        let entries = snapshot
            .entries
            .iter()
            .map(|e| {
                let mut entry = Map::new();
                entry.insert("key".into(), e.key.clone().into());
                match &e.value {
                    SnapshotValue::Plain(value) => {
                        entry.insert("value".into(), value.clone().into());
                    }
                    SnapshotValue::Sensitive => {
                        entry.insert("sensitive".into(), true.into());
                    }
                }
                if let Some(writer) = &e.written_by {
                    entry.insert("writtenBy".into(), writer.clone().into());
                }
                if let Some(at) = e.written_at {
                    entry.insert("writtenAt".into(), at.as_millis().into());
                }
                if !e.existed_before {
                    entry.insert("existedBefore".into(), false.into());
                }
                Value::Object(entry)
            })
            .collect();
        doc.insert("memorySnapshot".into(), Value::Array(entries));
    }
    Ok(Value::Object(doc).to_string())
}

#[cfg(test)]
mod tests {
    use super::parse_iso;

    #[test]
    fn iso_times() {
        assert_eq!(parse_iso("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_iso("1970-01-01T00:00:01.5Z"), Some(1_500));
        assert_eq!(
            parse_iso("2026-07-21T10:15:30.123456789Z"),
            Some(1_784_628_930_123)
        );
        assert_eq!(
            parse_iso("2026-07-21T12:15:30.123+02:00"),
            Some(1_784_628_930_123)
        );
        assert_eq!(parse_iso("2000-02-29T00:00:00Z"), Some(951_782_400_000));
        assert_eq!(parse_iso("1969-12-31T23:59:59Z"), Some(-1_000));
        for bad in [
            "2026-07-21",
            "2026-13-01T00:00:00Z",
            "2026-07-21T10:15:30",
            "2026-07-21T10:15:30.Z",
            "x026-07-21T10:15:30Z",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }
}
