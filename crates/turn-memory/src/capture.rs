//! Capture: the accumulator that turns one turn's tool-end events into a [`TurnMemory`].
//!
//! Memory comes from what tools did, never from what the model wrote, so no text the model
//! produces can forge or hide it. Capture reads each event's input and exit code; it copies a
//! tool's output only into the activity's `retained_output`, bounded, when the turn runs with
//! [`ToolHistory::Full`], and never derives memory from it.
//!
//! Beside the memory, the accumulator records each call's [`ToolActivity`] (Keen Code's record
//! of a turn): the tool, its bounded input, its status and exit code, and where in the
//! assistant's text it ran, which [`TurnCapture::text`] tracks.

use std::borrow::Cow;

use serde_json::Value;

use crate::activity::{
    ActivityStatus, DEFAULT_MAX_INPUT_FIELD_BYTES, DEFAULT_MAX_RETAINED_OUTPUT_BYTES, ToolActivity,
    ToolHistory, bounded_input, keen_relative, retained_output,
};
use crate::error::{Error, Result};
use crate::event::AssistantTurn;
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

/// Which tools count as writes, edits and shell commands, where to find their arguments, and
/// what tool activity keeps. Validate it once with [`CaptureRules::new`].
///
/// ```
/// use agent_memory_turns::{CaptureConfig, CaptureRules};
///
/// let mut config = CaptureConfig::new("/work/app");
/// config.write_tools.push("apply_patch".to_owned());
/// config.shell_tools = vec!["shell".to_owned()];
/// let rules = CaptureRules::new(config)?;
/// # Ok::<(), agent_memory_turns::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// Whether to record each call's [`ToolActivity`] (default on).
    pub record_activity: bool,
    /// Tools whose (bounded) input the activity keeps; other tools' calls are replayed without
    /// input. Default, as Keen Code: `read_file`, `grep`, `glob`, `web_fetch`, `bash`,
    /// `delegate_task`, `call_mcp_tool`, `write_file`, `edit_file`.
    pub activity_input_tools: Vec<String>,
    /// Tools whose `path_field` the activity makes relative to the workspace root. Default,
    /// as Keen Code: `read_file`, `grep`, `glob`, `write_file`, `edit_file`.
    pub activity_path_tools: Vec<String>,
    /// The largest input field the activity keeps, in bytes of JSON text; string fields of
    /// write and edit tools are cut to it instead (default 4 KiB).
    pub max_input_field_bytes: usize,
    /// The largest tool output an activity retains under [`ToolHistory::Full`], in bytes
    /// (default 16 KiB).
    pub max_retained_output_bytes: usize,
}

impl CaptureConfig {
    /// The default tool names (`write_file`, `edit_file`, `bash`) for a workspace at `root`.
    pub fn new(workspace_root: impl Into<String>) -> Self {
        let names = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect();
        CaptureConfig {
            workspace_root: workspace_root.into(),
            write_tools: names(&["write_file"]),
            edit_tools: names(&["edit_file"]),
            shell_tools: names(&["bash"]),
            path_field: "path".to_owned(),
            command_field: "command".to_owned(),
            dangerous_field: "is_dangerous".to_owned(),
            keep_dangerous: false,
            record_activity: true,
            activity_input_tools: names(&[
                "read_file",
                "grep",
                "glob",
                "web_fetch",
                "bash",
                "delegate_task",
                "call_mcp_tool",
                "write_file",
                "edit_file",
            ]),
            activity_path_tools: names(&["read_file", "grep", "glob", "write_file", "edit_file"]),
            max_input_field_bytes: DEFAULT_MAX_INPUT_FIELD_BYTES,
            max_retained_output_bytes: DEFAULT_MAX_RETAINED_OUTPUT_BYTES,
        }
    }

    /// With dangerous-flagged commands kept (or not).
    pub fn with_keep_dangerous(mut self, keep: bool) -> Self {
        self.keep_dangerous = keep;
        self
    }

    /// With tool activity recorded (or not).
    pub fn with_record_activity(mut self, record: bool) -> Self {
        self.record_activity = record;
        self
    }
}

/// What a tool is to capture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ToolRole {
    File,
    Shell,
}

/// What capture knows about one tool name.
#[derive(Debug, Clone)]
struct ToolEntry {
    name: String,
    role: Option<ToolRole>,
    keep_input: bool,
    relative_path: bool,
}

/// A validated [`CaptureConfig`].
#[derive(Debug, Clone)]
pub struct CaptureRules {
    /// The root without its trailing slash (`""` for `/`), for prefix tests.
    root: String,
    /// One entry per tool name; a handful of entries, so a linear scan beats hashing.
    tools: Vec<ToolEntry>,
    path_field: String,
    command_field: String,
    dangerous_field: String,
    keep_dangerous: bool,
    record_activity: bool,
    max_input_field_bytes: usize,
    max_retained_output_bytes: usize,
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
        let mut tools: Vec<ToolEntry> = Vec::new();
        for (field, names, role) in [
            ("write_tools", &config.write_tools, ToolRole::File),
            ("edit_tools", &config.edit_tools, ToolRole::File),
            ("shell_tools", &config.shell_tools, ToolRole::Shell),
        ] {
            for name in names {
                if name.is_empty() {
                    problems.push(format!("{field} holds an empty tool name"));
                } else if tools
                    .iter()
                    .any(|t| t.name == *name && t.role != Some(role))
                {
                    problems.push(format!(
                        "tool {name:?} in {field} also counts as a file tool and a shell tool"
                    ));
                } else if !tools.iter().any(|t| t.name == *name) {
                    tools.push(ToolEntry {
                        name: name.clone(),
                        role: Some(role),
                        keep_input: false,
                        relative_path: false,
                    });
                }
            }
        }
        for (field, names, input) in [
            ("activity_input_tools", &config.activity_input_tools, true),
            ("activity_path_tools", &config.activity_path_tools, false),
        ] {
            for name in names {
                if name.is_empty() {
                    problems.push(format!("{field} holds an empty tool name"));
                    continue;
                }
                let index = match tools.iter().position(|t| t.name == *name) {
                    Some(index) => index,
                    None => {
                        tools.push(ToolEntry {
                            name: name.clone(),
                            role: None,
                            keep_input: false,
                            relative_path: false,
                        });
                        tools.len() - 1
                    }
                };
                if input {
                    tools[index].keep_input = true;
                } else {
                    tools[index].relative_path = true;
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
        if config.max_input_field_bytes == 0 {
            problems.push("max_input_field_bytes must be at least 1".to_owned());
        }
        if config.max_retained_output_bytes == 0 {
            problems.push("max_retained_output_bytes must be at least 1".to_owned());
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
            record_activity: config.record_activity,
            max_input_field_bytes: config.max_input_field_bytes,
            max_retained_output_bytes: config.max_retained_output_bytes,
        })
    }

    /// The default rules for a workspace at `root`.
    pub fn for_workspace(root: impl Into<String>) -> Result<Self> {
        CaptureRules::new(CaptureConfig::new(root))
    }

    /// A fresh accumulator for one turn, keeping no tool output ([`ToolHistory::None`]).
    pub fn start_turn(&self) -> TurnCapture<'_> {
        self.start_turn_with(ToolHistory::None)
    }

    /// A fresh accumulator for one turn under the session's tool-history setting (see
    /// [`History::tool_history`](crate::History::tool_history)).
    pub fn start_turn_with(&self, tool_history: ToolHistory) -> TurnCapture<'_> {
        TurnCapture {
            rules: self,
            memory: TurnMemory::default(),
            activity: Vec::new(),
            text: String::new(),
            tool_history,
        }
    }

    fn entry(&self, tool: &str) -> Option<&ToolEntry> {
        // Lengths first: a tool name of another length costs one comparison, not a call.
        self.tools
            .iter()
            .find(|t| t.name.len() == tool.len() && t.name.as_bytes() == tool.as_bytes())
    }

    /// The activity of one finished call at `text_offset`, its input bounded by Keen's rules,
    /// without its output.
    pub fn activity(&self, event: &ToolEnd<'_>, text_offset: usize) -> ToolActivity {
        self.activity_with(event, text_offset, ToolHistory::None)
    }

    /// The activity of one finished call at `text_offset` under `tool_history`: with
    /// [`ToolHistory::Full`], the output of a tool whose input is kept is retained, bounded.
    pub fn activity_with(
        &self,
        event: &ToolEnd<'_>,
        text_offset: usize,
        tool_history: ToolHistory,
    ) -> ToolActivity {
        let entry = self.entry(event.tool);
        let role = entry.and_then(|e| e.role);
        let retained = (tool_history == ToolHistory::Full && entry.is_some_and(|e| e.keep_input))
            .then(|| retained_output(event.output, self.max_retained_output_bytes));
        let file_changed = (role == Some(ToolRole::File) && !event.is_error)
            .then(|| self.first_path(event.input))
            .flatten();
        let failed_command = event
            .exit_code
            .filter(|code| *code != 0 && role == Some(ToolRole::Shell))
            .and_then(|_| event.input.get(&self.command_field)?.as_str())
            .map(str::to_owned);
        let input = entry.filter(|e| e.keep_input).and_then(|e| {
            bounded_input(
                event.input,
                self.max_input_field_bytes,
                role == Some(ToolRole::File),
                |key, value| {
                    (e.relative_path && key == self.path_field)
                        .then(|| keen_relative(value, &self.root))
                        .flatten()
                },
            )
        });
        ToolActivity {
            text_offset,
            tool: event.tool.to_owned(),
            input,
            status: if event.is_error {
                ActivityStatus::Error
            } else {
                ActivityStatus::Success
            },
            exit_code: event
                .exit_code
                .filter(|code| *code != 0 && role == Some(ToolRole::Shell)),
            file_changed,
            failed_command,
            retained_output: retained,
        }
    }

    /// The first path a write or edit names, relative to the workspace and normalized.
    fn first_path(&self, input: &Value) -> Option<String> {
        let path = match input.get(&self.path_field)? {
            Value::String(path) => path.as_str(),
            Value::Array(paths) => paths.iter().find_map(Value::as_str)?,
            _ => return None,
        };
        self.relative_path(path).map(Cow::into_owned)
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

/// The accumulator of one turn: feed it the assistant's text as it streams
/// ([`text`](Self::text)) and every tool-end event ([`observe`](Self::observe)), then
/// [`into_turn`](Self::into_turn) (or only [`finish`](Self::finish) for the memory).
///
/// An interrupted turn simply finishes early: what was captured so far is kept.
#[derive(Debug, Clone)]
pub struct TurnCapture<'r> {
    rules: &'r CaptureRules,
    memory: TurnMemory,
    activity: Vec<ToolActivity>,
    text: String,
    tool_history: ToolHistory,
}

impl TurnCapture<'_> {
    /// Appends a chunk of the assistant's text; the next tool's activity is placed after it.
    pub fn text(&mut self, chunk: &str) {
        self.text.push_str(chunk);
    }

    /// Takes one tool-end event into account.
    pub fn observe(&mut self, event: &ToolEnd<'_>) {
        if self.rules.record_activity {
            let activity = self
                .rules
                .activity_with(event, self.text.len(), self.tool_history);
            self.activity.push(activity);
        }
        match self.rules.entry(event.tool).and_then(|e| e.role) {
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

    /// The activity recorded so far, in the order the tools ended.
    pub fn activity(&self) -> &[ToolActivity] {
        &self.activity
    }

    /// The turn's memory, or `None` when it retained nothing. The text and the activity are
    /// dropped: use [`into_turn`](Self::into_turn) to keep them.
    pub fn finish(self) -> Option<TurnMemory> {
        (!self.memory.is_empty()).then_some(self.memory)
    }

    /// The whole turn: the text passed to [`text`](Self::text), the memory and the activity.
    pub fn into_turn(self) -> AssistantTurn {
        let memory = (!self.memory.is_empty()).then_some(self.memory);
        AssistantTurn::new(self.text)
            .with_memory(memory)
            .with_activity(self.activity)
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
