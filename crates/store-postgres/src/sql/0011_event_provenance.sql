-- Version 11: a session event keeps who appended it (source, the writer's session or run,
-- client; its time is written_at), all NULL for one appended before writers were kept or
-- without one.
ALTER TABLE session_events ADD COLUMN source text;
ALTER TABLE session_events ADD COLUMN source_session text
    CHECK (source_session IS NULL OR source IS NOT NULL);
ALTER TABLE session_events ADD COLUMN client text
    CHECK (client IS NULL OR source IS NOT NULL);
