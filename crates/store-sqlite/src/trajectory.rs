//! [`EpisodeStore`] and [`PatternStore`] on the `trajectory_*` tables.
//!
//! Fingerprints are interned once per partition (`trajectory_fingerprint`), so episodes,
//! groups and tallies refer to a small integer. Crystallize runs in one `BEGIN IMMEDIATE`
//! transaction: concurrent crystallizers, in threads or processes, queue for the write lock
//! and each finds the watermark its predecessor left, so every episode is observed once.

use std::collections::{HashMap, HashSet};

use memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeStep, Episode, EpisodeStore, Fingerprint, Group, NewEpisode,
    Pattern, PatternStats, PatternStore, PendingObservation, Seq, TrajectoryTally, decode_texts,
    encode_texts,
};
use memory_core::{Error, Partition, Result, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::{SqliteStore, to_core};

/// Sequence numbers are SQLite rowids: positive `i64`.
fn seq_to_sql(seq: Seq) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn seq_from_sql(value: i64, location: &str) -> Result<Seq> {
    u64::try_from(value).map_err(|_| Error::corrupt(location, format!("negative number {value}")))
}

fn decode_trajectory(text: &str) -> Result<Vec<String>> {
    decode_texts(text).ok_or_else(|| Error::corrupt("trajectory column", text))
}

fn encode_trajectory(trajectory: &[String]) -> String {
    encode_texts(trajectory.iter().map(String::as_str))
}

fn encode_pending(pending: &[PendingObservation]) -> String {
    let parts: Vec<String> = pending
        .iter()
        .flat_map(|p| {
            [
                format!("{:016x}", p.signal.to_bits()),
                p.recorded_at.as_millis().to_string(),
            ]
        })
        .collect();
    encode_texts(parts.iter().map(String::as_str))
}

fn decode_pending(text: &str) -> Result<Vec<PendingObservation>> {
    let bad = || Error::corrupt("trajectory_group.pending", text);
    let parts = decode_texts(text).ok_or_else(bad)?;
    parts
        .chunks(2)
        .map(|pair| match pair {
            [signal, at] => Ok(PendingObservation {
                signal: f64::from_bits(u64::from_str_radix(signal, 16).map_err(|_| bad())?),
                recorded_at: Timestamp::from_millis(at.parse().map_err(|_| bad())?),
            }),
            _ => Err(bad()),
        })
        .collect()
}

/// The id of `(partition, fingerprint)`, interning it (with its field rows) when new.
fn intern(conn: &Connection, partition: &str, fingerprint: &Fingerprint) -> rusqlite::Result<i64> {
    let key = fingerprint.key();
    let found: Option<i64> = conn
        .prepare_cached(
            "SELECT id FROM trajectory_fingerprint WHERE partition = ?1 AND fingerprint = ?2",
        )?
        .query_row(params![partition, key], |row| row.get(0))
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    conn.prepare_cached(
        "INSERT INTO trajectory_fingerprint (partition, fingerprint) VALUES (?1, ?2)",
    )?
    .execute(params![partition, key])?;
    let id = conn.last_insert_rowid();
    let mut field = conn.prepare_cached(
        "INSERT INTO trajectory_fingerprint_field (partition, field, value, fp_id) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (k, v) in fingerprint.pairs() {
        field.execute(params![partition, k, v, id])?;
    }
    Ok(id)
}

fn lookup(
    conn: &Connection,
    partition: &str,
    fingerprint: &Fingerprint,
) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT id FROM trajectory_fingerprint WHERE partition = ?1 AND fingerprint = ?2",
    )?
    .query_row(params![partition, fingerprint.key()], |row| row.get(0))
    .optional()
}

/// A `trajectory_group` row joined with its fingerprint key, as read.
struct GroupRow {
    fingerprint: String,
    episode_count: i64,
    canonical: Option<String>,
    canonical_count: Option<i64>,
    canonical_newest: Option<i64>,
    canonical_first_seq: Option<i64>,
    pending: String,
    confidence: Option<f64>,
    evidence_count: Option<i64>,
    corroborations: Option<i64>,
    contradictions: Option<i64>,
    last_reinforced: Option<i64>,
}

const GROUP_COLUMNS: &str = "f.fingerprint, g.episode_count, g.canonical, g.canonical_count, \
     g.canonical_newest, g.canonical_first_seq, g.pending, g.confidence, g.evidence_count, \
     g.corroborations, g.contradictions, g.last_reinforced";

fn group_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<GroupRow> {
    Ok(GroupRow {
        fingerprint: row.get(0)?,
        episode_count: row.get(1)?,
        canonical: row.get(2)?,
        canonical_count: row.get(3)?,
        canonical_newest: row.get(4)?,
        canonical_first_seq: row.get(5)?,
        pending: row.get(6)?,
        confidence: row.get(7)?,
        evidence_count: row.get(8)?,
        corroborations: row.get(9)?,
        contradictions: row.get(10)?,
        last_reinforced: row.get(11)?,
    })
}

impl GroupRow {
    fn decode(self) -> Result<Group> {
        let loc = "trajectory_group";
        let count = |v: i64| seq_from_sql(v, loc);
        let canonical = match (
            self.canonical,
            self.canonical_count,
            self.canonical_newest,
            self.canonical_first_seq,
        ) {
            (Some(t), Some(c), Some(n), Some(f)) => Some(TrajectoryTally {
                trajectory: decode_trajectory(&t)?,
                count: count(c)?,
                newest: Timestamp::from_millis(n),
                first_seq: count(f)?,
            }),
            _ => None,
        };
        let pattern = match (
            self.confidence,
            self.evidence_count,
            self.corroborations,
            self.contradictions,
            self.last_reinforced,
        ) {
            (Some(c), Some(e), Some(co), Some(ct), Some(l)) => Some(PatternStats {
                confidence: c,
                evidence_count: count(e)?,
                corroborations: count(co)?,
                contradictions: count(ct)?,
                last_reinforced: Timestamp::from_millis(l),
            }),
            _ => None,
        };
        Ok(Group {
            fingerprint: Fingerprint::from_key(&self.fingerprint)?,
            episode_count: count(self.episode_count)?,
            canonical,
            pending: decode_pending(&self.pending)?,
            pattern,
        })
    }
}

fn write_group(conn: &Connection, fp_id: i64, group: &Group) -> rusqlite::Result<()> {
    let canonical = group.canonical.as_ref();
    let stats = group.pattern.as_ref();
    conn.prepare_cached(
        "INSERT OR REPLACE INTO trajectory_group (fp_id, episode_count, canonical, canonical_count, \
         canonical_newest, canonical_first_seq, pending, confidence, evidence_count, corroborations, \
         contradictions, last_reinforced) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        fp_id,
        seq_to_sql(group.episode_count),
        canonical.map(|c| encode_trajectory(&c.trajectory)),
        canonical.map(|c| seq_to_sql(c.count)),
        canonical.map(|c| c.newest.as_millis()),
        canonical.map(|c| seq_to_sql(c.first_seq)),
        encode_pending(&group.pending),
        stats.map(|s| s.confidence),
        stats.map(|s| seq_to_sql(s.evidence_count)),
        stats.map(|s| seq_to_sql(s.corroborations)),
        stats.map(|s| seq_to_sql(s.contradictions)),
        stats.map(|s| s.last_reinforced.as_millis()),
    ])?;
    Ok(())
}

/// Raw episode columns: seq, fp_id, fingerprint key, trajectory, outcome, recorded_at.
type EpisodeRow = (i64, i64, String, String, String, i64);

fn episode_rows(
    conn: &Connection,
    partition: &str,
    after: Seq,
    limit: usize,
) -> rusqlite::Result<Vec<EpisodeRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT e.seq, e.fp_id, f.fingerprint, e.trajectory, e.outcome, e.recorded_at \
         FROM trajectory_episode e JOIN trajectory_fingerprint f ON f.id = e.fp_id \
         WHERE e.partition = ?1 AND e.seq > ?2 ORDER BY e.seq LIMIT ?3",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![partition, seq_to_sql(after), limit], |row| {
        Ok((
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
        ))
    })?;
    rows.collect()
}

/// Decodes episode rows, decoding each fingerprint once.
fn decode_episodes(partition: &Partition, rows: Vec<EpisodeRow>) -> Result<Vec<(i64, Episode)>> {
    let mut fingerprints: HashMap<i64, Fingerprint> = HashMap::new();
    rows.into_iter()
        .map(|(seq, fp_id, key, trajectory, outcome, at)| {
            let fingerprint = match fingerprints.get(&fp_id) {
                Some(fp) => fp.clone(),
                None => {
                    let fp = Fingerprint::from_key(&key)?;
                    fingerprints.insert(fp_id, fp.clone());
                    fp
                }
            };
            let episode = Episode {
                seq: seq_from_sql(seq, "trajectory_episode.seq")?,
                episode: NewEpisode {
                    partition: partition.clone(),
                    fingerprint,
                    trajectory: decode_trajectory(&trajectory)?,
                    outcome,
                    recorded_at: Timestamp::from_millis(at),
                },
            };
            Ok((fp_id, episode))
        })
        .collect()
}

fn watermark_of(conn: &Connection, partition: &str) -> rusqlite::Result<Seq> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM trajectory_watermark WHERE partition = ?1")?
        .query_row([partition], |row| row.get(0))
        .optional()?;
    Ok(seq.map_or(0, |s| u64::try_from(s).unwrap_or(0)))
}

impl EpisodeStore for SqliteStore {
    fn append_episodes(&self, episodes: &[NewEpisode]) -> Result<Vec<Episode>> {
        let op = "append episodes";
        if episodes.is_empty() {
            return Ok(Vec::new());
        }
        self.write(op, |tx| {
            let mut ids: HashMap<(&str, &Fingerprint), i64> = HashMap::new();
            let mut stored = Vec::with_capacity(episodes.len());
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO trajectory_episode (partition, fp_id, trajectory, outcome, recorded_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(|e| to_core(op, e))?;
            for episode in episodes {
                let partition = episode.partition.as_str();
                let fp_id = match ids.get(&(partition, &episode.fingerprint)) {
                    Some(&id) => id,
                    None => {
                        let id = intern(tx, partition, &episode.fingerprint)
                            .map_err(|e| to_core(op, e))?;
                        ids.insert((partition, &episode.fingerprint), id);
                        id
                    }
                };
                insert
                    .execute(params![
                        partition,
                        fp_id,
                        encode_trajectory(&episode.trajectory),
                        episode.outcome,
                        episode.recorded_at.as_millis(),
                    ])
                    .map_err(|e| to_core(op, e))?;
                stored.push(Episode {
                    seq: seq_from_sql(tx.last_insert_rowid(), "trajectory_episode.seq")?,
                    episode: episode.clone(),
                });
            }
            Ok(stored)
        })
    }

    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let rows = self.read("read episodes", |conn| {
            episode_rows(conn, partition.as_str(), after, limit)
        })?;
        Ok(decode_episodes(partition, rows)?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        let op = "prune episodes";
        self.write(op, |tx| {
            let watermark = watermark_of(tx, partition.as_str()).map_err(|e| to_core(op, e))?;
            let removed = tx
                .prepare_cached(
                    "DELETE FROM trajectory_episode \
                     WHERE partition = ?1 AND seq <= ?2 AND recorded_at < ?3",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        partition.as_str(),
                        seq_to_sql(watermark),
                        before.as_millis()
                    ])
                })
                .map_err(|e| to_core(op, e))?;
            Ok(removed as u64)
        })
    }
}

impl PatternStore for SqliteStore {
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        let op = "crystallize";
        let sql = |e| to_core(op, e);
        let name = partition.as_str();
        self.write(op, |tx| {
            let watermark = watermark_of(tx, name).map_err(sql)?;
            let rows = episode_rows(tx, name, watermark, usize::MAX).map_err(sql)?;
            let episodes = decode_episodes(partition, rows)?;
            let Some(last) = episodes.last().map(|(_, e)| e.seq) else {
                return Ok(Vec::new());
            };
            let mut fp_ids: HashMap<String, i64> = HashMap::new();
            let mut input = CrystallizeInput::default();
            let mut seen_tallies: HashSet<(i64, &[String])> = HashSet::new();
            let mut stored_groups: HashSet<i64> = HashSet::new();
            {
                let mut group_stmt = tx
                    .prepare_cached(&format!(
                        "SELECT {GROUP_COLUMNS} FROM trajectory_group g \
                         JOIN trajectory_fingerprint f ON f.id = g.fp_id WHERE g.fp_id = ?1"
                    ))
                    .map_err(sql)?;
                let mut tally_stmt = tx
                    .prepare_cached(
                        "SELECT count, newest, first_seq FROM trajectory_tally \
                         WHERE fp_id = ?1 AND trajectory = ?2",
                    )
                    .map_err(sql)?;
                for (fp_id, e) in &episodes {
                    let key = e.episode.fingerprint.key();
                    if !fp_ids.contains_key(&key) {
                        let row = group_stmt
                            .query_row([fp_id], group_row)
                            .optional()
                            .map_err(sql)?;
                        if let Some(row) = row {
                            input.groups.push(row.decode()?);
                            stored_groups.insert(*fp_id);
                        }
                        fp_ids.insert(key.clone(), *fp_id);
                    }
                    // Tallies are written with their group, so a new group has none to read.
                    if stored_groups.contains(fp_id)
                        && seen_tallies.insert((*fp_id, e.episode.trajectory.as_slice()))
                    {
                        let found: Option<(i64, i64, i64)> = tally_stmt
                            .query_row(
                                params![fp_id, encode_trajectory(&e.episode.trajectory)],
                                |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                            )
                            .optional()
                            .map_err(sql)?;
                        if let Some((count, newest, first_seq)) = found {
                            input.tallies.push((
                                key,
                                TrajectoryTally {
                                    trajectory: e.episode.trajectory.clone(),
                                    count: seq_from_sql(count, "trajectory_tally")?,
                                    newest: Timestamp::from_millis(newest),
                                    first_seq: seq_from_sql(first_seq, "trajectory_tally")?,
                                },
                            ));
                        }
                    }
                }
            }
            input.episodes = episodes.into_iter().map(|(_, e)| e).collect();
            let output = step(&input)?;
            let id_of = |fp: &Fingerprint| {
                let key = fp.key();
                fp_ids.get(&key).copied().ok_or_else(|| {
                    Error::invalid_input(
                        "crystallize output",
                        format!("fingerprint {key:?} has no new episode in this run"),
                    )
                })
            };
            for group in &output.groups {
                write_group(tx, id_of(&group.fingerprint)?, group).map_err(sql)?;
            }
            {
                let mut upsert = tx
                    .prepare_cached(
                        "INSERT OR REPLACE INTO trajectory_tally (fp_id, trajectory, count, newest, first_seq) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                    )
                    .map_err(sql)?;
                for (key, tally) in &output.tallies {
                    let fp_id = fp_ids.get(key).copied().ok_or_else(|| {
                        Error::invalid_input(
                            "crystallize output",
                            format!("tally of fingerprint {key:?} has no new episode in this run"),
                        )
                    })?;
                    upsert
                        .execute(params![
                            fp_id,
                            encode_trajectory(&tally.trajectory),
                            seq_to_sql(tally.count),
                            tally.newest.as_millis(),
                            seq_to_sql(tally.first_seq),
                        ])
                        .map_err(sql)?;
                }
            }
            tx.prepare_cached(
                "INSERT INTO trajectory_watermark (partition, seq) VALUES (?1, ?2) \
                 ON CONFLICT (partition) DO UPDATE SET seq = excluded.seq",
            )
            .and_then(|mut stmt| stmt.execute(params![name, seq_to_sql(last)]))
            .map_err(sql)?;
            Ok(output
                .reinforced
                .iter()
                .filter_map(|fp| output.groups.iter().find(|g| &g.fingerprint == fp))
                .filter_map(|g| Pattern::of_group(partition, g))
                .collect())
        })
    }

    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        self.read("read watermark", |conn| {
            watermark_of(conn, partition.as_str())
        })
    }

    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        let name = partition.as_str();
        let rows = self.read("recall patterns", |conn| {
            let rows = match filter.pairs().first() {
                Some((field, value)) => {
                    let mut stmt = conn.prepare_cached(&format!(
                        "SELECT {GROUP_COLUMNS} FROM trajectory_fingerprint_field ff \
                         JOIN trajectory_group g ON g.fp_id = ff.fp_id \
                         JOIN trajectory_fingerprint f ON f.id = ff.fp_id \
                         WHERE ff.partition = ?1 AND ff.field = ?2 AND ff.value = ?3 \
                         AND g.confidence IS NOT NULL"
                    ))?;
                    stmt.query_map(params![name, field, value], group_row)?
                        .collect::<rusqlite::Result<Vec<_>>>()?
                }
                None => {
                    let mut stmt = conn.prepare_cached(&format!(
                        "SELECT {GROUP_COLUMNS} FROM trajectory_fingerprint f \
                         JOIN trajectory_group g ON g.fp_id = f.id \
                         WHERE f.partition = ?1 AND g.confidence IS NOT NULL"
                    ))?;
                    stmt.query_map(params![name], group_row)?
                        .collect::<rusqlite::Result<Vec<_>>>()?
                }
            };
            Ok(rows)
        })?;
        let mut patterns = Vec::with_capacity(rows.len());
        for row in rows {
            let group = row.decode()?;
            if group.fingerprint.matches(filter) {
                patterns.extend(Pattern::of_group(partition, &group));
            }
        }
        Ok(patterns)
    }

    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>> {
        let row = self.read("read group", |conn| {
            let Some(fp_id) = lookup(conn, partition.as_str(), fingerprint)? else {
                return Ok(None);
            };
            conn.prepare_cached(&format!(
                "SELECT {GROUP_COLUMNS} FROM trajectory_group g \
                 JOIN trajectory_fingerprint f ON f.id = g.fp_id WHERE g.fp_id = ?1"
            ))?
            .query_row([fp_id], group_row)
            .optional()
        })?;
        row.map(GroupRow::decode).transpose()
    }
}
