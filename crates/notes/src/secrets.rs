//! [`Secrets`]: values the caller marks sensitive. The project's rule is that such a value
//! never reaches a database row, a log or a prompt, so every text a command receives is
//! scrubbed before it is used (each value becomes `${key}`, the token recordings use for a
//! memory key) and every text it answers is scrubbed again before it is returned.

use agent_memory_core::excerpt::Excerpt;

use crate::error::{Error, ErrorKind, Result};

/// The shortest value accepted as a secret: shorter ones would scrub ordinary words.
pub const MIN_SECRET_BYTES: usize = 4;

/// Sensitive values by key name, longest value first so a secret containing another is
/// replaced whole.
#[derive(Clone, Debug, Default)]
pub struct Secrets(Vec<(String, String)>);

impl Secrets {
    /// No secrets.
    pub fn new() -> Self {
        Secrets::default()
    }

    /// Marks `value` sensitive under `key`. The key must be a plain name (letters, digits,
    /// `_`, `-`, `.`) and the value at least [`MIN_SECRET_BYTES`] bytes; errors name the key,
    /// never the value.
    pub fn add(&mut self, key: &str, value: &str) -> Result<()> {
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if key.is_empty() || key.len() > 64 || !key.chars().all(plain) {
            return Err(Error::command(
                ErrorKind::InvalidInput,
                "secrets",
                format!(
                    "invalid secret key {}: use 1 to 64 letters, digits, _, - or .",
                    Excerpt::quoted(key).within(64)
                ),
            ));
        }
        if value.len() < MIN_SECRET_BYTES {
            return Err(Error::command(
                ErrorKind::InvalidInput,
                format!("secrets.{key}"),
                format!(
                    "the value of secret {key:?} is shorter than {MIN_SECRET_BYTES} bytes, too short to scrub safely"
                ),
            ));
        }
        self.0.push((key.to_owned(), value.to_owned()));
        self.0
            .sort_by_key(|(_, value)| std::cmp::Reverse(value.len()));
        Ok(())
    }

    /// Whether no secret is marked.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `text` with every secret value replaced by `${key}`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (key, value) in &self.0 {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), &format!("${{{key}}}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_their_key_tokens_longest_first() -> Result<()> {
        let mut secrets = Secrets::new();
        secrets.add("token", "abcd")?;
        secrets.add("long_token", "abcd-efgh")?;
        assert_eq!(
            secrets.scrub("use abcd-efgh or abcd"),
            "use ${long_token} or ${token}"
        );
        let short = secrets
            .add("pin", "123")
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            short.contains("\"pin\"") && !short.contains("123\""),
            "{short}"
        );
        assert!(secrets.add("bad key", "value").is_err());
        Ok(())
    }
}
