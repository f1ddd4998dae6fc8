//! `recording fmt` writes trails that YAML 1.1 readers read back as written, checked with
//! PyYAML (the YAML 1.1 reader most tools around Trailblaze meet) on generated strings that
//! look like numbers, times, dates and booleans, and on every trail of the Trailblaze corpus.
//!
//! PyYAML runs in a `python3` child process. Without Python or PyYAML these tests say so and
//! return on a developer's machine; under `CI=true` they fail.

use std::io::Write;
use std::process::{Command, Stdio};

use agent_memory_core::SplitMix64;
use agent_memory_recording::Trail;
use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

use crate::corpus::{corpus, text_of, yaml_files};

/// Loads each text with PyYAML's `safe_load` and returns each document as JSON in which
/// every scalar is `[type name, str(value)]` and every mapping a list of `[key, value]`
/// pairs, so a key or value PyYAML read as another type shows. `None` when Python or PyYAML
/// is missing outside CI.
fn pyyaml_load(texts: &[String]) -> Option<Vec<Json>> {
    const SCRIPT: &str = r#"
import json, sys
import yaml
def typed(v):
    if isinstance(v, dict):
        return {"map": [[typed(k), typed(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return {"seq": [typed(x) for x in v]}
    return [type(v).__name__, str(v)]
texts = json.load(sys.stdin)
json.dump([typed(yaml.safe_load(t)) for t in texts], sys.stdout)
"#;
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let probe = Command::new("python3").args(["-c", "import yaml"]).output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        assert!(
            !ci,
            "CI=true needs python3 with PyYAML for the YAML 1.1 checks: {probe:?}"
        );
        eprintln!("python3 with PyYAML is not available; the YAML 1.1 reading is not checked");
        return None;
    }
    let mut child = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 starts");
    let input = serde_json::to_vec(texts).expect("texts as JSON");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&input)
        .expect("write texts");
    let output = child.wait_with_output().expect("python3 output");
    assert!(output.status.success(), "PyYAML failed to load a text");
    Some(serde_json::from_slice(&output.stdout).expect("PyYAML's documents as JSON"))
}

/// A YAML document (as `serde_yaml` reads it) in the shape [`pyyaml_load`] gives.
fn typed(value: &Yaml) -> Json {
    match value {
        Yaml::Mapping(map) => Json::Object(
            [(
                "map".to_owned(),
                Json::Array(
                    map.iter()
                        .map(|(k, v)| Json::Array(vec![typed(k), typed(v)]))
                        .collect(),
                ),
            )]
            .into_iter()
            .collect(),
        ),
        Yaml::Sequence(items) => Json::Object(
            [(
                "seq".to_owned(),
                Json::Array(items.iter().map(typed).collect()),
            )]
            .into_iter()
            .collect(),
        ),
        Yaml::String(s) => serde_json::json!(["str", s]),
        Yaml::Bool(b) => serde_json::json!(["bool", if *b { "True" } else { "False" }]),
        Yaml::Null => serde_json::json!(["NoneType", "None"]),
        Yaml::Number(n) if n.is_f64() => serde_json::json!(["float", n.to_string()]),
        Yaml::Number(n) => serde_json::json!(["int", n.to_string()]),
        Yaml::Tagged(tagged) => typed(&tagged.value),
    }
}

/// Strings that YAML 1.1 readers are apt to read as something else: digits with `:`, `_`,
/// `.`, `-`, signs, exponents, the booleans of YAML 1.1, and words around them.
fn tricky_strings(count: usize) -> Vec<String> {
    const WORDS: &[&str] = &[
        "y", "Y", "n", "N", "yes", "No", "ON", "off", "Off", "true", "null", "~", "=", "<<",
        ".inf", ".NaN", "0x", "0b", "0o", "e", "E", "T", "Z", " ", "a", "pm",
    ];
    const PIECES: &[&str] = &[
        "0", "1", "7", "8", "59", "60", ":", "_", ".", "-", "+", ":30",
    ];
    let mut rng = SplitMix64::new(1_011);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut text = String::new();
        let parts = 1 + rng.below(5);
        for _ in 0..parts {
            if rng.below(4) == 0 {
                text.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            } else {
                text.push_str(PIECES[rng.below(PIECES.len() as u64) as usize]);
            }
        }
        let text = text.trim().to_owned();
        if !text.is_empty() && !text.contains(": ") && !text.ends_with(':') {
            out.push(text);
        }
    }
    out.extend(
        [
            "8:00",
            "7:30",
            "1:30:00.5",
            "2001-12-14",
            "2001-12-14 21:59:43.10 -5",
            "1_000",
        ]
        .map(str::to_owned),
    );
    out
}

#[test]
fn every_string_fmt_writes_reads_back_as_the_same_string_in_yaml_1_1() {
    let strings = tricky_strings(3_000);
    // One tool whose parameters are each string as a key and as a value.
    let mut params = serde_yaml::Mapping::new();
    for (i, text) in strings.iter().enumerate() {
        params.insert(
            Yaml::String(format!("value{i}")),
            Yaml::String(text.clone()),
        );
        params.insert(Yaml::String(text.clone()), Yaml::String(format!("key{i}")));
    }
    let mut call = serde_yaml::Mapping::new();
    call.insert("customTool".into(), Yaml::Mapping(params.clone()));
    let mut item = serde_yaml::Mapping::new();
    item.insert("tools".into(), Yaml::Sequence(vec![Yaml::Mapping(call)]));
    let document = Yaml::Sequence(vec![Yaml::Mapping(item)]);
    let written = serde_yaml::to_string(&document).expect("document");
    let trail = Trail::from_yaml_str(&written, "tricky.trail.yaml").expect("a trail");
    let formatted = trail.to_yaml_string().expect("canonical form");

    // YAML 1.2 (serde_yaml) reads back the same document.
    let again: Yaml = serde_yaml::from_str(&formatted).expect("YAML 1.2 reads it");
    assert_eq!(again, document);
    // And so does YAML 1.1.
    let Some(loaded) = pyyaml_load(std::slice::from_ref(&formatted)) else {
        return;
    };
    let expected = typed(&document);
    if loaded[0] != expected {
        let read = &loaded[0]["seq"][0]["map"][0][1]["seq"][0]["map"][0][1]["map"];
        let wrong: Vec<&Json> = read
            .as_array()
            .into_iter()
            .flatten()
            .filter(|pair| pair[0][0] != "str" || pair[1][0] != "str")
            .take(5)
            .collect();
        panic!("PyYAML reads other types from fmt's output: {wrong:?}");
    }
}

#[test]
fn the_corpus_in_canonical_form_reads_the_same_in_yaml_1_1_and_1_2() {
    let files = yaml_files(&corpus());
    let mut formatted = Vec::new();
    for path in &files {
        let text = text_of(path);
        // Snippets that Trailblaze refuses are refused here too (the corpus test checks which).
        let Ok(trail) = Trail::from_yaml_str(&text, &path.display().to_string()) else {
            continue;
        };
        formatted.push((path, trail.to_yaml_string().expect("canonical form")));
    }
    assert!(
        formatted.len() > 50,
        "the corpus has {} trails",
        formatted.len()
    );
    let texts: Vec<String> = formatted.iter().map(|(_, t)| t.clone()).collect();
    let Some(loaded) = pyyaml_load(&texts) else {
        return;
    };
    for ((path, text), yaml_1_1) in formatted.iter().zip(&loaded) {
        let yaml_1_2: Yaml = serde_yaml::from_str(text).expect("YAML 1.2 reads it");
        assert_eq!(
            yaml_1_1,
            &typed(&yaml_1_2),
            "{}: YAML 1.1 reads the canonical form differently:\n{text}",
            path.display()
        );
    }
    eprintln!(
        "{} corpus trails in canonical form read the same in YAML 1.1 and 1.2",
        formatted.len()
    );
}
