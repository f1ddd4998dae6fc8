//! The trajectory store traits on PostgreSQL.
