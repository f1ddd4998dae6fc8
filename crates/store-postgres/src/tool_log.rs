//! [`ToolLogStore`] on the `tool_logs` and `tool_log_memory` tables. A batch is two
//! statements whatever its size: the logs in one multi-row insert, then every snapshot entry
//! of the batch in another.

use std::collections::{BTreeSet, HashMap};

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::session::counted_sessions;
use agent_memory_core::store::tool_log::{
    MemorySnapshot, SnapshotEntry, SnapshotValue, ToolLog, ToolLogSessionSummary, ToolLogStore,
    tool_logs_already_held, validate_all,
};
use agent_memory_core::{Error, Page, Provenance, Result, SessionId, Timestamp};
use postgres::Row;

use crate::notes::{WriterArrays, audit_in, audit_write_run, provenance_fits, stored_writer};
use crate::{Fail, PostgresStore, Single, Tx, check_texts, count, lock};

/// Checks every text of every log before anything is written; an error names the log
/// (counting from 1) and its field.
fn logs_fit(logs: &[ToolLog]) -> Result<()> {
    for (i, log) in logs.iter().enumerate() {
        let snapshot = log.memory_snapshot.iter().flat_map(|s| &s.entries);
        let values = [
            ("session", log.session.as_str()),
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
        check_texts(|| format!("tool log {}", i + 1), values)?;
        if let Some(by) = &log.provenance {
            provenance_fits(|| format!("tool log {}", i + 1), by)?;
        }
    }
    Ok(())
}

/// Takes the advisory lock of every session of `logs`, in sorted order: shared for appends
/// (they may run side by side), exclusive for imports and forgets (which check, then write).
fn lock_sessions<'a>(
    tx: &mut Tx<'_>,
    sessions: impl IntoIterator<Item = &'a SessionId>,
    exclusive: bool,
) -> std::result::Result<(), Fail> {
    let sessions: BTreeSet<&SessionId> = sessions.into_iter().collect();
    for session in sessions {
        tx.advisory_lock(lock::TOOL_LOG, session.as_str(), exclusive)?;
    }
    Ok(())
}

/// Inserts every log in order, in the caller's transaction.
fn insert_all(tx: &mut Tx<'_>, logs: &[ToolLog]) -> std::result::Result<(), Fail> {
    if logs.is_empty() {
        return Ok(());
    }
    let sessions: Vec<&str> = logs.iter().map(|l| l.session.as_str()).collect();
    let tools: Vec<&str> = logs.iter().map(|l| l.tool_name.as_str()).collect();
    let parameters: Vec<&str> = logs.iter().map(|l| l.parameters.as_str()).collect();
    let successes: Vec<bool> = logs.iter().map(|l| l.success).collect();
    let errors: Vec<Option<&str>> = logs.iter().map(|l| l.error.as_deref()).collect();
    // `validate` checked that durations fit; saturate rather than panic regardless.
    let durations: Vec<i64> = logs
        .iter()
        .map(|l| i64::try_from(l.duration_ms).unwrap_or(i64::MAX))
        .collect();
    let timestamps: Vec<i64> = logs.iter().map(|l| l.timestamp.as_millis()).collect();
    let traces: Vec<Option<&str>> = logs.iter().map(|l| l.trace_id.as_deref()).collect();
    let snapshots: Vec<bool> = logs.iter().map(|l| l.memory_snapshot.is_some()).collect();
    let writers = WriterArrays::of(logs.iter().map(|l| l.provenance.as_ref()));
    // Rows are inserted in ordinality order, so their identities ascend in batch order.
    let rows = tx.query(
        "INSERT INTO tool_logs (session, tool_name, parameters, success, error, duration_ms, \
         timestamp, trace_id, has_snapshot, source, source_session, client) \
         SELECT s, t, p, ok, e, d, ts, tr, hs, so, ws, c FROM unnest($1::text[], $2::text[], \
           $3::text[], $4::boolean[], $5::text[], $6::bigint[], $7::bigint[], $8::text[], \
           $9::boolean[], $10::text[], $11::text[], $12::text[]) \
           WITH ORDINALITY AS l(s, t, p, ok, e, d, ts, tr, hs, so, ws, c, n) ORDER BY n \
         RETURNING seq",
        &[
            &sessions,
            &tools,
            &parameters,
            &successes,
            &errors,
            &durations,
            &timestamps,
            &traces,
            &snapshots,
            &writers.sources,
            &writers.sessions,
            &writers.clients,
        ],
    )?;
    let mut seqs: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
    seqs.sort_unstable();
    let mut log_seqs = Vec::new();
    let mut keys = Vec::new();
    let mut values = Vec::new();
    let mut sensitive = Vec::new();
    let mut written_by = Vec::new();
    let mut written_at = Vec::new();
    let mut existed = Vec::new();
    for (log, seq) in logs.iter().zip(&seqs) {
        for entry in log.memory_snapshot.iter().flat_map(|s| &s.entries) {
            log_seqs.push(*seq);
            keys.push(entry.key.as_str());
            values.push(entry.value.plain());
            sensitive.push(matches!(entry.value, SnapshotValue::Sensitive));
            written_by.push(entry.written_by.as_deref());
            written_at.push(entry.written_at.map(Timestamp::as_millis));
            existed.push(entry.existed_before);
        }
    }
    if !log_seqs.is_empty() {
        tx.execute(
            "INSERT INTO tool_log_memory (log_seq, key, value, sensitive, written_by, \
             written_at, existed_before) \
             SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], \
               $5::text[], $6::bigint[], $7::boolean[])",
            &[
                &log_seqs,
                &keys,
                &values,
                &sensitive,
                &written_by,
                &written_at,
                &existed,
            ],
        )?;
    }
    for run in WriteRun::tool_log_runs(logs) {
        audit_write_run(tx, &run)?;
    }
    Ok(())
}

impl ToolLogStore for PostgresStore {
    fn append_tool_log(&self, log: &ToolLog) -> Result<()> {
        log.validate()?;
        logs_fit(std::slice::from_ref(log))?;
        self.write("append tool log", |tx| {
            lock_sessions(tx, [&log.session], false)?;
            insert_all(tx, std::slice::from_ref(log))
        })
    }

    fn append_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        logs_fit(logs)?;
        self.write("append tool logs", |tx| {
            lock_sessions(tx, logs.iter().map(|log| &log.session), false)?;
            insert_all(tx, logs)
        })
    }

    fn import_tool_logs(&self, logs: &[ToolLog]) -> Result<()> {
        validate_all(logs)?;
        logs_fit(logs)?;
        let sessions: BTreeSet<&SessionId> = logs.iter().map(|log| &log.session).collect();
        self.write("import tool logs", |tx| {
            lock_sessions(tx, sessions.iter().copied(), true)?;
            for session in &sessions {
                let held: i64 = tx
                    .query_one(
                        "SELECT count(*) FROM tool_logs WHERE session = $1",
                        &[&session.as_str()],
                    )?
                    .get(0);
                if held > 0 {
                    let held = usize::try_from(held).unwrap_or(usize::MAX);
                    return Err(tool_logs_already_held(session, held).into());
                }
            }
            insert_all(tx, logs)
        })
    }

    fn list_tool_logs(&self, session: &SessionId) -> Result<Vec<ToolLog>> {
        let (rows, entries) = self.read("list tool logs", |tx| {
            let rows = tx.query(
                "SELECT seq, tool_name, parameters, success, error, duration_ms, timestamp, \
                 trace_id, has_snapshot, source, source_session, client FROM tool_logs \
                 WHERE session = $1 ORDER BY seq",
                &[&session.as_str()],
            )?;
            let entries = tx.query(
                "SELECT m.log_seq, m.key, m.value, m.sensitive, m.written_by, m.written_at, \
                 m.existed_before FROM tool_log_memory m JOIN tool_logs l ON l.seq = m.log_seq \
                 WHERE l.session = $1 ORDER BY m.log_seq, m.key COLLATE \"C\"",
                &[&session.as_str()],
            )?;
            Ok((rows, entries))
        })?;
        assemble(session, rows, entries)
    }

    fn tool_log_page(&self, session: &SessionId, from: u64, limit: usize) -> Result<Page<ToolLog>> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (rows, entries, total) = self.read("list tool logs", |tx| {
            let rows = tx.query(
                "SELECT seq, tool_name, parameters, success, error, duration_ms, timestamp, \
                 trace_id, has_snapshot, source, source_session, client FROM tool_logs \
                 WHERE session = $1 ORDER BY seq LIMIT $2 OFFSET $3",
                &[&session.as_str(), &limit, &from],
            )?;
            // The entries of the rows read: their numbers are one range, which other
            // sessions' logs may interleave.
            let (first, last) = match (rows.first(), rows.last()) {
                (Some(first), Some(last)) => (first.get::<_, i64>(0), last.get::<_, i64>(0)),
                _ => (0, -1),
            };
            let entries = tx.query(
                "SELECT m.log_seq, m.key, m.value, m.sensitive, m.written_by, m.written_at, \
                 m.existed_before FROM tool_log_memory m JOIN tool_logs l ON l.seq = m.log_seq \
                 WHERE l.session = $1 AND m.log_seq BETWEEN $2 AND $3 \
                 ORDER BY m.log_seq, m.key COLLATE \"C\"",
                &[&session.as_str(), &first, &last],
            )?;
            let total: i64 = tx
                .query_one(
                    "SELECT count(*) FROM tool_logs WHERE session = $1",
                    &[&session.as_str()],
                )?
                .get(0);
            Ok((rows, entries, count(total)))
        })?;
        Ok(Page {
            items: assemble(session, rows, entries)?,
            total,
        })
    }

    fn tool_log_sessions(&self) -> Result<Vec<ToolLogSessionSummary>> {
        let rows = self.read_one("list tool log sessions", |one| {
            Ok(one.rows(
                "SELECT session, count(*), \
                        sum(octet_length(tool_name) + octet_length(parameters) \
                            + coalesce(octet_length(error), 0))::bigint, \
                        max(timestamp) \
                 FROM tool_logs GROUP BY session ORDER BY session COLLATE \"C\"",
                &[],
            )?)
        })?;
        rows.into_iter()
            .map(|row| {
                let session = SessionId::new(row.get::<_, String>(0))
                    .map_err(|e| Error::corrupt("tool_logs table", e.to_string()))?;
                Ok(ToolLogSessionSummary {
                    session,
                    logs: count(row.get(1)),
                    bytes: count(row.get(2)),
                    last_write: row.get::<_, Option<i64>>(3).map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn forget_tool_logs(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        provenance_fits(|| format!("forget of the tool logs of {session}"), by)?;
        // The memory snapshot rows go with their logs (ON DELETE CASCADE).
        self.write("forget tool logs", |tx| {
            lock_sessions(tx, [session], true)?;
            let gone = tx.execute(
                "DELETE FROM tool_logs WHERE session = $1",
                &[&session.as_str()],
            )?;
            let detail = forget_detail(&[(gone, "tool log", "tool logs")]);
            let item = session.as_str();
            audit_in(tx, "recording", Action::Forget, NO_SCOPE, item, by, &detail)?;
            Ok(gone)
        })
    }

    fn forget_tool_logs_by(
        &self,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        provenance_fits(|| "forget of tool logs by writer".to_owned(), by)?;
        let source = writer.source.as_ref().map(ToString::to_string);
        check_texts(
            || "tool log writer".to_owned(),
            [
                ("source", source.as_deref().unwrap_or_default()),
                ("session", writer.session.as_deref().unwrap_or_default()),
                ("client", writer.client.as_deref().unwrap_or_default()),
            ],
        )?;
        // The memory snapshot rows go with their logs (ON DELETE CASCADE).
        let gone = self.write("forget tool logs by writer", |tx| {
            let rows = tx.query(
                "DELETE FROM tool_logs WHERE source IS NOT NULL \
                 AND ($1::text IS NULL OR source = $1) \
                 AND ($2::text IS NULL OR source_session = $2) \
                 AND ($3::text IS NULL OR client = $3) RETURNING session",
                &[&source, &writer.session, &writer.client],
            )?;
            let mut gone: std::collections::BTreeMap<String, u64> =
                std::collections::BTreeMap::new();
            for row in &rows {
                *gone.entry(row.get::<_, String>(0)).or_insert(0) += 1;
            }
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
        })?;
        counted_sessions(gone, "tool_logs")
    }
}

/// The logs of `session` from its rows and their snapshot entries, as the queries above
/// select them.
fn assemble(session: &SessionId, rows: Vec<Row>, entries: Vec<Row>) -> Result<Vec<ToolLog>> {
    let mut snapshots: HashMap<i64, Vec<SnapshotEntry>> = HashMap::new();
    for row in entries {
        let seq: i64 = row.get(0);
        let key: String = row.get(1);
        let value = match (row.get::<_, bool>(3), row.get::<_, Option<String>>(2)) {
            (true, None) => SnapshotValue::Sensitive,
            (false, Some(value)) => SnapshotValue::Plain(value),
            _ => {
                return Err(Error::corrupt(
                    "tool_log_memory",
                    format!("key {key:?} of log {seq} has an inconsistent sensitive flag"),
                ));
            }
        };
        snapshots.entry(seq).or_default().push(SnapshotEntry {
            key,
            value,
            written_by: row.get(4),
            written_at: row.get::<_, Option<i64>>(5).map(Timestamp::from_millis),
            existed_before: row.get(6),
        });
    }
    rows.into_iter()
        .map(|row| {
            let seq: i64 = row.get(0);
            let duration_ms = u64::try_from(row.get::<_, i64>(5)).map_err(|_| {
                Error::corrupt("tool_logs", format!("negative duration in log {seq}"))
            })?;
            let memory_snapshot = row.get::<_, bool>(8).then(|| MemorySnapshot {
                entries: snapshots.remove(&seq).unwrap_or_default(),
            });
            let timestamp = Timestamp::from_millis(row.get(6));
            let provenance = stored_writer(&row, 9, timestamp, "tool_logs")?;
            Ok(ToolLog {
                session: session.clone(),
                tool_name: row.get(1),
                parameters: row.get(2),
                success: row.get(3),
                error: row.get(4),
                duration_ms,
                timestamp,
                trace_id: row.get(7),
                memory_snapshot,
                provenance,
            })
        })
        .collect()
}
