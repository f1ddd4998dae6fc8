-- Version 15: a browser trajectory keeps who stored it (source, session, client, written_at),
-- all NULL for one stored before writers were kept.
ALTER TABLE browser_trajectories ADD COLUMN source TEXT;
ALTER TABLE browser_trajectories ADD COLUMN session TEXT;
ALTER TABLE browser_trajectories ADD COLUMN client TEXT;
ALTER TABLE browser_trajectories ADD COLUMN written_at INTEGER
    CHECK ((source IS NULL) = (written_at IS NULL));
