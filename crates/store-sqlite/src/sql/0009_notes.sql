-- Version 9: notes, a tree of text files per scope (the notes memory).
--
-- A note is a row keyed by (scope, path); a directory is every row whose path lies below it,
-- so `path >= 'dir/' AND path < 'dir0'` is one range of the unique index. `bytes` is the
-- UTF-8 length of the text, kept so the scope totals need not read the texts.
CREATE TABLE notes (
    id    INTEGER PRIMARY KEY,
    scope TEXT    NOT NULL,
    path  TEXT    NOT NULL CHECK (length(path) > 0),
    text  TEXT    NOT NULL,
    bytes INTEGER NOT NULL CHECK (bytes >= 0),
    UNIQUE (scope, path)
) STRICT;

-- Each scope's number of notes and their bytes, kept by the triggers below in the same
-- transaction as the write, so a write checks a scope's limits without scanning it.
CREATE TABLE note_scopes (
    scope TEXT    PRIMARY KEY,
    notes INTEGER NOT NULL CHECK (notes >= 0),
    bytes INTEGER NOT NULL CHECK (bytes >= 0)
) STRICT, WITHOUT ROWID;

-- Keyword search: a trigram index over the texts (FTS5, external content), so a term of three
-- characters or more finds its candidate notes without reading every text.
CREATE VIRTUAL TABLE notes_search USING fts5(
    text,
    content = 'notes',
    content_rowid = 'id',
    tokenize = 'trigram'
);

CREATE TRIGGER notes_after_insert AFTER INSERT ON notes BEGIN
    INSERT INTO notes_search (rowid, text) VALUES (new.id, new.text);
    INSERT OR IGNORE INTO note_scopes (scope, notes, bytes) VALUES (new.scope, 0, 0);
    UPDATE note_scopes SET notes = notes + 1, bytes = bytes + new.bytes WHERE scope = new.scope;
END;

CREATE TRIGGER notes_after_delete AFTER DELETE ON notes BEGIN
    INSERT INTO notes_search (notes_search, rowid, text) VALUES ('delete', old.id, old.text);
    UPDATE note_scopes SET notes = notes - 1, bytes = bytes - old.bytes WHERE scope = old.scope;
    DELETE FROM note_scopes WHERE scope = old.scope AND notes = 0;
END;

CREATE TRIGGER notes_after_update_text AFTER UPDATE OF text ON notes BEGIN
    INSERT INTO notes_search (notes_search, rowid, text) VALUES ('delete', old.id, old.text);
    INSERT INTO notes_search (rowid, text) VALUES (new.id, new.text);
    UPDATE note_scopes SET bytes = bytes - old.bytes + new.bytes WHERE scope = new.scope;
END;
