-- Version 17: a session event keeps who appended it (source, the writer's session or run,
-- client; its time is written_at), all NULL for one appended before writers were kept or
-- without one.
ALTER TABLE session_events ADD COLUMN source TEXT;
ALTER TABLE session_events ADD COLUMN source_session TEXT
    CHECK (source_session IS NULL OR source IS NOT NULL);
ALTER TABLE session_events ADD COLUMN client TEXT
    CHECK (client IS NULL OR source IS NOT NULL);
