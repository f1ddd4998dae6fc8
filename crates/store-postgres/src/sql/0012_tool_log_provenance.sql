-- Version 12: a tool log keeps who logged the call (source, the writer's session or run,
-- client; its time is the log's timestamp), all NULL for one logged before writers were
-- kept or without one.
ALTER TABLE tool_logs ADD COLUMN source text;
ALTER TABLE tool_logs ADD COLUMN source_session text
    CHECK (source_session IS NULL OR source IS NOT NULL);
ALTER TABLE tool_logs ADD COLUMN client text
    CHECK (client IS NULL OR source IS NOT NULL);
