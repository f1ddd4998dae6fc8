//! The `MetaStore` contract, against the in-memory store and against broken stores that the
//! suite must catch.

use std::collections::BTreeMap;
use std::sync::Mutex;

use agent_memory_core::testkit::{meta, run};
use agent_memory_core::{Error, InMemoryStore, MetaKey, MetaStore, Result};

#[test]
fn in_memory_store_obeys_the_contract() {
    if let Err(report) = run(meta::SUITE, &meta::cases(), InMemoryStore::new) {
        panic!("{report}");
    }
}

/// A store with one seeded defect, so each test shows a case of the suite can fail.
#[derive(Default)]
struct Broken {
    defect: Defect,
    entries: Mutex<BTreeMap<String, String>>,
}

#[derive(Default, Clone, Copy, PartialEq)]
enum Defect {
    #[default]
    IgnoresOverwrite,
    CompareAndSetAlwaysWins,
    ListIgnoresPrefix,
    DropsBatchTail,
}

impl Broken {
    fn with(defect: Defect) -> Self {
        Broken {
            defect,
            entries: Mutex::default(),
        }
    }
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl MetaStore for Broken {
    fn meta_get(&self, key: &MetaKey) -> Result<Option<String>> {
        Ok(self.entries().get(key.as_str()).cloned())
    }
    fn meta_set(&self, key: &MetaKey, value: &str) -> Result<Option<String>> {
        let mut entries = self.entries();
        let previous = entries.get(key.as_str()).cloned();
        if self.defect == Defect::IgnoresOverwrite && previous.is_some() {
            return Ok(previous);
        }
        entries.insert(key.to_string(), value.to_owned());
        Ok(previous)
    }
    fn meta_compare_and_set(
        &self,
        key: &MetaKey,
        expected: Option<&str>,
        value: &str,
    ) -> Result<()> {
        let mut entries = self.entries();
        let found = entries.get(key.as_str()).map(String::as_str);
        if found != expected && self.defect != Defect::CompareAndSetAlwaysWins {
            return Err(Error::conflict("meta entry", key.as_str(), "lost"));
        }
        entries.insert(key.to_string(), value.to_owned());
        Ok(())
    }
    fn meta_set_all(&self, entries: &[(&MetaKey, &str)]) -> Result<()> {
        let mut map = self.entries();
        for (key, value) in entries
            .iter()
            .take(if self.defect == Defect::DropsBatchTail {
                1
            } else {
                usize::MAX
            })
        {
            map.insert(key.to_string(), (*value).to_owned());
        }
        Ok(())
    }
    fn meta_delete(&self, key: &MetaKey) -> Result<bool> {
        Ok(self.entries().remove(key.as_str()).is_some())
    }
    fn meta_list(&self, prefix: &str) -> Result<Vec<(MetaKey, String)>> {
        let entries = self.entries();
        let keep = |k: &String| self.defect == Defect::ListIgnoresPrefix || k.starts_with(prefix);
        entries
            .iter()
            .filter(|(k, _)| keep(k))
            .map(|(k, v)| Ok((MetaKey::new(k.clone())?, v.clone())))
            .collect()
    }
}

#[test]
fn the_suite_catches_broken_stores() {
    let table = [
        (Defect::IgnoresOverwrite, "set then get"),
        (Defect::CompareAndSetAlwaysWins, "compare and set"),
        (Defect::ListIgnoresPrefix, "list by prefix in key order"),
        (Defect::DropsBatchTail, "set all writes every entry"),
    ];
    for (defect, case) in table {
        let report = run(meta::SUITE, &meta::cases(), || Broken::with(defect))
            .expect_err("a broken store must fail the contract");
        assert!(report.failed(case), "{case} should fail:\n{report}");
    }
}
