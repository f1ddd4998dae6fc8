//! Tool logs as JSON documents, the form sessions are exported and archived in. A log
//! written before memory snapshots existed has no `memorySnapshot` field and still loads
//! (as a log without a snapshot).

use agent_memory_core::store::tool_log::{MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLog};
use agent_memory_core::{SessionId, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogDocument {
    session: String,
    tool_name: String,
    parameters: Value,
    successful: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exception_message: Option<String>,
    duration_ms: u64,
    timestamp: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    memory_snapshot: Option<Vec<EntryDocument>>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct EntryDocument {
    key: String,
    /// Absent for a sensitive entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(default)]
    sensitive: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_at: Option<i64>,
    #[serde(default = "yes")]
    existed_before: bool,
}

fn yes() -> bool {
    true
}

fn invalid(message: impl Into<String>) -> Error {
    Error::Parameters {
        tool: "<tool log>".to_owned(),
        message: message.into(),
    }
}

/// Reads a tool log from its JSON document.
///
/// ```
/// let old = r#"{"session":"s1","toolName":"tapOn","parameters":{"text":"OK"},"successful":true,"durationMs":3,"timestamp":10}"#;
/// let log = agent_memory_recording::tool_log_from_json(old)?;
/// assert!(log.memory_snapshot.is_none());
/// assert_eq!(agent_memory_recording::tool_log_from_json(&agent_memory_recording::tool_log_to_json(&log)?)?, log);
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
pub fn tool_log_from_json(text: &str) -> Result<ToolLog> {
    let doc: LogDocument =
        serde_json::from_str(text).map_err(|e| invalid(format!("tool log JSON: {e}")))?;
    let session = SessionId::new(doc.session)?;
    let memory_snapshot = doc
        .memory_snapshot
        .map(|entries| {
            entries
                .into_iter()
                .map(|e| {
                    let value = match (e.sensitive, e.value) {
                        (true, _) => SnapshotValue::Sensitive,
                        (false, Some(value)) => SnapshotValue::Plain(value),
                        (false, None) => {
                            return Err(invalid(format!(
                                "snapshot key {:?} has no value and is not sensitive",
                                e.key
                            )));
                        }
                    };
                    Ok(SnapshotEntry {
                        key: e.key,
                        value,
                        written_by: e.written_by,
                        written_at: e.written_at.map(Timestamp::from_millis),
                        existed_before: e.existed_before,
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(|entries| MemorySnapshot { entries })
        })
        .transpose()?;
    let parameters = serde_json::to_string(&doc.parameters)
        .map_err(|e| invalid(format!("parameters of {:?}: {e}", doc.tool_name)))?;
    let log = ToolLog {
        session,
        tool_name: doc.tool_name,
        parameters,
        success: doc.successful,
        error: doc.exception_message,
        duration_ms: doc.duration_ms,
        timestamp: Timestamp::from_millis(doc.timestamp),
        trace_id: doc.trace_id,
        memory_snapshot,
    };
    log.validate()?;
    Ok(log)
}

/// Writes a tool log as its JSON document (a sensitive entry keeps only its key).
pub fn tool_log_to_json(log: &ToolLog) -> Result<String> {
    let parameters: Value = serde_json::from_str(&log.parameters)
        .map_err(|e| invalid(format!("parameters of {:?}: {e}", log.tool_name)))?;
    let doc = LogDocument {
        session: log.session.to_string(),
        tool_name: log.tool_name.clone(),
        parameters,
        successful: log.success,
        exception_message: log.error.clone(),
        duration_ms: log.duration_ms,
        timestamp: log.timestamp.as_millis(),
        trace_id: log.trace_id.clone(),
        memory_snapshot: log.memory_snapshot.as_ref().map(|s| {
            s.entries
                .iter()
                .map(|e| EntryDocument {
                    key: e.key.clone(),
                    value: e.value.plain().map(str::to_owned),
                    sensitive: matches!(e.value, SnapshotValue::Sensitive),
                    written_by: e.written_by.clone(),
                    written_at: e.written_at.map(Timestamp::as_millis),
                    existed_before: e.existed_before,
                })
                .collect()
        }),
    };
    serde_json::to_string(&doc).map_err(|e| invalid(e.to_string()))
}
