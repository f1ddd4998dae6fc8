-- Version 4: append-only session event logs, one ordered list of events per session.
CREATE TABLE session_events (
    session text   NOT NULL,
    seq     bigint NOT NULL CHECK (seq >= 0),
    kind    text   NOT NULL CHECK (length(kind) > 0),
    payload text   NOT NULL,
    PRIMARY KEY (session, seq)
);
