//! Trailblaze's own trails, `tests/data/trailblaze-corpus/` (see its README): every trail
//! file parses and its canonical form (`recording fmt`) reads back to the same trail, and
//! every trail snippet Trailblaze's Kotlin tests parse is accepted or refused as Trailblaze
//! accepts or refuses it.

use std::path::{Path, PathBuf};

use agent_memory_recording::{Error, ReplayOptions, Replayer, Seeds, Trail};
use serde_yaml::Value as Yaml;

pub(crate) fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/trailblaze-corpus")
}

/// Every `*.yaml` file under `dir`, sorted.
pub(crate) fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}"));
        for entry in entries {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The text of a corpus file. A git symbolic link is stored as a file holding its target's
/// relative path; it is followed, as a checkout would.
pub(crate) fn text_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path:?}: {e}"));
    let trimmed = text.trim();
    if !trimmed.contains('\n') && trimmed.ends_with(".yaml") && trimmed.starts_with("..") {
        let target = path.parent().map(|p| p.join(trimmed));
        if let Some(target) = target.filter(|t| t.is_file()) {
            return text_of(&target);
        }
    }
    text
}

/// The document with Trailblaze's defaults written out the way the canonical form writes
/// them: `recordable: true` dropped, `recording: {}` and `recording: null` dropped (both
/// declare nothing). A legacy trailhead's bare tool name stays as the author wrote it.
fn normalized(value: &Yaml) -> Yaml {
    match value {
        Yaml::Mapping(map) => {
            let mut out = serde_yaml::Mapping::new();
            for (k, v) in map {
                let key = k.as_str().unwrap_or_default();
                let empty = matches!(v, Yaml::Null) || v.as_mapping().is_some_and(|m| m.is_empty());
                if (key == "recordable" && v.as_bool() == Some(true))
                    || (key == "recording" && empty)
                {
                    continue;
                }
                out.insert(k.clone(), normalized(v));
            }
            Yaml::Mapping(out)
        }
        Yaml::Sequence(items) => Yaml::Sequence(items.iter().map(normalized).collect()),
        other => other.clone(),
    }
}

/// Parses `text`, writes it in canonical form, and checks that the form reads back to the
/// same trail, is a fixed point, and is the same YAML document as the input (defaults aside).
fn check_round_trip(name: &str, text: &str) -> Result<(), Error> {
    let trail = Trail::from_yaml_str(text, name)?;
    let formatted = trail
        .to_yaml_string()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = Trail::from_yaml_str(&formatted, name)
        .unwrap_or_else(|e| panic!("{name}: canonical form does not read back: {e}\n{formatted}"));
    assert_eq!(
        again, trail,
        "{name}: canonical form reads back differently"
    );
    let twice = again.to_yaml_string().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        twice, formatted,
        "{name}: canonical form is not a fixed point"
    );
    let before: Yaml = serde_yaml::from_str(text.trim_start_matches('\u{feff}'))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let after: Yaml = serde_yaml::from_str(&formatted).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        normalized(&before),
        normalized(&after),
        "{name}: canonical form is another document:\n{formatted}"
    );
    Ok(())
}

/// A refusal must be a parse error naming the file, a line and a column.
fn check_refusal(name: &str, error: &Error) {
    match error {
        Error::Parse {
            file, line, column, ..
        } => {
            assert_eq!(file, name);
            assert!(*line > 0 && *column > 0, "{name}: no position in {error}");
        }
        other => panic!("{name}: refused without a position: {other}"),
    }
}

#[test]
fn every_trail_file_parses_and_its_canonical_form_is_the_same_document() {
    // The one file on the legacy branch in an interim syntax (device classifiers at step
    // level) that current Trailblaze refuses too.
    let interim = "legacy-upstream-2026.05.31/trails/ios-contacts/test-back-navigation/trail.yaml";
    let mut counts = Vec::new();
    for set in ["head-a022ca69", "legacy-upstream-2026.05.31"] {
        let files = yaml_files(&corpus().join(set));
        counts.push(files.len());
        for path in files {
            let name = path
                .strip_prefix(corpus())
                .unwrap_or(&path)
                .display()
                .to_string();
            let result = check_round_trip(&name, &text_of(&path));
            match (name == interim, result) {
                (false, Ok(())) => {}
                (false, Err(e)) => panic!("{e}"),
                (true, Ok(())) => panic!("{name} uses a syntax Trailblaze refuses"),
                (true, Err(e)) => {
                    check_refusal(&name, &e);
                    assert!(
                        e.to_string().contains("unknown step key `ios-iphone`"),
                        "{e}"
                    );
                }
            }
        }
    }
    assert_eq!(counts, [119, 247], "trail files found in the corpus");
}

#[derive(serde::Deserialize)]
struct Snippet {
    file: String,
    test: String,
    kotlin_test_expects_failure: bool,
}

/// How Trailblaze treats a snippet where the manifest's flag (what the Kotlin test asserts)
/// is not the whole story.
fn trailblaze_refuses(snippet: &Snippet) -> bool {
    match snippet.file.as_str() {
        // The test asserts a directory scan survives the failure; its comment says "the fuller
        // decode throws" (`trail:` is a scalar).
        "TrailUnifiedScanTest_L108.yaml" => true,
        _ => snippet.kotlin_test_expects_failure,
    }
}

/// Snippets Trailblaze refuses for a reason outside the document grammar this crate reads.
fn refused_outside_the_grammar(file: &str, trail: &Trail) -> Option<&'static str> {
    match file {
        // Trailblaze refuses to lower a trail with recordings for no device (every recording
        // would be dropped); so does a replay here.
        "TrailheadTrailItemTest_L358.yaml" | "UnifiedTrailRuntimeIntegrationTest_L404.yaml" => {
            let replay = Replayer::new(trail, "", &Seeds::new(), ReplayOptions::default());
            assert!(
                matches!(replay, Err(Error::NoDevice)),
                "{file}: a replay for no device must be refused"
            );
            Some("lowered for no device")
        }
        // Strict decoding refuses an unknown argument of a tool whose schema Trailblaze knows
        // (`assertVisibleBySelector`); tools are opaque here, their parameters kept as written.
        "TrailYamlValidationTest_L93.yaml" => Some("tool schemas are Trailblaze's"),
        _ => None,
    }
}

#[test]
fn kotlin_test_snippets_are_accepted_and_refused_as_trailblaze_does() {
    let dir = corpus().join("inline-kotlin-tests-a022ca69");
    let manifest =
        std::fs::read_to_string(dir.join("MANIFEST.json")).unwrap_or_else(|e| panic!("{e}"));
    let snippets: Vec<Snippet> = serde_json::from_str(&manifest).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(snippets.len(), 224);
    let (mut accepted, mut refused, mut outside) = (0, 0, 0);
    for snippet in &snippets {
        let name = &snippet.file;
        let text = text_of(&dir.join(name));
        let result = check_round_trip(name, &text);
        let refuses = trailblaze_refuses(snippet);
        match (refuses, result) {
            (false, Ok(())) => accepted += 1,
            (false, Err(e)) => panic!("{name} ({}): Trailblaze accepts it: {e}", snippet.test),
            (true, Err(e)) => {
                check_refusal(name, &e);
                refused += 1;
            }
            (true, Ok(())) => {
                let trail = Trail::from_yaml_str(&text, name).unwrap_or_else(|e| panic!("{e}"));
                match refused_outside_the_grammar(name, &trail) {
                    Some(_) => outside += 1,
                    None => panic!("{name} ({}): Trailblaze refuses it", snippet.test),
                }
            }
        }
    }
    assert_eq!((accepted, refused, outside), (207, 14, 3));
}
