//! [`NoteStore`] on the `notes` table: one row per note, keyed by `(scope, path)`, with the
//! scope totals in `note_scopes` and a trigram index (`notes_search`) for keyword search, both
//! kept by triggers in the write's own transaction (migration 9). The row is the note's newest
//! version with its evidence; older versions are rows of `note_versions`, and every write,
//! review and forget appends to `audit` in the same transaction (migration 14).

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
use agent_memory_core::store::trajectory::{decode_texts, encode_texts};
use agent_memory_core::{
    Clock, Error, MetaKey, Page, Provenance, Result, Scope, Source, Timestamp,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// The evidence columns of `notes` and `note_versions`, in the order [`evidence_at`] reads.
const EVIDENCE: &str = "source, session, client, written_at, status, reasons";

/// Only visible notes: not held for review.
const VISIBLE: &str = "status <> 'quarantined'";

/// The evidence in the six columns from `at` (in the order of [`EVIDENCE`]).
fn evidence_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Evidence> {
    let bad = |what: &str, e: String| {
        rusqlite::Error::FromSqlConversionFailure(
            at,
            rusqlite::types::Type::Text,
            format!("{what}: {e}").into(),
        )
    };
    let source: String = row.get(at)?;
    let source = Source::parse(&source).map_err(|e| bad("source", e.to_string()))?;
    let status: String = row.get(at + 4)?;
    let status = Status::parse(&status).map_err(|e| bad("status", e.to_string()))?;
    let reasons: String = row.get(at + 5)?;
    let reasons = decode_texts(&reasons).ok_or_else(|| bad("reasons", reasons.clone()))?;
    Ok(Evidence {
        provenance: Provenance {
            source,
            session: row.get(at + 1)?,
            client: row.get(at + 2)?,
            at: Timestamp::from_millis(row.get(at + 3)?),
        },
        status,
        reasons,
    })
}

/// The six values of the evidence columns.
struct EvidenceValues<'a> {
    source: String,
    session: Option<&'a str>,
    client: Option<&'a str>,
    at: i64,
    status: &'static str,
    reasons: String,
}

impl<'a> EvidenceValues<'a> {
    fn of(e: &'a Evidence) -> Self {
        EvidenceValues {
            source: e.provenance.source.to_string(),
            session: e.provenance.session.as_deref(),
            client: e.provenance.client.as_deref(),
            at: e.provenance.at.as_millis(),
            status: e.status.as_str(),
            reasons: encode_texts(e.reasons.iter().map(String::as_str)),
        }
    }
}

/// Appends an entry to the audit trail.
fn audit(
    conn: &Connection,
    action: Action,
    scope: &Scope,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> rusqlite::Result<()> {
    audit_in(conn, "notes", action, scope.as_str(), item, by, detail)
}

/// The writer stored as `source`, `session` and `client` columns, written `at`; `None` when
/// it has no source. A source that does not read is `table`'s corruption.
pub(crate) fn stored_writer(
    (source, session, client): (Option<String>, Option<String>, Option<String>),
    at: Timestamp,
    table: &str,
) -> Result<Option<Provenance>> {
    source
        .map(|source| {
            Ok(Provenance {
                source: Source::parse(&source)
                    .map_err(|e| Error::corrupt(format!("{table}.source"), e.to_string()))?,
                session,
                client,
                at,
            })
        })
        .transpose()
}

/// The writer columns (source, session, client) of `row` from column `first` on.
pub(crate) fn writer_columns(
    row: &Row<'_>,
    first: usize,
) -> rusqlite::Result<(Option<String>, Option<String>, Option<String>)> {
    Ok((row.get(first)?, row.get(first + 1)?, row.get(first + 2)?))
}

/// Appends an entry about an item of `memory` to the audit trail, in the caller's
/// transaction.
pub(crate) fn audit_in(
    conn: &Connection,
    memory: &str,
    action: Action,
    scope: &str,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO audit (at, action, memory, scope, item, source, session, client, detail) \
         VALUES (?1, ?2, ?9, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        by.at.as_millis(),
        action.as_str(),
        scope,
        item,
        by.source.to_string(),
        by.session,
        by.client,
        detail,
        memory
    ])
    .map(drop)
}

/// Appends the entry that opens `run` to the audit trail, unless the newest entry about its
/// item is a write of the same run (one lookup on the `audit_item` index); in the caller's
/// transaction.
pub(crate) fn audit_write_run(conn: &Connection, run: &WriteRun<'_>) -> rusqlite::Result<()> {
    let continued = conn
        .prepare_cached(
            "SELECT action, source, session, client FROM audit \
             WHERE memory = ?1 AND scope = ?2 AND item = ?3 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(params![run.memory, run.scope, run.item], |row| {
            let action: String = row.get(0)?;
            let source: String = row.get(1)?;
            let session: Option<String> = row.get(2)?;
            let client: Option<String> = row.get(3)?;
            Ok(run.continued_by(&action, &source, session.as_deref(), client.as_deref()))
        })
        .optional()?
        .unwrap_or(false);
    if continued {
        return Ok(());
    }
    audit_in(
        conn,
        run.memory,
        Action::Write,
        run.scope,
        run.item,
        &run.by,
        run.detail,
    )
}

/// Keeps `vouches` (checked) by `by`, each with its `approve` entry, in the caller's
/// transaction; returns how many are new.
pub(crate) fn keep_vouches(
    conn: &Connection,
    vouches: &[Vouch<'_>],
    by: &Provenance,
) -> rusqlite::Result<usize> {
    let mut new = 0;
    for vouch in vouches {
        new += conn
            .prepare_cached(
                "INSERT INTO vouches (memory, container, digest) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
            )?
            .execute(params![vouch.memory, vouch.container, vouch.digest])?;
        audit_in(
            conn,
            vouch.memory,
            Action::Approve,
            NO_SCOPE,
            vouch.container,
            by,
            &vouch.detail(),
        )?;
    }
    Ok(new)
}

/// `id` of the note at `path`, with its version and status, held or not.
fn note_row(
    conn: &Connection,
    scope: &Scope,
    path: &NotePath,
) -> rusqlite::Result<Option<(i64, u64, Status)>> {
    conn.prepare_cached("SELECT id, version, status FROM notes WHERE scope = ?1 AND path = ?2")?
        .query_row(params![scope.as_str(), path.as_str()], |row| {
            let status: String = row.get(2)?;
            Ok((
                row.get(0)?,
                row.get::<_, i64>(1)? as u64,
                Status::parse(&status).unwrap_or(Status::Quarantined),
            ))
        })
        .optional()
}

/// Every version of the note `id`, oldest first: its older rows, then the note's own.
fn versions_of(conn: &Connection, id: i64) -> rusqlite::Result<Vec<NoteVersion>> {
    let map = |row: &Row<'_>| {
        Ok(NoteVersion {
            version: row.get::<_, i64>(0)? as u64,
            text: row.get(1)?,
            evidence: evidence_at(row, 2)?,
        })
    };
    let mut all: Vec<NoteVersion> = conn
        .prepare_cached(&format!(
            "SELECT version, text, {EVIDENCE} FROM note_versions WHERE note_id = ?1 \
             ORDER BY version"
        ))?
        .query_map([id], map)?
        .collect::<rusqlite::Result<_>>()?;
    if let Some(newest) = conn
        .prepare_cached(&format!(
            "SELECT version, text, {EVIDENCE} FROM notes WHERE id = ?1"
        ))?
        .query_row([id], map)
        .optional()?
    {
        all.push(newest);
    }
    Ok(all)
}

/// Makes `version` (one of `note_versions`) the note's own row again, and drops its row there.
fn fall_back(conn: &Connection, id: i64, version: &NoteVersion) -> rusqlite::Result<()> {
    let v = EvidenceValues::of(&version.evidence);
    conn.prepare_cached(
        "UPDATE notes SET text = ?2, bytes = ?3, version = ?4, source = ?5, session = ?6, \
         client = ?7, written_at = ?8, status = ?9, reasons = ?10 WHERE id = ?1",
    )?
    .execute(params![
        id,
        version.text,
        version.text.len() as i64,
        version.version as i64,
        v.source,
        v.session,
        v.client,
        v.at,
        v.status,
        v.reasons
    ])?;
    conn.prepare_cached("DELETE FROM note_versions WHERE note_id = ?1 AND version = ?2")?
        .execute(params![id, version.version as i64])
        .map(drop)
}

/// Merges the trigram index's segments, so the deleted texts' trigrams are dropped.
fn optimize_search(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO notes_search (notes_search) VALUES ('optimize')",
        [],
    )
    .map(drop)
}

use crate::{SqliteStore, check_sizes, to_core};

/// Records in `note_scopes` that `scope` was written at `now` (its row, kept by the triggers,
/// is gone when the write left the scope empty).
fn stamp(conn: &Connection, scope: &Scope, now: Timestamp) -> rusqlite::Result<()> {
    conn.prepare_cached("UPDATE note_scopes SET last_write = ?2 WHERE scope = ?1")?
        .execute(params![scope.as_str(), now.as_millis()])
        .map(drop)
}

/// What already is at `path`, as the conflict of writing a note there.
fn placement_conflict(
    conn: &Connection,
    scope: &Scope,
    path: &NotePath,
) -> rusqlite::Result<Option<&'static str>> {
    let exists = |p: &str| -> rusqlite::Result<bool> {
        conn.prepare_cached("SELECT 1 FROM notes WHERE scope = ?1 AND path = ?2")?
            .query_row(params![scope.as_str(), p], |_| Ok(()))
            .optional()
            .map(|found| found.is_some())
    };
    if let Some((_, _, status)) = note_row(conn, scope, path)? {
        return Ok(Some(if status.is_visible() {
            NOTE_EXISTS
        } else {
            NOTE_HELD
        }));
    }
    let (lower, upper) = path.below_bounds();
    let directory = conn
        .prepare_cached(
            "SELECT 1 FROM notes WHERE scope = ?1 AND path >= ?2 AND path < ?3 LIMIT 1",
        )?
        .query_row(params![scope.as_str(), lower, upper], |_| Ok(()))
        .optional()?
        .is_some();
    if directory {
        return Ok(Some(NOTE_IS_DIRECTORY));
    }
    for ancestor in path.ancestors() {
        if exists(ancestor)? {
            return Ok(Some(NOTE_UNDER_NOTE));
        }
    }
    Ok(None)
}

/// A scope's notes and bytes.
fn totals(conn: &Connection, scope: &Scope) -> rusqlite::Result<(u64, u64)> {
    let (notes, bytes): (i64, i64) = conn
        .prepare_cached("SELECT notes, bytes FROM note_scopes WHERE scope = ?1")?
        .query_row([scope.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?
        .unwrap_or((0, 0));
    Ok((
        u64::try_from(notes).unwrap_or(0),
        u64::try_from(bytes).unwrap_or(0),
    ))
}

/// `(id, path)` of the note at `dir` (unless held) and of every note below it, ordered by
/// path.
fn at_or_below(
    conn: &Connection,
    scope: &Scope,
    dir: &NotePath,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let (lower, upper) = dir.below_bounds();
    let mut stmt = conn.prepare_cached(
        "SELECT id, path FROM notes WHERE scope = ?1 AND path >= ?2 AND path < ?4 \
         AND ((path = ?2 AND status <> 'quarantined') OR path >= ?3) ORDER BY path",
    )?;
    let rows = stmt.query_map(params![scope.as_str(), dir.as_str(), lower, upper], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    rows.collect()
}

/// Refuses a new note of `bytes` at `path`: the conflict of a taken path, or the scope's
/// limit it would pass.
fn check_new_note(
    conn: &Connection,
    scope: &Scope,
    path: &NotePath,
    bytes: u64,
    limits: &NoteLimits,
    op: &str,
) -> Result<()> {
    if let Some(reason) = placement_conflict(conn, scope, path).map_err(|e| to_core(op, e))? {
        return Err(note_conflict(path, reason));
    }
    let (notes, total) = totals(conn, scope).map_err(|e| to_core(op, e))?;
    limits.check_scope(scope, notes + 1, total + bytes)
}

/// Inserts the row of a new note whose newest version is number `version`, `text` written as
/// `evidence` says; returns its id.
fn insert_note(
    conn: &Connection,
    scope: &Scope,
    path: &NotePath,
    (version, text, evidence): (u64, &str, &Evidence),
) -> rusqlite::Result<i64> {
    let v = EvidenceValues::of(evidence);
    conn.prepare_cached(&format!(
        "INSERT INTO notes (scope, path, text, bytes, version, {EVIDENCE}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)"
    ))?
    .execute(params![
        scope.as_str(),
        path.as_str(),
        text,
        text.len() as i64,
        version as i64,
        v.source,
        v.session,
        v.client,
        v.at,
        v.status,
        v.reasons
    ])?;
    Ok(conn.last_insert_rowid())
}

fn text_fits(path: &NotePath, text: &str, limits: &NoteLimits) -> Result<()> {
    limits.check_note(path, text.len() as u64)?;
    check_sizes(|| format!("note {path}"), [("text", text)])
}

/// How many notes a search reads in path order before it asks the trigram index.
const SCAN_FIRST: usize = 256;

/// The first `limit` rows of `sql` (path, text) whose text matches every term, and how many
/// rows were read.
fn matching<'a>(
    conn: &Connection,
    sql: &str,
    values: impl IntoIterator<Item = &'a dyn rusqlite::ToSql>,
    terms: &[&str],
    limit: usize,
) -> rusqlite::Result<(Vec<(String, String)>, usize)> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(rusqlite::params_from_iter(values))?;
    let (mut hits, mut seen) = (Vec::new(), 0);
    while hits.len() < limit {
        let Some(row) = rows.next()? else { break };
        seen += 1;
        let text: String = row.get(1)?;
        if matches_terms(&text, terms) {
            hits.push((row.get(0)?, text));
        }
    }
    Ok((hits, seen))
}

impl NoteStore for SqliteStore {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        self.read("read note", |conn| {
            conn.prepare_cached(
                "SELECT text FROM notes WHERE scope = ?1 AND path = ?2 \
                 AND status <> 'quarantined'",
            )?
            .query_row(params![scope.as_str(), path.as_str()], |row| row.get(0))
            .optional()
        })
    }

    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        let rows: Vec<(String, i64)> = self.read("list notes", |conn| {
            let map = |row: &rusqlite::Row<'_>| Ok((row.get(0)?, row.get(1)?));
            match dir {
                None => conn
                    .prepare_cached(
                        "SELECT path, bytes FROM notes WHERE scope = ?1 \
                         AND status <> 'quarantined' ORDER BY path",
                    )?
                    .query_map([scope.as_str()], map)?
                    .collect(),
                Some(dir) => {
                    let (lower, upper) = dir.below_bounds();
                    conn.prepare_cached(
                        "SELECT path, bytes FROM notes WHERE scope = ?1 \
                         AND path >= ?2 AND path < ?4 AND (path = ?2 OR path >= ?3) \
                         AND status <> 'quarantined' ORDER BY path",
                    )?
                    .query_map(params![scope.as_str(), dir.as_str(), lower, upper], map)?
                    .collect()
                }
            }
        })?;
        rows.into_iter()
            .map(|(path, bytes)| {
                Ok(NoteFile {
                    path: NotePath::stored(path)?,
                    bytes: u64::try_from(bytes).unwrap_or(0),
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
        // The listing is one range of the unique index on (scope, path) (a directory's own
        // note, a file listed as itself, is the path `dir` alone); a page starts past the
        // cursor inside it, so it reads its own rows, and the count reads only the range.
        let name = scope.as_str();
        let bounds = dir.map(|d| (d.as_str(), d.below_bounds()));
        let mut range = format!("{VISIBLE} AND scope = ?");
        let mut values: Vec<&dyn rusqlite::ToSql> = vec![&name];
        if let Some((dir, (lower, upper))) = &bounds {
            range.push_str(" AND path >= ? AND path < ? AND (path = ? OR path >= ?)");
            values.extend([dir as &dyn rusqlite::ToSql, upper, dir, lower]);
        }
        let counted = values.clone();
        let mut page = range.clone();
        let cursor = after.map(NotePath::as_str);
        if let Some(cursor) = &cursor {
            page.push_str(" AND path > ?");
            values.push(cursor);
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        values.push(&limit);
        let (rows, total): (Vec<(String, i64)>, i64) = self.read("list notes", |conn| {
            let total = conn
                .prepare_cached(&format!("SELECT count(*) FROM notes WHERE {range}"))?
                .query_row(counted.as_slice(), |row| row.get(0))?;
            let rows = conn
                .prepare_cached(&format!(
                    "SELECT path, bytes FROM notes WHERE {page} ORDER BY path LIMIT ?"
                ))?
                .query_map(values.as_slice(), |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((rows, total))
        })?;
        let items = rows
            .into_iter()
            .map(|(path, bytes)| {
                Ok(NoteFile {
                    path: NotePath::stored(path)?,
                    bytes: u64::try_from(bytes).unwrap_or(0),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            items,
            total: u64::try_from(total).unwrap_or(0),
        })
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
        let op = "create note";
        self.write(op, |tx| {
            check_new_note(tx, scope, path, text.len() as u64, limits, op)?;
            insert_note(tx, scope, path, (1, text, evidence))
                .and_then(|_| stamp(tx, scope, self.clock.now()))
                .and_then(|()| {
                    let detail = write_detail(1, evidence.status);
                    audit(
                        tx,
                        Action::Write,
                        scope,
                        path.as_str(),
                        &evidence.provenance,
                        &detail,
                    )
                })
                .map_err(|e| to_core(op, e))
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
        let op = "replace note";
        let v = EvidenceValues::of(evidence);
        self.write(op, |tx| {
            let current: Option<(i64, String, i64)> = tx
                .prepare_cached(
                    "SELECT id, text, version FROM notes WHERE scope = ?1 AND path = ?2 \
                     AND status <> 'quarantined'",
                )
                .and_then(|mut s| {
                    s.query_row(params![scope.as_str(), path.as_str()], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .optional()
                })
                .map_err(|e| to_core(op, e))?;
            let (id, current, version) = current.ok_or_else(|| note_not_found(path))?;
            if current != expected {
                return Err(note_conflict(path, NOTE_CHANGED));
            }
            let (notes, bytes) = totals(tx, scope).map_err(|e| to_core(op, e))?;
            let after = (bytes + text.len() as u64).saturating_sub(current.len() as u64);
            limits.check_scope(scope, notes, after)?;
            let next = version + 1;
            let keep = i64::try_from(limits.max_versions.max(1)).unwrap_or(i64::MAX);
            let written = (|| {
                tx.prepare_cached(&format!(
                    "INSERT INTO note_versions (note_id, version, text, {EVIDENCE}) \
                     SELECT id, version, text, {EVIDENCE} FROM notes WHERE id = ?1"
                ))?
                .execute([id])?;
                tx.prepare_cached(
                    "DELETE FROM note_versions WHERE note_id = ?1 AND version <= ?2 - ?3",
                )?
                .execute(params![id, next, keep])?;
                tx.prepare_cached(
                    "UPDATE notes SET text = ?2, bytes = ?3, version = ?4, source = ?5, \
                     session = ?6, client = ?7, written_at = ?8, status = ?9, reasons = ?10 \
                     WHERE id = ?1",
                )?
                .execute(params![
                    id,
                    text,
                    text.len() as i64,
                    next,
                    v.source,
                    v.session,
                    v.client,
                    v.at,
                    v.status,
                    v.reasons
                ])?;
                stamp(tx, scope, self.clock.now())?;
                let detail = write_detail(next as u64, evidence.status);
                audit(
                    tx,
                    Action::Write,
                    scope,
                    path.as_str(),
                    &evidence.provenance,
                    &detail,
                )
            })();
            written.map_err(|e| to_core(op, e))
        })
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64> {
        let op = "delete notes";
        self.write(op, |tx| {
            let (lower, upper) = path.below_bounds();
            let deleted = tx
                .prepare_cached(
                    "DELETE FROM notes WHERE scope = ?1 AND path >= ?2 AND path < ?4 \
                     AND ((path = ?2 AND status <> 'quarantined') OR path >= ?3)",
                )
                .and_then(|mut s| s.execute(params![scope.as_str(), path.as_str(), lower, upper]))
                .map_err(|e| to_core(op, e))?;
            if deleted > 0 {
                stamp(tx, scope, self.clock.now())
                    .and_then(|()| {
                        let detail = format!("{deleted} notes");
                        audit(tx, Action::Delete, scope, path.as_str(), by, &detail)
                    })
                    .map_err(|e| to_core(op, e))?;
            }
            Ok(deleted as u64)
        })
    }

    fn note_rename(
        &self,
        scope: &Scope,
        from: &NotePath,
        to: &NotePath,
        by: &Provenance,
    ) -> Result<u64> {
        let op = "rename notes";
        self.write(op, |tx| {
            let moving = at_or_below(tx, scope, from).map_err(|e| to_core(op, e))?;
            if moving.is_empty() {
                return Err(note_not_found(from));
            }
            if to.is_at_or_below(from) {
                return Err(note_conflict(to, NOTE_INTO_ITSELF));
            }
            if let Some(reason) = placement_conflict(tx, scope, to).map_err(|e| to_core(op, e))? {
                return Err(note_conflict(to, reason));
            }
            let mut update = tx
                .prepare_cached("UPDATE notes SET path = ?1 WHERE id = ?2")
                .map_err(|e| to_core(op, e))?;
            // Nothing is at or below `to`, so no new path meets an old one; a path made too
            // long fails before the transaction commits, leaving every note where it was.
            for (id, path) in &moving {
                let target = NotePath::stored(path.clone())?.moved(from, to)?;
                update
                    .execute(params![target.as_str(), id])
                    .map_err(|e| to_core(op, e))?;
            }
            stamp(tx, scope, self.clock.now())
                .and_then(|()| {
                    let detail = format!("to {to}, {} notes", moving.len());
                    audit(tx, Action::Rename, scope, from.as_str(), by, &detail)
                })
                .map_err(|e| to_core(op, e))?;
            Ok(moving.len() as u64)
        })
    }

    fn note_search(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        terms: &[&str],
        limit: usize,
    ) -> Result<Vec<NoteHit>> {
        let scope_text = scope.as_str();
        let hits: Vec<(String, String)> = self.read("search notes", |conn| {
            let (lower, upper) = dir.map(NotePath::below_bounds).unwrap_or_default();
            let dir_text = dir.map(NotePath::as_str).unwrap_or_default();
            // Only placeholders are added to the text; every value is bound.
            let mut sql = format!("SELECT path, text FROM notes WHERE {VISIBLE} AND scope = ?");
            let mut values: Vec<&dyn rusqlite::ToSql> = vec![&scope_text];
            if dir.is_some() {
                sql.push_str(" AND path >= ? AND path < ? AND (path = ? OR path >= ?)");
                values.extend([&dir_text as &dyn rusqlite::ToSql, &upper, &dir_text, &lower]);
            }
            // First the notes in path order, as far as `SCAN_FIRST` of them: common words
            // are found there without touching the index.
            let scan_first = SCAN_FIRST as i64;
            let (hits, seen) = matching(
                conn,
                &format!("{sql} ORDER BY path LIMIT ?"),
                values
                    .iter()
                    .copied()
                    .chain([&scan_first as &dyn rusqlite::ToSql]),
                terms,
                limit,
            )?;
            if hits.len() >= limit || seen < SCAN_FIRST {
                return Ok(hits);
            }
            // Then the trigram index narrows the notes to those holding every term of three
            // characters or more (it folds case as a superset of ASCII folding); the rule of
            // the contract, `matches_terms`, decides, so every backend matches alike.
            let phrases: Vec<String> = terms
                .iter()
                .filter(|t| t.chars().count() >= 3)
                .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
                .collect();
            let query = phrases.join(" AND ");
            if !phrases.is_empty() {
                sql.push_str(
                    " AND id IN (SELECT rowid FROM notes_search WHERE notes_search MATCH ?)",
                );
                values.push(&query);
            }
            sql.push_str(" ORDER BY path");
            Ok(matching(conn, &sql, values, terms, limit)?.0)
        })?;
        hits.into_iter()
            .map(|(path, text)| {
                Ok(NoteHit {
                    path: NotePath::stored(path)?,
                    text,
                })
            })
            .collect()
    }

    fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>> {
        type Row = (String, i64, i64, Option<i64>, i64);
        // The held count reads the partial index of held notes, a scope's range of it.
        let rows: Vec<Row> = self.read("list note scopes", |conn| {
            conn.prepare_cached(
                "SELECT s.scope, s.notes, s.bytes, s.last_write, \
                 (SELECT count(*) FROM notes n WHERE n.scope = s.scope \
                  AND n.status = 'quarantined') \
                 FROM note_scopes s ORDER BY s.scope",
            )?
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })?
            .collect()
        })?;
        rows.into_iter()
            .map(|(scope, notes, bytes, last_write, held)| {
                Ok(NoteScopeSummary {
                    scope: Scope::new(scope)
                        .map_err(|e| Error::corrupt("note_scopes table", e.to_string()))?,
                    notes: u64::try_from(notes).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    last_write: last_write.map(Timestamp::from_millis),
                    held: u64::try_from(held).unwrap_or(0),
                })
            })
            .collect()
    }

    fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64> {
        let op = "forget notes";
        let deleted = self.write(op, |tx| {
            let run = || -> rusqlite::Result<u64> {
                let deleted = tx
                    .prepare_cached("DELETE FROM notes WHERE scope = ?1")?
                    .execute([scope.as_str()])? as u64;
                if deleted > 0 {
                    // A delete leaves the index's old entries behind a marker until segments
                    // merge; merging them all now drops the forgotten texts' trigrams.
                    optimize_search(tx)?;
                }
                let detail = forget_detail(&[(deleted, "note", "notes")]);
                audit(tx, Action::Forget, scope, "", by, &detail)?;
                Ok(deleted)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if deleted > 0 {
            self.erase_freed_pages()?;
        }
        Ok(deleted)
    }

    fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>> {
        self.read("read note history", |conn| {
            match note_row(conn, scope, path)? {
                Some((id, _, _)) => versions_of(conn, id),
                None => Ok(Vec::new()),
            }
        })
    }

    fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows: Vec<(String, String, NoteVersion)> = self.read("list held notes", |conn| {
            let map = |row: &Row<'_>| {
                Ok((
                    row.get(0)?,
                    row.get(1)?,
                    NoteVersion {
                        version: row.get::<_, i64>(2)? as u64,
                        text: row.get(3)?,
                        evidence: evidence_at(row, 4)?,
                    },
                ))
            };
            let select = format!(
                "SELECT scope, path, version, text, {EVIDENCE} FROM notes \
                 WHERE status = 'quarantined'"
            );
            match scope {
                Some(scope) => conn
                    .prepare_cached(&format!(
                        "{select} AND scope = ?1 ORDER BY scope, path LIMIT ?2"
                    ))?
                    .query_map(params![scope.as_str(), limit], map)?
                    .collect(),
                None => conn
                    .prepare_cached(&format!("{select} ORDER BY scope, path LIMIT ?1"))?
                    .query_map([limit], map)?
                    .collect(),
            }
        })?;
        rows.into_iter()
            .map(|(scope, path, version)| {
                Ok(HeldNote {
                    scope: Scope::new(scope)
                        .map_err(|e| Error::corrupt("notes table", e.to_string()))?,
                    path: NotePath::stored(path)?,
                    version,
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
        let op = "review note";
        self.write(op, |tx| {
            let (id, newest, status) = note_row(tx, scope, path)
                .map_err(|e| to_core(op, e))?
                .ok_or_else(|| note_not_found(path))?;
            if newest != version || status != Status::Quarantined {
                return Err(note_conflict(path, NOTE_NOT_HELD));
            }
            let reviewed = (|| match decision {
                Decision::Approve => {
                    tx.prepare_cached("UPDATE notes SET status = 'approved' WHERE id = ?1")?
                        .execute([id])?;
                    Ok(Action::Approve)
                }
                Decision::Reject => {
                    let mut versions = versions_of(tx, id)?;
                    versions.pop();
                    match versions.last() {
                        Some(before) => fall_back(tx, id, before)?,
                        None => {
                            tx.prepare_cached("DELETE FROM notes WHERE id = ?1")?
                                .execute([id])?;
                        }
                    }
                    optimize_search(tx)?;
                    Ok(Action::Reject)
                }
            })()
            .and_then(|action| {
                stamp(tx, scope, self.clock.now())?;
                let detail = format!("version {version}");
                audit(tx, action, scope, path.as_str(), by, &detail)
            });
            reviewed.map_err(|e| to_core(op, e))
        })?;
        if decision == Decision::Reject {
            self.erase_freed_pages()?;
        }
        Ok(())
    }

    fn note_export(&self, scope: &Scope) -> Result<Vec<NoteRecord>> {
        // One read transaction: the notes and their versions as of one moment.
        let found = self.read("export notes", |conn| {
            let notes: Vec<(i64, String)> = conn
                .prepare_cached("SELECT id, path FROM notes WHERE scope = ?1 ORDER BY path")?
                .query_map([scope.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            notes
                .into_iter()
                .map(|(id, path)| Ok((path, versions_of(conn, id)?)))
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        found
            .into_iter()
            .map(|(path, versions)| {
                Ok(NoteRecord {
                    path: NotePath::stored(path)?,
                    versions,
                })
            })
            .collect()
    }

    fn note_import(
        &self,
        scope: &Scope,
        records: &[NoteRecord],
        limits: &NoteLimits,
        by: &Provenance,
    ) -> Result<()> {
        for record in records {
            record.check(limits)?;
            for v in &record.versions {
                text_fits(&record.path, &v.text, limits)?;
            }
        }
        if records.is_empty() {
            return Ok(());
        }
        let op = "import notes";
        self.write(op, |tx| {
            for record in records {
                let path = &record.path;
                let Some(newest) = record.newest() else {
                    continue;
                };
                check_new_note(tx, scope, path, newest.text.len() as u64, limits, op)?;
                let written = (|| {
                    let newest = (newest.version, newest.text.as_str(), &newest.evidence);
                    let id = insert_note(tx, scope, path, newest)?;
                    for older in &record.versions[..record.versions.len() - 1] {
                        let v = EvidenceValues::of(&older.evidence);
                        tx.prepare_cached(&format!(
                            "INSERT INTO note_versions (note_id, version, text, {EVIDENCE}) \
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                        ))?
                        .execute(params![
                            id,
                            older.version as i64,
                            older.text,
                            v.source,
                            v.session,
                            v.client,
                            v.at,
                            v.status,
                            v.reasons
                        ])?;
                    }
                    audit(
                        tx,
                        Action::Write,
                        scope,
                        path.as_str(),
                        by,
                        &record.import_detail(),
                    )
                })();
                written.map_err(|e| to_core(op, e))?;
            }
            stamp(tx, scope, self.clock.now()).map_err(|e| to_core(op, e))
        })
    }

    fn note_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Forgotten> {
        writer.check()?;
        let op = "forget notes by provenance";
        // Only placeholders are added to the text; every value is bound. The filter is used
        // twice (the notes' newest versions, then the older ones), each with its own values.
        let source = writer.source.as_ref().map(ToString::to_string);
        let mut filter = String::new();
        let mut by_writer: Vec<&str> = Vec::new();
        for (column, value) in [
            ("source", source.as_deref()),
            ("session", writer.session.as_deref()),
            ("client", writer.client.as_deref()),
        ] {
            if let Some(value) = value {
                filter.push_str(&format!(" AND {column} = ?"));
                by_writer.push(value);
            }
        }
        let mut values: Vec<&str> = by_writer.iter().chain(&by_writer).copied().collect();
        let mut scoped = String::new();
        if let Some(scope) = scope {
            scoped.push_str(" AND scope = ?");
            values.push(scope.as_str());
        }
        let forgot = self.write(op, |tx| {
            let run = || -> rusqlite::Result<Forgotten> {
                // The notes with a version by the writer: the newest one, or an older one.
                let ids: Vec<(i64, String, String)> = tx
                    .prepare(&format!(
                        "SELECT id, scope, path FROM notes WHERE (id IN (SELECT id FROM notes \
                         WHERE 1 = 1{filter}) OR id IN (SELECT note_id FROM note_versions \
                         WHERE 1 = 1{filter})){scoped} ORDER BY scope, path"
                    ))?
                    .query_map(rusqlite::params_from_iter(&values), |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                let mut all = Forgotten::default();
                for (id, note_scope, path) in ids {
                    let Some(plan) = forget_plan(&versions_of(tx, id)?, writer) else {
                        continue;
                    };
                    all.add(&plan);
                    for version in &plan.gone {
                        tx.prepare_cached(
                            "DELETE FROM note_versions WHERE note_id = ?1 AND version = ?2",
                        )?
                        .execute(params![id, *version as i64])?;
                    }
                    match &plan.left {
                        Left::Nothing => {
                            tx.prepare_cached("DELETE FROM notes WHERE id = ?1")?
                                .execute([id])?;
                        }
                        Left::FallBack(last) => fall_back(tx, id, last)?,
                        Left::Newest => {}
                    }
                    let note_scope = Scope::new(note_scope).map_err(|e| {
                        rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
                    })?;
                    stamp(tx, &note_scope, self.clock.now())?;
                    let detail = format!("{} versions", plan.gone.len());
                    audit(tx, Action::Forget, &note_scope, &path, by, &detail)?;
                }
                if all.versions > 0 {
                    optimize_search(tx)?;
                }
                Ok(all)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if forgot.versions > 0 {
            self.erase_freed_pages()?;
        }
        Ok(forgot)
    }
}

impl AuditStore for SqliteStore {
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
        type Row6 = (i64, String, String, String, String, Provenance, String);
        let (rows, total): (Vec<Row6>, i64) = self.read("read the audit trail", |conn| {
            let total = conn
                .prepare_cached(
                    "SELECT count(*) FROM audit \
                     WHERE (?1 IS NULL OR memory = ?1) AND (?2 IS NULL OR action = ?2)",
                )?
                .query_row(params![memory, action], |row| row.get(0))?;
            // With `before`, the newest entries below it, read newest first and turned
            // around below.
            let sql = if newest {
                "SELECT seq, action, memory, scope, item, source, session, client, at, \
                 detail FROM audit WHERE seq > ?3 AND seq < ?5 \
                 AND (?1 IS NULL OR memory = ?1) AND (?2 IS NULL OR action = ?2) \
                 ORDER BY seq DESC LIMIT ?4"
            } else {
                "SELECT seq, action, memory, scope, item, source, session, client, at, \
                 detail FROM audit WHERE seq > ?3 AND seq < ?5 \
                 AND (?1 IS NULL OR memory = ?1) AND (?2 IS NULL OR action = ?2) \
                 ORDER BY seq LIMIT ?4"
            };
            let rows = conn
                .prepare_cached(sql)?
                .query_map(params![memory, action, after, limit, before], |row| {
                    let source: String = row.get(5)?;
                    let source = Source::parse(&source).map_err(|e| {
                        rusqlite::Error::FromSqlConversionFailure(
                            5,
                            rusqlite::types::Type::Text,
                            e.to_string().into(),
                        )
                    })?;
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                        Provenance {
                            source,
                            session: row.get(6)?,
                            client: row.get(7)?,
                            at: Timestamp::from_millis(row.get(8)?),
                        },
                        row.get(9)?,
                    ))
                })?
                .collect::<rusqlite::Result<_>>()?;
            Ok((rows, total))
        })?;
        let mut rows = rows;
        if newest {
            rows.reverse();
        }
        let items = rows
            .into_iter()
            .map(|(seq, action, memory, scope, item, by, detail)| {
                Ok(AuditEntry {
                    seq: seq as u64,
                    action: Action::parse(&action)
                        .map_err(|e| Error::corrupt("audit table", e.to_string()))?,
                    memory,
                    scope,
                    item,
                    by,
                    detail,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Page {
            items,
            total: u64::try_from(total).unwrap_or(0),
        })
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        let op = "write a setting";
        self.write(op, |tx| {
            let previous = crate::meta::get(tx, key).map_err(|e| to_core(op, e))?;
            crate::meta::put(tx, key, value).map_err(|e| to_core(op, e))?;
            let detail = setting_detail(value, previous.as_deref());
            audit_in(
                tx,
                STORE_MEMORY,
                Action::Write,
                NO_SCOPE,
                key.as_str(),
                by,
                &detail,
            )
            .map_err(|e| to_core(op, e))?;
            Ok(previous)
        })
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        for vouch in vouches {
            vouch.check()?;
        }
        let op = "keep a vouch";
        self.write(op, |tx| {
            keep_vouches(tx, vouches, by).map_err(|e| to_core(op, e))
        })
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        let op = "read the vouches";
        self.read(op, |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT digest FROM vouches WHERE memory = ?1 AND container = ?2 ORDER BY digest",
            )?;
            let digests = stmt.query_map(params![memory, container], |r| r.get(0))?;
            digests.collect()
        })
    }
}

/// The `notes` check of [`SqliteStore::check`]: reports each problem as `(location, detail)`.
pub(crate) fn check_notes(
    conn: &Connection,
    report: &mut dyn FnMut(String, String),
) -> rusqlite::Result<()> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut counted: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut paths: BTreeSet<(String, String)> = BTreeSet::new();
    let mut stmt =
        conn.prepare("SELECT id, scope, path, bytes, length(CAST(text AS BLOB)) FROM notes")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (id, scope, path, bytes, length): (i64, String, String, i64, i64) = (
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
        );
        if bytes != length {
            report(
                format!("notes row {id}"),
                format!("bytes is {bytes}, but its text is {length} bytes"),
            );
        }
        if let Err(e) = NotePath::new(path.as_str()) {
            report(format!("notes row {id}"), e.to_string());
        }
        let entry = counted.entry(scope.clone()).or_default();
        entry.0 += 1;
        entry.1 += bytes;
        paths.insert((scope, path));
    }
    for (scope, path) in &paths {
        let mut at = 0;
        while let Some(slash) = path[at..].find('/') {
            let ancestor = &path[..at + slash];
            if paths.contains(&(scope.clone(), ancestor.to_owned())) {
                report(
                    format!("notes {scope:?} {path:?}"),
                    format!("lies below the note {ancestor:?}"),
                );
            }
            at += slash + 1;
        }
    }
    let mut stmt = conn.prepare("SELECT scope, notes, bytes FROM note_scopes")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (scope, notes, bytes): (String, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let found = counted.remove(&scope).unwrap_or((0, 0));
        if found != (notes, bytes) {
            report(
                format!("note_scopes {scope:?}"),
                format!(
                    "says {notes} notes of {bytes} bytes, the notes are {} of {} bytes",
                    found.0, found.1
                ),
            );
        }
    }
    for (scope, (notes, bytes)) in counted {
        report(
            format!("note_scopes {scope:?}"),
            format!("missing, though the scope holds {notes} notes of {bytes} bytes"),
        );
    }
    // A note's older versions are numbered below its own, and every evidence column reads
    // back: a source, a status and an encoded list of reasons.
    let mut stmt = conn.prepare(&format!(
        "SELECT v.note_id, v.version, n.version, {EVIDENCE_OF_V} FROM note_versions v \
         JOIN notes n ON n.id = v.note_id"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (id, version, newest): (i64, i64, i64) = (row.get(0)?, row.get(1)?, row.get(2)?);
        if version >= newest {
            report(
                format!("note_versions row ({id}, {version})"),
                format!("is not older than its note's own version {newest}"),
            );
        }
        if let Err(e) = evidence_at(row, 3) {
            report(
                format!("note_versions row ({id}, {version})"),
                e.to_string(),
            );
        }
    }
    let mut stmt = conn.prepare(&format!("SELECT id, {EVIDENCE} FROM notes"))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        if let Err(e) = evidence_at(row, 1) {
            report(
                format!("notes row {}", row.get::<_, i64>(0)?),
                e.to_string(),
            );
        }
    }
    Ok(())
}

/// [`EVIDENCE`], of the `note_versions` row aliased `v`.
const EVIDENCE_OF_V: &str = "v.source, v.session, v.client, v.written_at, v.status, v.reasons";
