//! [`SessionStore`] on the `session_events` table: one row per event, keyed by session and
//! its position in the log.

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::session::{
    append_at_outcome, counted_sessions, session_already_exists, session_not_found,
    validate_new_session,
};
use agent_memory_core::{
    Clock, Page, Provenance, Result, SessionAppended, SessionEvent, SessionId, SessionStore,
    SessionSummary, Timestamp,
};
use rusqlite::types::Type;
use rusqlite::{Connection, params};

use crate::notes::{audit_in, audit_write_run, stored_writer, writer_columns};
use crate::{SqliteStore, check_sizes, item_error, to_core};

/// Checks every payload against the store's size limit before anything is written.
fn events_fit(events: &[SessionEvent]) -> Result<()> {
    for (i, event) in events.iter().enumerate() {
        check_sizes(
            || format!("session event {}", i + 1),
            [("payload", event.payload.as_str())],
        )?;
    }
    Ok(())
}

/// How many events `session`'s log holds (its next position).
fn log_len(conn: &Connection, session: &SessionId) -> rusqlite::Result<u64> {
    let next: i64 = conn
        .prepare_cached("SELECT coalesce(max(seq) + 1, 0) FROM session_events WHERE session = ?1")?
        .query_row([session.as_str()], |row| row.get(0))?;
    Ok(u64::try_from(next).unwrap_or(0))
}

/// The columns [`event_of`] reads, in its order.
const EVENT_COLUMNS: &str = "kind, payload, written_at, source, source_session, client";

/// An event of a row of [`EVENT_COLUMNS`]. A writer whose source does not read is reported
/// as the corruption it is.
fn event_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionEvent> {
    let at = Timestamp::from_millis(row.get::<_, Option<i64>>(2)?.unwrap_or(0));
    let written_by = stored_writer(writer_columns(row, 3)?, at, "session_events")
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(3, Type::Text, Box::new(e)))?;
    Ok(SessionEvent {
        kind: row.get(0)?,
        payload: row.get(1)?,
        written_by,
    })
}

/// The statement that inserts one event: session, seq, kind, payload, written_at and the
/// writer's three columns.
const INSERT_EVENT: &str = "INSERT INTO session_events \
     (session, seq, kind, payload, written_at, source, source_session, client) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/// At most `count` events of `session`'s log from position `from` on.
fn events_from(
    conn: &Connection,
    session: &SessionId,
    from: u64,
    count: usize,
) -> rusqlite::Result<Vec<SessionEvent>> {
    let from = i64::try_from(from).unwrap_or(i64::MAX);
    let to = from.saturating_add(i64::try_from(count).unwrap_or(i64::MAX));
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM session_events \
         WHERE session = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq"
    ))?;
    let rows = stmt.query_map(params![session.as_str(), from, to], event_of)?;
    rows.collect()
}

/// Inserts `events` at positions `from..`, written at `now`; returns the length of the log
/// afterwards.
fn insert(
    tx: &Connection,
    session: &SessionId,
    from: u64,
    events: &[SessionEvent],
    now: Timestamp,
) -> rusqlite::Result<u64> {
    let mut insert = tx.prepare_cached(INSERT_EVENT)?;
    let mut seq = from;
    for event in events {
        let at = i64::try_from(seq).unwrap_or(i64::MAX);
        insert_one(&mut insert, session, at, event, now)?;
        seq += 1;
    }
    audit_events(tx, session, events, now)?;
    Ok(seq)
}

/// Appends the entries that open the runs of writes among `events`, appended to `session`
/// at `now`, in the caller's transaction.
fn audit_events(
    conn: &Connection,
    session: &SessionId,
    events: &[SessionEvent],
    now: Timestamp,
) -> rusqlite::Result<()> {
    for run in WriteRun::event_runs(session.as_str(), events, now) {
        audit_write_run(conn, &run)?;
    }
    Ok(())
}

/// Runs [`INSERT_EVENT`] for `event` at position `seq`.
fn insert_one(
    insert: &mut rusqlite::CachedStatement<'_>,
    session: &SessionId,
    seq: i64,
    event: &SessionEvent,
    now: Timestamp,
) -> rusqlite::Result<usize> {
    let by = event.written_by.as_ref();
    insert.execute(params![
        session.as_str(),
        seq,
        event.kind,
        event.payload,
        now.as_millis(),
        by.map(|b| b.source.to_string()),
        by.and_then(|b| b.session.as_deref()),
        by.and_then(|b| b.client.as_deref()),
    ])
}

impl SessionStore for SqliteStore {
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        events.iter().try_for_each(SessionEvent::validate)?;
        events_fit(events)?;
        let op = "append session events";
        self.write(op, |tx| {
            let next = log_len(tx, session).map_err(|e| to_core(op, e))?;
            insert(tx, session, next, events, self.clock.now()).map_err(|e| to_core(op, e))
        })
    }

    fn session_append_at(
        &self,
        session: &SessionId,
        expected_len: u64,
        events: &[SessionEvent],
    ) -> Result<SessionAppended> {
        events.iter().try_for_each(SessionEvent::validate)?;
        events_fit(events)?;
        let op = "append session events";
        // One immediate transaction: the length read here is the length the insert appends
        // to, whichever process or connection writes next.
        self.write(op, |tx| {
            let held = log_len(tx, session).map_err(|e| to_core(op, e))?;
            if held != expected_len {
                let stored = events_from(tx, session, expected_len, events.len())
                    .map_err(|e| to_core(op, e))?;
                return append_at_outcome(session, expected_len, held, &stored, events);
            }
            let events =
                insert(tx, session, held, events, self.clock.now()).map_err(|e| to_core(op, e))?;
            Ok(SessionAppended {
                events,
                already_stored: false,
            })
        })
    }

    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        validate_new_session(session, events)?;
        events_fit(events)?;
        let op = "create session";
        self.write(op, |tx| {
            let held: i64 = tx
                .prepare_cached("SELECT count(*) FROM session_events WHERE session = ?1")
                .and_then(|mut s| s.query_row([session.as_str()], |row| row.get(0)))
                .map_err(|e| to_core(op, e))?;
            if held > 0 {
                return Err(session_already_exists(
                    session,
                    u64::try_from(held).unwrap_or(0),
                ));
            }
            let mut insert = tx
                .prepare_cached(INSERT_EVENT)
                .map_err(|e| to_core(op, e))?;
            let now = self.clock.now();
            for (seq, event) in events.iter().enumerate() {
                insert_one(&mut insert, session, seq as i64, event, now)
                    .map_err(|e| item_error(&format!("session event {}", seq + 1), op, e))?;
            }
            audit_events(tx, session, events, now).map_err(|e| to_core(op, e))?;
            Ok(events.len() as u64)
        })
    }

    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>> {
        let events = self.read("load session events", |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {EVENT_COLUMNS} FROM session_events WHERE session = ?1 ORDER BY seq"
            ))?;
            let rows = stmt.query_map([session.as_str()], event_of)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })?;
        if events.is_empty() {
            return Err(session_not_found(session));
        }
        Ok(events)
    }

    fn session_page(
        &self,
        session: &SessionId,
        from: u64,
        limit: usize,
    ) -> Result<Page<SessionEvent>> {
        // An event's position is its `seq`, so a page is one range of the primary key.
        let (items, total) = self.read("load session events", |conn| {
            Ok((
                events_from(conn, session, from, limit)?,
                log_len(conn, session)?,
            ))
        })?;
        if total == 0 {
            return Err(session_not_found(session));
        }
        Ok(Page { items, total })
    }

    fn session_list(&self) -> Result<Vec<SessionSummary>> {
        type Row = (String, i64, i64, Option<i64>);
        let rows: Vec<Row> = self.read("list sessions", |conn| {
            // `octet_length` counts a column's bytes without reading its text.
            let mut stmt = conn.prepare_cached(
                "SELECT session, count(*), sum(octet_length(kind) + octet_length(payload)), \
                        max(written_at) \
                 FROM session_events GROUP BY session ORDER BY session",
            )?;
            let rows = stmt.query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?;
            rows.collect()
        })?;
        rows.into_iter()
            .map(|(id, events, bytes, last_write)| {
                let id = SessionId::new(id).map_err(|e| {
                    agent_memory_core::Error::corrupt("session_events table", e.to_string())
                })?;
                Ok(SessionSummary {
                    id,
                    events: u64::try_from(events).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    last_write: last_write.map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let op = "forget session";
        let deleted = self.write(op, |tx| {
            let run = || -> rusqlite::Result<usize> {
                let deleted = tx
                    .prepare_cached("DELETE FROM session_events WHERE session = ?1")?
                    .execute([session.as_str()])?;
                let detail = forget_detail(&[(deleted as u64, "event", "events")]);
                let item = session.as_str();
                audit_in(tx, "turns", Action::Forget, NO_SCOPE, item, by, &detail)?;
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

    fn session_forget_by(&self, writer: &Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let op = "forget sessions by writer";
        let source = writer.source.as_ref().map(ToString::to_string);
        let gone = self.write(op, |tx| {
            let run = || -> rusqlite::Result<Vec<(String, u64)>> {
                let sessions: Vec<String> = tx
                    .prepare_cached(
                        "SELECT DISTINCT session FROM session_events WHERE source IS NOT NULL \
                         AND (?1 IS NULL OR source = ?1) AND (?2 IS NULL OR source_session = ?2) \
                         AND (?3 IS NULL OR client = ?3) ORDER BY session",
                    )?
                    .query_map(params![source, writer.session, writer.client], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                let mut delete =
                    tx.prepare_cached("DELETE FROM session_events WHERE session = ?1")?;
                let mut gone = Vec::with_capacity(sessions.len());
                for session in sessions {
                    let n = delete.execute([&session])? as u64;
                    let detail = forget_detail(&[(n, "event", "events")]);
                    audit_in(tx, "turns", Action::Forget, NO_SCOPE, &session, by, &detail)?;
                    gone.push((session, n));
                }
                Ok(gone)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if !gone.is_empty() {
            self.erase_freed_pages()?;
        }
        counted_sessions(gone, "session_events")
    }
}
