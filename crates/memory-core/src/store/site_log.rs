//! The log of what each writer taught a site's memory, so that a forget by provenance can
//! take one writer's observations back out of it.
//!
//! A site's facts, selectors and sessions are a fold of its observations
//! ([`SiteMemory::apply`]): a fact's confidence is the product of every confirmation and
//! contradiction, so no single writer's part can be subtracted from the result. The log keeps
//! the fold's inputs instead: the site as it was when the log began (its *base*: an import,
//! or what it held before writers were kept), then each observation with its writer, and each
//! forget of the site's knowledge in its place. [`SiteLog::rebuild`] folds them again;
//! [`SiteLog::forget_by`] drops one writer's observations first.
//!
//! The log is bounded: when an append makes it hold [`LOG_FOLD_AT`] entries, the oldest fold
//! into the base ([`SiteLog::fold_oldest`]) and [`LOG_KEEP`] stay, so a site's log never holds
//! more than [`LOG_FOLD_AT`] entries, and a forget by writer takes back the writer's part of
//! at least the newest [`LOG_KEEP`] observations (older ones are part of the base, as an
//! import's are).
//!
//! A store keeps the base and each entry as one text ([`SiteLog::encode_base`],
//! [`LogEvent::encode`]), in the format of [`encode_texts`]. A replacement of the whole site
//! (an import) starts the log again; forgetting the site's knowledge erases the forgotten
//! text from the log too (see [`SiteLog::forget_knowledge`]), so the log never keeps what a
//! forget took.

use std::collections::HashMap;

use crate::evidence::Writer;
use crate::provenance::Provenance;
use crate::store::browser::{
    Fact, FactKind, FactObservation, SelectorEntry, SessionEntry, SiteMemory, SiteObservation,
};
use crate::store::trajectory::{decode_texts, encode_texts};

/// How many entries a site's log keeps after folding its oldest into the base.
pub const LOG_KEEP: usize = 2_000;

/// How many entries make a site's log fold its oldest into the base, keeping [`LOG_KEEP`].
pub const LOG_FOLD_AT: usize = 2 * LOG_KEEP;

/// What one entry of a site's log did.
#[derive(Clone, Debug, PartialEq)]
pub enum LogEvent {
    /// An observation, applied with [`SiteMemory::apply`].
    Observed(Box<SiteObservation>),
    /// A forget of the site's knowledge ([`SiteMemory::forget_knowledge`]).
    Forgot {
        /// Whether the session history went too.
        sessions: bool,
        /// The knowledge time it stamped.
        at: String,
    },
}

/// One entry of a site's log: what happened, and who wrote it (none for a forget).
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// The writer of an observation (the one its audit entry names); none for a forget.
    pub by: Option<Provenance>,
    /// What happened.
    pub event: LogEvent,
}

/// Who last observed each fact and found each element of a site ([`SiteLog::newest_writers`]):
/// the writer of the newest observation of it in the log. A fact or element no entry
/// observed (one of the base: an import, or what the site held before writers were kept)
/// has none.
#[derive(Debug, Default)]
pub struct NewestWriters<'a> {
    facts: HashMap<(FactKind, &'a str, &'a str), &'a Provenance>,
    selectors: HashMap<&'a str, &'a Provenance>,
}

impl<'a> NewestWriters<'a> {
    /// Who last observed the fact `(kind, key, value)`.
    pub fn fact(&self, kind: FactKind, key: &str, value: &str) -> Option<&'a Provenance> {
        self.facts.get(&(kind, key, value)).copied()
    }

    /// Who last found `element` with a selector.
    pub fn selector(&self, element: &str) -> Option<&'a Provenance> {
        self.selectors.get(element).copied()
    }
}

/// A site's base and the entries since, oldest first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SiteLog {
    /// The site as it was when the log began.
    pub base: SiteMemory,
    /// Every entry since, oldest first.
    pub entries: Vec<LogEntry>,
}

impl SiteLog {
    /// The site's memory: the base with every entry applied in order.
    pub fn rebuild(&self) -> SiteMemory {
        let mut memory = self.base.clone();
        for entry in &self.entries {
            match &entry.event {
                LogEvent::Observed(observation) => memory.apply(observation),
                LogEvent::Forgot { sessions, at } => memory.forget_knowledge(*sessions, at),
            }
        }
        memory
    }

    /// Folds every entry but the newest `keep` into the base, in order; true when any was.
    pub fn fold_oldest(&mut self, keep: usize) -> bool {
        let fold = self.entries.len().saturating_sub(keep);
        if fold == 0 {
            return false;
        }
        let folded = SiteLog {
            base: std::mem::take(&mut self.base),
            entries: self.entries.drain(..fold).collect(),
        };
        self.base = folded.rebuild();
        true
    }

    /// Drops every observation `writer` wrote ([`Writer::matches`]); returns the positions
    /// they held in the log, ascending. [`SiteLog::rebuild`] then gives the site as if they
    /// had never been made.
    pub fn forget_by(&mut self, writer: &Writer) -> Vec<usize> {
        let mut dropped = Vec::new();
        let mut index = 0;
        self.entries.retain(|entry| {
            let doomed = entry.by.as_ref().is_some_and(|by| writer.matches(by));
            if doomed {
                dropped.push(index);
            }
            index += 1;
            !doomed
        });
        dropped
    }

    /// Who last observed each fact and found each element, read in one pass over the log
    /// (a read that names the writer beside every fact or selector asks it once, not once
    /// per row).
    pub fn newest_writers(&self) -> NewestWriters<'_> {
        let mut newest = NewestWriters::default();
        for entry in &self.entries {
            let (LogEvent::Observed(o), Some(by)) = (&entry.event, entry.by.as_ref()) else {
                continue;
            };
            for f in &o.facts {
                (newest.facts).insert((f.kind, f.key.as_str(), f.value.as_str()), by);
            }
            for (element, _) in &o.selectors {
                newest.selectors.insert(element.as_str(), by);
            }
        }
        newest
    }

    /// Takes `writer`'s observations out ([`SiteLog::forget_by`]): `None` when the log holds
    /// none, else how many went and the site rebuilt from the rest, itself `None` when that
    /// leaves nothing ([`SiteMemory::is_blank`]: a site only the writer taught is gone).
    pub fn take_back(&mut self, writer: &Writer) -> Option<(u64, Option<SiteMemory>)> {
        let n = self.forget_by(writer).len() as u64;
        if n == 0 {
            return None;
        }
        let rebuilt = self.rebuild();
        Some((n, (!rebuilt.is_blank()).then_some(rebuilt)))
    }

    /// Records a forget of the site's knowledge: the facts (and with `sessions`, the
    /// sessions) go from the base and from every observation before it, so the log no longer
    /// holds them, and the forget is appended in its place, so a rebuild still stamps `at`.
    pub fn forget_knowledge(&mut self, sessions: bool, at: &str) {
        self.base.facts.clear();
        if sessions {
            self.base.sessions.clear();
        }
        for entry in &mut self.entries {
            if let LogEvent::Observed(observation) = &mut entry.event {
                observation.facts.clear();
                if sessions {
                    observation.session = None;
                }
            }
        }
        self.entries.push(LogEntry {
            by: None,
            event: LogEvent::Forgot {
                sessions,
                at: at.to_owned(),
            },
        });
    }

    /// The base as one text; [`SiteLog::decode_base`] reads it back.
    pub fn encode_base(base: &SiteMemory) -> String {
        let sessions = encode_sessions(&base.sessions);
        let facts = encode_facts(&base.facts);
        let selectors = encode_selectors(&base.selectors);
        encode_texts([
            base.site.as_str(),
            &base.label,
            &base.knowledge_updated_at,
            &base.selectors_updated_at,
            &sessions,
            &facts,
            &selectors,
        ])
    }

    /// Decodes [`SiteLog::encode_base`]; `None` on any other text.
    pub fn decode_base(text: &str) -> Option<SiteMemory> {
        let [
            site,
            label,
            knowledge,
            selectors_at,
            sessions,
            facts,
            selectors,
        ] = <[String; 7]>::try_from(decode_texts(text)?).ok()?;
        Some(SiteMemory {
            site,
            label,
            facts: decode_facts(&facts)?,
            sessions: decode_sessions(&sessions)?,
            knowledge_updated_at: knowledge,
            selectors: decode_selectors(&selectors)?,
            selectors_updated_at: selectors_at,
        })
    }
}

impl SiteMemory {
    /// Whether the site holds nothing at all, as a site no writer taught (a forget by
    /// provenance that leaves a site so removes it).
    pub fn is_blank(&self) -> bool {
        self.label.is_empty()
            && self.facts.is_empty()
            && self.sessions.is_empty()
            && self.selectors.is_empty()
            && self.knowledge_updated_at.is_empty()
            && self.selectors_updated_at.is_empty()
    }
}

impl LogEvent {
    /// The event as one text (its writer is kept apart, in columns a store can filter on);
    /// [`LogEvent::decode`] reads it back.
    pub fn encode(&self) -> String {
        match self {
            LogEvent::Observed(o) => LogEvent::encode_observed(o),
            LogEvent::Forgot { sessions, at } => {
                encode_texts(["forgot", if *sessions { "1" } else { "0" }, at])
            }
        }
    }

    /// The text of `LogEvent::Observed(o)`, without a copy of `o`.
    pub fn encode_observed(o: &SiteObservation) -> String {
        let session = (o.session.as_ref())
            .map_or_else(String::new, |s| encode_sessions(std::slice::from_ref(s)));
        let facts =
            encode_texts((o.facts.iter()).flat_map(|f| [f.kind.as_str(), &f.key, &f.value]));
        let selectors = encode_texts((o.selectors.iter()).flat_map(|(e, s)| [e.as_str(), s]));
        encode_texts([
            "observed",
            &o.site,
            &o.label,
            &o.observed_at,
            &session,
            &facts,
            &selectors,
        ])
    }

    /// Decodes [`LogEvent::encode`]; `None` on any other text.
    pub fn decode(text: &str) -> Option<LogEvent> {
        let items = decode_texts(text)?;
        match items.first().map(String::as_str) {
            Some("observed") => {
                let [_, site, label, observed_at, session, facts, selectors] =
                    <[String; 7]>::try_from(items).ok()?;
                let session = match decode_sessions(&session)?.as_slice() {
                    [] => None,
                    [one] => Some(one.clone()),
                    _ => return None,
                };
                let facts = groups(&facts, 3, |f| {
                    Some(FactObservation {
                        kind: FactKind::parse(&f[0])?,
                        key: f[1].clone(),
                        value: f[2].clone(),
                    })
                })?;
                let selectors = groups(&selectors, 2, |s| Some((s[0].clone(), s[1].clone())))?;
                Some(LogEvent::Observed(Box::new(SiteObservation {
                    site,
                    label,
                    session,
                    facts,
                    selectors,
                    observed_at,
                })))
            }
            Some("forgot") => {
                let [_, sessions, at] = <[String; 3]>::try_from(items).ok()?;
                let sessions = match sessions.as_str() {
                    "1" => true,
                    "0" => false,
                    _ => return None,
                };
                Some(LogEvent::Forgot { sessions, at })
            }
            _ => None,
        }
    }
}

/// Decodes a list of entries of `width` items each.
fn groups<T>(text: &str, width: usize, entry: impl Fn(&[String]) -> Option<T>) -> Option<Vec<T>> {
    let items = decode_texts(text)?;
    if items.len() % width != 0 {
        return None;
    }
    items.chunks(width).map(entry).collect()
}

/// An optional text as one item: empty for none, the text behind a `=` otherwise.
fn optional(text: Option<&String>) -> String {
    text.map_or_else(String::new, |t| format!("={t}"))
}

fn parse_optional(item: &str) -> Option<Option<String>> {
    if item.is_empty() {
        return Some(None);
    }
    Some(Some(item.strip_prefix('=')?.to_owned()))
}

/// Encodes a site's session log: eight items per session (id, goal, outcome, success as
/// `1` or `0`, final url, timestamp, turns used, duration).
pub fn encode_sessions(sessions: &[SessionEntry]) -> String {
    let numbers: Vec<[String; 2]> = (sessions.iter())
        .map(|s| [s.turns_used.to_string(), s.duration_ms.to_string()])
        .collect();
    encode_texts(sessions.iter().zip(&numbers).flat_map(|(s, [turns, ms])| {
        [
            s.id.as_str(),
            &s.goal,
            &s.outcome,
            if s.success { "1" } else { "0" },
            &s.final_url,
            &s.timestamp,
            turns,
            ms,
        ]
    }))
}

/// Decodes [`encode_sessions`]; `None` on any other text.
pub fn decode_sessions(text: &str) -> Option<Vec<SessionEntry>> {
    groups(text, 8, |s| {
        Some(SessionEntry {
            id: s[0].clone(),
            goal: s[1].clone(),
            outcome: s[2].clone(),
            success: match s[3].as_str() {
                "1" => true,
                "0" => false,
                _ => return None,
            },
            final_url: s[4].clone(),
            timestamp: s[5].clone(),
            turns_used: s[6].parse().ok()?,
            duration_ms: s[7].parse().ok()?,
        })
    })
}

/// A confidence as the 16 hex digits of its bits, so it reads back exactly.
fn encode_facts(facts: &[Fact]) -> String {
    let numbers: Vec<[String; 2]> = (facts.iter())
        .map(|f| {
            [
                format!("{:016x}", f.confidence.to_bits()),
                f.sources.to_string(),
            ]
        })
        .collect();
    encode_texts(
        facts
            .iter()
            .zip(&numbers)
            .flat_map(|(f, [c, n])| [f.kind.as_str(), &f.key, &f.value, c, n, &f.last_seen]),
    )
}

fn decode_facts(text: &str) -> Option<Vec<Fact>> {
    groups(text, 6, |f| {
        Some(Fact {
            kind: FactKind::parse(&f[0])?,
            key: f[1].clone(),
            value: f[2].clone(),
            confidence: f64::from_bits(u64::from_str_radix(&f[3], 16).ok()?),
            sources: f[4].parse().ok()?,
            last_seen: f[5].clone(),
        })
    })
}

fn encode_selectors(selectors: &[SelectorEntry]) -> String {
    let extra: Vec<[String; 3]> = (selectors.iter())
        .map(|s| {
            [
                optional(s.last_ref.as_ref()),
                optional(s.stable_selector.as_ref()),
                s.success_count.to_string(),
            ]
        })
        .collect();
    encode_texts(
        (selectors.iter().zip(&extra))
            .flat_map(|(s, [r, stable, n])| [s.element.as_str(), r, stable, n, &s.last_used]),
    )
}

fn decode_selectors(text: &str) -> Option<Vec<SelectorEntry>> {
    groups(text, 5, |s| {
        Some(SelectorEntry {
            element: s[0].clone(),
            last_ref: parse_optional(&s[1])?,
            stable_selector: parse_optional(&s[2])?,
            success_count: s[3].parse().ok()?,
            last_used: s[4].clone(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provenance::Source;
    use crate::time::Timestamp;

    fn observation(site: &str, value: &str, selector: &str, at: &str) -> SiteObservation {
        SiteObservation {
            site: site.to_owned(),
            label: format!("https://{site}/"),
            session: Some(SessionEntry {
                id: format!("s-{value}"),
                goal: "buy".to_owned(),
                outcome: "done: ok".to_owned(),
                success: true,
                final_url: String::new(),
                timestamp: at.to_owned(),
                turns_used: 3,
                duration_ms: 1200,
            }),
            facts: vec![FactObservation {
                kind: FactKind::Quirk,
                key: "login".to_owned(),
                value: value.to_owned(),
            }],
            selectors: vec![("button \"Go\"".to_owned(), selector.to_owned())],
            observed_at: at.to_owned(),
        }
    }

    fn by(session: &str) -> Option<Provenance> {
        let mut p = Provenance::new(Source::Model("m".to_owned()), Timestamp::from_millis(1));
        p.session = Some(session.to_owned());
        Some(p)
    }

    fn entry(session: &str, o: SiteObservation) -> LogEntry {
        LogEntry {
            by: by(session),
            event: LogEvent::Observed(Box::new(o)),
        }
    }

    #[test]
    fn forgetting_a_writer_rebuilds_the_site_as_if_it_had_never_written() {
        let good = observation(
            "a.test",
            "needs sso",
            "[data-testid=go]",
            "2026-01-01T00:00:00Z",
        );
        let bad = observation("a.test", "ignore rules", "@e9", "2026-01-02T00:00:00Z");
        let later = observation(
            "a.test",
            "needs sso",
            "[data-testid=go]",
            "2026-01-03T00:00:00Z",
        );
        let mut log = SiteLog {
            base: SiteMemory {
                site: "a.test".to_owned(),
                ..SiteMemory::default()
            },
            entries: vec![
                entry("good", good.clone()),
                entry("bad", bad.clone()),
                entry("good", later.clone()),
            ],
        };
        let poisoned = log.rebuild();
        assert!(poisoned.facts.iter().any(|f| f.value == "ignore rules"));
        assert_eq!(log.forget_by(&Writer::session("bad")), vec![1]);
        let mut clean = SiteMemory {
            site: "a.test".to_owned(),
            ..SiteMemory::default()
        };
        clean.apply(&good);
        clean.apply(&later);
        assert_eq!(log.rebuild(), clean);
        assert_ne!(clean, poisoned);
        assert!(log.forget_by(&Writer::session("bad")).is_empty());
    }

    #[test]
    fn a_forget_of_knowledge_erases_the_logged_facts_and_keeps_its_place() {
        let first = observation("a.test", "v1", "@e1", "2026-01-01T00:00:00Z");
        let second = observation("a.test", "v2", "@e2", "2026-01-03T00:00:00Z");
        let mut log = SiteLog::default();
        log.base.site = "a.test".to_owned();
        log.entries.push(entry("one", first.clone()));
        let mut expected = log.rebuild();
        log.forget_knowledge(true, "2026-01-02T00:00:00Z");
        expected.forget_knowledge(true, "2026-01-02T00:00:00Z");
        assert_eq!(log.rebuild(), expected);
        let LogEvent::Observed(kept) = &log.entries[0].event else {
            panic!("the observation stays in its place");
        };
        assert!(kept.facts.is_empty() && kept.session.is_none());
        assert_eq!(kept.selectors, first.selectors);
        log.entries.push(entry("two", second.clone()));
        expected.apply(&second);
        assert_eq!(log.rebuild(), expected);
        // The first writer's selector goes; the forget's stamp stays.
        log.forget_by(&Writer::session("one"));
        let rebuilt = log.rebuild();
        assert_eq!(rebuilt.selectors.len(), 1);
        assert_eq!(rebuilt.selectors[0].last_ref.as_deref(), Some("@e2"));
        assert_eq!(rebuilt.selectors[0].success_count, 1);
    }

    #[test]
    fn folding_keeps_the_site_and_the_newest_entries() {
        let mut log = SiteLog::default();
        log.base.site = "a.test".to_owned();
        for i in 0..5u32 {
            let at = format!("2026-01-0{}T00:00:00Z", i + 1);
            let o = observation("a.test", &format!("v{i}"), &format!("@e{i}"), &at);
            log.entries.push(entry(&format!("w{i}"), o));
        }
        let whole = log.rebuild();
        assert!(log.fold_oldest(2));
        assert_eq!(log.entries.len(), 2);
        assert_eq!(log.rebuild(), whole);
        assert!(!log.fold_oldest(2));
        // A folded writer is part of the base now; a kept one can still go.
        assert!(log.forget_by(&Writer::session("w0")).is_empty());
        assert_eq!(log.forget_by(&Writer::session("w4")), vec![1]);
    }

    #[test]
    fn the_base_and_entries_read_back_exactly_and_other_text_is_refused() {
        let mut base = SiteMemory {
            site: "a.test".to_owned(),
            ..SiteMemory::default()
        };
        base.apply(&observation("a.test", "x", "@e1", "2026-01-01T00:00:00Z"));
        base.apply(&observation(
            "a.test",
            "y",
            "[id=q]",
            "2026-01-02T00:00:00Z",
        ));
        base.facts[0].confidence = 0.1 + 0.2;
        let text = SiteLog::encode_base(&base);
        assert_eq!(SiteLog::decode_base(&text), Some(base));
        let events = [
            LogEvent::Observed(Box::new(observation(
                "a.test",
                "z",
                "@e3",
                "2026-01-04T00:00:00Z",
            ))),
            LogEvent::Observed(Box::default()),
            LogEvent::Forgot {
                sessions: false,
                at: "2026-01-05T00:00:00Z".to_owned(),
            },
        ];
        for event in events {
            assert_eq!(LogEvent::decode(&event.encode()), Some(event));
        }
        for bad in ["", "7:unknown", "6:forgot1:21:x", "garbage"] {
            assert_eq!(LogEvent::decode(bad), None, "{bad:?}");
            assert_eq!(SiteLog::decode_base(bad), None, "{bad:?}");
        }
    }
}
