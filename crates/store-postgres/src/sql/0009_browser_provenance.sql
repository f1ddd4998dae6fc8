-- Version 9: a browser trajectory keeps who stored it (source, session, client, written_at),
-- all NULL for one stored before writers were kept.
ALTER TABLE browser_trajectory ADD COLUMN source text;
ALTER TABLE browser_trajectory ADD COLUMN session text;
ALTER TABLE browser_trajectory ADD COLUMN client text;
ALTER TABLE browser_trajectory ADD COLUMN written_at bigint
    CHECK ((source IS NULL) = (written_at IS NULL));
