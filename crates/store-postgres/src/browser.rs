//! The browser store traits on PostgreSQL.
