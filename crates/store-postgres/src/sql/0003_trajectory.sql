-- Version 3: procedural memory (episodes, fingerprint groups, trajectory tallies, watermarks).
-- Fingerprints and trajectories are held as their canonical length-prefixed texts.

-- Append-only. An identity never hands out a number twice, so the watermark never hides a
-- new episode; appends hold a shared advisory lock on their partition and crystallize an
-- exclusive one, so no episode below the watermark is still being committed.
CREATE TABLE trajectory_episode (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    partition   text   NOT NULL,
    fingerprint text   NOT NULL,
    trajectory  text   NOT NULL,
    outcome     text   NOT NULL,
    recorded_at bigint NOT NULL
);
CREATE INDEX trajectory_episode_by_partition ON trajectory_episode (partition, seq);

-- Crystallized state of a group; the pattern columns are NULL until the group reaches the
-- clustering threshold. `pairs` holds each (field, value) pair as one length-prefixed text,
-- so partial recall is an array containment the GIN index answers.
CREATE TABLE trajectory_group (
    partition           text   NOT NULL,
    fingerprint         text   NOT NULL,
    pairs               text[] NOT NULL,
    episode_count       bigint NOT NULL,
    canonical           text,
    canonical_count     bigint,
    canonical_newest    bigint,
    canonical_first_seq bigint,
    pending             text   NOT NULL, -- length-prefixed (signal bits, recorded_at) pairs
    confidence          double precision,
    evidence_count      bigint,
    corroborations      bigint,
    contradictions      bigint,
    last_reinforced     bigint,
    PRIMARY KEY (partition, fingerprint)
);
CREATE INDEX trajectory_group_pairs ON trajectory_group USING gin (pairs);

CREATE TABLE trajectory_tally (
    partition   text   NOT NULL,
    fingerprint text   NOT NULL,
    trajectory  text   NOT NULL,
    count       bigint NOT NULL,
    newest      bigint NOT NULL,
    first_seq   bigint NOT NULL,
    PRIMARY KEY (partition, fingerprint, trajectory)
);

CREATE TABLE trajectory_watermark (
    partition text PRIMARY KEY,
    seq       bigint NOT NULL
);
