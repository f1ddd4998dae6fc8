-- Version 1: the store's own key-value metadata.
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
