//! Keen Code's persistent memory: the secret refusal for each pattern, the caps at and one
//! byte past their size, and the memory's place at the end of the system prompt.

use agent_memory_core::InMemoryStore;
use agent_memory_turns::persistent::{
    GLOBAL_MAX_BYTES, PROJECT_MAX_BYTES, PersistentMemory, PersistentScope, SecretKind,
    TRUNCATION_MARKER, check_write, loaded, over_cap, secret_in,
};
use agent_memory_turns::{ContextPolicy, render};

use crate::fixture::{realistic, session_id};

/// `text` (assembled at run time, so no secret-shaped literal sits in the source) is refused
/// as `kind`, and the refusal names the kind, never a character of the secret.
fn check_refused(text: &str, secret: &str, kind: SecretKind) {
    assert_eq!(secret_in(text), Some(kind), "{kind:?}");
    let err = check_write(PersistentScope::Project, text).expect_err("refused");
    let message = err.to_string();
    assert_eq!(
        message,
        format!(
            "refusing to write project memory: content appears to contain a secret, token, or credential ({})",
            kind.description()
        )
    );
    assert!(!message.contains(secret), "{message}");
    assert!(!format!("{err:?}").contains(secret), "{err:?}");
}

#[test]
fn each_secret_pattern_is_refused_by_its_kind() {
    let a20 = "Ab1".repeat(7);
    let a40 = "Ab12".repeat(10);
    let cases: Vec<(String, SecretKind)> = vec![
        (
            ["-----BEGIN ", "RSA PRIVATE KEY-----"].concat(),
            SecretKind::PrivateKey,
        ),
        (
            ["-----BEGIN ", "OPENSSH PRIVATE KEY-----"].concat(),
            SecretKind::PrivateKey,
        ),
        (
            ["-----BEGIN ", "PRIVATE KEY-----"].concat(),
            SecretKind::PrivateKey,
        ),
        // Keen's own test of its edit tool: `api_key: sk-1234567890abcdefghijklmnopqrstuvwxyz`.
        (
            ["sk-", "1234567890abcdefghijklmnopqrstuvwxyz"].concat(),
            SecretKind::ApiKey,
        ),
        (["sk-", "ant-", &a20].concat(), SecretKind::ApiKey),
        (["ghp", "_", &a40].concat(), SecretKind::GithubToken),
        (["github", "_pat_", &a40].concat(), SecretKind::GithubToken),
        (
            ["AKIA", "IOSFODNN7EXAMPLE"].concat(),
            SecretKind::AwsAccessKey,
        ),
        (
            ["xox", "b-", "1234567890-abcdef"].concat(),
            SecretKind::SlackToken,
        ),
        (
            ["AIza", &"Sy0".repeat(12)[..35]].concat(),
            SecretKind::GoogleApiKey,
        ),
        (["Bearer ", &a20].concat(), SecretKind::BearerToken),
        (
            [
                "eyJ",
                "hbGciOiJIUzI1NiJ9",
                ".",
                "eyJzdWIiOiIxMjMifQ",
                ".",
                "c2lnbmF0dXJlMTIz",
            ]
            .concat(),
            SecretKind::JsonWebToken,
        ),
        (
            ["password", " = ", "hunter2hunter2"].concat(),
            SecretKind::CredentialAssignment,
        ),
        (
            ["API_KEY", "=", "abcdefgh12"].concat(),
            SecretKind::CredentialAssignment,
        ),
    ];
    let mut seen = std::collections::HashSet::new();
    for (secret, kind) in cases {
        check_refused(&format!("- remember this\n{secret}\n"), &secret, kind);
        seen.insert(kind);
    }
    assert_eq!(seen.len(), SecretKind::ALL.len(), "every kind has a case");
}

#[test]
fn ordinary_notes_are_written() {
    for text in [
        "",
        "- prefers brief answers",
        "- run `go test -race ./...` after Go changes",
        "- the token bucket refills every second",
        "- password reset emails go through the `mailer` crate",
        "- sk-learn is the scikit-learn alias here",
        "- ask before touching .env files",
    ] {
        assert_eq!(secret_in(text), None, "{text}");
        assert!(check_write(PersistentScope::Global, text).is_ok(), "{text}");
    }
}

/// `scope`'s memory of `text` loads as `expected` (`None`: skipped), and is over its cap or
/// not as `cut` says.
fn check_loaded(scope: PersistentScope, text: &str, expected: Option<String>, cut: bool) {
    assert_eq!(
        loaded(scope, text),
        expected,
        "{scope} of {} bytes",
        text.len()
    );
    assert_eq!(
        over_cap(scope, text),
        cut,
        "{scope} of {} bytes",
        text.len()
    );
}

#[test]
fn caps_count_the_trimmed_bytes_and_cut_one_past() {
    for (scope, cap) in [
        (PersistentScope::Global, GLOBAL_MAX_BYTES),
        (PersistentScope::Project, PROJECT_MAX_BYTES),
    ] {
        let at = "x".repeat(cap);
        check_loaded(scope, &at, Some(at.clone()), false);
        // Surrounding white space is not counted, as Keen trims before it measures.
        check_loaded(scope, &format!("\n  {at}\n\n"), Some(at.clone()), false);
        let over = "x".repeat(cap + 1);
        check_loaded(scope, &over, Some(format!("{at}{TRUNCATION_MARKER}")), true);
        check_loaded(scope, " \n\t ", None, false);
        check_loaded(scope, "", None, false);
    }
    assert_eq!((GLOBAL_MAX_BYTES, PROJECT_MAX_BYTES), (8192, 16384));
}

#[test]
fn memory_ends_the_system_prompt_as_keen_places_it() {
    let store = InMemoryStore::new();
    let session = realistic(agent_memory_turns::StoreLog::new(
        &store,
        session_id("keen"),
    ));
    let memory = PersistentMemory::new(
        Some("- User prefers brief responses.\n"),
        Some("\n- Run `cargo test -p app` after Rust changes.\n- Ask before editing migrations.\n"),
    );
    let policy = ContextPolicy::keen()
        .with_system_prompt("You are Keen Code, an expert terminal-based coding agent.")
        .with_persistent_memory(memory);
    let view = session.history().model_view(&policy);
    insta::assert_snapshot!(
        "persistent_memory_system_prompt",
        view.system.as_deref().unwrap_or("")
    );
    insta::assert_snapshot!(
        "persistent_memory_anthropic",
        render::to_pretty_json(&render::anthropic(&view))
    );

    // Only one memory: only its section. No memory at all: the prompt as it was.
    let project_only = PersistentMemory::new(Some("  \n"), Some("- p"));
    let view = session
        .history()
        .model_view(&ContextPolicy::default().with_persistent_memory(project_only));
    assert_eq!(
        view.system.as_deref(),
        Some("# Memory\n\n# Project memory\n\n- p")
    );
    let nothing = ContextPolicy::default()
        .with_system_prompt("prompt")
        .with_persistent_memory(PersistentMemory::default());
    assert_eq!(
        session.history().model_view(&nothing).system.as_deref(),
        Some("prompt")
    );
}
