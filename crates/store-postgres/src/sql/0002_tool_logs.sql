-- Version 2: tool logs of agent sessions, each with an optional memory snapshot.
-- `seq` is the append order. A sensitive snapshot entry has no value to fill: the CHECK
-- makes a stored secret impossible, not merely unlikely.
CREATE TABLE tool_logs (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session      text    NOT NULL,
    tool_name    text    NOT NULL,
    parameters   text    NOT NULL,
    success      boolean NOT NULL,
    error        text,
    duration_ms  bigint  NOT NULL CHECK (duration_ms >= 0),
    timestamp    bigint  NOT NULL,
    trace_id     text,
    has_snapshot boolean NOT NULL
);

CREATE INDEX tool_logs_by_session ON tool_logs (session, seq);

CREATE TABLE tool_log_memory (
    log_seq        bigint  NOT NULL REFERENCES tool_logs (seq) ON DELETE CASCADE,
    key            text    NOT NULL,
    value          text,
    sensitive      boolean NOT NULL,
    written_by     text,
    written_at     bigint,
    existed_before boolean NOT NULL,
    PRIMARY KEY (log_seq, key),
    CHECK ((sensitive AND value IS NULL) OR (NOT sensitive AND value IS NOT NULL))
);
