//! [`ToolLogStore`] on the `tool_logs` and `tool_log_memory` tables.

use std::collections::HashMap;

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::session::counted_sessions;
use agent_memory_core::store::tool_log::{
    MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLog, ToolLogSessionSummary, ToolLogStore,
    tool_logs_already_held, validate_all,
};
use agent_memory_core::{Error, Page, Provenance, Result, SessionId, Timestamp};
use rusqlite::{Connection, params};

use crate::notes::{audit_in, audit_write_run, stored_writer, writer_columns};
use crate::{SqliteStore, check_sizes, item_error, to_core};

impl ToolLogStore for SqliteStore {
    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>> {
        type Row = (String, i64, i64, Option<i64>);
        let rows: Vec<Row> = self.read("list tool log sessions", |conn| {
            conn.prepare_cached(
                "SELECT session, count(*), \
                        sum(octet_length(tool_name) + octet_length(parameters) \
                            + coalesce(octet_length(error), 0)), \
                        max(timestamp) \
                 FROM tool_logs GROUP BY session ORDER BY session",
            )?
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect()
        })?;
        rows.into_iter()
            .map(|(session, logs, bytes, last_write)| {
                let session = SessionId::new(session)
                    .map_err(|e| Error::corrupt("tool_logs table", e.to_string()))?;
                Ok(ToolLogSessionSummary {
                    session,
                    logs: u64::try_from(logs).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    last_write: last_write.map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let op = "forget tool logs";
        // The memory snapshot rows go with their logs (ON DELETE CASCADE).
        let deleted = self.write(op, |tx| {
            let run = || -> rusqlite::Result<usize> {
                let deleted = tx
                    .prepare_cached("DELETE FROM tool_logs WHERE session = ?1")?
                    .execute([session.as_str()])?;
                let detail = forget_detail(&[(deleted as u64, "tool log", "tool logs")]);
                let item = session.as_str();
                audit_in(tx, "recording", Action::Forget, NO_SCOPE, item, by, &detail)?;
                Ok(deleted)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        // Nothing deleted, nothing to erase (and no reader to wait for).
        if deleted > 0 {
            self.erase_freed_pages()?;
        }
        Ok(deleted as u64)
    }

    fn forget_tool_logs_by(
        &self,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let op = "forget tool logs by writer";
        let source = writer.source.as_ref().map(ToString::to_string);
        // The memory snapshot rows go with their logs (ON DELETE CASCADE).
        let gone = self.write(op, |tx| {
            let run = || -> rusqlite::Result<std::collections::BTreeMap<String, u64>> {
                let mut gone = std::collections::BTreeMap::new();
                let mut stmt = tx.prepare_cached(
                    "DELETE FROM tool_logs WHERE source IS NOT NULL \
                     AND (?1 IS NULL OR source = ?1) AND (?2 IS NULL OR source_session = ?2) \
                     AND (?3 IS NULL OR client = ?3) RETURNING session",
                )?;
                let mut rows = stmt.query(params![source, writer.session, writer.client])?;
                while let Some(row) = rows.next()? {
                    *gone.entry(row.get::<_, String>(0)?).or_insert(0) += 1;
                }
                drop(rows);
                for (session, n) in &gone {
                    let detail = forget_detail(&[(*n, "tool log", "tool logs")]);
                    audit_in(
                        tx,
                        "recording",
                        Action::Forget,
                        NO_SCOPE,
                        session,
                        by,
                        &detail,
                    )?;
                }
                Ok(gone)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if !gone.is_empty() {
            self.erase_freed_pages()?;
        }
        counted_sessions(gone, "tool_logs")
    }

    fn append_tool_log(&self, log: &ToolLog) -> Result<()> {
        log.validate()?;
        let op = "append tool log";
        self.write(op, |tx| {
            insert(tx, log)
                .and_then(|()| audit_logs(tx, std::slice::from_ref(log)))
                .map_err(|e| to_core(op, e))
        })
    }

    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        logs_fit(logs)?;
        self.write("append tool logs", |tx| insert_all(tx, logs))
    }

    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        logs_fit(logs)?;
        let op = "import tool logs";
        self.write(op, |tx| {
            let sessions: std::collections::BTreeSet<&SessionId> =
                logs.iter().map(|log| &log.session).collect();
            let mut count = tx
                .prepare_cached("SELECT count(*) FROM tool_logs WHERE session = ?1")
                .map_err(|e| to_core(op, e))?;
            for session in sessions {
                let held: i64 = count
                    .query_row([session.as_str()], |row| row.get(0))
                    .map_err(|e| to_core(op, e))?;
                if held > 0 {
                    let held = usize::try_from(held).unwrap_or(usize::MAX);
                    return Err(tool_logs_already_held(session, held));
                }
            }
            insert_all(tx, logs)
        })
    }

    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>> {
        let (rows, entries) = self.read("list tool logs", |conn| select(conn, session, 0, -1))?;
        assemble(session, rows, entries)
    }

    fn tool_log_page(&self, session: &SessionId, from: u64, limit: usize) -> Result<Page<ToolLog>> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (rows, entries, total) = self.read("list tool logs", |conn| {
            let (rows, entries) = select(conn, session, from, limit)?;
            let total: i64 = conn
                .prepare_cached("SELECT count(*) FROM tool_logs WHERE session = ?1")?
                .query_row([session.as_str()], |row| row.get(0))?;
            Ok((rows, entries, total))
        })?;
        Ok(Page {
            items: assemble(session, rows, entries)?,
            total: u64::try_from(total).unwrap_or(0),
        })
    }
}

/// The logs of `session` from its rows and their snapshot entries.
fn assemble(
    session: &SessionId,
    rows: Vec<LogRow>,
    entries: Vec<EntryRow>,
) -> Result<Vec<ToolLog>> {
    let mut snapshots: HashMap<i64, Vec<SnapshotEntry>> = HashMap::new();
    for (seq, entry) in entries {
        snapshots.entry(seq).or_default().push(entry?);
    }
    rows.into_iter()
        .map(|row| {
            let duration_ms = u64::try_from(row.duration_ms).map_err(|_| {
                Error::corrupt("tool_logs", format!("negative duration in log {}", row.seq))
            })?;
            let memory_snapshot = row.has_snapshot.then(|| MemorySnapshot {
                entries: snapshots.remove(&row.seq).unwrap_or_default(),
            });
            let timestamp = Timestamp::from_millis(row.timestamp);
            let provenance = stored_writer(row.writer, timestamp, "tool_logs")?;
            Ok(ToolLog {
                session: session.clone(),
                tool_name: row.tool_name,
                parameters: row.parameters,
                success: row.success,
                error: row.error,
                duration_ms,
                timestamp,
                trace_id: row.trace_id,
                memory_snapshot,
                provenance,
            })
        })
        .collect()
}

/// Checks every value of every log against the store's size limit before anything is written;
/// an error names the log (counting from 1) and its field.
fn logs_fit(logs: &[ToolLog]) -> Result<()> {
    for (i, log) in logs.iter().enumerate() {
        let snapshot = log.memory_snapshot.iter().flat_map(|s| &s.entries);
        let values = [
            ("tool_name", log.tool_name.as_str()),
            ("parameters", log.parameters.as_str()),
            ("error", log.error.as_deref().unwrap_or_default()),
            ("trace_id", log.trace_id.as_deref().unwrap_or_default()),
        ]
        .into_iter()
        .chain(snapshot.flat_map(|e| {
            [
                ("memory_snapshot key", e.key.as_str()),
                ("memory_snapshot value", e.value.plain().unwrap_or_default()),
                (
                    "memory_snapshot written_by",
                    e.written_by.as_deref().unwrap_or_default(),
                ),
            ]
        }));
        check_sizes(|| format!("tool log {}", i + 1), values)?;
    }
    Ok(())
}

/// Inserts every log in order; an error names the log (counting from 1).
fn insert_all(tx: &Connection, logs: &[ToolLog]) -> Result<()> {
    for (i, log) in logs.iter().enumerate() {
        insert(tx, log)
            .map_err(|e| item_error(&format!("tool log {}", i + 1), "append tool logs", e))?;
    }
    audit_logs(tx, logs).map_err(|e| to_core("append tool logs", e))
}

/// Appends the entries that open the runs of writes among `logs`, in the caller's
/// transaction.
fn audit_logs(tx: &Connection, logs: &[ToolLog]) -> rusqlite::Result<()> {
    for run in WriteRun::tool_log_runs(logs) {
        audit_write_run(tx, &run)?;
    }
    Ok(())
}

fn insert(tx: &Connection, log: &ToolLog) -> rusqlite::Result<()> {
    // `validate` checked that the duration fits; saturate rather than panic regardless.
    let duration = i64::try_from(log.duration_ms).unwrap_or(i64::MAX);
    let by = log.provenance.as_ref();
    tx.prepare_cached(
        "INSERT INTO tool_logs (session, tool_name, parameters, success, error, duration_ms, \
         timestamp, trace_id, has_snapshot, source, source_session, client) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        log.session.as_str(),
        log.tool_name,
        log.parameters,
        log.success,
        log.error,
        duration,
        log.timestamp.as_millis(),
        log.trace_id,
        log.memory_snapshot.is_some(),
        by.map(|b| b.source.to_string()),
        by.and_then(|b| b.session.as_deref()),
        by.and_then(|b| b.client.as_deref()),
    ])?;
    let seq = tx.last_insert_rowid();
    let Some(snapshot) = &log.memory_snapshot else {
        return Ok(());
    };
    let mut stmt = tx.prepare_cached(
        "INSERT INTO tool_log_memory (log_seq, key, value, sensitive, written_by, written_at, \
         existed_before) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for entry in &snapshot.entries {
        stmt.execute(params![
            seq,
            entry.key,
            entry.value.plain(),
            matches!(entry.value, SnapshotValue::Sensitive),
            entry.written_by,
            entry.written_at.map(Timestamp::as_millis),
            entry.existed_before,
        ])?;
    }
    Ok(())
}

struct LogRow {
    seq: i64,
    tool_name: String,
    parameters: String,
    success: bool,
    error: Option<String>,
    duration_ms: i64,
    timestamp: i64,
    trace_id: Option<String>,
    has_snapshot: bool,
    /// The writer's source, session and client, as stored.
    writer: (Option<String>, Option<String>, Option<String>),
}

type EntryRow = (i64, Result<SnapshotEntry>);

/// The rows of `session`'s logs from position `from`, at most `limit` of them (-1: all),
/// and their snapshot entries.
fn select(
    conn: &Connection,
    session: &SessionId,
    from: i64,
    limit: i64,
) -> rusqlite::Result<(Vec<LogRow>, Vec<EntryRow>)> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, tool_name, parameters, success, error, duration_ms, timestamp, trace_id, \
         has_snapshot, source, source_session, client FROM tool_logs WHERE session = ?1 \
         ORDER BY seq LIMIT ?2 OFFSET ?3",
    )?;
    let rows = stmt
        .query_map(params![session.as_str(), limit, from], |row| {
            Ok(LogRow {
                seq: row.get(0)?,
                tool_name: row.get(1)?,
                parameters: row.get(2)?,
                success: row.get(3)?,
                error: row.get(4)?,
                duration_ms: row.get(5)?,
                timestamp: row.get(6)?,
                trace_id: row.get(7)?,
                has_snapshot: row.get(8)?,
                writer: writer_columns(row, 9)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // The entries of the rows read: their numbers are one range, which other sessions' logs
    // may interleave.
    let (Some(first), Some(last)) = (rows.first().map(|r| r.seq), rows.last().map(|r| r.seq))
    else {
        return Ok((rows, Vec::new()));
    };
    let mut stmt = conn.prepare_cached(
        "SELECT m.log_seq, m.key, m.value, m.sensitive, m.written_by, m.written_at, \
         m.existed_before FROM tool_log_memory m JOIN tool_logs l ON l.seq = m.log_seq \
         WHERE l.session = ?1 AND m.log_seq BETWEEN ?2 AND ?3 ORDER BY m.log_seq, m.key",
    )?;
    let entries = stmt
        .query_map(params![session.as_str(), first, last], |row| {
            let seq: i64 = row.get(0)?;
            let key: String = row.get(1)?;
            let value: Option<String> = row.get(2)?;
            let sensitive: bool = row.get(3)?;
            let value = match (sensitive, value) {
                (true, None) => Ok(SnapshotValue::Sensitive),
                (false, Some(value)) => Ok(SnapshotValue::Plain(value)),
                _ => Err(Error::corrupt(
                    "tool_log_memory",
                    format!("key {key:?} of log {seq} has an inconsistent sensitive flag"),
                )),
            };
            let written_at: Option<i64> = row.get(5)?;
            Ok((
                seq,
                value.map(|value| SnapshotEntry {
                    key,
                    value,
                    written_by: row.get(4).ok().flatten(),
                    written_at: written_at.map(Timestamp::from_millis),
                    existed_before: row.get(6).unwrap_or(false),
                }),
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((rows, entries))
}
