//! The trajectory store contract, against the in-memory store and against broken stores
//! that the suite must catch.

use agent_memory_core::evidence::{Action, AuditEntry, Writer};
use agent_memory_core::provenance::Provenance;
use agent_memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeOutput, CrystallizeStep, Episode, EpisodeStore, EpisodesForgotten,
    Fingerprint, Group, NewEpisode, PartitionSummary, Pattern, PatternStore, Seq,
};
use agent_memory_core::store::{AuditStore, Page};
use agent_memory_core::testkit::{run, trajectory};
use agent_memory_core::{InMemoryStore, MetaKey, Partition, Result, Timestamp};

#[test]
fn in_memory_store_obeys_the_contract() {
    if let Err(report) = run(trajectory::SUITE, &trajectory::cases(), InMemoryStore::new) {
        panic!("{report}");
    }
}

/// An in-memory store with one seeded defect.
struct Broken {
    defect: Defect,
    inner: InMemoryStore,
}

#[derive(Clone, Copy, PartialEq)]
enum Defect {
    /// Crystallize forgets to advance the watermark, so episodes are observed again.
    KeepsWatermark,
    /// Recall ignores the partition.
    LeaksPartitions,
    /// Recall ignores all but the first pair of the filter.
    PartialFilterOnly,
    /// Appends the episodes before it checks the settings.
    WritesBeforeSettling,
    /// Forget reports the episodes but deletes nothing.
    ForgetDeletesNothing,
    /// Lists pending groups in the order of their stored keys, not by fingerprint.
    PendingInKeyOrder,
    /// Reads episodes back without who recorded them.
    DropsWriters,
    /// Forgets a partition but leaves its configuration behind.
    ForgetKeepsSettings,
    /// A forget by writer matches on the source alone.
    ForgetsBySourceOnly,
    /// A forget by writer drops the groups it touched instead of rebuilding them.
    ForgetDropsGroups,
    /// Appends episodes without their entries in the audit trail.
    WritesUnaudited,
    /// Records only the first writer of each partition in the audit trail, as a store that
    /// keys a run of writes by its partition alone does.
    AuditsFirstWriterOnly,
}

impl EpisodeStore for Broken {
    fn append_episodes(&self, episodes: &[NewEpisode]) -> Result<Vec<Seq>> {
        self.inner.append_episodes(episodes)
    }
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>> {
        if self.defect == Defect::WritesBeforeSettling && !settings.is_empty() {
            // Stores the episodes, then checks the settings in a second step.
            let stored = self.inner.append_episodes(episodes)?;
            self.inner.append_episodes_with_settings(&[], settings)?;
            return Ok(stored);
        }
        self.inner.append_episodes_with_settings(episodes, settings)
    }
    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let mut episodes = self.inner.episodes_after(partition, after, limit)?;
        if self.defect == Defect::DropsWriters {
            for e in &mut episodes {
                e.episode.provenance = None;
            }
        }
        Ok(episodes)
    }
    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        self.inner.prune_episodes(partition, before)
    }
}

impl PatternStore for Broken {
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        if self.defect != Defect::KeepsWatermark {
            return self.inner.crystallize_with(partition, step);
        }
        // Replays every episode of the partition on each run, as a store without a
        // watermark would.
        let all = self.inner.episodes_after(partition, 0, usize::MAX)?;
        let mut groups = Vec::new();
        for e in &all {
            if let Some(g) = self.inner.group(partition, &e.episode.fingerprint)?
                && !groups
                    .iter()
                    .any(|h: &Group| h.fingerprint == g.fingerprint)
            {
                groups.push(g);
            }
        }
        let input = agent_memory_core::store::trajectory::CrystallizeInput {
            episodes: all,
            groups,
            tallies: Vec::new(),
        };
        let output = step(&input)?;
        // Write the replayed state through the inner store's own atomic step.
        let written = output.groups.clone();
        self.inner.crystallize_with(partition, &move |_| {
            Ok(agent_memory_core::store::trajectory::CrystallizeOutput {
                groups: written.clone(),
                tallies: Vec::new(),
                reinforced: Vec::new(),
            })
        })?;
        Ok(output
            .groups
            .iter()
            .filter_map(|g| Pattern::of_group(partition, g))
            .collect())
    }
    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        self.inner.watermark(partition)
    }
    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        match self.defect {
            Defect::LeaksPartitions => {
                let mut all = Vec::new();
                for name in ["a", "b", "p"] {
                    all.extend(self.inner.patterns(&Partition::new(name)?, filter)?);
                }
                Ok(all)
            }
            Defect::PartialFilterOnly => {
                let first = Fingerprint::new(filter.pairs().iter().take(1).cloned())?;
                self.inner.patterns(partition, &first)
            }
            Defect::KeepsWatermark
            | Defect::WritesBeforeSettling
            | Defect::ForgetDeletesNothing
            | Defect::PendingInKeyOrder
            | Defect::DropsWriters
            | Defect::ForgetKeepsSettings
            | Defect::ForgetsBySourceOnly
            | Defect::ForgetDropsGroups
            | Defect::WritesUnaudited
            | Defect::AuditsFirstWriterOnly => self.inner.patterns(partition, filter),
        }
    }
    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>> {
        self.inner.group(partition, fingerprint)
    }
    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>> {
        let mut pending = self.inner.pending_groups(partition)?;
        if self.defect == Defect::PendingInKeyOrder {
            pending.sort_by_key(|g| g.fingerprint.key());
        }
        Ok(pending)
    }
    fn partitions(&self) -> Result<Vec<PartitionSummary>> {
        self.inner.partitions()
    }
    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&MetaKey],
        by: &Provenance,
    ) -> Result<u64> {
        if self.defect == Defect::ForgetDeletesNothing {
            return Ok(self.inner.episodes_after(partition, 0, usize::MAX)?.len() as u64);
        }
        let settings = if self.defect == Defect::ForgetKeepsSettings {
            &[]
        } else {
            settings
        };
        self.inner.forget_partition(partition, settings, by)
    }
    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<EpisodesForgotten> {
        match self.defect {
            Defect::ForgetsBySourceOnly if writer.source.is_some() => {
                let source_only = Writer {
                    source: writer.source.clone(),
                    ..Writer::default()
                };
                self.inner
                    .forget_episodes_by(partition, &source_only, by, step)
            }
            Defect::ForgetDropsGroups => {
                let nothing = |_: &CrystallizeInput| Ok(CrystallizeOutput::default());
                self.inner
                    .forget_episodes_by(partition, writer, by, &nothing)
            }
            _ => self.inner.forget_episodes_by(partition, writer, by, step),
        }
    }
}

impl AuditStore for Broken {
    fn audit_select(
        &self,
        filter: &agent_memory_core::evidence::AuditFilter,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Page<AuditEntry>> {
        let mut page = self.inner.audit_select(filter, after, limit)?;
        let episodes = |e: &AuditEntry| e.memory == "trajectory" && e.action == Action::Write;
        let mut seen = std::collections::HashSet::new();
        match self.defect {
            Defect::WritesUnaudited => page.items.retain(|e| !episodes(e)),
            Defect::AuditsFirstWriterOnly => {
                page.items
                    .retain(|e| !episodes(e) || seen.insert(e.item.clone()));
            }
            _ => {}
        }
        Ok(page)
    }

    fn setting_set(
        &self,
        key: &agent_memory_core::MetaKey,
        value: &str,
        by: &agent_memory_core::Provenance,
    ) -> Result<Option<String>> {
        self.inner.setting_set(key, value, by)
    }

    fn vouch(
        &self,
        vouches: &[agent_memory_core::evidence::Vouch<'_>],
        by: &agent_memory_core::Provenance,
    ) -> Result<usize> {
        self.inner.vouch(vouches, by)
    }

    fn vouched(&self, memory: &str, container: &str) -> Result<Vec<String>> {
        self.inner.vouched(memory, container)
    }
}

const EPISODES_AUDITED: &str = "each writer's run of episodes is one entry of the audit trail";

const FORGET_BY_WRITER: &str =
    "a forget by writer takes its episodes and rebuilds what they taught from the rest";

#[test]
fn the_suite_catches_broken_stores() {
    let table = [
        (
            Defect::KeepsWatermark,
            "crystallize observes each episode once",
        ),
        (Defect::LeaksPartitions, "partitions are isolated"),
        (
            Defect::PartialFilterOnly,
            "recall filters exact and partial",
        ),
        (
            Defect::WritesBeforeSettling,
            "settings are stored with the episodes or not at all",
        ),
        (
            Defect::WritesBeforeSettling,
            "racing first writers with other settings store one of them",
        ),
        (
            Defect::ForgetDeletesNothing,
            "forget deletes one partition only, its configuration with it",
        ),
        (
            Defect::PendingInKeyOrder,
            "pending groups are the groups below the threshold, by fingerprint",
        ),
        (Defect::DropsWriters, "an episode keeps who recorded it"),
        (
            Defect::ForgetKeepsSettings,
            "forget deletes one partition only, its configuration with it",
        ),
        (Defect::ForgetsBySourceOnly, FORGET_BY_WRITER),
        (Defect::ForgetDropsGroups, FORGET_BY_WRITER),
        (Defect::WritesUnaudited, EPISODES_AUDITED),
        (Defect::AuditsFirstWriterOnly, EPISODES_AUDITED),
    ];
    for (defect, case) in table {
        let report = run(trajectory::SUITE, &trajectory::cases(), || Broken {
            defect,
            inner: InMemoryStore::new(),
        })
        .expect_err("a broken store must fail the contract");
        assert!(report.failed(case), "{case} should fail:\n{report}");
    }
}

#[test]
fn a_shared_broken_store_fails_as_the_store_itself() {
    // Behind `&` or `Arc`, every call must reach the wrapped store's own implementation.
    let behind_arc = run(trajectory::SUITE, &trajectory::cases(), || {
        std::sync::Arc::new(Broken {
            defect: Defect::KeepsWatermark,
            inner: InMemoryStore::new(),
        })
    })
    .expect_err("a broken store behind an Arc must fail the contract");
    assert!(behind_arc.failed("crystallize observes each episode once"));
    let behind_ref = run(trajectory::SUITE, &trajectory::cases(), || {
        &*Box::leak(Box::new(Broken {
            defect: Defect::LeaksPartitions,
            inner: InMemoryStore::new(),
        }))
    })
    .expect_err("a borrowed broken store must fail the contract");
    assert!(behind_ref.failed("partitions are isolated"));
}
