//! [`Wording`]: whose texts the commands answer with. The memory tool's documentation gives
//! one set of texts; the local filesystem memory tools of Anthropic's Python and TypeScript
//! SDKs word a few answers differently, and models are shown either through the handlers
//! that subclass or replace them. Every place where the three differ is a method here, so a
//! handler names its SDK once and answers as that SDK's own tool does, text for text.
//!
//! Where an SDK's answer comes from a defect of its file system implementation rather than
//! from a wording, every wording keeps the sound behaviour: a multi-line `old_str` is found
//! (the TypeScript tool searches line by line and never finds one), a `view_range` outside
//! the file is refused with the documented text (both SDKs answer an empty or partial slice),
//! and a path that is not text under `/memories` (control characters, backslashes,
//! percent-encoding) is refused whatever the wording.

/// Whose texts the commands answer with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wording {
    /// The memory tool's documentation: `.` and `..` segments are refused, a directory
    /// where a file is needed is "not found", and a listing hides `node_modules`.
    #[default]
    Documented,
    /// The Python SDK's `BetaLocalFilesystemMemoryTool` (`anthropic` 2.14).
    PythonSdk,
    /// The TypeScript SDK's `BetaLocalFilesystemMemoryTool` (`@anthropic-ai/sdk` 1.14).
    TypeScriptSdk,
}

impl Wording {
    /// Whether this is one of the SDKs' wordings.
    pub fn is_sdk(self) -> bool {
        self != Wording::Documented
    }

    /// Whether `.`, `..` and empty segments are resolved as text (the SDKs resolve the path
    /// against their folder) instead of refused; a `..` that would leave `/memories` is
    /// refused either way.
    pub(crate) fn resolves_dots(self) -> bool {
        self.is_sdk()
    }

    /// The refusal of a path that does not start with `/memories`; `shown` is the path as an
    /// error may quote it.
    pub(crate) fn outside_root(self, shown: &str) -> Option<String> {
        self.is_sdk()
            .then(|| format!("Path must start with /memories, got: {shown}"))
    }

    /// The refusal of a path whose `..` leads out of `/memories`.
    pub(crate) fn escapes_root(self, shown: &str) -> Option<String> {
        self.is_sdk()
            .then(|| format!("Path {shown} would escape /memories directory"))
    }

    /// The listing's first line, for the directory `shown`.
    pub(crate) fn listing_header(self, shown: &str) -> String {
        let hidden = match self {
            Wording::PythonSdk => "hidden items",
            Wording::Documented | Wording::TypeScriptSdk => "hidden items and node_modules",
        };
        format!(
            "Here're the files and directories up to 2 levels deep in {shown}, excluding {hidden}:"
        )
    }

    /// Whether a listing leaves out `node_modules` (the Python SDK lists it).
    pub(crate) fn hides_node_modules(self) -> bool {
        self != Wording::PythonSdk
    }

    /// The refusal to show a file of `count` lines, over the limit.
    pub(crate) fn too_many_lines(self, path: &str, count: usize) -> String {
        match self {
            Wording::TypeScriptSdk => {
                format!("File {path} has too many lines ({count}). Maximum is 999,999 lines.")
            }
            Wording::Documented | Wording::PythonSdk => {
                format!("File {path} exceeds maximum line limit of 999,999 lines.")
            }
        }
    }

    /// The refusal of `str_replace` or `insert` on a directory: the SDKs say it is no file,
    /// the documentation that nothing is there.
    pub(crate) fn not_a_file(self, path: &str) -> Option<String> {
        self.is_sdk()
            .then(|| format!("The path {path} is not a file."))
    }

    /// The refusal of `create` where a directory is.
    pub(crate) fn create_on_directory(self, path: &str) -> String {
        if self.is_sdk() {
            format!("File {path} already exists")
        } else {
            format!("The path {path} is a directory, not a file")
        }
    }

    /// The last line a `str_replace` snippet shows, for a change on lines `first..=last`:
    /// the SDKs show two lines after the first changed one, the documented texts two after
    /// the last.
    pub(crate) fn snippet_end(self, first: usize, last: usize) -> usize {
        if self.is_sdk() { first + 2 } else { last + 2 }
    }

    /// A note's lines as `insert` counts them: the TypeScript SDK counts the empty line
    /// after a final newline, the others do not.
    pub(crate) fn insert_lines(self, text: &str) -> Vec<&str> {
        if self == Wording::TypeScriptSdk {
            return text.split('\n').collect();
        }
        if text.is_empty() {
            return Vec::new();
        }
        text.strip_suffix('\n')
            .unwrap_or(text)
            .split('\n')
            .collect()
    }

    /// The line `insert` adds for `insert_text`: the TypeScript SDK drops one final newline,
    /// the others every final newline.
    pub(crate) fn inserted_line(self, insert_text: &str) -> &str {
        match self {
            Wording::TypeScriptSdk => insert_text.strip_suffix('\n').unwrap_or(insert_text),
            Wording::Documented | Wording::PythonSdk => insert_text.trim_end_matches('\n'),
        }
    }

    /// A note's text after `insert` from its `lines`: the documented texts end it with a
    /// newline, the Python SDK adds one when there is none, the TypeScript SDK none.
    pub(crate) fn inserted_text(self, lines: &[&str]) -> String {
        let mut text = lines.join("\n");
        match self {
            Wording::Documented => text.push('\n'),
            Wording::PythonSdk if !text.ends_with('\n') => text.push('\n'),
            Wording::PythonSdk | Wording::TypeScriptSdk => {}
        }
        text
    }

    /// The refusal of an `insert_line` outside `[0, count]`.
    pub(crate) fn insert_line_out_of_range(self, insert_line: i64, count: usize) -> String {
        match self {
            Wording::PythonSdk => format!(
                "Invalid `insert_line` parameter: {insert_line}. It should be within the range [0, {count}]."
            ),
            Wording::Documented | Wording::TypeScriptSdk => format!(
                "Invalid `insert_line` parameter: {insert_line}. It should be within the range of lines of the file: [0, {count}]"
            ),
        }
    }

    /// The refusal to rename `/memories` itself, or (`onto_root`) to move a path onto it.
    pub(crate) fn rename_root(self, onto_root: bool) -> String {
        match (self.is_sdk(), onto_root) {
            (true, false) => "Cannot rename the /memories directory itself".to_owned(),
            (true, true) => "The destination /memories already exists".to_owned(),
            (false, _) => {
                "Cannot rename the /memories directory itself or move anything onto it".to_owned()
            }
        }
    }
}
