-- Version 2: tool logs of agent sessions, each with an optional memory snapshot.
-- `seq` is the append order. A sensitive snapshot entry has no value column to fill:
-- the CHECK makes a stored secret impossible, not merely unlikely.
CREATE TABLE tool_logs (
    seq          INTEGER PRIMARY KEY,
    session      TEXT    NOT NULL,
    tool_name    TEXT    NOT NULL,
    parameters   TEXT    NOT NULL,
    success      INTEGER NOT NULL CHECK (success IN (0, 1)),
    error        TEXT,
    duration_ms  INTEGER NOT NULL CHECK (duration_ms >= 0),
    timestamp    INTEGER NOT NULL,
    trace_id     TEXT,
    has_snapshot INTEGER NOT NULL CHECK (has_snapshot IN (0, 1))
) STRICT;

CREATE INDEX tool_logs_by_session ON tool_logs (session, seq);

CREATE TABLE tool_log_memory (
    log_seq        INTEGER NOT NULL REFERENCES tool_logs (seq) ON DELETE CASCADE,
    key            TEXT    NOT NULL,
    value          TEXT,
    sensitive      INTEGER NOT NULL CHECK (sensitive IN (0, 1)),
    written_by     TEXT,
    written_at     INTEGER,
    existed_before INTEGER NOT NULL CHECK (existed_before IN (0, 1)),
    PRIMARY KEY (log_seq, key),
    CHECK ((sensitive = 1 AND value IS NULL) OR (sensitive = 0 AND value IS NOT NULL))
) STRICT, WITHOUT ROWID;
