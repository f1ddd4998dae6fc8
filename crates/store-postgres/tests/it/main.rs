//! Integration tests of `store-postgres` against a real server.
