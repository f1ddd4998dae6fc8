-- Version 8: the appendable end of each posting list in a table of its own.
--
-- A merge of the pending list appended to the last block of every (scope, token, origin) it
-- touched. Blocks are one to two and a half KiB, so every touched key cost a page of its own:
-- about 600 WAL pages per merge of 512 postings among 100,000 trajectories. Now each key's
-- newest postings (fewer than 32) live in a small tail row, about a dozen to a page, and a
-- tail that reaches 32 postings is written out as a new block, which is never appended to
-- again. Existing blocks stay as they are.

CREATE TABLE browser_token_tails (
    scope    TEXT NOT NULL,
    token    TEXT NOT NULL,
    origin   TEXT NOT NULL,
    postings BLOB NOT NULL,
    PRIMARY KEY (scope, token, origin)
) STRICT, WITHOUT ROWID;
