-- Version 13: episodes and field rows refer to their fingerprint without a declared foreign
-- key. With foreign keys on, deleting a fingerprint makes SQLite look up the rows that refer
-- to it; no index began with `fp_id` in either table, so forgetting a partition read every
-- episode and field row of every partition once per fingerprint. An index on each would
-- serve the lookups, but recording one episode would then write a fourth page (a batch of
-- 1,000 in 100 groups, two to eight times the pages as the store grows), and a forget would
-- update both indexes too. The store writes `fp_id` only as interned in the same
-- transaction, and `check` verifies that each one names a fingerprint of the row's own
-- partition.
CREATE TABLE trajectory_episode_v13 (
    seq         INTEGER PRIMARY KEY,
    partition   TEXT NOT NULL,
    fp_id       INTEGER NOT NULL, -- trajectory_fingerprint (id), of the same partition
    trajectory  TEXT NOT NULL,    -- length-prefixed actions
    outcome     TEXT NOT NULL,    -- JSON
    recorded_at INTEGER NOT NULL
) STRICT;

INSERT INTO trajectory_episode_v13 (seq, partition, fp_id, trajectory, outcome, recorded_at)
    SELECT seq, partition, fp_id, trajectory, outcome, recorded_at FROM trajectory_episode;

DROP INDEX trajectory_episode_by_partition;
DROP TABLE trajectory_episode;
ALTER TABLE trajectory_episode_v13 RENAME TO trajectory_episode;
CREATE INDEX trajectory_episode_by_partition ON trajectory_episode (partition, seq);

CREATE TABLE trajectory_fingerprint_field_v13 (
    partition TEXT NOT NULL,
    field     TEXT NOT NULL,
    value     TEXT NOT NULL,
    fp_id     INTEGER NOT NULL, -- trajectory_fingerprint (id), of the same partition
    PRIMARY KEY (partition, field, value, fp_id)
) STRICT, WITHOUT ROWID;

INSERT INTO trajectory_fingerprint_field_v13 (partition, field, value, fp_id)
    SELECT partition, field, value, fp_id FROM trajectory_fingerprint_field;

DROP TABLE trajectory_fingerprint_field;
ALTER TABLE trajectory_fingerprint_field_v13 RENAME TO trajectory_fingerprint_field;
