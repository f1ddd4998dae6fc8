//! [`NoteStore`]: a tree of UTF-8 text notes per scope, the storage behind the notes memory
//! (the `/memories` directory of a client-side memory tool).
//!
//! The store keeps notes only; a directory is every note whose path lies below it, so a
//! directory exists exactly while it holds a note, and the root of a scope always exists.
//! Paths are [`NotePath`]s: relative, `/`-separated, without `.`, `..`, backslashes or control
//! characters, checked once when the value is made. The rules every backend enforces inside
//! its own transaction are here as functions and constants, so backends word them alike:
//!
//! - a note and a directory never share a path: creating or renaming onto a directory, or
//!   below a note, is a [`Conflict`](crate::Error::Conflict);
//! - [`NoteStore::note_replace`] is a compare-and-swap on the whole text, so an editor that
//!   read an older text never overwrites another's edit;
//! - every write checks the note's size and the scope's total against [`NoteLimits`] in the
//!   same transaction, so concurrent writers cannot pass a limit together;
//! - every create and replace is a new version of the note, kept with its [`Evidence`] (who
//!   wrote it, what the write screen found): [`NoteStore::note_history`] reads them, up to
//!   [`NoteLimits::max_versions`] per note, and a delete or forget takes every version;
//! - a note whose newest version is [`Status::Quarantined`](crate::evidence::Status::Quarantined) is held for review: no read shows
//!   it (read, list, search), a write to its path finds nothing there, and a create there is
//!   the conflict [`NOTE_HELD`]; a directory's delete or rename takes it with the rest.
//!   [`NoteStore::note_review`] approves it or rejects it (the note falls back to the version
//!   before, or is gone);
//! - every write, review and forget appends an [`AuditEntry`](crate::evidence::AuditEntry) in
//!   its own transaction ([`AuditStore`](crate::store::AuditStore)).

use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::evidence::{Evidence, Writer};
use crate::names::Scope;
use crate::provenance::Provenance;
use crate::store::Page;
use crate::time::Timestamp;

/// The longest note path accepted, in bytes.
pub const MAX_NOTE_PATH_BYTES: usize = 1024;
/// The longest segment (file or directory name) of a note path, in bytes.
pub const MAX_NOTE_SEGMENT_BYTES: usize = 255;
/// The deepest a note may lie: segments of its path.
pub const MAX_NOTE_DEPTH: usize = 32;

/// The path of a note below its scope's root, e.g. `projects/plan.md`: non-empty segments
/// separated by `/`, none of them `.` or `..`, no backslash and no control character, at most
/// [`MAX_NOTE_PATH_BYTES`] bytes and [`MAX_NOTE_DEPTH`] segments.
///
/// ```
/// use agent_memory_core::store::notes::NotePath;
///
/// let path = NotePath::new("projects/plan.md")?;
/// assert_eq!(path.name(), "plan.md");
/// assert!(path.is_below(&NotePath::new("projects")?));
/// assert!(NotePath::new("../etc/passwd").is_err());
/// # Ok::<(), agent_memory_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NotePath(String);

impl NotePath {
    /// Validates `value` and wraps it.
    pub fn new(value: impl Into<String>) -> Result<Self> {
        let value = value.into();
        let reason = path_problem(&value);
        match reason {
            None => Ok(NotePath(value)),
            Some(reason) => Err(Error::InvalidName {
                kind: "note path",
                value,
                reason,
            }),
        }
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The last segment: the note's (or directory's) own name.
    pub fn name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// The directories above this path, nearest last: `a`, `a/b` for `a/b/c`.
    pub fn ancestors(&self) -> impl Iterator<Item = &str> {
        self.0.match_indices('/').map(move |(at, _)| &self.0[..at])
    }

    /// Whether this path lies strictly below the directory `dir`.
    pub fn is_below(&self, dir: &NotePath) -> bool {
        self.0.len() > dir.0.len()
            && self.0.starts_with(&dir.0)
            && self.0[dir.0.len()..].starts_with('/')
    }

    /// Whether this path is `other` or lies below it.
    pub fn is_at_or_below(&self, other: &NotePath) -> bool {
        self == other || self.is_below(other)
    }

    /// This path moved from below (or at) `from` to the same place below (or at) `to`; the
    /// result is checked like any path, so a move that makes it too long fails.
    pub fn moved(&self, from: &NotePath, to: &NotePath) -> Result<NotePath> {
        match self.0.strip_prefix(&from.0) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                NotePath::new(format!("{}{rest}", to.0))
            }
            _ => Err(Error::invalid_input(
                format!("note path {:?}", self.0),
                format!("does not lie below {:?}", from.0),
            )),
        }
    }

    /// The bounds of the paths strictly below this directory: they are those in
    /// `[lower, upper)`, a range a sorted index scans directly (`path >= lower AND path <
    /// upper`).
    pub fn below_bounds(&self) -> (String, String) {
        // '0' is the character after '/'.
        (format!("{}/", self.0), format!("{}0", self.0))
    }

    /// A path a store read back from its table: one that fails the rules is corruption.
    pub fn stored(path: String) -> Result<NotePath> {
        NotePath::new(path).map_err(|e| Error::corrupt("notes table", e.to_string()))
    }
}

fn path_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("must not be empty");
    }
    if value.len() > MAX_NOTE_PATH_BYTES {
        return Some("must be at most 1024 bytes");
    }
    if value.chars().any(char::is_control) {
        return Some("must not contain control characters");
    }
    if value.contains('\\') {
        return Some("must not contain backslashes");
    }
    if value.starts_with('/') {
        return Some("must be relative to the root");
    }
    let mut depth = 0;
    for segment in value.split('/') {
        depth += 1;
        match segment {
            "" => return Some("must not contain an empty segment"),
            "." | ".." => return Some("must not contain . or .. segments"),
            s if s.len() > MAX_NOTE_SEGMENT_BYTES => {
                return Some("must not have a segment over 255 bytes");
            }
            _ => {}
        }
    }
    if depth > MAX_NOTE_DEPTH {
        return Some("must be at most 32 segments deep");
    }
    None
}

impl fmt::Display for NotePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::borrow::Borrow<str> for NotePath {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for NotePath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The bounds a write must keep: the size of one note and the total of a scope. Backends check
/// them inside the write's transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoteLimits {
    /// The largest note, in bytes of UTF-8 text.
    pub max_note_bytes: u64,
    /// The most bytes all notes of a scope may hold together.
    pub max_scope_bytes: u64,
    /// The most notes a scope may hold.
    pub max_scope_notes: u64,
    /// The most versions a note keeps, its newest among them (at least 1): a write past it
    /// forgets the oldest.
    pub max_versions: u64,
}

impl Default for NoteLimits {
    /// 256 KiB per note, 64 MiB and 100,000 notes per scope, 32 versions per note.
    fn default() -> Self {
        NoteLimits {
            max_note_bytes: 256 * 1024,
            max_scope_bytes: 64 * 1024 * 1024,
            max_scope_notes: 100_000,
            max_versions: 32,
        }
    }
}

impl NoteLimits {
    /// Fails when a note of `bytes` bytes at `path` is over the note limit.
    pub fn check_note(&self, path: &NotePath, bytes: u64) -> Result<()> {
        if bytes > self.max_note_bytes {
            return Err(Error::invalid_input(
                format!("note {path}"),
                format!(
                    "{bytes} bytes, over the limit of {} bytes per note",
                    self.max_note_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Fails when a scope would hold `notes` notes of `bytes` bytes in all.
    pub fn check_scope(&self, scope: &Scope, notes: u64, bytes: u64) -> Result<()> {
        if bytes > self.max_scope_bytes {
            return Err(Error::invalid_input(
                format!("notes of scope {scope}"),
                format!(
                    "{bytes} bytes in all, over the limit of {} bytes per scope",
                    self.max_scope_bytes
                ),
            ));
        }
        if notes > self.max_scope_notes {
            return Err(Error::invalid_input(
                format!("notes of scope {scope}"),
                format!(
                    "{notes} notes, over the limit of {} notes per scope",
                    self.max_scope_notes
                ),
            ));
        }
        Ok(())
    }
}

/// One note of a listing: its path and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteFile {
    /// Where it is.
    pub path: NotePath,
    /// Its size in bytes of UTF-8 text.
    pub bytes: u64,
}

/// A note found by [`NoteStore::note_search`], with its whole text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteHit {
    /// Where it is.
    pub path: NotePath,
    /// Its text.
    pub text: String,
}

/// What [`NoteStore::note_scopes`] reports about one scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteScopeSummary {
    /// The scope.
    pub scope: Scope,
    /// How many notes it holds.
    pub notes: u64,
    /// Their bytes in all.
    pub bytes: u64,
    /// When a note of the scope was last created, changed, renamed or deleted, by the store's
    /// clock; `None` when no write since the store began keeping the time.
    pub last_write: Option<Timestamp>,
    /// How many of its notes are held for review (counted in `notes` and `bytes`, which are
    /// the room they take).
    pub held: u64,
}

/// One version of a note, as [`NoteStore::note_history`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteVersion {
    /// Its number: 1 for the note's first text, one more for each later write (a note that
    /// moved keeps its numbers; one deleted and created again starts at 1).
    pub version: u64,
    /// Its text.
    pub text: String,
    /// Who wrote it and what the screen found.
    pub evidence: Evidence,
}

/// A note held for review: its newest version is quarantined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldNote {
    /// Its scope.
    pub scope: Scope,
    /// Its path.
    pub path: NotePath,
    /// The held version.
    pub version: NoteVersion,
}

/// What a reviewer decides about a held version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Recall it from now on, marked [`Status::Approved`](crate::evidence::Status::Approved).
    Approve,
    /// Forget it: the note falls back to the version before it, or is gone.
    Reject,
}

/// A note with the versions it keeps, oldest first: what [`NoteStore::note_export`] reads and
/// [`NoteStore::note_import`] writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteRecord {
    /// Where it is.
    pub path: NotePath,
    /// Its versions, oldest first; the last is the note's text.
    pub versions: Vec<NoteVersion>,
}

impl NoteRecord {
    /// Refuses a record an import cannot write, naming what is wrong: no version, versions
    /// not numbered upward from 1 or more, more of them than `limits.max_versions`, or a
    /// text over `limits.max_note_bytes`.
    pub fn check(&self, limits: &NoteLimits) -> Result<()> {
        let item = || format!("note {}", self.path);
        if self.versions.is_empty() {
            return Err(Error::invalid_input(item(), "has no version"));
        }
        if self.versions.len() as u64 > limits.max_versions.max(1) {
            return Err(Error::invalid_input(
                item(),
                format!(
                    "{} versions, over the limit of {} per note",
                    self.versions.len(),
                    limits.max_versions.max(1)
                ),
            ));
        }
        let mut last = 0;
        for v in &self.versions {
            if v.version <= last {
                return Err(Error::invalid_input(
                    item(),
                    format!(
                        "version {} follows version {last}: versions are numbered upward from 1",
                        v.version
                    ),
                ));
            }
            last = v.version;
            limits.check_note(&self.path, v.text.len() as u64)?;
        }
        Ok(())
    }

    /// The newest version.
    pub fn newest(&self) -> Option<&NoteVersion> {
        self.versions.last()
    }

    /// The `detail` of the audit entry of its import.
    pub fn import_detail(&self) -> String {
        match (self.versions.first(), self.versions.last()) {
            (Some(first), Some(last)) => format!(
                "import of versions {} to {}, {}",
                first.version,
                last.version,
                last.evidence.status.as_str()
            ),
            _ => "import".to_owned(),
        }
    }
}

/// What [`NoteStore::note_forget_by`] took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forgotten {
    /// Versions forgotten.
    pub versions: u64,
    /// Notes left with no version, and so gone.
    pub notes: u64,
    /// Notes that fell back to an older version.
    pub restored: u64,
}

impl Forgotten {
    /// Adds what one note's [`ForgetPlan`] took.
    pub fn add(&mut self, plan: &ForgetPlan) {
        self.versions += plan.gone.len() as u64;
        match plan.left {
            Left::Newest => {}
            Left::FallBack(_) => self.restored += 1,
            Left::Nothing => self.notes += 1,
        }
    }
}

/// What forgetting one writer's versions does to a note, as [`forget_plan`] decides it; each
/// store carries it out in its own way, so that every store forgets alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForgetPlan {
    /// The numbers of the versions that go, oldest first; never empty.
    pub gone: Vec<u64>,
    /// What the note is left with.
    pub left: Left,
}

/// What a note is left with after a [`ForgetPlan`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Left {
    /// Its newest version stays; only older ones go.
    Newest,
    /// Its newest version goes: it falls back to this one, the newest of those left.
    FallBack(NoteVersion),
    /// No version is left, so the note is gone.
    Nothing,
}

/// Which of a note's `versions` (oldest first) `writer` wrote, and what is left without them;
/// `None` when the writer wrote none of them.
pub fn forget_plan(versions: &[NoteVersion], writer: &Writer) -> Option<ForgetPlan> {
    let (gone, kept): (Vec<&NoteVersion>, Vec<&NoteVersion>) = versions
        .iter()
        .partition(|v| writer.matches(&v.evidence.provenance));
    if gone.is_empty() {
        return None;
    }
    let newest = versions.last().map(|v| v.version);
    let left = match kept.last() {
        None => Left::Nothing,
        Some(last) if Some(last.version) == newest => Left::Newest,
        Some(last) => Left::FallBack((*last).clone()),
    };
    Some(ForgetPlan {
        gone: gone.iter().map(|v| v.version).collect(),
        left,
    })
}

/// The reason of the conflict when the path written holds a note held for review.
pub const NOTE_HELD: &str = "a note held for review is at this path";
/// The reason of the conflict when a review names a version that is not held.
pub const NOTE_NOT_HELD: &str = "that version is not the newest, held for review";

/// The reason of the conflict when a note already exists at the path written.
pub const NOTE_EXISTS: &str = "a note already exists at this path";
/// The reason of the conflict when the path written is a directory holding notes.
pub const NOTE_IS_DIRECTORY: &str = "it is a directory of notes";
/// The reason of the conflict when a directory above the path written is a note.
pub const NOTE_UNDER_NOTE: &str = "a directory above it is a note";
/// The reason of the conflict when a compare-and-swap finds another text.
pub const NOTE_CHANGED: &str = "its text changed since it was read";
/// The reason of the conflict when a directory would move into itself.
pub const NOTE_INTO_ITSELF: &str = "a directory cannot move into itself";

/// The conflict `reason` about the note at `path`.
pub fn note_conflict(path: &NotePath, reason: &'static str) -> Error {
    Error::conflict("note", path.as_str(), reason)
}

/// The note at `path` does not exist.
pub fn note_not_found(path: &NotePath) -> Error {
    Error::not_found("note", path.as_str())
}

/// Whether `error` is the conflict with `reason` that the rules above raise.
pub fn is_note_conflict(error: &Error, reason: &str) -> bool {
    matches!(error, Error::Conflict { entity: "note", reason: r, .. } if r == reason)
}

/// Whether `text` contains every term, ignoring ASCII case: the match rule of
/// [`NoteStore::note_search`], which every backend applies alike.
pub fn matches_terms(text: &str, terms: &[&str]) -> bool {
    let lower = text.to_ascii_lowercase();
    terms
        .iter()
        .all(|term| lower.contains(&term.to_ascii_lowercase()))
}

/// Trees of text notes, one per scope.
pub trait NoteStore: Send + Sync {
    /// The text of the note at `path`, or `None` when no note is there (a directory is not
    /// a note).
    fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>>;

    /// The note at `dir` and every note below it (`None`: every note of the scope), ordered
    /// by path (byte order).
    fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>>;

    /// [`note_list`](Self::note_list) a page at a time: up to `limit` of the notes at or
    /// below `dir` (`None`: the whole scope) whose path comes after `after` (all when
    /// `None`), ordered by path (byte order), with how many notes are at or below `dir`. The
    /// default slices the whole listing; a store on disk reads only the page.
    fn note_list_page(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        after: Option<&NotePath>,
        limit: usize,
    ) -> Result<Page<NoteFile>> {
        Ok(Page::after(
            self.note_list(scope, dir)?,
            after.map(NotePath::as_str),
            |f| f.path.as_str(),
            limit,
        ))
    }

    /// Creates the note at `path` holding `text`, its version 1, written as `evidence`
    /// says (held for review when its status is [`Status::Quarantined`](crate::evidence::Status::Quarantined)). Fails with a
    /// conflict ([`NOTE_EXISTS`], [`NOTE_HELD`], [`NOTE_IS_DIRECTORY`], [`NOTE_UNDER_NOTE`])
    /// when the path is taken, and with [`Error::InvalidInput`] when a limit would be
    /// passed; then nothing changes.
    fn note_create(
        &self,
        scope: &Scope,
        path: &NotePath,
        text: &str,
        evidence: &Evidence,
        limits: &NoteLimits,
    ) -> Result<()>;

    /// Replaces the text of the note at `path` with `text` only when it is `expected`: a
    /// new version, written as `evidence` says. Fails with [`Error::NotFound`] when there
    /// is no note (or it is held), with the conflict [`NOTE_CHANGED`] when its text
    /// differs, and with [`Error::InvalidInput`] when a limit would be passed; then nothing
    /// changes.
    fn note_replace(
        &self,
        scope: &Scope,
        path: &NotePath,
        expected: &str,
        text: &str,
        evidence: &Evidence,
        limits: &NoteLimits,
    ) -> Result<()>;

    /// Deletes the note at `path` (not a held one), or every note below the directory
    /// `path` (held ones too), with all their versions; returns how many were deleted (0:
    /// nothing was there). `by` is who, for the audit trail.
    fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64>;

    /// Moves the note at `from` (not a held one) to `to`, or every note below the directory
    /// `from` (held ones too) to the same place below `to`, with their versions; returns
    /// how many moved. Fails with [`Error::NotFound`] when nothing is at `from`, and with a
    /// conflict when `to` is taken (a note, a held note or a directory), lies below a note,
    /// or lies below `from`; then nothing changes. `by` is who, for the audit trail.
    fn note_rename(
        &self,
        scope: &Scope,
        from: &NotePath,
        to: &NotePath,
        by: &Provenance,
    ) -> Result<u64>;

    /// Every kept version of the note at `path`, held or not, oldest first; empty when no
    /// note is there.
    fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>>;

    /// The notes held for review, in `scope` (`None`: every scope), ordered by scope and
    /// path, at most `limit` of them.
    fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>>;

    /// Approves or rejects `version` of the note at `path`, which must be its newest and
    /// held (else the conflict [`NOTE_NOT_HELD`], or [`Error::NotFound`] when no note is
    /// there). A rejected version is forgotten: the note falls back to the version before
    /// it, or is gone when it had none. `by` is the reviewer, for the audit trail.
    fn note_review(
        &self,
        scope: &Scope,
        path: &NotePath,
        version: u64,
        decision: Decision,
        by: &Provenance,
    ) -> Result<()>;

    /// Forgets every version that `writer` wrote, in `scope` (`None`: every scope), in one
    /// step: a note whose newest version goes falls back to its newest one left, or is gone
    /// when none is left. The texts are erased as [`note_forget`](Self::note_forget) erases
    /// them. Fails on a filter naming nothing ([`Writer::check`]). `by` is who, for the
    /// audit trail.
    fn note_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<Forgotten>;

    /// The notes at or below `dir` (`None`: the whole scope) whose text contains every one
    /// of `terms` (ASCII case ignored, see [`matches_terms`]), ordered by path, at most
    /// `limit` of them. No terms match every note.
    fn note_search(
        &self,
        scope: &Scope,
        dir: Option<&NotePath>,
        terms: &[&str],
        limit: usize,
    ) -> Result<Vec<NoteHit>>;

    /// Every scope holding notes, ordered by name, with its counts.
    fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>>;

    /// Deletes every note of `scope` with all their versions; returns how many there were.
    /// In the same transaction it appends the forget to the audit trail (memory `notes`, an
    /// empty item for the whole scope, action `forget`, by `by`).
    fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64>;

    /// Every note of `scope`, held ones too, with the versions it keeps, by path. The default
    /// lists the notes and reads each one's history.
    fn note_export(&self, scope: &Scope) -> Result<Vec<NoteRecord>> {
        let mut paths: Vec<NotePath> = self
            .note_list(scope, None)?
            .into_iter()
            .map(|f| f.path)
            .collect();
        paths.extend(
            self.note_held(Some(scope), usize::MAX)?
                .into_iter()
                .map(|h| h.path),
        );
        paths.sort();
        paths.dedup();
        let mut records = Vec::with_capacity(paths.len());
        for path in paths {
            let versions = self.note_history(scope, &path)?;
            if !versions.is_empty() {
                records.push(NoteRecord { path, versions });
            }
        }
        Ok(records)
    }

    /// Writes `records` into `scope` in one step, each note with its versions and their
    /// evidence as given (a note whose newest version is quarantined is held), and one
    /// [`Action::Write`](crate::evidence::Action::Write) entry per note in the audit trail,
    /// by `by`. Fails, writing nothing, on a record [`NoteRecord::check`] refuses, with the
    /// conflict of [`note_create`](Self::note_create) when a path is taken (by a stored
    /// note or an earlier record), and when a limit of the scope would be passed.
    fn note_import(
        &self,
        scope: &Scope,
        records: &[NoteRecord],
        limits: &NoteLimits,
        by: &Provenance,
    ) -> Result<()>;
}

macro_rules! forward_note_store {
    ($($wrapper:ty),*) => {$(
        impl<S: NoteStore + ?Sized> NoteStore for $wrapper {
            fn note_read(&self, scope: &Scope, path: &NotePath) -> Result<Option<String>> {
                (**self).note_read(scope, path)
            }
            fn note_list(&self, scope: &Scope, dir: Option<&NotePath>) -> Result<Vec<NoteFile>> {
                (**self).note_list(scope, dir)
            }
            fn note_list_page(&self, scope: &Scope, dir: Option<&NotePath>, after: Option<&NotePath>, limit: usize) -> Result<Page<NoteFile>> {
                (**self).note_list_page(scope, dir, after, limit)
            }
            fn note_create(&self, scope: &Scope, path: &NotePath, text: &str, evidence: &Evidence, limits: &NoteLimits) -> Result<()> {
                (**self).note_create(scope, path, text, evidence, limits)
            }
            fn note_replace(&self, scope: &Scope, path: &NotePath, expected: &str, text: &str, evidence: &Evidence, limits: &NoteLimits) -> Result<()> {
                (**self).note_replace(scope, path, expected, text, evidence, limits)
            }
            fn note_delete(&self, scope: &Scope, path: &NotePath, by: &Provenance) -> Result<u64> {
                (**self).note_delete(scope, path, by)
            }
            fn note_rename(&self, scope: &Scope, from: &NotePath, to: &NotePath, by: &Provenance) -> Result<u64> {
                (**self).note_rename(scope, from, to, by)
            }
            fn note_history(&self, scope: &Scope, path: &NotePath) -> Result<Vec<NoteVersion>> {
                (**self).note_history(scope, path)
            }
            fn note_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldNote>> {
                (**self).note_held(scope, limit)
            }
            fn note_review(&self, scope: &Scope, path: &NotePath, version: u64, decision: Decision, by: &Provenance) -> Result<()> {
                (**self).note_review(scope, path, version, decision, by)
            }
            fn note_forget_by(&self, scope: Option<&Scope>, writer: &Writer, by: &Provenance) -> Result<Forgotten> {
                (**self).note_forget_by(scope, writer, by)
            }
            fn note_search(&self, scope: &Scope, dir: Option<&NotePath>, terms: &[&str], limit: usize) -> Result<Vec<NoteHit>> {
                (**self).note_search(scope, dir, terms, limit)
            }
            fn note_scopes(&self) -> Result<Vec<NoteScopeSummary>> {
                (**self).note_scopes()
            }
            fn note_forget(&self, scope: &Scope, by: &Provenance) -> Result<u64> {
                (**self).note_forget(scope, by)
            }
            fn note_export(&self, scope: &Scope) -> Result<Vec<NoteRecord>> {
                (**self).note_export(scope)
            }
            fn note_import(&self, scope: &Scope, records: &[NoteRecord], limits: &NoteLimits, by: &Provenance) -> Result<()> {
                (**self).note_import(scope, records, limits, by)
            }
        }
    )*};
}

// A borrowed or shared store is the store (see `store::shared`).
forward_note_store!(&S, Arc<S>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Source;

    fn version(version: u64, session: &str) -> NoteVersion {
        let at = Timestamp::from_millis(version as i64);
        NoteVersion {
            version,
            text: format!("v{version}"),
            evidence: Evidence::unscreened(
                Provenance::new(Source::Model(String::new()), at).with_session(session),
            ),
        }
    }

    #[test]
    fn a_forget_plan_names_what_goes_and_what_is_left() {
        let versions = [
            version(1, "a"),
            version(2, "bad"),
            version(3, "a"),
            version(4, "bad"),
        ];
        let bad = Writer::session("bad");
        let plan = forget_plan(&versions, &bad).expect("bad wrote two versions");
        assert_eq!(plan.gone, [2, 4]);
        assert_eq!(plan.left, Left::FallBack(versions[2].clone()));

        let plan = forget_plan(&versions[..3], &bad).expect("bad wrote version 2");
        assert_eq!((plan.gone, plan.left), (vec![2], Left::Newest));

        let plan = forget_plan(&versions[1..2], &bad).expect("bad wrote the only version");
        assert_eq!((plan.gone, plan.left), (vec![2], Left::Nothing));

        assert_eq!(forget_plan(&versions, &Writer::session("c")), None);
        assert_eq!(forget_plan(&versions, &Writer::default()), None);

        let mut all = Forgotten::default();
        for plan in [&versions[..], &versions[..3], &versions[1..2]]
            .iter()
            .filter_map(|v| forget_plan(v, &bad))
        {
            all.add(&plan);
        }
        let want = Forgotten {
            versions: 4,
            notes: 1,
            restored: 1,
        };
        assert_eq!(all, want);
    }

    fn check(value: &str, expected: std::result::Result<(), &str>) {
        let got = NotePath::new(value).map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(got, expected.map_err(str::to_owned), "value {value:?}");
    }

    #[test]
    fn paths_follow_the_rules() {
        check("a", Ok(()));
        check("a/b c/d.md", Ok(()));
        check("", Err("invalid note path \"\": must not be empty"));
        check(
            "a/../b",
            Err("invalid note path \"a/../b\": must not contain . or .. segments"),
        );
        check(
            "./a",
            Err("invalid note path \"./a\": must not contain . or .. segments"),
        );
        check(
            "a//b",
            Err("invalid note path \"a//b\": must not contain an empty segment"),
        );
        check(
            "a/",
            Err("invalid note path \"a/\": must not contain an empty segment"),
        );
        check(
            "/a",
            Err("invalid note path \"/a\": must be relative to the root"),
        );
        check(
            "a\\b",
            Err("invalid note path \"a\\\\b\": must not contain backslashes"),
        );
        check(
            "a\0b",
            Err("invalid note path \"a\\0b\": must not contain control characters"),
        );
        let deep = vec!["d"; 33].join("/");
        assert!(NotePath::new(deep).is_err());
        assert!(NotePath::new("x".repeat(256)).is_err());
        assert!(NotePath::new(vec!["x".repeat(200); 6].join("/")).is_err());
    }

    #[test]
    fn paths_know_their_place() -> Result<()> {
        let path = NotePath::new("a/b/c")?;
        assert_eq!(path.ancestors().collect::<Vec<_>>(), ["a", "a/b"]);
        assert!(path.is_below(&NotePath::new("a")?));
        assert!(!NotePath::new("ab")?.is_below(&NotePath::new("a")?));
        assert!(!path.is_below(&path));
        assert_eq!(
            path.moved(&NotePath::new("a")?, &NotePath::new("x/y")?)?
                .as_str(),
            "x/y/b/c"
        );
        assert!(
            path.moved(&NotePath::new("b")?, &NotePath::new("x")?)
                .is_err()
        );
        assert_eq!(
            NotePath::new("a")?.below_bounds(),
            ("a/".to_owned(), "a0".to_owned())
        );
        assert!(NotePath::stored("../x".to_owned()).is_err());
        Ok(())
    }

    #[test]
    fn terms_match_ignoring_ascii_case() {
        assert!(matches_terms("Deploy with CARGO", &["cargo", "deploy"]));
        assert!(!matches_terms("Deploy", &["deploy", "rust"]));
        assert!(matches_terms("anything", &[]));
    }
}
