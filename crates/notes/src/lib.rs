//! Notes: a tree of text files per scope under `/memories`, edited with the six commands of
//! Anthropic's client-side memory tool (`memory_20250818`): `view`, `create`, `str_replace`,
//! `insert`, `delete` and `rename`, answering with the texts its documentation gives, plus a
//! keyword `search`. Models trained on that tool use it as they were taught; any store that
//! implements [`NoteStore`] keeps the files (in memory, SQLite or PostgreSQL).
//!
//! ```
//! use agent_memory_core::{InMemoryStore, Scope};
//! use agent_memory_notes::{Command, Notes};
//!
//! let notes = Notes::new(InMemoryStore::new(), Scope::new("default")?);
//! let created = notes.execute(&Command::Create {
//!     path: "/memories/preferences.txt".into(),
//!     file_text: "Favorite color: blue\n".into(),
//! })?;
//! assert_eq!(created.text, "File created successfully at: /memories/preferences.txt");
//! notes.execute(&Command::StrReplace {
//!     path: "/memories/preferences.txt".into(),
//!     old_str: "blue".into(),
//!     new_str: "green".into(),
//! })?;
//! let viewed = notes.execute(&Command::View { path: "/memories/preferences.txt".into(), view_range: None })?;
//! assert!(viewed.text.ends_with("     1\tFavorite color: green\n     2\t"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each command is one atomic step of the store. A command that edits a note (`str_replace`,
//! `insert`) reads it, computes the new text and writes it back with a compare-and-swap
//! against the text it read; when another editor wrote in between, it starts over on the new
//! text, so two editors never lose each other's edit, and a `str_replace` whose text another
//! editor changed fails as the tool documents instead of overwriting.

#![deny(missing_docs)]

mod error;
mod path;
mod secrets;
mod text;
mod wording;

use agent_memory_core::evidence::{Evidence, Status};
use agent_memory_core::excerpt::{Excerpt, capped_list};
use agent_memory_core::screen::{ScreenPolicy, as_data_block};
use agent_memory_core::store::notes::{
    NOTE_CHANGED, NOTE_EXISTS, NOTE_HELD, NOTE_INTO_ITSELF, NOTE_IS_DIRECTORY, NOTE_UNDER_NOTE,
    NoteLimits, NotePath, NoteStore, is_note_conflict,
};
use agent_memory_core::{
    Clock, Error as CoreError, Provenance, Scope, SharedClock, Source, SystemClock,
};

pub use error::{Error, ErrorKind, Result};
pub use path::{MAX_PATH_BYTES, MemoryPath, ROOT};
pub use secrets::{MIN_SECRET_BYTES, Secrets};
pub use text::{MAX_LINES, human_size};
pub use wording::Wording;

/// How often an edit starts over when other editors keep changing its note.
const EDIT_ATTEMPTS: usize = 32;
/// The longest search query, in bytes.
pub const MAX_QUERY_BYTES: usize = 1024;
/// How many notes a search shows unless told otherwise.
pub const DEFAULT_SEARCH_LIMIT: usize = 20;
/// How many matching lines a search shows per note.
pub const LINES_PER_HIT: usize = 10;

/// A command of the memory tool, with the inputs its documentation names, plus `search`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Lists a directory (two levels deep, with sizes) or shows a file with line numbers.
    View {
        /// The directory or file.
        path: String,
        /// `[first, last]` lines of a file to show, 1-based; `last` may be `-1` for the end.
        view_range: Option<[i64; 2]>,
    },
    /// Creates a file; fails when one is there.
    Create {
        /// The new file.
        path: String,
        /// Its text.
        file_text: String,
    },
    /// Replaces the one occurrence of `old_str` in a file with `new_str`.
    StrReplace {
        /// The file.
        path: String,
        /// The text to replace; it must occur exactly once.
        old_str: String,
        /// Its replacement.
        new_str: String,
    },
    /// Inserts a line of text after line `insert_line` (0: at the top).
    Insert {
        /// The file.
        path: String,
        /// The line after which the text goes, 0 to the file's number of lines.
        insert_line: i64,
        /// The text.
        insert_text: String,
    },
    /// Deletes a file, or a directory with everything in it.
    Delete {
        /// The file or directory.
        path: String,
    },
    /// Renames or moves a file or a directory.
    Rename {
        /// Where it is.
        old_path: String,
        /// Where it goes; nothing may be there.
        new_path: String,
    },
    /// Finds the files holding every word of `query` (ASCII case ignored) and their lines
    /// that hold one of them.
    Search {
        /// Words separated by white space.
        query: String,
        /// The directory to search (default `/memories`).
        path: Option<String>,
        /// The most files to show (default [`DEFAULT_SEARCH_LIMIT`]).
        limit: Option<usize>,
    },
}

/// What a command answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The text the memory tool returns for it.
    pub text: String,
    /// For `search`: each matching line, in file then line order.
    pub matches: Vec<SearchMatch>,
}

/// A line a search found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchMatch {
    /// The file, as `/memories/...`.
    pub path: String,
    /// The line's number, 1-based.
    pub line: usize,
    /// The line.
    pub text: String,
}

/// The notes of one scope on a store: the memory tool's commands over a [`NoteStore`].
///
/// Every write is a version kept with its [`Evidence`]: who wrote it (a model through the
/// memory tool unless [`Notes::with_writer`] says otherwise) and what the write screen found
/// under the [`ScreenPolicy`] ([`Notes::with_screen`]; `flag` by default). A write the policy
/// quarantines is stored but held for review: no command shows it until it is approved, and
/// the write's answer says so. [`Notes::with_data_blocks`] hands a viewed file's lines over
/// as a `<memory-item source=… trust=…>` data block instead of the tool's bare text.
#[derive(Debug)]
pub struct Notes<S> {
    store: S,
    scope: Scope,
    limits: NoteLimits,
    secrets: Secrets,
    wording: Wording,
    writer: Writer,
    policy: ScreenPolicy,
    data_blocks: bool,
    clock: SharedClock,
}

/// Who writes through a [`Notes`]: the source, session and client of each version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    /// Who: a model through the memory tool by default.
    pub source: Source,
    /// The session or run, when known.
    pub session: Option<String>,
    /// The client (the command line, the MCP server, a language package), when known.
    pub client: Option<String>,
}

impl Default for Writer {
    fn default() -> Self {
        Writer {
            source: Source::Model(String::new()),
            session: None,
            client: None,
        }
    }
}

fn not_found(path: &MemoryPath, message: String) -> Error {
    Error::command(ErrorKind::NotFound, path.to_string(), message)
}

fn invalid(input: impl Into<String>, message: String) -> Error {
    Error::command(ErrorKind::InvalidInput, input, message)
}

impl<S: NoteStore> Notes<S> {
    /// The notes of `scope` on `store`, with the default [`NoteLimits`] and no secrets.
    pub fn new(store: S, scope: Scope) -> Self {
        Notes {
            store,
            scope,
            limits: NoteLimits::default(),
            secrets: Secrets::new(),
            wording: Wording::default(),
            writer: Writer::default(),
            policy: ScreenPolicy::default(),
            data_blocks: false,
            clock: SharedClock::new(SystemClock),
        }
    }

    /// Writing as `writer` (by default a model, in no known session, through no known client).
    pub fn with_writer(mut self, writer: Writer) -> Self {
        self.writer = writer;
        self
    }

    /// Screening each written text under `policy` (`flag` by default).
    pub fn with_screen(mut self, policy: ScreenPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Viewing a file as a data block naming its source and trust (`false` by default: the
    /// memory tool's own text).
    pub fn with_data_blocks(mut self, on: bool) -> Self {
        self.data_blocks = on;
        self
    }

    /// Stamping versions with `clock`'s time (the system clock by default).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = SharedClock::new(clock);
        self
    }

    /// Who writes now: the writer, at the clock's time.
    fn provenance(&self) -> Provenance {
        Provenance {
            source: self.writer.source.clone(),
            session: self.writer.session.clone(),
            client: self.writer.client.clone(),
            at: self.clock.now(),
        }
    }

    /// The evidence of a version holding `text`, written now.
    fn evidence(&self, text: &str) -> Evidence {
        let host = self.writer.source.host();
        Evidence::judged(self.provenance(), &self.policy.judge(text, host.as_deref()))
    }

    /// Answering in `wording` (see [`Wording`]): the documented texts, or one of the SDKs'.
    pub fn with_wording(mut self, wording: Wording) -> Self {
        self.wording = wording;
        self
    }

    /// With other size limits.
    pub fn with_limits(mut self, limits: NoteLimits) -> Self {
        self.limits = limits;
        self
    }

    /// With values to scrub from every input and every answer (see [`Secrets`]).
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    /// The scope these notes are in.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The store the notes are on: its history, review and forget operations.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Runs `command`. Inputs are scrubbed of secrets first, and so is the answer.
    pub fn execute(&self, command: &Command) -> Result<Outcome> {
        let s = |text: &str| self.secrets.scrub(text);
        let mut outcome = match command {
            Command::View { path, view_range } => self.view(&s(path), *view_range),
            Command::Create { path, file_text } => self.create(&s(path), &s(file_text)),
            Command::StrReplace {
                path,
                old_str,
                new_str,
            } => self.str_replace(&s(path), &s(old_str), &s(new_str)),
            Command::Insert {
                path,
                insert_line,
                insert_text,
            } => self.insert(&s(path), *insert_line, &s(insert_text)),
            Command::Delete { path } => self.delete(&s(path)),
            Command::Rename { old_path, new_path } => self.rename(&s(old_path), &s(new_path)),
            Command::Search { query, path, limit } => {
                let path = path.as_deref().map(s);
                return self
                    .search(&s(query), path.as_deref(), *limit)
                    .map(|mut o| {
                        o.text = s(&o.text);
                        for m in &mut o.matches {
                            m.text = s(&m.text);
                        }
                        o
                    });
            }
        }
        .map(|text| Outcome {
            text,
            matches: Vec::new(),
        })?;
        outcome.text = s(&outcome.text);
        Ok(outcome)
    }

    /// `raw` read as a path in this wording.
    fn parse(&self, raw: &str) -> Result<MemoryPath> {
        MemoryPath::parse_as(raw, self.wording)
    }

    /// The refusal of an edit of `path` where no note is: the documented text, or in an
    /// SDK's wording its own when a directory is there.
    fn missing_file(&self, path: &MemoryPath) -> Error {
        if let Some(message) = self.wording.not_a_file(&path.to_string()) {
            // Only a failure reads the listing, and a store that fails to list gets the
            // plain text: the edit fails either way.
            let directory = match path.note() {
                None => true,
                Some(note) => self
                    .store
                    .note_list(&self.scope, Some(note))
                    .is_ok_and(|files| !files.is_empty()),
            };
            if directory {
                return not_found(path, message);
            }
        }
        not_found(
            path,
            format!("The path {path} does not exist. Please provide a valid path."),
        )
    }

    /// `view`: a directory's listing or a file's numbered lines.
    pub fn view(&self, raw: &str, view_range: Option<[i64; 2]>) -> Result<String> {
        let path = self.parse(raw)?;
        let missing = || {
            not_found(
                &path,
                format!("The path {path} does not exist. Please provide a valid path."),
            )
        };
        if let Some(note) = path.note()
            && let Some(text) = self.store.note_read(&self.scope, note)?
        {
            let view = file_view(&path, &text, view_range, self.wording)?;
            if !self.data_blocks {
                return Ok(view);
            }
            return Ok(self.as_data(note, view));
        }
        let files = self.store.note_list(&self.scope, path.note())?;
        if path.note().is_some() && files.is_empty() {
            return Err(missing());
        }
        let prefix = path.note().map(|n| format!("{n}/")).unwrap_or_default();
        Ok(text::listing(
            &path.to_string(),
            &prefix,
            &files,
            self.wording,
        ))
    }

    /// A file's view as a data block: the first line (what the view is) stays outside, the
    /// numbered lines go inside, with the newest version's source and trust.
    fn as_data(&self, note: &NotePath, view: String) -> String {
        let evidence = self
            .store
            .note_history(&self.scope, note)
            .ok()
            .and_then(|mut versions| versions.pop())
            .map(|v| v.evidence);
        let (source, trust) = match &evidence {
            Some(e) => (e.provenance.source.clone(), e.trust()),
            None => (Source::Unknown, "external"),
        };
        match view.split_once('\n') {
            Some((head, lines)) => format!("{head}\n{}", as_data_block(lines, &source, trust)),
            None => format!("{view}\n{}", as_data_block("", &source, trust)),
        }
    }

    /// The sentence a write's answer gains when the screen held or flagged it.
    fn screened(evidence: &Evidence) -> String {
        match evidence.status {
            Status::Quarantined => format!(
                "\nIt is held for review and cannot be read until it is approved: {}",
                evidence.reasons.join("; ")
            ),
            _ => String::new(),
        }
    }

    /// `create`: a new file holding `file_text`.
    pub fn create(&self, raw: &str, file_text: &str) -> Result<String> {
        let path = self.parse(raw)?;
        let Some(note) = path.note() else {
            return Err(Error::command(
                ErrorKind::AlreadyExists,
                path.to_string(),
                self.wording.create_on_directory(&path.to_string()),
            ));
        };
        self.fits(&path, file_text)?;
        let evidence = self.evidence(file_text);
        match self
            .store
            .note_create(&self.scope, note, file_text, &evidence, &self.limits)
        {
            Ok(()) => Ok(format!(
                "File created successfully at: {path}{}",
                Self::screened(&evidence)
            )),
            Err(e) => Err(placement_error(&path, e, "create", self.wording)),
        }
    }

    /// `str_replace`: the one occurrence of `old_str` becomes `new_str`.
    pub fn str_replace(&self, raw: &str, old_str: &str, new_str: &str) -> Result<String> {
        let path = self.parse(raw)?;
        if old_str.is_empty() {
            return Err(invalid(
                "old_str",
                format!("No replacement was performed: old_str is empty in {path}."),
            ));
        }
        let missing = || self.missing_file(&path);
        // The texts quote `old_str` and list the lines it occurs on; both are cut when long
        // (the tool's texts, word for word, for a short input), so no answer grows with them.
        let quoted = Excerpt::backticked(old_str);
        self.edit(&path, missing, |text| {
            let found: Vec<usize> = text.match_indices(old_str).map(|(at, _)| at).collect();
            let line_of = |at: usize| text[..at].matches('\n').count() + 1;
            match found.as_slice() {
                [] => Err(invalid(
                    "old_str",
                    format!(
                        "No replacement was performed, old_str {quoted} did not appear verbatim in {path}."
                    ),
                )),
                [at] => {
                    let edited = format!("{}{new_str}{}", &text[..*at], &text[at + old_str.len()..]);
                    let first = line_of(*at);
                    let last = first + new_str.matches('\n').count();
                    Ok((edited, (first, last)))
                }
                many => {
                    // Lines are counted from one occurrence to the next, and only for those
                    // listed, so a text found thousands of times is read once.
                    let (mut line, mut counted) = (1, 0);
                    let lines = many.iter().map(|&at| {
                        line += text[counted..at].matches('\n').count();
                        counted = at;
                        line
                    });
                    Err(invalid(
                        "old_str",
                        format!(
                            "No replacement was performed. Multiple occurrences of old_str {quoted} in lines: {}. Please ensure it is unique",
                            capped_list(lines)
                        ),
                    ))
                }
            }
        })
        .map(|(edited, (first, last), evidence)| {
            let all = text::lines(&edited);
            let from = first.saturating_sub(2).max(1);
            let to = self.wording.snippet_end(first, last).min(all.len());
            let snippet: Vec<String> = (from..=to)
                .map(|n| text::numbered(n, all[n - 1]))
                .collect();
            format!(
                "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{}{}",
                snippet.join("\n"),
                Self::screened(&evidence)
            )
        })
    }

    /// `insert`: `insert_text` as a line after line `insert_line`.
    pub fn insert(&self, raw: &str, insert_line: i64, insert_text: &str) -> Result<String> {
        let path = self.parse(raw)?;
        let missing = || self.missing_file(&path);
        let wording = self.wording;
        self.edit(&path, missing, |text| {
            let mut lines = wording.insert_lines(text);
            let at = usize::try_from(insert_line)
                .ok()
                .filter(|at| *at <= lines.len())
                .ok_or_else(|| {
                    invalid(
                        "insert_line",
                        wording.insert_line_out_of_range(insert_line, lines.len()),
                    )
                })?;
            lines.insert(at, wording.inserted_line(insert_text));
            Ok((wording.inserted_text(&lines), ()))
        })
        .map(|(_, (), evidence)| {
            format!(
                "The file {path} has been edited.{}",
                Self::screened(&evidence)
            )
        })
    }

    /// `delete`: a file, or a directory with everything in it.
    pub fn delete(&self, raw: &str) -> Result<String> {
        let path = self.parse(raw)?;
        let Some(note) = path.note() else {
            return Err(invalid(
                path.to_string(),
                format!("Cannot delete the {ROOT} directory itself"),
            ));
        };
        match self
            .store
            .note_delete(&self.scope, note, &self.provenance())?
        {
            0 => Err(not_found(&path, format!("The path {path} does not exist"))),
            _ => Ok(format!("Successfully deleted {path}")),
        }
    }

    /// `rename`: a file or a directory to a free path.
    pub fn rename(&self, old_raw: &str, new_raw: &str) -> Result<String> {
        let old = self.parse(old_raw)?;
        let new = self.parse(new_raw)?;
        let (Some(from), Some(to)) = (old.note(), new.note()) else {
            return Err(invalid(
                ROOT,
                self.wording.rename_root(old.note().is_some()),
            ));
        };
        match self
            .store
            .note_rename(&self.scope, from, to, &self.provenance())
        {
            Ok(_) => Ok(format!("Successfully renamed {old} to {new}")),
            Err(CoreError::NotFound { .. }) => {
                Err(not_found(&old, format!("The path {old} does not exist")))
            }
            Err(e) if is_note_conflict(&e, NOTE_INTO_ITSELF) => Err(invalid(
                new.to_string(),
                format!("Cannot move {old} into itself ({new})"),
            )),
            Err(e) => Err(placement_error(&new, e, "rename", self.wording)),
        }
    }

    /// `search`: the files under `path` (default `/memories`) holding every word of `query`,
    /// with their lines that hold one.
    pub fn search(&self, query: &str, path: Option<&str>, limit: Option<usize>) -> Result<Outcome> {
        let dir = self.parse(path.unwrap_or(ROOT))?;
        if query.len() > MAX_QUERY_BYTES {
            return Err(invalid(
                "query",
                format!(
                    "the query is {} bytes, over the limit of {MAX_QUERY_BYTES} bytes",
                    query.len()
                ),
            ));
        }
        let terms: Vec<&str> = query.split_whitespace().collect();
        if terms.is_empty() {
            return Err(invalid(
                "query",
                "the query holds no word to search for".to_owned(),
            ));
        }
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT).max(1);
        let hits = self
            .store
            .note_search(&self.scope, dir.note(), &terms, limit)?;
        let lowered: Vec<String> = terms.iter().map(|t| t.to_ascii_lowercase()).collect();
        let mut matches = Vec::new();
        for hit in &hits {
            let shown = MemoryPath::of(&hit.path).to_string();
            let lines = text::lines(&hit.text)
                .into_iter()
                .enumerate()
                .filter(|(_, line)| {
                    let line = line.to_ascii_lowercase();
                    lowered.iter().any(|t| line.contains(t.as_str()))
                })
                .take(LINES_PER_HIT);
            for (i, line) in lines {
                matches.push(SearchMatch {
                    path: shown.clone(),
                    line: i + 1,
                    text: line.to_owned(),
                });
            }
        }
        let text = if hits.is_empty() {
            format!("No files in {dir} contain `{query}`.")
        } else {
            let body: Vec<String> = matches
                .iter()
                .map(|m| format!("{}:{}:\t{}", m.path, m.line, m.text))
                .collect();
            format!(
                "Found {} file(s) in {dir} containing `{query}` (matching lines as path:line):\n{}",
                hits.len(),
                body.join("\n")
            )
        };
        Ok(Outcome { text, matches })
    }

    /// Fails before any write when `text` alone is over the note limit.
    fn fits(&self, path: &MemoryPath, text: &str) -> Result<()> {
        let bytes = text.len() as u64;
        if bytes > self.limits.max_note_bytes {
            return Err(Error::command(
                ErrorKind::TooLarge,
                path.to_string(),
                format!(
                    "File {path} would be {bytes} bytes, over the limit of {} bytes per file (max_note_bytes)",
                    self.limits.max_note_bytes
                ),
            ));
        }
        Ok(())
    }

    /// Reads the note at `path`, computes its new text with `change`, and writes it with a
    /// compare-and-swap against what was read, starting over when another editor wrote in
    /// between. `change` sees the current text each time, so its checks hold for the text
    /// it replaces.
    fn edit<T>(
        &self,
        path: &MemoryPath,
        missing: impl Fn() -> Error,
        change: impl Fn(&str) -> Result<(String, T)>,
    ) -> Result<(String, T, Evidence)> {
        let note = path.note().ok_or_else(&missing)?;
        for _ in 0..EDIT_ATTEMPTS {
            let Some(current) = self.store.note_read(&self.scope, note)? else {
                return Err(missing());
            };
            let (edited, detail) = change(&current)?;
            self.fits(path, &edited)?;
            let evidence = self.evidence(&edited);
            match self.store.note_replace(
                &self.scope,
                note,
                &current,
                &edited,
                &evidence,
                &self.limits,
            ) {
                Ok(()) => return Ok((edited, detail, evidence)),
                Err(e) if is_note_conflict(&e, NOTE_CHANGED) => continue,
                Err(CoreError::NotFound { .. }) => return Err(missing()),
                Err(e) => return Err(e.into()),
            }
        }
        Err(Error::command(
            ErrorKind::Conflict,
            path.to_string(),
            format!("The file {path} kept changing while it was edited; view it and try again"),
        ))
    }
}

/// A file's numbered lines, all or `view_range` of them.
fn file_view(
    path: &MemoryPath,
    text: &str,
    view_range: Option<[i64; 2]>,
    wording: Wording,
) -> Result<String> {
    let lines = text::lines(text);
    if lines.len() > MAX_LINES {
        return Err(invalid(
            path.to_string(),
            wording.too_many_lines(&path.to_string(), lines.len()),
        ));
    }
    let (first, last) = match view_range {
        None => (1, lines.len()),
        Some([first, last]) => {
            let count = lines.len() as i64;
            if first < 1 || first > count {
                return Err(invalid(
                    "view_range",
                    format!(
                        "Invalid `view_range` parameter: [{first}, {last}]. Its first element `{first}` should be within the range of lines of the file: [1, {count}]"
                    ),
                ));
            }
            if last != -1 && last < first {
                return Err(invalid(
                    "view_range",
                    format!(
                        "Invalid `view_range` parameter: [{first}, {last}]. Its second element `{last}` should be -1 or larger or equal than its first `{first}`"
                    ),
                ));
            }
            let last = if last == -1 { count } else { last.min(count) };
            (first as usize, last as usize)
        }
    };
    let numbered: Vec<String> = (first..=last)
        .map(|n| text::numbered(n, lines[n - 1]))
        .collect();
    Ok(format!(
        "Here's the content of {path} with line numbers:\n{}",
        numbered.join("\n")
    ))
}

/// The tool's answer when a write finds its path taken.
fn placement_error(path: &MemoryPath, error: CoreError, command: &str, wording: Wording) -> Error {
    let taken =
        |message: String| Error::command(ErrorKind::AlreadyExists, path.to_string(), message);
    if is_note_conflict(&error, NOTE_EXISTS) || is_note_conflict(&error, NOTE_IS_DIRECTORY) {
        return taken(match command {
            "create" if is_note_conflict(&error, NOTE_EXISTS) => {
                format!("File {path} already exists")
            }
            "create" => wording.create_on_directory(&path.to_string()),
            _ => format!("The destination {path} already exists"),
        });
    }
    if is_note_conflict(&error, NOTE_HELD) {
        return taken(format!(
            "Cannot {command} {path}: a file there is held for review"
        ));
    }
    if is_note_conflict(&error, NOTE_UNDER_NOTE) {
        return taken(format!(
            "Cannot {command} {path}: a directory above it is a file"
        ));
    }
    error.into()
}

/// The note path of a [`MemoryPath`] text, for callers that hold one (`/memories/a.md` is
/// `a.md`; the root has none).
pub fn note_path(raw: &str) -> Result<Option<NotePath>> {
    Ok(MemoryPath::parse(raw)?.note().cloned())
}
