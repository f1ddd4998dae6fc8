-- Version 16: each site keeps the log of what its writers taught it, so that a forget by
-- writer can rebuild the site without one writer's observations. `log_base` is the site as
-- it was when its log began (an import, or what it held before logs were kept), encoded;
-- NULL when the site has no log (its row is all there is). Each entry is one observation
-- with its writer, or a forget of the site's knowledge (no writer), in `seq` order.
ALTER TABLE browser_site ADD COLUMN log_base text;

CREATE TABLE browser_site_log (
    scope      text COLLATE "C" NOT NULL,
    site       text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    source     text,
    session    text,
    client     text,
    written_at bigint CHECK ((source IS NULL) = (written_at IS NULL)),
    event      text NOT NULL,
    PRIMARY KEY (scope, site, seq),
    FOREIGN KEY (scope, site) REFERENCES browser_site (scope, site) ON DELETE CASCADE
);

-- A forget by writer names a session most often.
CREATE INDEX browser_site_log_session ON browser_site_log (session);
