-- Version 7: fewer B-trees written by a recorded run.
--
-- Recording a finished run wrote about 19 pages of WAL on a small store, spread over fifteen
-- B-trees. Lists that are always read and written whole now live in their owner's row, and
-- facts and selectors are keyed the way they are looked up, so their secondary indexes go:
--   * a trajectory's steps are a column of its row (`steps`),
--   * a site's session log (at most five entries) is a column of the site row (`sessions`),
--   * a run's artifact paths are a column of the run row (`artifact_paths`),
--   * facts are keyed by (scope, site, kind, key, seq) and selectors by (scope, site,
--     element); their order comes from `seq`, drawn from the site row's `next_seq`.
--
-- Lists are encoded as `<byte length>:<text>` items (as the token index keys are):
--   steps:          url, action, snapshot_hash, verified ('0' or '1'), expected effect
--                   ('' when there is none, '=' followed by the text when there is one)
--   sessions:       id, goal, outcome, success ('0' or '1'), final_url, timestamp,
--                   turns_used, duration_ms
--   artifact_paths: one item per path

ALTER TABLE browser_trajectories ADD COLUMN steps TEXT NOT NULL DEFAULT '';

UPDATE browser_trajectories SET steps = coalesce(
    (SELECT group_concat(
        length(CAST(url AS BLOB)) || ':' || url
        || length(CAST(action AS BLOB)) || ':' || action
        || length(CAST(snapshot_hash AS BLOB)) || ':' || snapshot_hash
        || '1:' || verified
        || CASE WHEN expected_effect IS NULL THEN '0:'
                ELSE (length(CAST(expected_effect AS BLOB)) + 1) || ':=' || expected_effect END,
        '' ORDER BY seq)
     FROM browser_trajectory_steps WHERE traj = browser_trajectories.id), '');

DROP TABLE browser_trajectory_steps;

ALTER TABLE browser_sites ADD COLUMN sessions TEXT NOT NULL DEFAULT '';
ALTER TABLE browser_sites ADD COLUMN next_seq INTEGER NOT NULL DEFAULT 0;

UPDATE browser_sites SET sessions = coalesce(
    (SELECT group_concat(
        length(CAST(id AS BLOB)) || ':' || id
        || length(CAST(goal AS BLOB)) || ':' || goal
        || length(CAST(outcome AS BLOB)) || ':' || outcome
        || '1:' || success
        || length(CAST(final_url AS BLOB)) || ':' || final_url
        || length(CAST(timestamp AS BLOB)) || ':' || timestamp
        || length(CAST(turns_used AS TEXT)) || ':' || turns_used
        || length(CAST(duration_ms AS TEXT)) || ':' || duration_ms,
        '' ORDER BY seq)
     FROM browser_sessions s
     WHERE s.scope = browser_sites.scope AND s.site = browser_sites.site), '');

UPDATE browser_sites SET next_seq = max(
    coalesce((SELECT max(seq) + 1 FROM browser_facts f
              WHERE f.scope = browser_sites.scope AND f.site = browser_sites.site), 0),
    coalesce((SELECT max(seq) + 1 FROM browser_selectors s
              WHERE s.scope = browser_sites.scope AND s.site = browser_sites.site), 0));

DROP TABLE browser_sessions;

CREATE TABLE browser_facts_v7 (
    scope      TEXT    NOT NULL,
    site       TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    sources    INTEGER NOT NULL,
    last_seen  TEXT    NOT NULL,
    PRIMARY KEY (scope, site, kind, key, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

INSERT INTO browser_facts_v7 (scope, site, kind, key, seq, value, confidence, sources, last_seen)
    SELECT scope, site, kind, key, seq, value, confidence, sources, last_seen FROM browser_facts;

DROP TABLE browser_facts;
ALTER TABLE browser_facts_v7 RENAME TO browser_facts;

CREATE TABLE browser_selectors_v7 (
    scope           TEXT    NOT NULL,
    site            TEXT    NOT NULL,
    element         TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    last_ref        TEXT,
    stable_selector TEXT,
    success_count   INTEGER NOT NULL,
    last_used       TEXT    NOT NULL,
    PRIMARY KEY (scope, site, element),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

INSERT INTO browser_selectors_v7 (scope, site, element, seq, last_ref, stable_selector, success_count, last_used)
    SELECT scope, site, element, seq, last_ref, stable_selector, success_count, last_used FROM browser_selectors;

DROP TABLE browser_selectors;
ALTER TABLE browser_selectors_v7 RENAME TO browser_selectors;

ALTER TABLE browser_runs ADD COLUMN artifact_paths TEXT NOT NULL DEFAULT '';

UPDATE browser_runs SET artifact_paths = coalesce(
    (SELECT group_concat(length(CAST(path AS BLOB)) || ':' || path, '' ORDER BY seq)
     FROM browser_run_artifacts a
     WHERE a.scope = browser_runs.scope AND a.run_id = browser_runs.run_id), '');

DROP TABLE browser_run_artifacts;
