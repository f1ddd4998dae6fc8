//! [`ContextBudget`]: prompt parts with priorities, assembled highest first within a budget
//! of characters or of tokens.

use std::fmt;

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
pub enum Budget<'a> {
    /// Characters (Unicode scalar values).
    Chars(usize),
    /// Tokens, as the estimator counts them.
    Tokens(usize, &'a dyn TokenEstimator),
}

impl fmt::Debug for Budget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Budget::Chars(n) => write!(f, "Chars({n})"),
            Budget::Tokens(n, _) => write!(f, "Tokens({n})"),
        }
    }
}

impl Budget<'_> {
    fn limit(&self) -> usize {
        match self {
            Budget::Chars(n) | Budget::Tokens(n, _) => *n,
        }
    }

    fn cost(&self, text: &str) -> usize {
        match self {
            Budget::Chars(_) => text.chars().count(),
            Budget::Tokens(_, estimator) => estimator.estimate(text),
        }
    }

    /// The longest prefix of `text` that costs at most `room`.
    fn prefix<'t>(&self, text: &'t str, room: usize) -> &'t str {
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

    /// Whether no part was added.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The parts, highest priority first (equal priorities keep insertion order), within
    /// `budget`, joined by `\n`. As in the reference, the joining newlines are not counted.
    pub fn build(&self, budget: Budget<'_>, policy: Policy) -> String {
        let mut sorted: Vec<&ContextPart> = self.parts.iter().collect();
        sorted.sort_by_key(|part| std::cmp::Reverse(part.priority));
        let limit = budget.limit();
        let mut used = 0usize;
        let mut included: Vec<String> = Vec::new();
        for part in sorted {
            let cost = budget.cost(&part.content);
            if used + cost <= limit {
                included.push(part.content.clone());
                used += cost;
                continue;
            }
            match policy {
                Policy::SkipOverflow => continue,
                Policy::StopAtOverflow => {
                    let remaining = limit.saturating_sub(used);
                    if remaining > MIN_TRUNCATED_PART {
                        let cut = budget.prefix(&part.content, remaining);
                        included.push(format!("{cut}{TRUNCATION_MARK}"));
                    }
                    break;
                }
            }
        }
        included.join("\n")
    }
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
