-- Version 22: each site keeps the log of what its writers taught it, so that a forget by
-- writer can rebuild the site without one writer's observations. `log_base` is the site as
-- it was when its log began (an import, or what it held before logs were kept), encoded;
-- NULL when the site has no log (its rows are all there is). Each entry is one observation
-- with its writer, or a forget of the site's knowledge (no writer), in `seq` order.
ALTER TABLE browser_sites ADD COLUMN log_base TEXT;

CREATE TABLE browser_site_log (
    scope      TEXT    NOT NULL,
    site       TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    source     TEXT,
    session    TEXT,
    client     TEXT,
    written_at INTEGER CHECK ((source IS NULL) = (written_at IS NULL)),
    event      TEXT    NOT NULL,
    PRIMARY KEY (scope, site, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

-- A forget by writer names a session most often.
CREATE INDEX browser_site_log_session ON browser_site_log (session);
