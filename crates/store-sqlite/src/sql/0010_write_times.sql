-- Version 10: when sessions and notes were last written, by the store's clock (neither carries
-- a time of its own). NULL for what was written before this version.
ALTER TABLE session_events ADD COLUMN written_at INTEGER;
ALTER TABLE note_scopes ADD COLUMN last_write INTEGER;
