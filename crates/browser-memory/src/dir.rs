//! Import and export of browser-agent-driver's `.agent-memory/` directory.
//!
//! Layout read: trajectories `traj_*.json` flat at the root (where its code writes them) and
//! `domains/<d>/trajectories/*.json` (where its docs put them); `domains/<d>/knowledge.json`
//! and `selectors.json`; `agent-runs/*.json` manifests; `hints.json`; `runs/*.json` suite
//! summaries. Export writes the same layout, trajectories at the root, each file replaced
//! atomically (a temporary file, then a rename).
//!
//! Every path goes through [`MemoryRoot`]: a name is one plain component (never `..`, never
//! absolute), and a symlink that resolves outside the root is refused, so nothing read or
//! written ever leaves the memory root.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use agent_memory_core::store::browser::{BrowserStore, SiteMemory, SuiteSummary, Trajectory};
use agent_memory_core::{Scope, Timestamp};

use crate::error::{Error, Result};
use crate::files::{
    HintsFile, KnowledgeFile, ManifestFile, SelectorsFile, TrajectoryFile, has_knowledge,
    has_selectors, knowledge_file, parse, selectors_file, site_from_files, suite_summary_id,
};
use crate::json::to_pretty;
use crate::origin::safe_file_stem;
use crate::tokens::tokenize;

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
        fs::read_to_string(path).map_err(fail)
    }

    fn read_opt(&self, path: &Path) -> Result<Option<String>> {
        if fs::symlink_metadata(path).is_err() {
            return Ok(None);
        }
        self.read(path).map(Some)
    }

    /// The `.json` files directly in `dir`, sorted by name (none when `dir` is absent).
    fn json_files(&self, dir: &Path, prefix: &str) -> Result<Vec<PathBuf>> {
        if fs::symlink_metadata(dir).is_err() {
            return Ok(Vec::new());
        }
        self.check_inside(dir)?;
        let mut files = Vec::new();
        for entry in self.entries(dir)? {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".json") && name.starts_with(prefix) {
                files.push(entry.path());
            }
        }
        files.sort();
        Ok(files)
    }

    fn subdirs(&self, dir: &Path) -> Result<Vec<String>> {
        if fs::symlink_metadata(dir).is_err() {
            return Ok(Vec::new());
        }
        self.check_inside(dir)?;
        let mut names = Vec::new();
        for entry in self.entries(dir)? {
            let path = entry.path();
            if path.is_dir() {
                self.check_inside(&path)?;
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
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
    /// ignore.
    pub fn write_atomic(&self, parts: &[&str], text: &str) -> Result<PathBuf> {
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let path = self.child(parts)?;
        let dir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.root.clone());
        fs::create_dir_all(&dir).map_err(|source| Error::Write {
            path: dir.clone(),
            source,
        })?;
        self.check_inside(&dir)?;
        self.check_inside(&path)?;
        let temp = dir.join(format!(
            ".{}.tmp-{}-{}",
            parts.last().copied().unwrap_or("file"),
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        let fail = |source| Error::Write {
            path: path.clone(),
            source,
        };
        let written = (|| {
            let mut file = fs::File::create(&temp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            fs::rename(&temp, &path)?;
            sync_dir(&dir)
        })();
        if let Err(source) = written {
            let _ = fs::remove_file(&temp);
            return Err(fail(source));
        }
        Ok(path)
    }
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
}

/// Everything read from a memory directory, validated, before anything is stored.
#[derive(Debug, Default)]
struct Image {
    trajectories: Vec<Trajectory>,
    sites: Vec<SiteMemory>,
    runs: Vec<agent_memory_core::store::browser::RunManifest>,
    hints: Option<HintsFile>,
    suites: Vec<SuiteSummary>,
}

fn read_image(root: &MemoryRoot, now: Timestamp) -> Result<Image> {
    let mut image = Image::default();
    let mut trajectory_files = root.json_files(root.path(), "traj_")?;
    let domains = root.child(&["domains"])?;
    for site in root.subdirs(&domains)? {
        let dir = root.child(&["domains", &site])?;
        trajectory_files.extend(root.json_files(&dir.join("trajectories"), "")?);
        let knowledge_path = dir.join("knowledge.json");
        let selectors_path = dir.join("selectors.json");
        let knowledge = match root.read_opt(&knowledge_path)? {
            Some(text) => Some((
                knowledge_path.as_path(),
                parse::<KnowledgeFile>(&knowledge_path, &text)?,
            )),
            None => None,
        };
        let selectors = match root.read_opt(&selectors_path)? {
            Some(text) => Some((
                selectors_path.as_path(),
                parse::<SelectorsFile>(&selectors_path, &text)?,
            )),
            None => None,
        };
        if knowledge.is_some() || selectors.is_some() {
            image.sites.push(site_from_files(
                &safe_file_stem(&site),
                knowledge,
                selectors,
                now,
            )?);
        }
    }
    for path in trajectory_files {
        let text = root.read(&path)?;
        image
            .trajectories
            .push(parse::<TrajectoryFile>(&path, &text)?.into_record(&path)?);
    }
    for path in root.json_files(&root.child(&["agent-runs"])?, "")? {
        let text = root.read(&path)?;
        image
            .runs
            .push(parse::<ManifestFile>(&path, &text)?.into_record(&path)?);
    }
    let hints_path = root.child(&["hints.json"])?;
    if let Some(text) = root.read_opt(&hints_path)? {
        image.hints = Some(parse::<HintsFile>(&hints_path, &text)?);
    }
    for path in root.json_files(&root.child(&["runs"])?, "")? {
        let text = root.read(&path)?;
        let id = suite_summary_id(&path, &text)?;
        image.suites.push(SuiteSummary { id, json: text });
    }
    Ok(image)
}

/// Reads the memory directory at `root` into `scope` of `store`. Every file is read and
/// validated first; a bad file fails the import, naming the file, before anything is stored.
/// `now` dates the migration of old session facts.
pub fn import_dir<S: BrowserStore + ?Sized>(
    store: &S,
    scope: &Scope,
    root: &MemoryRoot,
    now: Timestamp,
) -> Result<Transfer> {
    if !root.path().is_dir() {
        return Err(Error::Read {
            path: root.path().to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not a directory"),
        });
    }
    let image = read_image(root, now)?;
    for trajectory in &image.trajectories {
        store.trajectory_put(scope, trajectory, &tokenize(&trajectory.goal))?;
    }
    for site in &image.sites {
        store.site_put(scope, site)?;
    }
    for run in &image.runs {
        store.run_put(scope, run)?;
    }
    if let Some(hints) = &image.hints {
        store.hints_put(scope, &hints.hints, &hints.updated_at)?;
    }
    for summary in &image.suites {
        store.suite_summary_put(scope, summary)?;
    }
    Ok(Transfer {
        trajectories: image.trajectories.len(),
        sites: image.sites.len(),
        runs: image.runs.len(),
        hints: image.hints.is_some(),
        suite_summaries: image.suites.len(),
    })
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
        root.write_atomic(&[&name], &text)?;
        transfer.trajectories += 1;
    }
    for site in store.site_list(scope)? {
        let Some(memory) = store.site_get(scope, &site)? else {
            continue;
        };
        let dir = safe_file_stem(&memory.site);
        if has_knowledge(&memory) {
            let text = pretty("knowledge.json", &knowledge_file(&memory))?;
            root.write_atomic(&["domains", &dir, "knowledge.json"], &text)?;
        }
        if has_selectors(&memory) {
            let text = pretty("selectors.json", &selectors_file(&memory))?;
            root.write_atomic(&["domains", &dir, "selectors.json"], &text)?;
        }
        transfer.sites += 1;
    }
    for run in store.run_list(scope, &Default::default())? {
        let name = format!("{}.json", manifest_stem(&run.run_id));
        let text = pretty(&name, &ManifestFile::from_record(&run))?;
        root.write_atomic(&["agent-runs", &name], &text)?;
        transfer.runs += 1;
    }
    if let Some((hints, updated_at)) = store.hints_get(scope)? {
        let text = pretty("hints.json", &HintsFile { hints, updated_at })?;
        root.write_atomic(&["hints.json"], &text)?;
        transfer.hints = true;
    }
    for summary in store.suite_summaries(scope)? {
        let name = format!("{}.json", safe_file_stem(&summary.id));
        root.write_atomic(&["runs", &name], &summary.json)?;
        transfer.suite_summaries += 1;
    }
    Ok(transfer)
}

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
