-- Version 12: episodes are numbered without AUTOINCREMENT, so recording one writes one page
-- fewer (`sqlite_sequence`'s). A number is still never given twice: the highest number a
-- deletion may have removed is kept in `trajectory_seq_floor`, written only by the deletions
-- (prune, forget), and an append numbers its episodes from one past the larger of it and the
-- highest number stored.
CREATE TABLE trajectory_seq_floor (
    only INTEGER PRIMARY KEY CHECK (only = 0),
    seq  INTEGER NOT NULL CHECK (seq >= 0)
) STRICT;

-- The highest number AUTOINCREMENT gave, if it gave any (no row stands for 0).
INSERT INTO trajectory_seq_floor (only, seq)
    SELECT 0, seq FROM sqlite_sequence WHERE name = 'trajectory_episode';

CREATE TABLE trajectory_episode_v12 (
    seq         INTEGER PRIMARY KEY,
    partition   TEXT NOT NULL,
    fp_id       INTEGER NOT NULL REFERENCES trajectory_fingerprint (id),
    trajectory  TEXT NOT NULL, -- length-prefixed actions
    outcome     TEXT NOT NULL, -- JSON
    recorded_at INTEGER NOT NULL
) STRICT;

INSERT INTO trajectory_episode_v12 (seq, partition, fp_id, trajectory, outcome, recorded_at)
    SELECT seq, partition, fp_id, trajectory, outcome, recorded_at FROM trajectory_episode;

DROP INDEX trajectory_episode_by_partition;
DROP TABLE trajectory_episode;
ALTER TABLE trajectory_episode_v12 RENAME TO trajectory_episode;
CREATE INDEX trajectory_episode_by_partition ON trajectory_episode (partition, seq);
