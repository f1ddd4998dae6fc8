//! Paths that try to leave `/memories`, and writes that try to pass the size limits.

use agent_memory_core::store::notes::NoteLimits;
use agent_memory_core::{InMemoryStore, Scope};
use agent_memory_notes::{ErrorKind, Notes};

use crate::support::*;

#[test]
fn traversal_is_refused_by_every_command() {
    let attacks = [
        (
            "/memories/../etc/passwd",
            "must not contain .. (it would escape /memories)",
        ),
        (
            "/memories/a/../../etc",
            "must not contain .. (it would escape /memories)",
        ),
        (
            "/memories/%2e%2e/%2e%2e/etc",
            "must not contain percent-encoded characters (such as %2e or %2f)",
        ),
        (
            "/memories/..%2f..%2fetc",
            "must not contain percent-encoded characters (such as %2e or %2f)",
        ),
        (
            "/memories/%252e%252e/etc",
            "must not contain percent-encoded characters (such as %2e or %2f)",
        ),
        ("/memories\\..\\..\\etc", "must not contain backslashes"),
        ("/memories/..\\etc", "must not contain backslashes"),
        ("/etc/passwd", "must start with /memories"),
        ("/memories_evil/x", "must start with /memories"),
        ("../memories/x", "must start with /memories"),
        ("/memories/a\0.md", "must not contain NUL characters"),
        ("/memories/./a", "must not contain . or .. segments"),
    ];
    for (_, notes) in each_store() {
        for (path, reason) in attacks {
            let commands = [
                view(path),
                create(path, "x"),
                replace(path, "a", "b"),
                insert(path, 0, "x"),
                delete(path),
                rename(path, "/memories/ok.md"),
                rename("/memories/ok.md", path),
                search("x", Some(path)),
            ];
            for command in commands {
                let error = notes
                    .execute(&command)
                    .map(|o| o.text)
                    .expect_err("an escaping path is refused");
                assert_eq!(error.kind(), Some(ErrorKind::InvalidInput), "{command:?}");
                assert!(error.to_string().ends_with(reason), "{command:?}: {error}");
            }
        }
        assert_eq!(
            answer(&notes, &view("/memories")),
            "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n0B\t/memories",
            "nothing was written"
        );
    }
}

#[test]
fn overlong_paths_are_refused() {
    let long = format!("/memories/{}.md", "a".repeat(5000));
    for (_, notes) in each_store() {
        let error = notes.execute(&create(&long, "x")).expect_err("too long");
        let message = error.to_string();
        assert!(
            message.contains("over the limit of 1034 bytes"),
            "{message}"
        );
        assert!(
            message.len() < 200,
            "the error echoes the whole path: {message}"
        );
        let segment = format!("/memories/{}.md", "a".repeat(300));
        let error = notes.execute(&create(&segment, "x")).expect_err("segment");
        assert!(
            error
                .to_string()
                .ends_with("must not have a segment over 255 bytes"),
            "{error}"
        );
    }
}

#[test]
fn size_limits_hold_for_every_write() {
    let limits = NoteLimits {
        max_note_bytes: 100,
        max_scope_bytes: 150,
        max_scope_notes: 3,
        ..NoteLimits::default()
    };
    let store = InMemoryStore::new();
    let notes = Notes::new(&store, Scope::new("default").expect("scope")).with_limits(limits);
    let big = "x".repeat(101);
    let cases = [
        (
            create("/memories/big.md", &big),
            "File /memories/big.md would be 101 bytes, over the limit of 100 bytes per file (max_note_bytes)",
        ),
        (
            create("/memories/a.md", &format!("z{}", "a".repeat(99))),
            "",
        ),
        (
            replace("/memories/a.md", "z", "zz"),
            "File /memories/a.md would be 101 bytes, over the limit of 100 bytes per file (max_note_bytes)",
        ),
        (
            insert("/memories/a.md", 0, ""),
            "File /memories/a.md would be 102 bytes, over the limit of 100 bytes per file (max_note_bytes)",
        ),
        (
            create("/memories/b.md", &"b".repeat(51)),
            "invalid notes of scope default: 151 bytes in all, over the limit of 150 bytes per scope",
        ),
        (create("/memories/b.md", "b"), ""),
        (create("/memories/c.md", "c"), ""),
        (
            create("/memories/d.md", "d"),
            "invalid notes of scope default: 4 notes, over the limit of 3 notes per scope",
        ),
    ];
    for (command, expected) in cases {
        match notes.execute(&command) {
            Ok(_) => assert_eq!(expected, "", "{command:?} should fail"),
            Err(e) => {
                assert_eq!(e.to_string(), expected, "{command:?}");
                assert_eq!(e.kind(), Some(ErrorKind::TooLarge));
            }
        }
    }
    assert_eq!(
        answer(&notes, &view("/memories")),
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and node_modules:\n102B\t/memories\n100B\t/memories/a.md\n1B\t/memories/b.md\n1B\t/memories/c.md"
    );
}

/// A refusal quotes its input cut and lists at most twenty lines, so no error grows with its
/// input: each of these stays under 500 characters.
#[test]
fn refusals_quote_long_inputs_cut() {
    let huge = "x".repeat(1_000_000);
    let lines = "abcdefghi\n".repeat(26_214);
    let first: Vec<String> = (1..=20).map(|n| n.to_string()).collect();
    for (_, notes) in each_store() {
        notes
            .execute(&create("/memories/a.md", &lines))
            .expect("a note of 26,214 lines");
        let missing = answer(&notes, &replace("/memories/a.md", &huge, "y"));
        assert_eq!(
            missing,
            format!(
                "error: No replacement was performed, old_str `{}…` (1,000,000 characters) did not appear verbatim in /memories/a.md.",
                "x".repeat(200)
            )
        );
        let many = answer(&notes, &replace("/memories/a.md", "abc", "y"));
        assert_eq!(
            many,
            format!(
                "error: No replacement was performed. Multiple occurrences of old_str `abc` in lines: {}, … and 26,194 more. Please ensure it is unique",
                first.join(", ")
            )
        );
        let both = answer(&notes, &replace("/memories/a.md", &lines[..1_000], "y"));
        assert!(
            both.starts_with("error: No replacement was performed. Multiple occurrences of old_str `abcdefghi\nabc")
                && both.contains("…` (1,000 characters) in lines: 1, 101, 201, ")
                && both.ends_with(", 1901, … and 242 more. Please ensure it is unique"),
            "{both}"
        );
        for error in [missing, many, both] {
            assert!(error.chars().count() < 500, "{}", error.chars().count());
        }
    }
}
