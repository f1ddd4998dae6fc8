//! Lengths and cuts of text in UTF-16 code units, as JavaScript counts string lengths
//! (`"😀".length` is 2) and cuts strings (`slice(0, n)`).

use std::borrow::Cow;

/// The length of `text` as JavaScript's `text.length`: UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// `text.slice(0, units)` as JavaScript computes it. A cut through a surrogate pair leaves
/// its first half alone, which UTF-8 cannot hold: it is written as U+FFFD, as Node writes a
/// lone surrogate to a file or a terminal.
///
/// ```
/// use agent_memory_browser::compat::utf16_prefix;
///
/// assert_eq!(utf16_prefix("a😀b", 3), "a😀");
/// assert_eq!(utf16_prefix("a😀b", 2), "a\u{fffd}");
/// ```
pub fn utf16_prefix(text: &str, units: usize) -> Cow<'_, str> {
    let mut used = 0;
    for (at, c) in text.char_indices() {
        let width = c.len_utf16();
        if used + width > units {
            if used < units {
                return Cow::Owned(format!("{}\u{fffd}", &text[..at]));
            }
            return Cow::Borrowed(&text[..at]);
        }
        used += width;
    }
    Cow::Borrowed(text)
}
