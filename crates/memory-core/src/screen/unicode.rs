//! Invisible and bidirectional Unicode: characters a reader does not see but a model reads,
//! or that show text in another order than the model reads it.
//!
//! Flagged: zero-width spaces and joiners (U+200B, U+2060, U+180E, U+FEFF past the first
//! byte), bidirectional embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069,
//! the "Trojan Source" characters), Unicode tag characters (U+E0000..U+E007F, which spell
//! ASCII invisibly), invisible mathematical operators (U+2061..U+2064), deprecated format
//! characters (U+206A..U+206F), interlinear annotation characters (U+FFF9..U+FFFB), musical
//! formatting characters (U+1D173..U+1D17A), and runs of two or more variation selectors
//! (U+FE00..U+FE0F, U+E0100..U+E01EF), which can carry bytes behind one visible character.
//!
//! Left alone, because ordinary text needs them: the zero-width non-joiner and joiner
//! (U+200C, U+200D) between two non-ASCII characters (Persian and Indic words, emoji
//! sequences such as 👩‍💻), one variation selector (❤️), the directional marks U+200E,
//! U+200F and U+061C (right-to-left text uses them, and they reorder only neutral
//! characters), and the soft hyphen (U+00AD, which pages put in long words).
//!
//! A run of flagged characters with nothing between them is one finding.

use super::{Finding, FindingKind};

/// The name of `c`, with its article, if the screen flags it wherever it stands.
fn always_flagged(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{200B}' => "a zero-width space",
        '\u{2060}' => "a word joiner",
        '\u{180E}' => "a mongolian vowel separator",
        '\u{FEFF}' => "a zero-width no-break space",
        '\u{202A}' => "a left-to-right embedding",
        '\u{202B}' => "a right-to-left embedding",
        '\u{202C}' => "a pop directional formatting",
        '\u{202D}' => "a left-to-right override",
        '\u{202E}' => "a right-to-left override",
        '\u{2066}' => "a left-to-right isolate",
        '\u{2067}' => "a right-to-left isolate",
        '\u{2068}' => "a first strong isolate",
        '\u{2069}' => "a pop directional isolate",
        '\u{2061}'..='\u{2064}' => "an invisible mathematical operator",
        '\u{206A}'..='\u{206F}' => "a deprecated format character",
        '\u{FFF9}'..='\u{FFFB}' => "an interlinear annotation character",
        '\u{1D173}'..='\u{1D17A}' => "a musical formatting character",
        '\u{E0000}'..='\u{E007F}' => "a unicode tag character",
        _ => return None,
    })
}

/// The name of `c` if it is a joiner, flagged next to ASCII or at either end of the text.
fn joiner(c: char) -> Option<&'static str> {
    match c {
        '\u{200C}' => Some("a zero-width non-joiner"),
        '\u{200D}' => Some("a zero-width joiner"),
        _ => None,
    }
}

fn is_variation_selector(c: char) -> bool {
    matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}')
}

/// One flagged character or run, being collected.
struct Run {
    at: usize,
    end: usize,
    count: usize,
    first: char,
    name: &'static str,
}

impl Run {
    fn finding(&self) -> Finding {
        let code = u32::from(self.first);
        let (name, at) = (self.name, self.at);
        match self.count {
            1 => Finding::new(
                FindingKind::HiddenUnicode,
                at,
                format_args!("{name} (U+{code:04X})"),
            ),
            n => Finding::new(
                FindingKind::HiddenUnicode,
                at,
                format_args!("a run of {n} hidden characters starting with {name} (U+{code:04X})"),
            ),
        }
    }
}

/// The hidden characters of a text, read one non-ASCII character at a time and reported a
/// run at a time.
#[derive(Default)]
pub(super) struct Hidden {
    run: Option<Run>,
}

impl Hidden {
    /// Reads the character starting at `text[at]` (a byte that starts a non-ASCII character).
    pub(super) fn read(&mut self, text: &str, at: usize, findings: &mut Vec<Finding>) {
        let Some(c) = text.get(at..).and_then(|rest| rest.chars().next()) else {
            return;
        };
        let Some(name) = flagged(text, at, c) else {
            return;
        };
        let end = at + c.len_utf8();
        if let Some(run) = self.run.as_mut().filter(|run| run.end == at) {
            run.end = end;
            run.count += 1;
            return;
        }
        self.finish(findings);
        self.run = Some(Run {
            at,
            end,
            count: 1,
            first: c,
            name,
        });
    }

    /// Reports the run being read, if any.
    pub(super) fn finish(&mut self, findings: &mut Vec<Finding>) {
        if let Some(run) = self.run.take() {
            findings.push(run.finding());
        }
    }
}

/// The name of `c` (at byte `at` of `text`) if the screen flags it there.
fn flagged(text: &str, at: usize, c: char) -> Option<&'static str> {
    if c == '\u{FEFF}' && at == 0 {
        // A byte order mark.
        return None;
    }
    if let Some(name) = always_flagged(c) {
        return Some(name);
    }
    if let Some(name) = joiner(c) {
        let before = text[..at].chars().next_back();
        let after = text[at + c.len_utf8()..].chars().next();
        let next_to_ascii = [before, after]
            .iter()
            .any(|n| n.is_none_or(|n| n.is_ascii()));
        return next_to_ascii.then_some(name);
    }
    if is_variation_selector(c) {
        let before = text[..at].chars().next_back();
        let after = text[at + c.len_utf8()..].chars().next();
        let in_a_run = [before, after]
            .iter()
            .any(|n| n.is_some_and(is_variation_selector));
        return in_a_run.then_some("a variation selector");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::tests::reasons;

    fn check(text: &str, expected: &[&str]) {
        let got = reasons(text, None, FindingKind::HiddenUnicode);
        assert_eq!(got, expected, "text {text:?}");
    }

    #[test]
    fn hidden_characters_are_named_with_their_code_point() {
        check(
            "abc\u{202E}txt.exe",
            &["a right-to-left override (U+202E) at byte 3"],
        );
        check("ig\u{200B}nore", &["a zero-width space (U+200B) at byte 2"]);
        check(
            "x\u{200B}\u{200B}\u{2060}y\u{2066}",
            &[
                "a run of 3 hidden characters starting with a zero-width space (U+200B) at byte 1",
                "a left-to-right isolate (U+2066) at byte 11",
            ],
        );
        let tags: String = "ignore"
            .chars()
            .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap_or('?'))
            .collect();
        check(
            &format!("hi{tags}"),
            &[
                "a run of 6 hidden characters starting with a unicode tag character (U+E0069) at byte 2",
            ],
        );
        check("\u{FEFF}title", &[]);
        check(
            "a\u{FEFF}b",
            &["a zero-width no-break space (U+FEFF) at byte 1"],
        );
        check(
            "x\u{2062}y \u{206B} \u{FFF9}",
            &[
                "an invisible mathematical operator (U+2062) at byte 1",
                "a deprecated format character (U+206B) at byte 6",
                "an interlinear annotation character (U+FFF9) at byte 10",
            ],
        );
    }

    #[test]
    fn joiners_and_selectors_are_flagged_only_out_of_place() {
        // Emoji sequences, a Persian word, one selector, directional marks, a soft hyphen.
        check("👩\u{200D}💻 ❤\u{FE0F} 1\u{FE0F}\u{20E3}", &[]);
        check("می\u{200C}خواهم", &[]);
        check("\u{200F}שלום\u{200E} co\u{AD}operate", &[]);
        check("a\u{200D}b", &["a zero-width joiner (U+200D) at byte 1"]);
        check("\u{200C}", &["a zero-width non-joiner (U+200C) at byte 0"]);
        check(
            "😀\u{200C}",
            &["a zero-width non-joiner (U+200C) at byte 4"],
        );
        check(
            "😀\u{FE0F}\u{FE01}\u{E0100}",
            &["a run of 3 hidden characters starting with a variation selector (U+FE0F) at byte 4"],
        );
    }
}
