//! Stores to run the commands on, and a `check` helper that runs a script of commands and
//! compares each answer (or error text) with the expected one.

use agent_memory_core::store::notes::NoteStore;
use agent_memory_core::{InMemoryStore, Scope};
use agent_memory_notes::{Command, Notes, Wording};
use agent_memory_sqlite::SqliteStore;

/// Notes in the scope `default` of a fresh store of each kind.
pub fn each_store() -> Vec<(&'static str, Notes<std::sync::Arc<dyn NoteStore>>)> {
    let scope = || Scope::new("default").expect("scope");
    let sqlite: std::sync::Arc<dyn NoteStore> =
        std::sync::Arc::new(SqliteStore::open_in_memory().expect("sqlite in memory"));
    let memory: std::sync::Arc<dyn NoteStore> = std::sync::Arc::new(InMemoryStore::new());
    vec![
        ("in memory", Notes::new(memory, scope())),
        ("sqlite", Notes::new(sqlite, scope())),
    ]
}

/// The answer of a command as one string: its text, or `error: ` and the error's text.
pub fn answer<S: NoteStore>(notes: &Notes<S>, command: &Command) -> String {
    match notes.execute(command) {
        Ok(outcome) => outcome.text,
        Err(e) => format!("error: {e}"),
    }
}

/// Runs `script` on every kind of store, comparing each answer with the expected one.
pub fn check(script: &[(Command, &str)]) {
    check_in(Wording::Documented, script);
}

/// [`check`] with the answers in `wording`.
pub fn check_in(wording: Wording, script: &[(Command, &str)]) {
    for (store, notes) in each_store() {
        let notes = notes.with_wording(wording);
        for (i, (command, expected)) in script.iter().enumerate() {
            let got = answer(&notes, command);
            assert_eq!(got, *expected, "{store}: step {} ({command:?})", i + 1);
        }
    }
}

pub fn view(path: &str) -> Command {
    Command::View {
        path: path.into(),
        view_range: None,
    }
}

pub fn view_range(path: &str, first: i64, last: i64) -> Command {
    Command::View {
        path: path.into(),
        view_range: Some([first, last]),
    }
}

pub fn create(path: &str, text: &str) -> Command {
    Command::Create {
        path: path.into(),
        file_text: text.into(),
    }
}

pub fn replace(path: &str, old: &str, new: &str) -> Command {
    Command::StrReplace {
        path: path.into(),
        old_str: old.into(),
        new_str: new.into(),
    }
}

pub fn insert(path: &str, line: i64, text: &str) -> Command {
    Command::Insert {
        path: path.into(),
        insert_line: line,
        insert_text: text.into(),
    }
}

pub fn delete(path: &str) -> Command {
    Command::Delete { path: path.into() }
}

pub fn rename(old: &str, new: &str) -> Command {
    Command::Rename {
        old_path: old.into(),
        new_path: new.into(),
    }
}

pub fn search(query: &str, path: Option<&str>) -> Command {
    Command::Search {
        query: query.into(),
        path: path.map(str::to_owned),
        limit: None,
    }
}
