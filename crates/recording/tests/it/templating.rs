//! Every rule of reverse templating, one table row each, through one `check` helper.

use agent_memory_core::Timestamp;
use agent_memory_recording::{
    Reason, Snapshot, SnapshotItem, TemplatePolicy, baseline, templatize,
};
use serde_json::{Value, json};

/// A snapshot entry: `(key, value, writer, written_at, sensitive, existed_before)`.
type Row<'a> = (&'a str, &'a str, Option<&'a str>, i64, bool, bool);

fn snapshot(rows: &[Row<'_>]) -> Snapshot {
    let entries = rows
        .iter()
        .map(|(key, value, writer, at, sensitive, before)| {
            let item = if *sensitive {
                SnapshotItem::secret(*value)
            } else {
                SnapshotItem::new(*value)
            };
            let mut item = item
                .with_written_at(Timestamp::from_millis(*at))
                .with_existed_before(*before);
            if let Some(writer) = writer {
                item = item.with_writer(*writer);
            }
            ((*key).to_owned(), item)
        })
        .collect();
    Snapshot::from_entries(entries)
}

fn plain<'a>(key: &'a str, value: &'a str) -> Row<'a> {
    (key, value, None, 0, false, true)
}

/// Templates `call` under `rows` and compares the result and the `(path, key, reason)`
/// report; also checks that the baseline algorithm agrees when no secret is involved.
fn check(rows: &[Row<'_>], call: Value, expected: Value, report: &[(&str, &str, Reason)]) {
    let snapshot = snapshot(rows);
    let policy = TemplatePolicy::default();
    let got = templatize(&call, &snapshot, &policy).unwrap_or_else(|e| panic!("templatize: {e}"));
    assert_eq!(*got.parameters, expected, "templating {call}");
    let got_report: Vec<(&str, &str, Reason)> = got
        .substitutions
        .iter()
        .map(|s| (s.path.as_str(), s.key.as_str(), s.reason))
        .collect();
    assert_eq!(got_report, report, "report of {call}");
    if rows.iter().all(|row| !row.4) {
        assert_eq!(
            baseline::templatize(&call, &snapshot, &policy),
            expected,
            "baseline on {call}"
        );
    }
}

const EMAIL: &str = "trailblaze+merchant.coffee-shop.abc123@example.com";

#[test]
fn exact_full_field_match_only() {
    check(
        &[plain("merchant_email", EMAIL)],
        json!({"email": EMAIL, "greeting": format!("hello {EMAIL}")}),
        json!({"email": "${merchant_email}", "greeting": format!("hello {EMAIL}")}),
        &[("$.email", "merchant_email", Reason::LongValue)],
    );
}

#[test]
fn eight_character_boundary_counts_characters() {
    check(
        &[
            plain("eight", "12345678"),
            plain("seven", "1234567"),
            plain("accents", "ééééééé"),
        ],
        json!(["12345678", "1234567", "ééééééé"]),
        json!(["${eight}", "1234567", "ééééééé"]),
        &[("$[0]", "eight", Reason::LongValue)],
    );
}

#[test]
fn known_writer_short_value_yes_empty_value_no() {
    let rows = [
        (
            "country",
            "US",
            Some("merchantFactory_loadAccount"),
            0,
            false,
            true,
        ),
        ("blank", "", Some("rememberText"), 0, false, true),
        ("short", "US", None, 0, false, true),
    ];
    check(
        &rows,
        json!({"country": "US", "blank": ""}),
        json!({"country": "${country}", "blank": ""}),
        &[("$.country", "country", Reason::KnownWriter)],
    );
}

#[test]
fn short_value_of_unknown_writer_stays_literal() {
    check(
        &[plain("country", "US")],
        json!({"c": "US"}),
        json!({"c": "US"}),
        &[],
    );
}

#[test]
fn sensitive_values_are_templated_and_scrubbed() {
    let rows = [("password", "9999zq", None, 0, true, true)];
    check(
        &rows,
        json!({"password": "9999zq", "header": "Bearer 9999zq.9999zq", "nested": {"k": ["x9999zqy"]}}),
        json!({"password": "${password}", "header": "Bearer ${password}.${password}", "nested": {"k": ["x${password}y"]}}),
        &[
            ("$.header", "password", Reason::ScrubbedSecret),
            ("$.header", "password", Reason::ScrubbedSecret),
            ("$.nested.k[0]", "password", Reason::ScrubbedSecret),
            ("$.password", "password", Reason::Sensitive),
        ],
    );
}

#[test]
fn longer_secret_wins_over_a_secret_inside_it() {
    let rows = [
        ("short", "9999zq", None, 0, true, true),
        ("long", "9999zq-extended", None, 0, true, true),
    ];
    check(
        &rows,
        json!(["a 9999zq-extended b 9999zq"]),
        json!(["a ${long} b ${short}"]),
        &[
            ("$[0]", "long", Reason::ScrubbedSecret),
            ("$[0]", "short", Reason::ScrubbedSecret),
        ],
    );
}

#[test]
fn self_reference_is_excluded() {
    let rows = [(
        "token",
        "generated-token-1",
        Some("testUser_create"),
        5,
        false,
        false,
    )];
    check(
        &rows,
        json!({"t": "generated-token-1"}),
        json!({"t": "generated-token-1"}),
        &[],
    );
}

#[test]
fn unsafe_keys_are_skipped() {
    let value = "same-long-value";
    check(
        &[
            plain("a}b", value),
            plain("memory.x", value),
            plain("args.name", value),
        ],
        json!([value]),
        json!([value]),
        &[],
    );
}

#[test]
fn token_bearing_literals_and_values_are_left_alone() {
    check(
        &[
            plain("a", "${already-a-token}"),
            plain("b", "{{another}}-long"),
            plain("c", "plain-long-value"),
        ],
        json!(["${already-a-token}", "{{another}}-long", "plain-long-value"]),
        json!(["${already-a-token}", "{{another}}-long", "${c}"]),
        &[("$[2]", "c", Reason::LongValue)],
    );
}

#[test]
fn same_value_under_several_keys_is_chosen_deterministically() {
    let v = "shared-long-value";
    // Known writer beats recency.
    check(
        &[
            ("old_known", v, Some("rememberText"), 1, false, true),
            ("new_plain", v, None, 9, false, true),
        ],
        json!([v]),
        json!(["${old_known}"]),
        &[("$[0]", "old_known", Reason::KnownWriter)],
    );
    // Then the most recent write.
    check(
        &[
            ("older", v, None, 1, false, true),
            ("newer", v, None, 9, false, true),
        ],
        json!([v]),
        json!(["${newer}"]),
        &[("$[0]", "newer", Reason::LongValue)],
    );
    // Then the smallest key.
    check(
        &[
            ("zeta", v, None, 3, false, true),
            ("alpha", v, None, 3, false, true),
        ],
        json!([v]),
        json!(["${alpha}"]),
        &[("$[0]", "alpha", Reason::LongValue)],
    );
}

#[test]
fn values_that_are_substrings_of_other_values() {
    check(
        &[
            plain("host", "example.com.long"),
            plain("url", "https://example.com.long/path"),
        ],
        json!(["https://example.com.long/path", "example.com.long"]),
        json!(["${url}", "${host}"]),
        &[
            ("$[0]", "url", Reason::LongValue),
            ("$[1]", "host", Reason::LongValue),
        ],
    );
}

#[test]
fn non_string_scalars_are_untouched() {
    check(
        &[plain("n", "12345678"), plain("b", "true-but-long")],
        json!({"n": 12345678, "b": true, "z": null, "f": 1.5}),
        json!({"n": 12345678, "b": true, "z": null, "f": 1.5}),
        &[],
    );
}

#[test]
fn dry_run_reports_without_changing() {
    let snapshot = snapshot(&[plain("merchant_email", EMAIL)]);
    let policy = TemplatePolicy::default().with_dry_run(true);
    let call = json!({"email": EMAIL});
    let got = templatize(&call, &snapshot, &policy).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(*got.parameters, call);
    assert_eq!(got.substitutions.len(), 1);
}

#[test]
fn minimum_length_is_configurable() {
    let snapshot = snapshot(&[plain("code", "ABC")]);
    let policy = TemplatePolicy::default().with_min_chars(3);
    let call = json!(["ABC"]);
    let got = templatize(&call, &snapshot, &policy).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(*got.parameters, json!(["${code}"]));
}

#[test]
fn deep_parameters_are_an_error() {
    let mut call = json!("leaf");
    for _ in 0..200 {
        call = json!({ "n": call });
    }
    let err = templatize(&call, &snapshot(&[]), &TemplatePolicy::default()).expect_err("too deep");
    assert!(
        err.to_string()
            .starts_with("value nested deeper than 128 levels at $.n.n"),
        "{err}"
    );
}

#[test]
fn secrets_of_one_byte_and_of_multibyte_characters_are_scrubbed() {
    let rows = [
        ("q", "q", None, 0, true, true),
        ("umlaut", "ü9", None, 0, true, true),
    ];
    check(
        &rows,
        json!(["aqü9b", "äq", "ü"]),
        json!(["a${q}${umlaut}b", "ä${q}", "ü"]),
        &[
            ("$[0]", "q", Reason::ScrubbedSecret),
            ("$[0]", "umlaut", Reason::ScrubbedSecret),
            ("$[1]", "q", Reason::ScrubbedSecret),
        ],
    );
}

#[test]
fn old_json_logs_without_a_snapshot_load_and_new_ones_round_trip() {
    let old = r#"{"session":"s","toolName":"tapOn","parameters":{"a":[1,"x"]},"successful":false,"exceptionMessage":"no such element","durationMs":7,"timestamp":5,"traceId":"t"}"#;
    let log = agent_memory_recording::tool_log_from_json(old).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(log.memory_snapshot, None);
    assert_eq!(log.error.as_deref(), Some("no such element"));
    let mut memory = agent_memory_recording::Memory::new();
    memory.remember_secret(
        "pw",
        "9999zq",
        agent_memory_recording::Provenance::unknown(Timestamp::from_millis(1)),
    );
    memory.remember(
        "email",
        "someone@example.com",
        agent_memory_recording::Provenance::unknown(Timestamp::from_millis(1)),
    );
    let mut with = log.clone();
    with.memory_snapshot = Some(memory.snapshot().to_stored());
    let text = agent_memory_recording::tool_log_to_json(&with).unwrap_or_else(|e| panic!("{e}"));
    assert!(!text.contains("9999zq"), "{text}");
    assert!(text.contains("someone@example.com"), "{text}");
    assert_eq!(
        agent_memory_recording::tool_log_from_json(&text).unwrap_or_else(|e| panic!("{e}")),
        with
    );
    for (text, message) in [
        (
            r#"{"session":"s"}"#,
            "tool log:1: neither a tool log of this crate (no `parameters`) nor a Trailblaze log (no `class`)",
        ),
        (
            r#"{"session":"s","parameters":{}}"#,
            "tool log:1: `toolName` is missing",
        ),
        (
            r#"{"session":"s","toolName":"t","parameters":{},"successful":"yes","durationMs":1,"timestamp":1}"#,
            "tool log:1: `successful` must be true or false, not a string",
        ),
        (
            r#"{"session":"s","toolName":"t","parameters":{},"successful":true,"durationMs":1,"timestamp":"yesterday"}"#,
            "tool log:1: `timestamp` is not an ISO-8601 time",
        ),
        (
            r#"{"class":"xyz.block.trailblaze.logs.client.TrailblazeLog.TrailblazeLlmRequestLog"}"#,
            "tool log:1: a TrailblazeLlmRequestLog, not a tool log",
        ),
    ] {
        let bad = agent_memory_recording::tool_log_from_json(text).expect_err(message);
        assert!(bad.to_string().starts_with(message), "{bad}");
    }
}

#[test]
fn values_inside_longer_strings_are_templated_only_on_request() {
    let rows = [
        (
            "merchant_name",
            "Lindenhof Bakery",
            Some("merchantFactory_load"),
            1,
            false,
            true,
        ),
        (
            "country",
            "US",
            Some("merchantFactory_load"),
            1,
            false,
            true,
        ),
        ("nickname", "someone-else", None, 1, false, true),
        (
            "fresh",
            "created-by-this-call",
            Some("merchantFactory_load"),
            1,
            false,
            false,
        ),
    ];
    let snapshot = snapshot(&rows);
    let call = json!({
        "greeting": "Welcome, Lindenhof Bakery! (Lindenhof Bakery)",
        "country": "from US",
        "nick": "hi someone-else",
        "own": "made created-by-this-call",
        "token": "${x} Lindenhof Bakery",
    });
    let exact =
        templatize(&call, &snapshot, &TemplatePolicy::default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        *exact.parameters, call,
        "the default is the exact full-field rule"
    );
    let inside = templatize(
        &call,
        &snapshot,
        &TemplatePolicy::default().with_inside(true),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Only a known writer's value of at least 8 characters, written before the call, in a
    // string holding no token already.
    assert_eq!(
        *inside.parameters,
        json!({
            "greeting": "Welcome, ${merchant_name}! (${merchant_name})",
            "country": "from US",
            "nick": "hi someone-else",
            "own": "made created-by-this-call",
            "token": "${x} Lindenhof Bakery",
        })
    );
    let report: Vec<(&str, &str, Reason)> = inside
        .substitutions
        .iter()
        .map(|s| (s.path.as_str(), s.key.as_str(), s.reason))
        .collect();
    assert_eq!(
        report,
        [
            ("$.greeting", "merchant_name", Reason::Inside),
            ("$.greeting", "merchant_name", Reason::Inside),
        ]
    );
}
