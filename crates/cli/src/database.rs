//! Opening the database a command works on.

use std::path::Path;

use agent_memory_sqlite::SqliteStore;
use anyhow::{Context, Result, bail};

/// Opens (creating if needed) the database at `path`, and its folder first.
pub(crate) fn open(path: &Path) -> Result<SqliteStore> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if folder.exists() && !folder.is_dir() {
            bail!(
                "{} is a file, so the database {} cannot be created inside it",
                folder.display(),
                path.display()
            );
        }
        std::fs::create_dir_all(folder).with_context(|| {
            format!(
                "cannot create folder {} for the database {}",
                folder.display(),
                path.display()
            )
        })?;
    }
    // The store's own error names the file and what is wrong with it.
    Ok(SqliteStore::open(path)?)
}

/// Opens the existing database at `path` for reading only: a read never creates, migrates or
/// writes the file. A missing file is an error naming it.
pub(crate) fn open_existing(path: &Path) -> Result<SqliteStore> {
    must_exist(path)?;
    Ok(SqliteStore::open_read_only(path)?)
}

/// Opens the existing database at `path` for a change that only makes sense on a database
/// that holds something (forgetting): a missing file is an error naming it, not a new file.
pub(crate) fn open_existing_for_writing(path: &Path) -> Result<SqliteStore> {
    must_exist(path)?;
    Ok(SqliteStore::open(path)?)
}

fn must_exist(path: &Path) -> Result<()> {
    if !path.exists() {
        return Err(crate::ops::Failure::not_found(
            path.display().to_string(),
            format!(
                "database {} does not exist (check --db or AGENT_MEMORY_DB)",
                path.display()
            ),
        )
        .into());
    }
    Ok(())
}
