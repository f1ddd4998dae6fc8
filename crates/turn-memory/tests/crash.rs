//! Crash safety of the JSONL session log: a child process records user messages through a
//! [`Session`] on a [`JsonlLog`] and is killed with SIGKILL at random moments; after each
//! kill the log must load (a torn last line skipped with a warning), hold every event the
//! child reported as appended, each whole, and nothing else but whole events.
//!
//! This binary has its own `main` (`harness = false`) because it re-executes itself as the
//! child. Kills and pauses come from a fixed seed, so a failure reproduces.
//! `AGENT_MEMORY_CRASH_KILLS` sets how many kills (default 50).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use agent_memory_core::testkit::crash::{CrashTest, KillLoop};
use agent_memory_core::{ManualClock, SessionId, SplitMix64, Timestamp};
use agent_memory_turns::{EventLog, JsonlLog, Session, SessionEvent, Warning};

fn main() -> ExitCode {
    CrashTest {
        name: "sigkill_loses_no_appended_event",
        child,
    }
    .main(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let path = dir.path().join("s1.jsonl");
        let session = SessionId::new("s1").map_err(|e| e.to_string())?;
        let clock = ManualClock::new(Timestamp::from_millis(1_767_225_600_000));
        Session::start(JsonlLog::at(&path), session, &clock).map_err(|e| e.to_string())?;
        let mut torn = 0;
        let summary = KillLoop::from_env(0x10c5).run(&path, |path, round, lines| {
            let (reported, warnings) = verify(path, round, lines)?;
            torn += warnings;
            Ok(reported)
        })?;
        Ok(format!("{summary}, {torn} torn last lines skipped"))
    })
}

/// The text of message `seq` of `round`: a header naming it, then filler of a length drawn
/// from both, up to 64 KiB so that a kill often lands in the middle of a write.
fn message(round: u64, seq: u64) -> String {
    let mut rng = SplitMix64::new(round << 32 | seq);
    let len = rng.below(64 * 1024) as usize;
    let mut text = format!("{round}/{seq}/");
    text.extend((0..len).map(|i| char::from(b'a' + (i % 26) as u8)));
    text
}

/// The writer: resumes the session and records messages forever, reporting each once
/// `user_message` returned.
fn child(path: &Path, round: u64) -> Result<(), String> {
    let (mut session, _) = Session::resume(JsonlLog::at(path)).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    for seq in 0.. {
        session
            .user_message(message(round, seq))
            .map_err(|e| e.to_string())?;
        writeln!(out, "appended {round} {seq}").map_err(|e| e.to_string())?;
        out.flush().map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Checks the log after a kill; returns how many reported events were found and how many
/// warnings the load gave.
fn verify(path: &Path, round: u64, lines: &[String]) -> Result<(u64, u64), String> {
    let loaded = JsonlLog::at(path)
        .load()
        .map_err(|e| format!("round {round}: load: {e}"))?;
    if let Some(w) = loaded
        .warnings
        .iter()
        .find(|w| !matches!(w, Warning::TornLastLine { .. }))
    {
        return Err(format!("round {round}: unexpected warning: {w}"));
    }
    let again = JsonlLog::at(path)
        .load()
        .map_err(|e| format!("round {round}: second load: {e}"))?;
    if again.events != loaded.events || !again.warnings.is_empty() {
        return Err(format!("round {round}: the repaired log loads differently"));
    }
    // Every event whole, none twice, and in the order written.
    let mut seen = BTreeSet::new();
    let mut last = None;
    for (index, event) in loaded.events.iter().enumerate().skip(1) {
        let SessionEvent::UserMessage { text } = event else {
            return Err(format!(
                "round {round}: event {index} is a {}",
                event.kind()
            ));
        };
        let mut fields = text.splitn(3, '/');
        let (Some(r), Some(s)) = (fields.next(), fields.next()) else {
            return Err(format!("round {round}: event {index} has no header"));
        };
        let id: (u64, u64) = (
            r.parse()
                .map_err(|_| format!("round {round}: event {index}: bad round"))?,
            s.parse()
                .map_err(|_| format!("round {round}: event {index}: bad seq"))?,
        );
        if *text != message(id.0, id.1) {
            return Err(format!("round {round}: event {id:?} is not whole"));
        }
        if !seen.insert(id) || last.is_some_and(|l| l > id) {
            return Err(format!(
                "round {round}: event {id:?} is out of order or repeated"
            ));
        }
        last = Some(id);
    }
    let mut reported = 0;
    for line in lines {
        let id = line
            .strip_prefix("appended ")
            .and_then(|rest| rest.split_once(' '))
            .and_then(|(r, s)| Some((r.parse::<u64>().ok()?, s.parse::<u64>().ok()?)))
            .ok_or_else(|| format!("round {round}: bad child line {line:?}"))?;
        if !seen.contains(&id) {
            return Err(format!("round {round}: appended event {id:?} is missing"));
        }
        reported += 1;
    }
    Ok((reported, loaded.warnings.len() as u64))
}
