//! Persistent memory as Keen Code keeps it: two markdown texts, the user's global memory and
//! a project's memory, loaded into the system prompt at the start of every session as context
//! below the instructions, and written only when the user asks.
//!
//! Keen Code keeps them as `~/.keen/memory/global/MEMORY.md` and `<repo>/.keen/MEMORY.md`
//! (its `internal/memory` package). Its rules, reproduced here:
//!
//! - a text is read trimmed of surrounding white space; a missing or blank one is skipped;
//! - each is capped when it is loaded, not when it is written: the global memory at 8 KiB,
//!   the project memory at 16 KiB, counted in bytes of the trimmed text; a longer one is cut
//!   there and followed by [`TRUNCATION_MARKER`] (Keen cuts at the byte; we cut back to the
//!   character boundary before it, so the prompt stays valid UTF-8);
//! - the prompt gets `# Memory`, then `# Global memory` and `# Project memory`, each with its
//!   text ([`PersistentMemory::system_prompt_section`]), after everything else of the system
//!   prompt ([`ContextPolicy::with_persistent_memory`](crate::ContextPolicy::with_persistent_memory));
//! - a write whose text looks like a secret is refused ([`check_write`]); the refusal names
//!   the kind of secret, never the text.
//!
//! ```
//! use agent_memory_turns::persistent::{PersistentMemory, PersistentScope, check_write};
//!
//! assert!(check_write(PersistentScope::Project, "- run `cargo test` after changes").is_ok());
//! let refused = check_write(PersistentScope::Global, "token: ghp_0123456789abcdefghijABCDEFGHIJ0123456789");
//! assert_eq!(
//!     refused.unwrap_err().to_string(),
//!     "refusing to write global memory: content appears to contain a secret, token, or credential (a GitHub token)"
//! );
//!
//! let memory = PersistentMemory::new(Some("- prefers brief answers\n"), None);
//! assert_eq!(
//!     memory.system_prompt_section().as_deref(),
//!     Some("# Memory\n\n# Global memory\n\n- prefers brief answers")
//! );
//! ```

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

use crate::{Error, Result};

/// What follows a memory cut at its cap, as Keen Code writes it.
pub const TRUNCATION_MARKER: &str = "\n[truncated — memory exceeds size cap]";

/// The global memory's cap, in bytes (Keen's `GlobalMaxBytes`).
pub const GLOBAL_MAX_BYTES: usize = 8 * 1024;

/// The project memory's cap, in bytes (Keen's `ProjectMaxBytes`).
pub const PROJECT_MAX_BYTES: usize = 16 * 1024;

/// The file name Keen Code gives both memories.
pub const MEMORY_FILE_NAME: &str = "MEMORY.md";

/// Which of the two memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PersistentScope {
    /// The user's preferences and durable behaviour, across projects.
    Global,
    /// One project's notes, conventions and gotchas.
    Project,
}

impl PersistentScope {
    /// Both, in the order the prompt shows them.
    pub const ALL: [PersistentScope; 2] = [PersistentScope::Global, PersistentScope::Project];

    /// Its word: `global` or `project`.
    pub fn as_str(self) -> &'static str {
        match self {
            PersistentScope::Global => "global",
            PersistentScope::Project => "project",
        }
    }

    /// Its name in headings, as Keen's `Scope`: `Global` or `Project`.
    pub fn title(self) -> &'static str {
        match self {
            PersistentScope::Global => "Global",
            PersistentScope::Project => "Project",
        }
    }

    /// How many bytes of it the prompt takes.
    pub fn max_bytes(self) -> usize {
        match self {
            PersistentScope::Global => GLOBAL_MAX_BYTES,
            PersistentScope::Project => PROJECT_MAX_BYTES,
        }
    }

    /// Where Keen Code keeps it, relative to the home folder (global) or the repository's
    /// root (project): `.keen/memory/global/MEMORY.md` or `.keen/MEMORY.md`.
    pub fn keen_file(self) -> &'static str {
        match self {
            PersistentScope::Global => ".keen/memory/global/MEMORY.md",
            PersistentScope::Project => ".keen/MEMORY.md",
        }
    }
}

impl fmt::Display for PersistentScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kind of secret a memory must not hold: what a refusal names instead of the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// `-----BEGIN ... PRIVATE KEY-----`.
    PrivateKey,
    /// An `sk-` key (OpenAI, Anthropic and others that took their form).
    ApiKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// An AWS access key id (`AKIA`, `ASIA`).
    AwsAccessKey,
    /// A Slack token (`xoxb-`, `xoxp-`, ...).
    SlackToken,
    /// A Google API key (`AIza`).
    GoogleApiKey,
    /// `Bearer <token>`.
    BearerToken,
    /// A JSON web token (three base64url parts, the first `eyJ`).
    JsonWebToken,
    /// A credential given a value: `password = ...`, `api_key: ...`, `secret=...`.
    CredentialAssignment,
}

impl SecretKind {
    /// Every kind, in the order they are checked.
    pub const ALL: [SecretKind; 9] = [
        SecretKind::PrivateKey,
        SecretKind::ApiKey,
        SecretKind::GithubToken,
        SecretKind::AwsAccessKey,
        SecretKind::SlackToken,
        SecretKind::GoogleApiKey,
        SecretKind::BearerToken,
        SecretKind::JsonWebToken,
        SecretKind::CredentialAssignment,
    ];

    /// The kind in words, as a refusal names it: `a private key block`, `an API key`, ...
    pub fn description(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "a private key block",
            SecretKind::ApiKey => "an API key",
            SecretKind::GithubToken => "a GitHub token",
            SecretKind::AwsAccessKey => "an AWS access key",
            SecretKind::SlackToken => "a Slack token",
            SecretKind::GoogleApiKey => "a Google API key",
            SecretKind::BearerToken => "a bearer token",
            SecretKind::JsonWebToken => "a JSON web token",
            SecretKind::CredentialAssignment => "a credential assignment",
        }
    }

    fn pattern(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----",
            SecretKind::ApiKey => r"\bsk-[A-Za-z0-9_-]{20,}",
            SecretKind::GithubToken => {
                r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"
            }
            SecretKind::AwsAccessKey => r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
            SecretKind::SlackToken => r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
            SecretKind::GoogleApiKey => r"\bAIza[0-9A-Za-z_-]{35}",
            SecretKind::BearerToken => r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}",
            SecretKind::JsonWebToken => {
                r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
            }
            SecretKind::CredentialAssignment => {
                r#"(?i)\b(?:api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret|secret|password|passwd|token)\s*[:=]\s*["']?[^\s"']{8,}"#
            }
        }
    }
}

impl fmt::Display for SecretKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.description())
    }
}

/// The compiled patterns, one per kind, in [`SecretKind::ALL`]'s order.
fn patterns() -> &'static [(SecretKind, Regex)] {
    static PATTERNS: OnceLock<Vec<(SecretKind, Regex)>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        SecretKind::ALL
            .iter()
            .filter_map(|&kind| Regex::new(kind.pattern()).ok().map(|re| (kind, re)))
            .collect()
    })
}

/// The first kind of secret `text` seems to hold, if any.
pub fn secret_in(text: &str) -> Option<SecretKind> {
    patterns()
        .iter()
        .find(|(_, re)| re.is_match(text))
        .map(|(kind, _)| *kind)
}

/// Whether `text` may be written as the `scope` memory: refused, naming the kind of secret
/// and never the text, when it looks like it holds one. Size is not checked here: as in Keen
/// Code, a memory past its cap is cut when it is loaded.
pub fn check_write(scope: PersistentScope, text: &str) -> Result<()> {
    match secret_in(text) {
        Some(kind) => Err(Error::SecretInMemory { scope, kind }),
        None => Ok(()),
    }
}

/// A memory as the prompt takes it: trimmed, `None` when blank, cut at its cap with
/// [`TRUNCATION_MARKER`] after it when longer.
pub fn loaded(scope: PersistentScope, text: &str) -> Option<String> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let max = scope.max_bytes();
    if trimmed.len() <= max {
        return Some(trimmed.to_owned());
    }
    let mut cut = max;
    while !trimmed.is_char_boundary(cut) {
        cut -= 1;
    }
    Some(format!("{}{TRUNCATION_MARKER}", &trimmed[..cut]))
}

/// Whether a memory of this text is cut when it is loaded.
pub fn over_cap(scope: PersistentScope, text: &str) -> bool {
    text.trim().len() > scope.max_bytes()
}

/// Both memories' texts, as stored (either may be missing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersistentMemory {
    /// The global memory.
    pub global: Option<String>,
    /// The project's memory.
    pub project: Option<String>,
}

impl PersistentMemory {
    /// The memories with these texts.
    pub fn new(global: Option<&str>, project: Option<&str>) -> Self {
        PersistentMemory {
            global: global.map(str::to_owned),
            project: project.map(str::to_owned),
        }
    }

    /// The text of one scope.
    pub fn text(&self, scope: PersistentScope) -> Option<&str> {
        match scope {
            PersistentScope::Global => self.global.as_deref(),
            PersistentScope::Project => self.project.as_deref(),
        }
    }

    /// What Keen Code's `memory.Load` makes of them: `# Global memory` and `# Project memory`,
    /// each followed by a blank line and its loaded text, the two apart by a blank line;
    /// `None` when both are missing or blank.
    pub fn load(&self) -> Option<String> {
        let sections: Vec<String> = PersistentScope::ALL
            .iter()
            .filter_map(|&scope| {
                let text = loaded(scope, self.text(scope)?)?;
                Some(format!("# {} memory\n\n{text}", scope.title()))
            })
            .collect();
        (!sections.is_empty()).then(|| sections.join("\n\n"))
    }

    /// The section Keen Code ends its system prompt with: `# Memory`, a blank line, then
    /// [`load`](Self::load); `None` when there is nothing to load.
    pub fn system_prompt_section(&self) -> Option<String> {
        self.load().map(|content| format!("# Memory\n\n{content}"))
    }
}

/// `prompt` with `memory`'s section after it, apart by a blank line, as Keen Code's `Build`
/// appends it; the section alone when there is no prompt, the prompt alone when there is no
/// memory.
pub fn with_memory_section(prompt: Option<&str>, memory: &PersistentMemory) -> Option<String> {
    match (prompt, memory.system_prompt_section()) {
        (Some(prompt), Some(section)) => Some(format!("{prompt}\n\n{section}")),
        (Some(prompt), None) => Some(prompt.to_owned()),
        (None, section) => section,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        assert_eq!(patterns().len(), SecretKind::ALL.len());
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let text = "é".repeat(GLOBAL_MAX_BYTES); // two bytes each
        let cut = loaded(PersistentScope::Global, &format!("a{text}")).expect("text");
        let kept = cut.strip_suffix(TRUNCATION_MARKER).expect("marker");
        assert_eq!(kept.len(), GLOBAL_MAX_BYTES - 1);
    }
}
