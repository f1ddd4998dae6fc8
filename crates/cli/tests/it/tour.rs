//! The README's command-line tour, run as written: every `agent-memory` line of the tour's
//! shell block, in order, on one database, must succeed. The README is the test's input, so
//! the tour cannot go stale.

use std::path::Path;

use crate::Sandbox;

/// The tour: the first ```` ```sh ```` block after the `## The command line` heading, one
/// command per line once `\` continuations are joined, comments and blank lines dropped.
fn tour_commands(readme: &str) -> Vec<String> {
    section_commands(readme, "The command line")
}

/// The lines of the first ```` ```sh ```` block after the `## <heading>` heading.
pub(crate) fn section_commands(readme: &str, heading: &str) -> Vec<String> {
    let section = readme
        .split(&format!("\n## {heading}"))
        .nth(1)
        .unwrap_or_else(|| panic!("README has a `## {heading}` section"));
    block_commands(section)
}

/// [`section_commands`] of a `### heading` subsection.
pub(crate) fn subsection_commands(readme: &str, heading: &str) -> Vec<String> {
    let section = readme
        .split(&format!("\n### {heading}"))
        .nth(1)
        .unwrap_or_else(|| panic!("README has a `### {heading}` section"));
    block_commands(section)
}

/// The commands of the first ```` ```sh ```` block of `section`.
fn block_commands(section: &str) -> Vec<String> {
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

/// The README's tour and a sandbox holding its input files.
fn tour() -> (Vec<String>, Sandbox) {
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
    (commands, sandbox)
}

/// The arguments of a tour line (without `agent-memory`).
pub(crate) fn words(command: &str) -> Vec<String> {
    let words = shell_words::split(command).unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(
        words[0], "agent-memory",
        "a tour line that is not a command: {command}"
    );
    words[1..].to_vec()
}

#[test]
fn the_readme_tour_runs_as_written() {
    let (commands, sandbox) = tour();
    for command in &commands {
        let words = words(command);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let run = sandbox.run(&args, &[("AGENT_MEMORY_NOW", "2026-01-01T00:00:00Z")]);
        assert_eq!(run.code, Some(0), "README tour: {command}\n{run}");
    }
}

/// Every line of the tour that works on the default database also works on PostgreSQL
/// (`--db postgres://...`), printing the same: the two backends keep one contract. The lines
/// with their own `--db` (the SQLite file of the guided tour) are left as they are.
#[test]
fn the_readme_tour_prints_the_same_on_postgresql() {
    let Some(url) = crate::postgres_url("tour") else {
        return;
    };
    let (commands, sqlite) = tour();
    let (_, postgres) = tour();
    for command in &commands {
        let words = words(command);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        let now = [("AGENT_MEMORY_NOW", "2026-01-01T00:00:00Z")];
        let on_file = sqlite.run(&args, &now);
        let mut on_server_args = args.clone();
        if !args.contains(&"--db") {
            on_server_args.splice(0..0, ["--db", url.as_str()]);
        }
        let on_server = postgres.run(&on_server_args, &now);
        assert_eq!(
            on_server.code,
            Some(0),
            "on PostgreSQL: {command}\n{on_server}"
        );
        // Ids end in six characters drawn at random, which differ between any two runs;
        // nothing else may.
        assert_eq!(
            mask_random_ids(&on_server.stdout),
            mask_random_ids(&on_file.stdout),
            "{command} prints differently on PostgreSQL"
        );
    }
}

/// The README's example of memory shared by many machines, run as written against the test
/// server: its `export AGENT_MEMORY_DB=...` keeps its schema but points at the test server,
/// and `agent-memory mcp` serves until its standard input closes.
#[test]
fn the_readme_shared_memory_example_runs() {
    let Some(url) = crate::postgres_url("shared") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).expect("README");
    let lines = section_commands(&readme, "Memory shared by many machines");
    let sandbox = Sandbox::new();
    let server = url
        .split_once("?schema=")
        .map_or(url.as_str(), |(base, _)| base);
    let server = server
        .split_once("&schema=")
        .map_or(server, |(base, _)| base);
    let mut db = None;
    let mut ran = 0;
    for line in &lines {
        if let Some(value) = line.strip_prefix("export AGENT_MEMORY_DB=") {
            let value = value.trim_matches('\'');
            let schema = value
                .split_once("schema=")
                .map(|(_, schema)| schema.to_owned())
                .expect("the example names its schema");
            let join = if server.contains('?') { '&' } else { '?' };
            db = Some(format!(
                "{server}{join}schema={schema}_{}",
                std::process::id()
            ));
            continue;
        }
        let words = words(line);
        let db = db
            .as_deref()
            .expect("the example exports AGENT_MEMORY_DB first");
        let mut args = vec!["--db", db];
        args.extend(words.iter().map(String::as_str));
        // `mcp` serves an MCP client: one session that lists what is stored, then EOF.
        let session = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"readme","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_list","arguments":{}}}"#,
        ];
        let stdin = if words[0] == "mcp" {
            session.join("\n") + "\n"
        } else {
            String::new()
        };
        let run = sandbox.run_with_stdin(&args, &stdin);
        assert_eq!(run.code, Some(0), "README example: {line}\n{run}");
        if words[0] == "mcp" {
            // The episode recorded above is served to the MCP client from the same memory.
            assert!(
                run.stdout.contains(r#""isError":false"#) && run.stdout.contains(r#"\"team\""#),
                "README example: {line}\n{run}"
            );
        }
        ran += 1;
    }
    assert!(ran >= 2, "the example lost its commands: {lines:#?}");
}

/// `text` with the random part of every id (`run_1795321223969_owvog1`: a name, epoch
/// milliseconds, six random characters) replaced by `??????`.
fn mask_random_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let parts: Vec<&str> = word.split('_').collect();
        let random = parts.len() >= 3
            && parts[parts.len() - 2].len() == 13
            && parts[parts.len() - 2].bytes().all(|b| b.is_ascii_digit())
            && parts[parts.len() - 1].len() == 6
            && parts[parts.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if random {
            out.push_str(&word[..word.len() - 6]);
            out.push_str("??????");
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[test]
fn random_ids_are_masked_and_nothing_else() {
    assert_eq!(
        mask_random_ids("run run_1795321223969_owvog1, x_1_abcdef, traj_1767225600000_3ch336."),
        "run run_1795321223969_??????, x_1_abcdef, traj_1767225600000_??????."
    );
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
