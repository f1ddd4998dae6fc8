//! The contract of [`MetaStore`].

use crate::names::MetaKey;
use crate::store::MetaStore;
use crate::testkit::{Case, CaseResult};
use crate::{ensure, ensure_eq};

/// The suite's name in reports.
pub const SUITE: &str = "MetaStore";

/// Every case of the [`MetaStore`] contract.
pub fn cases<S: MetaStore>() -> Vec<Case<S>> {
    vec![
        Case {
            name: "missing key reads as none",
            run: missing_key_reads_as_none,
        },
        Case {
            name: "set then get",
            run: set_then_get,
        },
        Case {
            name: "set returns previous value",
            run: set_returns_previous,
        },
        Case {
            name: "delete removes",
            run: delete_removes,
        },
        Case {
            name: "compare and set",
            run: compare_and_set,
        },
        Case {
            name: "list by prefix in key order",
            run: list_by_prefix,
        },
        Case {
            name: "values keep any text",
            run: values_keep_any_text,
        },
        Case {
            name: "set all writes every entry",
            run: set_all_writes_every_entry,
        },
        Case {
            name: "get all reads each key in order",
            run: get_all_reads_each_key_in_order,
        },
    ]
}

fn key(name: &str) -> MetaKey {
    // The names used here are literals that satisfy every rule.
    MetaKey::new(name).unwrap_or_else(|e| panic!("test key {name:?}: {e}"))
}

fn missing_key_reads_as_none<S: MetaStore>(store: &S) -> CaseResult {
    ensure_eq!(store.meta_get(&key("absent"))?, None);
    ensure_eq!(store.meta_delete(&key("absent"))?, false);
    Ok(())
}

fn set_then_get<S: MetaStore>(store: &S) -> CaseResult {
    store.meta_set(&key("a"), "1")?;
    store.meta_set(&key("a"), "2")?;
    ensure_eq!(
        store.meta_get(&key("a"))?.as_deref(),
        Some("2"),
        "last write wins"
    );
    Ok(())
}

fn set_returns_previous<S: MetaStore>(store: &S) -> CaseResult {
    ensure_eq!(store.meta_set(&key("a"), "1")?, None);
    ensure_eq!(store.meta_set(&key("a"), "2")?.as_deref(), Some("1"));
    Ok(())
}

fn delete_removes<S: MetaStore>(store: &S) -> CaseResult {
    store.meta_set(&key("a"), "1")?;
    ensure_eq!(store.meta_delete(&key("a"))?, true);
    ensure_eq!(
        store.meta_get(&key("a"))?,
        None,
        "deleted key still readable"
    );
    Ok(())
}

fn compare_and_set<S: MetaStore>(store: &S) -> CaseResult {
    store.meta_compare_and_set(&key("lock"), None, "one")?;
    let lost = store.meta_compare_and_set(&key("lock"), None, "two");
    ensure!(
        matches!(&lost, Err(e) if e.is_conflict()),
        "second create should conflict, got {lost:?}"
    );
    ensure_eq!(
        store.meta_get(&key("lock"))?.as_deref(),
        Some("one"),
        "a lost race changed the value"
    );
    store.meta_compare_and_set(&key("lock"), Some("one"), "three")?;
    ensure_eq!(store.meta_get(&key("lock"))?.as_deref(), Some("three"));
    Ok(())
}

fn list_by_prefix<S: MetaStore>(store: &S) -> CaseResult {
    // A backend may keep entries of its own; the contract speaks only of the keys it wrote.
    let before = store.meta_list("")?.len();
    for (k, v) in [
        ("test.b", "2"),
        ("other", "x"),
        ("test.a", "1"),
        ("test", "0"),
    ] {
        store.meta_set(&key(k), v)?;
    }
    let listed: Vec<(String, String)> = store
        .meta_list("test.")?
        .into_iter()
        .map(|(k, v)| (k.into_string(), v))
        .collect();
    ensure_eq!(
        listed,
        vec![
            ("test.a".to_owned(), "1".to_owned()),
            ("test.b".to_owned(), "2".to_owned())
        ]
    );
    ensure_eq!(
        store.meta_list("")?.len(),
        before + 4,
        "empty prefix lists everything"
    );
    Ok(())
}

fn values_keep_any_text<S: MetaStore>(store: &S) -> CaseResult {
    let value = "line one\nline 'two' \"quoted\" ; DROP TABLE meta; -- ünïcødé \u{1F600}";
    store.meta_set(&key("text"), value)?;
    ensure_eq!(store.meta_get(&key("text"))?.as_deref(), Some(value));
    store.meta_set(&key("empty"), "")?;
    ensure_eq!(
        store.meta_get(&key("empty"))?.as_deref(),
        Some(""),
        "empty value differs from unset"
    );
    Ok(())
}

fn set_all_writes_every_entry<S: MetaStore>(store: &S) -> CaseResult {
    let keys: Vec<MetaKey> = (0..5).map(|i| key(&format!("batch.{i}"))).collect();
    let entries: Vec<(&MetaKey, &str)> = keys.iter().map(|k| (k, "v")).collect();
    store.meta_set_all(&entries)?;
    ensure_eq!(
        store.meta_list("batch.")?.len(),
        5,
        "entries written by one batch"
    );
    store.meta_set_all(&[])?;
    ensure_eq!(
        store.meta_list("batch.")?.len(),
        5,
        "an empty batch changes nothing"
    );
    Ok(())
}

fn get_all_reads_each_key_in_order<S: MetaStore>(store: &S) -> CaseResult {
    store.meta_set(&key("all.a"), "1")?;
    store.meta_set(&key("all.c"), "")?;
    let (a, b, c) = (key("all.a"), key("all.b"), key("all.c"));
    ensure_eq!(
        store.meta_get_all(&[&c, &b, &a, &a])?,
        vec![
            Some(String::new()),
            None,
            Some("1".to_owned()),
            Some("1".to_owned())
        ]
    );
    ensure_eq!(store.meta_get_all(&[])?, Vec::<Option<String>>::new());
    // More keys than a backend may read with one statement, set and unset ones mixed, one
    // repeated far apart: each answer still lands in its key's place.
    let many: Vec<MetaKey> = (0..21).map(|i| key(&format!("all.many.{i}"))).collect();
    for (i, k) in many.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
        store.meta_set(k, &i.to_string())?;
    }
    let mut asked: Vec<&MetaKey> = many.iter().collect();
    asked.push(&many[18]);
    let expected: Vec<Option<String>> = (0..21)
        .chain([18])
        .map(|i| (i % 3 == 0).then(|| i.to_string()))
        .collect();
    ensure_eq!(store.meta_get_all(&asked)?, expected);
    Ok(())
}
