//! The answers in the SDKs' wordings: where the Python and the TypeScript SDK's local
//! filesystem memory tools word a text differently from the documentation and from each
//! other, each answers as its SDK's tool does.

use agent_memory_notes::Wording;

use crate::support::{check_in, create, delete, insert, rename, replace, view};

const LISTING_PY: &str =
    "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:";
const LISTING_TS: &str = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:";

#[test]
fn paths_resolve_and_are_refused_as_the_sdks_word_it() {
    for wording in [Wording::PythonSdk, Wording::TypeScriptSdk] {
        check_in(
            wording,
            &[
                (
                    create("/invalid/path.txt", "x"),
                    "error: Path must start with /memories, got: /invalid/path.txt",
                ),
                (
                    create("/memoriesX/a.md", "x"),
                    "error: Path must start with /memories, got: /memoriesX/a.md",
                ),
                (
                    create("/memories/../../../etc/passwd", "x"),
                    "error: Path /memories/../../../etc/passwd would escape /memories directory",
                ),
                (
                    view("/memories/../memories_backup/secret.txt"),
                    "error: Path /memories/../memories_backup/secret.txt would escape /memories directory",
                ),
                (
                    create("/memories/a/../b.md", "b"),
                    "File created successfully at: /memories/b.md",
                ),
                (
                    view("/memories/./b.md"),
                    "Here's the content of /memories/b.md with line numbers:\n     1\tb",
                ),
                (
                    rename("/memories/sub/..", "/memories/moved"),
                    "error: Cannot rename the /memories directory itself",
                ),
                (
                    rename("/memories/b.md", "/memories/."),
                    "error: The destination /memories already exists",
                ),
                (
                    create("/memories", "x"),
                    "error: File /memories already exists",
                ),
                (
                    create("/memories/b.md/c.md", "x"),
                    "error: Cannot create /memories/b.md/c.md: a directory above it is a file",
                ),
                // What no SDK resolves is refused in the documented words.
                (
                    view("/memories/a\\b"),
                    r#"error: invalid path "/memories/a\\b": must not contain backslashes"#,
                ),
            ],
        );
    }
}

#[test]
fn a_directory_is_no_file_to_edit() {
    for wording in [Wording::PythonSdk, Wording::TypeScriptSdk] {
        check_in(
            wording,
            &[
                (
                    create("/memories/dir/a.md", "a"),
                    "File created successfully at: /memories/dir/a.md",
                ),
                (
                    create("/memories/dir", "x"),
                    "error: File /memories/dir already exists",
                ),
                (
                    replace("/memories/dir", "a", "b"),
                    "error: The path /memories/dir is not a file.",
                ),
                (
                    insert("/memories/dir", 0, "x"),
                    "error: The path /memories/dir is not a file.",
                ),
                (
                    insert("/memories", 0, "x"),
                    "error: The path /memories is not a file.",
                ),
                (
                    insert("/memories/missing.md", 0, "x"),
                    "error: The path /memories/missing.md does not exist. Please provide a valid path.",
                ),
            ],
        );
    }
}

#[test]
fn python_sdk_texts() {
    check_in(
        Wording::PythonSdk,
        &[
            (
                create("/memories/node_modules/x.js", "x"),
                "File created successfully at: /memories/node_modules/x.js",
            ),
            (
                view("/memories"),
                &format!(
                    "{LISTING_PY}\n1B\t/memories\n1B\t/memories/node_modules/\n1B\t/memories/node_modules/x.js"
                ),
            ),
            (
                delete("/memories/node_modules"),
                "Successfully deleted /memories/node_modules",
            ),
            (
                create("/memories/a.txt", "Line 1\nLine 2"),
                "File created successfully at: /memories/a.txt",
            ),
            (
                insert("/memories/a.txt", 9, "x"),
                "error: Invalid `insert_line` parameter: 9. It should be within the range [0, 2].",
            ),
            (
                insert("/memories/a.txt", 2, "Last Line\n\n"),
                "The file /memories/a.txt has been edited.",
            ),
            (
                view("/memories/a.txt"),
                "Here's the content of /memories/a.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLast Line\n     4\t",
            ),
            // The snippet ends two lines after the first changed line.
            (
                replace("/memories/a.txt", "Line 1", "One\nTwo\nThree\nFour"),
                "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n     1\tOne\n     2\tTwo\n     3\tThree",
            ),
        ],
    );
}

#[test]
fn typescript_sdk_texts() {
    check_in(
        Wording::TypeScriptSdk,
        &[
            (
                create("/memories/node_modules/x.js", "x"),
                "File created successfully at: /memories/node_modules/x.js",
            ),
            (view("/memories"), &format!("{LISTING_TS}\n1B\t/memories")),
            (
                create("/memories/a.txt", "Line 1\nLine 2"),
                "File created successfully at: /memories/a.txt",
            ),
            (
                insert("/memories/a.txt", 9, "x"),
                "error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 2]",
            ),
            // No newline is added, and only one is taken off the inserted text.
            (
                insert("/memories/a.txt", 2, "Last Line"),
                "The file /memories/a.txt has been edited.",
            ),
            (
                view("/memories/a.txt"),
                "Here's the content of /memories/a.txt with line numbers:\n     1\tLine 1\n     2\tLine 2\n     3\tLast Line",
            ),
            (
                insert("/memories/a.txt", 0, "Zero\n\n"),
                "The file /memories/a.txt has been edited.",
            ),
            (
                view("/memories/a.txt"),
                "Here's the content of /memories/a.txt with line numbers:\n     1\tZero\n     2\t\n     3\tLine 1\n     4\tLine 2\n     5\tLast Line",
            ),
            // A final newline leaves an empty last line, which the TypeScript SDK counts.
            (
                create("/memories/b.txt", "a\nb\n"),
                "File created successfully at: /memories/b.txt",
            ),
            (
                insert("/memories/b.txt", 4, "x"),
                "error: Invalid `insert_line` parameter: 4. It should be within the range of lines of the file: [0, 3]",
            ),
        ],
    );
}

#[test]
fn too_many_lines_in_each_wording() {
    let huge = vec!["line"; 1_000_000].join("\n");
    for (wording, expected) in [
        (
            Wording::Documented,
            "error: File /memories/huge.txt exceeds maximum line limit of 999,999 lines.",
        ),
        (
            Wording::PythonSdk,
            "error: File /memories/huge.txt exceeds maximum line limit of 999,999 lines.",
        ),
        (
            Wording::TypeScriptSdk,
            "error: File /memories/huge.txt has too many lines (1000000). Maximum is 999,999 lines.",
        ),
    ] {
        for (store, notes) in crate::support::each_store() {
            let limits = agent_memory_core::store::notes::NoteLimits {
                max_note_bytes: 8 * 1024 * 1024,
                ..Default::default()
            };
            let notes = notes.with_wording(wording).with_limits(limits);
            let created = crate::support::answer(&notes, &create("/memories/huge.txt", &huge));
            assert_eq!(
                created, "File created successfully at: /memories/huge.txt",
                "{store}"
            );
            let viewed = crate::support::answer(&notes, &view("/memories/huge.txt"));
            assert_eq!(viewed, expected, "{store} {wording:?}");
        }
    }
}
