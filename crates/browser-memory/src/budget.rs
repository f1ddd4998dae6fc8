//! [`ContextBudget`]: prompt parts with priorities, assembled highest first within a budget
//! of characters or of tokens.

use std::borrow::Cow;
use std::fmt;

use crate::utf16::{utf16_len, utf16_prefix};

/// The default budget: 8,000 characters.
pub const DEFAULT_BUDGET_CHARS: usize = 8000;
/// A part cut by the reference policy is kept only when more than this much budget remains.
pub const MIN_TRUNCATED_PART: usize = 200;
/// Appended to a part that was cut.
pub const TRUNCATION_MARK: &str = "...[truncated]";

/// Priorities of the memory parts: a higher one is kept first when the budget is short.
pub mod priority {
    /// Session history.
    pub const SESSION_HISTORY: i32 = 50;
    /// The reference trajectory.
    pub const REFERENCE_TRAJECTORY: i32 = 40;
    /// App knowledge (and, in the compatibility layout, session history with it).
    pub const APP_KNOWLEDGE: i32 = 30;
    /// The selector cache.
    pub const SELECTORS: i32 = 25;
}

/// Counts how much of the budget a text takes, e.g. a tokenizer of the model in use.
pub trait TokenEstimator: Send + Sync {
    /// The number of tokens `text` takes.
    fn estimate(&self, text: &str) -> usize;
}

/// A rough estimator: one token per four characters, rounded up.
#[derive(Clone, Copy, Debug, Default)]
pub struct FourCharsPerToken;

impl TokenEstimator for FourCharsPerToken {
    fn estimate(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
}

/// What the budget counts.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Budget<'a> {
    /// Characters (Unicode scalar values). The compatibility layout of
    /// [`BrowserMemory::context`](crate::BrowserMemory::context) counts these as
    /// [`Budget::Utf16Units`], as the reference does.
    Chars(usize),
    /// UTF-16 code units, as the reference's `ContextBudget` counts JavaScript string
    /// lengths (an emoji counts 2) and cuts with `slice`.
    Utf16Units(usize),
    /// Tokens, as the estimator counts them.
    Tokens(usize, &'a dyn TokenEstimator),
}

impl fmt::Debug for Budget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Chars(n) => write!(f, "Chars({n})"),
            Budget::Utf16Units(n) => write!(f, "Utf16Units({n})"),
            Budget::Tokens(n, _) => write!(f, "Tokens({n})"),
        }
    }
}

impl Budget<'_> {
    fn limit(&self) -> usize {
        match self {
            Budget::Chars(n) | Budget::Utf16Units(n) | Budget::Tokens(n, _) => *n,
        }
    }

    fn cost(&self, text: &str) -> usize {
        match self {
            Budget::Chars(_) => text.chars().count(),
            Budget::Utf16Units(_) => utf16_len(text),
            Budget::Tokens(_, estimator) => estimator.estimate(text),
        }
    }

    /// The longest prefix of `text` that costs at most `room`.
    fn prefix<'t>(&self, text: &'t str, room: usize) -> Cow<'t, str> {
        if let Budget::Utf16Units(_) = self {
            return utf16_prefix(text, room);
        }
        Cow::Borrowed(self.char_prefix(text, room))
    }

    fn char_prefix<'t>(&self, text: &'t str, room: usize) -> &'t str {
        let ends: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .skip(1)
            .chain(std::iter::once(text.len()))
            .collect();
        if let Budget::Chars(_) = self {
            return match room.checked_sub(1).and_then(|i| ends.get(i)) {
                Some(&end) => &text[..end],
                None if room == 0 => "",
                None => text,
            };
        }
        // Costs grow with the prefix: binary search the last end that fits.
        let fits = ends.partition_point(|&end| self.cost(&text[..end]) <= room);
        match fits.checked_sub(1).and_then(|i| ends.get(i)) {
            Some(&end) => &text[..end],
            None => "",
        }
    }
}

/// How parts that do not fit are treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Policy {
    /// The reference's: stop at the first part that overflows, cutting it (with
    /// `...[truncated]`) when more than 200 units of budget remain.
    #[default]
    StopAtOverflow,
    /// Skip a part that does not fit and keep filling with the lower parts that do.
    SkipOverflow,
}

/// One part of the context.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContextPart {
    /// What it is (for callers; not rendered).
    pub label: String,
    /// The text.
    pub content: String,
    /// Higher goes first.
    pub priority: i32,
}

/// Prompt parts assembled highest priority first, joined by newlines, within a budget.
///
/// ```
/// use agent_memory_browser::{Budget, ContextBudget, Policy};
///
/// let mut context = ContextBudget::new();
/// context.add("low", "selectors", 25);
/// context.add("high", "history", 50);
/// assert_eq!(context.build(Budget::Chars(8000), Policy::StopAtOverflow), "history\nselectors");
/// ```
#[derive(Clone, Debug, Default)]
pub struct ContextBudget {
    parts: Vec<ContextPart>,
}

impl ContextBudget {
    /// An empty context.
    pub fn new() -> Self {
        ContextBudget::default()
    }

    /// Adds a part; empty content is ignored.
    pub fn add(&mut self, label: impl Into<String>, content: impl Into<String>, priority: i32) {
        let content = content.into();
        if content.is_empty() {
            return;
        }
        self.parts.push(ContextPart {
            label: label.into(),
            content,
            priority,
        });
    }

    /// Rewrites each part's content with `f` (a part's priority and label stay).
    pub fn map_contents(&mut self, mut f: impl FnMut(&str) -> String) {
        for part in &mut self.parts {
            part.content = f(&part.content);
        }
    }

    /// Whether no part was added.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The parts, highest priority first (equal priorities keep insertion order), within
    /// `budget`, joined by `\n`. As in the reference, the joining newlines are not counted.
    pub fn build(&self, budget: Budget<'_>, policy: Policy) -> String {
        self.build_report(budget, policy).text
    }

    /// [`build`](Self::build), with what became of each part.
    pub fn build_report(&self, budget: Budget<'_>, policy: Policy) -> BuiltContext {
        let mut sorted: Vec<&ContextPart> = self.parts.iter().collect();
        sorted.sort_by_key(|part| std::cmp::Reverse(part.priority));
        let limit = budget.limit();
        let mut used = 0usize;
        let mut included: Vec<String> = Vec::new();
        let mut parts = Vec::with_capacity(sorted.len());
        let mut stopped = false;
        for part in sorted {
            let report = |fate| BuiltPart {
                label: part.label.clone(),
                priority: part.priority,
                fate,
            };
            if stopped {
                parts.push(report(PartFate::Left));
                continue;
            }
            let cost = budget.cost(&part.content);
            if used + cost <= limit {
                included.push(part.content.clone());
                used += cost;
                parts.push(report(PartFate::Whole));
                continue;
            }
            match policy {
                Policy::SkipOverflow => parts.push(report(PartFate::Left)),
                Policy::StopAtOverflow => {
                    stopped = true;
                    let remaining = limit.saturating_sub(used);
                    if remaining > MIN_TRUNCATED_PART {
                        let cut = budget.prefix(&part.content, remaining);
                        included.push(format!("{cut}{TRUNCATION_MARK}"));
                        parts.push(report(PartFate::Cut));
                    } else {
                        parts.push(report(PartFate::Left));
                    }
                }
            }
        }
        BuiltContext {
            text: included.join("\n"),
            parts,
        }
    }
}

/// What became of a part when the context was built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartFate {
    /// Included whole.
    Whole,
    /// Included, cut short with [`TRUNCATION_MARK`].
    Cut,
    /// Left out.
    Left,
}

impl PartFate {
    /// `whole`, `cut` or `left`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartFate::Whole => "whole",
            PartFate::Cut => "cut",
            PartFate::Left => "left",
        }
    }
}

/// One part of a built context: what it was and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuiltPart {
    /// The part's label.
    pub label: String,
    /// Its priority.
    pub priority: i32,
    /// Included whole, cut, or left out.
    pub fate: PartFate,
}

/// A built context: the text and, highest priority first, what became of each part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuiltContext {
    /// The assembled text.
    pub text: String,
    /// Every part, in the order the budget considered them.
    pub parts: Vec<BuiltPart>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget_of(parts: &[(&str, i32)]) -> ContextBudget {
        let mut context = ContextBudget::new();
        for (i, (content, priority)) in parts.iter().enumerate() {
            context.add(format!("p{i}"), *content, *priority);
        }
        context
    }

    #[test]
    fn policies_differ_on_an_oversized_middle_part() {
        let big = "b".repeat(300);
        let context = budget_of(&[("a".repeat(100).as_str(), 3), (big.as_str(), 2), ("c", 1)]);
        let stop = context.build(Budget::Chars(250), Policy::StopAtOverflow);
        assert_eq!(stop, "a".repeat(100));
        let stop_wide = context.build(Budget::Chars(350), Policy::StopAtOverflow);
        assert_eq!(
            stop_wide,
            format!("{}\n{}{TRUNCATION_MARK}", "a".repeat(100), "b".repeat(250))
        );
        let skip = context.build(Budget::Chars(250), Policy::SkipOverflow);
        assert_eq!(skip, format!("{}\nc", "a".repeat(100)));
    }

    #[test]
    fn the_report_tells_each_parts_fate() {
        let big = "b".repeat(300);
        let context = budget_of(&[("a".repeat(100).as_str(), 3), (big.as_str(), 2), ("c", 1)]);
        let fates = |budget, policy| -> Vec<(i32, PartFate)> {
            let built = context.build_report(Budget::Chars(budget), policy);
            assert_eq!(built.text, context.build(Budget::Chars(budget), policy));
            built.parts.iter().map(|p| (p.priority, p.fate)).collect()
        };
        use PartFate::{Cut, Left, Whole};
        assert_eq!(
            fates(250, Policy::StopAtOverflow),
            [(3, Whole), (2, Left), (1, Left)]
        );
        assert_eq!(
            fates(350, Policy::StopAtOverflow),
            [(3, Whole), (2, Cut), (1, Left)]
        );
        assert_eq!(
            fates(250, Policy::SkipOverflow),
            [(3, Whole), (2, Left), (1, Whole)]
        );
    }

    #[test]
    fn utf16_budget_counts_and_cuts_as_javascript() {
        // 150 emoji are 300 UTF-16 units: over a budget of 250, as in the reference; the
        // old count saw 150 characters and kept them whole.
        let emoji = "😀".repeat(150);
        let context = budget_of(&[(emoji.as_str(), 1)]);
        assert_eq!(
            context.build(Budget::Chars(250), Policy::StopAtOverflow),
            emoji
        );
        let cut = context.build(Budget::Utf16Units(250), Policy::StopAtOverflow);
        assert_eq!(cut, format!("{}{TRUNCATION_MARK}", "😀".repeat(125)));
        let odd = context.build(Budget::Utf16Units(251), Policy::StopAtOverflow);
        assert_eq!(
            odd,
            format!("{}\u{fffd}{TRUNCATION_MARK}", "😀".repeat(125))
        );
    }

    #[test]
    fn token_budget_cuts_by_estimate() {
        let context = budget_of(&[("x".repeat(2000).as_str(), 1)]);
        let out = context.build(
            Budget::Tokens(300, &FourCharsPerToken),
            Policy::StopAtOverflow,
        );
        assert_eq!(out, format!("{}{TRUNCATION_MARK}", "x".repeat(1200)));
        assert!(budget_of(&[("", 1)]).is_empty());
    }
}
