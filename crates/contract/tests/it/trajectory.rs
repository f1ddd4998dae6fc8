//! `trajectory_fingerprint` from JSON: popoto's fingerprint of features given as an object or
//! as its text, and every refusal.

use serde_json::{Map, json};

use crate::calls::{answer, env, kind, store};

#[test]
fn a_fingerprint_is_popotos_from_an_object_or_its_text() {
    let store = store();
    let env = env(&store);
    let dir = std::path::Path::new("/nowhere");
    let mut answers = Map::new();
    for (case, features) in [
        ("object", json!({"task": "deploy", "env": "staging"})),
        ("text", json!(r#"{"env": "staging", "task": "deploy"}"#)),
        (
            "a big integer as text",
            json!(r#"{"n": 123456789012345678901234567890}"#),
        ),
        ("text that is not JSON", json!("{task")),
        ("text of an array", json!("[1, 2]")),
        ("an array", json!([1, 2])),
        ("an infinite number", json!(r#"{"n": 1e400}"#)),
    ] {
        let input = json!({ "features": features });
        answers.insert(
            case.to_owned(),
            answer(&env, "trajectory_fingerprint", input, dir),
        );
    }
    assert_eq!(
        answers["object"], answers["text"],
        "key order does not matter"
    );
    assert_eq!(answers["object"]["fingerprint"], "86e6b7501eb99c29");
    assert_eq!(
        answers["a big integer as text"]["fingerprint"]
            .as_str()
            .map(str::len),
        Some(16)
    );
    for case in [
        "text that is not JSON",
        "text of an array",
        "an array",
        "an infinite number",
    ] {
        assert_eq!(kind(&answers[case]), "invalid_input", "{case}");
        assert_eq!(answers[case]["error"]["input"], "features", "{case}");
    }
    let missing = answer(&env, "trajectory_fingerprint", json!({}), dir);
    assert_eq!(kind(&missing), "invalid_input");
    answers.insert("no features".to_owned(), missing);
    insta::assert_json_snapshot!(answers);
}
