//! Integration tests of `trajectory`.
