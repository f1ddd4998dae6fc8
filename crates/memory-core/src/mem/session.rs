//! [`SessionStore`] for [`InMemoryStore`].

use crate::error::Result;
use crate::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use crate::mem::{InMemoryStore, lock};
use crate::names::SessionId;
use crate::provenance::Provenance;
use crate::store::session::{
    SessionAppended, SessionEvent, SessionStore, SessionSummary, append_at_outcome,
    session_already_exists, session_not_found, validate_new_session,
};
use crate::time::{Clock, Timestamp};

/// One session's events and when the last of them was appended.
#[derive(Debug, Default)]
pub(crate) struct SessionLog {
    events: Vec<SessionEvent>,
    last_write: Option<Timestamp>,
}

impl SessionLog {
    /// Appends `events` at `at`: each writer keeps the store's time, as a store on disk
    /// keeps it.
    fn append(&mut self, events: &[SessionEvent], at: Timestamp) {
        if !events.is_empty() {
            self.events.extend(events.iter().map(|event| {
                let mut event = event.clone();
                if let Some(writer) = &mut event.written_by {
                    writer.at = at;
                }
                event
            }));
            self.last_write = Some(at);
        }
    }
}

impl InMemoryStore {
    /// Appends the entries that open the runs of writes among `events`, appended to
    /// `session` at `at`; called with the sessions' lock held.
    fn audit_events(&self, session: &SessionId, events: &[SessionEvent], at: Timestamp) {
        for run in WriteRun::event_runs(session.as_str(), events, at) {
            self.audit_write_run(&run);
        }
    }
}

impl SessionStore for InMemoryStore {
    fn session_append(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        // Validate everything before touching the map: all or nothing.
        events.iter().try_for_each(SessionEvent::validate)?;
        let mut sessions = lock(&self.sessions);
        let log = sessions.entry(session.clone()).or_default();
        let now = self.clock.now();
        log.append(events, now);
        self.audit_events(session, events, now);
        let len = log.events.len() as u64;
        if log.events.is_empty() {
            sessions.remove(session);
        }
        Ok(len)
    }

    fn session_append_at(
        &self,
        session: &SessionId,
        expected_len: u64,
        events: &[SessionEvent],
    ) -> Result<SessionAppended> {
        events.iter().try_for_each(SessionEvent::validate)?;
        let mut sessions = lock(&self.sessions);
        let log = sessions
            .get(session)
            .map_or(&[][..], |log| log.events.as_slice());
        let held = log.len() as u64;
        if held != expected_len {
            let from = usize::try_from(expected_len)
                .unwrap_or(usize::MAX)
                .min(log.len());
            let to = from.saturating_add(events.len()).min(log.len());
            return append_at_outcome(session, expected_len, held, &log[from..to], events);
        }
        if !events.is_empty() {
            let now = self.clock.now();
            sessions
                .entry(session.clone())
                .or_default()
                .append(events, now);
            self.audit_events(session, events, now);
        }
        Ok(SessionAppended {
            events: held + events.len() as u64,
            already_stored: false,
        })
    }

    fn session_create(&self, session: &SessionId, events: &[SessionEvent]) -> Result<u64> {
        validate_new_session(session, events)?;
        let mut sessions = lock(&self.sessions);
        if let Some(held) = sessions.get(session) {
            return Err(session_already_exists(session, held.events.len() as u64));
        }
        let mut log = SessionLog::default();
        let now = self.clock.now();
        log.append(events, now);
        self.audit_events(session, events, now);
        sessions.insert(session.clone(), log);
        Ok(events.len() as u64)
    }

    fn session_load(&self, session: &SessionId) -> Result<Vec<SessionEvent>> {
        lock(&self.sessions)
            .get(session)
            .map(|log| log.events.clone())
            .ok_or_else(|| session_not_found(session))
    }

    fn session_list(&self) -> Result<Vec<SessionSummary>> {
        Ok(lock(&self.sessions)
            .iter()
            .map(|(id, log)| SessionSummary {
                id: id.clone(),
                events: log.events.len() as u64,
                bytes: log
                    .events
                    .iter()
                    .map(|e| (e.kind.len() + e.payload.len()) as u64)
                    .sum(),
                last_write: log.last_write,
            })
            .collect())
    }

    fn session_forget(&self, session: &SessionId, by: &Provenance) -> Result<u64> {
        let mut sessions = lock(&self.sessions);
        let gone = (sessions.remove(session)).map_or(0, |log| log.events.len() as u64);
        let detail = forget_detail(&[(gone, "event", "events")]);
        self.audit_in(
            "turns",
            Action::Forget,
            NO_SCOPE,
            session.as_str(),
            by,
            detail,
        );
        drop(sessions);
        Ok(gone)
    }

    fn session_forget_by(&self, writer: &Writer, by: &Provenance) -> Result<Vec<(SessionId, u64)>> {
        writer.check()?;
        let mut sessions = lock(&self.sessions);
        let mut doomed: Vec<SessionId> = sessions
            .iter()
            .filter(|(_, log)| {
                log.events
                    .iter()
                    .any(|e| e.written_by.as_ref().is_some_and(|p| writer.matches(p)))
            })
            .map(|(session, _)| session.clone())
            .collect();
        doomed.sort();
        let mut gone = Vec::with_capacity(doomed.len());
        for session in doomed {
            let n = (sessions.remove(&session)).map_or(0, |log| log.events.len() as u64);
            let detail = forget_detail(&[(n, "event", "events")]);
            self.audit_in(
                "turns",
                Action::Forget,
                NO_SCOPE,
                session.as_str(),
                by,
                detail,
            );
            gone.push((session, n));
        }
        drop(sessions);
        Ok(gone)
    }
}
