//! [`NoteStore`] and [`AuditStore`] on the `notes` table: one row per note, keyed by
//! `(scope, path)` with paths in byte order (migration 6). The row is the note's newest
//! version with its evidence; older versions are rows of `note_versions`, which refer to the
//! note's `id` and go with it, and every write, review and forget appends to `audit` in the
//! same transaction (migration 8). Writers of one scope hold its advisory lock, so the checks
//! of a write (what is at the path, the scope's totals) and the write itself are one step.
//!
//! A forgotten or rejected text leaves the server's files when PostgreSQL's (auto)vacuum
//! reuses the space, as every forget on PostgreSQL does (see the crate's documentation).

use agent_memory_core::evidence::{
    Action, AuditEntry, AuditFilter, Evidence, NO_SCOPE, STORE_MEMORY, Status, Vouch, WriteRun,
    Writer, forget_detail, setting_detail, write_detail,
};
use agent_memory_core::store::AuditStore;
use agent_memory_core::store::notes::{
    Decision, Forgotten, HeldNote, Left, NOTE_CHANGED, NOTE_EXISTS, NOTE_HELD, NOTE_INTO_ITSELF,
    NOTE_IS_DIRECTORY, NOTE_NOT_HELD, NOTE_UNDER_NOTE, NoteFile, NoteHit, NoteLimits, NotePath,
    NoteRecord, NoteScopeSummary, NoteStore, NoteVersion, forget_plan, matches_terms,
    note_conflict, note_not_found,
};
use agent_memory_core::{
    Clock, Error, MetaKey, Page, Provenance, Result, Scope, Source, Timestamp,
};
use postgres::Row;

use crate::{Fail, PostgresStore, Single, Tx, check_texts, count, lock};

fn lock_scope(tx: &mut Tx<'_>, scope: &str) -> std::result::Result<(), Fail> {
    Ok(tx.advisory_lock(lock::NOTES, scope, true)?)
}

/// The evidence in the six columns from `at`: `source, session, client, written_at, status,
/// reasons`.
fn evidence_at(row: &Row, at: usize) -> Result<Evidence> {
    let corrupt = |e: Error| Error::corrupt("notes table", e.to_string());
    let source: String = row.get(at);
    let status: String = row.get(at + 4);
    Ok(Evidence {
        provenance: Provenance {
            source: Source::parse(&source).map_err(corrupt)?,
            session: row.get(at + 1),
            client: row.get(at + 2),
            at: Timestamp::from_millis(row.get(at + 3)),
        },
        status: Status::parse(&status).map_err(corrupt)?,
        reasons: row.get(at + 5),
    })
}

/// A version from the columns `version, text` and the evidence after them.
fn version_of(row: &Row) -> Result<NoteVersion> {
    Ok(NoteVersion {
        version: count(row.get(0)),
        text: row.get(1),
        evidence: evidence_at(row, 2)?,
    })
}

/// Every version of the note at `(scope, path)`, oldest first: its older rows, then the
/// note's own. One statement.
const HISTORY_AT: &str = "SELECT v.version, v.text, v.source, v.session, v.client, \
       v.written_at, v.status, v.reasons \
     FROM notes n JOIN note_versions v ON v.note_id = n.id WHERE n.scope = $1 AND n.path = $2 \
     UNION ALL \
     SELECT version, text, source, session, client, written_at, status, reasons \
     FROM notes WHERE scope = $1 AND path = $2 \
     ORDER BY 1";

/// Every version of the note `id`, oldest first.
fn versions_of(tx: &mut Tx<'_>, id: i64) -> std::result::Result<Vec<NoteVersion>, Fail> {
    let rows = tx.query(
        "SELECT version, text, source, session, client, written_at, status, reasons \
         FROM note_versions WHERE note_id = $1 \
         UNION ALL \
         SELECT version, text, source, session, client, written_at, status, reasons \
         FROM notes WHERE id = $1 \
         ORDER BY 1",
        &[&id],
    )?;
    Ok(rows.iter().map(version_of).collect::<Result<Vec<_>>>()?)
}

/// Makes `version` (a row of `note_versions`) the note's own row again, and drops its row
/// there.
fn fall_back(tx: &mut Tx<'_>, id: i64, version: i64) -> std::result::Result<(), Fail> {
    tx.execute(
        "WITH before AS (DELETE FROM note_versions WHERE note_id = $1 AND version = $2 \
                         RETURNING *) \
         UPDATE notes n SET text = b.text, bytes = b.bytes, version = b.version, \
           source = b.source, session = b.session, client = b.client, \
           written_at = b.written_at, status = b.status, reasons = b.reasons \
         FROM before b WHERE n.id = $1",
        &[&id, &version],
    )?;
    Ok(())
}

/// Records a write of `scope` at `now` by the store's clock (its last write, `note_writes`)
/// and appends its entry to the audit trail, in one statement. The statement first takes the
/// trail's advisory lock (in a materialized subquery, before the row draws its `seq`), held
/// until the transaction ends, so entries take their numbers in the order they commit: a
/// reader paging past a `seq` never misses one that commits later. The lock's key is the
/// store's schema (the first of the connection's `search_path`), so memories in other
/// schemas never wait on it. Writers take it after their scope's lock, and never a scope's
/// lock after it, so the two cannot deadlock.
fn record(
    tx: &mut Tx<'_>,
    now: Timestamp,
    action: Action,
    scope: &str,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> std::result::Result<(), Fail> {
    let entry = Entry {
        memory: "notes",
        action,
        scope,
        item,
        detail,
    };
    append_audit(tx, &entry, by, Some(now))
}

/// Keeps `vouches` (checked) by `by`, each with its `approve` entry, in the caller's
/// transaction; returns how many are new.
pub(crate) fn keep_vouches(
    tx: &mut Tx<'_>,
    vouches: &[Vouch<'_>],
    by: &Provenance,
) -> std::result::Result<usize, Fail> {
    let mut new = 0;
    for vouch in vouches {
        new += tx.execute(
            "INSERT INTO vouches (memory, container, digest) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
            &[&vouch.memory, &vouch.container, &vouch.digest],
        )?;
        audit_in(
            tx,
            vouch.memory,
            Action::Approve,
            NO_SCOPE,
            vouch.container,
            by,
            &vouch.detail(),
        )?;
    }
    Ok(usize::try_from(new).unwrap_or(usize::MAX))
}

/// Appends an entry about an item of `memory` (not a note: [`record`] also stamps the notes'
/// write time) to the audit trail, numbered under the trail's lock as [`record`] numbers.
pub(crate) fn audit_in(
    tx: &mut Tx<'_>,
    memory: &str,
    action: Action,
    scope: &str,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> std::result::Result<(), Fail> {
    let entry = Entry {
        memory,
        action,
        scope,
        item,
        detail,
    };
    append_audit(tx, &entry, by, None)
}

/// Appends the entry that opens `run` to the audit trail, unless the newest entry about its
/// item is a write of the same run (one lookup on the `audit_item` index); in the caller's
/// transaction, which holds the lock of the run's item.
pub(crate) fn audit_write_run(
    tx: &mut Tx<'_>,
    run: &WriteRun<'_>,
) -> std::result::Result<(), Fail> {
    let newest = tx.query_opt(NEWEST_ENTRY, &[&run.memory, &run.scope, &run.item])?;
    if newest.is_some_and(|row| run.continued_by(row.get(0), row.get(1), row.get(2), row.get(3))) {
        return Ok(());
    }
    audit_in(
        tx,
        run.memory,
        Action::Write,
        run.scope,
        run.item,
        &run.by,
        run.detail,
    )
}

/// The newest audit entry about item `$3` of memory `$1` in scope `$2`: its action and
/// writer.
const NEWEST_ENTRY: &str = "SELECT action, source, session, client FROM audit \
     WHERE memory = $1 AND scope = $2 AND item = $3 ORDER BY seq DESC LIMIT 1";

/// What an audit entry records, besides who did it.
struct Entry<'a> {
    memory: &'a str,
    action: Action,
    scope: &'a str,
    item: &'a str,
    detail: &'a str,
}

/// Appends `entry` by `by` to the audit trail under the trail's lock and, with `notes_written`,
/// stamps the scope's last note write with it, in one statement.
fn append_audit(
    tx: &mut Tx<'_>,
    entry: &Entry<'_>,
    by: &Provenance,
    notes_written: Option<Timestamp>,
) -> std::result::Result<(), Fail> {
    tx.execute(
        "WITH locked AS MATERIALIZED ( \
           SELECT count(pg_advisory_xact_lock($9::integer, hashtext(current_schema()))) AS held), \
         stamped AS ( \
           INSERT INTO note_writes (scope, last_write) \
           SELECT $3, $10::bigint WHERE $10::bigint IS NOT NULL \
           ON CONFLICT (scope) DO UPDATE SET last_write = excluded.last_write) \
         INSERT INTO audit (at, action, memory, scope, item, source, session, client, detail) \
         SELECT $1::bigint, $2::text, $11::text, $3::text, $4::text, $5::text, $6::text, \
           $7::text, $8::text FROM locked",
        &[
            &by.at.as_millis(),
            &entry.action.as_str(),
            &entry.scope,
            &entry.item,
            &by.source.to_string(),
            &by.session,
            &by.client,
            &entry.detail,
            &lock::AUDIT,
            &notes_written.map(Timestamp::as_millis),
            &entry.memory,
        ],
    )?;
    Ok(())
}

/// Refuses a new note of `bytes` at `path`: the conflict of a taken path, or the scope's limit
/// it would pass. The caller holds the scope's lock.
fn check_new_note(
    tx: &mut Tx<'_>,
    scope: &Scope,
    path: &NotePath,
    bytes: u64,
    limits: &NoteLimits,
) -> std::result::Result<(), Fail> {
    if let Some(reason) = placement_conflict(tx, scope, path)? {
        return Err(note_conflict(path, reason).into());
    }
    let (notes, total) = totals(tx, scope)?;
    Ok(limits.check_scope(scope, notes + 1, total + bytes)?)
}

/// Inserts the row of a new note whose newest version is number `version`, `text` written as
/// `evidence` says; returns its id.
fn insert_note(
    tx: &mut Tx<'_>,
    scope: &Scope,
    path: &NotePath,
    (version, text, evidence): (u64, &str, &Evidence),
) -> std::result::Result<i64, Fail> {
    let by = &evidence.provenance;
    Ok(tx
        .query_one(
            "INSERT INTO notes (scope, path, text, bytes, version, source, session, client, \
               written_at, status, reasons) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
            &[
                &scope.as_str(),
                &path.as_str(),
                &text,
                &(text.len() as i64),
                &(version as i64),
                &by.source.to_string(),
                &by.session,
                &by.client,
                &by.at.as_millis(),
                &evidence.status.as_str(),
                &evidence.reasons,
            ],
        )?
        .get(0))
}

/// What already is at `path`, as the conflict of writing a note there.
fn placement_conflict(
    tx: &mut Tx<'_>,
    scope: &Scope,
    path: &NotePath,
) -> std::result::Result<Option<&'static str>, Fail> {
    let (lower, upper) = path.below_bounds();
    let ancestors: Vec<&str> = path.ancestors().collect();
    let row = tx.query_one(
        "SELECT \
           (SELECT status FROM notes WHERE scope = $1 AND path = $2), \
           EXISTS (SELECT 1 FROM notes WHERE scope = $1 AND path >= $3 AND path < $4), \
           EXISTS (SELECT 1 FROM notes WHERE scope = $1 AND path = ANY($5::text[]))",
        &[&scope.as_str(), &path.as_str(), &lower, &upper, &ancestors],
    )?;
    let at_path: Option<String> = row.get(0);
    Ok(if let Some(status) = at_path {
        Some(if status == Status::Quarantined.as_str() {
            NOTE_HELD
        } else {
            NOTE_EXISTS
        })
    } else if row.get(1) {
        Some(NOTE_IS_DIRECTORY)
    } else if row.get(2) {
        Some(NOTE_UNDER_NOTE)
    } else {
        None
    })
}

/// A scope's notes and bytes, held ones included.
fn totals(tx: &mut Tx<'_>, scope: &Scope) -> std::result::Result<(u64, u64), Fail> {
    let row = tx.query_one(
        "SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM notes WHERE scope = $1",
        &[&scope.as_str()],
    )?;
    Ok((count(row.get(0)), count(row.get(1))))
}

fn text_fits(path: &NotePath, text: &str, limits: &NoteLimits) -> Result<()> {
    limits.check_note(path, text.len() as u64)?;
    check_texts(|| format!("note {path}"), [("text", text)])
}

/// The writer columns (source, session, client) of a batch of rows, one array each, for an
/// `unnest` insert; a row without a writer has NULL in all three.
pub(crate) struct WriterArrays<'a> {
    pub(crate) sources: Vec<Option<String>>,
    pub(crate) sessions: Vec<Option<&'a str>>,
    pub(crate) clients: Vec<Option<&'a str>>,
}

impl<'a> WriterArrays<'a> {
    /// The arrays of `writers`, one per row in order.
    pub(crate) fn of(writers: impl Iterator<Item = Option<&'a Provenance>>) -> Self {
        let mut arrays = WriterArrays {
            sources: Vec::new(),
            sessions: Vec::new(),
            clients: Vec::new(),
        };
        for by in writers {
            arrays.sources.push(by.map(|b| b.source.to_string()));
            arrays.sessions.push(by.and_then(|b| b.session.as_deref()));
            arrays.clients.push(by.and_then(|b| b.client.as_deref()));
        }
        arrays
    }
}

/// The writer stored in `row`'s columns `first`, `first + 1` and `first + 2` (source,
/// session, client), written `at`; `None` when it has no source. A source that does not read
/// is `table`'s corruption.
pub(crate) fn stored_writer(
    row: &Row,
    first: usize,
    at: Timestamp,
    table: &str,
) -> Result<Option<Provenance>> {
    row.get::<_, Option<&str>>(first)
        .map(|source| {
            Ok(Provenance {
                source: Source::parse(source)
                    .map_err(|e| Error::corrupt(format!("{table}.source"), e.to_string()))?,
                session: row.get(first + 1),
                client: row.get(first + 2),
                at,
            })
        })
        .transpose()
}

/// Refuses a provenance PostgreSQL cannot store (a NUL character in one of its texts).
pub(crate) fn provenance_fits(item: impl Fn() -> String, by: &Provenance) -> Result<()> {
    let source = by.source.to_string();
    check_texts(
        item,
        [
            ("source", source.as_str()),
            ("session", by.session.as_deref().unwrap_or_default()),
            ("client", by.client.as_deref().unwrap_or_default()),
        ],
    )
}

/// Refuses evidence PostgreSQL cannot store.
fn evidence_fits(path: &NotePath, evidence: &Evidence) -> Result<()> {
    provenance_fits(|| format!("note {path}"), &evidence.provenance)?;
    check_texts(
        || format!("note {path}"),
        evidence.reasons.iter().map(|r| ("reason", r.as_str())),
    )
}

/// The notes holding a version `writer` wrote (the newest or an older one), in the scopes
/// `$4`, ordered by scope and path: `$1`, `$2`, `$3` are the source, session and client, each
/// `NULL` when the filter does not name it. The filter only narrows; [`Writer::matches`]
/// decides, as in every store.
const WRITTEN_BY: &str = "SELECT n.id, n.scope, n.path FROM notes n \
     WHERE n.scope = ANY($4::text[]) AND ( \
       (($1::text IS NULL OR n.source = $1) AND ($2::text IS NULL OR n.session = $2) \
        AND ($3::text IS NULL OR n.client = $3)) \
       OR EXISTS (SELECT 1 FROM note_versions v WHERE v.note_id = n.id \
         AND ($1::text IS NULL OR v.source = $1) AND ($2::text IS NULL OR v.session = $2) \
         AND ($3::text IS NULL OR v.client = $3))) \
     ORDER BY n.scope COLLATE \"C\", n.path";

/// The scopes holding [`WRITTEN_BY`]'s notes, among every scope.
const SCOPES_WRITTEN_BY: &str = "SELECT DISTINCT n.scope FROM notes n \
     WHERE ( \
       (($1::text IS NULL OR n.source = $1) AND ($2::text IS NULL OR n.session = $2) \
        AND ($3::text IS NULL OR n.client = $3)) \
       OR EXISTS (SELECT 1 FROM note_versions v WHERE v.note_id = n.id \
         AND ($1::text IS NULL OR v.source = $1) AND ($2::text IS NULL OR v.session = $2) \
         AND ($3::text IS NULL OR v.client = $3)))";

impl NoteStore for PostgresStore {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        let row = self.read_one("read note", |one| {
            Ok(one.row(
                "SELECT text FROM notes WHERE scope = $1 AND path = $2 \
                 AND status <> 'quarantined'",
                &[&scope.as_str(), &path.as_str()],
            )?)
        })?;
        Ok(row.map(|row| row.get(0)))
    }

    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        let (lower, upper) = dir.map(NotePath::below_bounds).unwrap_or_default();
        let dir_text = dir.map(NotePath::as_str).unwrap_or_default();
        let rows = self.read_one("list notes", |one| {
            Ok(match dir {
                None => one.rows(
                    "SELECT path, bytes FROM notes WHERE scope = $1 \
                     AND status <> 'quarantined' ORDER BY path",
                    &[&scope.as_str()],
                )?,
                // One range of the primary key: the row at `dir` and those below it, with
                // the siblings that sort between them (`dir-x`, `dir.md`) filtered out.
                Some(_) => one.rows(
                    "SELECT path, bytes FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND (path = $2 OR path >= $3) AND status <> 'quarantined' ORDER BY path",
                    &[&scope.as_str(), &dir_text, &lower, &upper],
                )?,
            })
        })?;
        rows.into_iter()
            .map(|row| {
                Ok(NoteFile {
                    path: NotePath::stored(row.get(0))?,
                    bytes: count(row.get(1)),
                })
            })
            .collect()
    }

    fn note_list_page(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        after: Option<&NotePath>,
        limit: usize,
    ) -> Result<Page<NoteFile>> {
        // One range of the primary key, as `note_list` reads it, from past the cursor on;
        // `path` is `COLLATE "C"`, so the key's order is byte order. With no directory, the
        // range is the whole scope (every path sorts after the empty text and before none).
        let (lower, upper) = dir.map(NotePath::below_bounds).unwrap_or_default();
        let dir_text = dir.map(NotePath::as_str).unwrap_or_default();
        let upper = dir.map(|_| upper);
        let after = after.map(NotePath::as_str);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (rows, total) = self.read("list notes", |tx| {
            let rows = tx.query(
                "SELECT path, bytes FROM notes WHERE scope = $1 AND path >= $2 \
                 AND ($4::text IS NULL OR path < $4) AND (path = $2 OR path >= $3) \
                 AND ($5::text IS NULL OR path > $5) AND status <> 'quarantined' \
                 ORDER BY path LIMIT $6",
                &[&scope.as_str(), &dir_text, &lower, &upper, &after, &limit],
            )?;
            let total: i64 = tx
                .query_one(
                    "SELECT count(*) FROM notes WHERE scope = $1 AND path >= $2 \
                     AND ($4::text IS NULL OR path < $4) AND (path = $2 OR path >= $3) \
                     AND status <> 'quarantined'",
                    &[&scope.as_str(), &dir_text, &lower, &upper],
                )?
                .get(0);
            Ok((rows, count(total)))
        })?;
        let items = rows
            .into_iter()
            .map(|row| {
                Ok(NoteFile {
                    path: NotePath::stored(row.get(0))?,
                    bytes: count(row.get(1)),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { items, total })
    }

    fn note_create(
        &self,
        scope: &Scope,
        path: &NotePath,
        text: &str,
        evidence: &Evidence,
        limits: &NoteLimits,
    ) -> Result<()> {
        text_fits(path, text, limits)?;
        evidence_fits(path, evidence)?;
        self.write("create note", |tx| {
            lock_scope(tx, scope.as_str())?;
            check_new_note(tx, scope, path, text.len() as u64, limits)?;
            insert_note(tx, scope, path, (1, text, evidence))?;
            let detail = write_detail(1, evidence.status);
            record(
                tx,
                self.clock.now(),
                Action::Write,
                scope.as_str(),
                path.as_str(),
                &evidence.provenance,
                &detail,
            )
        })
    }

    fn note_replace(
        &self,
        scope: &Scope,
        path: &NotePath,
        expected: &str,
        text: &str,
        evidence: &Evidence,
        limits: &NoteLimits,
    ) -> Result<()> {
        text_fits(path, text, limits)?;
        evidence_fits(path, evidence)?;
        let by = &evidence.provenance;
        let source = by.source.to_string();
        let keep = i64::try_from(limits.max_versions.max(1)).unwrap_or(i64::MAX);
        self.write("replace note", |tx| {
            lock_scope(tx, scope.as_str())?;
            let row = tx
                .query_opt(
                    "SELECT id, text, version FROM notes WHERE scope = $1 AND path = $2 \
                     AND status <> 'quarantined'",
                    &[&scope.as_str(), &path.as_str()],
                )?
                .ok_or_else(|| note_not_found(path))?;
            let (id, current, version): (i64, String, i64) = (row.get(0), row.get(1), row.get(2));
            if current != expected {
                return Err(note_conflict(path, NOTE_CHANGED).into());
            }
            let (notes, bytes) = totals(tx, scope)?;
            let after = (bytes + text.len() as u64).saturating_sub(current.len() as u64);
            limits.check_scope(scope, notes, after)?;
            let next = version + 1;
            // In one statement, the newest version becomes an older one, the oldest past the
            // limit goes, and the row takes the new text. Its parts see the table as it was
            // before the statement, so the trim cannot see the version just archived: with a
            // limit of 1 that version is not archived at all.
            tx.execute(
                "WITH archived AS ( \
                   INSERT INTO note_versions (note_id, version, text, bytes, source, session, \
                     client, written_at, status, reasons) \
                   SELECT id, version, text, bytes, source, session, client, written_at, \
                     status, reasons FROM notes WHERE id = $1 AND $11::bigint > 1), \
                 trimmed AS ( \
                   DELETE FROM note_versions \
                   WHERE note_id = $1 AND version <= $4::bigint - $11::bigint) \
                 UPDATE notes SET text = $2, bytes = $3, version = $4, source = $5, \
                   session = $6, client = $7, written_at = $8, status = $9, reasons = $10 \
                 WHERE id = $1",
                &[
                    &id,
                    &text,
                    &(text.len() as i64),
                    &next,
                    &source,
                    &by.session,
                    &by.client,
                    &by.at.as_millis(),
                    &evidence.status.as_str(),
                    &evidence.reasons,
                    &keep,
                ],
            )?;
            let detail = write_detail(count(next), evidence.status);
            record(
                tx,
                self.clock.now(),
                Action::Write,
                scope.as_str(),
                path.as_str(),
                by,
                &detail,
            )
        })
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64> {
        provenance_fits(|| format!("delete of note {path}"), by)?;
        let (lower, upper) = path.below_bounds();
        self.write("delete notes", |tx| {
            lock_scope(tx, scope.as_str())?;
            // A held note at `path` itself is not there for a delete; below a directory
            // it goes with the rest. Its versions go with it (ON DELETE CASCADE).
            let deleted = tx.execute(
                "DELETE FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                 AND ((path = $2 AND status <> 'quarantined') OR path >= $3)",
                &[&scope.as_str(), &path.as_str(), &lower, &upper],
            )?;
            if deleted > 0 {
                let detail = format!("{deleted} notes");
                record(
                    tx,
                    self.clock.now(),
                    Action::Delete,
                    scope.as_str(),
                    path.as_str(),
                    by,
                    &detail,
                )?;
            }
            Ok(deleted)
        })
    }

    fn note_rename(
        &self,
        scope: &Scope,
        from: &NotePath,
        to: &NotePath,
        by: &Provenance,
    ) -> Result<u64> {
        provenance_fits(|| format!("rename of note {from}"), by)?;
        let (lower, upper) = from.below_bounds();
        self.write("rename notes", |tx| {
            lock_scope(tx, scope.as_str())?;
            let moving: Vec<String> = tx
                .query(
                    "SELECT path FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND ((path = $2 AND status <> 'quarantined') OR path >= $3) ORDER BY path",
                    &[&scope.as_str(), &from.as_str(), &lower, &upper],
                )?
                .into_iter()
                .map(|row| row.get(0))
                .collect();
            if moving.is_empty() {
                return Err(note_not_found(from).into());
            }
            if to.is_at_or_below(from) {
                return Err(note_conflict(to, NOTE_INTO_ITSELF).into());
            }
            if let Some(reason) = placement_conflict(tx, scope, to)? {
                return Err(note_conflict(to, reason).into());
            }
            let targets = moving
                .iter()
                .map(|p| Ok(NotePath::stored(p.clone())?.moved(from, to)?.into_string()))
                .collect::<Result<Vec<String>>>()?;
            // The versions refer to the note's `id`, so they move with it untouched.
            tx.execute(
                "UPDATE notes n SET path = m.new FROM unnest($2::text[], $3::text[]) AS m(old, new) \
                 WHERE n.scope = $1 AND n.path = m.old",
                &[&scope.as_str(), &moving, &targets],
            )?;
            let detail = format!("to {to}, {} notes", moving.len());
            record(tx, self.clock.now(), Action::Rename, scope.as_str(), from.as_str(), by, &detail)?;
            Ok(moving.len() as u64)
        })
    }

    fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>> {
        let rows = self.read_one("read note history", |one| {
            Ok(one.rows(HISTORY_AT, &[&scope.as_str(), &path.as_str()])?)
        })?;
        rows.iter().map(version_of).collect()
    }

    fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>> {
        let scope = scope.map(Scope::as_str);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.read_one("list held notes", |one| {
            Ok(one.rows(
                "SELECT scope, path, version, text, source, session, client, written_at, \
                   status, reasons FROM notes \
                 WHERE status = 'quarantined' AND ($1::text IS NULL OR scope = $1) \
                 ORDER BY scope COLLATE \"C\", path LIMIT $2",
                &[&scope, &limit],
            )?)
        })?;
        rows.into_iter()
            .map(|row| {
                Ok(HeldNote {
                    scope: Scope::new(row.get::<_, String>(0))
                        .map_err(|e| Error::corrupt("notes table", e.to_string()))?,
                    path: NotePath::stored(row.get(1))?,
                    version: NoteVersion {
                        version: count(row.get(2)),
                        text: row.get(3),
                        evidence: evidence_at(&row, 4)?,
                    },
                })
            })
            .collect()
    }

    fn note_review(
        &self,
        scope: &Scope,
        path: &NotePath,
        version: u64,
        decision: Decision,
        by: &Provenance,
    ) -> Result<()> {
        provenance_fits(|| format!("review of note {path}"), by)?;
        self.write("review note", |tx| {
            lock_scope(tx, scope.as_str())?;
            let row = tx
                .query_opt(
                    "SELECT id, version, status FROM notes WHERE scope = $1 AND path = $2",
                    &[&scope.as_str(), &path.as_str()],
                )?
                .ok_or_else(|| note_not_found(path))?;
            let (id, newest, status): (i64, i64, String) = (row.get(0), row.get(1), row.get(2));
            if count(newest) != version || status != Status::Quarantined.as_str() {
                return Err(note_conflict(path, NOTE_NOT_HELD).into());
            }
            let action = match decision {
                Decision::Approve => {
                    tx.execute("UPDATE notes SET status = 'approved' WHERE id = $1", &[&id])?;
                    Action::Approve
                }
                Decision::Reject => {
                    let before: Option<i64> = tx
                        .query_one(
                            "SELECT max(version) FROM note_versions WHERE note_id = $1",
                            &[&id],
                        )?
                        .get(0);
                    match before {
                        Some(before) => fall_back(tx, id, before)?,
                        None => {
                            tx.execute("DELETE FROM notes WHERE id = $1", &[&id])?;
                        }
                    }
                    Action::Reject
                }
            };
            let detail = format!("version {version}");
            record(
                tx,
                self.clock.now(),
                action,
                scope.as_str(),
                path.as_str(),
                by,
                &detail,
            )
        })
    }

    fn note_export(&self, scope: &Scope) -> Result<Vec<NoteRecord>> {
        // One statement: the notes and their versions as of one snapshot.
        let rows = self.read_one("export notes", |one| {
            Ok(one.rows(
                "SELECT n.path, v.version, v.text, v.source, v.session, v.client, \
                   v.written_at, v.status, v.reasons \
                 FROM notes n CROSS JOIN LATERAL ( \
                   SELECT version, text, source, session, client, written_at, status, reasons \
                   FROM note_versions WHERE note_id = n.id \
                   UNION ALL \
                   SELECT n.version, n.text, n.source, n.session, n.client, n.written_at, \
                     n.status, n.reasons) v \
                 WHERE n.scope = $1 ORDER BY n.path, v.version",
                &[&scope.as_str()],
            )?)
        })?;
        let mut records: Vec<NoteRecord> = Vec::new();
        for row in rows {
            let path: String = row.get(0);
            let version = NoteVersion {
                version: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
                text: row.get(2),
                evidence: evidence_at(&row, 3)?,
            };
            match records.last_mut() {
                Some(last) if last.path.as_str() == path => last.versions.push(version),
                _ => records.push(NoteRecord {
                    path: NotePath::stored(path)?,
                    versions: vec![version],
                }),
            }
        }
        Ok(records)
    }

    fn note_import(
        &self,
        scope: &Scope,
        records: &[NoteRecord],
        limits: &NoteLimits,
        by: &Provenance,
    ) -> Result<()> {
        for note in records {
            note.check(limits)?;
            for v in &note.versions {
                text_fits(&note.path, &v.text, limits)?;
                evidence_fits(&note.path, &v.evidence)?;
            }
        }
        provenance_fits(|| "import of notes".to_owned(), by)?;
        if records.is_empty() {
            return Ok(());
        }
        self.write("import notes", |tx| {
            lock_scope(tx, scope.as_str())?;
            for note in records {
                let path = &note.path;
                let Some(newest) = note.newest() else {
                    continue;
                };
                check_new_note(tx, scope, path, newest.text.len() as u64, limits)?;
                let newest = (newest.version, newest.text.as_str(), &newest.evidence);
                let id = insert_note(tx, scope, path, newest)?;
                for older in &note.versions[..note.versions.len() - 1] {
                    let e = &older.evidence;
                    tx.execute(
                        "INSERT INTO note_versions (note_id, version, text, bytes, source, \
                           session, client, written_at, status, reasons) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
                        &[
                            &id,
                            &(older.version as i64),
                            &older.text,
                            &(older.text.len() as i64),
                            &e.provenance.source.to_string(),
                            &e.provenance.session,
                            &e.provenance.client,
                            &e.provenance.at.as_millis(),
                            &e.status.as_str(),
                            &e.reasons,
                        ],
                    )?;
                }
                let detail = note.import_detail();
                record(
                    tx,
                    self.clock.now(),
                    Action::Write,
                    scope.as_str(),
                    path.as_str(),
                    by,
                    &detail,
                )?;
            }
            Ok(())
        })
    }

    fn note_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Forgotten> {
        writer.check()?;
        provenance_fits(|| "forget of notes by provenance".to_owned(), by)?;
        let source = writer.source.as_ref().map(ToString::to_string);
        let filter = (&source, &writer.session, &writer.client);
        self.write("forget notes by provenance", |tx| {
            // The scopes to lock, each before its notes are read: the one asked for, or every
            // scope holding a version by the writer, locked in byte order so that two
            // forgets over many scopes cannot deadlock.
            let mut scopes: Vec<String> = match scope {
                Some(scope) => vec![scope.as_str().to_owned()],
                None => tx
                    .query(SCOPES_WRITTEN_BY, &[filter.0, filter.1, filter.2])?
                    .into_iter()
                    .map(|row| row.get(0))
                    .collect(),
            };
            scopes.sort();
            for s in &scopes {
                lock_scope(tx, s)?;
            }
            let notes: Vec<(i64, String, String)> = tx
                .query(WRITTEN_BY, &[filter.0, filter.1, filter.2, &scopes])?
                .into_iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect();
            let mut all = Forgotten::default();
            for (id, note_scope, path) in notes {
                let Some(plan) = forget_plan(&versions_of(tx, id)?, writer) else {
                    continue;
                };
                all.add(&plan);
                let numbers: Vec<i64> = plan.gone.iter().map(|v| *v as i64).collect();
                tx.execute(
                    "DELETE FROM note_versions WHERE note_id = $1 AND version = ANY($2::bigint[])",
                    &[&id, &numbers],
                )?;
                match &plan.left {
                    Left::Nothing => {
                        tx.execute("DELETE FROM notes WHERE id = $1", &[&id])?;
                    }
                    Left::FallBack(last) => fall_back(tx, id, last.version as i64)?,
                    Left::Newest => {}
                }
                let detail = format!("{} versions", plan.gone.len());
                record(
                    tx,
                    self.clock.now(),
                    Action::Forget,
                    &note_scope,
                    &path,
                    by,
                    &detail,
                )?;
            }
            Ok(all)
        })
    }

    fn note_search(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        terms: &[&str],
        limit: usize,
    ) -> Result<Vec<NoteHit>> {
        let (lower, upper) = dir.map(NotePath::below_bounds).unwrap_or_default();
        let dir_text = dir.map(NotePath::as_str).unwrap_or_default();
        let lowered: Vec<String> = terms.iter().map(|t| t.to_lowercase()).collect();
        // The server narrows to notes holding every term (its lower() folds at least ASCII);
        // the contract's rule, `matches_terms`, then decides, so every backend matches alike.
        let rows = self.read_one("search notes", |one| {
            Ok(match dir {
                None => one.rows(
                    "SELECT path, text FROM notes WHERE scope = $1 AND status <> 'quarantined' \
                     AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS t(term) \
                                     WHERE strpos(lower(text), t.term) = 0) \
                     ORDER BY path",
                    &[&scope.as_str(), &lowered],
                )?,
                Some(_) => one.rows(
                    "SELECT path, text FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND (path = $2 OR path >= $3) AND status <> 'quarantined' \
                     AND NOT EXISTS (SELECT 1 FROM unnest($5::text[]) AS t(term) \
                                     WHERE strpos(lower(text), t.term) = 0) \
                     ORDER BY path",
                    &[&scope.as_str(), &dir_text, &lower, &upper, &lowered],
                )?,
            })
        })?;
        let mut hits = Vec::new();
        for row in rows {
            if hits.len() >= limit {
                break;
            }
            let text: String = row.get(1);
            if matches_terms(&text, terms) {
                hits.push(NoteHit {
                    path: NotePath::stored(row.get(0))?,
                    text,
                });
            }
        }
        Ok(hits)
    }

    fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>> {
        // Held notes count: they take the scope's room until a review or a forget.
        let rows = self.read_one("list note scopes", |one| {
            Ok(one.rows(
                "SELECT n.scope, n.notes, n.bytes, w.last_write, n.held \
                 FROM (SELECT scope, count(*) AS notes, coalesce(sum(bytes), 0)::bigint AS bytes, \
                       count(*) FILTER (WHERE status = 'quarantined') AS held \
                       FROM notes GROUP BY scope) n \
                 LEFT JOIN note_writes w ON w.scope = n.scope \
                 ORDER BY n.scope COLLATE \"C\"",
                &[],
            )?)
        })?;
        rows.into_iter()
            .map(|row| {
                Ok(NoteScopeSummary {
                    scope: Scope::new(row.get::<_, String>(0))
                        .map_err(|e| Error::corrupt("notes table", e.to_string()))?,
                    notes: count(row.get(1)),
                    bytes: count(row.get(2)),
                    last_write: row.get::<_, Option<i64>>(3).map(Timestamp::from_millis),
                    held: count(row.get(4)),
                })
            })
            .collect()
    }

    fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64> {
        provenance_fits(|| format!("forget of scope {scope}"), by)?;
        self.write("forget notes", |tx| {
            lock_scope(tx, scope.as_str())?;
            tx.execute(
                "DELETE FROM note_writes WHERE scope = $1",
                &[&scope.as_str()],
            )?;
            // Every version goes with its note (ON DELETE CASCADE).
            let gone = tx.execute("DELETE FROM notes WHERE scope = $1", &[&scope.as_str()])?;
            let detail = forget_detail(&[(gone, "note", "notes")]);
            audit_in(tx, "notes", Action::Forget, scope.as_str(), "", by, &detail)?;
            Ok(gone)
        })
    }
}

impl AuditStore for PostgresStore {
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        filter.check()?;
        let after = after.map_or(0, |a| i64::try_from(a).unwrap_or(i64::MAX));
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let memory = filter.memory.as_deref();
        let action = filter.action.map(Action::as_str);
        let newest = filter.before.is_some();
        let before = filter
            .before
            .map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
        let (rows, total) = self.read("read the audit trail", |tx| {
            let total: i64 = tx
                .query_one(
                    "SELECT count(*) FROM audit \
                     WHERE ($1::text IS NULL OR memory = $1) AND ($2::text IS NULL OR action = $2)",
                    &[&memory, &action],
                )?
                .get(0);
            // With `before`, the newest entries below it, read newest first and turned
            // around below.
            let sql = if newest {
                "SELECT seq, action, memory, scope, item, source, session, client, at, detail \
                 FROM audit WHERE seq > $3 AND seq < $5 \
                 AND ($1::text IS NULL OR memory = $1) AND ($2::text IS NULL OR action = $2) \
                 ORDER BY seq DESC LIMIT $4"
            } else {
                "SELECT seq, action, memory, scope, item, source, session, client, at, detail \
                 FROM audit WHERE seq > $3 AND seq < $5 \
                 AND ($1::text IS NULL OR memory = $1) AND ($2::text IS NULL OR action = $2) \
                 ORDER BY seq LIMIT $4"
            };
            let mut rows = tx.query(sql, &[&memory, &action, &after, &limit, &before])?;
            if newest {
                rows.reverse();
            }
            Ok((rows, count(total)))
        })?;
        let corrupt = |e: Error| Error::corrupt("audit table", e.to_string());
        let items = rows
            .into_iter()
            .map(|row| {
                let action: String = row.get(1);
                let source: String = row.get(5);
                Ok(AuditEntry {
                    seq: count(row.get(0)),
                    action: Action::parse(&action).map_err(corrupt)?,
                    memory: row.get(2),
                    scope: row.get(3),
                    item: row.get(4),
                    by: Provenance {
                        source: Source::parse(&source).map_err(corrupt)?,
                        session: row.get(6),
                        client: row.get(7),
                        at: Timestamp::from_millis(row.get(8)),
                    },
                    detail: row.get(9),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { items, total })
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        check_texts(|| format!("setting {:?}", key.as_str()), [("value", value)])?;
        self.write("write a setting", |tx| {
            let previous = crate::meta::put(tx, key.as_str(), value)?;
            let detail = setting_detail(value, previous.as_deref());
            audit_in(
                tx,
                STORE_MEMORY,
                Action::Write,
                NO_SCOPE,
                key.as_str(),
                by,
                &detail,
            )?;
            Ok(previous)
        })
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        for vouch in vouches {
            vouch.check()?;
        }
        self.write("keep a vouch", |tx| keep_vouches(tx, vouches, by))
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        self.read_one("read the vouches", |one| {
            Ok(one
                .rows(
                    "SELECT digest FROM vouches WHERE memory = $1 AND container = $2 \
                     ORDER BY digest",
                    &[&memory, &container],
                )?
                .iter()
                .map(|row| row.get(0))
                .collect())
        })
    }
}
