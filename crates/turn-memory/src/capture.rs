//! Capture: the accumulator that turns one turn's tool-end events into a [`TurnMemory`].
//!
//! Memory comes from what tools did, never from what the model wrote, so no text the model
//! produces can forge or hide it. Capture reads each event's input and exit code and never
//! its output: outputs are neither parsed nor copied.

use std::borrow::Cow;

use serde_json::Value;

use crate::error::{Error, Result};
use crate::memory::{DangerousCommand, FailedCommand, TurnMemory};

/// A tool call that finished: what the agent loop reports after each tool returns.
#[derive(Debug, Clone, Copy)]
pub struct ToolEnd<'a> {
    /// The tool's name, e.g. `"edit_file"`.
    pub tool: &'a str,
    /// The arguments the model passed (a JSON object).
    pub input: &'a Value,
    /// What the tool returned. Capture never reads it; it is here so that one event type
    /// serves the agent loop, the history and capture.
    pub output: &'a str,
    /// Whether the tool reported an error (a write that failed, a command that could not run).
    pub is_error: bool,
    /// A shell command's exit code, when it ran to completion.
    pub exit_code: Option<i32>,
}

/// Which tools count as writes, edits and shell commands, and where to find their arguments.
/// Validate it once with [`CaptureRules::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureConfig {
    /// The workspace root, an absolute `/`-separated path. Absolute paths under it are made
    /// relative to it; relative paths are taken as relative to it already.
    pub workspace_root: String,
    /// Tools that write a file (default `write_file`).
    pub write_tools: Vec<String>,
    /// Tools that edit a file (default `edit_file`).
    pub edit_tools: Vec<String>,
    /// Tools that run a shell command (default `bash`).
    pub shell_tools: Vec<String>,
    /// The input field of write and edit tools holding the path, or an array of paths
    /// (default `path`).
    pub path_field: String,
    /// The input field of shell tools holding the command (default `command`).
    pub command_field: String,
    /// The input field of shell tools the model sets to `true` for a dangerous command
    /// (default `is_dangerous`).
    pub dangerous_field: String,
    /// Whether to keep dangerous-flagged commands even when they succeed (default off).
    pub keep_dangerous: bool,
}

impl CaptureConfig {
    /// The default tool names (`write_file`, `edit_file`, `bash`) for a workspace at `root`.
    pub fn new(workspace_root: impl Into<String>) -> Self {
        CaptureConfig {
            workspace_root: workspace_root.into(),
            write_tools: vec!["write_file".to_owned()],
            edit_tools: vec!["edit_file".to_owned()],
            shell_tools: vec!["bash".to_owned()],
            path_field: "path".to_owned(),
            command_field: "command".to_owned(),
            dangerous_field: "is_dangerous".to_owned(),
            keep_dangerous: false,
        }
    }
}

/// What a tool is to capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolRole {
    File,
    Shell,
}

/// A validated [`CaptureConfig`].
#[derive(Debug, Clone)]
pub struct CaptureRules {
    /// The root without its trailing slash (`""` for `/`), for prefix tests.
    root: String,
    /// `(tool name, role)`; a handful of entries, so a linear scan beats hashing.
    tools: Vec<(String, ToolRole)>,
    path_field: String,
    command_field: String,
    dangerous_field: String,
    keep_dangerous: bool,
}

impl CaptureRules {
    /// Validates `config`, reporting every problem at once.
    pub fn new(config: CaptureConfig) -> Result<Self> {
        let mut problems = Vec::new();
        let root = config.workspace_root.trim_end_matches('/');
        if !config.workspace_root.starts_with('/') {
            problems.push(format!(
                "workspace_root {:?} must be an absolute path",
                config.workspace_root
            ));
        } else if !root.is_empty() && !is_clean(&root[1..]) {
            problems.push(format!(
                "workspace_root {:?} must be normalized (no `.`, `..` or empty segments)",
                config.workspace_root
            ));
        }
        let mut tools: Vec<(String, ToolRole)> = Vec::new();
        for (field, names, role) in [
            ("write_tools", &config.write_tools, ToolRole::File),
            ("edit_tools", &config.edit_tools, ToolRole::File),
            ("shell_tools", &config.shell_tools, ToolRole::Shell),
        ] {
            for name in names {
                if name.is_empty() {
                    problems.push(format!("{field} holds an empty tool name"));
                } else if tools.iter().any(|(n, r)| n == name && *r != role) {
                    problems.push(format!(
                        "tool {name:?} in {field} also counts as a file tool and a shell tool"
                    ));
                } else if !tools.iter().any(|(n, _)| n == name) {
                    tools.push((name.clone(), role));
                }
            }
        }
        for (field, value) in [
            ("path_field", &config.path_field),
            ("command_field", &config.command_field),
            ("dangerous_field", &config.dangerous_field),
        ] {
            if value.is_empty() {
                problems.push(format!("{field} must not be empty"));
            }
        }
        if !problems.is_empty() {
            return Err(Error::InvalidConfig { problems });
        }
        Ok(CaptureRules {
            root: root.to_owned(),
            tools,
            path_field: config.path_field,
            command_field: config.command_field,
            dangerous_field: config.dangerous_field,
            keep_dangerous: config.keep_dangerous,
        })
    }

    /// The default rules for a workspace at `root`.
    pub fn for_workspace(root: impl Into<String>) -> Result<Self> {
        CaptureRules::new(CaptureConfig::new(root))
    }

    /// A fresh accumulator for one turn.
    pub fn start_turn(&self) -> TurnCapture<'_> {
        TurnCapture {
            rules: self,
            memory: TurnMemory::default(),
        }
    }

    fn role(&self, tool: &str) -> Option<ToolRole> {
        // Lengths first: a tool name of another length costs one comparison, not a call.
        self.tools
            .iter()
            .find(|(name, _)| name.len() == tool.len() && name.as_bytes() == tool.as_bytes())
            .map(|(_, role)| *role)
    }

    /// `path` relative to the workspace root and normalized, borrowed when it already is;
    /// `None` for an empty path or the root itself.
    pub fn relative_path<'p>(&self, path: &'p str) -> Option<Cow<'p, str>> {
        let Some(absolute) = path.strip_prefix('/') else {
            return normalize_relative(path);
        };
        if is_clean(absolute) {
            return match path
                .strip_prefix(self.root.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
            {
                Some("") => None,
                Some(rest) => Some(Cow::Borrowed(rest)),
                None if path == self.root => None,
                None => Some(Cow::Borrowed(path)),
            };
        }
        // `..` cannot climb above `/`, so an absolute path normalizes without leading `..`.
        let normal = normalize_relative(absolute)?;
        let mut normal = normal.as_ref();
        while let Some(rest) = normal.strip_prefix("../") {
            normal = rest;
        }
        if normal.is_empty() || normal == ".." {
            return None;
        }
        let root = self.root.trim_start_matches('/');
        if root.is_empty() {
            return Some(Cow::Owned(normal.to_owned()));
        }
        match normal.strip_prefix(root) {
            Some("") => None,
            Some(rest) if rest.starts_with('/') => Some(Cow::Owned(rest[1..].to_owned())),
            _ => Some(Cow::Owned(format!("/{normal}"))),
        }
    }
}

/// Whether a relative path has no empty, `.` or `..` segment.
fn is_clean(path: &str) -> bool {
    // One pass over the bytes: cheaper than splitting and comparing segment strings.
    let bytes = path.as_bytes();
    if bytes.is_empty() {
        return false;
    }
    let mut start = 0;
    for end in 0..=bytes.len() {
        if end == bytes.len() || bytes[end] == b'/' {
            if matches!(&bytes[start..end], b"" | b"." | b"..") {
                return false;
            }
            start = end + 1;
        }
    }
    true
}

/// Lexically normalizes a relative path: drops empty and `.` segments, resolves `..` against
/// the segment before it, keeps leading `..` that climb above the root. Borrows when the path
/// is already clean.
fn normalize_relative(path: &str) -> Option<Cow<'_, str>> {
    if is_clean(path) {
        return Some(Cow::Borrowed(path));
    }
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." if segments.last().is_some_and(|s| *s != "..") => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    (!segments.is_empty()).then(|| Cow::Owned(segments.join("/")))
}

/// The accumulator of one turn: feed it every tool-end event, then [`finish`](Self::finish).
///
/// An interrupted turn simply finishes early: what was captured so far is kept.
#[derive(Debug, Clone)]
pub struct TurnCapture<'r> {
    rules: &'r CaptureRules,
    memory: TurnMemory,
}

impl TurnCapture<'_> {
    /// Takes one tool-end event into account.
    pub fn observe(&mut self, event: &ToolEnd<'_>) {
        match self.rules.role(event.tool) {
            Some(ToolRole::File) if !event.is_error => self.observe_file(event.input),
            Some(ToolRole::Shell) => self.observe_shell(event),
            // Read-only and unknown tools change nothing; a failed write wrote nothing.
            _ => {}
        }
    }

    fn observe_file(&mut self, input: &Value) {
        match input.get(&self.rules.path_field) {
            Some(Value::String(path)) => self.add_file(path),
            Some(Value::Array(paths)) => {
                for path in paths.iter().filter_map(Value::as_str) {
                    self.add_file(path);
                }
            }
            _ => {}
        }
    }

    fn add_file(&mut self, path: &str) {
        let Some(path) = self.rules.relative_path(path) else {
            return;
        };
        // Turns touch few files: a linear scan is faster than hashing and allocates only for
        // a path not seen yet.
        if !self
            .memory
            .files_changed
            .iter()
            .any(|f| f.as_str() == path.as_ref())
        {
            self.memory.files_changed.push(path.into_owned());
        }
    }

    fn observe_shell(&mut self, event: &ToolEnd<'_>) {
        let Some(command) = event
            .input
            .get(&self.rules.command_field)
            .and_then(Value::as_str)
        else {
            return;
        };
        if let Some(exit_code) = event.exit_code.filter(|code| *code != 0) {
            self.memory.failed_commands.push(FailedCommand {
                command: command.to_owned(),
                exit_code,
            });
        }
        let dangerous = self.rules.keep_dangerous
            && event.input.get(&self.rules.dangerous_field) == Some(&Value::Bool(true));
        if dangerous {
            self.memory.dangerous_commands.push(DangerousCommand {
                command: command.to_owned(),
                exit_code: event.exit_code,
            });
        }
    }

    /// What has been captured so far.
    pub fn memory(&self) -> &TurnMemory {
        &self.memory
    }

    /// The turn's memory, or `None` when it retained nothing.
    pub fn finish(self) -> Option<TurnMemory> {
        (!self.memory.is_empty()).then_some(self.memory)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(root: &str, path: &str, expected: Option<&str>) {
        let rules = CaptureRules::for_workspace(root).expect("valid rules");
        assert_eq!(
            rules.relative_path(path).as_deref(),
            expected,
            "{path:?} under {root:?}"
        );
    }

    #[test]
    fn paths_are_relative_and_normalized() {
        check("/w", "src/a.rs", Some("src/a.rs"));
        check("/w", "./a/../b.rs", Some("b.rs"));
        check("/w", "src//lib.rs", Some("src/lib.rs"));
        check("/w", "src/./x/", Some("src/x"));
        check("/w", "/w/src/a.rs", Some("src/a.rs"));
        check("/w/", "/w/src/a.rs", Some("src/a.rs"));
        check("/w", "/w/./src/../src/a.rs", Some("src/a.rs"));
        check("/w", "/wx/a.rs", Some("/wx/a.rs"));
        check("/w", "/other/../w/a.rs", Some("a.rs"));
        check("/w", "/etc/passwd", Some("/etc/passwd"));
        check("/w", "/../../w/a.rs", Some("a.rs"));
        check("/w", "../sibling/a.rs", Some("../sibling/a.rs"));
        check("/w", "a/../../b", Some("../b"));
        check("/w", "", None);
        check("/w", ".", None);
        check("/w", "/w", None);
        check("/w", "/w/", None);
        check("/", "/a/b", Some("a/b"));
        check("/", "/a/../b", Some("b"));
        check("/a/b", "/a/b/c/d.rs", Some("c/d.rs"));
        check("/w", "/x", Some("/x"));
        check("/w", "/..", None);
        check("/w", "/../..foo/a", Some("/..foo/a"));
        check("/w", "..foo/a", Some("..foo/a"));
    }

    #[test]
    fn clean_paths_are_borrowed() {
        let rules = CaptureRules::for_workspace("/w").expect("valid rules");
        assert!(matches!(
            rules.relative_path("src/a.rs"),
            Some(Cow::Borrowed(_))
        ));
        assert!(matches!(
            rules.relative_path("/w/src/a.rs"),
            Some(Cow::Borrowed(_))
        ));
    }
}
