//! `turns_memory`, `turns_memory_write`, `turns_memory_import` and `turns_memory_export`:
//! Keen Code's persistent memory (a global `MEMORY.md` and a project's) kept as notes.
//!
//! Each memory is the note `/memories/MEMORY.md` of a notes scope: the global memory's scope
//! is [`GLOBAL_SCOPE`], a project's is the scope its input names (`project`), so the project's
//! other notes sit beside it. The rules are `agent_memory_turns::persistent`'s, as Keen Code
//! applies them: a write that looks like it holds a secret is refused before anything is
//! stored, naming the kind of secret and never the text; the caps (8 KiB global, 16 KiB
//! project, bytes of the trimmed text) apply when the memory is loaded into the system
//! prompt, where a longer one is cut, and each answer says whether that happens.
//!
//! Import reads Keen's own files (`<home>/.keen/memory/global/MEMORY.md`,
//! `<repo>/.keen/MEMORY.md`) and export writes them, atomically (a temporary file renamed
//! over it); a server's clients may not name a file to write.

use std::path::{Path, PathBuf};

use agent_memory_core::evidence::Evidence;
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::notes::{NoteLimits, NotePath};
use agent_memory_core::{NoteStore, Provenance, Scope, Source};
use agent_memory_turns::persistent::{self as rules, MEMORY_FILE_NAME, PersistentScope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Env, Error, Result, ResultExt};

/// The notes scope of the global memory.
pub const GLOBAL_SCOPE: &str = "global";

/// Where a memory is inside its notes scope.
pub const MEMORY_NOTE: &str = "/memories/MEMORY.md";

/// Which memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryScope {
    /// The user's preferences, across projects.
    Global,
    /// One project's notes and conventions.
    Project,
}

impl From<MemoryScope> for PersistentScope {
    fn from(scope: MemoryScope) -> Self {
        match scope {
            MemoryScope::Global => PersistentScope::Global,
            MemoryScope::Project => PersistentScope::Project,
        }
    }
}

impl From<PersistentScope> for MemoryScope {
    fn from(scope: PersistentScope) -> Self {
        match scope {
            PersistentScope::Global => MemoryScope::Global,
            PersistentScope::Project => MemoryScope::Project,
        }
    }
}

/// The memories to show.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowInput {
    /// `global` or `project`; both (the project's when one is named) when absent.
    #[serde(default)]
    pub scope: Option<MemoryScope>,
    /// The project: the notes scope its memory is kept in.
    #[serde(default)]
    pub project: Option<String>,
}

/// A memory's text and how the system prompt takes it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryEntry {
    /// `global` or `project`.
    pub scope: MemoryScope,
    /// The notes scope it is kept in.
    pub notes_scope: String,
    /// Its note, `/memories/MEMORY.md`.
    pub path: String,
    /// Its text, as stored.
    pub text: String,
    /// Bytes of the text trimmed of surrounding white space, as the cap counts them.
    pub bytes: usize,
    /// The cap: 8192 (global) or 16384 (project).
    pub cap: usize,
    /// Whether the system prompt takes it cut at the cap.
    pub over_cap: bool,
}

/// The memories that are not blank.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShowOutput {
    /// Each memory that holds more than white space: global first.
    pub memories: Vec<MemoryEntry>,
    /// The memories as Keen Code's `/memory show` prints them (`## Global memory`, its
    /// place, its text), or `Memory is empty.` (`Global memory is empty.` for one scope).
    pub text: String,
}

/// A memory's new text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// `global` or `project`.
    pub scope: MemoryScope,
    /// The project (the notes scope of its memory); needed for `project`.
    #[serde(default)]
    pub project: Option<String>,
    /// The whole text, replacing the one stored; refused when it looks like it holds a
    /// secret, token or credential.
    pub text: String,
}

/// What a write, or an import, stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// `global` or `project`.
    pub scope: MemoryScope,
    /// The notes scope it is kept in.
    pub notes_scope: String,
    /// Whether the note was created (else replaced, or left as it was).
    pub created: bool,
    /// Whether the text differed from the one stored.
    pub changed: bool,
    /// Bytes of the trimmed text.
    pub bytes: usize,
    /// The cap.
    pub cap: usize,
    /// Whether the system prompt takes it cut at the cap.
    pub over_cap: bool,
}

/// A memory to read from, or write to, Keen Code's file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KeenFileInput {
    /// `global` or `project`.
    pub scope: MemoryScope,
    /// The project (the notes scope of its memory); needed for `project`.
    #[serde(default)]
    pub project: Option<String>,
    /// The home folder (global: `<dir>/.keen/memory/global/MEMORY.md`) or the repository's
    /// root (project: `<dir>/.keen/MEMORY.md`).
    pub dir: String,
}

/// What an import stored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ImportOutput {
    /// The file read.
    pub file: String,
    /// What was stored.
    #[serde(flatten)]
    pub stored: WriteOutput,
}

/// What an export wrote.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ExportOutput {
    /// `global` or `project`.
    pub scope: MemoryScope,
    /// The file written.
    pub file: String,
    /// Bytes written.
    pub bytes: usize,
}

/// The notes scope of `scope`'s memory.
fn notes_scope(scope: MemoryScope, project: Option<&str>) -> Result<Scope> {
    match (scope, project) {
        (MemoryScope::Global, _) => Ok(Scope::new(GLOBAL_SCOPE)?),
        (MemoryScope::Project, Some(GLOBAL_SCOPE)) => Err(Error::invalid(
            "project",
            "a project cannot be named \"global\": that notes scope holds the global memory",
        )),
        (MemoryScope::Project, Some(name)) => {
            Scope::new(name).with_context(|| format!("project {}", Excerpt::quoted(name)))
        }
        (MemoryScope::Project, None) => Err(Error::invalid(
            "project",
            "the project memory needs a project: the notes scope its memory is kept in",
        )),
    }
}

/// Refuses a `notes` write of `text` to `path` in `scope` when the path is the scope's
/// persistent memory (`/memories/MEMORY.md`) and the text looks like it holds a secret: the
/// rule of `turns_memory_write`, whichever operation writes the note. Other paths pass.
pub fn check_note_write(scope: &Scope, path: &str, text: &str) -> Result<()> {
    let is_memory = agent_memory_notes::MemoryPath::parse(path)
        .ok()
        .and_then(|p| p.note().cloned())
        .is_some_and(|note| note.as_str() == MEMORY_FILE_NAME);
    if !is_memory {
        return Ok(());
    }
    let rule = if scope.as_str() == GLOBAL_SCOPE {
        PersistentScope::Global
    } else {
        PersistentScope::Project
    };
    Ok(rules::check_write(rule, text)?)
}

fn memory_note() -> Result<NotePath> {
    Ok(NotePath::new(MEMORY_FILE_NAME)?)
}

fn entry(scope: MemoryScope, notes_scope: &Scope, text: String) -> MemoryEntry {
    let rule = PersistentScope::from(scope);
    MemoryEntry {
        scope,
        notes_scope: notes_scope.as_str().to_owned(),
        path: MEMORY_NOTE.to_owned(),
        bytes: text.trim().len(),
        cap: rule.max_bytes(),
        over_cap: rules::over_cap(rule, &text),
        text,
    }
}

/// The stored memory of `scope`, when it holds more than white space.
fn read(env: &Env<'_>, scope: MemoryScope, project: Option<&str>) -> Result<Option<MemoryEntry>> {
    let notes_scope = notes_scope(scope, project)?;
    let text = env.store.note_read(&notes_scope, &memory_note()?)?;
    Ok(text
        .filter(|t| !t.trim().is_empty())
        .map(|t| entry(scope, &notes_scope, t)))
}

/// The global memory and `project`'s, as the system prompt takes them.
pub fn prompt_memory(
    env: &Env<'_>,
    project: Option<&str>,
) -> Result<agent_memory_turns::persistent::PersistentMemory> {
    let text = |scope| -> Result<Option<String>> {
        Ok(read(env, scope, project)?.map(|entry| entry.text))
    };
    Ok(agent_memory_turns::persistent::PersistentMemory {
        global: text(MemoryScope::Global)?,
        project: match project {
            Some(_) => text(MemoryScope::Project)?,
            None => None,
        },
    })
}

/// Keen's `/memory show` of one memory.
fn shown(entry: &MemoryEntry) -> String {
    let title = PersistentScope::from(entry.scope).title();
    format!(
        "## {title} memory\npath: {} (notes scope {})\n\n{}",
        entry.path,
        Excerpt::quoted(&entry.notes_scope),
        entry.text.trim()
    )
}

/// Shows the global memory, the project's, or both.
pub fn show(env: &Env<'_>, input: ShowInput) -> Result<ShowOutput> {
    let scopes: Vec<MemoryScope> = match (input.scope, &input.project) {
        (Some(scope), _) => vec![scope],
        (None, Some(_)) => vec![MemoryScope::Global, MemoryScope::Project],
        (None, None) => vec![MemoryScope::Global],
    };
    let mut memories = Vec::new();
    for scope in scopes {
        memories.extend(read(env, scope, input.project.as_deref())?);
    }
    let text = match (memories.is_empty(), input.scope) {
        (true, Some(scope)) => {
            format!("{} memory is empty.", PersistentScope::from(scope).title())
        }
        (true, None) => "Memory is empty.".to_owned(),
        (false, _) => memories.iter().map(shown).collect::<Vec<_>>().join("\n\n"),
    };
    Ok(ShowOutput { memories, text })
}

/// Stores `text` as `scope`'s memory, once the secret rule let it through.
fn store(
    env: &Env<'_>,
    scope: MemoryScope,
    project: Option<&str>,
    text: &str,
    source: Source,
) -> Result<WriteOutput> {
    let notes_scope = notes_scope(scope, project)?;
    let rule = PersistentScope::from(scope);
    rules::check_write(rule, text)?;
    let path = memory_note()?;
    let limits = NoteLimits::default();
    let by = Provenance {
        source,
        session: None,
        client: env.client.clone(),
        at: env.clock.now(),
    };
    let verdict = crate::evidence::policy(env)?.judge(text, None);
    let evidence = Evidence::judged(by, &verdict);
    let old = env.store.note_read(&notes_scope, &path)?;
    match &old {
        None => env
            .store
            .note_create(&notes_scope, &path, text, &evidence, &limits)?,
        Some(old) if old != text => {
            env.store
                .note_replace(&notes_scope, &path, old, text, &evidence, &limits)?
        }
        Some(_) => {}
    }
    Ok(WriteOutput {
        scope,
        notes_scope: notes_scope.into_string(),
        created: old.is_none(),
        changed: old.as_deref() != Some(text),
        bytes: text.trim().len(),
        cap: rule.max_bytes(),
        over_cap: rules::over_cap(rule, text),
    })
}

/// Replaces a memory's text, unless it looks like it holds a secret.
pub fn write(env: &Env<'_>, input: WriteInput) -> Result<WriteOutput> {
    store(
        env,
        input.scope,
        input.project.as_deref(),
        &input.text,
        Source::User,
    )
}

/// Keen's file of `scope` below `dir`.
fn keen_file(scope: MemoryScope, dir: &str) -> PathBuf {
    Path::new(dir).join(PersistentScope::from(scope).keen_file())
}

/// Imports a memory from Keen Code's file, replacing the stored one.
pub fn import(env: &Env<'_>, input: KeenFileInput) -> Result<ImportOutput> {
    // The scope first, so a bad project is named before any file is read.
    notes_scope(input.scope, input.project.as_deref())?;
    let file = keen_file(input.scope, &input.dir);
    let text = crate::files::read_text(&file, &env.files)?;
    let stored = store(
        env,
        input.scope,
        input.project.as_deref(),
        &text,
        Source::Import("keen".to_owned()),
    )
    .with_context(|| format!("cannot import {}", file.display()))?;
    Ok(ImportOutput {
        file: file.display().to_string(),
        stored,
    })
}

/// Exports a memory as Keen Code's file, written whole or not at all.
pub fn export(env: &Env<'_>, input: KeenFileInput) -> Result<ExportOutput> {
    let file = keen_file(input.scope, &input.dir);
    crate::files::may_write(&file, &env.files)?;
    let Some(memory) = read(env, input.scope, input.project.as_deref())? else {
        return Err(Error::not_found(
            MEMORY_NOTE,
            format!(
                "the {} memory is empty: there is nothing to export",
                PersistentScope::from(input.scope)
            ),
        ));
    };
    write_atomically(&file, &memory.text)
        .with_context(|| format!("cannot write {}", file.display()))?;
    Ok(ExportOutput {
        scope: input.scope,
        file: file.display().to_string(),
        bytes: memory.text.len(),
    })
}

/// Writes `text` to a temporary file beside `file`, flushed, then renamed over it, creating
/// the folders above it (as Keen's file tools do).
fn write_atomically(file: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let folder = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder)?;
    let temporary = folder.join(format!(".{MEMORY_FILE_NAME}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&temporary).and_then(|mut out| {
        out.write_all(text.as_bytes())?;
        out.sync_all()
    });
    match written.and_then(|()| std::fs::rename(&temporary, file)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keens_files_round_trip_byte_for_byte() {
        let store = crate::tests::in_memory();
        let env = crate::tests::env_on(&store);
        let folder = tempfile::tempdir().expect("folder");
        let dir = folder.path().display().to_string();
        let text = "# Project Memory\n\n- Größe zählt: run `make test`.\n\n";
        for scope in [MemoryScope::Global, MemoryScope::Project] {
            let project = Some("app".to_owned());
            write(
                &env,
                WriteInput {
                    scope,
                    project: project.clone(),
                    text: text.to_owned(),
                },
            )
            .expect("written");
            let out = export(
                &env,
                KeenFileInput {
                    scope,
                    project,
                    dir: dir.clone(),
                },
            )
            .expect("exported");
            assert_eq!(std::fs::read_to_string(&out.file).expect("file"), text);
            let copy = Some("copy".to_owned());
            import(
                &env,
                KeenFileInput {
                    scope,
                    project: copy.clone(),
                    dir: dir.clone(),
                },
            )
            .expect("imported");
            let shown = show(
                &env,
                ShowInput {
                    scope: Some(scope),
                    project: copy,
                },
            )
            .expect("shown");
            assert_eq!(shown.memories[0].text, text);
        }
    }
}
