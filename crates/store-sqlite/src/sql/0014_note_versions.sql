-- Version 14: notes as evidence. Each note's row is its newest version, with who wrote it
-- (source, session, client, written_at) and what the write screen found (status, reasons: an
-- encoded list); its older versions are rows of `note_versions`, which go with the note when
-- it is deleted. A note whose newest version is `quarantined` is held for review: the reads
-- leave it out. Notes written before this version are version 1, by `unknown`, at their
-- scope's last write.
ALTER TABLE notes ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1);
ALTER TABLE notes ADD COLUMN source TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE notes ADD COLUMN session TEXT;
ALTER TABLE notes ADD COLUMN client TEXT;
ALTER TABLE notes ADD COLUMN written_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE notes ADD COLUMN status TEXT NOT NULL DEFAULT 'clean'
    CHECK (status IN ('clean', 'flagged', 'quarantined', 'approved'));
ALTER TABLE notes ADD COLUMN reasons TEXT NOT NULL DEFAULT '';

UPDATE notes SET written_at = coalesce(
    (SELECT last_write FROM note_scopes s WHERE s.scope = notes.scope), 0);

-- The review queue: only held notes are in it.
CREATE INDEX notes_held ON notes (scope, path) WHERE status = 'quarantined';

CREATE TABLE note_versions (
    note_id    INTEGER NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL CHECK (version >= 1),
    text       TEXT    NOT NULL,
    source     TEXT    NOT NULL,
    session    TEXT,
    client     TEXT,
    written_at INTEGER NOT NULL,
    status     TEXT    NOT NULL
        CHECK (status IN ('clean', 'flagged', 'quarantined', 'approved')),
    reasons    TEXT    NOT NULL,
    PRIMARY KEY (note_id, version)
) STRICT, WITHOUT ROWID;

-- The audit trail: every write, review and forget, with who and when; never an item's text.
CREATE TABLE audit (
    seq     INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    action  TEXT    NOT NULL,
    memory  TEXT    NOT NULL,
    scope   TEXT    NOT NULL,
    item    TEXT    NOT NULL,
    source  TEXT    NOT NULL,
    session TEXT,
    client  TEXT,
    detail  TEXT    NOT NULL
) STRICT;
