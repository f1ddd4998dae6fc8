//! Goal tokens and Jaccard similarity, the matching rules of the trajectory store.
//!
//! A goal's tokens: lowercase it, delete every character that is not a letter, a digit or
//! whitespace, split on whitespace and drop tokens of one character. Letters and digits are
//! Unicode-aware (`café` stays `café`); on ASCII text this gives exactly the tokens of the
//! format this memory is compatible with, which deletes every non-ASCII letter.

use std::collections::HashSet;

/// The distinct tokens of `text`, in first-appearance order.
///
/// ```
/// use agent_memory_browser::tokenize;
///
/// assert_eq!(tokenize("Find the café's menu, a 2nd time!"), ["find", "the", "cafés", "menu", "2nd", "time"]);
/// ```
pub fn tokenize(text: &str) -> Vec<String> {
    let cleaned: String = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace())
        .collect();
    distinct(
        cleaned
            .split_whitespace()
            .filter(|w| w.chars().nth(1).is_some()),
    )
}

/// The tokens the reference implementation computes: like [`tokenize`], but every character
/// outside `a-z`, `0-9` and whitespace is deleted after lowercasing (`café` -> `caf`). Used by
/// the linear-scan baseline and by tests that show the difference.
pub fn reference_tokenize(text: &str) -> Vec<String> {
    let cleaned: String = text
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c.is_whitespace())
        .collect();
    // The reference counts length in UTF-16 units; only ASCII survives the filter above.
    distinct(cleaned.split_whitespace().filter(|w| w.len() > 1))
}

fn distinct<'a>(words: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut seen = HashSet::new();
    words
        .filter(|w| seen.insert(*w))
        .map(str::to_owned)
        .collect()
}

/// Jaccard similarity of two token sets: two empty sets give 1, one empty set gives 0.
pub fn jaccard<S: AsRef<str>>(a: &[S], b: &[S]) -> f64 {
    let a: HashSet<&str> = a.iter().map(AsRef::as_ref).collect();
    let b: HashSet<&str> = b.iter().map(AsRef::as_ref).collect();
    let shared = a.intersection(&b).count();
    jaccard_from_counts(shared, a.len(), b.len())
}

/// Jaccard similarity from the size of the intersection and of each set.
pub fn jaccard_from_counts(shared: usize, a: usize, b: usize) -> f64 {
    match (a, b) {
        (0, 0) => 1.0,
        (0, _) | (_, 0) => 0.0,
        _ => shared as f64 / (a + b - shared) as f64,
    }
}

/// The fewest tokens a stored goal must share with a query of `query_tokens` tokens for its
/// similarity to pass `threshold` (`strict`: greater than; otherwise at least). Similarity is
/// at most `shared / query_tokens`, so fewer shared tokens can never pass. `None`: nothing can
/// pass.
pub(crate) fn min_shared(query_tokens: usize, threshold: f64, strict: bool) -> Option<usize> {
    (1..=query_tokens).find(|&m| {
        let bound = m as f64 / query_tokens as f64;
        if strict {
            bound > threshold
        } else {
            bound >= threshold
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, ours: &[&str], reference: &[&str]) {
        assert_eq!(tokenize(text), ours, "ours for {text:?}");
        assert_eq!(
            reference_tokenize(text),
            reference,
            "reference for {text:?}"
        );
    }

    #[test]
    fn token_rules() {
        check(
            "Search for smart watch reviews",
            &["search", "for", "smart", "watch", "reviews"],
            &["search", "for", "smart", "watch", "reviews"],
        );
        check("a b cd", &["cd"], &["cd"]);
        check("don't STOP-now", &["dont", "stopnow"], &["dont", "stopnow"]);
        check("", &[], &[]);
        check("café crème", &["café", "crème"], &["caf", "crme"]);
        check("東京 の 天気", &["東京", "天気"], &[]);
        check("x1 x1 x1", &["x1"], &["x1"]);
    }

    #[test]
    fn jaccard_rules() {
        let empty: [&str; 0] = [];
        assert_eq!(jaccard(&empty, &empty), 1.0);
        assert_eq!(jaccard(&["a1"], &empty), 0.0);
        assert_eq!(jaccard(&["ab", "cd"], &["cd", "ef"]), 1.0 / 3.0);
        assert_eq!(min_shared(8, 0.5, true), Some(5));
        assert_eq!(min_shared(8, 0.5, false), Some(4));
        assert_eq!(min_shared(3, 1.0, true), None);
    }
}
