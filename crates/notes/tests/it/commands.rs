//! Every command's documented success and error texts, on each store.

use crate::support::*;

#[test]
fn view_lists_directories_and_numbers_files() {
    check(&[
        (
            view("/memories"),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories",
        ),
        (
            create("/memories/notes.txt", "Hello World\nThis is line two\n"),
            "File created successfully at: /memories/notes.txt",
        ),
        (
            create("/memories/projects/a/deep/x.md", &"x".repeat(2048)),
            "File created successfully at: /memories/projects/a/deep/x.md",
        ),
        (
            create("/memories/projects/plan.md", "plan"),
            "File created successfully at: /memories/projects/plan.md",
        ),
        (
            create("/memories/.hidden", "h"),
            "File created successfully at: /memories/.hidden",
        ),
        (
            create("/memories/node_modules/x.js", "x"),
            "File created successfully at: /memories/node_modules/x.js",
        ),
        (
            view("/memories"),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n\
             2.0K\t/memories\n\
             29B\t/memories/notes.txt\n\
             2.0K\t/memories/projects/\n\
             2K\t/memories/projects/a/\n\
             4B\t/memories/projects/plan.md",
        ),
        (
            view("/memories/projects/"),
            "Here're the files and directories up to 2 levels deep in /memories/projects, excluding hidden items and node_modules:\n\
             2.0K\t/memories/projects\n\
             2K\t/memories/projects/a/\n\
             2K\t/memories/projects/a/deep/\n\
             4B\t/memories/projects/plan.md",
        ),
        (
            view("/memories/notes.txt"),
            "Here's the content of /memories/notes.txt with line numbers:\n     1\tHello World\n     2\tThis is line two\n     3\t",
        ),
        (
            view_range("/memories/notes.txt", 2, -1),
            "Here's the content of /memories/notes.txt with line numbers:\n     2\tThis is line two\n     3\t",
        ),
        (
            view_range("/memories/notes.txt", 1, 1),
            "Here's the content of /memories/notes.txt with line numbers:\n     1\tHello World",
        ),
        (
            view_range("/memories/notes.txt", 0, 2),
            "error: Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 3]",
        ),
        (
            view_range("/memories/notes.txt", 3, 2),
            "error: Invalid `view_range` parameter: [3, 2]. Its second element `2` should be -1 or larger or equal than its first `3`",
        ),
        (
            view("/memories/missing.txt"),
            "error: The path /memories/missing.txt does not exist. Please provide a valid path.",
        ),
    ]);
}

#[test]
fn create_refuses_a_taken_path() {
    check(&[
        (
            create("/memories/a.md", "one"),
            "File created successfully at: /memories/a.md",
        ),
        (
            create("/memories/a.md", "two"),
            "error: File /memories/a.md already exists",
        ),
        (
            create("/memories/d/b.md", "b"),
            "File created successfully at: /memories/d/b.md",
        ),
        (
            create("/memories/d", "x"),
            "error: The path /memories/d is a directory, not a file",
        ),
        (
            create("/memories", "x"),
            "error: The path /memories is a directory, not a file",
        ),
        (
            create("/memories/a.md/c", "x"),
            "error: Cannot create /memories/a.md/c: a directory above it is a file",
        ),
        (
            view("/memories/a.md"),
            "Here's the content of /memories/a.md with line numbers:\n     1\tone",
        ),
    ]);
}

#[test]
fn str_replace_needs_exactly_one_occurrence() {
    check(&[
        (
            create(
                "/memories/preferences.txt",
                "Favorite color: blue\nFood: pizza\nblue sky\nDrink: tea\nEnd\n",
            ),
            "File created successfully at: /memories/preferences.txt",
        ),
        (
            replace(
                "/memories/preferences.txt",
                "Favorite color: blue",
                "Favorite color: green",
            ),
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tFavorite color: green\n     2\tFood: pizza\n     3\tblue sky",
        ),
        (
            replace(
                "/memories/preferences.txt",
                "Drink: tea",
                "Drink: coffee\nSnack: nuts",
            ),
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     2\tFood: pizza\n     3\tblue sky\n     4\tDrink: coffee\n     5\tSnack: nuts\n     6\tEnd\n     7\t",
        ),
        (
            replace("/memories/preferences.txt", "purple", "red"),
            "error: No replacement was performed, old_str `purple` did not appear verbatim in /memories/preferences.txt.",
        ),
        (
            replace("/memories/preferences.txt", "e", "E"),
            "error: No replacement was performed. Multiple occurrences of old_str `e` in lines: 1, 1, 1, 3, 4, 4. Please ensure it is unique",
        ),
        (
            replace("/memories/missing.txt", "a", "b"),
            "error: The path /memories/missing.txt does not exist. Please provide a valid path.",
        ),
        (
            create("/memories/dir/x.md", "x"),
            "File created successfully at: /memories/dir/x.md",
        ),
        (
            replace("/memories/dir", "x", "y"),
            "error: The path /memories/dir does not exist. Please provide a valid path.",
        ),
        (
            replace("/memories/dir/x.md", "", "y"),
            "error: No replacement was performed: old_str is empty in /memories/dir/x.md.",
        ),
    ]);
}

#[test]
fn insert_puts_a_line_after_the_given_one() {
    check(&[
        (
            create("/memories/todo.txt", "one\nthree\n"),
            "File created successfully at: /memories/todo.txt",
        ),
        (
            insert("/memories/todo.txt", 1, "two\n"),
            "The file /memories/todo.txt has been edited.",
        ),
        (
            insert("/memories/todo.txt", 0, "zero"),
            "The file /memories/todo.txt has been edited.",
        ),
        (
            insert("/memories/todo.txt", 4, "four"),
            "The file /memories/todo.txt has been edited.",
        ),
        (
            view("/memories/todo.txt"),
            "Here's the content of /memories/todo.txt with line numbers:\n     1\tzero\n     2\tone\n     3\ttwo\n     4\tthree\n     5\tfour\n     6\t",
        ),
        (
            insert("/memories/todo.txt", 7, "x"),
            "error: Invalid `insert_line` parameter: 7. It should be within the range of lines of the file: [0, 5]",
        ),
        (
            insert("/memories/todo.txt", -1, "x"),
            "error: Invalid `insert_line` parameter: -1. It should be within the range of lines of the file: [0, 5]",
        ),
        (
            insert("/memories/nope.txt", 0, "x"),
            "error: The path /memories/nope.txt does not exist. Please provide a valid path.",
        ),
        (
            create("/memories/empty.txt", ""),
            "File created successfully at: /memories/empty.txt",
        ),
        (
            insert("/memories/empty.txt", 0, "first"),
            "The file /memories/empty.txt has been edited.",
        ),
        (
            view("/memories/empty.txt"),
            "Here's the content of /memories/empty.txt with line numbers:\n     1\tfirst\n     2\t",
        ),
    ]);
}

#[test]
fn delete_removes_a_file_or_a_tree() {
    check(&[
        (
            create("/memories/old_file.txt", "x"),
            "File created successfully at: /memories/old_file.txt",
        ),
        (
            create("/memories/dir/a.md", "a"),
            "File created successfully at: /memories/dir/a.md",
        ),
        (
            create("/memories/dir/sub/b.md", "b"),
            "File created successfully at: /memories/dir/sub/b.md",
        ),
        (
            create("/memories/dir2.md", "keep"),
            "File created successfully at: /memories/dir2.md",
        ),
        (
            delete("/memories/old_file.txt"),
            "Successfully deleted /memories/old_file.txt",
        ),
        (
            delete("/memories/old_file.txt"),
            "error: The path /memories/old_file.txt does not exist",
        ),
        (
            delete("/memories/dir"),
            "Successfully deleted /memories/dir",
        ),
        (
            delete("/memories"),
            "error: Cannot delete the /memories directory itself",
        ),
        (
            view("/memories"),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n4B\t/memories\n4B\t/memories/dir2.md",
        ),
    ]);
}

#[test]
fn rename_moves_a_file_or_a_tree() {
    check(&[
        (
            create("/memories/draft.txt", "d"),
            "File created successfully at: /memories/draft.txt",
        ),
        (
            create("/memories/final.txt", "f"),
            "File created successfully at: /memories/final.txt",
        ),
        (
            create("/memories/dir/a.md", "a"),
            "File created successfully at: /memories/dir/a.md",
        ),
        (
            rename("/memories/draft.txt", "/memories/final.txt"),
            "error: The destination /memories/final.txt already exists",
        ),
        (
            rename("/memories/draft.txt", "/memories/dir"),
            "error: The destination /memories/dir already exists",
        ),
        (
            rename("/memories/missing.txt", "/memories/x.txt"),
            "error: The path /memories/missing.txt does not exist",
        ),
        (
            rename("/memories/dir", "/memories/dir/inner"),
            "error: Cannot move /memories/dir into itself (/memories/dir/inner)",
        ),
        (
            rename("/memories/dir", "/memories/final.txt/x"),
            "error: Cannot rename /memories/final.txt/x: a directory above it is a file",
        ),
        (
            rename("/memories", "/memories/x"),
            "error: Cannot rename the /memories directory itself or move anything onto it",
        ),
        (
            rename("/memories/draft.txt", "/memories/archive/draft.txt"),
            "Successfully renamed /memories/draft.txt to /memories/archive/draft.txt",
        ),
        (
            rename("/memories/dir", "/memories/moved"),
            "Successfully renamed /memories/dir to /memories/moved",
        ),
        (
            view("/memories/moved/a.md"),
            "Here's the content of /memories/moved/a.md with line numbers:\n     1\ta",
        ),
    ]);
}

#[test]
fn search_finds_files_holding_every_word() {
    check(&[
        (
            create(
                "/memories/deploy.md",
                "# Deploy\nUse cargo build --release\nthen restart the service\n",
            ),
            "File created successfully at: /memories/deploy.md",
        ),
        (
            create(
                "/memories/ops/cargo.md",
                "cargo fmt first\nDEPLOY on fridays? never\n",
            ),
            "File created successfully at: /memories/ops/cargo.md",
        ),
        (
            create("/memories/other.md", "nothing relevant"),
            "File created successfully at: /memories/other.md",
        ),
        (
            search("deploy cargo", None),
            "Found 2 file(s) in /memories containing `deploy cargo` (matching lines as path:line):\n\
             /memories/deploy.md:1:\t# Deploy\n\
             /memories/deploy.md:2:\tUse cargo build --release\n\
             /memories/ops/cargo.md:1:\tcargo fmt first\n\
             /memories/ops/cargo.md:2:\tDEPLOY on fridays? never",
        ),
        (
            search("deploy", Some("/memories/ops")),
            "Found 1 file(s) in /memories/ops containing `deploy` (matching lines as path:line):\n/memories/ops/cargo.md:2:\tDEPLOY on fridays? never",
        ),
        (
            search("kubernetes", None),
            "No files in /memories contain `kubernetes`.",
        ),
        (
            search("  ", None),
            "error: the query holds no word to search for",
        ),
    ]);
}

#[test]
fn secrets_are_neither_stored_nor_echoed() {
    use agent_memory_core::store::notes::{NotePath, NoteStore};
    use agent_memory_core::{InMemoryStore, Scope};
    use agent_memory_notes::{Notes, Secrets};

    let store = InMemoryStore::new();
    let mut secrets = Secrets::new();
    secrets.add("api_key", "sk-live-7f3a9c").expect("secret");
    let notes = Notes::new(&store, Scope::new("default").expect("scope")).with_secrets(secrets);
    let answers = [
        answer(
            &notes,
            &create("/memories/keys.md", "key: sk-live-7f3a9c\n"),
        ),
        answer(
            &notes,
            &replace(
                "/memories/keys.md",
                "sk-live-7f3a9c",
                "sk-live-7f3a9c (rotated)",
            ),
        ),
        answer(&notes, &view("/memories/keys.md")),
        answer(
            &notes,
            &replace("/memories/keys.md", "sk-live-7f3a9c-nope", "x"),
        ),
        answer(&notes, &search("sk-live-7f3a9c", None)),
    ];
    for text in &answers {
        assert!(!text.contains("sk-live-7f3a9c"), "echoed a secret: {text}");
    }
    assert_eq!(
        answers[2],
        "Here's the content of /memories/keys.md with line numbers:\n     1\tkey: ${api_key} (rotated)\n     2\t"
    );
    let stored = store
        .note_read(
            &Scope::new("default").expect("scope"),
            &NotePath::new("keys.md").expect("path"),
        )
        .expect("read")
        .expect("note");
    assert_eq!(stored, "key: ${api_key} (rotated)\n");
}
