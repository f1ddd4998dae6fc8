//! The tool_log store traits on PostgreSQL.
