//! Memory as evidence: who wrote each version of a note and what the write screen found
//! (`note_history`), going back to a version (`note_restore`), forgetting what one writer
//! wrote (`note_forget_by`), the review queue of held items (`memory_review`,
//! `memory_approve`, `memory_reject`, and for held browser runs `memory_approve_run`,
//! `memory_reject_run`), the store's screen policy (`memory_screen_policy`,
//! `memory_set_screen_policy`) and the audit trail (`memory_audit`).
//!
//! The screen policy is the store's own (`flag` until set): every write through every door
//! screens its text under it. Approving a held item and changing the policy are left out of
//! the MCP server, so a model cannot release what the screen held or turn the screen off.

use agent_memory_core::evidence::{Action, AuditFilter, Evidence, Status, Writer};
use agent_memory_core::screen::ScreenPolicy;
use agent_memory_core::store::notes::{Decision, NoteLimits, NotePath, NoteRecord, NoteVersion};
use agent_memory_core::{MetaKey, Provenance, Scope, Source, Timestamp};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::notes::DEFAULT_SCOPE;
use crate::{Env, Error, Result, time};

/// The meta key holding the store's screen policy.
pub const POLICY_KEY: &str = "screen.policy";

/// The most items a review or audit page holds unless told otherwise.
pub const DEFAULT_LIMIT: usize = 100;

/// The most items a review or audit page may hold: a client reads a longer trail a page at
/// a time (`after`, `before`), so no answer of a door grows with the store.
pub const MAX_LIMIT: usize = 1_000;

/// The `limit` a review or audit page takes: [`DEFAULT_LIMIT`] when absent; more than
/// [`MAX_LIMIT`] is refused, naming the field and, in `then`, how to read on.
fn page_limit(limit: Option<usize>, then: &str) -> Result<usize> {
    match limit {
        None => Ok(DEFAULT_LIMIT),
        Some(limit) if limit <= MAX_LIMIT => Ok(limit),
        Some(limit) => Err(Error::invalid(
            "limit",
            format!("limit {limit} is more than a page holds (at most {MAX_LIMIT}); {then}"),
        )),
    }
}

/// The store's screen policy: `flag` until set.
pub fn policy(env: &Env<'_>) -> Result<ScreenPolicy> {
    let key = MetaKey::new(POLICY_KEY)?;
    match env.store.meta_get(&key)? {
        Some(value) => Ok(ScreenPolicy::parse(&value)?),
        None => Ok(ScreenPolicy::default()),
    }
}

/// The store's screen policy is `quarantine`.
pub(crate) fn quarantined(env: &Env<'_>) -> Result<bool> {
    Ok(policy(env)? == ScreenPolicy::Quarantine)
}

/// Who wrote a version, in which session, through which client, and when.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceOutput {
    /// `user`, `tool:NAME`, `page:URL`, `model`, `model:NAME`, `import:FORMAT` or `unknown`.
    pub source: String,
    /// The session or run it was written in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The client it came through (`cli`, `mcp`, `inspector`, `python`, `node`, or the
    /// caller's own name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// When.
    pub at: String,
}

impl From<&Provenance> for ProvenanceOutput {
    fn from(p: &Provenance) -> Self {
        ProvenanceOutput {
            source: p.source.to_string(),
            session: p.session.clone(),
            client: p.client.clone(),
            at: time(p.at),
        }
    }
}

/// One version of a note.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VersionOutput {
    /// Its number, 1 for the note's first text.
    pub version: u64,
    /// Its text.
    pub text: String,
    /// Who wrote it.
    pub provenance: ProvenanceOutput,
    /// `clean`, `flagged`, `quarantined` (held for review) or `approved`.
    pub status: String,
    /// What the screen found, one finding each (`kind: reason`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

impl From<NoteVersion> for VersionOutput {
    fn from(v: NoteVersion) -> Self {
        VersionOutput {
            version: v.version,
            text: v.text,
            provenance: (&v.evidence.provenance).into(),
            status: v.evidence.status.as_str().to_owned(),
            reasons: v.evidence.reasons,
        }
    }
}

fn scope_of(scope: Option<&str>) -> Result<Scope> {
    Ok(Scope::new(scope.unwrap_or(DEFAULT_SCOPE))?)
}

/// A note's path as `/memories/...` or relative to it.
fn note_of(path: &str) -> Result<NotePath> {
    agent_memory_notes::note_path(path)
        .map_err(|e| Error::invalid("path", e.to_string()))?
        .ok_or_else(|| {
            Error::invalid(
                "path",
                format!("{path} is the /memories directory itself, not a note"),
            )
        })
}

/// The source an input names (`user`, `tool:NAME`, `model:NAME`, ...), refused by name
/// (`input: source`) when it does not read.
pub(crate) fn source_input(source: Option<&str>) -> Result<Option<Source>> {
    source
        .map(|s| Source::parse(s).map_err(|e| Error::invalid("source", e.to_string())))
        .transpose()
}

/// Who writes `source`'s item through `env`'s door, at `at`, in no session.
pub(crate) fn door_writer(env: &Env<'_>, source: Source, at: Timestamp) -> Provenance {
    Provenance {
        source,
        session: None,
        client: env.client.clone(),
        at,
    }
}

/// Who does what the caller asks now: `source` (the user by default), through `client`
/// (the door by default), in `session`.
pub(crate) fn actor(
    env: &Env<'_>,
    source: Option<&str>,
    session: Option<String>,
    client: Option<String>,
) -> Result<Provenance> {
    Ok(Provenance {
        source: match source {
            Some(s) => Source::parse(s)?,
            None => Source::User,
        },
        session,
        client: client.or_else(|| env.client.clone()),
        at: env.clock.now(),
    })
}

/// `note_history`: the versions of a note.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HistoryInput {
    /// The note, as `/memories/...`.
    pub path: String,
    /// Its scope; `default` when absent.
    #[serde(default)]
    pub scope: Option<String>,
}

/// Every kept version of a note, oldest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HistoryOutput {
    /// The scope.
    pub scope: String,
    /// The note, as `/memories/...`.
    pub path: String,
    /// Its versions, oldest first; empty when no note is there.
    pub versions: Vec<VersionOutput>,
}

/// Every kept version of a note, held ones too, with who wrote each.
pub fn history(env: &Env<'_>, input: HistoryInput) -> Result<HistoryOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let note = note_of(&input.path)?;
    let versions = env.store.note_history(&scope, &note)?;
    Ok(HistoryOutput {
        scope: scope.into_string(),
        path: format!("/memories/{note}"),
        versions: versions.into_iter().map(Into::into).collect(),
    })
}

/// `note_restore`: a note back to an earlier text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreInput {
    /// The note, as `/memories/...`.
    pub path: String,
    /// Its scope; `default` when absent.
    #[serde(default)]
    pub scope: Option<String>,
    /// The version to go back to.
    #[serde(default)]
    pub version: Option<u64>,
    /// Or the newest version written by this RFC 3339 time.
    #[serde(default)]
    pub at: Option<String>,
    /// Who restores it; `user` when absent.
    #[serde(default)]
    pub source: Option<String>,
}

/// The note's new version.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RestoreOutput {
    /// The scope.
    pub scope: String,
    /// The note.
    pub path: String,
    /// The version whose text it now holds.
    pub restored: u64,
    /// The new version holding it.
    pub version: VersionOutput,
}

/// Writes an earlier version's text as the note's newest version (a compare-and-swap on the
/// text it replaces, so a concurrent edit is never lost). A held version cannot be restored.
pub fn restore(env: &Env<'_>, input: RestoreInput) -> Result<RestoreOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let note = note_of(&input.path)?;
    let versions = env.store.note_history(&scope, &note)?;
    let newest = versions
        .last()
        .filter(|v| v.evidence.status.is_visible())
        .ok_or_else(|| Error::from(agent_memory_core::Error::not_found("note", note.as_str())))?;
    let wanted = match (input.version, input.at.as_deref()) {
        (Some(n), None) => versions.iter().find(|v| v.version == n).ok_or_else(|| {
            let kept: Vec<String> = versions.iter().map(|v| v.version.to_string()).collect();
            Error::invalid(
                "version",
                format!(
                    "the note {note} keeps no version {n}; it keeps {}",
                    kept.join(", ")
                ),
            )
        })?,
        (None, Some(at)) => {
            let at = parse_time(at)?;
            versions
                .iter()
                .rev()
                .find(|v| v.evidence.provenance.at <= at)
                .ok_or_else(|| {
                    Error::invalid(
                        "at",
                        format!("the note {note} keeps no version written by then"),
                    )
                })?
        }
        _ => {
            return Err(Error::invalid(
                "version",
                "give either a version or a time (at), not both or neither",
            ));
        }
    };
    if !wanted.evidence.status.is_visible() {
        return Err(Error::invalid(
            "version",
            format!(
                "version {} of {note} is held for review: approve it instead",
                wanted.version
            ),
        ));
    }
    let by = actor(env, input.source.as_deref(), None, None)?;
    let policy = policy(env)?;
    let evidence = Evidence::judged(by, &policy.judge(&wanted.text, None));
    let limits = agent_memory_core::store::notes::NoteLimits::default();
    env.store.note_replace(
        &scope,
        &note,
        &newest.text,
        &wanted.text,
        &evidence,
        &limits,
    )?;
    let now = env
        .store
        .note_history(&scope, &note)?
        .pop()
        .ok_or_else(|| Error::from(agent_memory_core::Error::not_found("note", note.as_str())))?;
    Ok(RestoreOutput {
        scope: scope.into_string(),
        path: format!("/memories/{note}"),
        restored: wanted.version,
        version: now.into(),
    })
}

fn parse_time(at: &str) -> Result<Timestamp> {
    chrono::DateTime::parse_from_rfc3339(at)
        .map(|t| Timestamp::from_millis(t.timestamp_millis()))
        .map_err(|e| Error::invalid("at", format!("{at:?} is not an RFC 3339 time: {e}")))
}

/// `note_forget_by`: what one writer wrote.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetByInput {
    /// Only this scope; every scope when absent.
    #[serde(default)]
    pub scope: Option<String>,
    /// The writer's source, exactly (`page:https://…`, `tool:NAME`, `model`).
    #[serde(default)]
    pub source: Option<String>,
    /// The session or run.
    #[serde(default)]
    pub session: Option<String>,
    /// The client.
    #[serde(default)]
    pub client: Option<String>,
}

impl ForgetByInput {
    /// The scope (every one when absent) and the writer whose items go.
    fn target(self) -> Result<(Option<Scope>, Writer)> {
        let scope = self.scope.as_deref().map(Scope::new).transpose()?;
        let writer = Writer {
            source: self.source.as_deref().map(Source::parse).transpose()?,
            session: self.session,
            client: self.client,
        };
        Ok((scope, writer))
    }
}

/// What a forget by provenance took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgetByOutput {
    /// Versions forgotten.
    pub versions: u64,
    /// Notes left with no version, and so gone.
    pub notes: u64,
    /// Notes that went back to an older version.
    pub restored: u64,
}

/// Forgets every version the writer wrote (every field given must match; at least one is
/// needed), in one step: a note goes back to its newest version left, or is gone.
pub fn forget_by(env: &Env<'_>, input: ForgetByInput) -> Result<ForgetByOutput> {
    let (scope, writer) = input.target()?;
    let by = actor(env, None, None, None)?;
    let forgot = env.store.note_forget_by(scope.as_ref(), &writer, &by)?;
    Ok(ForgetByOutput {
        versions: forgot.versions,
        notes: forgot.notes,
        restored: forgot.restored,
    })
}

/// A browser run forgotten by writer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgottenRun {
    /// Its scope.
    pub scope: String,
    /// Its trajectory id.
    pub trajectory_id: String,
}

/// What `browser_forget_by` took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct BrowserForgetByOutput {
    /// The runs forgotten, by scope then id: the recorded ones, then the held ones.
    pub trajectories: Vec<ForgottenRun>,
    /// The sites rebuilt without the writer's observations, by scope then site; a site only
    /// the writer taught is gone.
    pub sites: Vec<RebuiltSite>,
}

/// A site rebuilt without a writer's observations.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RebuiltSite {
    /// Its scope.
    pub scope: String,
    /// The site key.
    pub site: String,
    /// How many of the writer's observations (facts, selectors and sessions of one run or
    /// call each) were taken out.
    pub observations: u64,
}

/// Forgets every browser run the writer stored (every field given must match; at least one
/// is needed; a run stored before writers were kept matches none), and every run of the
/// writer's held for review, and rebuilds every site the writer taught (facts, selectors and
/// sessions) as if the writer had never written to it, in one step, each with an entry in the
/// audit trail. A site's observations from before its last import, or from before site logs
/// were kept, are part of its base and stay.
pub fn forget_browser_by(env: &Env<'_>, input: ForgetByInput) -> Result<BrowserForgetByOutput> {
    let (scope, writer) = input.target()?;
    let by = actor(env, None, None, None)?;
    let gone = env
        .store
        .trajectory_forget_by(scope.as_ref(), &writer, &by)?;
    Ok(BrowserForgetByOutput {
        trajectories: gone
            .runs
            .into_iter()
            .map(|(scope, id)| ForgottenRun {
                scope: scope.as_str().to_owned(),
                trajectory_id: id,
            })
            .collect(),
        sites: gone
            .sites
            .into_iter()
            .map(|(scope, site, observations)| RebuiltSite {
                scope: scope.as_str().to_owned(),
                site,
                observations,
            })
            .collect(),
    })
}

/// `recording_forget_by` and `turns_forget_by`: one writer, for memories without scopes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriterInput {
    /// The writer's source, exactly (`tool:NAME`, `page:https://…`, `model`, `import:FORMAT`).
    #[serde(default)]
    pub source: Option<String>,
    /// The session or run the writer wrote in.
    #[serde(default)]
    pub session: Option<String>,
    /// The client.
    #[serde(default)]
    pub client: Option<String>,
}

impl WriterInput {
    /// The writer it names; a source that does not parse is refused by name.
    pub(crate) fn writer(self) -> Result<Writer> {
        Ok(Writer {
            source: source_input(self.source.as_deref())?,
            session: self.session,
            client: self.client,
        })
    }
}

/// The tool calls of one recorded session forgotten by writer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgottenLogs {
    /// The recorded session.
    pub session: String,
    /// How many of its calls went.
    pub tool_logs: u64,
}

/// What `recording_forget_by` took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordingForgetByOutput {
    /// Each recorded session the writer's calls were taken from, by session.
    pub sessions: Vec<ForgottenLogs>,
}

/// Forgets every recorded tool call the writer logged (every field given must match; at
/// least one is needed; a call logged before writers were kept matches none), from every
/// session, in one step, one audit entry per session. The session's other calls stay, in
/// order.
pub fn forget_recording_by(env: &Env<'_>, input: WriterInput) -> Result<RecordingForgetByOutput> {
    let by = actor(env, None, None, None)?;
    let gone = env.store.forget_tool_logs_by(&input.writer()?, &by)?;
    Ok(RecordingForgetByOutput {
        sessions: gone
            .into_iter()
            .map(|(session, tool_logs)| ForgottenLogs {
                session: session.as_str().to_owned(),
                tool_logs,
            })
            .collect(),
    })
}

/// A coding session forgotten by writer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ForgottenSession {
    /// The session.
    pub session: String,
    /// How many events its log held.
    pub events: u64,
}

/// What `turns_forget_by` took.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnsForgetByOutput {
    /// Each session forgotten, by session.
    pub sessions: Vec<ForgottenSession>,
}

/// Forgets, whole, every stored coding session holding an event the writer appended
/// (every field given must match; at least one is needed; an event appended before writers
/// were kept matches none), in one step, one audit entry per session. A session's log is
/// positional, so what the writer touched goes with the rest of its log.
pub fn forget_turns_by(env: &Env<'_>, input: WriterInput) -> Result<TurnsForgetByOutput> {
    let by = actor(env, None, None, None)?;
    let gone = env.store.session_forget_by(&input.writer()?, &by)?;
    Ok(TurnsForgetByOutput {
        sessions: gone
            .into_iter()
            .map(|(session, events)| ForgottenSession {
                session: session.as_str().to_owned(),
                events,
            })
            .collect(),
    })
}

/// `note_export`: the notes of a scope.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesExportInput {
    /// The scope; `default` when absent.
    #[serde(default)]
    pub scope: Option<String>,
}

/// A note with every version it keeps, oldest first.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteDocument {
    /// The note, as `/memories/...`.
    pub path: String,
    /// Its versions, oldest first; the last is its text.
    pub versions: Vec<VersionOutput>,
}

/// The notes of a scope, held ones too, each with its versions: what `note_import` reads.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotesDocument {
    /// The scope: the one `note_export` read, the one `note_import` writes into (`default`
    /// when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// The notes, by path.
    pub notes: Vec<NoteDocument>,
}

/// Every note of a scope, held ones too, with each version's text, writer and findings: a
/// copy `note_import` writes back, into this store or another.
pub fn export(env: &Env<'_>, input: NotesExportInput) -> Result<NotesDocument> {
    let scope = scope_of(input.scope.as_deref())?;
    let records = env.store.note_export(&scope)?;
    Ok(NotesDocument {
        scope: Some(scope.into_string()),
        notes: records
            .into_iter()
            .map(|r| NoteDocument {
                path: format!("/memories/{}", r.path),
                versions: r.versions.into_iter().map(Into::into).collect(),
            })
            .collect(),
    })
}

/// What an import wrote.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NotesImportOutput {
    /// The scope written into.
    pub scope: String,
    /// Notes written.
    pub notes: usize,
    /// Versions written.
    pub versions: usize,
    /// Notes held for review (their newest version is quarantined).
    pub held: usize,
}

/// One imported version, checked: its writer and time read, and its status never weaker than
/// what the store's screen finds in its text now (an `approved` version stays approved).
fn imported_version(policy: ScreenPolicy, at: &str, v: VersionOutput) -> Result<NoteVersion> {
    let field = |name: &str| format!("{at}.{name}");
    let provenance = Provenance {
        source: Source::parse(&v.provenance.source)
            .map_err(|e| Error::invalid(field("provenance.source"), e.to_string()))?,
        session: v.provenance.session,
        client: v.provenance.client,
        at: parse_time(&v.provenance.at)
            .map_err(|e| Error::invalid(field("provenance.at"), e.to_string()))?,
    };
    let status =
        Status::parse(&v.status).map_err(|e| Error::invalid(field("status"), e.to_string()))?;
    let recorded = Evidence {
        provenance,
        status,
        reasons: v.reasons,
    };
    let evidence = match status {
        Status::Clean => {
            let host = recorded.provenance.source.host();
            let verdict = policy.judge(&v.text, host.as_deref());
            if verdict.findings().is_empty() {
                recorded
            } else {
                Evidence::judged(recorded.provenance, &verdict)
            }
        }
        Status::Flagged if policy == ScreenPolicy::Quarantine => Evidence {
            status: Status::Quarantined,
            ..recorded
        },
        _ => recorded,
    };
    Ok(NoteVersion {
        version: v.version,
        text: v.text,
        evidence,
    })
}

/// Writes the notes of a document (what `note_export` gives) into a scope, in one step:
/// every note with its versions, or nothing when one is refused (a taken path, versions out
/// of order, a limit). Each version keeps its writer; its status is never weaker than what
/// the store's screen policy makes of its text now. A person's operation, not an MCP tool.
pub fn import(env: &Env<'_>, input: NotesDocument) -> Result<NotesImportOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let policy = policy(env)?;
    let limits = NoteLimits::default();
    let mut records = Vec::with_capacity(input.notes.len());
    for (i, note) in input.notes.into_iter().enumerate() {
        let at = format!("notes[{i}]");
        let path =
            note_of(&note.path).map_err(|e| Error::invalid(format!("{at}.path"), e.to_string()))?;
        let mut versions = Vec::with_capacity(note.versions.len());
        for (j, v) in note.versions.into_iter().enumerate() {
            crate::persistent::check_note_write(&scope, &note.path, &v.text)?;
            versions.push(imported_version(policy, &format!("{at}.versions[{j}]"), v)?);
        }
        records.push(NoteRecord { path, versions });
    }
    let by = actor(env, Some("import:notes"), None, None)?;
    env.store.note_import(&scope, &records, &limits, &by)?;
    Ok(NotesImportOutput {
        scope: scope.into_string(),
        notes: records.len(),
        versions: records.iter().map(|r| r.versions.len()).sum(),
        held: records
            .iter()
            .filter(|r| r.newest().is_some_and(|v| !v.evidence.status.is_visible()))
            .count(),
    })
}

/// `memory_review`: the items held for review.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewInput {
    /// Only this scope (all when absent).
    #[serde(default)]
    pub scope: Option<String>,
    /// At most this many (100 when absent).
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub limit: Option<usize>,
}

/// An item held for review.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HeldItem {
    /// The memory it is in (`notes`).
    pub memory: String,
    /// Its scope.
    pub scope: String,
    /// The item: a note's path.
    pub path: String,
    /// The held version, with its text, who wrote it and why it is held.
    #[serde(flatten)]
    pub version: VersionOutput,
}

/// A browser run held for review: what it would store, who wrote it and why it is held.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HeldRunItem {
    /// Its scope.
    pub scope: String,
    /// The held run's id (the trajectory id approval records it under).
    pub id: String,
    /// The site it would teach.
    pub site: String,
    /// The run's goal.
    pub goal: String,
    /// The run's reported outcome.
    pub outcome: String,
    /// Each step it would store: the page and the action.
    pub steps: Vec<HeldStep>,
    /// The selectors it would store, as `[element, selector]`.
    pub selectors: Vec<(String, String)>,
    /// Who wrote it, and when it was held.
    pub provenance: ProvenanceOutput,
    /// What the screen found, one finding each (`FIELD: KIND: REASON`).
    pub reasons: Vec<String>,
}

/// One step of a held run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HeldStep {
    /// The page.
    pub url: String,
    /// The action, as JSON text.
    pub action: String,
}

/// The review queue.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReviewOutput {
    /// The store's screen policy: `off`, `flag` or `quarantine`.
    pub policy: String,
    /// The held note versions, by scope and path.
    pub held: Vec<HeldItem>,
    /// The held browser runs, oldest first (`memory_approve_run`, `memory_reject_run`).
    pub runs: Vec<HeldRunItem>,
}

/// The items the screen held, each with its text, its provenance and the reasons.
pub fn review(env: &Env<'_>, input: ReviewInput) -> Result<ReviewOutput> {
    let scope = input.scope.as_deref().map(Scope::new).transpose()?;
    let limit = page_limit(
        input.limit,
        "approve or reject these, and the next are listed",
    )?;
    let held = env.store.note_held(scope.as_ref(), limit)?;
    Ok(ReviewOutput {
        policy: policy(env)?.as_str().to_owned(),
        held: held
            .into_iter()
            .map(|h| HeldItem {
                memory: "notes".to_owned(),
                scope: h.scope.into_string(),
                path: format!("/memories/{}", h.path),
                version: h.version.into(),
            })
            .collect(),
        runs: held_runs(env, scope.as_ref(), limit)?,
    })
}

/// The browser runs held in `scope` (every scope when `None`), oldest first.
fn held_runs(env: &Env<'_>, scope: Option<&Scope>, limit: usize) -> Result<Vec<HeldRunItem>> {
    let mut items = Vec::new();
    for (scope, held) in env.store.runs_held(scope, limit)? {
        let run = agent_memory_browser::held_contents(&held)?;
        items.push(HeldRunItem {
            scope: scope.into_string(),
            id: held.id,
            site: held.site,
            goal: held.goal,
            outcome: run.site.session.map(|s| s.outcome).unwrap_or_default(),
            steps: run
                .trajectory
                .steps
                .into_iter()
                .map(|step| HeldStep {
                    url: step.url,
                    action: step.action,
                })
                .collect(),
            selectors: run.site.selectors,
            provenance: (&held.written_by).into(),
            reasons: held.reasons,
        });
    }
    Ok(items)
}

/// `memory_approve_run` and `memory_reject_run`: a decision on a held browser run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunDecisionInput {
    /// The held run's id, as `memory_review` shows it.
    pub id: String,
    /// Its scope; `shared` when absent.
    #[serde(default)]
    pub scope: Option<String>,
    /// Who decides (kept in the audit trail as its session).
    #[serde(default)]
    pub reviewer: Option<String>,
}

/// What was decided on a held run.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunDecisionOutput {
    /// The scope.
    pub scope: String,
    /// The held run.
    pub id: String,
    /// `approved` (recorded as it was held: its trajectory, session, facts and selectors)
    /// or `rejected` (erased).
    pub decision: String,
}

/// Records a held browser run as it was held, taking it off the queue, in one step.
pub fn approve_run(env: &Env<'_>, input: RunDecisionInput) -> Result<RunDecisionOutput> {
    decide_run(env, input, Decision::Approve)
}

/// Erases a held browser run.
pub fn reject_run(env: &Env<'_>, input: RunDecisionInput) -> Result<RunDecisionOutput> {
    decide_run(env, input, Decision::Reject)
}

fn decide_run(
    env: &Env<'_>,
    input: RunDecisionInput,
    decision: Decision,
) -> Result<RunDecisionOutput> {
    let scope = crate::browser::scope_of(input.scope.as_deref())?;
    let by = actor(env, None, input.reviewer, None)?;
    let memory = crate::browser::memory(env, scope.clone());
    let decided = match decision {
        Decision::Approve => memory.approve_held(&input.id, &by)?.is_some(),
        Decision::Reject => memory.reject_held(&input.id, &by)?,
    };
    if !decided {
        return Err(Error::not_found(
            "held run",
            format!("no run {} is held in scope {scope}", input.id),
        ));
    }
    Ok(RunDecisionOutput {
        scope: scope.into_string(),
        id: input.id,
        decision: match decision {
            Decision::Approve => "approved",
            Decision::Reject => "rejected",
        }
        .to_owned(),
    })
}

/// `memory_approve` and `memory_reject`: a decision on a held item.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionInput {
    /// The note, as `/memories/...`.
    pub path: String,
    /// Its scope; `default` when absent.
    #[serde(default)]
    pub scope: Option<String>,
    /// The held version, as `memory_review` shows it.
    pub version: u64,
    /// Who decides (kept in the audit trail as its session).
    #[serde(default)]
    pub reviewer: Option<String>,
}

/// What was decided.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DecisionOutput {
    /// The scope.
    pub scope: String,
    /// The note.
    pub path: String,
    /// The version decided on.
    pub version: u64,
    /// `approved` (recalled from now on, marked) or `rejected` (forgotten: the note went
    /// back to the version before, or is gone).
    pub decision: String,
}

fn decide(env: &Env<'_>, input: DecisionInput, decision: Decision) -> Result<DecisionOutput> {
    let scope = scope_of(input.scope.as_deref())?;
    let note = note_of(&input.path)?;
    let by = actor(env, None, input.reviewer, None)?;
    env.store
        .note_review(&scope, &note, input.version, decision, &by)?;
    Ok(DecisionOutput {
        scope: scope.into_string(),
        path: format!("/memories/{note}"),
        version: input.version,
        decision: match decision {
            Decision::Approve => "approved",
            Decision::Reject => "rejected",
        }
        .to_owned(),
    })
}

/// Approves a held version: recalled from now on, marked approved.
pub fn approve(env: &Env<'_>, input: DecisionInput) -> Result<DecisionOutput> {
    decide(env, input, Decision::Approve)
}

/// Rejects a held version: forgotten, its text erased.
pub fn reject(env: &Env<'_>, input: DecisionInput) -> Result<DecisionOutput> {
    decide(env, input, Decision::Reject)
}

/// `memory_set_screen_policy`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPolicyInput {
    /// `off` (no screening), `flag` (store and mark what the screen finds; the default) or
    /// `quarantine` (hold it for review).
    pub policy: String,
}

/// The store's screen policy.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PolicyOutput {
    /// `off`, `flag` or `quarantine`.
    pub policy: String,
}

/// The store's screen policy.
pub fn screen_policy(env: &Env<'_>, _input: crate::operations::NoInput) -> Result<PolicyOutput> {
    Ok(PolicyOutput {
        policy: policy(env)?.as_str().to_owned(),
    })
}

/// Sets the store's screen policy for every later write, through every door, with an entry in
/// the audit trail naming who set it (memory `store`, item `screen.policy`).
pub fn set_screen_policy(env: &Env<'_>, input: SetPolicyInput) -> Result<PolicyOutput> {
    let policy =
        ScreenPolicy::parse(&input.policy).map_err(|e| Error::invalid("policy", e.to_string()))?;
    let by = actor(env, None, None, None)?;
    env.store
        .setting_set(&MetaKey::new(POLICY_KEY)?, policy.as_str(), &by)?;
    Ok(PolicyOutput {
        policy: policy.as_str().to_owned(),
    })
}

/// `memory_audit`: the audit trail.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditInput {
    /// Entries after this `seq` (from the first when absent).
    #[serde(default)]
    pub after: Option<u64>,
    /// At most this many (100 when absent).
    #[serde(default)]
    #[schemars(range(max = 1000))]
    pub limit: Option<usize>,
    /// Only this memory's entries.
    #[serde(default)]
    pub memory: Option<String>,
    /// Only this action's entries.
    #[serde(default)]
    pub action: Option<String>,
    /// The newest entries below this `seq`.
    #[serde(default)]
    pub before: Option<u64>,
}

/// One entry of the trail.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditEntryOutput {
    /// Its place in the trail.
    pub seq: u64,
    /// `write`, `delete`, `rename`, `approve`, `reject` or `forget`.
    pub action: String,
    /// The memory: `notes`, `browser`, `trajectory`, `turns` or `recording`; `store` for a
    /// setting of the store itself (`memory_set_screen_policy`).
    pub memory: String,
    /// The scope; empty for a partition's or a session's memory, or a setting.
    pub scope: String,
    /// The item: a note's path, as `/memories/...` (`/memories/` for a whole scope), a
    /// trajectory id, `run:ID`, `site:KEY`, `scope`, a partition, a session, or a setting's
    /// name (`screen.policy`).
    pub item: String,
    /// Who did it, and when.
    pub by: ProvenanceOutput,
    /// The version written and its status, the new path, what a forget deleted, or a
    /// setting's value and the one it replaced (`quarantine (was flag)`).
    pub detail: String,
}

/// A page of the trail.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditOutput {
    /// How many entries the trail holds (of the memory and action asked for).
    pub total: u64,
    /// The page's entries, oldest first.
    pub entries: Vec<AuditEntryOutput>,
}

/// The audit trail: each write, review and forget, with who and when; never a text. A
/// `memory` or an `action` takes only their entries, `total` counting what they take. A page
/// runs forward from the first entry, or from `after`; with `before` it holds the newest
/// entries below it (a number past the end, such as `u64::MAX`, for the newest page), still
/// oldest first, and its first `seq` is the `before` of the page before it.
pub fn audit(env: &Env<'_>, input: AuditInput) -> Result<AuditOutput> {
    let filter = AuditFilter {
        memory: input.memory,
        action: input.action.as_deref().map(Action::parse).transpose()?,
        before: input.before,
    };
    let page = env.store.audit_select(
        &filter,
        input.after,
        page_limit(input.limit, "read on with `after` or `before`")?,
    )?;
    Ok(AuditOutput {
        total: page.total,
        entries: page
            .items
            .into_iter()
            .map(|e| AuditEntryOutput {
                item: if e.memory == "notes" {
                    format!("/memories/{}", e.item)
                } else {
                    e.item
                },
                seq: e.seq,
                action: e.action.as_str().to_owned(),
                memory: e.memory,
                scope: e.scope,
                by: (&e.by).into(),
                detail: e.detail,
            })
            .collect(),
    })
}
