-- Version 13: finished runs the write screen held for review (policy `quarantine`), kept
-- aside from every browser table until a reviewer approves (recorded then) or rejects
-- (erased) them. `run` is the run as the browser memory encodes it; `reasons` one per line;
-- `held_at` in milliseconds since the epoch, the writer's time.
CREATE TABLE browser_held (
    scope text NOT NULL,
    id text NOT NULL,
    site text NOT NULL,
    goal text NOT NULL,
    reasons text NOT NULL,
    run text NOT NULL,
    source text NOT NULL,
    source_session text,
    client text,
    held_at bigint NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE INDEX browser_held_by_time ON browser_held (held_at, scope, id);
