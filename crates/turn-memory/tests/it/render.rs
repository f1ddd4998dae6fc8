//! Snapshots of the payloads a realistic session renders to, for every provider.

use agent_memory_core::InMemoryStore;
use agent_memory_turns::{ContextPolicy, MemoryStyle, render};

use crate::fixture::{realistic, session_id};

#[test]
fn realistic_session_payloads() {
    let store = InMemoryStore::new();
    let session = realistic(agent_memory_turns::StoreLog::new(
        &store,
        session_id("realistic"),
    ));
    let view = session.history().model_view(&ContextPolicy::default());
    insta::assert_snapshot!(
        "openai_chat",
        render::to_pretty_json(&render::openai_chat(&view))
    );
    insta::assert_snapshot!(
        "openai_responses",
        render::to_pretty_json(&render::openai_responses(&view))
    );
    insta::assert_snapshot!("genkit", render::to_pretty_json(&render::genkit(&view)));

    let native = ContextPolicy::default().with_memory_style(MemoryStyle::native());
    let view = session.history().model_view(&native);
    insta::assert_snapshot!(
        "openai_chat_native",
        render::to_pretty_json(&render::openai_chat(&view))
    );
    insta::assert_snapshot!(
        "openai_responses_native",
        render::to_pretty_json(&render::openai_responses(&view))
    );
    insta::assert_snapshot!(
        "genkit_native",
        render::to_pretty_json(&render::genkit(&view))
    );
}

/// The system prompt of the new snapshots.
pub const SYSTEM: &str = "You are a coding agent working in /work/app. Read before you edit.";

#[test]
fn anthropic_and_gemini_payloads() {
    let store = InMemoryStore::new();
    let session = realistic(agent_memory_turns::StoreLog::new(
        &store,
        session_id("realistic"),
    ));
    let text = ContextPolicy::default().with_system_prompt(SYSTEM);
    let view = session.history().model_view(&text);
    insta::assert_snapshot!(
        "anthropic",
        render::to_pretty_json(&render::anthropic(&view))
    );
    insta::assert_snapshot!("gemini", render::to_pretty_json(&render::gemini(&view)));

    let native = text.with_memory_style(MemoryStyle::native());
    let view = session.history().model_view(&native);
    insta::assert_snapshot!(
        "anthropic_native",
        render::to_pretty_json(&render::anthropic(&view))
    );
    insta::assert_snapshot!(
        "gemini_native",
        render::to_pretty_json(&render::gemini(&view))
    );
}

#[test]
fn positional_payloads_as_keen_sends_them() {
    let store = InMemoryStore::new();
    let session = realistic(agent_memory_turns::StoreLog::new(
        &store,
        session_id("realistic"),
    ));
    let view = session
        .history()
        .model_view(&ContextPolicy::keen().with_system_prompt(SYSTEM));
    insta::assert_snapshot!(
        "openai_chat_positional",
        render::to_pretty_json(&render::openai_chat(&view))
    );
    insta::assert_snapshot!(
        "openai_responses_positional",
        render::to_pretty_json(&render::openai_responses(&view))
    );
    insta::assert_snapshot!(
        "genkit_positional",
        render::to_pretty_json(&render::genkit(&view))
    );
    insta::assert_snapshot!(
        "anthropic_positional",
        render::to_pretty_json(&render::anthropic(&view))
    );
    insta::assert_snapshot!(
        "gemini_positional",
        render::to_pretty_json(&render::gemini(&view))
    );
}

#[test]
fn the_event_log_of_the_realistic_session() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = agent_memory_turns::JsonlLog::new(dir.path(), &session_id("realistic"))
        .unwrap_or_else(|e| panic!("{e}"));
    let session = realistic(log);
    let lines = std::fs::read_to_string(session.log().path()).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!("event_log", lines);
}
