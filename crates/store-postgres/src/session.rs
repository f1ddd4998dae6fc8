//! The session store traits on PostgreSQL.
