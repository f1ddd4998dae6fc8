-- Version 3: procedural memory (episodes, fingerprint groups, trajectory tallies, watermarks).

-- Each distinct (partition, fingerprint) once; episodes, groups and tallies refer to its id.
CREATE TABLE trajectory_fingerprint (
    id          INTEGER PRIMARY KEY,
    partition   TEXT NOT NULL,
    fingerprint TEXT NOT NULL, -- the fingerprint's canonical key
    UNIQUE (partition, fingerprint)
) STRICT;

-- One row per (partition, field, value) of each fingerprint: partial recall by field value.
CREATE TABLE trajectory_fingerprint_field (
    partition TEXT NOT NULL,
    field     TEXT NOT NULL,
    value     TEXT NOT NULL,
    fp_id     INTEGER NOT NULL REFERENCES trajectory_fingerprint (id),
    PRIMARY KEY (partition, field, value, fp_id)
) STRICT, WITHOUT ROWID;

-- Append-only. AUTOINCREMENT: a sequence number is never reused, even after pruning the
-- newest episodes, so the watermark never hides a new episode.
CREATE TABLE trajectory_episode (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    partition   TEXT NOT NULL,
    fp_id       INTEGER NOT NULL REFERENCES trajectory_fingerprint (id),
    trajectory  TEXT NOT NULL, -- length-prefixed actions
    outcome     TEXT NOT NULL, -- JSON
    recorded_at INTEGER NOT NULL
) STRICT;
CREATE INDEX trajectory_episode_by_partition ON trajectory_episode (partition, seq);

-- Crystallized state of a group; the pattern columns are NULL until the group reaches the
-- clustering threshold.
CREATE TABLE trajectory_group (
    fp_id               INTEGER PRIMARY KEY REFERENCES trajectory_fingerprint (id),
    episode_count       INTEGER NOT NULL,
    canonical           TEXT,
    canonical_count     INTEGER,
    canonical_newest    INTEGER,
    canonical_first_seq INTEGER,
    pending             TEXT NOT NULL,
    confidence          REAL,
    evidence_count      INTEGER,
    corroborations      INTEGER,
    contradictions      INTEGER,
    last_reinforced     INTEGER
) STRICT;

CREATE TABLE trajectory_tally (
    fp_id      INTEGER NOT NULL REFERENCES trajectory_fingerprint (id),
    trajectory TEXT NOT NULL,
    count      INTEGER NOT NULL,
    newest     INTEGER NOT NULL,
    first_seq  INTEGER NOT NULL,
    PRIMARY KEY (fp_id, trajectory)
) STRICT, WITHOUT ROWID;

CREATE TABLE trajectory_watermark (
    partition TEXT PRIMARY KEY NOT NULL,
    seq       INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
