//! Integration tests of `recording`.
