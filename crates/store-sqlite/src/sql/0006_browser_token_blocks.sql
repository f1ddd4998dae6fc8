-- Version 6: the browser token index as posting blocks behind a pending list.
--
-- Version 5 kept one row per (token, origin, trajectory): matching read one row per posting
-- (about 1,400 rows per query among 100,000 trajectories) and recording a run wrote one page
-- per token. Now a recorded run appends its postings to a pending list, clustered by
-- trajectory; past a bound they are merged into blocks, one row per (scope, token, origin)
-- holding up to 128 packed postings, so matching reads a couple of rows per query token.
-- Each trajectory keeps its index keys, so removing it finds its blocks.

ALTER TABLE browser_trajectories ADD COLUMN index_keys TEXT NOT NULL DEFAULT '';

CREATE TABLE browser_trajectory_tokens_pending (
    traj        INTEGER NOT NULL REFERENCES browser_trajectories (id) ON DELETE CASCADE,
    token       TEXT    NOT NULL,
    scope       TEXT    NOT NULL,
    origin      TEXT    NOT NULL,
    success     INTEGER NOT NULL,
    recorded_at INTEGER,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (traj, token)
) STRICT, WITHOUT ROWID;

-- `postings`: entries of 19 bytes, little-endian: trajectory id (8), recorded_at in ms
-- (8, i64::MIN when unknown), token count (2), success (1); ascending by trajectory id.
CREATE TABLE browser_token_blocks (
    scope    TEXT    NOT NULL,
    token    TEXT    NOT NULL,
    origin   TEXT    NOT NULL,
    block    INTEGER NOT NULL,
    postings BLOB    NOT NULL,
    PRIMARY KEY (scope, token, origin, block)
) STRICT, WITHOUT ROWID;

-- Existing postings: each trajectory's keys (as `<byte length>:<key>` items), then the
-- postings themselves into the pending list, which the store merges on its next write.
UPDATE browser_trajectories SET index_keys = coalesce(
    (SELECT group_concat(length(CAST(token AS BLOB)) || ':' || token, '')
     FROM browser_trajectory_tokens WHERE traj = browser_trajectories.id), '');

INSERT INTO browser_trajectory_tokens_pending (traj, token, scope, origin, success, recorded_at, token_count)
    SELECT traj, token, scope, origin, success, recorded_at, token_count FROM browser_trajectory_tokens;

DROP TABLE browser_trajectory_tokens;
