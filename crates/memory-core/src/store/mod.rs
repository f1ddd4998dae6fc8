//! The store traits: what a backend must offer each feature crate.
//!
//! The pattern every trait follows:
//!
//! - the trait lives here, in `memory-core`, and speaks only domain types;
//! - methods take `&self` (stores are `Send + Sync` and synchronise inside), return
//!   [`Result`](crate::Result) and follow the conventions of [`Error`](crate::Error);
//! - a method that writes several rows is atomic: when it fails, the store is as it was;
//! - [`InMemoryStore`](crate::InMemoryStore) implements it, and so does every backend
//!   (`agent-memory-sqlite`);
//! - every trait is implemented for `&S` and `Arc<S>` of any store `S` that implements it,
//!   so one store serves several memories, borrowed or shared across threads;
//! - one contract test suite in `testkit` (behind the feature of that name) is written
//!   once and run against every implementation;
//! - a list that may grow without bound has a paged read beside its whole one (a
//!   [`Page`] from a position or after a key, with the list's total), whose default slices
//!   the whole list and which a store on disk answers reading only that page.

pub mod audit;
pub mod browser;
pub mod meta;
pub mod notes;
pub mod session;
mod shared;
pub mod site_log;
pub mod tool_log;
pub mod trajectory;

pub use audit::AuditStore;
pub use meta::MetaStore;
pub use notes::NoteStore;
pub use session::{SessionAppended, SessionEvent, SessionStore, SessionSummary};
pub use tool_log::ToolLogStore;
pub use trajectory::{EpisodeStore, PatternStore};

/// One page of a list that may be too long to read whole: at most a limit of its items, from
/// a position or after a key (as the method reading it says), and how many items the whole
/// list holds, both read in the same snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page<T> {
    /// The page's items, in the list's order.
    pub items: Vec<T>,
    /// How many items the whole list holds.
    pub total: u64,
}

impl<T> Page<T> {
    /// The page of `all` (a whole list, in its order) from position `from` (0: the first
    /// item), at most `limit` items.
    pub fn at(all: Vec<T>, from: u64, limit: usize) -> Page<T> {
        let total = all.len() as u64;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        Page {
            items: all.into_iter().skip(skip).take(limit).collect(),
            total,
        }
    }

    /// The page of `all` (a whole list, in the order of `key`) of the items whose key comes
    /// after `after` (every item when `None`), at most `limit` items.
    pub fn after<K: Ord + ?Sized>(
        all: Vec<T>,
        after: Option<&K>,
        key: impl Fn(&T) -> &K,
        limit: usize,
    ) -> Page<T> {
        let total = all.len() as u64;
        Page {
            items: all
                .into_iter()
                .filter(|item| after.is_none_or(|after| key(item) > after))
                .take(limit)
                .collect(),
            total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Page;

    #[test]
    fn a_page_is_a_slice_of_the_list_with_its_total() {
        let all = || vec!["a", "b", "c", "d"];
        assert_eq!(
            Page::at(all(), 1, 2),
            Page {
                items: vec!["b", "c"],
                total: 4
            }
        );
        assert_eq!(Page::at(all(), 9, 2).items, Vec::<&str>::new());
        assert_eq!(Page::at(all(), u64::MAX, 2).total, 4);
        let page = Page::after(all(), Some("b"), |s| *s, 10);
        assert_eq!(page.items, ["c", "d"]);
        assert_eq!(Page::after(all(), None, |s| *s, 1).items, ["a"]);
    }
}
