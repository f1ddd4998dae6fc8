//! Reading a file an input names (`trail_path`): never more than [`MAX_FILE_BYTES`], the
//! most a request body may hold, and for the clients of a server only regular files inside
//! the folders the server was started with.
//!
//! The command line reads the files its user names ([`FileAccess::Any`]); a server reads for
//! clients that may not read the machine's files, so a path from them is confined
//! ([`FileAccess::Within`]): resolved through `..` and symlinks before it is checked, and
//! refused in the same words whether the file exists or not, so a refusal tells nothing about
//! what lies outside.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};

use crate::Failure;

/// The most bytes a file an input names may hold: 4 MiB, as a request body.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Which files an operation may read when its input names one.
#[derive(Debug, Clone)]
pub enum FileAccess {
    /// Any file the process may read: the command line, whose user names their own files.
    Any,
    /// Only regular files inside some folders: the clients of a server.
    Within(Confined),
}

/// Folders a server's clients may read files inside; none at all when empty.
#[derive(Debug, Clone)]
pub struct Confined {
    /// Each folder as given (made absolute, `..` resolved) and as resolved on disk.
    folders: Vec<(PathBuf, PathBuf)>,
    /// How a refusal tells the server's user to allow a folder, e.g. "start the server with
    /// --allow-dir DIR".
    how_to_allow: String,
}

impl Confined {
    /// Clients may read files inside `folders` (each must be an existing folder); a refusal
    /// ends with `how_to_allow`.
    pub fn new(folders: &[PathBuf], how_to_allow: impl Into<String>) -> Result<Confined> {
        let mut resolved = Vec::new();
        for folder in folders {
            let name = folder.display();
            let real = folder
                .canonicalize()
                .with_context(|| format!("cannot allow the folder {name}"))?;
            if !real.is_dir() {
                return Err(Failure::invalid(
                    name.to_string(),
                    format!("cannot allow {name}: it is not a folder"),
                )
                .into());
            }
            resolved.push((absolute(folder)?, real));
        }
        Ok(Confined {
            folders: resolved,
            how_to_allow: how_to_allow.into(),
        })
    }

    /// The file `path` names, resolved, if a client may read it.
    fn resolve(&self, path: &Path) -> Result<PathBuf> {
        let name = path.display().to_string();
        if self.folders.is_empty() {
            return Err(Failure::invalid(
                &name,
                format!(
                    "{name} is refused: this server reads no file a client names ({})",
                    self.how_to_allow
                ),
            )
            .into());
        }
        let refused = || -> anyhow::Error {
            Failure::invalid(
                &name,
                format!(
                    "{name} is refused: it is outside the folders this server reads for its clients ({})",
                    self.how_to_allow
                ),
            )
            .into()
        };
        // Outside as written: refused before the file system is asked anything about it.
        let written = absolute(path)?;
        if !self
            .folders
            .iter()
            .any(|(given, real)| written.starts_with(given) || written.starts_with(real))
        {
            return Err(refused());
        }
        let real = path
            .canonicalize()
            .with_context(|| format!("cannot read {name}"))?;
        if !self
            .folders
            .iter()
            .any(|(_, folder)| real.starts_with(folder))
        {
            return Err(refused());
        }
        if !real.is_file() {
            return Err(Failure::invalid(&name, format!("{name} is not a regular file")).into());
        }
        Ok(real)
    }
}

/// `path` made absolute against the working folder, with `.` and `..` resolved as written
/// (without following symlinks).
fn absolute(path: &Path) -> Result<PathBuf> {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir()
            .context("reading the working folder")?
            .join(path),
    };
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    Ok(normal)
}

/// The bytes of `path`, at most [`MAX_FILE_BYTES`] of them: a longer file (or a device that
/// never ends) is an `invalid_input` error naming the file and the limit, found after reading
/// one byte past it. Failing to open or read is the bare I/O error, for the caller to name.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let name = path.display().to_string();
        return Err(Failure::invalid(
            &name,
            format!("{name} is larger than 4 MiB, the most a file read here may hold"),
        )
        .into());
    }
    Ok(bytes)
}

/// [`std::fs::read_to_string`], at most [`MAX_FILE_BYTES`] (see [`read_bounded`]).
pub fn read_string(path: &Path) -> Result<String> {
    String::from_utf8(read_bounded(path)?).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
        .into()
    })
}

/// [`std::fs::read_to_string`] of a regular file, whole: for the bulk imports of the command
/// line, whose limits are the store's own (a tool log's value may hold 32 MiB), but never a
/// device or pipe that would be read without end.
pub fn read_regular(path: &Path) -> Result<String> {
    if !std::fs::metadata(path)?.is_file() {
        let name = path.display().to_string();
        return Err(Failure::invalid(&name, format!("{name} is not a regular file")).into());
    }
    Ok(std::fs::read_to_string(path)?)
}

/// The text of the file `path`, if `access` lets it be read, at most [`MAX_FILE_BYTES`]; a
/// UTF-8 byte-order mark is dropped. Errors name the file.
pub fn read_text(path: &Path, access: &FileAccess) -> Result<String> {
    let resolved = match access {
        FileAccess::Any => path.to_path_buf(),
        FileAccess::Within(confined) => confined.resolve(path)?,
    };
    let text = read_string(&resolved).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_without_end_fails_at_the_limit() {
        let error = read_bounded(Path::new("/dev/zero")).expect_err("too long");
        assert_eq!(
            error.to_string(),
            "/dev/zero is larger than 4 MiB, the most a file read here may hold"
        );
    }

    #[test]
    fn paths_are_made_absolute_as_written() {
        assert_eq!(
            absolute(Path::new("/a/b/../c/./d")).expect("absolute"),
            PathBuf::from("/a/c/d")
        );
        assert_eq!(
            absolute(Path::new("/a/../../etc")).expect("absolute"),
            PathBuf::from("/etc")
        );
    }

    #[test]
    fn no_folder_allowed_reads_nothing() {
        let confined = Confined::new(&[], "start it with --allow-dir DIR").expect("none");
        let error = read_text(Path::new("/etc/hostname"), &FileAccess::Within(confined))
            .expect_err("refused");
        assert_eq!(
            error.to_string(),
            "/etc/hostname is refused: this server reads no file a client names (start it with --allow-dir DIR)"
        );
    }
}
