//! [`EpisodeStore`] and [`PatternStore`] of [`InMemoryStore`]: one mutex over every
//! partition, so crystallize is atomic by holding it for the whole step.

use std::collections::{BTreeMap, HashMap};

use crate::error::Result;
use crate::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use crate::mem::{InMemoryStore, lock};
use crate::names::{MetaKey, Partition};
use crate::provenance::Provenance;
use crate::store::trajectory::{
    CrystallizeInput, CrystallizeOutput, CrystallizeStep, Episode, EpisodeStore, EpisodesForgotten,
    Fingerprint, Group, NewEpisode, PartitionSummary, Pattern, PatternStore, Seq, TrajectoryTally,
    encode_texts, episodes_forgotten_detail, settings_conflict,
};
use crate::time::Timestamp;

/// Episodes, groups, tallies and watermarks of every partition.
#[derive(Debug, Default)]
pub(crate) struct TrajectoryState {
    last_seq: Seq,
    partitions: HashMap<Partition, PartitionState>,
}

#[derive(Debug, Default)]
struct PartitionState {
    episodes: BTreeMap<Seq, NewEpisode>,
    watermark: Seq,
    /// Groups by fingerprint key.
    groups: BTreeMap<String, Group>,
    /// Tallies by (group key, trajectory).
    tallies: HashMap<(String, Vec<String>), TrajectoryTally>,
}

impl EpisodeStore for InMemoryStore {
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>> {
        // Both locks are held until the episodes are in, so no reader sees the settings
        // without the episodes, and every check happens before the first change.
        let mut meta = lock(&self.meta);
        for (key, wanted) in settings {
            if let Some(found) = meta.get(*key).filter(|found| found != wanted) {
                return Err(settings_conflict(key, wanted, found));
            }
        }
        let mut state = lock(&self.trajectory);
        for (key, value) in settings {
            meta.entry((*key).clone())
                .or_insert_with(|| (*value).to_owned());
        }
        let mut stored = Vec::with_capacity(episodes.len());
        for episode in episodes {
            state.last_seq += 1;
            let seq = state.last_seq;
            state
                .partitions
                .entry(episode.partition.clone())
                .or_default()
                .episodes
                .insert(seq, episode.clone());
            stored.push(seq);
        }
        for run in WriteRun::episode_runs(episodes) {
            self.audit_write_run(&run);
        }
        Ok(stored)
    }

    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let state = lock(&self.trajectory);
        let Some(p) = state.partitions.get(partition) else {
            return Ok(Vec::new());
        };
        Ok(p.episodes
            .range(after.saturating_add(1)..)
            .take(limit)
            .map(|(&seq, e)| Episode {
                seq,
                episode: e.clone(),
            })
            .collect())
    }

    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        let mut state = lock(&self.trajectory);
        let Some(p) = state.partitions.get_mut(partition) else {
            return Ok(0);
        };
        let watermark = p.watermark;
        let before_len = p.episodes.len();
        p.episodes
            .retain(|&seq, e| seq > watermark || e.recorded_at >= before);
        Ok((before_len - p.episodes.len()) as u64)
    }
}

impl PatternStore for InMemoryStore {
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        let mut state = lock(&self.trajectory);
        let Some(p) = state.partitions.get_mut(partition) else {
            return Ok(Vec::new());
        };
        let episodes: Vec<Episode> = p
            .episodes
            .range(p.watermark.saturating_add(1)..)
            .map(|(&seq, e)| Episode {
                seq,
                episode: e.clone(),
            })
            .collect();
        let Some(last) = episodes.last().map(|e| e.seq) else {
            return Ok(Vec::new());
        };
        let mut input = CrystallizeInput::default();
        let mut seen_groups = std::collections::HashSet::new();
        let mut seen_tallies = std::collections::HashSet::new();
        for e in &episodes {
            let key = e.episode.fingerprint.key();
            if seen_groups.insert(key.clone())
                && let Some(g) = p.groups.get(&key)
            {
                input.groups.push(g.clone());
            }
            let tally_key = (key, e.episode.trajectory.clone());
            if !seen_tallies.contains(&tally_key) {
                if let Some(t) = p.tallies.get(&tally_key) {
                    input.tallies.push((tally_key.0.clone(), t.clone()));
                }
                seen_tallies.insert(tally_key);
            }
        }
        input.episodes = episodes;
        // Nothing is written until the step has succeeded: a failed step changes nothing.
        let output = step(&input)?;
        for (key, tally) in output.tallies {
            p.tallies.insert((key, tally.trajectory.clone()), tally);
        }
        for group in output.groups {
            p.groups.insert(group.fingerprint.key(), group);
        }
        p.watermark = last;
        Ok(output
            .reinforced
            .iter()
            .filter_map(|fp| p.groups.get(&fp.key()))
            .filter_map(|g| Pattern::of_group(partition, g))
            .collect())
    }

    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        let state = lock(&self.trajectory);
        Ok(state.partitions.get(partition).map_or(0, |p| p.watermark))
    }

    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        let state = lock(&self.trajectory);
        let Some(p) = state.partitions.get(partition) else {
            return Ok(Vec::new());
        };
        Ok(p.groups
            .values()
            .filter(|g| g.fingerprint.matches(filter))
            .filter_map(|g| Pattern::of_group(partition, g))
            .collect())
    }

    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>> {
        let state = lock(&self.trajectory);
        Ok(state
            .partitions
            .get(partition)
            .and_then(|p| p.groups.get(&fingerprint.key()))
            .cloned())
    }

    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>> {
        let state = lock(&self.trajectory);
        let Some(p) = state.partitions.get(partition) else {
            return Ok(Vec::new());
        };
        let mut pending: Vec<Group> = p
            .groups
            .values()
            .filter(|g| g.pattern.is_none())
            .cloned()
            .collect();
        pending.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        Ok(pending)
    }

    fn partitions(&self) -> Result<Vec<PartitionSummary>> {
        let state = lock(&self.trajectory);
        let mut found: Vec<PartitionSummary> = state
            .partitions
            .iter()
            .filter(|(_, p)| !p.episodes.is_empty() || !p.groups.is_empty())
            .map(|(partition, p)| {
                let patterns = p.groups.values().filter(|g| g.pattern.is_some()).count() as u64;
                PartitionSummary {
                    partition: partition.clone(),
                    episodes: p.episodes.len() as u64,
                    patterns,
                    pending_groups: p.groups.len() as u64 - patterns,
                    watermark: p.watermark,
                    bytes: p
                        .episodes
                        .values()
                        .map(|e| {
                            let trajectory = encode_texts(e.trajectory.iter().map(String::as_str));
                            (trajectory.len() + e.outcome.len()) as u64
                        })
                        .sum(),
                    last_write: p.episodes.values().map(|e| e.recorded_at).max(),
                }
            })
            .collect();
        found.sort_by(|a, b| a.partition.cmp(&b.partition));
        Ok(found)
    }

    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&MetaKey],
        by: &Provenance,
    ) -> Result<u64> {
        // The locks in the order an append with settings takes them: meta, then trajectory.
        let mut meta = lock(&self.meta);
        let mut state = lock(&self.trajectory);
        for key in settings {
            meta.remove(*key);
        }
        let gone = (state.partitions.remove(partition)).map_or(0, |p| p.episodes.len() as u64);
        let detail = forget_detail(&[(gone, "episode", "episodes")]);
        let item = partition.as_str();
        self.audit_in("trajectory", Action::Forget, NO_SCOPE, item, by, detail);
        drop(state);
        drop(meta);
        Ok(gone)
    }

    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<EpisodesForgotten> {
        writer.check()?;
        let mut state = lock(&self.trajectory);
        let mut forgotten = EpisodesForgotten::default();
        if let Some(p) = state.partitions.get_mut(partition) {
            let doomed: Vec<Seq> = p
                .episodes
                .iter()
                .filter(|(_, e)| e.provenance.as_ref().is_some_and(|w| writer.matches(w)))
                .map(|(&seq, _)| seq)
                .collect();
            // The groups the watermark says some of them were folded into, each with how
            // many episodes it keeps.
            let mut touched: BTreeMap<Fingerprint, u64> = BTreeMap::new();
            for seq in &doomed {
                if let Some(e) = p.episodes.get(seq)
                    && *seq <= p.watermark
                {
                    touched.insert(e.fingerprint.clone(), 0);
                }
            }
            // Their episodes left, folded again from nothing in one step before anything is
            // written: a failed step changes nothing.
            let mut left = Vec::new();
            for (&seq, e) in p.episodes.range(..=p.watermark) {
                if let Some(n) = touched.get_mut(&e.fingerprint)
                    && doomed.binary_search(&seq).is_err()
                {
                    *n += 1;
                    left.push(Episode {
                        seq,
                        episode: e.clone(),
                    });
                }
            }
            let output = if left.is_empty() {
                CrystallizeOutput::default()
            } else {
                step(&CrystallizeInput {
                    episodes: left,
                    ..CrystallizeInput::default()
                })?
            };
            for seq in &doomed {
                p.episodes.remove(seq);
            }
            let keys: std::collections::HashSet<String> =
                touched.keys().map(Fingerprint::key).collect();
            p.groups.retain(|key, _| !keys.contains(key));
            p.tallies.retain(|(key, _), _| !keys.contains(key));
            for (key, tally) in output.tallies {
                p.tallies.insert((key, tally.trajectory.clone()), tally);
            }
            for group in output.groups {
                p.groups.insert(group.fingerprint.key(), group);
            }
            forgotten.episodes = doomed.len() as u64;
            forgotten.groups = touched.into_iter().collect();
        }
        let detail = episodes_forgotten_detail(&forgotten);
        let item = partition.as_str();
        self.audit_in("trajectory", Action::Forget, NO_SCOPE, item, by, detail);
        drop(state);
        Ok(forgotten)
    }
}
