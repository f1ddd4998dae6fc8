-- Version 5: the browser agent's memory, every row scoped. Lists that belong to one record
-- (a trajectory's steps, a site's facts, sessions and selectors, a run's artifacts) are held
-- as parallel arrays in its row, so a record is read and written in one statement. Keys that
-- are listed in order use the "C" collation: byte order, which is the order of Rust strings,
-- whatever the database's locale.

-- Trajectories. `id` is the order they were first stored (a replacement keeps it). The
-- steps' fields are parallel arrays, one element per step.
CREATE TABLE browser_trajectory (
    id             bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    scope          text    COLLATE "C" NOT NULL,
    traj_id        text    COLLATE "C" NOT NULL,
    goal           text    NOT NULL,
    origin         text,
    success        boolean NOT NULL,
    duration_ms    bigint  NOT NULL CHECK (duration_ms >= 0),
    model          text    NOT NULL,
    timestamp      text    NOT NULL,
    recorded_at    bigint,
    token_count    integer NOT NULL CHECK (token_count >= 0),
    step_url       text[]    NOT NULL,
    step_action    text[]    NOT NULL,
    step_hash      text[]    NOT NULL,
    step_verified  boolean[] NOT NULL,
    step_effect    text[]    NOT NULL,
    UNIQUE (scope, traj_id),
    CHECK (cardinality(step_action) = cardinality(step_url)
       AND cardinality(step_hash) = cardinality(step_url)
       AND cardinality(step_verified) = cardinality(step_url)
       AND cardinality(step_effect) = cardinality(step_url))
);
CREATE INDEX browser_trajectory_by_age ON browser_trajectory (scope, recorded_at);
CREATE INDEX browser_trajectory_by_origin ON browser_trajectory (scope, origin);

-- The token index: one row per (trajectory, distinct goal token), so matching reads only
-- the postings of the query's tokens. A goal without tokens is filed under the empty token.
CREATE TABLE browser_trajectory_token (
    scope text   COLLATE "C" NOT NULL,
    token text   COLLATE "C" NOT NULL,
    traj  bigint NOT NULL REFERENCES browser_trajectory (id) ON DELETE CASCADE,
    PRIMARY KEY (scope, token, traj)
);
CREATE INDEX browser_trajectory_token_by_traj ON browser_trajectory_token (traj);

-- What a scope knows about a site: facts in first-seen order, sessions in log order,
-- selectors in insertion order, each list as parallel arrays.
CREATE TABLE browser_site (
    scope                  text COLLATE "C" NOT NULL,
    site                   text COLLATE "C" NOT NULL,
    label                  text NOT NULL,
    knowledge_updated_at   text NOT NULL,
    selectors_updated_at   text NOT NULL,
    fact_kind              text[]   NOT NULL,
    fact_key               text[]   NOT NULL,
    fact_value             text[]   NOT NULL,
    fact_confidence        double precision[] NOT NULL,
    fact_sources           bigint[] NOT NULL,
    fact_last_seen         text[]   NOT NULL,
    session_id             text[]    NOT NULL,
    session_goal           text[]    NOT NULL,
    session_outcome        text[]    NOT NULL,
    session_success        boolean[] NOT NULL,
    session_final_url      text[]    NOT NULL,
    session_timestamp      text[]    NOT NULL,
    session_turns_used     bigint[]  NOT NULL,
    session_duration_ms    bigint[]  NOT NULL,
    selector_element       text[]   NOT NULL,
    selector_last_ref      text[]   NOT NULL,
    selector_stable        text[]   NOT NULL,
    selector_success_count bigint[] NOT NULL,
    selector_last_used     text[]   NOT NULL,
    PRIMARY KEY (scope, site),
    CHECK (fact_kind <@ ARRAY['timing', 'selector', 'pattern', 'quirk']::text[]),
    CHECK (cardinality(fact_key) = cardinality(fact_kind)
       AND cardinality(fact_value) = cardinality(fact_kind)
       AND cardinality(fact_confidence) = cardinality(fact_kind)
       AND cardinality(fact_sources) = cardinality(fact_kind)
       AND cardinality(fact_last_seen) = cardinality(fact_kind)),
    CHECK (cardinality(session_goal) = cardinality(session_id)
       AND cardinality(session_outcome) = cardinality(session_id)
       AND cardinality(session_success) = cardinality(session_id)
       AND cardinality(session_final_url) = cardinality(session_id)
       AND cardinality(session_timestamp) = cardinality(session_id)
       AND cardinality(session_turns_used) = cardinality(session_id)
       AND cardinality(session_duration_ms) = cardinality(session_id)),
    CHECK (cardinality(selector_last_ref) = cardinality(selector_element)
       AND cardinality(selector_stable) = cardinality(selector_element)
       AND cardinality(selector_success_count) = cardinality(selector_element)
       AND cardinality(selector_last_used) = cardinality(selector_element))
);

-- Run manifests; listed newest `updated_at` first, ties by run id.
CREATE TABLE browser_run (
    scope          text COLLATE "C" NOT NULL,
    run_id         text COLLATE "C" NOT NULL,
    session_id     text,
    parent_run_id  text,
    status         text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
    goal           text NOT NULL,
    domain         text NOT NULL,
    start_url      text,
    current_url    text,
    final_url      text,
    started_at     text NOT NULL,
    updated_at     text COLLATE "C" NOT NULL,
    completed_at   text,
    success        boolean,
    summary        text,
    artifact_paths text[] NOT NULL,
    turn_count     bigint NOT NULL CHECK (turn_count >= 0),
    result         text,
    reason         text,
    PRIMARY KEY (scope, run_id)
);
CREATE INDEX browser_run_newest ON browser_run (scope, updated_at DESC, run_id);
CREATE INDEX browser_run_by_domain ON browser_run (scope, domain);

CREATE TABLE browser_hints (
    scope      text COLLATE "C" PRIMARY KEY,
    hints      text NOT NULL,
    updated_at text NOT NULL
);

CREATE TABLE browser_suite_summary (
    scope text COLLATE "C" NOT NULL,
    id    text COLLATE "C" NOT NULL,
    json  text NOT NULL,
    PRIMARY KEY (scope, id)
);
