//! Replay resolution: the concrete calls a trail makes for one device classifier under the
//! current memory, every unresolved token reported before anything runs.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::interpolate::{MissingKeys, interpolate_at};
use crate::memory::Lookup;
use crate::path::JsonPath;
use crate::trail::{DeviceRecordings, LegacyItem, Step, StepKind, ToolCall, Tools, Trail};

/// A call ready to execute.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedCall {
    /// The tool.
    pub tool: String,
    /// Its parameters, every token resolved.
    pub parameters: Value,
}

/// What replay does for one step.
#[derive(Clone, Debug, PartialEq)]
pub enum StepAction {
    /// Execute these calls in order (none: a deliberate no-op).
    Replay(Vec<ResolvedCall>),
    /// No recording for this device: the agent drives the step.
    Agent,
}

/// One step of a replay plan.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedStep {
    /// The step's kind and text; `None` for legacy top-level `tools`.
    pub objective: Option<(StepKind, String)>,
    /// The classifier whose recording was chosen (unified form only).
    pub classifier: Option<String>,
    /// What to do.
    pub action: StepAction,
}

/// The recording closest to `classifier`: the exact one, else the one named by each shorter
/// `-`-separated prefix (`android-phone`, then `android`).
pub fn closest_recording<'r>(
    recordings: &'r DeviceRecordings,
    classifier: &str,
) -> Option<(&'r str, &'r Tools)> {
    let mut candidate = classifier;
    loop {
        if let Some((name, tools)) = recordings.get_key_value(candidate) {
            return Some((name.as_str(), tools));
        }
        candidate = &candidate[..candidate.rfind('-')?];
    }
}

/// Resolves every call `trail` makes on `classifier` under `memory`.
///
/// Fails with [`Error::Unresolved`] listing every token of every step that memory
/// cannot resolve, before returning any call.
///
/// ```
/// use agent_memory_core::Timestamp;
/// use agent_memory_recording::{plan_replay, Memory, Provenance, StepAction, Trail};
///
/// let trail = Trail::from_yaml_str(
///     "trail:\n- step: Sign in\n  recording:\n    android:\n    - signIn:\n        email: ${merchant_email}\n",
///     "t.yaml",
/// )?;
/// let mut memory = Memory::new();
/// memory.remember("merchant_email", "new@example.com", Provenance::unknown(Timestamp::from_millis(0)));
/// let plan = plan_replay(&trail, "android-phone", &memory)?;
/// let StepAction::Replay(calls) = &plan[0].action else { panic!("expected a replay") };
/// assert_eq!(calls[0].parameters["email"], "new@example.com");
/// # Ok::<(), agent_memory_recording::Error>(())
/// ```
pub fn plan_replay<L: Lookup + ?Sized>(
    trail: &Trail,
    classifier: &str,
    memory: &L,
) -> Result<Vec<PlannedStep>> {
    let mut plan = Vec::new();
    let mut missing = Vec::new();
    let mut resolve = |calls: &[ToolCall], prefix: String| -> Result<Vec<ResolvedCall>> {
        let mut resolved = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let params = call.params_json()?;
            let path = JsonPath::with_prefix(format!("{prefix}[{i}].{}", call.name));
            match interpolate_at(&params, memory, MissingKeys::Fail, path) {
                Ok(value) => resolved.push(ResolvedCall {
                    tool: call.name.clone(),
                    parameters: value.into_owned(),
                }),
                Err(Error::Unresolved { missing: more }) => missing.extend(more),
                Err(other) => return Err(other),
            }
        }
        Ok(resolved)
    };
    match trail {
        Trail::Legacy(items) => {
            for (i, item) in items.iter().enumerate() {
                match item {
                    LegacyItem::Config(_) => {}
                    LegacyItem::Tools(calls) => plan.push(PlannedStep {
                        objective: None,
                        classifier: None,
                        action: StepAction::Replay(resolve(calls, format!("[{i}].tools"))?),
                    }),
                    LegacyItem::Prompts(steps) => {
                        for (j, step) in steps.iter().enumerate() {
                            let action = match &step.recording {
                                Some(r) => StepAction::Replay(resolve(
                                    &r.tools,
                                    format!("[{i}].prompts[{j}].recording.tools"),
                                )?),
                                None => StepAction::Agent,
                            };
                            plan.push(PlannedStep {
                                objective: Some((step.kind, step.text.clone())),
                                classifier: None,
                                action,
                            });
                        }
                    }
                }
            }
        }
        Trail::Unified(unified) => {
            let head = unified
                .trailhead
                .iter()
                .map(|s| (s, "trailhead".to_owned()));
            let rest = unified
                .trail
                .iter()
                .enumerate()
                .map(|(i, s)| (s, format!("trail[{i}]")));
            for (step, at) in head.chain(rest) {
                plan.push(unified_step(step, &at, classifier, &mut resolve)?);
            }
        }
    }
    if !missing.is_empty() {
        return Err(Error::Unresolved { missing });
    }
    Ok(plan)
}

fn unified_step(
    step: &Step<DeviceRecordings>,
    at: &str,
    classifier: &str,
    resolve: &mut impl FnMut(&[ToolCall], String) -> Result<Vec<ResolvedCall>>,
) -> Result<PlannedStep> {
    let chosen = step
        .recording
        .as_ref()
        .and_then(|r| closest_recording(r, classifier));
    let (classifier, action) = match chosen {
        Some((name, tools)) => (
            Some(name.to_owned()),
            StepAction::Replay(resolve(&tools.calls, format!("{at}.recording.{name}"))?),
        ),
        None => (None, StepAction::Agent),
    };
    Ok(PlannedStep {
        objective: Some((step.kind, step.text.clone())),
        classifier,
        action,
    })
}
