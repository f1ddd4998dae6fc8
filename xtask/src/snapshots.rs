//! `cargo xtask snapshots`: review pending insta snapshots, or check that none is pending and
//! every committed one is used, with nothing installed beyond the toolchain.
//!
//! - no flag: show each pending snapshot's diff and ask on the terminal; accepting moves
//!   `x.snap.new` over `x.snap`, rejecting deletes it;
//! - `--accept-all` / `--reject-all`: the same without asking, for scripts;
//! - `--check`: run the tests as CI does (`INSTA_UPDATE=no`, every snapshot read recorded in
//!   `INSTA_SNAPSHOT_REFERENCES_FILE`), then fail on any pending or unreferenced snapshot.

use std::collections::BTreeSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::{cargo, remove_file_if_present, target_dir, workspace_root};

/// What to do with each pending snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Review {
    Ask,
    AcceptAll,
    RejectAll,
}

/// One answer for one pending snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Accept,
    Reject,
    Skip,
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let root = workspace_root();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] => review(&root, Review::Ask),
        ["--accept-all"] => review(&root, Review::AcceptAll),
        ["--reject-all"] => review(&root, Review::RejectAll),
        ["--check"] => {
            let refs = references_file(&root);
            test_recording_references(&root, &refs)?;
            check(&root, &refs)
        }
        other => bail!(
            "`cargo xtask snapshots` takes one of --check, --accept-all, --reject-all or nothing (got {other:?})"
        ),
    }
}

/// Where the test run records every snapshot file it reads.
pub(crate) fn references_file(root: &Path) -> PathBuf {
    target_dir(root).join("insta-references.txt")
}

/// Runs every test of the workspace with snapshots checked, never written, recording each
/// snapshot file read in `references`.
pub(crate) fn test_recording_references(root: &Path, references: &Path) -> Result<()> {
    if let Some(dir) = references.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // A stale list would hide snapshots that no test reads any more.
    remove_file_if_present(references)?;
    let refs_env = references.to_string_lossy().into_owned();
    cargo(
        root,
        &["test", "--workspace", "--all-features"],
        &[
            ("INSTA_UPDATE", "no"),
            ("INSTA_FORCE_PASS", "0"),
            ("INSTA_SNAPSHOT_REFERENCES_FILE", &refs_env),
        ],
    )
}

/// Fails on pending snapshots and on committed snapshots that no test read during the test
/// run that wrote `references`.
pub(crate) fn check(root: &Path, references: &Path) -> Result<()> {
    let found = Inventory::of(root)?;
    if !found.pending.is_empty() {
        bail!(
            "pending snapshots (review with `cargo xtask snapshots`):\n  {}",
            list(&found.pending)
        );
    }
    let read = std::fs::read_to_string(references).unwrap_or_default();
    let unused = found.unreferenced(&read);
    if !unused.is_empty() {
        bail!(
            "snapshots no test uses (delete them or restore their test):\n  {}",
            list(&unused)
        );
    }
    println!(
        "{} snapshot file(s), all referenced, none pending",
        found.snapshots.len()
    );
    Ok(())
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// The snapshot files of the workspace's crates and `xtask`, build output left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Inventory {
    /// Snapshots a test wrote but nobody reviewed: `*.snap.new` next to their `.snap`, and
    /// inline snapshots' `*.pending-snap` next to their source file.
    pub(crate) pending: Vec<PathBuf>,
    /// Committed snapshots: `*.snap` inside a `snapshots` folder.
    pub(crate) snapshots: Vec<PathBuf>,
}

impl Inventory {
    pub(crate) fn of(root: &Path) -> Result<Inventory> {
        let mut found = Inventory::default();
        let mut stack = vec![root.join("crates"), root.join("xtask")];
        while let Some(dir) = stack.pop() {
            let entries = match std::fs::read_dir(&dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
            };
            for entry in entries {
                let path = entry
                    .with_context(|| format!("reading {}", dir.display()))?
                    .path();
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if path.is_dir() {
                    if name != "target" {
                        stack.push(path);
                    }
                } else if name.ends_with(".snap.new") || name.ends_with(".pending-snap") {
                    found.pending.push(path);
                } else if name.ends_with(".snap")
                    && path
                        .parent()
                        .and_then(Path::file_name)
                        .is_some_and(|n| n == "snapshots")
                {
                    found.snapshots.push(path);
                }
            }
        }
        found.pending.sort();
        found.snapshots.sort();
        Ok(found)
    }

    /// The committed snapshots missing from `references`, the list insta wrote (one path a
    /// line, as the test saw it).
    pub(crate) fn unreferenced(&self, references: &str) -> Vec<PathBuf> {
        let read: BTreeSet<PathBuf> = references
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| canonical(Path::new(line.trim())))
            .collect();
        self.snapshots
            .iter()
            .filter(|p| !read.contains(&canonical(p)))
            .cloned()
            .collect()
    }
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

fn review(root: &Path, mode: Review) -> Result<()> {
    let pending = Inventory::of(root)?.pending;
    if pending.is_empty() {
        println!("no pending snapshots");
        return Ok(());
    }
    if mode == Review::Ask && !std::io::stdin().is_terminal() {
        bail!(
            "{} pending snapshot(s), and stdin is not a terminal to ask on: pass --accept-all or --reject-all",
            pending.len()
        );
    }
    let (mut accepted, mut rejected, mut skipped) = (0, 0, 0);
    for path in &pending {
        let decision = match mode {
            Review::AcceptAll => Decision::Accept,
            Review::RejectAll => Decision::Reject,
            Review::Ask => {
                println!("{}", describe(root, path)?);
                ask()?
            }
        };
        match decide(path, decision)? {
            Decision::Accept => accepted += 1,
            Decision::Reject => rejected += 1,
            Decision::Skip => skipped += 1,
        }
    }
    println!("{accepted} accepted, {rejected} rejected, {skipped} left pending");
    Ok(())
}

/// A pending snapshot as shown for review: its name and, for a file snapshot, the diff
/// against the committed one.
fn describe(root: &Path, pending: &Path) -> Result<String> {
    let shown = pending.strip_prefix(root).unwrap_or(pending);
    let new = std::fs::read_to_string(pending)
        .with_context(|| format!("reading {}", pending.display()))?;
    let Some(committed) = committed_path(pending) else {
        return Ok(format!(
            "── {} (inline snapshot; accept it with cargo-insta, or reject it here)\n{new}",
            shown.display()
        ));
    };
    let old = match std::fs::read_to_string(&committed) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", committed.display())),
    };
    Ok(format!(
        "── {}\n{}",
        shown.display(),
        diff(body(&old), body(&new))
    ))
}

/// A unified diff of two snapshot bodies, `-` for the committed lines and `+` for the new.
pub(crate) fn diff(old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header("committed", "new")
        .to_string()
}

fn ask() -> Result<Decision> {
    let stdin = std::io::stdin();
    loop {
        print!("accept (a), reject (r) or skip (s)? ");
        std::io::stdout().flush().context("writing the prompt")?;
        let mut answer = String::new();
        if stdin
            .lock()
            .read_line(&mut answer)
            .context("reading the answer")?
            == 0
        {
            return Ok(Decision::Skip);
        }
        match answer.trim() {
            "a" | "accept" => return Ok(Decision::Accept),
            "r" | "reject" => return Ok(Decision::Reject),
            "s" | "skip" => return Ok(Decision::Skip),
            _ => println!("please answer a, r or s"),
        }
    }
}

/// Carries out `decision` for one pending snapshot and returns what was done: accepting an
/// inline snapshot needs its source rewritten, which is cargo-insta's work, so it is skipped.
fn decide(pending: &Path, decision: Decision) -> Result<Decision> {
    match (decision, committed_path(pending)) {
        (Decision::Accept, Some(committed)) => {
            accept(pending, &committed)?;
            Ok(Decision::Accept)
        }
        (Decision::Accept, None) => {
            eprintln!(
                "{}: inline snapshots are accepted with cargo-insta; left pending",
                pending.display()
            );
            Ok(Decision::Skip)
        }
        (Decision::Reject, _) => {
            std::fs::remove_file(pending)
                .with_context(|| format!("deleting {}", pending.display()))?;
            Ok(Decision::Reject)
        }
        (Decision::Skip, _) => Ok(Decision::Skip),
    }
}

/// The committed snapshot a pending `x.snap.new` replaces; `None` for an inline snapshot.
fn committed_path(pending: &Path) -> Option<PathBuf> {
    let name = pending.file_name()?.to_str()?;
    let committed = name.strip_suffix(".new")?;
    committed
        .ends_with(".snap")
        .then(|| pending.with_file_name(committed))
}

/// Moves `pending` over `committed`, without the `assertion_line` that insta writes only
/// into pending snapshots (a committed one would change whenever the test moved).
fn accept(pending: &Path, committed: &Path) -> Result<()> {
    let text = std::fs::read_to_string(pending)
        .with_context(|| format!("reading {}", pending.display()))?;
    std::fs::write(committed, without_assertion_line(&text))
        .with_context(|| format!("writing {}", committed.display()))?;
    std::fs::remove_file(pending).with_context(|| format!("deleting {}", pending.display()))
}

/// The snapshot's text after its `---` header, which only insta reads.
fn body(snapshot: &str) -> &str {
    split(snapshot).1
}

/// `(header, body)` of a snapshot file; the header is empty when the file has none.
fn split(snapshot: &str) -> (&str, &str) {
    let Some(rest) = snapshot.strip_prefix("---\n") else {
        return ("", snapshot);
    };
    match rest.find("\n---\n") {
        Some(end) => snapshot.split_at(4 + end + 5),
        None => ("", snapshot),
    }
}

fn without_assertion_line(snapshot: &str) -> String {
    let (header, body) = split(snapshot);
    let header: String = header
        .split_inclusive('\n')
        .filter(|line| !line.starts_with("assertion_line:"))
        .collect();
    header + body
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: &str =
        "---\nsource: crates/a/tests/it/x.rs\nexpression: out\n---\none\ntwo\nthree\n";
    const PENDING: &str = "---\nsource: crates/a/tests/it/x.rs\nassertion_line: 12\nexpression: out\n---\none\nTWO\nthree\n";

    fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
        path
    }

    fn rel(root: &Path, paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                p.strip_prefix(root)
                    .expect("under root")
                    .display()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn inventory_finds_pending_and_committed_snapshots_outside_target() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        write(root, "crates/a/tests/it/snapshots/it__x.snap", COMMITTED);
        write(root, "crates/a/tests/it/snapshots/it__x.snap.new", PENDING);
        write(root, "crates/a/src/.lib.rs.pending-snap", "{}\n");
        write(root, "xtask/src/snapshots/xtask__r.snap", COMMITTED);
        write(root, "crates/a/target/debug/snapshots/t.snap.new", PENDING);
        write(
            root,
            "crates/a/tests/it/notes.snap",
            "not in a snapshots folder",
        );
        write(root, "other/snapshots/o.snap", COMMITTED);
        let found = Inventory::of(root).expect("inventory");
        assert_eq!(
            rel(root, &found.pending),
            [
                "crates/a/src/.lib.rs.pending-snap",
                "crates/a/tests/it/snapshots/it__x.snap.new",
            ]
        );
        assert_eq!(
            rel(root, &found.snapshots),
            [
                "crates/a/tests/it/snapshots/it__x.snap",
                "xtask/src/snapshots/xtask__r.snap",
            ]
        );
    }

    #[test]
    fn an_empty_workspace_has_nothing_pending() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert_eq!(
            Inventory::of(dir.path()).expect("inventory"),
            Inventory::default()
        );
    }

    #[test]
    fn unreferenced_lists_snapshots_no_test_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let used = write(root, "crates/a/tests/it/snapshots/used.snap", COMMITTED);
        write(root, "crates/a/tests/it/snapshots/unused.snap", COMMITTED);
        let found = Inventory::of(root).expect("inventory");
        let references = format!("{}\n\n", used.display());
        assert_eq!(
            rel(root, &found.unreferenced(&references)),
            ["crates/a/tests/it/snapshots/unused.snap"]
        );
        assert_eq!(found.unreferenced("").len(), 2);
    }

    #[test]
    fn check_fails_on_pending_then_on_unreferenced_then_passes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let refs = root.join("refs.txt");
        let committed = write(root, "crates/a/tests/it/snapshots/x.snap", COMMITTED);
        let pending = write(root, "crates/a/tests/it/snapshots/x.snap.new", PENDING);
        let err = check(root, &refs).expect_err("pending").to_string();
        assert!(err.starts_with("pending snapshots"), "{err}");
        assert!(err.contains("x.snap.new"), "{err}");
        std::fs::remove_file(&pending).expect("remove");
        let err = check(root, &refs).expect_err("unreferenced").to_string();
        assert!(err.starts_with("snapshots no test uses"), "{err}");
        std::fs::write(&refs, format!("{}\n", committed.display())).expect("refs");
        check(root, &refs).expect("clean");
    }

    #[test]
    fn accepting_moves_the_new_snapshot_over_the_old_without_its_assertion_line() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let committed = write(root, "crates/a/tests/it/snapshots/x.snap", COMMITTED);
        let pending = write(root, "crates/a/tests/it/snapshots/x.snap.new", PENDING);
        assert_eq!(
            decide(&pending, Decision::Accept).expect("accept"),
            Decision::Accept
        );
        assert!(!pending.exists());
        assert_eq!(
            std::fs::read_to_string(&committed).expect("read"),
            "---\nsource: crates/a/tests/it/x.rs\nexpression: out\n---\none\nTWO\nthree\n"
        );
    }

    #[test]
    fn rejecting_deletes_only_the_pending_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let committed = write(root, "crates/a/tests/it/snapshots/x.snap", COMMITTED);
        let pending = write(root, "crates/a/tests/it/snapshots/x.snap.new", PENDING);
        let inline = write(root, "crates/a/src/.lib.rs.pending-snap", "{}\n");
        for path in [&pending, &inline] {
            assert_eq!(
                decide(path, Decision::Reject).expect("reject"),
                Decision::Reject
            );
            assert!(!path.exists());
        }
        assert_eq!(
            std::fs::read_to_string(&committed).expect("read"),
            COMMITTED
        );
    }

    #[test]
    fn inline_snapshots_and_skips_stay_pending() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let inline = write(root, "crates/a/src/.lib.rs.pending-snap", "{}\n");
        let pending = write(root, "crates/a/tests/it/snapshots/x.snap.new", PENDING);
        assert_eq!(
            decide(&inline, Decision::Accept).expect("accept"),
            Decision::Skip
        );
        assert_eq!(
            decide(&pending, Decision::Skip).expect("skip"),
            Decision::Skip
        );
        assert!(inline.exists() && pending.exists());
    }

    #[test]
    fn review_shows_the_diff_of_the_bodies_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        write(root, "crates/a/tests/it/snapshots/x.snap", COMMITTED);
        let pending = write(root, "crates/a/tests/it/snapshots/x.snap.new", PENDING);
        insta::assert_snapshot!(describe(root, &pending).expect("describe"));
    }

    #[test]
    fn snapshot_headers_split_off() {
        for (text, header, body) in [
            (
                COMMITTED,
                &COMMITTED[..COMMITTED.len() - 14],
                "one\ntwo\nthree\n",
            ),
            ("no header\n", "", "no header\n"),
            ("---\nunclosed\n", "", "---\nunclosed\n"),
        ] {
            assert_eq!(split(text), (header, body), "{text:?}");
        }
    }
}
