//! Integration tests of `turn-memory`.
