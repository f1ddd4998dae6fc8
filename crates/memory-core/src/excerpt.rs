//! Inputs as an error message quotes them, so that no error grows with its input: an input
//! of at most [`EXCERPT_CHARS`] characters is quoted whole, exactly as before; a longer one is
//! cut there, marked with `…` and followed by its length (`"abc…" (1,000,000 characters)`).
//! A list of occurrences shows its first [`LISTED_ITEMS`] and counts the rest
//! (`1, 2, 3, … and 26,211 more`). [`bounded`] applies the same cut to a message someone else
//! wrote (a deserializer's `invalid type: string "..."`), and caps what is left.
//!
//! ```
//! use agent_memory_core::excerpt::{Excerpt, capped_list};
//!
//! assert_eq!(Excerpt::quoted("short").to_string(), "\"short\"");
//! let long = "x".repeat(1_000_000);
//! let shown = Excerpt::backticked(&long).to_string();
//! assert!(shown.starts_with("`xxx") && shown.ends_with("x…` (1,000,000 characters)"));
//! assert_eq!(capped_list([1, 2, 3].iter()), "1, 2, 3");
//! assert!(capped_list(1..26_215).ends_with(", … and 26,194 more"));
//! ```

use std::borrow::Cow;
use std::fmt::{self, Display, Write as _};

/// The most characters of an input an error quotes; a longer input is cut after them.
pub const EXCERPT_CHARS: usize = 200;

/// The most items an error lists; the rest are counted.
pub const LISTED_ITEMS: usize = 20;

/// The most characters [`bounded`] leaves in a message once its quoted inputs are cut.
pub const MAX_MESSAGE_CHARS: usize = 4_000;

/// How an excerpt is set in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    /// As it is.
    Plain,
    /// In double quotes, escaped as Rust's `{:?}` escapes a string.
    Debug,
    /// In backticks, as it is.
    Backticks,
}

/// An input as an error quotes it: whole when it has at most [`EXCERPT_CHARS`] characters
/// (or the limit [`Excerpt::within`] sets), else its first characters, `…`, and after the
/// quote its length in characters.
#[derive(Clone, Copy, Debug)]
pub struct Excerpt<'a> {
    text: &'a str,
    quote: Quote,
    max_chars: usize,
}

impl<'a> Excerpt<'a> {
    /// `text` without quotes: `abc… (1,000 characters)`.
    pub fn plain(text: &'a str) -> Self {
        Excerpt {
            text,
            quote: Quote::Plain,
            max_chars: EXCERPT_CHARS,
        }
    }

    /// `text` as `{:?}` quotes it: `"abc…" (1,000 characters)`.
    pub fn quoted(text: &'a str) -> Self {
        Excerpt {
            quote: Quote::Debug,
            ..Excerpt::plain(text)
        }
    }

    /// `text` in backticks, as the memory tool's messages quote an argument: `` `abc…` (1,000
    /// characters) ``.
    pub fn backticked(text: &'a str) -> Self {
        Excerpt {
            quote: Quote::Backticks,
            ..Excerpt::plain(text)
        }
    }

    /// The same excerpt, cut after `max_chars` characters instead.
    pub fn within(self, max_chars: usize) -> Self {
        Excerpt { max_chars, ..self }
    }

    /// The part of the input that is shown.
    pub fn kept(&self) -> &'a str {
        match self.text.char_indices().nth(self.max_chars) {
            Some((at, _)) => &self.text[..at],
            None => self.text,
        }
    }

    /// Whether the input is longer than what is shown.
    pub fn is_cut(&self) -> bool {
        self.kept().len() < self.text.len()
    }
}

impl Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kept = self.kept();
        let cut = kept.len() < self.text.len();
        let mark = if cut { "…" } else { "" };
        match self.quote {
            Quote::Plain => write!(f, "{kept}{mark}")?,
            Quote::Backticks => write!(f, "`{kept}{mark}`")?,
            Quote::Debug => {
                // `{:?}` of the kept part, with the mark inside its closing quote.
                let quoted = format!("{kept:?}");
                let open = quoted.strip_suffix('"').unwrap_or(&quoted);
                write!(f, "{open}{mark}\"")?;
            }
        }
        if cut {
            let chars = self.max_chars + self.text[kept.len()..].chars().count();
            write!(f, " ({} characters)", grouped(chars))?;
        }
        Ok(())
    }
}

/// `items` as an error lists them, separated by `, `: all of them when there are at most
/// [`LISTED_ITEMS`], else the first ones and `… and N more`. Only the items shown are
/// produced, so a lazy iterator computes no more than those.
pub fn capped_list<T: Display>(items: impl ExactSizeIterator<Item = T>) -> String {
    let total = items.len();
    let mut out = String::new();
    for (i, item) in items.take(LISTED_ITEMS).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{item}");
    }
    if total > LISTED_ITEMS {
        let _ = write!(out, ", … and {} more", grouped(total - LISTED_ITEMS));
    }
    out
}

/// `n` with its thousands separated by commas: `26,211`.
pub fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `message` with every quoted run longer than [`EXCERPT_CHARS`] characters cut as
/// [`Excerpt`] cuts an input (a run in double quotes escaped as `{:?}` escapes, or in
/// backticks), then, if it is still longer than [`MAX_MESSAGE_CHARS`], cut there. For a
/// message whose parts another library wrote, quoting an input whole (serde's `invalid type:
/// string "..."`); a message with no long run is returned as it is.
pub fn bounded(message: &str) -> Cow<'_, str> {
    let cut = cut_quoted_runs(message);
    // A message this cut is left alone, so a message bounded twice is bounded once.
    if Excerpt::plain(&cut).within(MAX_MESSAGE_CHARS + 64).is_cut() {
        return Cow::Owned(Excerpt::plain(&cut).within(MAX_MESSAGE_CHARS).to_string());
    }
    cut
}

/// `message` with each long quoted run replaced by its excerpt.
fn cut_quoted_runs(message: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let mut rest = 0;
    while let Some(offset) = message[rest..].find(['"', '`']) {
        let open = rest + offset;
        let Some((close, unquoted)) = quoted_run(message, open) else {
            rest = open + 1;
            continue;
        };
        let excerpt = if message.as_bytes()[open] == b'`' {
            Excerpt::backticked(&unquoted)
        } else {
            Excerpt::quoted(&unquoted)
        };
        // An excerpt is one character longer than what it keeps: left alone, so a message
        // bounded twice is bounded once.
        if excerpt.within(EXCERPT_CHARS + 1).is_cut() {
            out.push_str(&message[copied..open]);
            let _ = write!(out, "{excerpt}");
            copied = close + 1;
        }
        rest = close + 1;
    }
    if copied == 0 {
        return Cow::Borrowed(message);
    }
    out.push_str(&message[copied..]);
    Cow::Owned(out)
}

/// The run opened by the quote at byte `open`: the byte of its closing quote and its text
/// unescaped (a double-quoted run is read as `{:?}` wrote it); `None` when it is not closed,
/// or not escaped as `{:?}` escapes.
fn quoted_run(message: &str, open: usize) -> Option<(usize, Cow<'_, str>)> {
    let body = &message[open + 1..];
    if message.as_bytes()[open] == b'`' {
        let close = body.find('`')?;
        return Some((open + 1 + close, Cow::Borrowed(&body[..close])));
    }
    let mut text = String::new();
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Some((open + 1 + at, Cow::Owned(text))),
            '\\' => text.push(match chars.next()?.1 {
                't' => '\t',
                'r' => '\r',
                'n' => '\n',
                '0' => '\0',
                c @ ('\\' | '"' | '\'') => c,
                'u' => {
                    if chars.next()?.1 != '{' {
                        return None;
                    }
                    let mut hex = String::new();
                    loop {
                        match chars.next()?.1 {
                            '}' => break,
                            digit if digit.is_ascii_hexdigit() && hex.len() < 6 => hex.push(digit),
                            _ => return None,
                        }
                    }
                    char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
                }
                _ => return None,
            }),
            c => text.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_input_is_quoted_as_before() {
        for text in [
            "",
            "abc",
            "a \"quoted\"\tword\n",
            "é\u{301}",
            &"y".repeat(EXCERPT_CHARS),
        ] {
            assert_eq!(Excerpt::quoted(text).to_string(), format!("{text:?}"));
            assert_eq!(Excerpt::backticked(text).to_string(), format!("`{text}`"));
            assert_eq!(Excerpt::plain(text).to_string(), text);
        }
    }

    #[test]
    fn a_long_input_is_cut_with_its_length() {
        let long = format!("{}\"{}", "é".repeat(EXCERPT_CHARS - 1), "z".repeat(999_800));
        let shown = Excerpt::quoted(&long).to_string();
        assert_eq!(
            shown,
            format!(
                "\"{}\\\"…\" (1,000,000 characters)",
                "é".repeat(EXCERPT_CHARS - 1)
            )
        );
        assert_eq!(
            Excerpt::plain("abcdef").within(3).to_string(),
            "abc… (6 characters)"
        );
        assert_eq!(
            Excerpt::backticked("abcdef").within(3).to_string(),
            "`abc…` (6 characters)"
        );
    }

    #[test]
    fn a_list_is_capped_with_the_count_of_the_rest() {
        assert_eq!(capped_list(std::iter::empty::<u8>()), "");
        assert_eq!(capped_list(1..LISTED_ITEMS + 1), {
            let all: Vec<String> = (1..=LISTED_ITEMS).map(|n| n.to_string()).collect();
            all.join(", ")
        });
        let many = capped_list(1..26_215);
        assert!(many.starts_with("1, 2, 3, "), "{many}");
        assert!(many.ends_with(", 20, … and 26,194 more"), "{many}");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        for (n, text) in [(0, "0"), (999, "999"), (1_000, "1,000"), (26_211, "26,211")] {
            assert_eq!(grouped(n), text);
        }
        assert_eq!(grouped(1_000_000), "1,000,000");
    }

    #[test]
    fn bounded_cuts_long_runs_and_leaves_the_rest() {
        let message = "invalid type: string \"ab\", expected `x` or `y`";
        assert!(matches!(bounded(message), Cow::Borrowed(_)));
        let huge = format!("{}\n\u{7}é", "s".repeat(1_000_000));
        let message = format!("invalid type: string {huge:?}, expected a sequence");
        let shown = bounded(&message);
        assert_eq!(
            shown,
            format!(
                "invalid type: string {}, expected a sequence",
                Excerpt::quoted(&huge)
            )
        );
        assert!(shown.ends_with("…\" (1,000,003 characters), expected a sequence"));
        let variant = format!("unknown variant `{}`, expected `view`", "v".repeat(5_000));
        assert_eq!(
            bounded(&variant),
            format!(
                "unknown variant {}, expected `view`",
                Excerpt::backticked(&"v".repeat(5_000))
            )
        );
    }

    #[test]
    fn bounded_caps_what_it_cannot_read() {
        let unclosed = format!("a \"{}", "u".repeat(10_000));
        let shown = bounded(&unclosed);
        assert!(shown.chars().count() < MAX_MESSAGE_CHARS + 40, "{shown}");
        assert!(shown.ends_with("u… (10,003 characters)"), "{shown}");
        let many_short = "\"ab\" ".repeat(2_000);
        assert!(bounded(&many_short).chars().count() < MAX_MESSAGE_CHARS + 40);
    }

    #[test]
    fn bounding_twice_is_bounding_once() {
        let long = "l".repeat(100_000);
        for message in [
            format!("string {long:?} and `{long}`"),
            format!("{long} \"{long}"),
        ] {
            let once = bounded(&message).into_owned();
            assert_ne!(once, message);
            assert_eq!(bounded(&once), once);
        }
    }
}
