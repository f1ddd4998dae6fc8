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
