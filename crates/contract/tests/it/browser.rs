//! `browser_import`, `browser_export`, `browser_prune` and `browser_hints` from JSON: the
//! reference `.agent-memory/` sample of browser-agent-driver read, written back, pruned and
//! analysed, and every kind of refusal.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::calls::{NOW, answer, confined_to, env, env_at, kind, store};

/// browser-agent-driver's sample directory.
fn sample() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../browser-memory/tests/it/fixtures/bad-examples/agent-memory")
}

/// The sample's path as an input names it.
fn sample_dir() -> String {
    sample().display().to_string()
}

#[test]
fn an_import_reads_the_sample_once_and_refuses_what_holds_no_memory() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    std::fs::create_dir(dir.join("empty")).expect("mkdir");
    std::fs::write(dir.join("file.json"), "{}").expect("write");
    std::fs::create_dir(dir.join("bad")).expect("mkdir");
    std::fs::write(dir.join("bad/hints.json"), "{\"hints\": 3").expect("write");
    let at = |name: &str| dir.join(name).display().to_string();
    let mut answers = Map::new();
    for (case, input) in [
        ("first", json!({"dir": sample_dir()})),
        ("again", json!({"dir": sample_dir(), "scope": "shared"})),
        ("missing", json!({"dir": at("absent")})),
        ("a file", json!({"dir": at("file.json")})),
        ("empty", json!({"dir": at("empty")})),
        ("malformed", json!({"dir": at("bad")})),
        ("bad scope", json!({"dir": sample_dir(), "scope": ""})),
        ("unknown field", json!({"dir": sample_dir(), "folder": "x"})),
    ] {
        answers.insert(case.to_owned(), answer(&env, "browser_import", input, dir));
    }
    // In the order of the cases (the map sorts them).
    let kinds: Vec<&str> = [
        "first",
        "again",
        "missing",
        "a file",
        "empty",
        "malformed",
        "bad scope",
        "unknown field",
    ]
    .iter()
    .map(|case| kind(&answers[*case]))
    .collect();
    assert_eq!(
        kinds,
        [
            "none",
            "none",
            "not_found",
            "invalid_input",
            "invalid_input",
            "invalid_input",
            "invalid_input",
            "invalid_input"
        ]
    );
    assert_eq!(answers["again"]["unchanged"], 6);
    insta::assert_json_snapshot!(answers);
}

/// A server's clients import only a folder inside the allowed ones, and export nowhere.
#[test]
fn a_servers_clients_import_inside_its_folders_and_export_nothing() {
    let store = store();
    let allowed = tempfile::tempdir().expect("a folder");
    let outside = tempfile::tempdir().expect("a folder");
    copy_dir(&sample(), &allowed.path().join("memory"));
    copy_dir(&sample(), &outside.path().join("memory"));
    let env = env_at(&store, NOW, confined_to(allowed.path()));
    let inside = allowed.path().join("memory").display().to_string();
    let imported = answer(
        &env,
        "browser_import",
        json!({"dir": inside}),
        allowed.path(),
    );
    assert_eq!(imported["trajectories"], 1, "{imported}");
    let elsewhere = outside.path().join("memory").display().to_string();
    let refused = answer(
        &env,
        "browser_import",
        json!({"dir": elsewhere}),
        outside.path(),
    );
    let escaping = format!("{}/../{}", allowed.path().display(), {
        let name = outside.path().file_name().expect("a name");
        format!("{}/memory", name.to_string_lossy())
    });
    let dotted = answer(
        &env,
        "browser_import",
        json!({"dir": escaping}),
        allowed.path(),
    );
    // The outside folder's name is a fresh temporary one: shown as `[outside]`.
    let outside_name = outside
        .path()
        .file_name()
        .expect("a name")
        .to_string_lossy();
    let dotted: Value =
        serde_json::from_str(&dotted.to_string().replace(&*outside_name, "[outside]"))
            .expect("still JSON");
    let export = allowed.path().join("out").display().to_string();
    let written = answer(
        &env,
        "browser_export",
        json!({"dir": export}),
        allowed.path(),
    );
    assert!(!allowed.path().join("out").exists(), "nothing written");
    insta::assert_json_snapshot!(json!({
        "outside": refused,
        "outside through ..": dotted,
        "export": written,
    }));
}

#[test]
fn an_export_writes_the_reference_files() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    answer(&env, "browser_import", json!({"dir": sample_dir()}), dir);
    std::fs::write(dir.join("a-file"), "").expect("write");
    let out = dir.join("out").display().to_string();
    let mut answers = Map::new();
    for (case, input) in [
        ("exported", json!({"dir": out})),
        ("another scope", json!({"dir": out, "scope": "team-b"})),
        (
            "into a file",
            json!({"dir": dir.join("a-file/out").display().to_string()}),
        ),
    ] {
        answers.insert(case.to_owned(), answer(&env, "browser_export", input, dir));
    }
    for file in [
        "hints.json",
        "traj_1795321223952_eodewj.json",
        "agent-runs/proj_123_1773572400000.json",
    ] {
        assert_eq!(
            std::fs::read_to_string(dir.join("out").join(file)).expect("exported"),
            std::fs::read_to_string(sample().join(file)).expect("reference"),
            "{file}"
        );
    }
    assert_eq!(kind(&answers["into a file"]), "io");
    insta::assert_json_snapshot!(answers);
}

#[test]
fn a_prune_removes_what_the_ttl_expired() {
    let store = store();
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    answer(
        &env(&store),
        "browser_import",
        json!({"dir": sample_dir()}),
        dir,
    );
    let later = NOW + 31 * 86_400_000;
    let mut answers = Map::new();
    for (case, now, input) in [
        ("fresh", NOW, json!({})),
        (
            "a month later, a longer ttl",
            later,
            json!({"ttl_days": 60}),
        ),
        ("a month later", later, json!({"scope": "shared"})),
        ("again", later, json!({})),
        ("negative ttl", NOW, json!({"ttl_days": -1})),
        ("bad scope", NOW, json!({"scope": "a\nb"})),
    ] {
        let env = env_at(&store, now, agent_memory_contract::files::FileAccess::Any);
        answers.insert(case.to_owned(), answer(&env, "browser_prune", input, dir));
    }
    let removed: Vec<Value> = [
        "fresh",
        "a month later, a longer ttl",
        "a month later",
        "again",
    ]
    .iter()
    .map(|case| answers[*case]["removed"].clone())
    .collect();
    assert_eq!(removed, [json!(0), json!(0), json!(1), json!(0)]);
    assert_eq!(kind(&answers["negative ttl"]), "invalid_input");
    assert_eq!(kind(&answers["bad scope"]), "invalid_input");
    insta::assert_json_snapshot!(answers);
}

#[test]
fn hints_are_the_stored_ones_until_refreshed() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    answer(&env, "browser_import", json!({"dir": sample_dir()}), dir);
    let mut answers = Map::new();
    for (case, input) in [
        ("stored", json!({})),
        ("none stored", json!({"scope": "team-b"})),
        ("refreshed", json!({"refresh": true})),
        ("after the refresh", json!({})),
        ("refresh takes a boolean", json!({"refresh": "yes"})),
    ] {
        answers.insert(case.to_owned(), answer(&env, "browser_hints", input, dir));
    }
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(sample().join("hints.json")).expect("read"))
            .expect("json");
    assert_eq!(answers["stored"]["hints"], reference["hints"]);
    assert_eq!(answers["refreshed"]["hints"], "", "nothing stood out");
    assert_eq!(answers["after the refresh"], answers["refreshed"]);
    insta::assert_json_snapshot!(answers);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let path = entry.expect("entry").path();
        let target = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy");
        }
    }
}

/// browser-agent-driver's `TrajectoryStore.save` writes one trajectory file and nothing else;
/// `browser_save_trajectory` stores the trajectory alone, so the site's session history and
/// facts (its other classes' business) stay as they were.
#[test]
fn saving_a_trajectory_leaves_the_sites_sessions_and_facts_alone() {
    let store = store();
    let env = env(&store);
    let temp = tempfile::tempdir().expect("a folder");
    let dir = temp.path();
    let turn = |n: u64, action: Value| {
        json!({"turn": n, "action": action, "durationMs": 250, "verified": true,
               "state": {"url": "https://shop.test/p", "title": "Shop", "snapshot": format!("page {n}")}})
    };
    let saved = answer(
        &env,
        "browser_save_trajectory",
        json!({"scope": "compat", "goal": "add the blue kettle to the cart",
               "turns": [
                   turn(1, json!({"action": "click", "selector": "@b1"})),
                   turn(2, json!({"action": "type", "selector": "@b2", "text": "kettle"})),
                   turn(3, json!({"action": "complete", "result": "in the cart"}))
               ],
               "success": true, "model": "model-a", "origin": "https://shop.test/p"}),
        dir,
    );
    assert_eq!(kind(&saved), "none", "{saved}");
    assert_eq!(saved["origin"], "https://shop.test");
    assert_eq!(saved["steps"].as_array().map(Vec::len), Some(2));
    let listed = answer(
        &env,
        "browser_trajectories",
        json!({"scope": "compat"}),
        dir,
    );
    assert_eq!(listed["trajectories"][0]["id"], saved["id"]);
    let url = "https://shop.test/p";
    let sessions = answer(
        &env,
        "browser_sessions",
        json!({"scope": "compat", "url": url}),
        dir,
    );
    assert_eq!(sessions["sessions"], json!([]), "{sessions}");
    let facts = answer(
        &env,
        "browser_facts",
        json!({"scope": "compat", "url": url, "min_confidence": 0}),
        dir,
    );
    assert_eq!(kind(&facts), "none", "{facts}");
    assert_eq!(facts["facts"], json!([]), "{facts}");
    // A malformed action still refuses the whole save, naming its turn.
    let refused = answer(
        &env,
        "browser_save_trajectory",
        json!({"scope": "compat", "goal": "g", "turns": [turn(1, json!("click"))]}),
        dir,
    );
    assert_eq!(kind(&refused), "invalid_input", "{refused}");
    let listed = answer(
        &env,
        "browser_trajectories",
        json!({"scope": "compat"}),
        dir,
    );
    assert_eq!(listed["trajectories"].as_array().map(Vec::len), Some(1));
}
