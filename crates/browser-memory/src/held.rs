//! A finished run held for review, as the store keeps it: everything the run would leave
//! behind ([`FinishedRun`]), encoded as JSON exactly as it was computed when it was held, so
//! an approval records the very run the reviewer saw, with its own ids, times and writer.

use agent_memory_core::store::browser::{
    FactKind, FactObservation, FinishedRun, RunManifest, SessionEntry, SiteObservation, Trajectory,
    TrajectoryStep,
};
use agent_memory_core::{Provenance, Source, Timestamp};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::files::ManifestFile;

/// The encoding's version, so a later build can still read what an earlier one held.
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeldFile {
    version: u32,
    trajectory: TrajectoryJson,
    tokens: Vec<String>,
    site: SiteJson,
    manifest: Option<ManifestFile>,
    completes_stored: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TrajectoryJson {
    id: String,
    goal: String,
    origin: Option<String>,
    steps: Vec<StepJson>,
    success: bool,
    duration_ms: u64,
    model: String,
    timestamp: String,
    recorded_at: Option<i64>,
    provenance: Option<WriterJson>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepJson {
    url: String,
    action: String,
    snapshot_hash: String,
    verified: bool,
    expected_effect: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriterJson {
    source: String,
    session: Option<String>,
    client: Option<String>,
    at: i64,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SiteJson {
    site: String,
    label: String,
    session: Option<SessionJson>,
    facts: Vec<(String, String, String)>,
    selectors: Vec<(String, String)>,
    observed_at: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionJson {
    id: String,
    goal: String,
    outcome: String,
    success: bool,
    final_url: String,
    timestamp: String,
    turns_used: u32,
    duration_ms: u64,
}

/// What the held run `held` would record when approved, as it was computed when held.
pub fn held_contents(held: &agent_memory_core::store::browser::HeldRun) -> Result<FinishedRun> {
    decode(&held.id, &held.run)
}

/// `run` as a held run's text.
pub(crate) fn encode(run: &FinishedRun) -> Result<String> {
    let t = &run.trajectory;
    let file = HeldFile {
        version: VERSION,
        trajectory: TrajectoryJson {
            id: t.id.clone(),
            goal: t.goal.clone(),
            origin: t.origin.clone(),
            steps: t
                .steps
                .iter()
                .map(|s| StepJson {
                    url: s.url.clone(),
                    action: s.action.clone(),
                    snapshot_hash: s.snapshot_hash.clone(),
                    verified: s.verified,
                    expected_effect: s.expected_effect.clone(),
                })
                .collect(),
            success: t.success,
            duration_ms: t.duration_ms,
            model: t.model.clone(),
            timestamp: t.timestamp.clone(),
            recorded_at: t.recorded_at.map(Timestamp::as_millis),
            provenance: t.provenance.as_ref().map(|p| WriterJson {
                source: p.source.to_string(),
                session: p.session.clone(),
                client: p.client.clone(),
                at: p.at.as_millis(),
            }),
        },
        tokens: run.tokens.clone(),
        site: SiteJson {
            site: run.site.site.clone(),
            label: run.site.label.clone(),
            session: run.site.session.as_ref().map(|s| SessionJson {
                id: s.id.clone(),
                goal: s.goal.clone(),
                outcome: s.outcome.clone(),
                success: s.success,
                final_url: s.final_url.clone(),
                timestamp: s.timestamp.clone(),
                turns_used: s.turns_used,
                duration_ms: s.duration_ms,
            }),
            facts: run
                .site
                .facts
                .iter()
                .map(|f| (f.kind.as_str().to_owned(), f.key.clone(), f.value.clone()))
                .collect(),
            selectors: run.site.selectors.clone(),
            observed_at: run.site.observed_at.clone(),
        },
        manifest: run.manifest.as_ref().map(ManifestFile::from_record),
        completes_stored: run.completes_stored,
    };
    serde_json::to_string(&file).map_err(|source| Error::Encode {
        what: format!("held run {}", t.id),
        source,
    })
}

/// The run a held run's text encodes; `id` names the held run in an error.
pub(crate) fn decode(id: &str, text: &str) -> Result<FinishedRun> {
    let corrupt = |reason: String| {
        Error::from(agent_memory_core::Error::corrupt(
            format!("held run {id}"),
            reason,
        ))
    };
    let file: HeldFile = serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
    if file.version != VERSION {
        return Err(corrupt(format!(
            "encoded by version {} (this build reads {VERSION})",
            file.version
        )));
    }
    let t = file.trajectory;
    let provenance = t
        .provenance
        .map(|p| {
            Ok::<_, Error>(Provenance {
                source: Source::parse(&p.source).map_err(|e| corrupt(e.to_string()))?,
                session: p.session,
                client: p.client,
                at: Timestamp::from_millis(p.at),
            })
        })
        .transpose()?;
    let facts = file
        .site
        .facts
        .into_iter()
        .map(|(kind, key, value)| {
            let kind = FactKind::parse(&kind)
                .ok_or_else(|| corrupt(format!("{kind:?} is no kind of fact")))?;
            Ok(FactObservation { kind, key, value })
        })
        .collect::<Result<Vec<_>>>()?;
    let manifest: Option<RunManifest> = file
        .manifest
        .map(|m| m.into_record(std::path::Path::new(id)))
        .transpose()?;
    Ok(FinishedRun {
        trajectory: Trajectory {
            id: t.id,
            goal: t.goal,
            origin: t.origin,
            steps: t
                .steps
                .into_iter()
                .map(|s| TrajectoryStep {
                    url: s.url,
                    action: s.action,
                    snapshot_hash: s.snapshot_hash,
                    verified: s.verified,
                    expected_effect: s.expected_effect,
                })
                .collect(),
            success: t.success,
            duration_ms: t.duration_ms,
            model: t.model,
            timestamp: t.timestamp,
            recorded_at: t.recorded_at.map(Timestamp::from_millis),
            provenance,
        },
        tokens: file.tokens,
        site: SiteObservation {
            site: file.site.site,
            label: file.site.label,
            session: file.site.session.map(|s| SessionEntry {
                id: s.id,
                goal: s.goal,
                outcome: s.outcome,
                success: s.success,
                final_url: s.final_url,
                timestamp: s.timestamp,
                turns_used: s.turns_used,
                duration_ms: s.duration_ms,
            }),
            facts,
            selectors: file.site.selectors,
            observed_at: file.site.observed_at,
        },
        manifest,
        completes_stored: file.completes_stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_memory_core::store::browser::RunStatus;

    fn run() -> FinishedRun {
        FinishedRun {
            trajectory: Trajectory {
                id: "traj_1_a".into(),
                goal: "buy a \"watch\" ü".into(),
                origin: Some("https://a.test".into()),
                steps: vec![TrajectoryStep {
                    url: "https://a.test/p".into(),
                    action: r#"{"action":"click","selector":"@e1"}"#.into(),
                    snapshot_hash: "-17".into(),
                    verified: true,
                    expected_effect: None,
                }],
                success: true,
                duration_ms: u64::MAX,
                model: "m".into(),
                timestamp: "2026-01-01T00:00:00.000Z".into(),
                recorded_at: Some(Timestamp::from_millis(-5)),
                provenance: Some(Provenance {
                    source: Source::Page("https://a.test/p".into()),
                    session: Some("s".into()),
                    client: None,
                    at: Timestamp::from_millis(7),
                }),
            },
            tokens: vec!["buy".into(), "watch".into()],
            site: SiteObservation {
                site: "a.test".into(),
                label: "https://a.test/".into(),
                session: Some(SessionEntry {
                    id: "s".into(),
                    goal: "g".into(),
                    outcome: "o".into(),
                    success: false,
                    final_url: String::new(),
                    timestamp: "t".into(),
                    turns_used: 3,
                    duration_ms: 9,
                }),
                facts: vec![FactObservation {
                    kind: FactKind::Quirk,
                    key: "k".into(),
                    value: "v".into(),
                }],
                selectors: vec![("cart".into(), "#cart".into())],
                observed_at: "t".into(),
            },
            manifest: Some(RunManifest {
                run_id: "r1".into(),
                session_id: Some("s".into()),
                parent_run_id: None,
                status: RunStatus::Completed,
                goal: "g".into(),
                domain: "a.test".into(),
                start_url: Some("https://a.test/".into()),
                current_url: None,
                final_url: Some("https://a.test/done".into()),
                started_at: "t0".into(),
                updated_at: "t1".into(),
                completed_at: Some("t1".into()),
                success: Some(true),
                summary: None,
                artifact_paths: vec!["a.png".into()],
                result: Some("ok".into()),
                reason: None,
                turn_count: 4,
            }),
            completes_stored: true,
        }
    }

    #[test]
    fn a_held_run_decodes_to_the_run_it_encoded() {
        let run = run();
        let text = encode(&run).expect("encode");
        assert_eq!(decode("traj_1_a", &text).expect("decode"), run);
        let bare = FinishedRun {
            manifest: None,
            completes_stored: false,
            ..run
        };
        let text = encode(&bare).expect("encode");
        assert_eq!(decode("traj_1_a", &text).expect("decode"), bare);
    }

    #[test]
    fn a_held_run_that_does_not_decode_is_named() {
        let err = decode("traj_9", "{\"version\":2}").expect_err("refused");
        assert!(err.to_string().contains("held run traj_9"), "{err}");
        let text = encode(&run())
            .expect("encode")
            .replace("\"version\":1", "\"version\":2");
        let err = decode("traj_9", &text).expect_err("refused");
        assert!(err.to_string().contains("version 2"), "{err}");
    }
}
