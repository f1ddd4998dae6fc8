-- Version 22: each site keeps the log of what its writers taught it, so that a forget by
-- writer can rebuild the site without one writer's observations. `browser_site_base` holds
-- the site as it was when its log began (an import, or what it held before logs were kept),
-- encoded; a site without a row there has no log (its rows are all there is). The base is a
-- table of its own so that the site's row, rewritten by every observation, stays small.
-- Each entry of `browser_site_log` is one observation with its writer, or a forget of the
-- site's knowledge (no writer), in `seq` order.
CREATE TABLE browser_site_base (
    scope TEXT NOT NULL,
    site  TEXT NOT NULL,
    base  TEXT NOT NULL,
    PRIMARY KEY (scope, site),
    FOREIGN KEY (scope, site) REFERENCES browser_sites (scope, site) ON DELETE CASCADE
) STRICT;

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
