-- Version 6: a pending list in front of the token index, as PostgreSQL's GIN "fast update"
-- does it. A recorded trajectory's postings are appended here, clustered by trajectory (one
-- or two pages per run), instead of landing on one leaf page of the token index per token.
-- When the list grows past a bound it is merged into the index in token order, so postings
-- of the same token share pages. Matching reads both.
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
