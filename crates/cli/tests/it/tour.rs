//! The README's command-line tour, run as written: every `agent-memory` line of the tour's
//! shell block, in order, on one database, must succeed. The README is the test's input, so
//! the tour cannot go stale.

use std::path::Path;

use crate::Sandbox;

/// The tour: the first ```` ```sh ```` block after the `## The command line` heading, one
/// command per line once `\` continuations are joined, comments and blank lines dropped.
fn tour_commands(readme: &str) -> Vec<String> {
    let section = readme
        .split("\n## The command line")
        .nth(1)
        .expect("README has a `## The command line` section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|rest| rest.split("\n```").next())
        .expect("the section has a ```sh block");
    let joined = block.replace("\\\n", " ");
    joined
        .lines()
        .map(strip_comment)
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `line` without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    for (index, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return &line[..index],
            _ => {}
        }
        previous = c;
    }
    line
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

#[test]
fn the_readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).expect("README");
    let commands = tour_commands(&readme);
    assert!(
        commands.len() >= 20,
        "the tour lost its commands: {commands:#?}"
    );
    let sandbox = Sandbox::new();
    copy_dir(&root.join("tests/data/tour"), sandbox.path());
    copy_dir(
        &root.join("../browser-memory/tests/it/fixtures/bad-examples/agent-memory"),
        &sandbox.path().join(".agent-memory"),
    );
    for command in &commands {
        let words = shell_words::split(command).unwrap_or_else(|e| panic!("{command}: {e}"));
        assert_eq!(
            words[0], "agent-memory",
            "a tour line that is not a command: {command}"
        );
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let run = sandbox.run(&args, &[("AGENT_MEMORY_NOW", "2026-01-01T00:00:00Z")]);
        assert_eq!(run.code, Some(0), "README tour: {command}\n{run}");
    }
}

#[test]
fn comments_and_continuations_are_read_as_a_shell_would() {
    let readme = "x\n## The command line\n\n```sh\nagent-memory a \\\n  --b c   # note\n\n# heading\nagent-memory d '# kept' \"x # y\"\n```\n";
    let commands = tour_commands(readme);
    let words: Vec<Vec<String>> = commands
        .iter()
        .map(|c| shell_words::split(c).expect("split"))
        .collect();
    assert_eq!(
        words,
        vec![
            vec!["agent-memory", "a", "--b", "c"],
            vec!["agent-memory", "d", "# kept", "x # y"],
        ]
    );
}
