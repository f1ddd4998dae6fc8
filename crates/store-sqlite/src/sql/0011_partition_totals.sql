-- Version 11: each partition's number of episodes, their bytes (trajectory and outcome as
-- stored) and the newest `recorded_at`, kept by the episode writes in their own transaction,
-- so listing the partitions reads one row each instead of every episode.
CREATE TABLE trajectory_partition_totals (
    partition TEXT    PRIMARY KEY NOT NULL,
    episodes  INTEGER NOT NULL CHECK (episodes > 0),
    bytes     INTEGER NOT NULL CHECK (bytes >= 0),
    newest    INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO trajectory_partition_totals (partition, episodes, bytes, newest)
    SELECT partition, count(*), sum(octet_length(trajectory) + octet_length(outcome)),
           max(recorded_at)
    FROM trajectory_episode GROUP BY partition;
