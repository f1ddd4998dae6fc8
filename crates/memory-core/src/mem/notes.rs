//! [`NoteStore`] for [`InMemoryStore`]: one sorted map of path to text per scope, every call
//! under one lock.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::mem::{InMemoryStore, lock};
use crate::names::Scope;
use crate::store::notes::{
    NOTE_CHANGED, NOTE_EXISTS, NOTE_INTO_ITSELF, NOTE_IS_DIRECTORY, NOTE_UNDER_NOTE, NoteFile,
    NoteHit, NoteLimits, NotePath, NoteScopeSummary, NoteStore, matches_terms, note_conflict,
    note_not_found,
};
use crate::time::Clock;

/// The notes of every scope.
pub(crate) type NoteTrees = BTreeMap<Scope, BTreeMap<NotePath, String>>;

fn at_or_below<'a>(
    tree: &'a BTreeMap<NotePath, String>,
    dir: Option<&'a NotePath>,
) -> impl Iterator<Item = (&'a NotePath, &'a String)> {
    tree.iter()
        .filter(move |(path, _)| dir.is_none_or(|dir| path.is_at_or_below(dir)))
}

/// Whether anything (a note or a directory) is at `path`.
fn taken(tree: &BTreeMap<NotePath, String>, path: &NotePath) -> bool {
    at_or_below(tree, Some(path)).next().is_some()
}

/// The conflict of writing a note at `path`, if any.
fn placement_conflict(tree: &BTreeMap<NotePath, String>, path: &NotePath) -> Option<&'static str> {
    if tree.contains_key(path) {
        return Some(NOTE_EXISTS);
    }
    if taken(tree, path) {
        return Some(NOTE_IS_DIRECTORY);
    }
    let under_note = path.ancestors().any(|a| tree.contains_key(a));
    under_note.then_some(NOTE_UNDER_NOTE)
}

fn totals(tree: &BTreeMap<NotePath, String>) -> (u64, u64) {
    let bytes = tree.values().map(|t| t.len() as u64).sum();
    (tree.len() as u64, bytes)
}

impl InMemoryStore {
    /// Records that `scope`'s notes changed now; called with the notes lock held.
    fn note_written(&self, scope: &Scope) {
        lock(&self.note_writes).insert(scope.clone(), self.clock.now());
    }
}

impl NoteStore for InMemoryStore {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        Ok(lock(&self.notes)
            .get(scope)
            .and_then(|tree| tree.get(path).cloned()))
    }

    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        let notes = lock(&self.notes);
        let Some(tree) = notes.get(scope) else {
            return Ok(Vec::new());
        };
        Ok(at_or_below(tree, dir)
            .map(|(path, text)| NoteFile {
                path: path.clone(),
                bytes: text.len() as u64,
            })
            .collect())
    }

    fn note_create(
        &self,
        scope: &Scope,
        path: &NotePath,
        text: &str,
        limits: &NoteLimits,
    ) -> Result<()> {
        limits.check_note(path, text.len() as u64)?;
        let mut notes = lock(&self.notes);
        let tree = notes.entry(scope.clone()).or_default();
        let checked = match placement_conflict(tree, path) {
            Some(reason) => Err(note_conflict(path, reason)),
            None => {
                let (count, bytes) = totals(tree);
                limits.check_scope(scope, count + 1, bytes + text.len() as u64)
            }
        };
        if let Err(error) = checked {
            if tree.is_empty() {
                notes.remove(scope);
            }
            return Err(error);
        }
        tree.insert(path.clone(), text.to_owned());
        self.note_written(scope);
        Ok(())
    }

    fn note_replace(
        &self,
        scope: &Scope,
        path: &NotePath,
        expected: &str,
        text: &str,
        limits: &NoteLimits,
    ) -> Result<()> {
        limits.check_note(path, text.len() as u64)?;
        let mut notes = lock(&self.notes);
        let tree = notes.get_mut(scope).ok_or_else(|| note_not_found(path))?;
        let (count, bytes) = totals(tree);
        let current = tree.get(path).ok_or_else(|| note_not_found(path))?;
        if current != expected {
            return Err(note_conflict(path, NOTE_CHANGED));
        }
        let after = bytes - current.len() as u64 + text.len() as u64;
        limits.check_scope(scope, count, after)?;
        tree.insert(path.clone(), text.to_owned());
        self.note_written(scope);
        Ok(())
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath) -> Result<u64> {
        let mut notes = lock(&self.notes);
        let Some(tree) = notes.get_mut(scope) else {
            return Ok(0);
        };
        let doomed: Vec<NotePath> = at_or_below(tree, Some(path))
            .map(|(p, _)| p.clone())
            .collect();
        for p in &doomed {
            tree.remove(p);
        }
        if tree.is_empty() {
            notes.remove(scope);
        }
        if !doomed.is_empty() {
            self.note_written(scope);
        }
        Ok(doomed.len() as u64)
    }

    fn note_rename(&self, scope: &Scope, from: &NotePath, to: &NotePath) -> Result<u64> {
        let mut notes = lock(&self.notes);
        let tree = notes.get_mut(scope).ok_or_else(|| note_not_found(from))?;
        let moving: Vec<NotePath> = at_or_below(tree, Some(from))
            .map(|(p, _)| p.clone())
            .collect();
        if moving.is_empty() {
            return Err(note_not_found(from));
        }
        if to.is_at_or_below(from) {
            return Err(note_conflict(to, NOTE_INTO_ITSELF));
        }
        if let Some(reason) = placement_conflict(tree, to) {
            return Err(note_conflict(to, reason));
        }
        // Every new path is checked before anything moves: all or nothing.
        let targets = moving
            .iter()
            .map(|p| p.moved(from, to))
            .collect::<Result<Vec<_>>>()?;
        for (old, new) in moving.iter().zip(targets) {
            if let Some(text) = tree.remove(old) {
                tree.insert(new, text);
            }
        }
        self.note_written(scope);
        Ok(moving.len() as u64)
    }

    fn note_search(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        terms: &[&str],
        limit: usize,
    ) -> Result<Vec<NoteHit>> {
        let notes = lock(&self.notes);
        let Some(tree) = notes.get(scope) else {
            return Ok(Vec::new());
        };
        Ok(at_or_below(tree, dir)
            .filter(|(_, text)| matches_terms(text, terms))
            .take(limit)
            .map(|(path, text)| NoteHit {
                path: path.clone(),
                text: text.clone(),
            })
            .collect())
    }

    fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>> {
        let notes = lock(&self.notes);
        let writes = lock(&self.note_writes);
        Ok(notes
            .iter()
            .filter(|(_, tree)| !tree.is_empty())
            .map(|(scope, tree)| {
                let (notes, bytes) = totals(tree);
                NoteScopeSummary {
                    scope: scope.clone(),
                    notes,
                    bytes,
                    last_write: writes.get(scope).copied(),
                }
            })
            .collect())
    }

    fn note_forget(&self, scope: &Scope) -> Result<u64> {
        let mut notes = lock(&self.notes);
        lock(&self.note_writes).remove(scope);
        Ok(notes.remove(scope).map_or(0, |tree| tree.len() as u64))
    }
}
