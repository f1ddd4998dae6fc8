//! Import and export of browser-agent-driver's `.agent-memory/` directory.
//!
//! Layout read: trajectories `traj_*.json` flat at the root (where its code writes them) and
//! `domains/<d>/trajectories/*.json` (where its docs put them); `domains/<d>/knowledge.json`
//! and `selectors.json`; `agent-runs/*.json` manifests; `hints.json`; `runs/*.json` suite
//! summaries. Export writes the same layout, trajectories at the root, each file replaced
//! atomically (a temporary file, then a rename), the files flushed to disk a batch at a time.
//!
//! Two additions, which the reference's code reads past, carry who wrote what: a trajectory
//! file's `writtenBy` (its writer, when the store knows it), and a site's `log.json`
//! ([`SITE_LOG_FILE`]: the site's log of observations with their writers). An import keeps
//! both, so a forget by writer works on the imported memory as on the exported one; a log
//! the site's two files no longer agree with (the reference's code wrote them since) is
//! skipped, naming why, and the site is imported as the files hold it.
//!
//! Every path goes through [`MemoryRoot`]: a name is one plain component (never `..`, never
//! absolute), and a symlink that resolves outside the root is refused, so nothing read or
//! written ever leaves the memory root.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_memory_core::store::browser::{BrowserStore, ImageStored, MemoryImage, SuiteSummary};
use agent_memory_core::store::site_log::{LOG_FOLD_AT, LOG_KEEP};
use agent_memory_core::{Provenance, Scope, Timestamp};

use crate::error::{Error, Result};
use crate::files::{
    HintsFile, KnowledgeFile, ManifestFile, SelectorsFile, SiteLogFile, TrajectoryFile,
    has_knowledge, has_selectors, knowledge_file, parse, selectors_file, site_from_files,
    suite_summary_id,
};
use crate::json::to_pretty;
use crate::origin::safe_file_stem;
use crate::tokens::tokenize;

/// The file of a site's folder that holds its log (`domains/<site>/log.json`): who taught
/// the site what, which an export writes beside the reference's two files and an import
/// keeps, so a forget by writer reaches an imported site as it reached the exported one.
pub const SITE_LOG_FILE: &str = "log.json";

/// The largest memory file an import reads (64 MiB): every file of the format is a few
/// kilobytes, so a larger one is refused, naming it, before it is read into memory.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// A memory directory: the only way this crate touches the file system.
#[derive(Clone, Debug)]
pub struct MemoryRoot {
    root: PathBuf,
}

impl MemoryRoot {
    /// The memory directory at `root` (it need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        MemoryRoot { root: root.into() }
    }

    /// The root path.
    pub fn path(&self) -> &Path {
        &self.root
    }

    fn outside(&self, path: impl Into<PathBuf>) -> Error {
        Error::OutsideRoot {
            path: path.into(),
            root: self.root.clone(),
        }
    }

    /// The path of `parts` below the root. Each part must be one plain name: not empty,
    /// not `.` or `..`, no separator, not absolute.
    pub fn child(&self, parts: &[&str]) -> Result<PathBuf> {
        let mut path = self.root.clone();
        for part in parts {
            let mut components = Path::new(part).components();
            let plain = matches!(
                (components.next(), components.next()),
                (Some(Component::Normal(name)), None) if name == OsStr::new(part)
            ) && !part.contains(['/', '\\']);
            if !plain {
                return Err(self.outside(self.root.join(part)));
            }
            path.push(part);
        }
        Ok(path)
    }

    /// Refuses `path` when it is a symlink (or below one) that resolves outside the root.
    fn check_inside(&self, path: &Path) -> Result<()> {
        let root = fs::canonicalize(&self.root).map_err(|source| Error::Read {
            path: self.root.clone(),
            source,
        })?;
        match fs::canonicalize(path) {
            Ok(real) if real.starts_with(&root) => Ok(()),
            Ok(_) => Err(self.outside(path)),
            // A path that does not exist yet cannot point anywhere.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(Error::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    fn read(&self, path: &Path) -> Result<String> {
        self.check_inside(path)?;
        let fail = |source| Error::Read {
            path: path.to_path_buf(),
            source,
        };
        let bytes = fs::metadata(path).map_err(fail)?.len();
        if bytes > MAX_FILE_BYTES {
            return Err(Error::TooLarge {
                path: path.to_path_buf(),
                bytes,
                limit: MAX_FILE_BYTES,
            });
        }
        let text = fs::read_to_string(path).map_err(fail)?;
        // A byte-order mark some editors write is not part of the JSON.
        Ok(match text.strip_prefix('\u{feff}') {
            Some(rest) => rest.to_owned(),
            None => text,
        })
    }

    fn read_opt(&self, path: &Path) -> Result<Option<String>> {
        if fs::symlink_metadata(path).is_err() {
            return Ok(None);
        }
        self.read(path).map(Some)
    }

    fn entries(&self, dir: &Path) -> Result<Vec<fs::DirEntry>> {
        let fail = |source| Error::Read {
            path: dir.to_path_buf(),
            source,
        };
        fs::read_dir(dir)
            .map_err(fail)?
            .map(|e| e.map_err(fail))
            .collect()
    }

    /// Writes `text` to the file at `parts` atomically: a temporary file in the same
    /// directory, flushed, then renamed over the target, and the directory flushed so the
    /// rename itself survives a power failure. A crash leaves the old file or the new one,
    /// never a torn one; at worst a hidden `.<name>.tmp-*` file stays behind, which imports
    /// ignore. To write many files, [`MemoryRoot::batch`] flushes them together.
    pub fn write_atomic(&self, parts: &[&str], text: &str) -> Result<PathBuf> {
        let mut batch = self.batch();
        let path = batch.write(parts, text)?;
        batch.commit()?;
        Ok(path)
    }

    /// Files written together, each replaced atomically as [`MemoryRoot::write_atomic`]
    /// replaces one, with one flush to disk for the whole batch instead of two per file.
    pub fn batch(&self) -> AtomicBatch<'_> {
        AtomicBatch {
            root: self,
            staged: Vec::new(),
        }
    }
}

/// Files written to temporary names, then flushed to disk together and renamed over their
/// targets ([`AtomicBatch::commit`]): a crash leaves each file old or new, never torn. Dropped
/// without a commit, the batch removes its temporary files and changes no target.
#[derive(Debug)]
pub struct AtomicBatch<'r> {
    root: &'r MemoryRoot,
    /// `(temporary file, target)`, in the order written.
    staged: Vec<(PathBuf, PathBuf)>,
}

impl AtomicBatch<'_> {
    /// Files written but not yet committed.
    pub fn len(&self) -> usize {
        self.staged.len()
    }

    /// Whether nothing is written since the last commit.
    pub fn is_empty(&self) -> bool {
        self.staged.is_empty()
    }

    /// Writes `text` to a temporary file beside the file at `parts` (not flushed yet); the
    /// commit puts it in place. Returns the target's path.
    pub fn write(&mut self, parts: &[&str], text: &str) -> Result<PathBuf> {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let root = self.root;
        let path = root.child(parts)?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| root.root.clone());
        fs::create_dir_all(&dir).map_err(|source| Error::Write {
            path: dir.clone(),
            source,
        })?;
        root.check_inside(&dir)?;
        root.check_inside(&path)?;
        let temp = dir.join(format!(
            ".{}.tmp-{}-{}",
            parts.last().copied().unwrap_or("file"),
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::File::create(&temp).and_then(|mut file| file.write_all(text.as_bytes()));
        if let Err(source) = written {
            let _ = fs::remove_file(&temp);
            return Err(Error::Write { path, source });
        }
        self.staged.push((temp, path.clone()));
        Ok(path)
    }

    /// Puts every file written since the last commit in place: their contents flushed to
    /// disk (one `syncfs` per file system on Linux, else one flush per file), then each
    /// renamed over its target, then each directory flushed so the renames survive a power
    /// failure.
    pub fn commit(&mut self) -> Result<()> {
        let staged = std::mem::take(&mut self.staged);
        let result = put_in_place(&staged);
        if result.is_err() {
            for (temp, _) in &staged {
                let _ = fs::remove_file(temp);
            }
        }
        result
    }
}

impl Drop for AtomicBatch<'_> {
    fn drop(&mut self) {
        for (temp, _) in &self.staged {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Flushes the temporary files of `staged`, renames each over its target, flushes their
/// directories.
fn put_in_place(staged: &[(PathBuf, PathBuf)]) -> Result<()> {
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for (_, path) in staged {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    match staged {
        [] => return Ok(()),
        [(temp, path)] => sync_file(temp).map_err(fail(path))?,
        _ => sync_contents(staged, &dirs)?,
    }
    for (temp, path) in staged {
        fs::rename(temp, path).map_err(fail(path))?;
    }
    for dir in &dirs {
        sync_dir(dir).map_err(fail(dir))?;
    }
    Ok(())
}

fn sync_file(path: &Path) -> std::io::Result<()> {
    fs::OpenOptions::new().write(true).open(path)?.sync_all()
}

/// Flushes the contents of every temporary file of `staged` (in `dirs`) to disk: on Linux
/// with one `syncfs` per directory's file system (a directory on a file system flushed
/// already costs next to nothing), elsewhere file by file.
fn sync_contents(staged: &[(PathBuf, PathBuf)], dirs: &[PathBuf]) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        let _ = staged;
        for dir in dirs {
            let handle = fs::File::open(dir).map_err(|source| Error::Write {
                path: dir.clone(),
                source,
            })?;
            rustix::fs::syncfs(&handle).map_err(|e| Error::Write {
                path: dir.clone(),
                source: e.into(),
            })?;
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dirs;
        for (temp, path) in staged {
            sync_file(temp).map_err(|source| Error::Write {
                path: path.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Flushes a directory's entries (a rename into it) to disk. Only Unix can open a directory
/// for this; elsewhere the rename is as durable as the platform makes it.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// What an import or export moved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfer {
    /// Trajectories.
    pub trajectories: usize,
    /// Sites (knowledge and selectors).
    pub sites: usize,
    /// Run manifests.
    pub runs: usize,
    /// Whether hints were present.
    pub hints: bool,
    /// Suite summaries.
    pub suite_summaries: usize,
    /// Of the records an import read, how many the store already held exactly so (it left
    /// them as they were). Always 0 for an export.
    pub unchanged: usize,
    /// Files and folders an import did not read, each with the reason. Always empty for an
    /// export.
    pub skipped: Vec<Skipped>,
}

impl Transfer {
    /// How many records were moved or read (the hints count as one).
    pub fn records(&self) -> usize {
        self.trajectories + self.sites + self.runs + usize::from(self.hints) + self.suite_summaries
    }
}

/// A file or folder in a memory directory that an import did not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Its path.
    pub path: PathBuf,
    /// Why it was not read.
    pub reason: &'static str,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "skipped {}: {}", self.path.display(), self.reason)
    }
}

/// Why an entry of a memory directory is not read.
mod skip {
    pub(super) const NOT_UTF8: &str = "its name is not UTF-8, so it cannot name a site";
    pub(super) const TEMPORARY: &str = "a temporary file left by an interrupted export";
    pub(super) const NOT_JSON: &str = "not a .json file";
    pub(super) const OUTSIDE_LAYOUT: &str = "not part of the .agent-memory layout";
    pub(super) const ROOT_JSON: &str =
        "a .json file at the root that is neither a trajectory (traj_*.json) nor hints.json";
    pub(super) const HOSTLESS: &str = "the memory of a site without a host name, which \
         browser-agent-driver files directly under domains/; sites here are always named by \
         their host";
    pub(super) const STALE_LOG: &str = "a site log that no longer rebuilds the site's \
         knowledge.json and selectors.json (they changed after the export): the site is \
         imported as they hold it, without its writers";
}

/// Everything read from a memory directory, validated, before anything is stored.
#[derive(Debug, Default)]
struct Image {
    records: MemoryImage,
    hints: bool,
    skipped: Vec<Skipped>,
}

/// The entries of `dir` that are not a `.json` file go to `skipped`; the `.json` files
/// (whatever the rest of their name, UTF-8 or not) are returned sorted by name.
fn json_files(root: &MemoryRoot, dir: &Path, skipped: &mut Vec<Skipped>) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in root.listing(dir)? {
        if entry.is_json() {
            files.push(entry.path);
        } else {
            skipped.push(entry.skipped(skip::NOT_JSON));
        }
    }
    Ok(files)
}

/// One entry of a directory listing.
struct Entry {
    path: PathBuf,
    name: std::ffi::OsString,
    is_dir: bool,
}

impl Entry {
    /// The name, when it is UTF-8.
    fn text(&self) -> Option<&str> {
        self.name.to_str()
    }

    /// A file whose name ends in `.json`.
    fn is_json(&self) -> bool {
        !self.is_dir && self.name.as_encoded_bytes().ends_with(b".json")
    }

    fn skipped(self, reason: &'static str) -> Skipped {
        let temporary = self
            .text()
            .is_some_and(|n| n.starts_with('.') && n.contains(".tmp-"));
        Skipped {
            path: self.path,
            reason: if temporary { skip::TEMPORARY } else { reason },
        }
    }
}

impl MemoryRoot {
    /// Every entry of `dir` (none when it is absent), sorted by path; a folder that is a
    /// symlink out of the root is refused.
    fn listing(&self, dir: &Path) -> Result<Vec<Entry>> {
        if fs::symlink_metadata(dir).is_err() {
            return Ok(Vec::new());
        }
        self.check_inside(dir)?;
        let mut listed = Vec::new();
        for entry in self.entries(dir)? {
            let path = entry.path();
            let is_dir = path.is_dir();
            if is_dir {
                self.check_inside(&path)?;
            }
            listed.push(Entry {
                name: entry.file_name(),
                path,
                is_dir,
            });
        }
        listed.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(listed)
    }
}

fn read_image(root: &MemoryRoot, now: Timestamp) -> Result<Image> {
    let mut image = Image::default();
    let skipped = &mut image.skipped;
    let mut trajectory_files = Vec::new();
    let layout = |name: &str| matches!(name, "domains" | "agent-runs" | "runs" | "hints.json");
    for entry in root.listing(root.path())? {
        let trajectory = entry.is_json() && entry.name.as_encoded_bytes().starts_with(b"traj_");
        match entry.text() {
            _ if trajectory => trajectory_files.push(entry.path),
            Some(name) if layout(name) => {}
            _ if entry.is_json() => skipped.push(entry.skipped(skip::ROOT_JSON)),
            _ => skipped.push(entry.skipped(skip::OUTSIDE_LAYOUT)),
        }
    }
    let domains = root.child(&["domains"])?;
    for entry in root.listing(&domains)? {
        let site = match (entry.text(), entry.is_dir) {
            (Some(site), true) => site.to_owned(),
            (None, _) => {
                skipped.push(entry.skipped(skip::NOT_UTF8));
                continue;
            }
            (Some("knowledge.json" | "selectors.json"), false) => {
                skipped.push(entry.skipped(skip::HOSTLESS));
                continue;
            }
            (Some(_), false) => {
                skipped.push(entry.skipped(skip::OUTSIDE_LAYOUT));
                continue;
            }
        };
        let dir = root.child(&["domains", &site])?;
        let knowledge_path = dir.join("knowledge.json");
        let selectors_path = dir.join("selectors.json");
        let mut knowledge = None;
        let mut selectors = None;
        let mut log = None;
        for entry in root.listing(&dir)? {
            match (entry.text(), entry.is_dir) {
                (Some(SITE_LOG_FILE), false) => {
                    let text = root.read(&entry.path)?;
                    log = Some((parse::<SiteLogFile>(&entry.path, &text)?, entry.path));
                }
                (Some("trajectories"), true) => {
                    trajectory_files.extend(json_files(root, &entry.path, skipped)?);
                }
                (Some("knowledge.json"), false) => {
                    let text = root.read(&entry.path)?;
                    knowledge = Some(parse::<KnowledgeFile>(&entry.path, &text)?);
                }
                (Some("selectors.json"), false) => {
                    let text = root.read(&entry.path)?;
                    selectors = Some(parse::<SelectorsFile>(&entry.path, &text)?);
                }
                _ => skipped.push(entry.skipped(skip::OUTSIDE_LAYOUT)),
            }
        }
        let key = safe_file_stem(&site);
        let memory = if knowledge.is_some() || selectors.is_some() {
            Some(site_from_files(
                &key,
                knowledge.map(|file| (knowledge_path.as_path(), file)),
                selectors.map(|file| (selectors_path.as_path(), file)),
                now,
            )?)
        } else {
            None
        };
        if let Some((file, path)) = log {
            let mut log = file.into_record(&path, &key, now)?;
            if log.entries.len() >= LOG_FOLD_AT {
                log.fold_oldest(LOG_KEEP);
            }
            if memory.as_ref() == Some(&log.rebuild()) {
                image.records.site_logs.insert(key, log);
            } else {
                skipped.push(Skipped {
                    path,
                    reason: skip::STALE_LOG,
                });
            }
        }
        image.records.sites.extend(memory);
    }
    for path in trajectory_files {
        let text = root.read(&path)?;
        let trajectory = parse::<TrajectoryFile>(&path, &text)?.into_record(&path)?;
        let tokens = tokenize(&trajectory.goal);
        image.records.trajectories.push((trajectory, tokens));
    }
    for path in json_files(root, &root.child(&["agent-runs"])?, skipped)? {
        let text = root.read(&path)?;
        image
            .records
            .runs
            .push(parse::<ManifestFile>(&path, &text)?.into_record(&path)?);
    }
    let hints_path = root.child(&["hints.json"])?;
    if let Some(text) = root.read_opt(&hints_path)? {
        let hints = parse::<HintsFile>(&hints_path, &text)?;
        image.records.hints = Some((hints.hints, hints.updated_at));
        image.hints = true;
    }
    for path in json_files(root, &root.child(&["runs"])?, skipped)? {
        let text = root.read(&path)?;
        let id = suite_summary_id(&path, &text)?;
        image
            .records
            .suite_summaries
            .push(SuiteSummary { id, json: text });
    }
    Ok(image)
}

/// Reads the memory directory at `root` into `scope` of `store`, whole or not at all. Every
/// file is read and validated first, and a bad file fails the import, naming it, before
/// anything is stored; then every record is stored in one atomic step
/// ([`BrowserStore::store_image`]), so a failure of the store (a value over its limits) or a
/// crash leaves nothing of the directory behind. Records the store already holds exactly so
/// are left as they are and counted in [`Transfer::unchanged`]; files the import did not read
/// are listed, with the reason, in [`Transfer::skipped`]. `now` dates the migration of old
/// session facts; `by`, who imports, is named by the store's audit entry (unknown when
/// `None`).
pub fn import_dir<S: BrowserStore + ?Sized>(
    store: &S,
    scope: &Scope,
    root: &MemoryRoot,
    now: Timestamp,
    by: Option<&Provenance>,
) -> Result<Transfer> {
    if !root.path().is_dir() {
        return Err(Error::Read {
            path: root.path().to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        });
    }
    let image = read_image(root, now)?;
    let stored = if image.records.is_empty() {
        ImageStored::default()
    } else {
        store.store_image(scope, &image.records, by)?
    };
    Ok(Transfer {
        trajectories: image.records.trajectories.len(),
        sites: image.records.sites.len(),
        runs: image.records.runs.len(),
        hints: image.hints,
        suite_summaries: image.records.suite_summaries.len(),
        unchanged: stored.unchanged,
        skipped: image.skipped,
    })
}

/// Which of browser-agent-driver's memory classes kept its files in a folder, and so which of
/// its files hold memory (the classes' own layout, not the `.agent-memory/` root's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassFiles<'a> {
    /// `TrajectoryStore`'s folder: every `*.json` file in it is a trajectory.
    Trajectories,
    /// `AppKnowledge`'s file (named in the folder): the knowledge and sessions of `site`.
    Knowledge {
        /// The file's name in the folder.
        file: &'a str,
        /// The site key it is the memory of.
        site: &'a str,
    },
    /// `SelectorCache`'s file (named in the folder): the selectors of `site`.
    Selectors {
        /// The file's name in the folder.
        file: &'a str,
        /// The site key it is the memory of.
        site: &'a str,
    },
    /// `RunRegistry`'s `agent-runs/` folder: every `*.json` file in it is a run manifest.
    Runs,
}

/// Why a class's file is not adopted.
const UNREADABLE: &str = "not a file the reference's class reads (it skips such files too)";

/// Adopts the files one of browser-agent-driver's memory classes kept in the folder `root`
/// into `scope`: only the records `scope` does not hold yet (a trajectory or run by its id, a
/// site's knowledge or selectors as a whole) are stored, in one atomic step, so the store
/// stays the source of truth for what it holds and adopting again changes nothing. A file the
/// reference's class would skip (not JSON, or not its shape) is listed in
/// [`Transfer::skipped`] instead of failing; an absent folder or file adopts nothing. Records
/// left out because `scope` holds them are counted in [`Transfer::unchanged`]. `by`, who
/// adopts, is named by the store's audit entry (unknown when `None`).
pub fn adopt_files<S: BrowserStore + ?Sized>(
    store: &S,
    scope: &Scope,
    root: &MemoryRoot,
    files: ClassFiles<'_>,
    now: Timestamp,
    by: Option<&Provenance>,
) -> Result<Transfer> {
    let mut transfer = Transfer::default();
    let mut image = MemoryImage::default();
    match files {
        ClassFiles::Trajectories => {
            for path in json_files(root, root.path(), &mut transfer.skipped)? {
                let text = root.read(&path)?;
                let read = parse::<TrajectoryFile>(&path, &text).and_then(|f| f.into_record(&path));
                let Ok(trajectory) = read else {
                    transfer.skipped.push(Skipped {
                        path,
                        reason: UNREADABLE,
                    });
                    continue;
                };
                if store.trajectory_get(scope, &trajectory.id)?.is_some() {
                    transfer.unchanged += 1;
                    continue;
                }
                let tokens = tokenize(&trajectory.goal);
                image.trajectories.push((trajectory, tokens));
            }
        }
        ClassFiles::Runs => {
            for path in json_files(root, root.path(), &mut transfer.skipped)? {
                let text = root.read(&path)?;
                let read = parse::<ManifestFile>(&path, &text).and_then(|f| f.into_record(&path));
                let Ok(run) = read else {
                    transfer.skipped.push(Skipped {
                        path,
                        reason: UNREADABLE,
                    });
                    continue;
                };
                if store.run_get(scope, &run.run_id)?.is_some() {
                    transfer.unchanged += 1;
                    continue;
                }
                image.runs.push(run);
            }
        }
        ClassFiles::Knowledge { file, site } | ClassFiles::Selectors { file, site } => {
            let knowledge = matches!(files, ClassFiles::Knowledge { .. });
            let path = root.child(&[file])?;
            let Some(text) = root.read_opt(&path)? else {
                return Ok(transfer);
            };
            let read = if knowledge {
                parse::<KnowledgeFile>(&path, &text)
                    .and_then(|f| site_from_files(site, Some((&path, f)), None, now))
            } else {
                parse::<SelectorsFile>(&path, &text)
                    .and_then(|f| site_from_files(site, None, Some((&path, f)), now))
            };
            let Ok(adopted) = read else {
                transfer.skipped.push(Skipped {
                    path,
                    reason: UNREADABLE,
                });
                return Ok(transfer);
            };
            match store.site_get(scope, site)? {
                None => image.sites.push(adopted),
                Some(held) if knowledge && has_knowledge(&held) => transfer.unchanged += 1,
                Some(held) if !knowledge && has_selectors(&held) => transfer.unchanged += 1,
                // The site holds the other class's part only: this file's part joins it.
                Some(mut held) => {
                    if knowledge {
                        held.label = adopted.label;
                        held.facts = adopted.facts;
                        held.sessions = adopted.sessions;
                        held.knowledge_updated_at = adopted.knowledge_updated_at;
                    } else {
                        held.selectors = adopted.selectors;
                        held.selectors_updated_at = adopted.selectors_updated_at;
                    }
                    image.sites.push(held);
                }
            }
        }
    }
    transfer.trajectories = image.trajectories.len();
    transfer.sites = image.sites.len();
    transfer.runs = image.runs.len();
    if !image.is_empty() {
        store.store_image(scope, &image, by)?;
    }
    Ok(transfer)
}

fn pretty<T: serde::Serialize>(what: &str, value: &T) -> Result<String> {
    to_pretty(value).map_err(|source| Error::Encode {
        what: what.to_owned(),
        source,
    })
}

/// Writes `scope` of `store` as a memory directory at `root` that the reference code reads:
/// trajectories at the root, one folder per site, manifests, hints and suite summaries.
pub fn export_dir<S: BrowserStore + ?Sized>(
    store: &S,
    scope: &Scope,
    root: &MemoryRoot,
) -> Result<Transfer> {
    let mut transfer = Transfer::default();
    fs::create_dir_all(root.path()).map_err(|source| Error::Write {
        path: root.path().to_path_buf(),
        source,
    })?;
    // Every file is replaced atomically; the batch flushes them to disk together, a
    // thousand at a time, instead of twice per file.
    let mut batch = root.batch();
    let mut write = |parts: &[&str], text: &str| -> Result<()> {
        batch.write(parts, text)?;
        if batch.len() >= EXPORT_BATCH {
            batch.commit()?;
        }
        Ok(())
    };
    for trajectory in store.trajectory_list(scope)? {
        // Imports read only `traj_*.json` at the root: an id without that prefix gets it in
        // its file name (the id itself is read from the file), so nothing exported is lost
        // on the way back.
        let stem = safe_file_stem(&trajectory.id);
        let name = if stem.starts_with("traj_") {
            format!("{stem}.json")
        } else {
            format!("traj_{stem}.json")
        };
        let text = pretty(&name, &TrajectoryFile::from_record(&trajectory)?)?;
        write(&[&name], &text)?;
        transfer.trajectories += 1;
    }
    for site in store.site_list(scope)? {
        let Some(memory) = store.site_get(scope, &site)? else {
            continue;
        };
        let dir = safe_file_stem(&memory.site);
        if has_knowledge(&memory) {
            let text = pretty("knowledge.json", &knowledge_file(&memory))?;
            write(&["domains", &dir, "knowledge.json"], &text)?;
        }
        if has_selectors(&memory) {
            let text = pretty("selectors.json", &selectors_file(&memory))?;
            write(&["domains", &dir, "selectors.json"], &text)?;
        }
        // Who taught the site what: only a log with entries adds to the two files.
        if let Some(log) = store.site_log(scope, &site)?
            && !log.entries.is_empty()
        {
            let text = pretty(SITE_LOG_FILE, &SiteLogFile::from_record(&log))?;
            write(&["domains", &dir, SITE_LOG_FILE], &text)?;
        }
        transfer.sites += 1;
    }
    for run in store.run_list(scope, &Default::default())? {
        let name = format!("{}.json", manifest_stem(&run.run_id));
        let text = pretty(&name, &ManifestFile::from_record(&run))?;
        write(&["agent-runs", &name], &text)?;
        transfer.runs += 1;
    }
    if let Some((hints, updated_at)) = store.hints_get(scope)? {
        let text = pretty("hints.json", &HintsFile { hints, updated_at })?;
        write(&["hints.json"], &text)?;
        transfer.hints = true;
    }
    for summary in store.suite_summaries(scope)? {
        let name = format!("{}.json", safe_file_stem(&summary.id));
        write(&["runs", &name], &summary.json)?;
        transfer.suite_summaries += 1;
    }
    batch.commit()?;
    Ok(transfer)
}

/// How many files an export writes before flushing them to disk together.
const EXPORT_BATCH: usize = 1_000;

/// The manifest file name of a run id: `[^a-zA-Z0-9_-]` replaced by `_`, as the reference
/// names it, and never a dot-only name.
pub fn manifest_stem(run_id: &str) -> String {
    let stem: String = run_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    safe_file_stem(&stem)
}
