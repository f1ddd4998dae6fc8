//! `recording_append`, `recording_templatize`, `recording_lint` and `recording_next_call`:
//! recorded tool calls kept in a session, turned into a trail whose literals from memory are
//! `${key}` tokens, checked for literals that will go stale, and replayed one step at a time.
//!
//! Tool logs travel as the documents `agent-memory recording import` reads (Trailblaze's
//! camelCase tool-log JSON, `toolName`, `memorySnapshot`, ...): that is their format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::{Error, Result, ResultExt};
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::tool_log::{ToolLog, ToolLogStore};
use agent_memory_core::{SessionId, Timestamp};
use agent_memory_recording::{
    GenerationPolicy, Memory, MemoryWrites, Objective, Origin, Provenance, ReplayOptions, Replayer,
    Seeds, Snapshot, StepKind, TemplatePolicy, Trail, generate_recording, lint_trail,
    read_tool_logs,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Env;

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

/// Tool logs to append to a session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppendInput {
    /// The session.
    pub session: String,
    /// The tool logs, in the order the calls ran.
    pub logs: Vec<ToolLogDocument>,
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
    let logs = read_documents(&input.logs, &input.session)?;
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

/// Tool logs to turn into a trail.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplatizeInput {
    /// A session whose tool logs the database holds (give this or `logs`).
    #[serde(default)]
    pub session: Option<String>,
    /// The tool logs themselves, of one session (give this or `session`).
    #[serde(default)]
    pub logs: Option<Vec<ToolLogDocument>>,
    /// The objectives, in order; without them one step holds every call.
    #[serde(default)]
    pub objectives: Vec<ObjectiveInput>,
    /// The device classifier the recordings are filed under (default `android-phone`).
    #[serde(default)]
    pub device: Option<String>,
    /// The fewest characters an ordinary value needs to become a token (default 8).
    #[serde(default)]
    pub min_chars: Option<usize>,
    /// Only report the substitutions; write no trail.
    #[serde(default)]
    pub dry_run: bool,
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
}

/// One literal replaced by a token.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SubstitutionEntry {
    /// The index of the tool log.
    pub tool_index: u64,
    /// The JSON path of the parameter.
    pub path: String,
    /// The memory key whose token replaced it.
    pub key: String,
    /// Why: `sensitive`, `known writer`, `long value` or `scrubbed secret`.
    pub reason: String,
}

/// The session's (or the given) tool logs as a trail with memory tokens.
pub fn templatize(env: &Env<'_>, input: TemplatizeInput) -> Result<TemplatizeOutput> {
    let (logs, name) = match (&input.session, &input.logs) {
        (Some(id), None) => {
            let logs = env.store.list_tool_logs(&session_id(id)?)?;
            if logs.is_empty() {
                return Err(Error::not_found(
                    id.as_str(),
                    format!("session {id:?} has no tool logs"),
                ));
            }
            (logs, format!("session {id}"))
        }
        (None, Some(documents)) => {
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
        _ => {
            return Err(Error::invalid(
                "session",
                "give exactly one of session and logs to templatize",
            ));
        }
    };
    let mut objectives = Vec::with_capacity(input.objectives.len());
    for (i, o) in input.objectives.iter().enumerate() {
        let (kind, text) = match (&o.step, &o.verify) {
            (Some(text), None) => (StepKind::Step, text.clone()),
            (None, Some(text)) => (StepKind::Verify, text.clone()),
            _ => {
                return Err(Error::invalid(
                    format!("objectives[{i}]"),
                    format!("objective {i} needs exactly one of `step` and `verify`"),
                ));
            }
        };
        objectives.push(Objective::new(
            kind,
            text,
            Timestamp::from_millis(o.started_at),
        ));
    }
    if objectives.is_empty() {
        objectives.push(Objective::new(
            StepKind::Step,
            format!("Replay {name}"),
            Timestamp::from_millis(i64::MIN),
        ));
    }
    let mut policy =
        GenerationPolicy::for_classifier(input.device.as_deref().unwrap_or("android-phone"));
    if let Some(min) = input.min_chars {
        policy.template.min_chars = min;
    }
    policy.template.dry_run = input.dry_run;
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
    })
}

/// The trail of `text` or `path` (exactly one, the file read as `env` allows), and how
/// errors name it.
fn read_trail(env: &Env<'_>, text: Option<&str>, path: Option<&str>) -> Result<(Trail, String)> {
    match (text, path) {
        (Some(text), None) => Ok((Trail::from_yaml_str(text, "trail")?, "trail".to_owned())),
        (None, Some(path)) => {
            let text = crate::files::read_text(Path::new(path), &env.files)?;
            Ok((Trail::from_yaml_str(&text, path)?, path.to_owned()))
        }
        _ => Err(Error::invalid(
            "trail",
            "give exactly one of trail and trail_path",
        )),
    }
}

/// A trail to check for literals that equal memory values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LintInput {
    /// The trail YAML (give this or `trail_path`).
    #[serde(default)]
    pub trail: Option<String>,
    /// A trail file of at most 4 MiB (or `trail`); over MCP, in an `--allow-dir` folder.
    #[serde(default)]
    pub trail_path: Option<String>,
    /// The current memory values, by key.
    #[serde(default)]
    pub memory: BTreeMap<String, String>,
    /// Also check the past values this stored session's snapshots logged.
    #[serde(default)]
    pub session: Option<String>,
    /// The fewest characters a value needs to count (default 8).
    #[serde(default)]
    pub min_chars: Option<usize>,
}

/// Literals that will go stale when memory changes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LintOutput {
    /// Every literal that equals a memory value; empty when the trail is clean.
    pub findings: Vec<LintFinding>,
}

/// One stale literal.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LintFinding {
    /// The step, tool and JSON path of the literal.
    pub location: String,
    /// The memory key whose token should replace it.
    pub key: String,
    /// Why the key was chosen.
    pub reason: String,
    /// Which memory holds the value: `current memory` or a past snapshot.
    pub found_in: String,
}

/// The trail's literals that equal current or past memory values.
pub fn lint(env: &Env<'_>, input: LintInput) -> Result<LintOutput> {
    let (trail, _) = read_trail(env, input.trail.as_deref(), input.trail_path.as_deref())?;
    let mut memory = Memory::new();
    for (key, value) in &input.memory {
        memory.remember(
            key.clone(),
            value.clone(),
            Provenance::unknown(Timestamp::from_millis(0)),
        );
    }
    let mut policy = TemplatePolicy::default();
    if let Some(min) = input.min_chars {
        policy.min_chars = min;
    }
    // Each past snapshot with the index of the tool log that holds it.
    let past: Vec<(usize, Snapshot)> = match &input.session {
        Some(id) => {
            let logs = env.store.list_tool_logs(&session_id(id)?)?;
            if logs.is_empty() {
                return Err(Error::not_found(
                    id.as_str(),
                    format!("session {id:?} has no tool logs"),
                ));
            }
            logs.iter()
                .enumerate()
                .filter_map(|(i, log)| {
                    Some((i, Snapshot::from_stored(log.memory_snapshot.as_ref()?)))
                })
                .collect()
        }
        None => Vec::new(),
    };
    let snapshots: Vec<Snapshot> = past.iter().map(|(_, s)| s.clone()).collect();
    let findings = lint_trail(&trail, &memory.snapshot(), &snapshots, &policy)?;
    Ok(LintOutput {
        findings: findings
            .into_iter()
            .map(|f| LintFinding {
                location: f.location,
                key: f.key,
                reason: f.reason.to_string(),
                found_in: match f.origin {
                    Origin::Current => "current memory".to_owned(),
                    Origin::Past(i) => match (past.get(i), &input.session) {
                        (Some((tool, _)), Some(id)) => format!("session {id}, after tool {tool}"),
                        _ => format!("past snapshot {i}"),
                    },
                },
            })
            .collect(),
    })
}

/// Where a replay stands: the trail, the device, the memory it started with and what each
/// call made so far wrote to memory. The server keeps no state: the same input gives the same
/// next call, resolved against memory as the earlier calls left it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextCallInput {
    /// The trail YAML (give this or `trail_path`).
    #[serde(default)]
    pub trail: Option<String>,
    /// A trail file of at most 4 MiB (or `trail`); over MCP, in an `--allow-dir` folder.
    #[serde(default)]
    pub trail_path: Option<String>,
    /// The device classifier; the closest recording wins (`android-phone`, `android`).
    pub device: String,
    /// Memory the replay starts with, beside the trail's `config.memory`.
    #[serde(default)]
    pub memory: BTreeMap<String, String>,
    /// Secret values the replay starts with: used in calls, masked in outputs.
    #[serde(default)]
    pub secrets: BTreeMap<String, String>,
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
    /// `agent: true` for a step with no recording on this device. Absent when done.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub next: Option<Value>,
}

/// The next call of the replay `input` describes.
pub fn next_call(env: &Env<'_>, input: NextCallInput) -> Result<NextCallOutput> {
    let (trail, name) = read_trail(env, input.trail.as_deref(), input.trail_path.as_deref())?;
    let mut seeds = Seeds::new();
    for (key, value) in &input.memory {
        seeds = seeds.with_memory(key.clone(), value.clone());
    }
    for (key, value) in &input.secrets {
        seeds = seeds.with_secret(key.clone(), value.clone());
    }
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
    let next = replay.next_dispatch().with_context(|| name.clone())?;
    Ok(NextCallOutput {
        done: next.is_none(),
        dispatches_total: total,
        next: next.map(|d| serde_json::to_value(&d)).transpose()?,
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
                    memory: BTreeMap::new(),
                    secrets: BTreeMap::new(),
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
                memory: BTreeMap::new(),
                session: Some("first-run".to_owned()),
                min_chars: None,
            },
        )
        .expect("lint");
        assert_eq!(lint.findings.len(), 1);
        assert_eq!(lint.findings[0].key, "merchant_email");
        assert_eq!(lint.findings[0].found_in, "session first-run, after tool 0");
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
            },
        )
        .expect_err("bad tool name");
        // Documents are read as the lines of an import: the second one is line 2.
        assert!(error.to_string().starts_with("logs:2: "), "{error}");
        assert!(store.tool_log_sessions().expect("sessions").is_empty());
    }
}
