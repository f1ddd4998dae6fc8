//! The write screen's false-positive rate on the real memory the workspace keeps as test
//! data: every string of at least 8 characters in each committed corpus (trails, tool logs,
//! a browser agent's memory files, a coding agent's transcripts, popoto's reference output)
//! is screened, and under 1% of a corpus's strings may be flagged.
//!
//! JSON (also several documents in one file, and JSON lines) and YAML are read as values and
//! each string value is screened; a file that does not parse, and plain text, is screened a
//! line at a time. A corpus's `README.md` describes the corpus and is not part of it. A
//! browser agent's file is screened with the host of its first `http(s)` URL as the origin
//! (its pages are on that host); the other corpora have no page origin.
//!
//! The run prints a table per corpus (strings, flagged, rate, kinds) and every flagged
//! string, so a reader sees what the screen finds in ordinary memory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use agent_memory_core::Source;
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::screen::screen;
use serde::Deserialize as _;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

/// The shortest string screened, in characters.
const MIN_CHARS: usize = 8;

/// The highest share of a corpus's strings that may be flagged.
const MAX_RATE: f64 = 0.01;

/// One committed corpus: its name, its folder under `crates/`, and whether its files are a
/// browser agent's (whose first URL gives the page origin).
struct Corpus {
    name: &'static str,
    folder: &'static str,
    pages: bool,
}

const CORPORA: &[Corpus] = &[
    Corpus {
        name: "trailblaze trails",
        folder: "recording/tests/data/trailblaze-corpus",
        pages: false,
    },
    Corpus {
        name: "trailblaze logs",
        folder: "recording/tests/data/trailblaze-logs",
        pages: false,
    },
    Corpus {
        name: "browser-agent-driver memory",
        folder: "browser-memory/tests/it/fixtures/bad-examples",
        pages: true,
    },
    Corpus {
        name: "keen code transcripts",
        folder: "turn-memory/tests/data/keen",
        pages: false,
    },
    Corpus {
        name: "popoto reference output",
        folder: "trajectory/tests/it/data",
        pages: false,
    },
];

/// What one corpus gave: its strings, the flagged ones with their kinds, and a count per kind.
#[derive(Default)]
struct Tally {
    strings: usize,
    flagged: Vec<(String, String)>,
    kinds: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn rate(&self) -> f64 {
        self.flagged.len() as f64 / self.strings.max(1) as f64
    }
}

fn files_under(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot list {}", dir.display());
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files_under(&path, files);
        } else if path.file_name().is_some_and(|n| n != "README.md") {
            files.push(path);
        }
    }
}

fn json_strings(value: &Json, out: &mut Vec<String>) {
    match value {
        Json::String(s) => out.push(s.clone()),
        Json::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        Json::Object(map) => map.values().for_each(|v| json_strings(v, out)),
        _ => {}
    }
}

fn yaml_strings(value: &Yaml, out: &mut Vec<String>) {
    match value {
        Yaml::String(s) => out.push(s.clone()),
        Yaml::Sequence(items) => items.iter().for_each(|v| yaml_strings(v, out)),
        Yaml::Mapping(map) => map.values().for_each(|v| yaml_strings(v, out)),
        Yaml::Tagged(tagged) => yaml_strings(&tagged.value, out),
        _ => {}
    }
}

/// The string values of `text` read as JSON documents (one after another, as JSON lines
/// are), or `None` when it does not parse.
fn parse_json(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for value in serde_json::Deserializer::from_str(text).into_iter::<Json>() {
        json_strings(&value.ok()?, &mut out);
    }
    Some(out)
}

/// The string values of `text` read as YAML documents, or `None` when it does not parse.
fn parse_yaml(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        yaml_strings(&Yaml::deserialize(document).ok()?, &mut out);
    }
    Some(out)
}

/// The strings of the file at `path`: its values when it parses as what its extension says
/// (JSON lines a line at a time), else its lines.
fn strings_of(path: &Path, text: &str) -> Vec<String> {
    let lines = |text: &str| text.lines().map(str::to_owned).collect::<Vec<_>>();
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => parse_json(text).unwrap_or_else(|| lines(text)),
        Some("jsonl") => text
            .lines()
            .flat_map(|line| parse_json(line).unwrap_or_else(|| vec![line.to_owned()]))
            .collect(),
        Some("yaml" | "yml") => parse_yaml(text).unwrap_or_else(|| lines(text)),
        _ => lines(text),
    }
}

/// The host of the first `http://` or `https://` URL in `text`.
fn first_url_host(text: &str) -> Option<String> {
    let at = text.find("https://").or_else(|| text.find("http://"))?;
    let url: String = text[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | ')' | '<' | '>'))
        .collect();
    Source::Page(url).host().map(|h| h.into_owned())
}

fn tally(corpus: &Corpus, root: &Path) -> Tally {
    let mut files = Vec::new();
    files_under(&root.join(corpus.folder), &mut files);
    let mut tally = Tally::default();
    for path in files {
        let Ok(text) = std::fs::read_to_string(&path) else {
            panic!("cannot read {}", path.display());
        };
        let origin = if corpus.pages {
            first_url_host(&text)
        } else {
            None
        };
        for string in strings_of(&path, &text) {
            if string.chars().count() < MIN_CHARS {
                continue;
            }
            tally.strings += 1;
            let findings = screen(&string, origin.as_deref());
            if findings.is_empty() {
                continue;
            }
            for finding in &findings {
                *tally.kinds.entry(finding.kind.as_str()).or_default() += 1;
            }
            let file = path.strip_prefix(root).unwrap_or(&path).display();
            let reasons: Vec<String> = findings.iter().map(ToString::to_string).collect();
            tally.flagged.push((
                format!("{file}: {}", Excerpt::quoted(&string).within(80)),
                reasons.join("; "),
            ));
        }
    }
    tally
}

#[test]
fn the_screen_flags_under_one_percent_of_real_memory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut table = format!(
        "{:<30} {:>8} {:>8} {:>7}  kinds\n",
        "corpus", "strings", "flagged", "rate"
    );
    let mut over = Vec::new();
    for corpus in CORPORA {
        let tally = tally(corpus, &root);
        let kinds: Vec<String> = tally
            .kinds
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let _ = writeln!(
            table,
            "{:<30} {:>8} {:>8} {:>6.2}%  {}",
            corpus.name,
            tally.strings,
            tally.flagged.len(),
            tally.rate() * 100.0,
            kinds.join(", ")
        );
        for (string, reasons) in &tally.flagged {
            let _ = writeln!(table, "    {string}\n        {reasons}");
        }
        assert!(tally.strings > 0, "no strings in {}", corpus.folder);
        if tally.rate() >= MAX_RATE {
            over.push(corpus.name);
        }
    }
    eprintln!("{table}");
    assert!(over.is_empty(), "flagged 1% or more of {over:?}:\n{table}");
}
