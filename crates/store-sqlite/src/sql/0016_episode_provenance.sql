-- Version 16: an episode keeps who recorded it (source, session, client; its time is
-- recorded_at), all NULL for one recorded before writers were kept or without one.
ALTER TABLE trajectory_episode ADD COLUMN source TEXT;
ALTER TABLE trajectory_episode ADD COLUMN session TEXT
    CHECK (session IS NULL OR source IS NOT NULL);
ALTER TABLE trajectory_episode ADD COLUMN client TEXT
    CHECK (client IS NULL OR source IS NOT NULL);
