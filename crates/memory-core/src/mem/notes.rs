//! [`NoteStore`] and [`AuditStore`] for [`InMemoryStore`]: one sorted map of path to versions
//! per scope, every call under one lock.

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;
use crate::evidence::{
    Action, AuditEntry, AuditFilter, Evidence, NO_SCOPE, STORE_MEMORY, Status, Vouch, WriteRun,
    Writer, forget_detail, setting_detail, write_detail,
};
use crate::mem::{InMemoryStore, lock};
use crate::names::{MetaKey, Scope};
use crate::provenance::Provenance;
use crate::store::Page;
use crate::store::audit::AuditStore;
use crate::store::notes::{
    Decision, Forgotten, HeldNote, Left, NOTE_CHANGED, NOTE_EXISTS, NOTE_HELD, NOTE_INTO_ITSELF,
    NOTE_IS_DIRECTORY, NOTE_NOT_HELD, NOTE_UNDER_NOTE, NoteFile, NoteHit, NoteLimits, NotePath,
    NoteRecord, NoteScopeSummary, NoteStore, NoteVersion, forget_plan, matches_terms,
    note_conflict, note_not_found,
};
use crate::time::Clock;

/// A note: its kept versions, oldest first, never empty.
#[derive(Clone, Debug)]
pub(crate) struct MemNote {
    versions: Vec<NoteVersion>,
}

impl MemNote {
    fn newest(&self) -> &NoteVersion {
        self.versions.last().expect("a note has a version")
    }

    fn text(&self) -> &str {
        &self.newest().text
    }

    fn visible(&self) -> bool {
        self.newest().evidence.status.is_visible()
    }

    /// Adds `text` as the newest version, dropping the oldest past `max` (at least 1 kept).
    fn push(&mut self, text: &str, evidence: &Evidence, max: u64) {
        let version = self.newest().version + 1;
        self.versions.push(NoteVersion {
            version,
            text: text.to_owned(),
            evidence: evidence.clone(),
        });
        let keep = usize::try_from(max.max(1)).unwrap_or(usize::MAX);
        if self.versions.len() > keep {
            let drop = self.versions.len() - keep;
            self.versions.drain(..drop);
        }
    }
}

/// The notes of every scope.
pub(crate) type NoteTrees = BTreeMap<Scope, BTreeMap<NotePath, MemNote>>;

/// The audit trail: its entries, oldest first, with the position of the newest entry about
/// each item, so a write finds whether it continues its writer's run without a scan.
#[derive(Debug, Default)]
pub(crate) struct AuditTrail {
    entries: Vec<AuditEntry>,
    newest: HashMap<(String, String, String), usize>,
}

impl AuditTrail {
    /// Every entry, oldest first.
    pub(crate) fn iter(&self) -> std::slice::Iter<'_, AuditEntry> {
        self.entries.iter()
    }

    /// The newest entry about `item` of `memory` in `scope`.
    fn newest(&self, memory: &str, scope: &str, item: &str) -> Option<&AuditEntry> {
        let key = (memory.to_owned(), scope.to_owned(), item.to_owned());
        self.newest.get(&key).map(|&i| &self.entries[i])
    }

    /// Appends `entry`.
    fn push(&mut self, entry: AuditEntry) {
        let key = (
            entry.memory.clone(),
            entry.scope.clone(),
            entry.item.clone(),
        );
        self.newest.insert(key, self.entries.len());
        self.entries.push(entry);
    }
}

type Tree = BTreeMap<NotePath, MemNote>;

fn at_or_below<'a>(
    tree: &'a Tree,
    dir: Option<&'a NotePath>,
) -> impl Iterator<Item = (&'a NotePath, &'a MemNote)> {
    tree.iter()
        .filter(move |(path, _)| dir.is_none_or(|dir| path.is_at_or_below(dir)))
}

/// The visible notes at or below `dir`.
fn visible_at_or_below<'a>(
    tree: &'a Tree,
    dir: Option<&'a NotePath>,
) -> impl Iterator<Item = (&'a NotePath, &'a MemNote)> {
    at_or_below(tree, dir).filter(|(_, note)| note.visible())
}

/// The conflict of writing a note at `path`, if any.
fn placement_conflict(tree: &Tree, path: &NotePath) -> Option<&'static str> {
    if let Some(note) = tree.get(path) {
        return Some(if note.visible() {
            NOTE_EXISTS
        } else {
            NOTE_HELD
        });
    }
    if at_or_below(tree, Some(path)).next().is_some() {
        return Some(NOTE_IS_DIRECTORY);
    }
    let under_note = path.ancestors().any(|a| tree.contains_key(a));
    under_note.then_some(NOTE_UNDER_NOTE)
}

fn totals(tree: &Tree) -> (u64, u64) {
    let bytes = tree.values().map(|n| n.text().len() as u64).sum();
    (tree.len() as u64, bytes)
}

impl InMemoryStore {
    /// Records that `scope`'s notes changed now; called with the notes lock held.
    fn note_written(&self, scope: &Scope) {
        lock(&self.note_writes).insert(scope.clone(), self.clock.now());
    }

    /// Appends to the audit trail; called with the notes lock held.
    fn audit(&self, action: Action, scope: &Scope, item: &str, by: &Provenance, detail: String) {
        self.audit_in("notes", action, scope.as_str(), item, by, detail);
    }

    /// Appends an entry about an item of `memory` to the audit trail; called with that
    /// memory's lock held, so no reader sees the change without its entry.
    pub(crate) fn audit_in(
        &self,
        memory: &str,
        action: Action,
        scope: &str,
        item: &str,
        by: &Provenance,
        detail: String,
    ) {
        let mut trail = lock(&self.audit);
        let seq = trail.entries.last().map_or(1, |e| e.seq + 1);
        trail.push(AuditEntry {
            seq,
            action,
            memory: memory.to_owned(),
            scope: scope.to_owned(),
            item: item.to_owned(),
            by: by.clone(),
            detail,
        });
    }
}

impl InMemoryStore {
    /// Appends the entry that opens `run` to the audit trail, unless the newest entry about
    /// its item is a write of the same run; called with that memory's lock held.
    pub(crate) fn audit_write_run(&self, run: &WriteRun<'_>) {
        let trail = lock(&self.audit);
        let newest = trail.newest(run.memory, run.scope, run.item);
        if newest.is_some_and(|e| run.continues(e)) {
            return;
        }
        drop(trail);
        self.audit_in(
            run.memory,
            Action::Write,
            run.scope,
            run.item,
            &run.by,
            run.detail.to_owned(),
        );
    }
}

impl NoteStore for InMemoryStore {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        Ok(lock(&self.notes).get(scope).and_then(|tree| {
            tree.get(path)
                .filter(|n| n.visible())
                .map(|n| n.text().to_owned())
        }))
    }

    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        let notes = lock(&self.notes);
        let Some(tree) = notes.get(scope) else {
            return Ok(Vec::new());
        };
        Ok(visible_at_or_below(tree, dir)
            .map(|(path, note)| NoteFile {
                path: path.clone(),
                bytes: note.text().len() as u64,
            })
            .collect())
    }

    fn note_create(
        &self,
        scope: &Scope,
        path: &NotePath,
        text: &str,
        evidence: &Evidence,
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
        tree.insert(
            path.clone(),
            MemNote {
                versions: vec![NoteVersion {
                    version: 1,
                    text: text.to_owned(),
                    evidence: evidence.clone(),
                }],
            },
        );
        self.note_written(scope);
        let detail = write_detail(1, evidence.status);
        self.audit(
            Action::Write,
            scope,
            path.as_str(),
            &evidence.provenance,
            detail,
        );
        Ok(())
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
        limits.check_note(path, text.len() as u64)?;
        let mut notes = lock(&self.notes);
        let tree = notes.get_mut(scope).ok_or_else(|| note_not_found(path))?;
        let (count, bytes) = totals(tree);
        let note = tree
            .get_mut(path)
            .filter(|n| n.visible())
            .ok_or_else(|| note_not_found(path))?;
        if note.text() != expected {
            return Err(note_conflict(path, NOTE_CHANGED));
        }
        let after = bytes - note.text().len() as u64 + text.len() as u64;
        limits.check_scope(scope, count, after)?;
        note.push(text, evidence, limits.max_versions);
        let version = note.newest().version;
        self.note_written(scope);
        let detail = write_detail(version, evidence.status);
        self.audit(
            Action::Write,
            scope,
            path.as_str(),
            &evidence.provenance,
            detail,
        );
        Ok(())
    }

    fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64> {
        let mut notes = lock(&self.notes);
        let Some(tree) = notes.get_mut(scope) else {
            return Ok(0);
        };
        let doomed: Vec<NotePath> = at_or_below(tree, Some(path))
            .filter(|(p, n)| *p != path || n.visible())
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
            let detail = format!("{} notes", doomed.len());
            self.audit(Action::Delete, scope, path.as_str(), by, detail);
        }
        Ok(doomed.len() as u64)
    }

    fn note_rename(
        &self,
        scope: &Scope,
        from: &NotePath,
        to: &NotePath,
        by: &Provenance,
    ) -> Result<u64> {
        let mut notes = lock(&self.notes);
        let tree = notes.get_mut(scope).ok_or_else(|| note_not_found(from))?;
        let moving: Vec<NotePath> = at_or_below(tree, Some(from))
            .filter(|(p, n)| *p != from || n.visible())
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
            if let Some(note) = tree.remove(old) {
                tree.insert(new, note);
            }
        }
        self.note_written(scope);
        let detail = format!("to {to}, {} notes", moving.len());
        self.audit(Action::Rename, scope, from.as_str(), by, detail);
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
        Ok(visible_at_or_below(tree, dir)
            .filter(|(_, note)| matches_terms(note.text(), terms))
            .take(limit)
            .map(|(path, note)| NoteHit {
                path: path.clone(),
                text: note.text().to_owned(),
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
                    held: tree.values().filter(|n| !n.visible()).count() as u64,
                }
            })
            .collect())
    }

    fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64> {
        let mut notes = lock(&self.notes);
        lock(&self.note_writes).remove(scope);
        let gone = notes.remove(scope).map_or(0, |tree| tree.len() as u64);
        let detail = forget_detail(&[(gone, "note", "notes")]);
        self.audit(Action::Forget, scope, "", by, detail);
        Ok(gone)
    }

    fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>> {
        Ok(lock(&self.notes)
            .get(scope)
            .and_then(|tree| tree.get(path))
            .map(|note| note.versions.clone())
            .unwrap_or_default())
    }

    fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>> {
        let notes = lock(&self.notes);
        Ok(notes
            .iter()
            .filter(|(s, _)| scope.is_none_or(|scope| scope == *s))
            .flat_map(|(s, tree)| {
                tree.iter()
                    .filter(|(_, n)| !n.visible())
                    .map(move |(path, n)| HeldNote {
                        scope: s.clone(),
                        path: path.clone(),
                        version: n.newest().clone(),
                    })
            })
            .take(limit)
            .collect())
    }

    fn note_review(
        &self,
        scope: &Scope,
        path: &NotePath,
        version: u64,
        decision: Decision,
        by: &Provenance,
    ) -> Result<()> {
        let mut notes = lock(&self.notes);
        let tree = notes.get_mut(scope).ok_or_else(|| note_not_found(path))?;
        let note = tree.get_mut(path).ok_or_else(|| note_not_found(path))?;
        let newest = note.newest();
        if newest.version != version || newest.evidence.status != Status::Quarantined {
            return Err(note_conflict(path, NOTE_NOT_HELD));
        }
        let action = match decision {
            Decision::Approve => {
                if let Some(newest) = note.versions.last_mut() {
                    newest.evidence.status = Status::Approved;
                }
                Action::Approve
            }
            Decision::Reject => {
                note.versions.pop();
                if note.versions.is_empty() {
                    tree.remove(path);
                    if tree.is_empty() {
                        notes.remove(scope);
                    }
                }
                Action::Reject
            }
        };
        self.note_written(scope);
        self.audit(
            action,
            scope,
            path.as_str(),
            by,
            format!("version {version}"),
        );
        Ok(())
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
        }
        let mut notes = lock(&self.notes);
        let mut tree = notes.get(scope).cloned().unwrap_or_default();
        for record in records {
            if let Some(reason) = placement_conflict(&tree, &record.path) {
                return Err(note_conflict(&record.path, reason));
            }
            let newest = record.newest().map_or(0, |v| v.text.len() as u64);
            let (count, bytes) = totals(&tree);
            limits.check_scope(scope, count + 1, bytes + newest)?;
            tree.insert(
                record.path.clone(),
                MemNote {
                    versions: record.versions.clone(),
                },
            );
        }
        if records.is_empty() {
            return Ok(());
        }
        notes.insert(scope.clone(), tree);
        self.note_written(scope);
        for record in records {
            let detail = record.import_detail();
            self.audit(Action::Write, scope, record.path.as_str(), by, detail);
        }
        Ok(())
    }

    fn note_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Forgotten> {
        writer.check()?;
        let mut notes = lock(&self.notes);
        let mut all = Forgotten::default();
        let mut touched: Vec<(Scope, NotePath, usize)> = Vec::new();
        for (s, tree) in notes.iter_mut() {
            if scope.is_some_and(|scope| scope != s) {
                continue;
            }
            tree.retain(|path, note| {
                let Some(plan) = forget_plan(&note.versions, writer) else {
                    return true;
                };
                all.add(&plan);
                touched.push((s.clone(), path.clone(), plan.gone.len()));
                note.versions.retain(|v| !plan.gone.contains(&v.version));
                plan.left != Left::Nothing
            });
        }
        notes.retain(|_, tree| !tree.is_empty());
        for (s, path, gone) in touched {
            self.note_written(&s);
            let detail = format!("{gone} versions");
            self.audit(Action::Forget, &s, path.as_str(), by, detail);
        }
        Ok(all)
    }
}

impl AuditStore for InMemoryStore {
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        filter.check()?;
        let trail = lock(&self.audit);
        let total = trail.iter().filter(|e| filter.matches(e)).count() as u64;
        Ok(Page {
            items: filter.page(trail.iter(), after, limit),
            total,
        })
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        // The setting's lock is held while the entry is appended, so no reader sees the new
        // value without its entry.
        let mut meta = lock(&self.meta);
        let previous = meta.insert(key.clone(), value.to_owned());
        let detail = setting_detail(value, previous.as_deref());
        self.audit_in(
            STORE_MEMORY,
            Action::Write,
            NO_SCOPE,
            key.as_str(),
            by,
            detail,
        );
        Ok(previous)
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        for vouch in vouches {
            vouch.check()?;
        }
        Ok(self.keep_vouches(vouches, by))
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        Ok(lock(&self.vouches)
            .iter()
            .filter(|(m, c, _)| m == memory && c == container)
            .map(|(_, _, digest)| digest.clone())
            .collect())
    }
}

impl InMemoryStore {
    /// Keeps `vouches` (checked) by `by`, each with its `approve` entry in the trail; returns
    /// how many are new.
    pub(crate) fn keep_vouches(&self, vouches: &[Vouch<'_>], by: &Provenance) -> usize {
        let mut kept = lock(&self.vouches);
        let mut new = 0;
        for vouch in vouches {
            new += usize::from(kept.insert((
                vouch.memory.to_owned(),
                vouch.container.to_owned(),
                vouch.digest.to_owned(),
            )));
            self.audit_in(
                vouch.memory,
                Action::Approve,
                NO_SCOPE,
                vouch.container,
                by,
                vouch.detail(),
            );
        }
        new
    }
}
