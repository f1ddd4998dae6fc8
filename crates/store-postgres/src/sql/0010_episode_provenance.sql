-- Version 10: an episode keeps who recorded it (source, session, client; its time is
-- recorded_at), all NULL for one recorded before writers were kept or without one.
ALTER TABLE trajectory_episode ADD COLUMN source text;
ALTER TABLE trajectory_episode ADD COLUMN session text
    CHECK (session IS NULL OR source IS NOT NULL);
ALTER TABLE trajectory_episode ADD COLUMN client text
    CHECK (client IS NULL OR source IS NOT NULL);
