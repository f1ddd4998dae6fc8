//! [`SessionStore`] on the `session_events` table: one row per event, keyed by session and
//! its position in the log. Writers of one session hold its advisory lock, so two appends
//! never claim the same position and of two creates exactly one wins.

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::session::{
    append_at_outcome, session_already_exists, session_not_found, validate_new_session,
};
use agent_memory_core::{
    Clock, Error, Page, Provenance, Result, SessionAppended, SessionEvent, SessionId, SessionStore,
    SessionSummary, Timestamp,
};

use crate::notes::{WriterArrays, audit_in, audit_write_run, provenance_fits, stored_writer};
use crate::{Fail, PostgresStore, Single, Tx, check_texts, count, lock};

fn events_fit(events: &[SessionEvent]) -> Result<()> {
    for (i, event) in events.iter().enumerate() {
        check_texts(
            || format!("session event {}", i + 1),
            [
                ("kind", event.kind.as_str()),
                ("payload", event.payload.as_str()),
            ],
        )?;
        if let Some(by) = &event.written_by {
            provenance_fits(|| format!("session event {}", i + 1), by)?;
        }
    }
    Ok(())
}

/// The columns [`event_of`] reads, in its order (a macro, so statements stay `&'static`).
macro_rules! event_columns {
    () => {
        "kind, payload, written_at, source, source_session, client"
    };
}

/// An event of a row of [`EVENT_COLUMNS`]; a writer whose source does not read is corrupt.
fn event_of(row: &postgres::Row) -> Result<SessionEvent> {
    let at = Timestamp::from_millis(row.get::<_, Option<i64>>(2).unwrap_or(0));
    Ok(SessionEvent {
        kind: row.get(0),
        payload: row.get(1),
        written_by: stored_writer(row, 3, at, "session_events")?,
    })
}

fn lock_session(tx: &mut Tx<'_>, session: &SessionId) -> std::result::Result<(), Fail> {
    Ok(tx.advisory_lock(lock::SESSION, session.as_str(), true)?)
}

/// Inserts `events` at positions `from..`, written at `now`; returns the length of the log
/// afterwards.
fn insert(
    tx: &mut Tx<'_>,
    session: &SessionId,
    from: i64,
    events: &[SessionEvent],
    now: Timestamp,
) -> std::result::Result<u64, Fail> {
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let payloads: Vec<&str> = events.iter().map(|e| e.payload.as_str()).collect();
    let writers = WriterArrays::of(events.iter().map(|e| e.written_by.as_ref()));
    tx.execute(
        "INSERT INTO session_events \
         (session, seq, kind, payload, written_at, source, source_session, client) \
         SELECT $1, $2 + n - 1, k, p, $5, s, w, c \
         FROM unnest($3::text[], $4::text[], $6::text[], $7::text[], $8::text[]) \
         WITH ORDINALITY AS e(k, p, s, w, c, n)",
        &[
            &session.as_str(),
            &from,
            &kinds,
            &payloads,
            &now.as_millis(),
            &writers.sources,
            &writers.sessions,
            &writers.clients,
        ],
    )?;
    for run in WriteRun::event_runs(session.as_str(), events, now) {
        audit_write_run(tx, &run)?;
    }
    Ok(count(from) + events.len() as u64)
}

impl SessionStore for PostgresStore {
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        events.iter().try_for_each(SessionEvent::validate)?;
        events_fit(events)?;
        self.write("append session events", |tx| {
            lock_session(tx, session)?;
            let next: i64 = tx
                .query_one(
                    "SELECT coalesce(max(seq) + 1, 0) FROM session_events WHERE session = $1",
                    &[&session.as_str()],
                )?
                .get(0);
            if events.is_empty() {
                return Ok(count(next));
            }
            insert(tx, session, next, events, self.clock.now())
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
        self.write("append session events", |tx| {
            // The session's lock serializes its writers until this transaction ends, so the
            // length read next is the one the insert appends to, even for a session that has
            // no row yet to lock.
            lock_session(tx, session)?;
            let held: i64 = tx
                .query_one(
                    "SELECT coalesce(max(seq) + 1, 0) FROM session_events WHERE session = $1",
                    &[&session.as_str()],
                )?
                .get(0);
            if count(held) != expected_len {
                let from = i64::try_from(expected_len).unwrap_or(i64::MAX);
                let to = from.saturating_add(i64::try_from(events.len()).unwrap_or(i64::MAX));
                let stored = tx
                    .query(
                        concat!(
                            "SELECT ",
                            event_columns!(),
                            " FROM session_events \
                             WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq"
                        ),
                        &[&session.as_str(), &from, &to],
                    )?
                    .iter()
                    .map(event_of)
                    .collect::<Result<Vec<_>>>()?;
                return Ok(append_at_outcome(
                    session,
                    expected_len,
                    count(held),
                    &stored,
                    events,
                )?);
            }
            let events = if events.is_empty() {
                count(held)
            } else {
                insert(tx, session, held, events, self.clock.now())?
            };
            Ok(SessionAppended {
                events,
                already_stored: false,
            })
        })
    }

    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        validate_new_session(session, events)?;
        events_fit(events)?;
        self.write("create session", |tx| {
            lock_session(tx, session)?;
            let held: i64 = tx
                .query_one(
                    "SELECT count(*) FROM session_events WHERE session = $1",
                    &[&session.as_str()],
                )?
                .get(0);
            if held > 0 {
                return Err(session_already_exists(session, count(held)).into());
            }
            insert(tx, session, 0, events, self.clock.now())
        })
    }

    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>> {
        let rows = self.read_one("load session", |one| {
            Ok(one.rows(
                concat!(
                    "SELECT ",
                    event_columns!(),
                    " FROM session_events WHERE session = $1 ORDER BY seq"
                ),
                &[&session.as_str()],
            )?)
        })?;
        if rows.is_empty() {
            return Err(session_not_found(session));
        }
        rows.iter().map(event_of).collect()
    }

    fn session_page(
        &self,
        session: &SessionId,
        from: u64,
        limit: usize,
    ) -> Result<Page<SessionEvent>> {
        // An event's position is its `seq`, so a page is one range of the primary key.
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (rows, total) = self.read("load session", |tx| {
            let rows = tx.query(
                concat!(
                    "SELECT ",
                    event_columns!(),
                    " FROM session_events WHERE session = $1 \
                     AND seq >= $2 ORDER BY seq LIMIT $3"
                ),
                &[&session.as_str(), &from, &limit],
            )?;
            let total: i64 = tx
                .query_one(
                    "SELECT coalesce(max(seq) + 1, 0) FROM session_events WHERE session = $1",
                    &[&session.as_str()],
                )?
                .get(0);
            Ok((rows, count(total)))
        })?;
        if total == 0 {
            return Err(session_not_found(session));
        }
        let items = rows.iter().map(event_of).collect::<Result<_>>()?;
        Ok(Page { items, total })
    }

    fn session_list(&self) -> Result<Vec<SessionSummary>> {
        let rows = self.read_one("list sessions", |one| {
            Ok(one.rows(
                "SELECT session, count(*), \
                        sum(octet_length(kind) + octet_length(payload))::bigint, \
                        max(written_at) \
                 FROM session_events GROUP BY session ORDER BY session COLLATE \"C\"",
                &[],
            )?)
        })?;
        rows.into_iter()
            .map(|row| {
                let id = SessionId::new(row.get::<_, String>(0))
                    .map_err(|e| Error::corrupt("session_events table", e.to_string()))?;
                Ok(SessionSummary {
                    id,
                    events: count(row.get(1)),
                    bytes: count(row.get(2)),
                    last_write: row.get::<_, Option<i64>>(3).map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        provenance_fits(|| format!("forget of session {session}"), by)?;
        self.write("forget session", |tx| {
            lock_session(tx, session)?;
            let gone = tx.execute(
                "DELETE FROM session_events WHERE session = $1",
                &[&session.as_str()],
            )?;
            let detail = forget_detail(&[(gone, "event", "events")]);
            let item = session.as_str();
            audit_in(tx, "turns", Action::Forget, NO_SCOPE, item, by, &detail)?;
            Ok(gone)
        })
    }

    fn session_forget_by(&self, writer: &Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        provenance_fits(|| "forget of sessions by writer".to_owned(), by)?;
        let source = writer.source.as_ref().map(ToString::to_string);
        check_texts(
            || "session writer".to_owned(),
            [
                ("source", source.as_deref().unwrap_or_default()),
                ("session", writer.session.as_deref().unwrap_or_default()),
                ("client", writer.client.as_deref().unwrap_or_default()),
            ],
        )?;
        self.write("forget sessions by writer", |tx| {
            // The sessions to forget, locked in byte order so that two forgets cannot
            // deadlock.
            let mut names: Vec<String> = tx
                .query(
                    "SELECT DISTINCT session FROM session_events WHERE source IS NOT NULL \
                     AND ($1::text IS NULL OR source = $1) \
                     AND ($2::text IS NULL OR source_session = $2) \
                     AND ($3::text IS NULL OR client = $3)",
                    &[&source, &writer.session, &writer.client],
                )?
                .into_iter()
                .map(|row| row.get(0))
                .collect();
            names.sort();
            let mut gone = Vec::with_capacity(names.len());
            for name in names {
                let session = SessionId::new(name.as_str())
                    .map_err(|e| Error::corrupt("session_events table", e.to_string()))?;
                lock_session(tx, &session)?;
                let n = tx.execute(
                    "DELETE FROM session_events WHERE session = $1",
                    &[&session.as_str()],
                )?;
                let detail = forget_detail(&[(n, "event", "events")]);
                audit_in(tx, "turns", Action::Forget, NO_SCOPE, &name, by, &detail)?;
                gone.push((session, n));
            }
            Ok(gone)
        })
    }
}
