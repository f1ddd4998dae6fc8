//! Facts learned without a model from each successful run: cookie dismissal, setup turns
//! before the first meaningful action, the shape of a search url, typical turns, and the
//! form fields filled.

use agent_memory_core::store::browser::{FactKind, FactObservation};

use crate::json::Json;

/// One turn of a run, as the agent reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turn {
    /// The page url when the action ran.
    pub url: String,
    /// The page snapshot the action was chosen on (hashed, never stored).
    pub snapshot: String,
    /// The action as a JSON object text.
    pub action: String,
    /// Whether the action's effect was verified.
    pub verified: bool,
    /// What the action was expected to change.
    pub expected_effect: Option<String>,
    /// Wall time of the turn in milliseconds.
    pub duration_ms: u64,
    /// The model's reasoning, if given.
    pub reasoning: Option<String>,
    /// The error the action raised, if any.
    pub error: Option<String>,
    /// Why the expected effect was not observed, if verification failed.
    pub verification_failure: Option<String>,
}

impl Turn {
    pub(crate) fn parsed_action(&self) -> Json {
        serde_json::from_str(&self.action).unwrap_or(Json::Null)
    }
}

/// The action name of a parsed action (`""` when absent).
pub(crate) fn action_name(action: &Json) -> &str {
    action
        .get("action")
        .and_then(Json::as_str)
        .unwrap_or_default()
}

/// djb2 over the UTF-16 units of `text`, as a signed 32-bit number: the snapshot hash.
pub fn snapshot_hash(text: &str) -> i32 {
    text.encode_utf16().fold(5381i32, |h, unit| {
        h.wrapping_shl(5)
            .wrapping_add(h)
            .wrapping_add(i32::from(unit))
    })
}

fn fact(kind: FactKind, key: &str, value: String) -> FactObservation {
    FactObservation {
        kind,
        key: key.to_owned(),
        value,
    }
}

fn mentions_consent(text: &str) -> bool {
    let text = text.to_lowercase();
    ["cookie", "consent", "gdpr", "privacy"]
        .iter()
        .any(|word| text.contains(word))
}

/// The facts a successful run of at least two turns teaches about the site whose host
/// contains `domain` (nothing for failed or shorter runs).
pub fn extract_facts(turns: &[Turn], domain: &str, success: bool) -> Vec<FactObservation> {
    if !success || turns.len() < 2 {
        return Vec::new();
    }
    let actions: Vec<Json> = turns.iter().map(Turn::parsed_action).collect();
    extract_facts_of(turns, &actions, domain, success)
}

/// [`extract_facts`] with each turn's action already parsed (`actions[i]` of `turns[i]`), for
/// a caller that has parsed them.
pub(crate) fn extract_facts_of(
    turns: &[Turn],
    actions: &[Json],
    domain: &str,
    success: bool,
) -> Vec<FactObservation> {
    if !success || turns.len() < 2 {
        return Vec::new();
    }
    let mut facts = Vec::new();

    let clicks = ["click", "clickAt", "clickLabel"];
    for (i, (turn, action)) in turns.iter().zip(actions).enumerate().take(5) {
        let name = action_name(action);
        if !clicks.contains(&name) {
            continue;
        }
        let seen = format!(
            "{}{}",
            turn.reasoning.as_deref().unwrap_or_default(),
            turn.snapshot
        );
        if mentions_consent(&seen) {
            let target = match action.get("selector") {
                Some(selector) => Json::template_text(Some(selector)),
                None => format!(
                    "clickAt({},{})",
                    Json::template_text(action.get("x")),
                    Json::template_text(action.get("y"))
                ),
            };
            facts.push(fact(
                FactKind::Pattern,
                "cookie-dismiss",
                format!("Turn {}: {name} {target}", i + 1),
            ));
            break;
        }
    }

    let first_meaningful = turns.iter().zip(actions).position(|(turn, action)| {
        !matches!(action_name(action), "wait" | "scroll" | "navigate") && turn.error.is_none()
    });
    if let Some(index) = first_meaningful.filter(|&i| i >= 2) {
        facts.push(fact(
            FactKind::Timing,
            "first-meaningful-action",
            format!("Turn {} ({index} setup turns)", index + 1),
        ));
    }

    for action in actions {
        if action_name(action) != "navigate" {
            continue;
        }
        let Some(url) = action.get("url").and_then(Json::as_str) else {
            continue;
        };
        if let Some(shape) = search_shape(url, domain) {
            facts.push(fact(FactKind::Pattern, "search-url", shape));
            break;
        }
    }

    facts.push(fact(
        FactKind::Timing,
        "typical-turns",
        format!("{} turns", turns.len()),
    ));

    let fields: Vec<String> = actions
        .iter()
        .filter(|a| matches!(action_name(a), "fill" | "type"))
        .map(
            |a| match (action_name(a), a.get("fields"), a.get("selector")) {
                ("fill", Some(Json::Object(fields)), _) => fields
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                ("type", _, Some(selector)) => Json::template_text(Some(selector)),
                _ => String::new(),
            },
        )
        .collect();
    if fields.len() >= 2 {
        let named: Vec<String> = fields
            .into_iter()
            .filter(|f| !f.is_empty())
            .take(5)
            .collect();
        if !named.is_empty() {
            facts.push(fact(FactKind::Selector, "form-fields", named.join(" → ")));
        }
    }
    facts
}

/// `/path?a={value}&b={value}` for a navigate url on `domain` with a query longer than five
/// characters (`?` included), the query cut to 100 characters: the reference's
/// `url.pathname + url.search.replace(/=[^&]+/g, '={value}').slice(0, 100)` on a WHATWG
/// url, whose path and query are percent-encoded ASCII.
fn search_shape(url: &str, domain: &str) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    if !parsed.host_str().unwrap_or_default().contains(domain) {
        return None;
    }
    let query = parsed.query().filter(|q| !q.is_empty())?;
    // `url.search` includes the `?`: more than five characters means four of query.
    if query.len() < 5 {
        return None;
    }
    let mut generalized = String::from("?");
    let mut chars = query.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '=' && chars.peek().is_some_and(|&n| n != '&') {
            generalized.push_str("={value}");
            while chars.peek().is_some_and(|&n| n != '&') {
                chars.next();
            }
        } else {
            generalized.push(c);
        }
    }
    let shape: String = generalized.chars().take(100).collect();
    Some(format!("{}{shape}", parsed.path()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_hash_matches_the_workload_vectors() {
        assert_eq!(
            snapshot_hash("page https://site2.example.com/p1 step 0 ref e15"),
            1403489727
        );
        assert_eq!(
            snapshot_hash("page https://site2.example.com/p2 step 1 ref e43"),
            -732355326
        );
    }

    #[test]
    fn search_urls_are_generalized() {
        assert_eq!(
            search_shape(
                "https://shop.example.com:8443/search?q=smart+watch&sort=rating",
                "shop.example.com"
            )
            .as_deref(),
            Some("/search?q={value}&sort={value}")
        );
        assert_eq!(
            search_shape("https://shop.example.com/?q=1", "shop.example.com"),
            None
        );
        assert_eq!(
            search_shape("https://other.test/s?query=abc", "shop.example.com"),
            None
        );
        // As `new URL(...)`: the path and query percent-encoded, the host in punycode.
        assert_eq!(
            search_shape(
                "https://bücher.example/s uche?q=ä b",
                "xn--bcher-kva.example"
            )
            .as_deref(),
            Some("/s%20uche?q={value}")
        );
        assert_eq!(
            search_shape("https://shop.example.com/s?=&a==1", "shop.example.com").as_deref(),
            Some("/s?=&a={value}")
        );
    }
}
