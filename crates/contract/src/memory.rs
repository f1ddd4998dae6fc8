//! `memory_list` and `memory_forget`: what the database holds, and forgetting a part of it.

use crate::{Error, Result, ResultExt};
use agent_memory_browser::site_key;
use agent_memory_core::store::browser::{
    BrowserStore, RunFilter, RunManifestStore, SiteMemoryStore, TrajectoryStore,
};
use agent_memory_core::{
    MetaKey, MetaStore, NoteStore, Partition, PatternStore, Scope, SessionId, SessionStore,
    Timestamp, ToolLogStore,
};
use chrono::DateTime;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Env, time};

/// Everything the database holds, by memory.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryList {
    /// Procedural-memory partitions, by name.
    pub partitions: Vec<PartitionEntry>,
    /// Coding-agent sessions (turn memory), by id.
    pub turn_sessions: Vec<TurnSessionEntry>,
    /// Sessions of recorded tool calls, by id.
    pub tool_log_sessions: Vec<ToolLogSessionEntry>,
    /// Browser-memory scopes, by name.
    pub browser_scopes: Vec<BrowserScopeEntry>,
    /// Scopes holding notes (a `/memories` tree each), by name; left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub note_scopes: Vec<NoteScopeEntry>,
}

/// One scope of notes.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NoteScopeEntry {
    /// The scope's name.
    pub scope: String,
    /// Notes (files) it holds.
    pub notes: u64,
    /// Their bytes in all.
    pub bytes: u64,
    /// When a note of it was last created, changed, renamed or deleted (RFC 3339); left out
    /// when not known (written before the database kept the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write: Option<String>,
    /// Notes held for review (`memory_review` lists them); left out when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub held: u64,
}

/// One procedural-memory partition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PartitionEntry {
    /// The partition's name.
    pub partition: String,
    /// Its fingerprint fields, fixed by its first record (empty when unknown).
    pub fields: Vec<String>,
    /// Episodes stored.
    pub episodes: u64,
    /// Patterns (groups at or above the threshold).
    pub patterns: u64,
    /// Groups still below the threshold.
    pub pending_groups: u64,
    /// The bytes of its episodes' trajectories and outcomes as stored.
    pub bytes: u64,
    /// When its newest episode was recorded (RFC 3339); left out when it holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write: Option<String>,
}

/// One coding-agent session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnSessionEntry {
    /// The session id.
    pub session: String,
    /// Events in its log.
    pub events: u64,
    /// The bytes of its events as stored.
    pub bytes: u64,
    /// When its last event was appended (RFC 3339); left out when not known (written before
    /// the database kept the time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write: Option<String>,
}

/// One session of recorded tool calls.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ToolLogSessionEntry {
    /// The session id.
    pub session: String,
    /// Tool logs stored.
    pub logs: u64,
    /// The bytes of their tool names, parameters and errors as stored.
    pub bytes: u64,
    /// The newest log's time (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write: Option<String>,
}

/// One browser-memory scope.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BrowserScopeEntry {
    /// The scope's name.
    pub scope: String,
    /// The sites it holds memory of, by key.
    pub sites: Vec<String>,
    /// Trajectories stored.
    pub trajectories: u64,
    /// The newest trajectory's or run's time (RFC 3339); left out when it holds neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_write: Option<String>,
}

/// The settings of a partition's configuration, each stored under
/// `trajectory.<setting>.<partition>` with its first episodes.
pub const PARTITION_SETTINGS: [&str; 4] = [
    "fields",
    "cluster_threshold",
    "evidence_cap",
    "initial_confidence",
];

/// The `meta` key holding one setting of a partition's configuration.
pub fn setting_key(partition: &Partition, setting: &str) -> Result<MetaKey> {
    Ok(MetaKey::new(format!(
        "trajectory.{setting}.{}",
        partition.as_str()
    ))?)
}

/// The `meta` key holding a partition's fingerprint fields.
pub fn fields_key(partition: &Partition) -> Result<MetaKey> {
    setting_key(partition, "fields")
}

/// Lists every partition, session and scope with its counts.
pub fn list(env: &Env<'_>, _: crate::operations::NoInput) -> Result<MemoryList> {
    let store = env.store;
    let mut partitions = Vec::new();
    for summary in store.partitions()? {
        let fields = store
            .meta_get(&fields_key(&summary.partition)?)?
            .map(|f| f.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        partitions.push(PartitionEntry {
            partition: summary.partition.as_str().to_owned(),
            fields,
            episodes: summary.episodes,
            patterns: summary.patterns,
            pending_groups: summary.pending_groups,
            bytes: summary.bytes,
            last_write: summary.last_write.map(time),
        });
    }
    let turn_sessions = store
        .session_list()?
        .into_iter()
        .map(|s| TurnSessionEntry {
            session: s.id.as_str().to_owned(),
            events: s.events,
            bytes: s.bytes,
            last_write: s.last_write.map(time),
        })
        .collect();
    let tool_log_sessions = store
        .tool_log_sessions()?
        .into_iter()
        .map(|s| ToolLogSessionEntry {
            session: s.session.as_str().to_owned(),
            logs: s.logs,
            bytes: s.bytes,
            last_write: s.last_write.map(time),
        })
        .collect();
    let mut browser_scopes = Vec::new();
    for scope in store.browser_scopes()? {
        browser_scopes.push(BrowserScopeEntry {
            sites: store.site_list(&scope)?,
            trajectories: store.trajectory_count(&scope)?,
            last_write: browser_last_write(store, &scope)?.map(time),
            scope: scope.as_str().to_owned(),
        });
    }
    let note_scopes = store
        .note_scopes()?
        .into_iter()
        .map(|s| NoteScopeEntry {
            scope: s.scope.into_string(),
            notes: s.notes,
            bytes: s.bytes,
            last_write: s.last_write.map(time),
            held: s.held,
        })
        .collect();
    Ok(MemoryList {
        partitions,
        turn_sessions,
        tool_log_sessions,
        browser_scopes,
        note_scopes,
    })
}

/// The newest time of a browser scope: its newest trajectory's (when it was recorded) or its
/// newest run's last update, whichever is later.
fn browser_last_write(store: &crate::Store, scope: &Scope) -> Result<Option<Timestamp>> {
    let newest_run = RunFilter {
        limit: Some(1),
        ..RunFilter::default()
    };
    let run = store
        .run_list(scope, &newest_run)?
        .iter()
        .filter_map(|r| {
            DateTime::parse_from_rfc3339(&r.updated_at)
                .ok()
                .map(|t| Timestamp::from_millis(t.timestamp_millis()))
        })
        .max();
    Ok(store.trajectory_newest(scope)?.max(run))
}

/// What to forget: exactly one of `partition`, `session`, `scope`, `run`, `trajectory`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetInput {
    /// A partition: its episodes, patterns and settings.
    #[serde(default)]
    pub partition: Option<String>,
    /// A session: its events and recorded tool calls.
    #[serde(default)]
    pub session: Option<String>,
    /// A scope: its browser memory and notes; with `site`, only that site.
    #[serde(default)]
    pub scope: Option<String>,
    /// With `scope`: only this site (`shop.example.com` or a URL on it).
    #[serde(default)]
    pub site: Option<String>,
    /// A browser run's manifest, in `in_scope`.
    #[serde(default)]
    pub run: Option<String>,
    /// A browser trajectory, by id, in `in_scope`.
    #[serde(default)]
    pub trajectory: Option<String>,
    /// The scope of `run` and `trajectory` (default `shared`).
    #[serde(default)]
    pub in_scope: Option<String>,
}

/// What a forget deleted.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct ForgetOutput {
    /// What was named, as `kind:name` (`partition:team-a`, `scope:shared/site:shop.test`).
    pub target: String,
    /// Episodes deleted.
    pub episodes: u64,
    /// Turn-memory events deleted.
    pub events: u64,
    /// Tool logs deleted.
    pub tool_logs: u64,
    /// Browser trajectories deleted.
    pub trajectories: u64,
    /// Browser site memories deleted.
    pub sites: u64,
    /// Run manifests deleted.
    pub runs: u64,
    /// Hint texts and suite summaries deleted.
    pub hints: u64,
    /// Notes deleted; left out when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub notes: u64,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// Forgets what `input` names. Each part is one store transaction that also appends the
/// forget to the audit trail (who, when, what and how many), and the deleted text is erased
/// from the file (see `SqliteStore`'s forget calls).
pub fn forget(env: &Env<'_>, input: ForgetInput) -> Result<ForgetOutput> {
    let named = [
        input.partition.is_some(),
        input.session.is_some(),
        input.scope.is_some(),
        input.run.is_some(),
        input.trajectory.is_some(),
    ]
    .into_iter()
    .filter(|n| *n)
    .count();
    if named != 1 {
        return Err(Error::invalid(
            "target",
            format!(
                "name exactly one of partition, session, scope, run or trajectory to forget (got {named})"
            ),
        ));
    }
    if input.site.is_some() && input.scope.is_none() {
        return Err(Error::invalid(
            "site",
            "a site is forgotten within a scope: name the scope too",
        ));
    }
    if input.in_scope.is_some() && input.run.is_none() && input.trajectory.is_none() {
        return Err(Error::invalid(
            "in_scope",
            "in_scope applies to run and trajectory only",
        ));
    }
    let store = env.store;
    // Each part's store call writes its forget to the audit trail, by the caller through the
    // door, in the same transaction as its delete.
    let by = crate::evidence::actor(env, None, None, None)?;
    let in_scope = || -> Result<Scope> {
        Ok(match &input.in_scope {
            Some(name) => Scope::new(name.as_str())?,
            None => Scope::shared(),
        })
    };
    if let Some(name) = &input.partition {
        let partition = Partition::new(name.as_str())?;
        // Its configuration goes in the same transaction as its episodes.
        let settings = (PARTITION_SETTINGS.iter())
            .map(|setting| setting_key(&partition, setting))
            .collect::<Result<Vec<_>>>()?;
        let settings: Vec<&MetaKey> = settings.iter().collect();
        let episodes = store.forget_partition(&partition, &settings, &by)?;
        return Ok(ForgetOutput {
            target: format!("partition:{name}"),
            episodes,
            ..ForgetOutput::default()
        });
    }
    if let Some(name) = &input.session {
        let session = SessionId::new(name.as_str())?;
        // Both parts are forgotten even when the first reports an error (its erasure held up
        // by a reader, say): a failure never leaves the other part behind.
        let events = store.session_forget(&session, &by);
        let tool_logs = store.forget_tool_logs(&session, &by);
        return Ok(ForgetOutput {
            target: format!("session:{name}"),
            events: events?,
            tool_logs: tool_logs?,
            ..ForgetOutput::default()
        });
    }
    if let Some(id) = &input.run {
        let scope = in_scope()?;
        let found = agent_memory_core::store::browser::RunManifestStore::run_forget(
            store, &scope, id, &by,
        )?;
        return Ok(ForgetOutput {
            target: format!("run:{id}"),
            runs: u64::from(found),
            ..ForgetOutput::default()
        });
    }
    if let Some(id) = &input.trajectory {
        let scope = in_scope()?;
        return Ok(ForgetOutput {
            target: format!("trajectory:{id}"),
            trajectories: u64::from(store.trajectory_forget(&scope, id, &by)?),
            ..ForgetOutput::default()
        });
    }
    let name = input.scope.as_deref().context("a scope is named")?;
    let scope = Scope::new(name)?;
    // A whole scope takes its notes with it; a site of it only its browser memory.
    let notes = match &input.site {
        None => store.note_forget(&scope, &by)?,
        Some(_) => 0,
    };
    let (target, forgotten) = match &input.site {
        None => (
            format!("scope:{name}"),
            store.forget_browser(&scope, None, &by)?,
        ),
        Some(site) => {
            // A URL names its site; a bare key is taken as it is.
            let key = if site.contains("://") {
                site_key(site)
            } else {
                site.clone()
            };
            let mut origins: Vec<String> = store
                .trajectory_list(&scope)?
                .into_iter()
                .filter_map(|t| t.origin)
                .filter(|origin| site_key(origin) == key)
                .collect();
            origins.sort();
            origins.dedup();
            (
                format!("scope:{name}/site:{key}"),
                store.forget_browser(&scope, Some((&key, &origins)), &by)?,
            )
        }
    };
    Ok(ForgetOutput {
        target,
        trajectories: forgotten.trajectories,
        sites: forgotten.sites,
        runs: forgotten.runs,
        hints: forgotten.hints,
        notes,
        ..ForgetOutput::default()
    })
}
