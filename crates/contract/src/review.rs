//! The review of positional memories: a session's tool outputs and a partition's patterns.
//!
//! A session's log and a partition's episodes are positional, so under the `quarantine`
//! policy what the write screen flags in them is not stored aside, as a held note or browser
//! run is: it is left out when read (`turns_view`, `turns_history`, `trajectory_recall`). A
//! person approves it with a vouch: the store keeps the SHA-256 digest of the exact text
//! approved (never the text) with an `approve` entry in the audit trail, and the read-time
//! guards show a flagged text whose digest is vouched for in its session or partition. A text
//! that changes (an output written again, a pattern whose actions a crystallize replaced) is
//! flagged again until approved again. Rejecting is forgetting: `turns_forget_by` and
//! `trajectory_forget_by` take what one writer wrote.
//!
//! `turns_review` and `trajectory_review` list what the screen flags with the reasons and
//! who wrote it; `turns_approve_output` and `trajectory_approve_pattern` approve. None of
//! them is offered by the MCP server: the flagged text is what a model should not read, and
//! only a person should approve.

use std::collections::{BTreeMap, HashSet};

use agent_memory_core::evidence::{MAX_VOUCH_NAME_BYTES, Vouch};
use agent_memory_core::excerpt::Excerpt;
use agent_memory_core::screen::screen;
use agent_memory_core::store::trajectory::{Fingerprint, Pattern};
use agent_memory_core::{AuditStore, Partition, PatternStore, SessionId};
use agent_memory_turns::{ContextPolicy, EventLog as _, History, StoreLog};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::evidence::actor;
use crate::turns::SessionWriter;
use crate::{Env, Error, Result, ResultExt};

/// The memory a session's vouches and their audit entries name.
pub const TURNS: &str = "turns";

/// The memory a partition's vouches and their audit entries name.
pub const TRAJECTORY: &str = "trajectory";

/// The SHA-256 digest of `text` as a vouch keeps it: 64 lowercase hexadecimal digits.
pub fn digest(text: &str) -> String {
    agent_memory_browser::text_digest(text)
}

/// The calls of a stored session whose outputs a person approved: every output of the call
/// that the screen flags, as the session's untransformed view holds it, is vouched for. One
/// read of the store's vouches; the view is built only when the session has some.
pub(crate) fn approved_calls(
    env: &Env<'_>,
    session: &SessionId,
    history: &History,
) -> Result<HashSet<String>> {
    let vouched = vouched_in(env, TURNS, session.as_str())?;
    if vouched.is_empty() {
        return Ok(HashSet::new());
    }
    let view = history.model_view(&ContextPolicy::default());
    Ok(approved_among(&view.flagged_outputs(), &vouched))
}

/// The calls among `flagged` (a session's flagged outputs) whose every flagged output is
/// vouched for in `vouched`.
fn approved_among(
    flagged: &[agent_memory_turns::FlaggedOutput<'_>],
    vouched: &HashSet<String>,
) -> HashSet<String> {
    let mut approved = HashSet::new();
    let mut not = HashSet::new();
    for output in flagged {
        if vouched.contains(&digest(output.output)) {
            approved.insert(output.call_id.to_owned());
        } else {
            not.insert(output.call_id.to_owned());
        }
    }
    approved.retain(|id| !not.contains(id));
    approved
}

/// `turns_review`: the tool outputs of a stored session that the write screen flags.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnsReviewInput {
    /// The stored session.
    pub session: String,
}

/// A tool output the screen flags.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FlaggedOutput {
    /// The call's id (`turns_approve_output` takes it).
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The output, whole.
    pub output: String,
    /// What the screen found, one finding each (`KIND: REASON`).
    pub reasons: Vec<String>,
    /// Whether a person approved it: then every view shows it, marked `approved`.
    pub approved: bool,
}

/// A session's flagged tool outputs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TurnsReviewOutput {
    /// The session.
    pub session: String,
    /// The store's screen policy: under `quarantine` an output not approved is withheld from
    /// `turns_view` and `turns_history`.
    pub policy: String,
    /// The flagged outputs, in the session's order.
    pub outputs: Vec<FlaggedOutput>,
    /// Who appended the session's events, one entry per writer.
    pub writers: Vec<SessionWriter>,
}

/// The tool outputs of a stored session that the screen flags, each with the reasons and
/// whether it was approved, and the session's writers.
pub fn turns_review(env: &Env<'_>, input: TurnsReviewInput) -> Result<TurnsReviewOutput> {
    let (session, history, writers) = stored_session(env, &input.session)?;
    let view = history.model_view(&ContextPolicy::default());
    let flagged = view.flagged_outputs();
    let approved = approved_among(&flagged, &vouched_in(env, TURNS, session.as_str())?);
    Ok(TurnsReviewOutput {
        session: input.session,
        policy: crate::evidence::policy(env)?.as_str().to_owned(),
        outputs: flagged
            .into_iter()
            .map(|f| FlaggedOutput {
                approved: approved.contains(f.call_id),
                call_id: f.call_id.to_owned(),
                tool: f.tool.to_owned(),
                output: f.output.to_owned(),
                reasons: f.reasons,
            })
            .collect(),
        writers,
    })
}

/// A stored session, replayed, with its writers; not found when it has no events.
fn stored_session(env: &Env<'_>, name: &str) -> Result<(SessionId, History, Vec<SessionWriter>)> {
    let session = crate::turns::session_id(name)?;
    let loaded = match StoreLog::new(env.store, session.clone()).load() {
        Ok(loaded) => loaded,
        Err(agent_memory_turns::Error::Store(e)) if e.is_not_found() => {
            return Err(Error::not_found(
                name,
                format!("session {} has no events", Excerpt::quoted(name)),
            ));
        }
        Err(e) => return Err(Error::from(e)).with_context(|| env.store.location()),
    };
    let writers = crate::turns::session_writers(&loaded.writers);
    let history = History::replay_of(&session, loaded.events)?;
    Ok((session, history, writers))
}

/// `turns_approve_output`: a person's approval of a flagged tool output.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveOutputInput {
    /// The stored session.
    pub session: String,
    /// The call whose output to approve, as `turns_review` lists it.
    pub call_id: String,
    /// Who approves (kept in the audit trail as its session).
    #[serde(default)]
    pub reviewer: Option<String>,
}

/// What was approved.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApproveOutputOutput {
    /// The session.
    pub session: String,
    /// The call.
    pub call_id: String,
    /// `approved`: every view shows the output from now on, marked `approved`.
    pub decision: String,
    /// Whether it was approved already (the approval is recorded again).
    pub already: bool,
}

/// Approves the flagged output of one call: vouches for its exact text, with an entry in the
/// audit trail. Refused, writing nothing, when the session has no such call or the screen
/// flags nothing in its output.
pub fn turns_approve_output(
    env: &Env<'_>,
    input: ApproveOutputInput,
) -> Result<ApproveOutputOutput> {
    let (session, history, _) = stored_session(env, &input.session)?;
    let view = history.model_view(&ContextPolicy::default());
    let digests: Vec<String> = view
        .flagged_outputs()
        .into_iter()
        .filter(|f| f.call_id == input.call_id)
        .map(|f| digest(f.output))
        .collect();
    if digests.is_empty() {
        return Err(Error::not_found(
            input.call_id.as_str(),
            format!(
                "session {} has no output of call {} that the write screen flags",
                Excerpt::quoted(&input.session),
                Excerpt::quoted(&input.call_id)
            ),
        ));
    }
    let item = format!("call {}", input.call_id);
    let new = vouch_for(
        env,
        (TURNS, session.as_str(), &item),
        &digests,
        input.reviewer,
    )?;
    Ok(ApproveOutputOutput {
        session: input.session,
        call_id: input.call_id,
        decision: "approved".to_owned(),
        already: new == 0,
    })
}

/// A pattern's texts with their places: each action (`action N`, N from 1), then each
/// fingerprint value (`fingerprint FIELD`).
fn pattern_texts(pattern: &Pattern) -> impl Iterator<Item = (Place<'_>, &str)> {
    let actions = pattern
        .canonical_sequence
        .iter()
        .enumerate()
        .map(|(i, a)| (Place::Action(i + 1), a.as_str()));
    let values = pattern
        .fingerprint
        .pairs()
        .iter()
        .map(|(k, v)| (Place::Field(k), v.as_str()));
    actions.chain(values)
}

/// Where a text of a pattern stands.
#[derive(Clone, Copy)]
enum Place<'p> {
    /// Its Nth action, from 1.
    Action(usize),
    /// The value of a fingerprint field.
    Field(&'p str),
}

impl std::fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Action(n) => write!(f, "action {n}"),
            Place::Field(field) => write!(f, "fingerprint {field}"),
        }
    }
}

/// A text of a pattern the screen flags: what it found (`PLACE: KIND: REASON`, one finding
/// each) and the text's digest.
struct FlaggedText {
    reasons: Vec<String>,
    digest: String,
}

/// Each text of `pattern` the screen flags, in [`pattern_texts`]' order.
fn flagged_texts(pattern: &Pattern) -> Vec<FlaggedText> {
    pattern_texts(pattern)
        .filter_map(|(place, text)| {
            let findings = screen(text, None);
            (!findings.is_empty()).then(|| FlaggedText {
                reasons: findings.iter().map(|f| format!("{place}: {f}")).collect(),
                digest: digest(text),
            })
        })
        .collect()
}

/// The digests vouched for in `memory`'s `container`.
pub(crate) fn vouched_in(env: &Env<'_>, memory: &str, container: &str) -> Result<HashSet<String>> {
    Ok(env.store.vouched(memory, container)?.into_iter().collect())
}

/// Whether the screen flags some text of `pattern` that is not vouched for in `vouched`:
/// `trajectory_recall` leaves such a pattern out under `quarantine`.
pub(crate) fn pattern_held(pattern: &Pattern, vouched: &HashSet<String>) -> bool {
    // A text is digested only when flagged and the partition has vouches.
    pattern_texts(pattern).any(|(_, text)| {
        !screen(text, None).is_empty() && (vouched.is_empty() || !vouched.contains(&digest(text)))
    })
}

/// `trajectory_review`: the patterns of a partition that the write screen flags.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TrajectoryReviewInput {
    /// The partition.
    pub partition: String,
}

/// A pattern the screen flags.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FlaggedPattern {
    /// Its fingerprint (`trajectory_approve_pattern` takes it).
    pub fingerprint: BTreeMap<String, String>,
    /// Its actions, in order.
    pub canonical_sequence: Vec<String>,
    /// What the screen found in the texts not approved yet, one finding each (`action N:
    /// KIND: REASON`, `fingerprint FIELD: KIND: REASON`); empty once approved.
    pub reasons: Vec<String>,
    /// Whether a person approved every flagged text of it: then `trajectory_recall` returns it.
    pub approved: bool,
}

/// A partition's flagged patterns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TrajectoryReviewOutput {
    /// The partition.
    pub partition: String,
    /// The store's screen policy: under `quarantine` a pattern not approved is left out of
    /// `trajectory_recall`.
    pub policy: String,
    /// The flagged patterns, by fingerprint.
    pub patterns: Vec<FlaggedPattern>,
}

/// The patterns of a partition the screen flags, with the reasons and whether approved.
pub fn trajectory_review(
    env: &Env<'_>,
    input: TrajectoryReviewInput,
) -> Result<TrajectoryReviewOutput> {
    let partition = Partition::new(&input.partition)?;
    let vouched = vouched_in(env, TRAJECTORY, partition.as_str())?;
    let mut patterns = env.store.patterns(&partition, &Fingerprint::default())?;
    patterns.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
    let flagged = patterns
        .into_iter()
        .filter_map(|pattern| {
            let flagged = flagged_texts(&pattern);
            if flagged.is_empty() {
                return None;
            }
            // The findings of the texts not approved yet.
            let reasons: Vec<String> = flagged
                .into_iter()
                .filter(|t| !vouched.contains(&t.digest))
                .flat_map(|t| t.reasons)
                .collect();
            Some(FlaggedPattern {
                approved: reasons.is_empty(),
                fingerprint: pattern.fingerprint.into_pairs().into_iter().collect(),
                canonical_sequence: pattern.canonical_sequence,
                reasons,
            })
        })
        .collect();
    Ok(TrajectoryReviewOutput {
        partition: input.partition,
        policy: crate::evidence::policy(env)?.as_str().to_owned(),
        patterns: flagged,
    })
}

/// `trajectory_approve_pattern`: a person's approval of a flagged pattern.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovePatternInput {
    /// The partition.
    pub partition: String,
    /// The pattern's fingerprint, as `trajectory_review` lists it.
    pub fingerprint: BTreeMap<String, String>,
    /// Who approves (kept in the audit trail as its session).
    #[serde(default)]
    pub reviewer: Option<String>,
}

/// What was approved.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovePatternOutput {
    /// The partition.
    pub partition: String,
    /// The pattern's fingerprint.
    pub fingerprint: BTreeMap<String, String>,
    /// `approved`: `trajectory_recall` returns the pattern from now on.
    pub decision: String,
    /// How many of its texts were vouched for now (0 when all were already).
    pub texts: u64,
}

/// Approves a flagged pattern: vouches for each of its texts the screen flags, with an entry
/// each in the audit trail, in one step. Refused, writing nothing, when the partition has no
/// pattern of that fingerprint or the screen flags nothing in it.
pub fn trajectory_approve_pattern(
    env: &Env<'_>,
    input: ApprovePatternInput,
) -> Result<ApprovePatternOutput> {
    let partition = Partition::new(&input.partition)?;
    let wanted = Fingerprint::new(input.fingerprint.clone())?;
    let pattern = env
        .store
        .patterns(&partition, &wanted)?
        .into_iter()
        .find(|p| p.fingerprint == wanted)
        .ok_or_else(|| {
            Error::not_found(
                "fingerprint",
                format!(
                    "partition {} has no pattern of fingerprint {}",
                    Excerpt::quoted(&input.partition),
                    fingerprint_text(&input.fingerprint)
                ),
            )
        })?;
    let digests: Vec<String> = flagged_texts(&pattern)
        .into_iter()
        .map(|t| t.digest)
        .collect();
    if digests.is_empty() {
        return Err(Error::invalid(
            "fingerprint",
            format!(
                "the write screen flags nothing in the pattern of fingerprint {}: there is \
                 nothing to approve",
                fingerprint_text(&input.fingerprint)
            ),
        ));
    }
    let item = format!("pattern {}", fingerprint_text(&input.fingerprint));
    let new = vouch_for(
        env,
        (TRAJECTORY, partition.as_str(), &item),
        &digests,
        input.reviewer,
    )?;
    Ok(ApprovePatternOutput {
        partition: input.partition,
        fingerprint: input.fingerprint,
        decision: "approved".to_owned(),
        texts: new as u64,
    })
}

/// Vouches, as the caller with `reviewer` as its session, for each text of `digests` in a
/// memory's container, naming `item` in the audit trail (`KIND sha256:...` of it when it is
/// longer than a vouch's names may be), in one step. Returns how many are new.
fn vouch_for(
    env: &Env<'_>,
    (memory, container, item): (&str, &str, &str),
    digests: &[String],
    reviewer: Option<String>,
) -> Result<usize> {
    let short;
    let item = if item.len() > MAX_VOUCH_NAME_BYTES {
        let kind = item.split(' ').next().unwrap_or_default();
        short = format!("{kind} sha256:{}", &digest(item)[..16]);
        short.as_str()
    } else {
        item
    };
    let vouches: Vec<Vouch<'_>> = digests
        .iter()
        .map(|digest| Vouch {
            memory,
            container,
            item,
            digest,
        })
        .collect();
    let by = actor(env, None, reviewer, None)?;
    Ok(env.store.vouch(&vouches, &by)?)
}

/// A fingerprint as `k=v, k=v`, each value cut as an excerpt.
fn fingerprint_text(fingerprint: &BTreeMap<String, String>) -> String {
    fingerprint
        .iter()
        .map(|(k, v)| format!("{k}={}", Excerpt::quoted(v)))
        .collect::<Vec<_>>()
        .join(", ")
}
