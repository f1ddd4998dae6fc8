-- Version 7: when sessions and notes were last written, by the store's clock (neither carries
-- a time of its own). NULL (or no row) for what was written before this version.
ALTER TABLE session_events ADD COLUMN written_at bigint;
CREATE TABLE note_writes (
    scope      text   PRIMARY KEY,
    last_write bigint NOT NULL
);
