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

#[test]
fn the_event_log_of_the_realistic_session() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let log = agent_memory_turns::JsonlLog::new(dir.path(), &session_id("realistic"))
        .unwrap_or_else(|e| panic!("{e}"));
    let session = realistic(log);
    let lines = std::fs::read_to_string(session.log().path()).unwrap_or_else(|e| panic!("{e}"));
    insta::assert_snapshot!("event_log", lines);
}
