-- Version 20: the texts a person vouched for in a memory whose items are positional (a
-- session's tool outputs, a partition's patterns), which that memory's read-time guards
-- show though the write screen flags them. A text is kept as its SHA-256 digest (64
-- lowercase hexadecimal digits), never as text; who vouched is in the audit trail.
CREATE TABLE vouches (
    memory TEXT NOT NULL,
    container TEXT NOT NULL,
    digest TEXT NOT NULL,
    PRIMARY KEY (memory, container, digest)
) WITHOUT ROWID;
