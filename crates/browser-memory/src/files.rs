//! The JSON files of an `.agent-memory/` directory, field for field and in the key order the
//! reference writes them, with conversions to and from the store's records.

use std::path::Path;

use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::store::browser::{
    Fact, FactKind, FactObservation, RunManifest, RunStatus, SelectorEntry, SessionEntry,
    SiteMemory, SiteObservation, Trajectory, TrajectoryStep,
};
use agent_memory_core::store::site_log::{LogEntry, LogEvent, SiteLog};
use agent_memory_core::{Provenance, Source, Timestamp};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::json::{Json, to_compact};
use crate::origin::origin_of;
use crate::time::{iso, parse_date};

fn field_error(path: &Path, field: impl Into<String>, reason: impl Into<String>) -> Error {
    Error::Field {
        path: path.to_path_buf(),
        field: field.into(),
        reason: reason.into(),
    }
}

/// A JSON number that must be a non-negative integer.
fn count<T: TryFrom<u64>>(path: &Path, field: &str, value: f64) -> Result<T> {
    if value.is_finite()
        && value >= 0.0
        && value.fract() == 0.0
        && value <= u64::MAX as f64
        && let Ok(v) = T::try_from(value as u64)
    {
        return Ok(v);
    }
    Err(field_error(
        path,
        field,
        format!("{value} is not a non-negative integer in range"),
    ))
}

/// Parses `text` as `T`, reporting the file, line and column of a problem.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(path: &Path, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Format {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        reason: e.to_string(),
    })
}

/// `traj_*.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TrajectoryFile {
    id: String,
    goal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    origin: Option<String>,
    #[serde(default)]
    steps: Vec<StepFile>,
    success: bool,
    #[serde(default)]
    duration_ms: f64,
    #[serde(default)]
    model: String,
    #[serde(default)]
    timestamp: String,
    /// Who stored the run: written by this memory's export only, read past by the
    /// reference's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_by: Option<WriterFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StepFile {
    #[serde(default)]
    url: String,
    action: Json,
    #[serde(default)]
    snapshot_hash: String,
    #[serde(default)]
    verified: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expected_effect: Option<String>,
}

impl TrajectoryFile {
    pub(crate) fn into_record(self, path: &Path) -> Result<Trajectory> {
        let steps = self
            .steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                if !matches!(step.action, Json::Object(_)) {
                    return Err(field_error(
                        path,
                        format!("steps[{i}].action"),
                        "must be an object",
                    ));
                }
                let action = to_compact(&step.action).map_err(|source| Error::Encode {
                    what: format!("steps[{i}].action"),
                    source,
                })?;
                Ok(TrajectoryStep {
                    url: step.url,
                    action,
                    snapshot_hash: step.snapshot_hash,
                    verified: step.verified,
                    expected_effect: step.expected_effect,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let provenance = match self.written_by {
            Some(writer) => Some(writer.into_record(path, "writtenBy")?),
            None => None,
        };
        Ok(Trajectory {
            duration_ms: count(path, "durationMs", self.duration_ms)?,
            recorded_at: parse_date(&self.timestamp),
            origin: self.origin.as_deref().and_then(origin_of),
            id: self.id,
            goal: self.goal,
            steps,
            success: self.success,
            model: self.model,
            timestamp: self.timestamp,
            provenance,
        })
    }

    pub(crate) fn from_record(t: &Trajectory) -> Result<Self> {
        let steps = t
            .steps
            .iter()
            .map(|s| {
                let action =
                    serde_json::from_str::<Json>(&s.action).map_err(|source| Error::Encode {
                        what: format!("action of trajectory {}", t.id),
                        source,
                    })?;
                Ok(StepFile {
                    url: s.url.clone(),
                    action,
                    snapshot_hash: s.snapshot_hash.clone(),
                    verified: s.verified,
                    expected_effect: s.expected_effect.clone(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(TrajectoryFile {
            id: t.id.clone(),
            goal: t.goal.clone(),
            origin: t.origin.clone(),
            steps,
            success: t.success,
            duration_ms: t.duration_ms as f64,
            model: t.model.clone(),
            timestamp: t.timestamp.clone(),
            written_by: t.provenance.as_ref().map(WriterFile::from_record),
        })
    }
}

/// `knowledge.json`; old files have no `sessions` and may hold `type: "session"` facts.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KnowledgeFile {
    #[serde(default)]
    domain: String,
    #[serde(default)]
    facts: Vec<FactFile>,
    #[serde(default)]
    sessions: Vec<SessionFile>,
    #[serde(default)]
    updated_at: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FactFile {
    #[serde(rename = "type")]
    kind: String,
    key: String,
    value: String,
    confidence: f64,
    #[serde(default)]
    sources: f64,
    #[serde(default)]
    last_seen: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionFile {
    id: String,
    goal: String,
    #[serde(default)]
    outcome: String,
    #[serde(default)]
    success: bool,
    #[serde(default)]
    final_url: String,
    #[serde(default)]
    timestamp: String,
    #[serde(default)]
    turns_used: f64,
    #[serde(default)]
    duration_ms: f64,
}

/// `selectors.json`: entries keyed by element, in insertion order.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SelectorsFile {
    #[serde(default)]
    entries: Ordered<SelectorFile>,
    #[serde(default)]
    updated_at: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SelectorFile {
    element: String,
    #[serde(default)]
    success_count: f64,
    #[serde(default)]
    last_used: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stable_selector: Option<String>,
}

/// A JSON object read and written in key order.
#[derive(Debug)]
struct Ordered<V>(Vec<(String, V)>);

impl<V> Default for Ordered<V> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Ordered<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor<V>(std::marker::PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for OrderedVisitor<V> {
            type Value = Ordered<V>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered<V>, A::Error> {
                let mut entries: Vec<(String, V)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, V>()? {
                    match entries.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                Ok(Ordered(entries))
            }
        }
        deserializer.deserialize_map(OrderedVisitor(std::marker::PhantomData))
    }
}

/// Builds a site's memory from its two files, migrating old knowledge formats.
pub(crate) fn site_from_files(
    site: &str,
    knowledge: Option<(&Path, KnowledgeFile)>,
    selectors: Option<(&Path, SelectorsFile)>,
    now: Timestamp,
) -> Result<SiteMemory> {
    let mut memory = SiteMemory {
        site: site.to_owned(),
        ..SiteMemory::default()
    };
    if let Some((path, file)) = knowledge {
        memory.label = file.domain;
        memory.knowledge_updated_at = file.updated_at;
        for (i, s) in file.sessions.into_iter().enumerate() {
            (memory.sessions).push(session_record(path, &format!("sessions[{i}]"), s)?);
        }
        for (i, f) in file.facts.into_iter().enumerate() {
            if f.kind == "session" {
                // The format before session history kept runs as facts; they become sessions.
                memory.sessions.push(SessionEntry {
                    id: format!("migrated_{}", now.as_millis()),
                    goal: if f.key == "latest" {
                        "(previous run)".to_owned()
                    } else {
                        f.key
                    },
                    outcome: f.value,
                    success: true,
                    final_url: String::new(),
                    timestamp: f.last_seen,
                    turns_used: 0,
                    duration_ms: 0,
                });
                continue;
            }
            let kind = FactKind::parse(&f.kind).ok_or_else(|| {
                field_error(
                    path,
                    format!("facts[{i}].type"),
                    format!("{:?} is not timing, selector, pattern or quirk", f.kind),
                )
            })?;
            if !f.confidence.is_finite() {
                return Err(field_error(
                    path,
                    format!("facts[{i}].confidence"),
                    "must be a number",
                ));
            }
            memory.facts.push(Fact {
                kind,
                key: f.key,
                value: f.value,
                confidence: f.confidence,
                sources: count(path, &format!("facts[{i}].sources"), f.sources)?,
                last_seen: f.last_seen,
            });
        }
        // Every session the file holds is kept, as the reference keeps what it loads: the
        // bound of five applies when a run records a new one, so an export reads back the same.
    }
    if let Some((path, file)) = selectors {
        memory.selectors_updated_at = file.updated_at;
        for (element, e) in file.entries.0 {
            let field = format!("entries[{element:?}].successCount");
            memory.selectors.push(SelectorEntry {
                success_count: count(path, &field, e.success_count)?,
                // The map key is the element; the entry repeats it.
                element,
                last_ref: e.last_ref,
                stable_selector: e.stable_selector,
                last_used: e.last_used,
            });
        }
    }
    Ok(memory)
}

/// Whether a site has anything for `knowledge.json`.
pub(crate) fn has_knowledge(m: &SiteMemory) -> bool {
    !m.facts.is_empty()
        || !m.sessions.is_empty()
        || !m.knowledge_updated_at.is_empty()
        || !m.label.is_empty()
}

/// Whether a site has anything for `selectors.json`.
pub(crate) fn has_selectors(m: &SiteMemory) -> bool {
    !m.selectors.is_empty() || !m.selectors_updated_at.is_empty()
}

pub(crate) fn knowledge_file(m: &SiteMemory) -> KnowledgeFile {
    KnowledgeFile {
        domain: m.label.clone(),
        facts: m
            .facts
            .iter()
            .map(|f| FactFile {
                kind: f.kind.as_str().to_owned(),
                key: f.key.clone(),
                value: f.value.clone(),
                confidence: f.confidence,
                sources: f64::from(f.sources),
                last_seen: f.last_seen.clone(),
            })
            .collect(),
        sessions: m.sessions.iter().map(session_file).collect(),
        updated_at: m.knowledge_updated_at.clone(),
    }
}

pub(crate) fn selectors_file(m: &SiteMemory) -> SelectorsFile {
    SelectorsFile {
        entries: Ordered(
            m.selectors
                .iter()
                .map(|e| {
                    (
                        e.element.clone(),
                        SelectorFile {
                            element: e.element.clone(),
                            success_count: f64::from(e.success_count),
                            last_used: e.last_used.clone(),
                            last_ref: e.last_ref.clone(),
                            stable_selector: e.stable_selector.clone(),
                        },
                    )
                })
                .collect(),
        ),
        updated_at: m.selectors_updated_at.clone(),
    }
}

/// `agent-runs/*.json`, keys in the order the reference's start, update and complete leave
/// them.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestFile {
    run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_run_id: Option<String>,
    status: String,
    #[serde(default)]
    goal: String,
    #[serde(default)]
    domain: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    start_url: Option<String>,
    #[serde(default)]
    started_at: String,
    #[serde(default)]
    updated_at: String,
    #[serde(default)]
    artifact_paths: Vec<String>,
    #[serde(default)]
    turn_count: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    current_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    success: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    final_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    completed_at: Option<String>,
}

impl ManifestFile {
    pub(crate) fn into_record(self, path: &Path) -> Result<RunManifest> {
        let status = RunStatus::parse(&self.status).ok_or_else(|| {
            field_error(
                path,
                "status",
                format!("{:?} is not running, completed or failed", self.status),
            )
        })?;
        Ok(RunManifest {
            turn_count: count(path, "turnCount", self.turn_count)?,
            run_id: self.run_id,
            session_id: self.session_id,
            parent_run_id: self.parent_run_id,
            status,
            goal: self.goal,
            domain: self.domain,
            start_url: self.start_url,
            current_url: self.current_url,
            final_url: self.final_url,
            started_at: self.started_at,
            updated_at: self.updated_at,
            completed_at: self.completed_at,
            success: self.success,
            summary: self.summary,
            artifact_paths: self.artifact_paths,
            result: self.result,
            reason: self.reason,
        })
    }

    pub(crate) fn from_record(m: &RunManifest) -> Self {
        ManifestFile {
            run_id: m.run_id.clone(),
            session_id: m.session_id.clone(),
            parent_run_id: m.parent_run_id.clone(),
            status: m.status.as_str().to_owned(),
            goal: m.goal.clone(),
            domain: m.domain.clone(),
            start_url: m.start_url.clone(),
            started_at: m.started_at.clone(),
            updated_at: m.updated_at.clone(),
            artifact_paths: m.artifact_paths.clone(),
            turn_count: f64::from(m.turn_count),
            current_url: m.current_url.clone(),
            success: m.success,
            final_url: m.final_url.clone(),
            summary: m.summary.clone(),
            result: m.result.clone(),
            reason: m.reason.clone(),
            completed_at: m.completed_at.clone(),
        }
    }
}

/// `hints.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HintsFile {
    pub(crate) hints: String,
    #[serde(default)]
    pub(crate) updated_at: String,
}

/// The id of a suite summary file (`runs/*.json`), which must be an object with a string `id`.
pub(crate) fn suite_summary_id(path: &Path, text: &str) -> Result<String> {
    #[derive(Deserialize)]
    struct Head {
        id: String,
    }
    let _: de::IgnoredAny = parse(path, text)?;
    Ok(parse::<Head>(path, text)?.id)
}

/// Who wrote a record, as a memory file keeps it (`writtenBy`): the source's text form
/// (`page:URL`, `tool:NAME`, ...), the session and client when known, and the time as
/// ISO-8601 text. The reference's code reads past it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WriterFile {
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<String>,
    at: String,
}

impl WriterFile {
    pub(crate) fn from_record(p: &Provenance) -> Self {
        WriterFile {
            source: p.source.to_string(),
            session: p.session.clone(),
            client: p.client.clone(),
            at: iso(p.at),
        }
    }

    /// The writer, or an error naming `field` of the file at `path`.
    pub(crate) fn into_record(self, path: &Path, field: &str) -> Result<Provenance> {
        let source = Source::parse(&self.source)
            .map_err(|e| field_error(path, format!("{field}.source"), e.to_string()))?;
        let at = parse_date(&self.at).ok_or_else(|| {
            field_error(
                path,
                format!("{field}.at"),
                format!("{} is not an ISO-8601 time", Excerpt::quoted(&self.at)),
            )
        })?;
        Ok(Provenance {
            source,
            session: self.session,
            client: self.client,
            at,
        })
    }
}

/// `domains/<site>/log.json`, which only this memory writes: the site's log
/// ([`SiteLog`]) as it was exported, so that an import keeps who taught the site what and a
/// forget by writer still reaches it. The base is the site's two files' contents; each entry
/// is an observation with its writer, or a forget of the site's knowledge. The reference's
/// code never reads it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SiteLogFile {
    /// [`SITE_LOG_FORMAT`], so a later format can be told apart.
    format: String,
    base: LogBaseFile,
    entries: Vec<LogEntryFile>,
}

/// The `format` of a site's log file.
pub(crate) const SITE_LOG_FORMAT: &str = "agent-memory site log 1";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LogBaseFile {
    knowledge: KnowledgeFile,
    selectors: SelectorsFile,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct LogEntryFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    written_by: Option<WriterFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observed: Option<ObservedFile>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forgot: Option<ForgotFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ObservedFile {
    label: String,
    at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<SessionFile>,
    #[serde(default)]
    facts: Vec<ObservedFactFile>,
    #[serde(default)]
    selectors: Vec<ObservedSelectorFile>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservedFactFile {
    #[serde(rename = "type")]
    kind: String,
    key: String,
    value: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ObservedSelectorFile {
    element: String,
    selector: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForgotFile {
    sessions: bool,
    at: String,
}

fn session_file(s: &SessionEntry) -> SessionFile {
    SessionFile {
        id: s.id.clone(),
        goal: s.goal.clone(),
        outcome: s.outcome.clone(),
        success: s.success,
        final_url: s.final_url.clone(),
        timestamp: s.timestamp.clone(),
        turns_used: f64::from(s.turns_used),
        duration_ms: s.duration_ms as f64,
    }
}

fn session_record(path: &Path, field: &str, s: SessionFile) -> Result<SessionEntry> {
    Ok(SessionEntry {
        turns_used: count(path, &format!("{field}.turnsUsed"), s.turns_used)?,
        duration_ms: count(path, &format!("{field}.durationMs"), s.duration_ms)?,
        id: s.id,
        goal: s.goal,
        outcome: s.outcome,
        success: s.success,
        final_url: s.final_url,
        timestamp: s.timestamp,
    })
}

impl SiteLogFile {
    pub(crate) fn from_record(log: &SiteLog) -> Self {
        let entries = (log.entries.iter())
            .map(|entry| {
                let (observed, forgot) = match &entry.event {
                    LogEvent::Observed(o) => (
                        Some(ObservedFile {
                            label: o.label.clone(),
                            at: o.observed_at.clone(),
                            session: o.session.as_ref().map(session_file),
                            facts: (o.facts.iter())
                                .map(|f| ObservedFactFile {
                                    kind: f.kind.as_str().to_owned(),
                                    key: f.key.clone(),
                                    value: f.value.clone(),
                                })
                                .collect(),
                            selectors: (o.selectors.iter())
                                .map(|(element, selector)| ObservedSelectorFile {
                                    element: element.clone(),
                                    selector: selector.clone(),
                                })
                                .collect(),
                        }),
                        None,
                    ),
                    LogEvent::Forgot { sessions, at } => (
                        None,
                        Some(ForgotFile {
                            sessions: *sessions,
                            at: at.clone(),
                        }),
                    ),
                };
                LogEntryFile {
                    written_by: entry.by.as_ref().map(WriterFile::from_record),
                    observed,
                    forgot,
                }
            })
            .collect();
        SiteLogFile {
            format: SITE_LOG_FORMAT.to_owned(),
            base: LogBaseFile {
                knowledge: knowledge_file(&log.base),
                selectors: selectors_file(&log.base),
            },
            entries,
        }
    }

    /// The log of `site`, read from the file at `path`; an error names the field at fault.
    pub(crate) fn into_record(self, path: &Path, site: &str, now: Timestamp) -> Result<SiteLog> {
        if self.format != SITE_LOG_FORMAT {
            return Err(field_error(
                path,
                "format",
                format!(
                    "{} is not {SITE_LOG_FORMAT:?}",
                    Excerpt::quoted(&self.format)
                ),
            ));
        }
        let base = site_from_files(
            site,
            Some((path, self.base.knowledge)),
            Some((path, self.base.selectors)),
            now,
        )?;
        let mut entries = Vec::with_capacity(self.entries.len());
        for (i, entry) in self.entries.into_iter().enumerate() {
            let at = format!("entries[{i}]");
            let by = match entry.written_by {
                Some(w) => Some(w.into_record(path, &format!("{at}.writtenBy"))?),
                None => None,
            };
            let event = match (entry.observed, entry.forgot) {
                (Some(o), None) => {
                    let session = match o.session {
                        Some(s) => {
                            Some(session_record(path, &format!("{at}.observed.session"), s)?)
                        }
                        None => None,
                    };
                    let mut facts = Vec::with_capacity(o.facts.len());
                    for (j, f) in o.facts.into_iter().enumerate() {
                        let kind = FactKind::parse(&f.kind).ok_or_else(|| {
                            field_error(
                                path,
                                format!("{at}.observed.facts[{j}].type"),
                                format!(
                                    "{} is not timing, selector, pattern or quirk",
                                    Excerpt::quoted(&f.kind)
                                ),
                            )
                        })?;
                        facts.push(FactObservation {
                            kind,
                            key: f.key,
                            value: f.value,
                        });
                    }
                    LogEvent::Observed(Box::new(SiteObservation {
                        site: site.to_owned(),
                        label: o.label,
                        session,
                        facts,
                        selectors: (o.selectors.into_iter())
                            .map(|s| (s.element, s.selector))
                            .collect(),
                        observed_at: o.at,
                    }))
                }
                (None, Some(f)) => LogEvent::Forgot {
                    sessions: f.sessions,
                    at: f.at,
                },
                _ => {
                    return Err(field_error(
                        path,
                        at,
                        "must hold exactly one of observed and forgot",
                    ));
                }
            };
            entries.push(LogEntry { by, event });
        }
        Ok(SiteLog { base, entries })
    }
}
