//! Reading a file an input names (`trail_path`): never more than [`MAX_FILE_BYTES`], the
//! most a request body may hold, and for the clients of a server only regular files inside
//! the folders the server was started with; and whether an operation may write where an input
//! says (an export's folder, a session log compacted in place).
//!
//! The command line reads and writes the files its user names ([`FileAccess::Any`]); a server
//! reads for clients that may not read the machine's files, so a path from them is confined
//! ([`FileAccess::Within`]): resolved through `..` and symlinks before it is checked, and
//! refused in the same words whether the file exists or not, so a refusal tells nothing about
//! what lies outside. A server writes no file a client names ([`may_write`]).

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::{Error, Result, ResultExt};

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
                return Err(Error::invalid(
                    name.to_string(),
                    format!("cannot allow {name}: it is not a folder"),
                ));
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
        let real = self.resolve_inside(path)?;
        if !real.is_file() {
            let name = path.display().to_string();
            return Err(Error::invalid(
                &name,
                format!("{name} is not a regular file"),
            ));
        }
        Ok(real)
    }

    /// The folder `path` names, resolved, if a client may read the files inside it: a folder
    /// inside the allowed ones (or one of them).
    fn resolve_folder(&self, path: &Path) -> Result<PathBuf> {
        let real = self.resolve_inside(path)?;
        if !real.is_dir() {
            let name = path.display().to_string();
            return Err(Error::invalid(&name, format!("{name} is not a folder")));
        }
        Ok(real)
    }

    /// What `path` names, resolved through `..` and symlinks, if it lies inside the folders.
    fn resolve_inside(&self, path: &Path) -> Result<PathBuf> {
        let name = path.display().to_string();
        if self.folders.is_empty() {
            return Err(Error::invalid(
                &name,
                format!(
                    "{name} is refused: this server reads no file a client names ({})",
                    self.how_to_allow
                ),
            ));
        }
        let refused = || -> Error {
            Error::invalid(
                &name,
                format!(
                    "{name} is refused: it is outside the folders this server reads for its clients ({})",
                    self.how_to_allow
                ),
            )
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
        Ok(real)
    }

    /// Opens `path` for a client, if a client may read it: [`resolve`](Self::resolve)s it,
    /// opens what it resolved to without blocking, and checks the file opened. A component
    /// of the path swapped for a symlink to elsewhere, or the file for a device or pipe,
    /// between the check and the open is refused as the check refuses it.
    fn open(&self, path: &Path) -> Result<std::fs::File> {
        let name = path.display().to_string();
        let real = self.resolve(path)?;
        let file = open_nonblocking(&real).with_context(|| format!("cannot read {name}"))?;
        self.admit(file, &name)
    }

    /// `file`, opened for the path `name`, if it is a regular file inside the folders.
    fn admit(&self, file: std::fs::File, name: &str) -> Result<std::fs::File> {
        if !file
            .metadata()
            .with_context(|| format!("cannot read {name}"))?
            .is_file()
        {
            return Err(Error::invalid(
                name,
                format!("{name} is not a regular file"),
            ));
        }
        if let Some(opened) = opened_path(&file)
            && !self
                .folders
                .iter()
                .any(|(_, folder)| opened.starts_with(folder))
        {
            return Err(Error::invalid(
                name,
                format!(
                    "{name} is refused: it is outside the folders this server reads for its clients ({})",
                    self.how_to_allow
                ),
            ));
        }
        Ok(file)
    }
}

/// `path` opened for reading; on Unix without waiting for a writer (a FIFO) or a carrier.
fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let flags = rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::NOCTTY;
        // Both flags are small positive numbers (0o4000 and 0o400 on Linux).
        options.custom_flags(i32::try_from(flags.bits()).unwrap_or(0));
    }
    options.open(path)
}

/// Where the open `file` is, as the kernel has it (Linux's `/proc/self/fd`); None where the
/// system does not say.
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
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
/// one byte past it. A file that is not there is a `not_found` error about it; failing to
/// open or read it otherwise is the bare I/O error, for the caller to name.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let file = std::fs::File::open(path).map_err(|e| io_error(e, path))?;
    read_bounded_from(file, path)
}

/// The contract's error for failing to reach `path`: `not_found` about it when it is not
/// there, else the bare I/O error, for the caller to name.
fn io_error(error: std::io::Error, path: &Path) -> Error {
    match error.kind() {
        std::io::ErrorKind::NotFound => {
            Error::from(error).with_kind(crate::ErrorKind::NotFound, path.display().to_string())
        }
        _ => Error::from(error),
    }
}

/// [`read_bounded`] of the open `file`, which is `path`.
fn read_bounded_from(file: std::fs::File, path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        let name = path.display().to_string();
        return Err(Error::invalid(
            &name,
            format!("{name} is larger than 4 MiB, the most a file read here may hold"),
        ));
    }
    Ok(bytes)
}

/// [`std::fs::read_to_string`], at most [`MAX_FILE_BYTES`] (see [`read_bounded`]).
pub fn read_string(path: &Path) -> Result<String> {
    utf8(read_bounded(path)?)
}

/// `bytes` as text, else the error [`std::fs::read_to_string`] gives.
fn utf8(bytes: Vec<u8>) -> Result<String> {
    String::from_utf8(bytes).map_err(|_| {
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
    if !std::fs::metadata(path)
        .map_err(|e| io_error(e, path))?
        .is_file()
    {
        let name = path.display().to_string();
        return Err(Error::invalid(
            &name,
            format!("{name} is not a regular file"),
        ));
    }
    Ok(std::fs::read_to_string(path)?)
}

/// The text of the file `path`, if `access` lets it be read, at most [`MAX_FILE_BYTES`]; a
/// UTF-8 byte-order mark is dropped. Errors name the file.
pub fn read_text(path: &Path, access: &FileAccess) -> Result<String> {
    read_file(path, access, &format!("cannot read {}", path.display())).map(without_bom)
}

/// The text of the file `path` as it is (a byte-order mark kept), if `access` lets it be
/// read, at most [`MAX_FILE_BYTES`]; `what` (`trail file x.yaml`) goes in front of an
/// error's message.
pub fn read_file(path: &Path, access: &FileAccess, what: &str) -> Result<String> {
    match access {
        FileAccess::Any => read_string(path),
        FileAccess::Within(confined) => {
            let file = confined.open(path)?;
            read_bounded_from(file, path).and_then(utf8)
        }
    }
    .map_err(|e| {
        let e = e.context(what);
        match e.input() {
            Some(_) => e,
            None => e.about(path.display().to_string()),
        }
    })
}

/// [`read_file`] for a bulk import, whose limits are the store's own (a tool log's value may
/// hold 32 MiB): for [`FileAccess::Any`], the whole of a regular file ([`read_regular`]);
/// a server's clients still read at most [`MAX_FILE_BYTES`].
pub fn read_bulk(path: &Path, access: &FileAccess, what: &str) -> Result<String> {
    match access {
        FileAccess::Any => read_regular(path).context(what),
        FileAccess::Within(_) => read_file(path, access, what),
    }
}

/// `text` without the UTF-8 byte-order mark some editors put at its start.
pub fn without_bom(text: String) -> String {
    match text.strip_prefix('\u{feff}') {
        Some(rest) => rest.to_owned(),
        None => text,
    }
}

/// The folder `path`, for an operation that reads the files inside it (an import of a memory
/// directory), if `access` lets an input name it: as given for [`FileAccess::Any`]; for a
/// server's clients, resolved through `..` and symlinks and only inside the allowed folders,
/// so what is read below it is what was checked. Whether it exists and is a folder is the
/// operation's to say for [`FileAccess::Any`], in its own words.
pub fn folder_to_read(path: &Path, access: &FileAccess) -> Result<PathBuf> {
    match access {
        FileAccess::Any => Ok(path.to_path_buf()),
        FileAccess::Within(confined) => confined.resolve_folder(path),
    }
}

/// Whether an operation may write files at `path` (a file, or a folder it fills), as `access`
/// says: the command line and the language packages write where their user names
/// ([`FileAccess::Any`]); a server writes no file its clients name, inside the folders it
/// reads for them or not.
pub fn may_write(path: &Path, access: &FileAccess) -> Result<()> {
    match access {
        FileAccess::Any => Ok(()),
        FileAccess::Within(_) => {
            let name = path.display().to_string();
            Err(Error::invalid(
                &name,
                format!("{name} is refused: this server writes no file a client names"),
            ))
        }
    }
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

    /// What a path resolved inside the folders but then opened elsewhere (a component swapped
    /// for a symlink between the check and the open) is refused; so is a device or pipe.
    #[cfg(target_os = "linux")]
    #[test]
    fn what_was_opened_is_checked_not_what_the_path_named() {
        let inside = tempfile::tempdir().expect("folder");
        let outside = tempfile::tempdir().expect("folder");
        let confined = Confined::new(&[inside.path().to_path_buf()], "allow it").expect("one");
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "outside").expect("write");
        let kept = inside.path().join("kept.txt");
        std::fs::write(&kept, "inside").expect("write");
        let error = confined
            .admit(std::fs::File::open(&secret).expect("open"), "kept.txt")
            .expect_err("opened outside");
        assert_eq!(
            error.to_string(),
            "kept.txt is refused: it is outside the folders this server reads for its clients (allow it)"
        );
        let error = confined
            .admit(std::fs::File::open("/dev/null").expect("open"), "kept.txt")
            .expect_err("a device");
        assert_eq!(error.to_string(), "kept.txt is not a regular file");
        let text = read_text(&kept, &FileAccess::Within(confined)).expect("inside");
        assert_eq!(text, "inside");
    }

    /// A pipe is opened without waiting for a writer, and refused.
    #[cfg(unix)]
    #[test]
    fn a_pipe_opens_without_blocking() {
        let folder = tempfile::tempdir().expect("folder");
        let pipe = folder.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &pipe,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let file = open_nonblocking(&pipe).expect("opened at once");
        assert!(!file.metadata().expect("metadata").is_file());
    }
}
