-- Version 5: browser agent memory, every row scoped.

-- Trajectories; steps in their own table, in order.
CREATE TABLE browser_trajectories (
    id          INTEGER PRIMARY KEY,
    scope       TEXT    NOT NULL,
    traj_id     TEXT    NOT NULL,
    goal        TEXT    NOT NULL,
    origin      TEXT,
    success     INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    model       TEXT    NOT NULL,
    timestamp   TEXT    NOT NULL,
    recorded_at INTEGER,
    token_count INTEGER NOT NULL,
    UNIQUE (scope, traj_id)
) STRICT;

CREATE TABLE browser_trajectory_steps (
    traj            INTEGER NOT NULL REFERENCES browser_trajectories (id) ON DELETE CASCADE,
    seq             INTEGER NOT NULL,
    url             TEXT    NOT NULL,
    action          TEXT    NOT NULL,
    snapshot_hash   TEXT    NOT NULL,
    verified        INTEGER NOT NULL,
    expected_effect TEXT,
    PRIMARY KEY (traj, seq)
) STRICT, WITHOUT ROWID;

-- The token index: one posting per (trajectory, distinct goal token), carrying the columns
-- the candidate filters read, so matching touches only the postings of the query's tokens.
-- A goal without tokens is filed under the empty token. `origin` is '' when unknown.
CREATE TABLE browser_trajectory_tokens (
    scope       TEXT    NOT NULL,
    token       TEXT    NOT NULL,
    origin      TEXT    NOT NULL,
    traj        INTEGER NOT NULL REFERENCES browser_trajectories (id) ON DELETE CASCADE,
    success     INTEGER NOT NULL,
    recorded_at INTEGER,
    token_count INTEGER NOT NULL,
    PRIMARY KEY (scope, token, origin, traj)
) STRICT, WITHOUT ROWID;

CREATE INDEX browser_trajectory_tokens_by_traj ON browser_trajectory_tokens (traj);
CREATE INDEX browser_trajectories_by_age ON browser_trajectories (scope, recorded_at);

CREATE TABLE browser_sites (
    scope                TEXT NOT NULL,
    site                 TEXT NOT NULL,
    label                TEXT NOT NULL,
    knowledge_updated_at TEXT NOT NULL,
    selectors_updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, site)
) STRICT, WITHOUT ROWID;

CREATE TABLE browser_facts (
    scope      TEXT    NOT NULL,
    site       TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    kind       TEXT    NOT NULL,
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    confidence REAL    NOT NULL,
    sources    INTEGER NOT NULL,
    last_seen  TEXT    NOT NULL,
    PRIMARY KEY (scope, site, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE browser_sessions (
    scope       TEXT    NOT NULL,
    site        TEXT    NOT NULL,
    seq         INTEGER NOT NULL,
    id          TEXT    NOT NULL,
    goal        TEXT    NOT NULL,
    outcome     TEXT    NOT NULL,
    success     INTEGER NOT NULL,
    final_url   TEXT    NOT NULL,
    timestamp   TEXT    NOT NULL,
    turns_used  INTEGER NOT NULL,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (scope, site, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE browser_selectors (
    scope           TEXT    NOT NULL,
    site            TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    element         TEXT    NOT NULL,
    last_ref        TEXT,
    stable_selector TEXT,
    success_count   INTEGER NOT NULL,
    last_used       TEXT    NOT NULL,
    PRIMARY KEY (scope, site, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX browser_selectors_by_element ON browser_selectors (scope, site, element);
CREATE INDEX browser_facts_by_key ON browser_facts (scope, site, kind, key);

CREATE TABLE browser_runs (
    scope         TEXT    NOT NULL,
    run_id        TEXT    NOT NULL,
    session_id    TEXT,
    parent_run_id TEXT,
    status        TEXT    NOT NULL,
    goal          TEXT    NOT NULL,
    domain        TEXT    NOT NULL,
    start_url     TEXT,
    current_url   TEXT,
    final_url     TEXT,
    started_at    TEXT    NOT NULL,
    updated_at    TEXT    NOT NULL,
    completed_at  TEXT,
    success       INTEGER,
    summary       TEXT,
    turn_count    INTEGER NOT NULL,
    result        TEXT,
    reason        TEXT,
    PRIMARY KEY (scope, run_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX browser_runs_by_update ON browser_runs (scope, updated_at);

CREATE TABLE browser_run_artifacts (
    scope  TEXT    NOT NULL,
    run_id TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    path   TEXT    NOT NULL,
    PRIMARY KEY (scope, run_id, seq),
    FOREIGN KEY (scope, run_id) REFERENCES browser_runs (scope, run_id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE TABLE browser_hints (
    scope      TEXT NOT NULL PRIMARY KEY,
    hints      TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT, WITHOUT ROWID;

CREATE TABLE browser_suite_summaries (
    scope TEXT NOT NULL,
    id    TEXT NOT NULL,
    json  TEXT NOT NULL,
    PRIMARY KEY (scope, id)
) STRICT, WITHOUT ROWID;
