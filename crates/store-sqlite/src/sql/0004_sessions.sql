-- Version 4: append-only session event logs, one ordered list of events per session.
CREATE TABLE session_events (
    session TEXT    NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    kind    TEXT    NOT NULL CHECK (length(kind) > 0),
    payload TEXT    NOT NULL,
    PRIMARY KEY (session, seq)
) STRICT, WITHOUT ROWID;
