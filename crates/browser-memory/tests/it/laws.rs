//! Laws checked on random input: ASCII tokens equal the reference's, Jaccard is symmetric and
//! bounded, the context never exceeds its budget, JSON keeps order through a round trip, site
//! keys are always one plain file name.

use agent_memory_browser::baseline::reference_tokenize;
use agent_memory_browser::compat::{Json, to_compact};
use agent_memory_browser::{
    Budget, ContextBudget, MemoryRoot, Policy, TRUNCATION_MARK, jaccard, site_key, tokenize,
};
use proptest::prelude::*;

proptest! {
    #[test]
    fn ascii_tokens_equal_the_reference(text in "[ -~\t\n]{0,80}") {
        prop_assert_eq!(tokenize(&text), reference_tokenize(&text));
    }

    #[test]
    fn jaccard_is_symmetric_and_bounded(a in "[a-c ]{0,20}", b in "[a-c ]{0,20}") {
        let (ta, tb) = (tokenize(&a), tokenize(&b));
        let ab = jaccard(&ta, &tb);
        prop_assert_eq!(ab, jaccard(&tb, &ta));
        prop_assert!((0.0..=1.0).contains(&ab));
    }

    #[test]
    fn context_stays_within_budget(parts in proptest::collection::vec(("[a-z]{1,400}", 0i32..100), 0..12), budget in 0usize..2000) {
        let mut context = ContextBudget::new();
        for (i, (content, priority)) in parts.iter().enumerate() {
            context.add(format!("p{i}"), content.clone(), *priority);
        }
        for policy in [Policy::StopAtOverflow, Policy::SkipOverflow] {
            let out = context.build(Budget::Chars(budget), policy);
            let content = out.replace(TRUNCATION_MARK, "").replace('\n', "");
            prop_assert!(content.chars().count() <= budget, "{policy:?}");
        }
    }

    #[test]
    fn json_objects_round_trip_in_order(keys in proptest::collection::vec("[a-z]{1,6}", 0..8), n in -1e6f64..1e6) {
        let mut members: Vec<(String, Json)> = Vec::new();
        for key in keys {
            if !members.iter().any(|(k, _)| *k == key) {
                members.push((key, Json::Number(n)));
            }
        }
        let value = Json::Object(members);
        let text = to_compact(&value).expect("encode");
        let back: Json = serde_json::from_str(&text).expect("decode");
        prop_assert_eq!(back, value);
    }

    #[test]
    fn site_keys_are_plain_names(url in "\\PC{0,60}") {
        let key = site_key(&url);
        prop_assert!(MemoryRoot::new("/tmp/root").child(&["domains", &key]).is_ok(), "{key:?}");
    }
}
