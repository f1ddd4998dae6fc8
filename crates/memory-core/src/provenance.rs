//! Who wrote a memory item, and when: its [`Source`] and its [`Provenance`].
//!
//! Memory is a channel between runs: a web page, a tool's output or a past model turn can
//! write text that a later run puts into its prompt. Knowing where an item came from is what
//! lets a reader treat it as evidence rather than as instructions, and lets the write
//! [`screen`](crate::screen) compare the links in a page's text with the page's own host.
//!
//! ```
//! use agent_memory_core::Source;
//!
//! let source = Source::parse("page:https://Shop.Example.com:8443/cart")?;
//! assert_eq!(source.host().as_deref(), Some("shop.example.com"));
//! assert!(source.is_external());
//! assert_eq!(source.to_string(), "page:https://Shop.Example.com:8443/cart");
//! assert!(!Source::parse("model")?.is_external());
//! assert!(Source::parse("web:https://x").is_err());
//! # Ok::<(), agent_memory_core::Error>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::excerpt::Excerpt;
use crate::time::Timestamp;

/// Who wrote a memory item.
///
/// Its text form is `user`, `tool:NAME`, `page:URL`, `model` or `model:NAME`, `import:FORMAT`
/// or `unknown`; [`Source::parse`] reads it back. Every source `parse` accepts prints as a
/// text that parses to the same source; a `Tool`, `Page` or `Import` built with an empty
/// name prints as `tool:` (and so on), which `parse` refuses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Source {
    /// The person the agent works for, in their own words.
    User,
    /// The output of a tool, by the tool's name.
    Tool(String),
    /// The text of a web page, by its URL.
    Page(String),
    /// A model's own turn, by the model's name (empty when unknown).
    Model(String),
    /// An import from another memory format, by the format's name.
    Import(String),
    /// Nobody knows: data written before sources were kept.
    Unknown,
}

impl Source {
    /// Reads the text form (`user`, `tool:NAME`, `page:URL`, `model[:NAME]`,
    /// `import:FORMAT`, `unknown`).
    pub fn parse(value: &str) -> Result<Source> {
        let (kind, name) = match value.split_once(':') {
            Some((kind, name)) => (kind, Some(name)),
            None => (value, None),
        };
        let make: fn(String) -> Source = match (kind, name) {
            ("user", None) => return Ok(Source::User),
            ("unknown", None) => return Ok(Source::Unknown),
            ("model", None) => return Ok(Source::Model(String::new())),
            ("model", Some(_)) => Source::Model,
            ("tool", _) => Source::Tool,
            ("page", _) => Source::Page,
            ("import", _) => Source::Import,
            _ => {
                return Err(Error::invalid_input(
                    "source",
                    format!(
                        "{} is not one of user, tool:NAME, page:URL, model, model:NAME, \
                         import:FORMAT, unknown",
                        Excerpt::quoted(value)
                    ),
                ));
            }
        };
        match name {
            Some(name) if !name.is_empty() => Ok(make(name.to_owned())),
            _ => Err(Error::invalid_input(
                "source",
                format!(
                    "{} names no {kind}: write `{kind}:` and a name",
                    Excerpt::quoted(value)
                ),
            )),
        }
    }

    /// The lowercased host of a page's URL, without its port or user info: what the write
    /// screen compares the links of the page's text with. `None` for every other source and
    /// for a URL without a host.
    pub fn host(&self) -> Option<Cow<'_, str>> {
        let Source::Page(url) = self else {
            return None;
        };
        let host = url_host(url)?;
        Some(if host.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(host.to_ascii_lowercase())
        } else {
            Cow::Borrowed(host)
        })
    }

    /// Whether the text came from outside the user and the model: a page, a tool, an import,
    /// or nobody knows. Such text is evidence about the world, never instructions.
    pub fn is_external(&self) -> bool {
        !matches!(self, Source::User | Source::Model(_))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::User => f.write_str("user"),
            Source::Tool(name) => write!(f, "tool:{name}"),
            Source::Page(url) => write!(f, "page:{url}"),
            Source::Model(name) if name.is_empty() => f.write_str("model"),
            Source::Model(name) => write!(f, "model:{name}"),
            Source::Import(format) => write!(f, "import:{format}"),
            Source::Unknown => f.write_str("unknown"),
        }
    }
}

impl FromStr for Source {
    type Err = Error;
    fn from_str(value: &str) -> Result<Self> {
        Source::parse(value)
    }
}

/// Where a memory item came from: who wrote it, in which session, through which client,
/// and when.
///
/// ```
/// use agent_memory_core::{Provenance, Source, Timestamp};
///
/// let at = Timestamp::from_millis(1_767_225_600_000);
/// let provenance = Provenance::new(Source::Tool("web_fetch".into()), at)
///     .with_session("sess-1")
///     .with_client("cli");
/// assert_eq!(provenance.session.as_deref(), Some("sess-1"));
/// assert_eq!(provenance.source.to_string(), "tool:web_fetch");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Provenance {
    /// Who wrote the item.
    pub source: Source,
    /// The session it was written in, when known.
    pub session: Option<String>,
    /// The client that wrote it (the command line, the MCP server, a language package),
    /// when known.
    pub client: Option<String>,
    /// When it was written.
    pub at: Timestamp,
}

impl Provenance {
    /// An item written by `source` at `at`, in no known session, through no known client.
    pub fn new(source: Source, at: Timestamp) -> Self {
        Provenance {
            source,
            session: None,
            client: None,
            at,
        }
    }

    /// The same provenance, written in `session`.
    #[must_use]
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// The same provenance, written through `client`.
    #[must_use]
    pub fn with_client(mut self, client: impl Into<String>) -> Self {
        self.client = Some(client.into());
        self
    }
}

/// The host of `url` as written (case kept), without user info, port or a trailing dot;
/// `None` when `url` has no `scheme://` or no host.
pub(crate) fn url_host(url: &str) -> Option<&str> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme_ok = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority_host(authority)
}

/// The host of an authority (`user:pass@host:port`): without user info, port or a trailing
/// dot, an IPv6 address with its brackets; `None` when nothing is left.
pub(crate) fn authority_host(authority: &str) -> Option<&str> {
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if hostport.starts_with('[') {
        let end = hostport.find(']')?;
        &hostport[..=end]
    } else {
        hostport.split(':').next().unwrap_or_default()
    };
    let host = host.trim_end_matches('.');
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: std::result::Result<Source, &str>) {
        let got = Source::parse(text).map_err(|e| e.to_string());
        assert_eq!(
            got,
            expected.clone().map_err(str::to_owned),
            "text {text:?}"
        );
        if let Ok(source) = expected {
            let again = Source::parse(&source.to_string()).map_err(|e| e.to_string());
            assert_eq!(again, Ok(source), "round trip of {text:?}");
        }
    }

    #[test]
    fn sources_read_their_text_form() {
        check("user", Ok(Source::User));
        check("unknown", Ok(Source::Unknown));
        check("model", Ok(Source::Model(String::new())));
        check("model:gpt-4o", Ok(Source::Model("gpt-4o".into())));
        check("tool:web_fetch", Ok(Source::Tool("web_fetch".into())));
        check("tool:a:b", Ok(Source::Tool("a:b".into())));
        check(
            "page:https://shop.example/cart?x=1",
            Ok(Source::Page("https://shop.example/cart?x=1".into())),
        );
        check("import:mem0", Ok(Source::Import("mem0".into())));
        let not_one_of = "is not one of user, tool:NAME, page:URL, model, model:NAME, \
                          import:FORMAT, unknown";
        check("", Err(&format!("invalid source: \"\" {not_one_of}")));
        check(
            "User",
            Err(&format!("invalid source: \"User\" {not_one_of}")),
        );
        check(
            "user:bob",
            Err(&format!("invalid source: \"user:bob\" {not_one_of}")),
        );
        check(
            "web:x",
            Err(&format!("invalid source: \"web:x\" {not_one_of}")),
        );
        check(
            "tool:",
            Err("invalid source: \"tool:\" names no tool: write `tool:` and a name"),
        );
        check(
            "page",
            Err("invalid source: \"page\" names no page: write `page:` and a name"),
        );
        check(
            "model:",
            Err("invalid source: \"model:\" names no model: write `model:` and a name"),
        );
    }

    #[test]
    fn a_page_has_a_host_and_other_sources_none() {
        let cases: &[(Source, Option<&str>)] = &[
            (
                Source::Page("https://shop.example/cart".into()),
                Some("shop.example"),
            ),
            (
                Source::Page("https://Bob:pw@Shop.Example.COM.:8443/x".into()),
                Some("shop.example.com"),
            ),
            (Source::Page("http://[::1]:80/".into()), Some("[::1]")),
            (Source::Page("https://host?q=a/b".into()), Some("host")),
            (Source::Page("shop.example/cart".into()), None),
            (Source::Page("https:///path".into()), None),
            (Source::Page("://host".into()), None),
            (Source::Tool("https://shop.example".into()), None),
            (Source::User, None),
        ];
        for (source, host) in cases {
            assert_eq!(source.host().as_deref(), *host, "source {source}");
        }
    }

    #[test]
    fn external_sources_are_everyone_but_the_user_and_the_model() {
        let cases = [
            (Source::User, false),
            (Source::Model(String::new()), false),
            (Source::Tool("t".into()), true),
            (Source::Page("https://x".into()), true),
            (Source::Import("mem0".into()), true),
            (Source::Unknown, true),
        ];
        for (source, external) in cases {
            assert_eq!(source.is_external(), external, "source {source}");
        }
    }
}
