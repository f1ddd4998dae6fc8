//! The meta store traits on PostgreSQL.
