//! Any bytes as a JSONL session log: an error or events, never a panic. A log that loads
//! loads again to the same events without a warning (the repair of a torn last line is
//! done once), and its events replay into a history or give an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use agent_memory_turns::{EventLog, History, JsonlLog};

fuzz_target!(|bytes: &[u8]| {
    let Ok(dir) = std::env::temp_dir().canonicalize() else { return };
    let path = dir.join(format!("agent-memory-fuzz-{}.jsonl", std::process::id()));
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    let mut log = JsonlLog::at(&path);
    if let Ok(first) = log.load() {
        let second = JsonlLog::at(&path).load().expect("a repaired log loads again");
        assert_eq!(second.events, first.events, "the second load differs");
        assert!(second.warnings.is_empty(), "a repaired log warns again: {:?}", second.warnings);
        let _ = History::replay(first.events);
    }
    let _ = std::fs::remove_file(&path);
});
