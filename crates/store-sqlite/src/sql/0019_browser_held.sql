-- Version 19: finished runs the write screen held for review (policy `quarantine`), kept
-- aside from every browser table until a reviewer approves (recorded then) or rejects
-- (erased) them. `run` is the run as the browser memory encodes it; `reasons` one per line;
-- `held_at` in milliseconds since the epoch, the writer's time.
CREATE TABLE browser_held (
    scope TEXT NOT NULL,
    id TEXT NOT NULL,
    site TEXT NOT NULL,
    goal TEXT NOT NULL,
    reasons TEXT NOT NULL,
    run TEXT NOT NULL,
    source TEXT NOT NULL,
    source_session TEXT,
    client TEXT,
    held_at INTEGER NOT NULL,
    PRIMARY KEY (scope, id)
);
CREATE INDEX browser_held_by_time ON browser_held (held_at, scope, id);
