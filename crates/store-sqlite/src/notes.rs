//! [`NoteStore`] on the `notes` table: one row per note, keyed by `(scope, path)`, with the
//! scope totals in `note_scopes` and a trigram index (`notes_search`) for keyword search, both
//! kept by triggers in the write's own transaction (migration 9).

use agent_memory_core::store::notes::{
    NOTE_CHANGED, NOTE_EXISTS, NOTE_INTO_ITSELF, NOTE_IS_DIRECTORY, NOTE_UNDER_NOTE, NoteFile,
    NoteHit, NoteLimits, NotePath, NoteScopeSummary, NoteStore, matches_terms, note_conflict,
    note_not_found,
};
use agent_memory_core::{Clock, Error, Page, Result, Scope, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

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
    if exists(path.as_str())? {
        return Ok(Some(NOTE_EXISTS));
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

/// `(id, path)` of the note at `dir` and of every note below it, ordered by path.
fn at_or_below(
    conn: &Connection,
    scope: &Scope,
    dir: &NotePath,
) -> rusqlite::Result<Vec<(i64, String)>> {
    let (lower, upper) = dir.below_bounds();
    let mut stmt = conn.prepare_cached(
        "SELECT id, path FROM notes WHERE scope = ?1 AND path >= ?2 AND path < ?4 \
         AND (path = ?2 OR path >= ?3) ORDER BY path",
    )?;
    let rows = stmt.query_map(params![scope.as_str(), dir.as_str(), lower, upper], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })?;
    rows.collect()
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
            conn.prepare_cached("SELECT text FROM notes WHERE scope = ?1 AND path = ?2")?
                .query_row(params![scope.as_str(), path.as_str()], |row| row.get(0))
                .optional()
        })
    }

    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        let rows: Vec<(String, i64)> = self.read("list notes", |conn| {
            let map = |row: &rusqlite::Row<'_>| Ok((row.get(0)?, row.get(1)?));
            match dir {
                None => conn
                    .prepare_cached("SELECT path, bytes FROM notes WHERE scope = ?1 ORDER BY path")?
                    .query_map([scope.as_str()], map)?
                    .collect(),
                Some(dir) => {
                    let (lower, upper) = dir.below_bounds();
                    conn.prepare_cached(
                        "SELECT path, bytes FROM notes WHERE scope = ?1 \
                         AND path >= ?2 AND path < ?4 AND (path = ?2 OR path >= ?3) ORDER BY path",
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
        let mut range = String::from("scope = ?");
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
        limits: &NoteLimits,
    ) -> Result<()> {
        text_fits(path, text, limits)?;
        let op = "create note";
        self.write(op, |tx| {
            if let Some(reason) = placement_conflict(tx, scope, path).map_err(|e| to_core(op, e))? {
                return Err(note_conflict(path, reason));
            }
            let (notes, bytes) = totals(tx, scope).map_err(|e| to_core(op, e))?;
            limits.check_scope(scope, notes + 1, bytes + text.len() as u64)?;
            tx.prepare_cached(
                "INSERT INTO notes (scope, path, text, bytes) VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    scope.as_str(),
                    path.as_str(),
                    text,
                    text.len() as i64
                ])
            })
            .map_err(|e| to_core(op, e))?;
            stamp(tx, scope, self.clock.now()).map_err(|e| to_core(op, e))
        })
    }

    fn note_replace(
        &self,
        scope: &Scope,
        path: &NotePath,
        expected: &str,
        text: &str,
        limits: &NoteLimits,
    ) -> Result<()> {
        text_fits(path, text, limits)?;
        let op = "replace note";
        self.write(op, |tx| {
            let current: Option<(i64, String)> = tx
                .prepare_cached("SELECT id, text FROM notes WHERE scope = ?1 AND path = ?2")
                .and_then(|mut s| {
                    s.query_row(params![scope.as_str(), path.as_str()], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .optional()
                })
                .map_err(|e| to_core(op, e))?;
            let (id, current) = current.ok_or_else(|| note_not_found(path))?;
            if current != expected {
                return Err(note_conflict(path, NOTE_CHANGED));
            }
            let (notes, bytes) = totals(tx, scope).map_err(|e| to_core(op, e))?;
            let after = (bytes + text.len() as u64).saturating_sub(current.len() as u64);
            limits.check_scope(scope, notes, after)?;
            tx.prepare_cached("UPDATE notes SET text = ?1, bytes = ?2 WHERE id = ?3")
                .and_then(|mut s| s.execute(params![text, text.len() as i64, id]))
                .map_err(|e| to_core(op, e))?;
            stamp(tx, scope, self.clock.now()).map_err(|e| to_core(op, e))
        })
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath) -> Result<u64> {
        let op = "delete notes";
        self.write(op, |tx| {
            let (lower, upper) = path.below_bounds();
            let deleted = tx
                .prepare_cached(
                    "DELETE FROM notes WHERE scope = ?1 \
                     AND path >= ?2 AND path < ?4 AND (path = ?2 OR path >= ?3)",
                )
                .and_then(|mut s| s.execute(params![scope.as_str(), path.as_str(), lower, upper]))
                .map_err(|e| to_core(op, e))?;
            if deleted > 0 {
                stamp(tx, scope, self.clock.now()).map_err(|e| to_core(op, e))?;
            }
            Ok(deleted as u64)
        })
    }

    fn note_rename(&self, scope: &Scope, from: &NotePath, to: &NotePath) -> Result<u64> {
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
            stamp(tx, scope, self.clock.now()).map_err(|e| to_core(op, e))?;
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
            let mut sql = String::from("SELECT path, text FROM notes WHERE scope = ?");
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
        type Row = (String, i64, i64, Option<i64>);
        let rows: Vec<Row> = self.read("list note scopes", |conn| {
            conn.prepare_cached(
                "SELECT scope, notes, bytes, last_write FROM note_scopes ORDER BY scope",
            )?
            .query_map([], |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
            })?
            .collect()
        })?;
        rows.into_iter()
            .map(|(scope, notes, bytes, last_write)| {
                Ok(NoteScopeSummary {
                    scope: Scope::new(scope)
                        .map_err(|e| Error::corrupt("note_scopes table", e.to_string()))?,
                    notes: u64::try_from(notes).unwrap_or(0),
                    bytes: u64::try_from(bytes).unwrap_or(0),
                    last_write: last_write.map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn note_forget(&self, scope: &Scope) -> Result<u64> {
        let op = "forget notes";
        let deleted = self.write(op, |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM notes WHERE scope = ?1")
                .and_then(|mut s| s.execute([scope.as_str()]))
                .map_err(|e| to_core(op, e))?;
            if deleted > 0 {
                // A delete leaves the index's old entries behind a marker until segments
                // merge; merging them all now drops the forgotten texts' trigrams.
                tx.execute(
                    "INSERT INTO notes_search (notes_search) VALUES ('optimize')",
                    [],
                )
                .map_err(|e| to_core(op, e))?;
            }
            Ok(deleted as u64)
        })?;
        if deleted > 0 {
            self.erase_freed_pages()?;
        }
        Ok(deleted)
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
    Ok(())
}
