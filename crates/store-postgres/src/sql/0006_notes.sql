-- Version 6: notes, a tree of text files per scope (the notes memory). A directory is every
-- row whose path lies below it: `path >= 'dir/' AND path < 'dir0'` under the "C" collation
-- (byte order), one range of the primary key. `bytes` is the UTF-8 length of the text.
CREATE TABLE notes (
    scope text   NOT NULL,
    path  text   COLLATE "C" NOT NULL CHECK (length(path) > 0),
    text  text   NOT NULL,
    bytes bigint NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (scope, path)
);
