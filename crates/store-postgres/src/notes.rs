//! [`NoteStore`] on the `notes` table: one row per note, keyed by `(scope, path)` with paths
//! in byte order (migration 6). Writers of one scope hold its advisory lock, so the checks of
//! a write (what is at the path, the scope's totals) and the write itself are one step.

use agent_memory_core::store::notes::{
    NOTE_CHANGED, NOTE_EXISTS, NOTE_INTO_ITSELF, NOTE_IS_DIRECTORY, NOTE_UNDER_NOTE, NoteFile,
    NoteHit, NoteLimits, NotePath, NoteScopeSummary, NoteStore, matches_terms, note_conflict,
    note_not_found,
};
use agent_memory_core::{Clock, Error, Page, Result, Scope, Timestamp};

use crate::{Fail, PostgresStore, Single, Tx, check_texts, count, lock};

fn lock_scope(tx: &mut Tx<'_>, scope: &Scope) -> std::result::Result<(), Fail> {
    Ok(tx.advisory_lock(lock::NOTES, scope.as_str(), true)?)
}

fn placement_conflict(
    tx: &mut Tx<'_>,
    scope: &Scope,
    path: &NotePath,
) -> std::result::Result<Option<&'static str>, Fail> {
    let (lower, upper) = path.below_bounds();
    let ancestors: Vec<&str> = path.ancestors().collect();
    let row = tx.query_one(
        "SELECT \
           EXISTS (SELECT 1 FROM notes WHERE scope = $1 AND path = $2), \
           EXISTS (SELECT 1 FROM notes WHERE scope = $1 AND path >= $3 AND path < $4), \
           EXISTS (SELECT 1 FROM notes WHERE scope = $1 AND path = ANY($5::text[]))",
        &[&scope.as_str(), &path.as_str(), &lower, &upper, &ancestors],
    )?;
    Ok(if row.get(0) {
        Some(NOTE_EXISTS)
    } else if row.get(1) {
        Some(NOTE_IS_DIRECTORY)
    } else if row.get(2) {
        Some(NOTE_UNDER_NOTE)
    } else {
        None
    })
}

/// Records that `scope` was written at `now`.
fn stamp(tx: &mut Tx<'_>, scope: &Scope, now: Timestamp) -> std::result::Result<(), Fail> {
    tx.execute(
        "INSERT INTO note_writes (scope, last_write) VALUES ($1, $2) \
         ON CONFLICT (scope) DO UPDATE SET last_write = excluded.last_write",
        &[&scope.as_str(), &now.as_millis()],
    )?;
    Ok(())
}

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

impl NoteStore for PostgresStore {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        let row = self.read_one("read note", |one| {
            Ok(one.row(
                "SELECT text FROM notes WHERE scope = $1 AND path = $2",
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
                    "SELECT path, bytes FROM notes WHERE scope = $1 ORDER BY path",
                    &[&scope.as_str()],
                )?,
                // One range of the primary key: the row at `dir` and those below it, with
                // the siblings that sort between them (`dir-x`, `dir.md`) filtered out.
                Some(_) => one.rows(
                    "SELECT path, bytes FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND (path = $2 OR path >= $3) ORDER BY path",
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
                 AND ($5::text IS NULL OR path > $5) ORDER BY path LIMIT $6",
                &[&scope.as_str(), &dir_text, &lower, &upper, &after, &limit],
            )?;
            let total: i64 = tx
                .query_one(
                    "SELECT count(*) FROM notes WHERE scope = $1 AND path >= $2 \
                     AND ($4::text IS NULL OR path < $4) AND (path = $2 OR path >= $3)",
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
        limits: &NoteLimits,
    ) -> Result<()> {
        text_fits(path, text, limits)?;
        self.write("create note", |tx| {
            lock_scope(tx, scope)?;
            if let Some(reason) = placement_conflict(tx, scope, path)? {
                return Err(note_conflict(path, reason).into());
            }
            let (notes, bytes) = totals(tx, scope)?;
            limits.check_scope(scope, notes + 1, bytes + text.len() as u64)?;
            tx.execute(
                "INSERT INTO notes (scope, path, text, bytes) VALUES ($1, $2, $3, $4)",
                &[&scope.as_str(), &path.as_str(), &text, &(text.len() as i64)],
            )?;
            stamp(tx, scope, self.clock.now())
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
        self.write("replace note", |tx| {
            lock_scope(tx, scope)?;
            let current: String = tx
                .query_opt(
                    "SELECT text FROM notes WHERE scope = $1 AND path = $2",
                    &[&scope.as_str(), &path.as_str()],
                )?
                .map(|row| row.get(0))
                .ok_or_else(|| note_not_found(path))?;
            if current != expected {
                return Err(note_conflict(path, NOTE_CHANGED).into());
            }
            let (notes, bytes) = totals(tx, scope)?;
            let after = (bytes + text.len() as u64).saturating_sub(current.len() as u64);
            limits.check_scope(scope, notes, after)?;
            tx.execute(
                "UPDATE notes SET text = $3, bytes = $4 WHERE scope = $1 AND path = $2",
                &[&scope.as_str(), &path.as_str(), &text, &(text.len() as i64)],
            )?;
            stamp(tx, scope, self.clock.now())
        })
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath) -> Result<u64> {
        let (lower, upper) = path.below_bounds();
        self.write("delete notes", |tx| {
            lock_scope(tx, scope)?;
            let deleted = tx.execute(
                "DELETE FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                 AND (path = $2 OR path >= $3)",
                &[&scope.as_str(), &path.as_str(), &lower, &upper],
            )?;
            if deleted > 0 {
                stamp(tx, scope, self.clock.now())?;
            }
            Ok(deleted)
        })
    }

    fn note_rename(&self, scope: &Scope, from: &NotePath, to: &NotePath) -> Result<u64> {
        let (lower, upper) = from.below_bounds();
        self.write("rename notes", |tx| {
            lock_scope(tx, scope)?;
            let moving: Vec<String> = tx
                .query(
                    "SELECT path FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND (path = $2 OR path >= $3) ORDER BY path",
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
            tx.execute(
                "UPDATE notes n SET path = m.new FROM unnest($2::text[], $3::text[]) AS m(old, new) \
                 WHERE n.scope = $1 AND n.path = m.old",
                &[&scope.as_str(), &moving, &targets],
            )?;
            stamp(tx, scope, self.clock.now())?;
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
        let (lower, upper) = dir.map(NotePath::below_bounds).unwrap_or_default();
        let dir_text = dir.map(NotePath::as_str).unwrap_or_default();
        let lowered: Vec<String> = terms.iter().map(|t| t.to_lowercase()).collect();
        // The server narrows to notes holding every term (its lower() folds at least ASCII);
        // the contract's rule, `matches_terms`, then decides, so every backend matches alike.
        let rows = self.read_one("search notes", |one| {
            Ok(match dir {
                None => one.rows(
                    "SELECT path, text FROM notes WHERE scope = $1 \
                     AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS t(term) \
                                     WHERE strpos(lower(text), t.term) = 0) \
                     ORDER BY path",
                    &[&scope.as_str(), &lowered],
                )?,
                Some(_) => one.rows(
                    "SELECT path, text FROM notes WHERE scope = $1 AND path >= $2 AND path < $4 \
                     AND (path = $2 OR path >= $3) \
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
        let rows = self.read_one("list note scopes", |one| {
            Ok(one.rows(
                "SELECT n.scope, n.notes, n.bytes, w.last_write \
                 FROM (SELECT scope, count(*) AS notes, coalesce(sum(bytes), 0)::bigint AS bytes \
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
                })
            })
            .collect()
    }

    fn note_forget(&self, scope: &Scope) -> Result<u64> {
        self.write("forget notes", |tx| {
            lock_scope(tx, scope)?;
            tx.execute(
                "DELETE FROM note_writes WHERE scope = $1",
                &[&scope.as_str()],
            )?;
            Ok(tx.execute("DELETE FROM notes WHERE scope = $1", &[&scope.as_str()])?)
        })
    }
}
