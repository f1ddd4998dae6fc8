//! The `NoteStore` contract, against the in-memory store (owned, shared and borrowed) and
//! against broken stores that the suite must catch.

use std::sync::Arc;

use agent_memory_core::evidence::{
    Action, AuditEntry, AuditFilter, Evidence, Status, Vouch, Writer,
};
use agent_memory_core::store::notes::{
    Decision, Forgotten, HeldNote, NoteFile, NoteHit, NoteLimits, NotePath, NoteRecord,
    NoteScopeSummary, NoteStore, NoteVersion,
};
use agent_memory_core::testkit::{TestClock, notes, run};
use agent_memory_core::{AuditStore, MetaKey, MetaStore, Page, Provenance};
use agent_memory_core::{InMemoryStore, Result, Scope};

#[test]
fn in_memory_store_obeys_the_contract() {
    let make = || InMemoryStore::with_clock(TestClock);
    if let Err(report) = run(notes::SUITE, &notes::cases(), make) {
        panic!("{report}");
    }
}

#[test]
fn a_shared_or_borrowed_store_obeys_the_contract() {
    let shared = || Arc::new(InMemoryStore::with_clock(TestClock));
    if let Err(report) = run(notes::SUITE, &notes::cases(), shared) {
        panic!("{report}");
    }
    let borrowed = || &*Box::leak(Box::new(InMemoryStore::with_clock(TestClock)));
    if let Err(report) = run(notes::SUITE, &notes::cases(), borrowed) {
        panic!("{report}");
    }
}

/// An in-memory store with one seeded defect, so each test shows a case of the suite can
/// fail.
struct Broken {
    defect: Defect,
    inner: InMemoryStore,
    /// The vouches kept without an entry (`VouchUnaudited`).
    unaudited: std::sync::Mutex<std::collections::BTreeSet<(String, String, String)>>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Defect {
    CreateOverwrites,
    ReplaceIgnoresExpected,
    DeleteMatchesPrefix,
    RenameMovesOneNote,
    IgnoresLimits,
    SearchMatchesCase,
    ForgetKeepsNotes,
    /// Stamps its writes with the system clock instead of the one it was given.
    IgnoresItsClock,
    HistoryDropsEvidence,
    KeepsEveryVersion,
    ShowsHeldNotes,
    RejectDropsTheNote,
    ForgetByTakesWholeNotes,
    AuditSkipsReviews,
    /// Imports one note at a time, so a failing record leaves the earlier ones written.
    ImportsOneAtATime,
    /// Sets a setting without an entry in the audit trail.
    SettingUnaudited,
    /// Records the change of a setting but keeps the old value.
    SettingNotKept,
    /// Keeps a vouch without an entry in the audit trail.
    VouchUnaudited,
    /// Answers the vouches of every container of the memory.
    VouchedEverywhere,
    /// Keeps each vouch in a transaction of its own, so a bad one leaves the earlier kept.
    VouchesOneAtATime,
    /// Answers every entry, whatever the filter.
    AuditFilterIgnored,
    /// Counts every entry of the trail as the filtered page's total.
    AuditFilterCountsAll,
    /// Pages from the oldest whatever `before` asks.
    AuditBeforeIgnored,
    /// Bounds a page by `before` but takes the oldest entries below it.
    AuditBeforeTakesOldest,
}

impl Broken {
    fn with(defect: Defect) -> Self {
        let inner = if defect == Defect::IgnoresItsClock {
            InMemoryStore::new()
        } else {
            InMemoryStore::with_clock(TestClock)
        };
        Broken {
            defect,
            inner,
            unaudited: Default::default(),
        }
    }

    fn limits(&self, limits: &NoteLimits) -> NoteLimits {
        if self.defect == Defect::IgnoresLimits {
            return NoteLimits {
                max_note_bytes: u64::MAX / 4,
                max_scope_bytes: u64::MAX / 4,
                max_scope_notes: u64::MAX / 4,
                max_versions: limits.max_versions,
            };
        }
        if self.defect == Defect::KeepsEveryVersion {
            return NoteLimits {
                max_versions: u64::MAX,
                ..*limits
            };
        }
        *limits
    }
}

impl NoteStore for Broken {
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
        if self.defect == Defect::ShowsHeldNotes {
            return Ok(self.inner.note_history(scope, path)?.pop().map(|v| v.text));
        }
        self.inner.note_read(scope, path)
    }
    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
        self.inner.note_list(scope, dir)
    }
    fn note_create(
        &self,
        scope: &Scope,
        path: &NotePath,
        text: &str,
        evidence: &Evidence,
        limits: &NoteLimits,
    ) -> Result<()> {
        if self.defect == Defect::CreateOverwrites {
            self.inner.note_delete(scope, path, &evidence.provenance)?;
        }
        self.inner
            .note_create(scope, path, text, evidence, &self.limits(limits))
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
        let expected = match self.defect {
            Defect::ReplaceIgnoresExpected => self
                .inner
                .note_read(scope, path)?
                .unwrap_or_else(|| expected.to_owned()),
            _ => expected.to_owned(),
        };
        self.inner
            .note_replace(scope, path, &expected, text, evidence, &self.limits(limits))
    }
    fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64> {
        if self.defect != Defect::DeleteMatchesPrefix {
            return self.inner.note_delete(scope, path, by);
        }
        let mut deleted = 0;
        for file in self.inner.note_list(scope, None)? {
            if file.path.as_str().starts_with(path.as_str()) {
                deleted += self.inner.note_delete(scope, &file.path, by)?;
            }
        }
        Ok(deleted)
    }
    fn note_rename(
        &self,
        scope: &Scope,
        from: &NotePath,
        to: &NotePath,
        by: &Provenance,
    ) -> Result<u64> {
        let listed = self.inner.note_list(scope, Some(from))?;
        match listed.first() {
            Some(first) if self.defect == Defect::RenameMovesOneNote && first.path != *from => {
                let target = first.path.moved(from, to)?;
                let text = self
                    .inner
                    .note_read(scope, &first.path)?
                    .unwrap_or_default();
                let evidence = Evidence::unscreened(by.clone());
                self.inner
                    .note_create(scope, &target, &text, &evidence, &NoteLimits::default())?;
                self.inner.note_delete(scope, &first.path, by)?;
                Ok(1)
            }
            _ => self.inner.note_rename(scope, from, to, by),
        }
    }
    fn note_search(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        terms: &[&str],
        limit: usize,
    ) -> Result<Vec<NoteHit>> {
        let hits = self.inner.note_search(scope, dir, terms, limit)?;
        if self.defect != Defect::SearchMatchesCase {
            return Ok(hits);
        }
        Ok(hits
            .into_iter()
            .filter(|h| terms.iter().all(|t| h.text.contains(t)))
            .collect())
    }
    fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>> {
        self.inner.note_scopes()
    }
    fn note_import(
        &self,
        scope: &Scope,
        records: &[NoteRecord],
        limits: &NoteLimits,
        by: &Provenance,
    ) -> Result<()> {
        if self.defect == Defect::ImportsOneAtATime {
            for record in records {
                self.inner
                    .note_import(scope, std::slice::from_ref(record), limits, by)?;
            }
            return Ok(());
        }
        self.inner.note_import(scope, records, limits, by)
    }
    fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64> {
        if self.defect == Defect::ForgetKeepsNotes {
            return Ok(self.inner.note_list(scope, None)?.len() as u64);
        }
        self.inner.note_forget(scope, by)
    }
    fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>> {
        let mut versions = self.inner.note_history(scope, path)?;
        if self.defect == Defect::HistoryDropsEvidence {
            for v in &mut versions {
                v.evidence.reasons.clear();
                v.evidence.status = Status::Clean;
                v.evidence.provenance.session = None;
            }
        }
        Ok(versions)
    }
    fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>> {
        self.inner.note_held(scope, limit)
    }
    fn note_review(
        &self,
        scope: &Scope,
        path: &NotePath,
        version: u64,
        decision: Decision,
        by: &Provenance,
    ) -> Result<()> {
        self.inner.note_review(scope, path, version, decision, by)?;
        if self.defect == Defect::RejectDropsTheNote && decision == Decision::Reject {
            self.inner.note_delete(scope, path, by)?;
        }
        Ok(())
    }
    fn note_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Forgotten> {
        if self.defect != Defect::ForgetByTakesWholeNotes {
            return self.inner.note_forget_by(scope, writer, by);
        }
        writer.check()?;
        let mut forgot = Forgotten::default();
        for summary in self.inner.note_scopes()? {
            if scope.is_some_and(|s| *s != summary.scope) {
                continue;
            }
            for file in self.inner.note_list(&summary.scope, None)? {
                let versions = self.inner.note_history(&summary.scope, &file.path)?;
                if versions
                    .iter()
                    .any(|v| writer.matches(&v.evidence.provenance))
                {
                    forgot.versions += versions.len() as u64;
                    forgot.notes += self.inner.note_delete(&summary.scope, &file.path, by)?;
                }
            }
        }
        Ok(forgot)
    }
}

impl AuditStore for Broken {
    fn audit_select(
        &self,
        filter: &AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        let mut page = match self.defect {
            Defect::AuditFilterIgnored => {
                self.inner.audit_select(&AuditFilter::all(), after, limit)?
            }
            Defect::AuditFilterCountsAll => Page {
                total: self.inner.audit_page(None, 0)?.total,
                ..self.inner.audit_select(filter, after, limit)?
            },
            Defect::AuditBeforeIgnored => {
                let filter = AuditFilter {
                    before: None,
                    ..filter.clone()
                };
                self.inner.audit_select(&filter, after, limit)?
            }
            Defect::AuditBeforeTakesOldest => {
                let unbounded = AuditFilter {
                    before: None,
                    ..filter.clone()
                };
                let mut page = self.inner.audit_select(&unbounded, after, usize::MAX)?;
                page.items
                    .retain(|e| filter.before.is_none_or(|before| e.seq < before));
                page.items.truncate(limit);
                page
            }
            _ => self.inner.audit_select(filter, after, limit)?,
        };
        if self.defect == Defect::AuditSkipsReviews {
            page.items
                .retain(|e: &AuditEntry| e.action != Action::Approve);
        }
        Ok(page)
    }

    fn setting_set(&self, key: &MetaKey, value: &str, by: &Provenance) -> Result<Option<String>> {
        match self.defect {
            Defect::SettingUnaudited => self.inner.meta_set(key, value),
            Defect::SettingNotKept => {
                let previous = self.inner.meta_get(key)?;
                self.inner.setting_set(key, value, by)?;
                match &previous {
                    Some(previous) => self.inner.meta_set(key, previous)?,
                    None => self.inner.meta_delete(key).map(|_| None)?,
                };
                Ok(previous)
            }
            _ => self.inner.setting_set(key, value, by),
        }
    }

    fn vouch(&self, vouches: &[Vouch<'_>], by: &Provenance) -> Result<usize> {
        match self.defect {
            Defect::VouchUnaudited => {
                let mut unaudited = self.unaudited.lock().expect("lock");
                let mut new = 0;
                for vouch in vouches {
                    vouch.check()?;
                    new += usize::from(unaudited.insert((
                        vouch.memory.to_owned(),
                        vouch.container.to_owned(),
                        vouch.digest.to_owned(),
                    )));
                }
                Ok(new)
            }
            Defect::VouchesOneAtATime => {
                let mut new = 0;
                for vouch in vouches {
                    new += self.inner.vouch(std::slice::from_ref(vouch), by)?;
                }
                Ok(new)
            }
            _ => self.inner.vouch(vouches, by),
        }
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        let unaudited = self.unaudited.lock().expect("lock");
        let mut all: std::collections::BTreeSet<String> = unaudited
            .iter()
            .filter(|(m, c, _)| m == memory && c == container)
            .map(|(_, _, d)| d.clone())
            .collect();
        if self.defect == Defect::VouchedEverywhere {
            for other in ["s-1", "s-2", "s-3"] {
                all.extend(self.inner.vouched(memory, other)?);
            }
        } else {
            all.extend(self.inner.vouched(memory, container)?);
        }
        Ok(all.into_iter().collect())
    }
}

#[test]
fn the_suite_catches_broken_stores() {
    let table = [
        (Defect::CreateOverwrites, "create refuses a taken path"),
        (
            Defect::ReplaceIgnoresExpected,
            "replace is compare and swap",
        ),
        (
            Defect::DeleteMatchesPrefix,
            "delete a note or a directory tree",
        ),
        (
            Defect::RenameMovesOneNote,
            "rename a note or a directory tree",
        ),
        (Defect::IgnoresLimits, "limits are kept"),
        (
            Defect::SearchMatchesCase,
            "search matches every term ignoring case",
        ),
        (
            Defect::ForgetKeepsNotes,
            "scopes list with counts and forget",
        ),
        (
            Defect::IgnoresItsClock,
            "scopes stamp each write with the store's clock",
        ),
        (
            Defect::HistoryDropsEvidence,
            "every write is a version with its evidence",
        ),
        (
            Defect::KeepsEveryVersion,
            "a note keeps at most its limit of versions",
        ),
        (
            Defect::ShowsHeldNotes,
            "a held note is left out of every read until approved",
        ),
        (
            Defect::RejectDropsTheNote,
            "a rejected version falls back to the one before",
        ),
        (
            Defect::ForgetByTakesWholeNotes,
            "forget by provenance takes one writer's versions",
        ),
        (
            Defect::AuditSkipsReviews,
            "the audit trail records writes, reviews and forgets",
        ),
        (
            Defect::ImportsOneAtATime,
            "an import writes every note with its versions, or nothing",
        ),
        (
            Defect::SettingUnaudited,
            "a setting changed is in the audit trail with who changed it",
        ),
        (
            Defect::SettingNotKept,
            "a setting changed is in the audit trail with who changed it",
        ),
        (
            Defect::VouchUnaudited,
            "a vouch is kept per container and in the audit trail",
        ),
        (
            Defect::VouchedEverywhere,
            "a vouch is kept per container and in the audit trail",
        ),
        (
            Defect::VouchesOneAtATime,
            "a vouch is kept per container and in the audit trail",
        ),
        (
            Defect::AuditFilterIgnored,
            "the audit trail pages by memory and action",
        ),
        (
            Defect::AuditFilterCountsAll,
            "the audit trail pages by memory and action",
        ),
        (
            Defect::AuditBeforeIgnored,
            "the audit trail pages back from the newest",
        ),
        (
            Defect::AuditBeforeTakesOldest,
            "the audit trail pages back from the newest",
        ),
    ];
    for (defect, case) in table {
        let report = run(notes::SUITE, &notes::cases(), || Broken::with(defect))
            .expect_err("a broken store must fail the contract");
        assert!(
            report.failed(case),
            "{defect:?}: {case} should fail:\n{report}"
        );
    }
}
