-- Version 8: notes as evidence. Each note's row is its newest version, with who wrote it
-- (source, session, client, written_at) and what the write screen found (status, reasons);
-- its older versions are rows of `note_versions`, which go with the note when it is deleted
-- (they refer to the note's `id`, so a rename moves them without touching them). A note whose
-- newest version is `quarantined` is held for review: the reads leave it out. Notes written
-- before this version are version 1, by `unknown`, at their scope's last write.
ALTER TABLE notes ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE notes ADD CONSTRAINT notes_id_key UNIQUE (id);
ALTER TABLE notes ADD COLUMN version bigint NOT NULL DEFAULT 1 CHECK (version >= 1);
ALTER TABLE notes ADD COLUMN source text NOT NULL DEFAULT 'unknown';
ALTER TABLE notes ADD COLUMN session text;
ALTER TABLE notes ADD COLUMN client text;
ALTER TABLE notes ADD COLUMN written_at bigint NOT NULL DEFAULT 0;
ALTER TABLE notes ADD COLUMN status text NOT NULL DEFAULT 'clean'
    CHECK (status IN ('clean', 'flagged', 'quarantined', 'approved'));
ALTER TABLE notes ADD COLUMN reasons text[] NOT NULL DEFAULT '{}';

UPDATE notes n SET written_at = w.last_write FROM note_writes w WHERE w.scope = n.scope;

-- The review queue: only held notes are in it, in the order it is listed.
CREATE INDEX notes_held ON notes (scope COLLATE "C", path) WHERE status = 'quarantined';

CREATE TABLE note_versions (
    note_id    bigint NOT NULL REFERENCES notes (id) ON DELETE CASCADE,
    version    bigint NOT NULL CHECK (version >= 1),
    text       text   NOT NULL,
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    source     text   NOT NULL,
    session    text,
    client     text,
    written_at bigint NOT NULL,
    status     text   NOT NULL
        CHECK (status IN ('clean', 'flagged', 'quarantined', 'approved')),
    reasons    text[] NOT NULL,
    PRIMARY KEY (note_id, version)
);

-- The audit trail: every write, review and forget, with who and when; never an item's text.
-- Writers take an advisory lock before appending (see `src/notes.rs`), so `seq` grows in the
-- order the entries commit and a reader paging past a `seq` misses none.
CREATE TABLE audit (
    seq     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      bigint NOT NULL,
    action  text   NOT NULL,
    memory  text   NOT NULL,
    scope   text   NOT NULL,
    item    text   NOT NULL,
    source  text   NOT NULL,
    session text,
    client  text,
    detail  text   NOT NULL
);
