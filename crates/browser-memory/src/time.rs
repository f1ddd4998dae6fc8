//! ISO-8601 timestamps as the memory files write them (`2026-03-15T10:00:00.000Z`, UTC) and
//! the `YYYY-MM-DD HH:MM` form of the session history.

use agent_memory_core::Timestamp;
use chrono::{DateTime, SecondsFormat, Utc};

/// `timestamp` as JavaScript's `Date.prototype.toISOString()` writes it.
pub fn iso(timestamp: Timestamp) -> String {
    DateTime::<Utc>::from_timestamp_millis(timestamp.as_millis())
        .map(|t| t.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_else(|| timestamp.as_millis().to_string())
}

/// The instant `text` names, if it is an RFC 3339 timestamp.
pub fn parse_iso(text: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| Timestamp::from_millis(t.timestamp_millis()))
}

/// `[YYYY-MM-DD HH:MM]` content for the session history, in UTC. Text that does not parse is
/// cut as the reference does (`slice(0, 16)` with `T` replaced by a space).
pub fn minute(text: &str) -> String {
    match DateTime::parse_from_rfc3339(text) {
        Ok(t) => t.with_timezone(&Utc).format("%Y-%m-%d %H:%M").to_string(),
        Err(_) => text
            .chars()
            .take(16)
            .collect::<String>()
            .replacen('T', " ", 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trip_and_minutes() {
        let t = Timestamp::from_millis(1_767_225_600_000);
        assert_eq!(iso(t), "2026-01-01T00:00:00.000Z");
        assert_eq!(parse_iso("2026-01-01T00:00:00.000Z"), Some(t));
        assert_eq!(parse_iso("yesterday"), None);
        assert_eq!(minute("2026-03-15T12:00:59.999Z"), "2026-03-15 12:00");
        assert_eq!(minute("2026-03-15T14:00:00+02:00"), "2026-03-15 12:00");
        assert_eq!(minute("soon"), "soon");
    }
}
