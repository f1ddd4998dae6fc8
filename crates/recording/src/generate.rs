//! From calls to logs to trails: [`capture`] turns a tool call into a [`ToolLog`] with no
//! secret left in it; [`generate_recording`] turns a session's logs into a unified trail
//! whose parameters hold memory tokens.

use std::collections::HashSet;

use agent_memory_core::store::tool_log::ToolLog;
use agent_memory_core::{SessionId, Timestamp};
use serde_json::Value;
use serde_yaml::{Mapping, Value as Yaml};

use crate::config::Config;

use crate::error::{Error, Result};
use crate::memory::Snapshot;
use crate::templatize::{SnapshotIndex, Substitution, TemplatePolicy, matches_pattern};
use crate::trail::{DeviceRecordings, Step, StepKind, ToolCall, Trail, UnifiedTrail};

/// How a tool call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolOutcome {
    /// Whether it succeeded.
    pub success: bool,
    /// The error message when it failed.
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// When it finished.
    pub timestamp: Timestamp,
    /// The trace it belongs to.
    pub trace_id: Option<String>,
}

impl ToolOutcome {
    /// A call that succeeded after `duration_ms`, finishing at `timestamp`.
    pub fn succeeded(duration_ms: u64, timestamp: Timestamp) -> Self {
        ToolOutcome {
            success: true,
            error: None,
            duration_ms,
            timestamp,
            trace_id: None,
        }
    }

    /// A call that failed with `error` after `duration_ms`, finishing at `timestamp`.
    pub fn failed(error: impl Into<String>, duration_ms: u64, timestamp: Timestamp) -> Self {
        ToolOutcome {
            success: false,
            error: Some(error.into()),
            ..ToolOutcome::succeeded(duration_ms, timestamp)
        }
    }

    /// In the trace `trace_id`.
    #[must_use]
    pub fn with_trace(mut self, trace_id: impl Into<String>) -> Self {
        self.trace_id = Some(trace_id.into());
        self
    }
}

/// The log of one call, with the snapshot taken after it. Sensitive values are replaced by
/// their tokens in the parameters and the error message, and dropped from the snapshot:
/// the returned log holds no secret, so any store may keep it.
pub fn capture(
    session: &SessionId,
    tool_name: &str,
    parameters: &Value,
    outcome: &ToolOutcome,
    snapshot: &Snapshot,
) -> Result<ToolLog> {
    let index = SnapshotIndex::new(snapshot, &TemplatePolicy::secrets_only());
    let mut report = Vec::new();
    let parameters = index.templatize(parameters, 0, &mut report)?;
    let parameters = serde_json::to_string(&parameters).map_err(|e| Error::Parameters {
        tool: tool_name.to_owned(),
        message: e.to_string(),
    })?;
    Ok(ToolLog {
        session: session.clone(),
        tool_name: index.scrub(tool_name).into_owned(),
        parameters,
        success: outcome.success,
        error: outcome
            .error
            .as_deref()
            .map(|e| index.scrub(e).into_owned()),
        duration_ms: outcome.duration_ms,
        timestamp: outcome.timestamp,
        trace_id: outcome
            .trace_id
            .as_deref()
            .map(|t| index.scrub(t).into_owned()),
        memory_snapshot: Some(snapshot.to_stored()),
        provenance: None,
    })
}

/// One objective of a session: a step of the trail to generate. Logs from `started_at` up
/// to the next objective's start belong to it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Objective {
    /// Action or check.
    pub kind: StepKind,
    /// The objective's text.
    pub text: String,
    /// When the agent started on it.
    pub started_at: Timestamp,
}

impl Objective {
    /// The objective `text` of `kind`, started at `started_at`.
    pub fn new(kind: StepKind, text: impl Into<String>, started_at: Timestamp) -> Self {
        Objective {
            kind,
            text: text.into(),
            started_at,
        }
    }
}

/// The rules of recording generation.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GenerationPolicy {
    /// The rules of reverse templating.
    pub template: TemplatePolicy,
    /// Tool name patterns (exact, or a prefix ending in `*`) that are never recorded.
    pub not_recordable: Vec<String>,
    /// The device classifier the recordings are filed under.
    pub classifier: String,
    /// Entries of the trail's `config:` block (`title`, `target`, ...). The block also
    /// gets `id:`, the session's id, unless this sets one.
    pub config: Mapping,
}

impl GenerationPolicy {
    /// The default rules for `classifier`.
    pub fn for_classifier(classifier: impl Into<String>) -> Self {
        GenerationPolicy {
            template: TemplatePolicy::default(),
            not_recordable: vec!["objectiveStatus".to_owned(), "takeSnapshot".to_owned()],
            classifier: classifier.into(),
            config: Mapping::new(),
        }
    }

    /// With `template` as the rules of reverse templating.
    #[must_use]
    pub fn with_template(mut self, template: TemplatePolicy) -> Self {
        self.template = template;
        self
    }

    /// With `patterns` as the tools never recorded.
    #[must_use]
    pub fn with_not_recordable(mut self, patterns: Vec<String>) -> Self {
        self.not_recordable = patterns;
        self
    }

    /// With `key: value` in the trail's `config:` block.
    #[must_use]
    pub fn with_config(mut self, key: impl Into<String>, value: impl Into<Yaml>) -> Self {
        self.config.insert(Yaml::String(key.into()), value.into());
        self
    }

    fn recordable(&self, tool: &str) -> bool {
        !self.not_recordable.iter().any(|p| matches_pattern(p, tool))
    }
}

/// A generated trail and what was templated in it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GeneratedRecording {
    /// The unified trail, one step per objective.
    pub trail: Trail,
    /// Every substitution; `tool_index` is the log's index in the input.
    pub substitutions: Vec<Substitution>,
}

/// Generates a trail from a session's logs (in order) grouped by `objectives` (in order).
///
/// Keeps recordable tools, failed ones included; drops repeated log entries of one
/// execution (same trace id, tool and parameters); attaches logs from before the first
/// objective (orphans) to the last step. A step with no log gets no recording: the
/// generator never writes the empty, deliberate no-op state. Logs without a snapshot are
/// recorded as they are.
///
/// ```
/// use agent_memory_core::{SessionId, Timestamp};
/// use agent_memory_recording::{capture, generate_recording, GenerationPolicy, Memory, Objective, Provenance, StepKind, ToolOutcome};
/// use serde_json::json;
///
/// let at = Timestamp::from_millis(10);
/// let mut memory = Memory::new();
/// memory.remember("merchant_email", "shop+abc123@example.com", Provenance::tool("merchantFactory_load", at));
/// let session = SessionId::new("s1")?;
/// let outcome = ToolOutcome::succeeded(5, at);
/// let log = capture(&session, "signIn", &json!({"email": "shop+abc123@example.com"}), &outcome, &memory.snapshot())?;
/// let objectives = [Objective::new(StepKind::Step, "Sign in", Timestamp::from_millis(0))];
/// let generated = generate_recording(&objectives, &[log], &GenerationPolicy::for_classifier("android-phone"))?;
/// assert!(generated.trail.to_yaml_string()?.contains("email: ${merchant_email}"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn generate_recording(
    objectives: &[Objective],
    logs: &[ToolLog],
    policy: &GenerationPolicy,
) -> Result<GeneratedRecording> {
    let mut steps: Vec<(Step<DeviceRecordings>, Vec<ToolCall>)> = objectives
        .iter()
        .map(|o| {
            let step = Step::new(o.kind, o.text.clone());
            (step, Vec::new())
        })
        .collect();
    if steps.is_empty() && !logs.is_empty() {
        return Err(Error::NoObjective { logs: logs.len() });
    }
    let mut seen: HashSet<(&str, &str, &str)> = HashSet::new();
    let mut substitutions = Vec::new();
    for (tool_index, log) in logs.iter().enumerate() {
        if !policy.recordable(&log.tool_name) {
            continue;
        }
        if let Some(trace) = log.trace_id.as_deref()
            && !seen.insert((trace, log.tool_name.as_str(), log.parameters.as_str()))
        {
            continue;
        }
        let params: Value =
            serde_json::from_str(&log.parameters).map_err(|e| Error::Parameters {
                tool: log.tool_name.clone(),
                message: e.to_string(),
            })?;
        let params = match &log.memory_snapshot {
            Some(stored) => {
                let snapshot = Snapshot::from_stored(stored);
                let index = SnapshotIndex::new(&snapshot, &policy.template);
                index
                    .templatize(&params, tool_index, &mut substitutions)?
                    .into_owned()
            }
            None => params,
        };
        let call = ToolCall::from_json(log.tool_name.clone(), &params)?;
        // The last objective started at or before the log; none: an orphan, to the last.
        let owner = objectives
            .iter()
            .rposition(|o| o.started_at <= log.timestamp)
            .unwrap_or(objectives.len().saturating_sub(1));
        if let Some((_, calls)) = steps.get_mut(owner) {
            calls.push(call);
        }
    }
    let trail = steps
        .into_iter()
        .map(|(mut step, calls)| {
            if !calls.is_empty() {
                let mut recordings = DeviceRecordings::new();
                recordings.insert(policy.classifier.clone(), calls);
                step.recording = Some(recordings);
            }
            step
        })
        .collect();
    Ok(GeneratedRecording {
        trail: Trail::Unified(UnifiedTrail {
            config: Some(config(policy, logs)?),
            ..UnifiedTrail::new(trail)
        }),
        substitutions,
    })
}

/// The generated trail's `config:` block: the policy's entries, and `id:` the session of the
/// logs unless the policy gives one.
fn config(policy: &GenerationPolicy, logs: &[ToolLog]) -> Result<Config> {
    let mut mapping = Mapping::new();
    let id = Yaml::String("id".to_owned());
    if !policy.config.contains_key(&id)
        && let Some(log) = logs.first()
    {
        mapping.insert(id, Yaml::String(log.session.to_string()));
    }
    for (key, value) in &policy.config {
        mapping.insert(key.clone(), value.clone());
    }
    Config::from_mapping(mapping)
}
