//! The texts a command answers with, formatted as the memory tool's documentation shows them:
//! sizes as `5.5K`, lines numbered in six columns and a tab, a directory listed two levels
//! deep without hidden items and `node_modules`.

use std::collections::BTreeMap;

use agent_memory_core::store::notes::NoteFile;

use crate::wording::Wording;

/// The most lines a file may have to be shown.
pub const MAX_LINES: usize = 999_999;

/// A size as the tool shows it: `0B`, `512B`, `1.5K`, `2M` (powers of 1024, one decimal when
/// not whole).
pub fn human_size(bytes: u64) -> String {
    if bytes == 0 {
        return "0B".to_owned();
    }
    const UNITS: [&str; 4] = ["B", "K", "M", "G"];
    let exponent = ((63 - bytes.leading_zeros()) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(exponent as i32);
    let unit = UNITS[exponent as usize];
    if size.fract() == 0.0 {
        format!("{size:.0}{unit}")
    } else {
        format!("{size:.1}{unit}")
    }
}

/// One numbered line: the number right-aligned in six columns, a tab, the text.
pub fn numbered(number: usize, line: &str) -> String {
    format!("{number:>6}\t{line}")
}

/// The lines of a text as the tool numbers them: split at every `\n` (so a final newline
/// ends in an empty last line, as the reference implementation shows it).
pub fn lines(text: &str) -> Vec<&str> {
    text.split('\n').collect()
}

/// A listing entry below the listed directory.
struct Entry {
    bytes: u64,
    children: Option<BTreeMap<String, Entry>>,
}

/// The listing of the directory `shown` (as the model wrote it, canonical) holding `files`,
/// whose paths lie below `prefix` (empty for the root, else `dir/`), in `wording`.
pub fn listing(shown: &str, prefix: &str, files: &[NoteFile], wording: Wording) -> String {
    let hidden = |segment: &str| {
        segment.starts_with('.') || (segment == "node_modules" && wording.hides_node_modules())
    };
    let mut top: BTreeMap<String, Entry> = BTreeMap::new();
    let mut total = 0;
    for file in files {
        let Some(relative) = file.path.as_str().strip_prefix(prefix) else {
            continue;
        };
        total += file.bytes;
        let segments: Vec<&str> = relative.split('/').collect();
        let mut level = &mut top;
        for (depth, segment) in segments.iter().enumerate() {
            let last = depth + 1 == segments.len();
            let entry = level.entry((*segment).to_owned()).or_insert_with(|| Entry {
                bytes: 0,
                children: (!last).then(BTreeMap::new),
            });
            entry.bytes += file.bytes;
            match entry.children.as_mut() {
                Some(children) if !last => level = children,
                _ => break,
            }
        }
    }
    let mut out = format!(
        "{}\n{}\t{shown}",
        wording.listing_header(shown),
        human_size(total)
    );
    for (name, entry) in top.iter().filter(|(name, _)| !hidden(name)) {
        push_entry(&mut out, shown, name, entry);
        if let Some(children) = &entry.children {
            for (child, inner) in children.iter().filter(|(name, _)| !hidden(name)) {
                push_entry(&mut out, shown, &format!("{name}/{child}"), inner);
            }
        }
    }
    out
}

fn push_entry(out: &mut String, shown: &str, relative: &str, entry: &Entry) {
    let slash = if entry.children.is_some() { "/" } else { "" };
    out.push_str(&format!(
        "\n{}\t{shown}/{relative}{slash}",
        human_size(entry.bytes)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_the_tool_shows_them() {
        for (bytes, shown) in [
            (0, "0B"),
            (1, "1B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1536, "1.5K"),
            (5632, "5.5K"),
            (1024 * 1024, "1M"),
            (1_258_291, "1.2M"),
            (3 * 1024 * 1024 * 1024, "3G"),
        ] {
            assert_eq!(human_size(bytes), shown, "{bytes}");
        }
    }

    #[test]
    fn lines_are_numbered_in_six_columns() {
        assert_eq!(numbered(1, "Hello World"), "     1\tHello World");
        assert_eq!(numbered(100, "x"), "   100\tx");
        assert_eq!(lines("a\nb\n"), ["a", "b", ""]);
    }
}
