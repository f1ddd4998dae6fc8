//! [`EpisodeStore`] and [`PatternStore`] on the `trajectory_*` tables.
//!
//! Fingerprints are interned once per partition (`trajectory_fingerprint`), so episodes,
//! groups and tallies refer to a small integer. Crystallize runs in one `BEGIN IMMEDIATE`
//! transaction: concurrent crystallizers, in threads or processes, queue for the write lock
//! and each finds the watermark its predecessor left, so every episode is observed once.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeStep, Episode, EpisodeStore, EpisodesForgotten, Fingerprint,
    Group, NewEpisode, PartitionSummary, Pattern, PatternStats, PatternStore, PendingObservation,
    ReinforcedPatterns, Seq, TrajectoryTally, decode_texts, encode_pending, encode_texts,
    episodes_forgotten_detail, settings_conflict,
};
use agent_memory_core::{Error, MetaKey, Page, Partition, Provenance, Result, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::notes::{audit_in, audit_write_run, stored_writer, writer_columns};
use crate::{SqliteStore, meta, to_core};

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

/// A group's pending observations from their stored text (`encode_pending`'s format).
fn decode_pending(text: &str) -> Result<Vec<PendingObservation>> {
    agent_memory_core::store::trajectory::decode_pending(text)
        .ok_or_else(|| Error::corrupt("trajectory_group.pending", text))
}

/// Rows per `INSERT` statement when episodes are appended, largest first: a batch goes in
/// as few statements as these sizes make. Each statement has a fixed cost (binding, cursors
/// opened), which many rows share.
const EPISODE_ROWS_PER_INSERT: [usize; 3] = [64, 8, 1];

/// The columns an appended episode's row gives, in the order its parameters are bound.
const EPISODE_COLUMNS: [&str; 9] = [
    "seq",
    "partition",
    "fp_id",
    "trajectory",
    "outcome",
    "recorded_at",
    "source",
    "session",
    "client",
];

/// An episode to append, with its fingerprint's id and its encoded trajectory.
type EpisodeRow<'a> = (&'a NewEpisode, i64, String);

/// The `INSERT` statement of `EPISODE_ROWS_PER_INSERT[size]` episodes, built once.
fn insert_episodes_sql(size: usize) -> &'static str {
    static TEXTS: OnceLock<[String; 3]> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        let width = EPISODE_COLUMNS.len();
        EPISODE_ROWS_PER_INSERT.map(|rows| {
            let values = (0..rows)
                .map(|row| {
                    let params: Vec<String> = (1..=width)
                        .map(|c| format!("?{}", row * width + c))
                        .collect();
                    format!("({})", params.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "INSERT INTO trajectory_episode ({}) VALUES {values}",
                EPISODE_COLUMNS.join(", ")
            )
        })
    });
    &texts[size]
}

/// The highest episode number ever given: the larger of the highest stored and the highest
/// a deletion may have removed (`trajectory_seq_floor`, no row before the first deletion). An
/// append numbers from one past it, so a number is never given twice.
pub(crate) fn highest_episode_seq(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT max(coalesce((SELECT max(seq) FROM trajectory_episode), 0), \
                    coalesce((SELECT seq FROM trajectory_seq_floor WHERE only = 0), 0))",
    )?
    .query_row([], |r| r.get(0))
}

/// Before a deletion of episodes: keeps the highest number given so far in
/// `trajectory_seq_floor`, so no later append gives a deleted number again.
fn keep_seq_floor(conn: &Connection) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO trajectory_seq_floor (only, seq) \
         VALUES (0, coalesce((SELECT max(seq) FROM trajectory_episode), 0)) \
         ON CONFLICT (only) DO UPDATE SET seq = max(seq, excluded.seq)",
    )?
    .execute([])?;
    Ok(())
}

/// Inserts `rows` with the sequence numbers `first`, `first + 1`, ...: given, not left to
/// SQLite, so each episode's number is known without relying on the order a multi-row
/// statement inserts in.
fn insert_episodes(conn: &Connection, first: i64, rows: &[EpisodeRow<'_>]) -> rusqlite::Result<()> {
    let mut done = 0;
    for (size, &per) in EPISODE_ROWS_PER_INSERT.iter().enumerate() {
        let chunks = rows[done..].chunks_exact(per);
        if chunks.len() == 0 {
            continue;
        }
        let mut insert = conn.prepare_cached(insert_episodes_sql(size))?;
        for chunk in chunks {
            for (row, (episode, fp_id, trajectory)) in chunk.iter().enumerate() {
                let p = row * EPISODE_COLUMNS.len();
                insert.raw_bind_parameter(p + 1, first + (done + row) as i64)?;
                insert.raw_bind_parameter(p + 2, episode.partition.as_str())?;
                insert.raw_bind_parameter(p + 3, fp_id)?;
                insert.raw_bind_parameter(p + 4, trajectory.as_str())?;
                insert.raw_bind_parameter(p + 5, episode.outcome.as_str())?;
                insert.raw_bind_parameter(p + 6, episode.recorded_at.as_millis())?;
                let by = episode.provenance.as_ref();
                insert.raw_bind_parameter(p + 7, by.map(|b| b.source.to_string()))?;
                insert.raw_bind_parameter(p + 8, by.and_then(|b| b.session.as_deref()))?;
                insert.raw_bind_parameter(p + 9, by.and_then(|b| b.client.as_deref()))?;
            }
            insert.raw_execute()?;
            done += per;
        }
    }
    Ok(())
}

/// The interned ids of fingerprints this store has seen committed, by partition and key, so
/// recording one episode at a time does not look its fingerprint up every call.
///
/// Only committed ids enter, and an interned id never changes; fingerprint rows are deleted
/// only when a partition is forgotten, which bumps a generation counter in `meta` in the same
/// transaction. Every append reads that counter inside its own transaction and empties the
/// cache when it moved, so an entry stays true whatever other connections or processes write
/// to the file. Bounded: when full it is emptied and refills from the table.
#[derive(Debug, Default)]
pub(crate) struct FingerprintIds(Mutex<FingerprintCache>);

#[derive(Debug, Default)]
struct FingerprintCache {
    /// The forget generation the ids were read under.
    generation: i64,
    ids: HashMap<String, HashMap<String, i64>>,
}

/// The `meta` key counting forgotten partitions.
const FORGET_GENERATION: &str = "store.trajectory.forget_generation";

/// The forget generation of its stored `meta` value (none yet: 0).
fn parse_generation(value: Option<String>) -> i64 {
    value.and_then(|v| v.parse().ok()).unwrap_or(0)
}

impl FingerprintIds {
    const CAPACITY: usize = 16_384;

    /// Empties the cache when the file's forget generation is no longer the cache's.
    fn sync(&self, generation: i64) {
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.generation != generation {
            cache.ids.clear();
            cache.generation = generation;
        }
    }

    fn get(&self, partition: &str, key: &str) -> Option<i64> {
        let cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        cache.ids.get(partition)?.get(key).copied()
    }

    /// Remembers ids read or interned by a transaction of `generation`, once it has
    /// committed.
    fn remember(&self, generation: i64, committed: Vec<(&str, &str, i64)>) {
        if committed.is_empty() {
            return;
        }
        let mut cache = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.generation != generation {
            return;
        }
        let map = &mut cache.ids;
        let len: usize = map.values().map(HashMap::len).sum();
        if len + committed.len() > Self::CAPACITY {
            map.clear();
        }
        for (partition, key, id) in committed.into_iter().take(Self::CAPACITY) {
            map.entry(partition.to_owned())
                .or_default()
                .insert(key.to_owned(), id);
        }
    }
}

/// The id of `(partition, fingerprint)`, interning it (with its field rows) when new.
fn intern(conn: &Connection, partition: &str, fingerprint: &Fingerprint) -> rusqlite::Result<i64> {
    let key = fingerprint.as_key();
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
    .query_row(params![partition, fingerprint.as_key()], |row| row.get(0))
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
        let fingerprint = Fingerprint::from_key(&self.fingerprint)?;
        self.decode_as(fingerprint)
    }

    /// Decodes the row with its fingerprint already known (equal to the row's key).
    fn decode_as(self, fingerprint: Fingerprint) -> Result<Group> {
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
            fingerprint,
            episode_count: count(self.episode_count)?,
            canonical,
            pending: decode_pending(&self.pending)?,
            pattern,
        })
    }
}

/// Hands `visit` every stored group, one at a time and in fingerprint id order (for `check`,
/// which so holds one group in memory), with its fingerprint id and where it is, decoded or
/// with the reason it does not decode.
pub(crate) fn for_each_group(
    conn: &Connection,
    mut visit: impl FnMut(i64, String, Result<Group>),
) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare(&format!(
        "SELECT g.fp_id, f.partition, {GROUP_COLUMNS} FROM trajectory_group g \
         JOIN trajectory_fingerprint f ON f.id = g.fp_id ORDER BY g.fp_id"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let fp_id: i64 = row.get(0)?;
        let partition: String = row.get(1)?;
        let group = GroupRow {
            fingerprint: row.get(2)?,
            episode_count: row.get(3)?,
            canonical: row.get(4)?,
            canonical_count: row.get(5)?,
            canonical_newest: row.get(6)?,
            canonical_first_seq: row.get(7)?,
            pending: row.get(8)?,
            confidence: row.get(9)?,
            evidence_count: row.get(10)?,
            corroborations: row.get(11)?,
            contradictions: row.get(12)?,
            last_reinforced: row.get(13)?,
        };
        let location = format!("trajectory_group {fp_id} of partition {partition:?}");
        visit(fp_id, location, group.decode());
    }
    Ok(())
}

/// How many filter pairs recall narrows by in SQL; any further pairs are checked on the rows.
const MAX_INDEXED_PAIRS: usize = 4;

/// The recall query for a filter of `pairs` pairs (at most [`MAX_INDEXED_PAIRS`]), built once
/// per number of pairs: parameters are the partition, then each field and value. Each pair
/// joins the field index by its key (the first pair a range of it, each further one a point
/// lookup), so the query builds no temporary table. It reads a pattern's columns only
/// ([`pattern_row`]), not the group's pending observations.
fn patterns_sql(pairs: usize) -> &'static str {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    let all = SQL.get_or_init(|| (0..=MAX_INDEXED_PAIRS).map(build_patterns_sql).collect());
    &all[pairs.min(MAX_INDEXED_PAIRS)]
}

fn build_patterns_sql(pairs: usize) -> String {
    let base = format!(
        "SELECT {PATTERN_COLUMNS} FROM trajectory_group g \
         JOIN trajectory_fingerprint f ON f.id = g.fp_id WHERE g.confidence IS NOT NULL"
    );
    if pairs == 0 {
        return format!("{base} AND f.partition = ?1");
    }
    let mut joins = String::new();
    let mut matching = String::new();
    for i in 0..pairs {
        joins.push_str(&format!(
            " JOIN trajectory_fingerprint_field p{i} ON p{i}.fp_id = g.fp_id"
        ));
        matching.push_str(&format!(
            " AND p{i}.partition = ?1 AND p{i}.field = ?{} AND p{i}.value = ?{}",
            2 * i + 2,
            2 * i + 3
        ));
    }
    let base = base.replacen(" WHERE", &format!("{joins} WHERE"), 1);
    format!("{base}{matching}")
}

/// A page of a partition's patterns (`patterns`) or pending groups: `columns` of the groups
/// in fingerprint key order, from the first or (`after`) past the key `?2`, at most `?3`.
fn groups_page_sql(columns: &str, patterns: bool, after: bool) -> String {
    let state = if patterns { "NOT NULL" } else { "NULL" };
    let cursor = if after { " AND f.fingerprint > ?2" } else { "" };
    format!(
        "SELECT {columns} FROM trajectory_fingerprint f \
         JOIN trajectory_group g ON g.fp_id = f.id \
         WHERE f.partition = ?1{cursor} AND g.confidence IS {state} \
         ORDER BY f.fingerprint LIMIT ?3"
    )
}

/// The parameters of [`groups_page_sql`].
fn page_params<'a>(
    partition: &'a Partition,
    after: Option<&'a Fingerprint>,
    limit: usize,
) -> (&'a str, &'a str, i64) {
    (
        partition.as_str(),
        after.map_or("", Fingerprint::as_key),
        i64::try_from(limit).unwrap_or(i64::MAX),
    )
}

/// How many of `partition`'s groups are patterns (`patterns`) or still pending.
fn count_groups(conn: &Connection, partition: &Partition, patterns: bool) -> rusqlite::Result<u64> {
    let sql = if patterns {
        "SELECT count(*) FROM trajectory_fingerprint f JOIN trajectory_group g ON g.fp_id = f.id \
         WHERE f.partition = ?1 AND g.confidence IS NOT NULL"
    } else {
        "SELECT count(*) FROM trajectory_fingerprint f JOIN trajectory_group g ON g.fp_id = f.id \
         WHERE f.partition = ?1 AND g.confidence IS NULL"
    };
    let count: i64 = conn
        .prepare_cached(sql)?
        .query_row([partition.as_str()], |row| row.get(0))?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The columns of a group that make its pattern, as [`pattern_row`] reads them.
const PATTERN_COLUMNS: &str = "f.fingerprint, g.canonical, g.canonical_count, \
     g.canonical_newest, g.canonical_first_seq, g.confidence, g.evidence_count, \
     g.corroborations, g.contradictions, g.last_reinforced";

/// The pattern of a row of [`PATTERN_COLUMNS`], decoded from the borrowed column text, as
/// [`GroupRow::decode`] and [`Pattern::of_group`] would make it: `None` when the group is no
/// pattern (a statistic is missing); its canonical sequence is empty when the group has no
/// complete canonical tally.
fn pattern_row(partition: &Partition, row: &rusqlite::Row<'_>) -> Result<Option<Pattern>> {
    let sql = |e| to_core("recall patterns", e);
    let loc = "trajectory_group";
    let count = |i: usize| -> Result<Option<u64>> {
        row.get::<_, Option<i64>>(i)
            .map_err(sql)?
            .map(|v| seq_from_sql(v, loc))
            .transpose()
    };
    let stats = match (
        row.get::<_, Option<f64>>(5).map_err(sql)?,
        count(6)?,
        count(7)?,
        count(8)?,
        row.get::<_, Option<i64>>(9).map_err(sql)?,
    ) {
        (Some(c), Some(e), Some(co), Some(ct), Some(l)) => PatternStats {
            confidence: c,
            evidence_count: e,
            corroborations: co,
            contradictions: ct,
            last_reinforced: Timestamp::from_millis(l),
        },
        _ => return Ok(None),
    };
    let text = |i: usize| -> Result<Option<&str>> {
        match row.get_ref(i).map_err(sql)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            value => value
                .as_str()
                .map(Some)
                .map_err(|e| Error::corrupt(loc, format!("column {i}: {e}"))),
        }
    };
    let fingerprint = Fingerprint::from_key(text(0)?.unwrap_or_default())?;
    let complete = count(2)?.is_some()
        && row.get::<_, Option<i64>>(3).map_err(sql)?.is_some()
        && count(4)?.is_some();
    let canonical_sequence = match text(1)? {
        Some(t) if complete => decode_trajectory(t)?,
        _ => Vec::new(),
    };
    Ok(Some(Pattern {
        partition: partition.clone(),
        fingerprint,
        canonical_sequence,
        stats,
    }))
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

/// The fingerprint of interned id `fp_id`, read once per call through `known`.
fn fingerprint_of(
    conn: &Connection,
    known: &mut HashMap<i64, Fingerprint>,
    fp_id: i64,
) -> Result<Fingerprint> {
    if let Some(fp) = known.get(&fp_id) {
        return Ok(fp.clone());
    }
    let key: String = conn
        .prepare_cached("SELECT fingerprint FROM trajectory_fingerprint WHERE id = ?1")
        .and_then(|mut stmt| stmt.query_row([fp_id], |row| row.get(0)))
        .map_err(|e| to_core("read fingerprint", e))?;
    let fp = Fingerprint::from_key(&key)?;
    known.insert(fp_id, fp.clone());
    Ok(fp)
}

/// Up to `limit` episodes of `partition` above `after`, each with its fingerprint's id.
/// Each row is decoded from the borrowed column text; a fingerprint is read and decoded once
/// per distinct id and shared by its episodes.
fn read_episodes(
    conn: &Connection,
    partition: &Partition,
    after: Seq,
    limit: usize,
) -> Result<Vec<(i64, Episode)>> {
    read_episodes_of(conn, partition, None, after, limit)
}

/// Up to `limit` episodes of `partition` above `after`, of group `group` only when given.
fn read_episodes_of(
    conn: &Connection,
    partition: &Partition,
    group: Option<i64>,
    after: Seq,
    limit: usize,
) -> Result<Vec<(i64, Episode)>> {
    let op = "read episodes";
    let sql = |e| to_core(op, e);
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, fp_id, trajectory, outcome, recorded_at, source, session, client \
             FROM trajectory_episode \
             WHERE partition = ?1 AND seq > ?2 AND (?4 IS NULL OR fp_id = ?4) \
             ORDER BY seq LIMIT ?3",
        )
        .map_err(sql)?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt
        .query(params![partition.as_str(), seq_to_sql(after), limit, group])
        .map_err(sql)?;
    decode_episodes(conn, partition, rows)
}

/// Up to `limit` episodes of `partition` numbered from `after` (exclusive) to `until`
/// (inclusive) whose fingerprint is one of `groups` (interned ids), ascending: one range
/// read of the partition, whatever the number of groups.
fn read_episodes_in(
    conn: &Connection,
    partition: &Partition,
    groups: &[i64],
    (after, until): (Seq, Seq),
    limit: usize,
) -> Result<Vec<(i64, Episode)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, fp_id, trajectory, outcome, recorded_at, source, session, client \
             FROM trajectory_episode \
             WHERE partition = ?1 AND seq > ?2 AND seq <= ?3 \
               AND fp_id IN (SELECT value FROM json_each(?4)) \
             ORDER BY seq LIMIT ?5",
        )
        .map_err(|e| to_core("read episodes", e))?;
    let rows = stmt
        .query(params![
            partition.as_str(),
            seq_to_sql(after),
            seq_to_sql(until),
            id_set(groups),
            i64::try_from(limit).unwrap_or(i64::MAX),
        ])
        .map_err(|e| to_core("read episodes", e))?;
    decode_episodes(conn, partition, rows)
}

/// `ids` as the JSON array a statement reads back with `json_each`, so a set of any size is
/// one bound value.
fn id_set(ids: &[i64]) -> String {
    let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("[{}]", ids.join(","))
}

/// The episodes of `partition` in `rows` (the columns [`read_episodes_of`] selects), each
/// with its fingerprint's id.
fn decode_episodes(
    conn: &Connection,
    partition: &Partition,
    mut rows: rusqlite::Rows<'_>,
) -> Result<Vec<(i64, Episode)>> {
    let sql = |e| to_core("read episodes", e);
    let mut known: HashMap<i64, Fingerprint> = HashMap::new();
    let mut episodes = Vec::new();
    while let Some(row) = rows.next().map_err(sql)? {
        let text = |i: usize| -> Result<&str> {
            row.get_ref(i)
                .map_err(sql)?
                .as_str()
                .map_err(|e| Error::corrupt("trajectory_episode", format!("column {i}: {e}")))
        };
        let fp_id: i64 = row.get(1).map_err(sql)?;
        let recorded_at = Timestamp::from_millis(row.get(4).map_err(sql)?);
        let writer = writer_columns(row, 5).map_err(sql)?;
        let provenance = stored_writer(writer, recorded_at, "trajectory_episode")?;
        let episode = Episode {
            seq: seq_from_sql(row.get(0).map_err(sql)?, "trajectory_episode.seq")?,
            episode: NewEpisode {
                partition: partition.clone(),
                fingerprint: fingerprint_of(conn, &mut known, fp_id)?,
                trajectory: decode_trajectory(text(2)?)?,
                outcome: text(3)?.to_owned(),
                recorded_at,
                provenance,
            },
        };
        episodes.push((fp_id, episode));
    }
    Ok(episodes)
}

/// What a batch of episodes adds to each partition's row of `trajectory_partition_totals`:
/// its episodes, their bytes as stored and the newest `recorded_at`.
#[derive(Default)]
struct PartitionTotals<'p>(Vec<(&'p str, i64, i64, i64)>);

impl<'p> PartitionTotals<'p> {
    fn add(&mut self, partition: &'p str, bytes: usize, recorded_at: Timestamp) {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        let at = recorded_at.as_millis();
        match self.0.iter_mut().find(|(p, ..)| *p == partition) {
            Some((_, episodes, total, newest)) => {
                *episodes += 1;
                *total = total.saturating_add(bytes);
                *newest = (*newest).max(at);
            }
            None => self.0.push((partition, 1, bytes, at)),
        }
    }

    /// Adds the batch to the stored totals: one statement per partition.
    fn write(&self, conn: &Connection) -> rusqlite::Result<()> {
        let mut upsert = conn.prepare_cached(
            "INSERT INTO trajectory_partition_totals (partition, episodes, bytes, newest) \
             VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (partition) DO UPDATE SET episodes = episodes + excluded.episodes, \
                 bytes = bytes + excluded.bytes, newest = max(newest, excluded.newest)",
        )?;
        for (partition, episodes, bytes, newest) in &self.0 {
            upsert.execute(params![partition, episodes, bytes, newest])?;
        }
        Ok(())
    }

    /// Counts `partition`'s totals again from its episodes, after a prune removed some.
    fn recount(conn: &Connection, partition: &str) -> rusqlite::Result<()> {
        conn.prepare_cached("DELETE FROM trajectory_partition_totals WHERE partition = ?1")?
            .execute([partition])?;
        conn.prepare_cached(
            "INSERT INTO trajectory_partition_totals (partition, episodes, bytes, newest) \
             SELECT partition, count(*), sum(octet_length(trajectory) + octet_length(outcome)), \
                    max(recorded_at) \
             FROM trajectory_episode WHERE partition = ?1 GROUP BY partition",
        )?
        .execute([partition])?;
        Ok(())
    }
}

fn watermark_of(conn: &Connection, partition: &str) -> rusqlite::Result<Seq> {
    let seq: Option<i64> = conn
        .prepare_cached("SELECT seq FROM trajectory_watermark WHERE partition = ?1")?
        .query_row([partition], |row| row.get(0))
        .optional()?;
    Ok(seq.map_or(0, |s| u64::try_from(s).unwrap_or(0)))
}

impl EpisodeStore for SqliteStore {
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>> {
        let op = "append episodes";
        if episodes.is_empty() && settings.is_empty() {
            return Ok(Vec::new());
        }
        let (stored, committed, generation) = self.write(op, |tx| {
            // The forget generation and every setting in one read.
            let keys: Vec<&str> = std::iter::once(FORGET_GENERATION)
                .chain(settings.iter().map(|(key, _)| key.as_str()))
                .collect();
            let mut found = meta::get_all(tx, &keys)
                .map_err(|e| to_core(op, e))?
                .into_iter();
            let generation = parse_generation(found.next().flatten());
            self.fingerprint_ids.sync(generation);
            // Every setting is checked before the first write, so a conflict leaves the
            // transaction without changes.
            let mut unset = Vec::new();
            for ((key, wanted), found) in settings.iter().zip(found) {
                match found {
                    Some(found) if found != *wanted => {
                        return Err(settings_conflict(key, wanted, &found));
                    }
                    Some(_) => {}
                    None => unset.push((*key, *wanted)),
                }
            }
            for (key, value) in unset {
                meta::put(tx, key, value).map_err(|e| to_core(op, e))?;
            }
            let mut ids: HashMap<(&str, &str), i64> = HashMap::new();
            let mut committed = Vec::new();
            let mut rows = Vec::with_capacity(episodes.len());
            let mut totals = PartitionTotals::default();
            for episode in episodes {
                let partition = episode.partition.as_str();
                let key = episode.fingerprint.as_key();
                let fp_id = match ids.get(&(partition, key)) {
                    Some(&id) => id,
                    None => {
                        let id = match self.fingerprint_ids.get(partition, key) {
                            Some(id) => id,
                            None => {
                                let id = intern(tx, partition, &episode.fingerprint)
                                    .map_err(|e| to_core(op, e))?;
                                committed.push((partition, key, id));
                                id
                            }
                        };
                        ids.insert((partition, key), id);
                        id
                    }
                };
                let trajectory = encode_trajectory(&episode.trajectory);
                totals.add(
                    partition,
                    trajectory.len() + episode.outcome.len(),
                    episode.recorded_at,
                );
                rows.push((episode, fp_id, trajectory));
            }
            let highest = highest_episode_seq(tx).map_err(|e| to_core(op, e))?;
            // Only a file whose numbers reach the end of `i64` runs out.
            i64::try_from(rows.len())
                .ok()
                .and_then(|n| highest.checked_add(n))
                .ok_or_else(|| {
                    Error::corrupt(
                        "trajectory_seq_floor",
                        format!(
                            "no sequence numbers left for {} episodes after {highest}",
                            rows.len()
                        ),
                    )
                })?;
            let first = highest + 1;
            insert_episodes(tx, first, &rows).map_err(|e| to_core(op, e))?;
            let stored = (0..rows.len())
                .map(|i| seq_from_sql(first + i as i64, "trajectory_episode.seq"))
                .collect::<Result<Vec<Seq>>>()?;
            totals.write(tx).map_err(|e| to_core(op, e))?;
            for run in WriteRun::episode_runs(episodes) {
                audit_write_run(tx, &run).map_err(|e| to_core(op, e))?;
            }
            Ok((stored, committed, generation))
        })?;
        self.fingerprint_ids.remember(generation, committed);
        Ok(stored)
    }

    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let conn = self.lock();
        Ok(read_episodes(&conn, partition, after, limit)?
            .into_iter()
            .map(|(_, e)| e)
            .collect())
    }

    fn group_episodes(
        &self,
        partition: &Partition,
        fingerprint: &Fingerprint,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        let conn = self.lock();
        let Some(fp_id) = lookup(&conn, partition.as_str(), fingerprint)
            .map_err(|e| to_core("read episodes", e))?
        else {
            return Ok(Vec::new());
        };
        Ok(
            read_episodes_of(&conn, partition, Some(fp_id), after, limit)?
                .into_iter()
                .map(|(_, e)| e)
                .collect(),
        )
    }

    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        let op = "prune episodes";
        self.write(op, |tx| {
            let watermark = watermark_of(tx, partition.as_str()).map_err(|e| to_core(op, e))?;
            keep_seq_floor(tx).map_err(|e| to_core(op, e))?;
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
            if removed > 0 {
                PartitionTotals::recount(tx, partition.as_str()).map_err(|e| to_core(op, e))?;
            }
            Ok(removed as u64)
        })
    }
}

/// What a crystallize run keeps between its pages: per group it touched, not per episode.
#[derive(Default)]
struct CrystallizeRun {
    /// Whether each group the run touched, by interned id, was stored before the run (then
    /// its stored tallies are read as they always were).
    stored_before: HashMap<i64, bool>,
    /// A hash of each `(group, trajectory)` tally the run wrote in a group it created, so a
    /// later page reads only those of its pairs that may have a stored tally (a collision
    /// costs one read that finds nothing).
    created_tallies: HashSet<u64>,
    /// The patterns to answer with.
    patterns: ReinforcedPatterns,
}

/// The hash [`CrystallizeRun::created_tallies`] keeps of a tally.
fn tally_hash(fp_id: i64, trajectory: &[String]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (fp_id, trajectory).hash(&mut hasher);
    hasher.finish()
}

/// Applies `step` to one page of a run's episodes, inside the run's transaction: reads the
/// state of the groups they touch (as the run's earlier pages wrote it) and writes `step`'s
/// output.
fn crystallize_page(
    tx: &Connection,
    episodes: Vec<(i64, Episode)>,
    step: CrystallizeStep<'_>,
    run: &mut CrystallizeRun,
) -> Result<()> {
    let op = "crystallize";
    let sql = |e| to_core(op, e);
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
            let fingerprint = &e.episode.fingerprint;
            if !fp_ids.contains_key(fingerprint.as_key()) {
                let row = group_stmt
                    .query_row([fp_id], group_row)
                    .optional()
                    .map_err(sql)?;
                let stored_before = *run.stored_before.entry(*fp_id).or_insert(row.is_some());
                if let Some(row) = row {
                    input.groups.push(row.decode_as(fingerprint.clone())?);
                    if stored_before {
                        stored_groups.insert(*fp_id);
                    }
                }
                fp_ids.insert(fingerprint.key(), *fp_id);
            }
            // Tallies are written with their group, so a new group has none to read but
            // those an earlier page of this run wrote.
            let trajectory = e.episode.trajectory.as_slice();
            let may_have_tally = stored_groups.contains(fp_id)
                || (!run.created_tallies.is_empty()
                    && run
                        .created_tallies
                        .contains(&tally_hash(*fp_id, trajectory)));
            if may_have_tally && seen_tallies.insert((*fp_id, trajectory)) {
                let found: Option<(i64, i64, i64)> = tally_stmt
                    .query_row(params![fp_id, encode_trajectory(trajectory)], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .optional()
                    .map_err(sql)?;
                if let Some((count, newest, first_seq)) = found {
                    input.tallies.push((
                        fingerprint.key(),
                        TrajectoryTally {
                            trajectory: trajectory.to_vec(),
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
    run.patterns.touch(&input.episodes);
    let output = step(&input)?;
    drop(input);
    run.patterns.written(&output);
    let id_of = |key: &str| {
        fp_ids.get(key).copied().ok_or_else(|| {
            Error::invalid_input(
                "crystallize output",
                format!("fingerprint {key:?} has no new episode in this run"),
            )
        })
    };
    for group in &output.groups {
        write_group(tx, id_of(group.fingerprint.as_key())?, group).map_err(sql)?;
    }
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
        if run.stored_before.get(&fp_id) == Some(&false) {
            run.created_tallies
                .insert(tally_hash(fp_id, &tally.trajectory));
        }
    }
    Ok(())
}

impl PatternStore for SqliteStore {
    fn crystallize_with(
        &self,
        partition: &Partition,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        self.crystallize_in_pages(partition, usize::MAX, step)
    }

    fn crystallize_in_pages(
        &self,
        partition: &Partition,
        page: usize,
        step: CrystallizeStep<'_>,
    ) -> Result<Vec<Pattern>> {
        let op = "crystallize";
        let sql = |e| to_core(op, e);
        let name = partition.as_str();
        let page = page.max(1);
        self.write(op, |tx| {
            let watermark = watermark_of(tx, name).map_err(sql)?;
            let mut run = CrystallizeRun::default();
            let mut last = watermark;
            loop {
                let episodes = read_episodes(tx, partition, last, page)?;
                let Some(seq) = episodes.last().map(|(_, e)| e.seq) else {
                    break;
                };
                let more = episodes.len() == page;
                crystallize_page(tx, episodes, step, &mut run)?;
                last = seq;
                if !more {
                    break;
                }
            }
            if last == watermark {
                return Ok(Vec::new());
            }
            tx.prepare_cached(
                "INSERT INTO trajectory_watermark (partition, seq) VALUES (?1, ?2) \
                 ON CONFLICT (partition) DO UPDATE SET seq = excluded.seq",
            )
            .and_then(|mut stmt| stmt.execute(params![name, seq_to_sql(last)]))
            .map_err(sql)?;
            Ok(run.patterns.patterns(partition))
        })
    }

    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        self.read("read watermark", |conn| {
            watermark_of(conn, partition.as_str())
        })
    }

    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        let name = partition.as_str();
        let sql = |e| to_core("recall patterns", e);
        // Every pair of the filter (up to a bound) narrows in SQL, through the field index:
        // an exact recall reads its one group, not every group sharing its first field.
        let pairs = &filter.pairs()[..filter.pairs().len().min(MAX_INDEXED_PAIRS)];
        // Each row becomes its pattern as it is read: no row is copied out first.
        self.read_with(|conn| {
            let mut stmt = conn
                .prepare_cached(patterns_sql(pairs.len()))
                .map_err(sql)?;
            let values = std::iter::once(name)
                .chain(pairs.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]));
            let mut rows = stmt
                .query(rusqlite::params_from_iter(values))
                .map_err(sql)?;
            let mut patterns = Vec::new();
            while let Some(row) = rows.next().map_err(sql)? {
                let Some(pattern) = pattern_row(partition, row)? else {
                    continue;
                };
                if pattern.fingerprint.matches(filter) {
                    patterns.push(pattern);
                }
            }
            Ok(patterns)
        })
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

    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>> {
        let rows = self.read("list pending groups", |conn| {
            conn.prepare_cached(&format!(
                "SELECT {GROUP_COLUMNS} FROM trajectory_group g \
                 JOIN trajectory_fingerprint f ON f.id = g.fp_id \
                 WHERE f.partition = ?1 AND g.confidence IS NULL"
            ))?
            .query_map([partition.as_str()], group_row)?
            .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        let mut pending = rows
            .into_iter()
            .map(GroupRow::decode)
            .collect::<Result<Vec<Group>>>()?;
        // By fingerprint pairs, as `Fingerprint` orders; the stored key orders otherwise.
        pending.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        Ok(pending)
    }

    fn patterns_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Pattern>> {
        let sql = |e| to_core("list patterns", e);
        // The unique index on (partition, fingerprint) is walked from the cursor on, so a
        // page reads its own rows and the count, whatever the partition holds. The count
        // comes first: a partition without patterns is not walked for them.
        self.read_with(|conn| {
            let total = count_groups(conn, partition, true).map_err(sql)?;
            if total == 0 {
                return Ok(Page {
                    items: Vec::new(),
                    total,
                });
            }
            let mut stmt = conn
                .prepare_cached(&groups_page_sql(PATTERN_COLUMNS, true, after.is_some()))
                .map_err(sql)?;
            let mut rows = stmt
                .query(page_params(partition, after, limit))
                .map_err(sql)?;
            let mut items = Vec::new();
            while let Some(row) = rows.next().map_err(sql)? {
                if let Some(pattern) = pattern_row(partition, row)? {
                    items.push(pattern);
                }
            }
            Ok(Page { items, total })
        })
    }

    fn pending_groups_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Group>> {
        let (rows, total) = self.read("list pending groups", |conn| {
            let total = count_groups(conn, partition, false)?;
            if total == 0 {
                return Ok((Vec::new(), total));
            }
            let rows = conn
                .prepare_cached(&groups_page_sql(GROUP_COLUMNS, false, after.is_some()))?
                .query_map(page_params(partition, after, limit), group_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((rows, total))
        })?;
        let items = rows
            .into_iter()
            .map(GroupRow::decode)
            .collect::<Result<Vec<Group>>>()?;
        Ok(Page { items, total })
    }

    fn partitions(&self) -> Result<Vec<PartitionSummary>> {
        let op = "list partitions";
        type Row = (String, i64, i64, i64, i64, i64, Option<i64>);
        let rows: Vec<Row> = self.read(op, |conn| {
            // One pass over the episodes gives each partition's count, bytes and newest time
            // (`octet_length` counts a column's bytes without reading its text).
            // Each partition's episode totals are one row (`trajectory_partition_totals`),
            // kept by the episode writes; the groups are counted.
            conn.prepare_cached(
                "WITH groups AS (
                     SELECT f.partition, count(g.confidence) AS patterns,
                            count(*) - count(g.confidence) AS pending
                     FROM trajectory_group g JOIN trajectory_fingerprint f ON f.id = g.fp_id
                     GROUP BY f.partition
                 ),
                 names AS (
                     SELECT partition FROM trajectory_partition_totals
                     UNION SELECT partition FROM groups
                 )
                 SELECT n.partition, coalesce(e.episodes, 0), coalesce(g.patterns, 0),
                        coalesce(g.pending, 0),
                        coalesce((SELECT seq FROM trajectory_watermark w WHERE w.partition = n.partition), 0),
                        coalesce(e.bytes, 0), e.newest
                 FROM names n
                 LEFT JOIN trajectory_partition_totals e ON e.partition = n.partition
                 LEFT JOIN groups g ON g.partition = n.partition
                 ORDER BY n.partition",
            )?
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            })?
            .collect()
        })?;
        rows.into_iter()
            .map(
                |(name, episodes, patterns, pending, watermark, bytes, newest)| {
                    let location = "trajectory partition counts";
                    Ok(PartitionSummary {
                        partition: Partition::new(name)?,
                        episodes: seq_from_sql(episodes, location)?,
                        patterns: seq_from_sql(patterns, location)?,
                        pending_groups: seq_from_sql(pending, location)?,
                        watermark: seq_from_sql(watermark, location)?,
                        bytes: seq_from_sql(bytes, location)?,
                        last_write: newest.map(Timestamp::from_millis),
                    })
                },
            )
            .collect()
    }

    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&MetaKey],
        by: &Provenance,
    ) -> Result<u64> {
        let op = "forget partition";
        let name = partition.as_str();
        let episodes = self.write(op, |tx| {
            let run = |sql: &str| -> rusqlite::Result<usize> {
                tx.prepare_cached(sql)?.execute([name])
            };
            // Each statement reads the partition's rows through an index on `partition` or on
            // `fp_id`, and deleting a fingerprint looks its references up by their keys
            // (groups, tallies) or has none to look up (episodes and fields declare no foreign
            // key, migration 13): a forget reads no row of another partition.
            let forget = || -> rusqlite::Result<usize> {
                let ids = "SELECT id FROM trajectory_fingerprint WHERE partition = ?1";
                run(&format!("DELETE FROM trajectory_tally WHERE fp_id IN ({ids})"))?;
                run(&format!("DELETE FROM trajectory_group WHERE fp_id IN ({ids})"))?;
                keep_seq_floor(tx)?;
                let episodes = run("DELETE FROM trajectory_episode WHERE partition = ?1")?;
                run("DELETE FROM trajectory_fingerprint_field WHERE partition = ?1")?;
                let fingerprints = run("DELETE FROM trajectory_fingerprint WHERE partition = ?1")?;
                run("DELETE FROM trajectory_watermark WHERE partition = ?1")?;
                run("DELETE FROM trajectory_partition_totals WHERE partition = ?1")?;
                let mut setting = tx.prepare_cached("DELETE FROM meta WHERE key = ?1")?;
                for key in settings {
                    setting.execute([key.as_str()])?;
                }
                if fingerprints > 0 {
                    // Interned ids of this partition are gone: every process's cache must
                    // refill (see `FingerprintIds`).
                    tx.prepare_cached(
                        "INSERT INTO meta (key, value) VALUES (?1, '1')
                         ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
                    )?
                    .execute([FORGET_GENERATION])?;
                }
                let detail = forget_detail(&[(episodes as u64, "episode", "episodes")]);
                audit_in(tx, "trajectory", Action::Forget, NO_SCOPE, name, by, &detail)?;
                Ok(episodes)
            };
            forget().map_err(|e| to_core(op, e))
        })?;
        self.erase_freed_pages()?;
        Ok(episodes as u64)
    }

    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<EpisodesForgotten> {
        writer.check()?;
        let op = "forget episodes by writer";
        let sql = |e| to_core(op, e);
        let name = partition.as_str();
        // Only placeholders are added to the text; every value is bound.
        let source = writer.source.as_ref().map(ToString::to_string);
        let mut filter = "partition = ? AND source IS NOT NULL".to_owned();
        let mut values: Vec<&str> = vec![name];
        for (column, value) in [
            ("source", source.as_deref()),
            ("session", writer.session.as_deref()),
            ("client", writer.client.as_deref()),
        ] {
            if let Some(value) = value {
                filter.push_str(&format!(" AND {column} = ?"));
                values.push(value);
            }
        }
        // One statement finds and deletes them: the partition is read once.
        let delete = format!("DELETE FROM trajectory_episode WHERE {filter} RETURNING seq, fp_id");
        let forgotten = self.write(op, |tx| {
            let watermark = watermark_of(tx, name).map_err(sql)?;
            // The largest number given stays given, even if its episode is among those going.
            keep_seq_floor(tx).map_err(sql)?;
            let found: Vec<(i64, i64)> = tx
                .prepare(&delete)
                .and_then(|mut stmt| {
                    stmt.query_map(rusqlite::params_from_iter(&values), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?
                    .collect()
                })
                .map_err(sql)?;
            let mut forgotten = EpisodesForgotten {
                episodes: found.len() as u64,
                groups: Vec::new(),
            };
            if !found.is_empty() {
                PartitionTotals::recount(tx, name).map_err(sql)?;
            }
            // The groups the watermark says some of them were folded into.
            let folded: HashSet<i64> = found
                .iter()
                .filter(|(seq, _)| *seq <= seq_to_sql(watermark))
                .map(|(_, fp_id)| *fp_id)
                .collect();
            let mut folded: Vec<i64> = folded.into_iter().collect();
            folded.sort_unstable();
            let mut from: HashMap<i64, u64> = HashMap::new();
            for &fp_id in &folded {
                for table in ["trajectory_tally", "trajectory_group"] {
                    tx.prepare_cached(&format!("DELETE FROM {table} WHERE fp_id = ?1"))
                        .and_then(|mut stmt| stmt.execute([fp_id]))
                        .map_err(sql)?;
                }
                from.insert(fp_id, 0);
            }
            // The episodes left in those groups, folded again from nothing in one pass over
            // the partition, a page at a time: groups fold independently, so this is each
            // group's own run.
            if !folded.is_empty() {
                let mut run = CrystallizeRun::default();
                let mut after = 0;
                loop {
                    let page = read_episodes_in(
                        tx,
                        partition,
                        &folded,
                        (after, watermark),
                        CRYSTALLIZE_REBUILD_PAGE,
                    )?;
                    let Some(last) = page.last().map(|(_, e)| e.seq) else {
                        break;
                    };
                    let more = page.len() == CRYSTALLIZE_REBUILD_PAGE;
                    for (fp_id, _) in &page {
                        *from.entry(*fp_id).or_default() += 1;
                    }
                    crystallize_page(tx, page, step, &mut run)?;
                    after = last;
                    if !more {
                        break;
                    }
                }
            }
            let mut known = HashMap::new();
            let mut rebuilt = Vec::with_capacity(folded.len());
            for fp_id in folded {
                let episodes = from.get(&fp_id).copied().unwrap_or(0);
                rebuilt.push((fingerprint_of(tx, &mut known, fp_id)?, episodes));
            }
            // A fingerprint of a forgotten episode that no episode or group refers to any
            // more goes too, folded or not: its values may be the writer's own text.
            let mut doomed: Vec<i64> = found.iter().map(|(_, fp_id)| *fp_id).collect();
            doomed.sort_unstable();
            doomed.dedup();
            let orphans = forget_orphan_fingerprints(tx, name, &doomed).map_err(sql)?;
            if orphans > 0 {
                // Interned ids are gone: every process's cache must refill.
                tx.prepare_cached(
                    "INSERT INTO meta (key, value) VALUES (?1, '1')
                     ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)",
                )
                .and_then(|mut stmt| stmt.execute([FORGET_GENERATION]))
                .map_err(sql)?;
            }
            rebuilt.sort_by(|a, b| a.0.cmp(&b.0));
            forgotten.groups = rebuilt;
            let detail = episodes_forgotten_detail(&forgotten);
            audit_in(tx, "trajectory", Action::Forget, NO_SCOPE, name, by, &detail).map_err(sql)?;
            Ok(forgotten)
        })?;
        if forgotten.episodes > 0 {
            self.erase_freed_pages()?;
        }
        Ok(forgotten)
    }
}

/// Deletes each of `candidates` (interned fingerprints of `partition`) that no episode or
/// group refers to any more, with its field rows; returns how many went. A fingerprint with a
/// group is kept on a point lookup; only when some have none are the partition's episodes
/// read, once for all of them, so the statements are at most four whatever their number.
fn forget_orphan_fingerprints(
    conn: &Connection,
    partition: &str,
    candidates: &[i64],
) -> rusqlite::Result<usize> {
    if candidates.is_empty() {
        return Ok(0);
    }
    let groupless: Vec<i64> = conn
        .prepare_cached(
            "SELECT c.value FROM json_each(?1) AS c \
             WHERE NOT EXISTS (SELECT 1 FROM trajectory_group g WHERE g.fp_id = c.value)",
        )?
        .query_map([id_set(candidates)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if groupless.is_empty() {
        return Ok(0);
    }
    let orphans: Vec<i64> = conn
        .prepare_cached(
            "SELECT c.value FROM json_each(?2) AS c \
             WHERE c.value NOT IN ( \
                 SELECT fp_id FROM trajectory_episode \
                 WHERE partition = ?1 AND fp_id IN (SELECT value FROM json_each(?2)))",
        )?
        .query_map(params![partition, id_set(&groupless)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    if orphans.is_empty() {
        return Ok(0);
    }
    let orphans = id_set(&orphans);
    conn.prepare_cached(
        "DELETE FROM trajectory_fingerprint_field \
         WHERE partition = ?1 AND fp_id IN (SELECT value FROM json_each(?2))",
    )?
    .execute(params![partition, orphans])?;
    conn.prepare_cached(
        "DELETE FROM trajectory_fingerprint WHERE id IN (SELECT value FROM json_each(?1))",
    )?
    .execute([orphans])
}

/// Episodes a forget by writer folds at once when it rebuilds a group.
const CRYSTALLIZE_REBUILD_PAGE: usize = 1_000;
