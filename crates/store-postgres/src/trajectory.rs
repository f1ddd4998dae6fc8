//! [`EpisodeStore`] and [`PatternStore`] on the `trajectory_*` tables.
//!
//! Exactly-once crystallize across processes and hosts rests on one advisory lock per
//! partition: appends hold it shared while they insert and commit, crystallize (and prune and
//! forget) hold it exclusive. A crystallizer therefore starts only when every append that
//! began before it has committed, and reads, under `READ COMMITTED`, every episode those
//! appends wrote; an append that begins after it waits, and its episodes get sequence numbers
//! above everything the crystallizer saw. The watermark never passes an episode that is not
//! yet visible, so each episode is observed exactly once.
//!
//! Every batch is a fixed number of statements whatever its size (multi-row inserts and
//! upserts from `unnest` of arrays), so a crystallize of 100,000 episodes is a handful of
//! round trips.

use std::collections::{BTreeSet, HashMap, HashSet};

use agent_memory_core::evidence::{Action, NO_SCOPE, WriteRun, Writer, forget_detail};
use agent_memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeStep, Episode, EpisodeStore, EpisodesForgotten, Fingerprint,
    Group, NewEpisode, PartitionSummary, Pattern, PatternStats, PatternStore, ReinforcedPatterns,
    Seq, TrajectoryTally, decode_pending, decode_texts, encode_pending, encode_texts,
    episodes_forgotten_detail, settings_conflict,
};
use agent_memory_core::{Error, MetaKey, Page, Partition, Provenance, Result, Timestamp};
use postgres::Row;

use crate::notes::{WriterArrays, audit_in, audit_write_run, provenance_fits, stored_writer};
use crate::{Fail, PostgresStore, Single, Tx, check_texts, count, lock, meta};

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

/// Each `(field, value)` pair of `fingerprint` as one text, for the containment index.
fn pair_texts(fingerprint: &Fingerprint) -> Vec<String> {
    fingerprint
        .pairs()
        .iter()
        .map(|(k, v)| encode_texts([k.as_str(), v.as_str()]))
        .collect()
}

/// Takes the advisory lock of `partition`: shared for appends, exclusive for everything that
/// reads the watermark and acts on it.
fn lock_partition(
    tx: &mut Tx<'_>,
    partition: &str,
    exclusive: bool,
) -> std::result::Result<(), Fail> {
    Ok(tx.advisory_lock(lock::PARTITION, partition, exclusive)?)
}

fn watermark_of(q: impl Single, partition: &str) -> std::result::Result<Seq, Fail> {
    let seq: Option<i64> = q
        .row(
            "SELECT seq FROM trajectory_watermark WHERE partition = $1",
            &[&partition],
        )?
        .map(|row| row.get(0));
    Ok(seq.map_or(0, |s| u64::try_from(s).unwrap_or(0)))
}

/// The columns of a `trajectory_group` row, in the order [`decode_group`] reads them.
macro_rules! group_columns {
    () => {
        "fingerprint, episode_count, canonical, canonical_count, canonical_newest, \
         canonical_first_seq, pending, confidence, evidence_count, corroborations, \
         contradictions, last_reinforced"
    };
}

/// A page of `partition`'s patterns (`patterns`) or pending groups in fingerprint key order
/// (byte order, `COLLATE "C"`), past `after`'s key, and how many there are, in one snapshot.
fn groups_page(
    store: &PostgresStore,
    partition: &Partition,
    patterns: bool,
    after: Option<&Fingerprint>,
    limit: usize,
) -> Result<(Vec<Row>, u64)> {
    let (page, total) = if patterns {
        (
            concat!(
                "SELECT ",
                group_columns!(),
                " FROM trajectory_group WHERE partition = $1 AND confidence IS NOT NULL \
                 AND ($2::text IS NULL OR fingerprint COLLATE \"C\" > $2) \
                 ORDER BY fingerprint COLLATE \"C\" LIMIT $3"
            ),
            "SELECT count(*) FROM trajectory_group WHERE partition = $1 AND confidence IS NOT NULL",
        )
    } else {
        (
            concat!(
                "SELECT ",
                group_columns!(),
                " FROM trajectory_group WHERE partition = $1 AND confidence IS NULL \
                 AND ($2::text IS NULL OR fingerprint COLLATE \"C\" > $2) \
                 ORDER BY fingerprint COLLATE \"C\" LIMIT $3"
            ),
            "SELECT count(*) FROM trajectory_group WHERE partition = $1 AND confidence IS NULL",
        )
    };
    let after = after.map(Fingerprint::as_key);
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    store.read("list groups", |tx| {
        // The count first: a partition without the groups asked for is not searched.
        let total = count(tx.query_one(total, &[&partition.as_str()])?.get(0));
        if total == 0 {
            return Ok((Vec::new(), total));
        }
        let rows = tx.query(page, &[&partition.as_str(), &after, &limit])?;
        Ok((rows, total))
    })
}

/// Decodes a `trajectory_group` row selected as `group_columns!()`; `known` is its
/// fingerprint when the caller has it.
fn decode_group(row: &Row, known: Option<&Fingerprint>) -> Result<Group> {
    let loc = "trajectory_group";
    let key: &str = row.get(0);
    let fingerprint = match known {
        Some(fp) => fp.clone(),
        None => Fingerprint::from_key(key)?,
    };
    let number = |v: i64| seq_from_sql(v, loc);
    let canonical = match (
        row.get::<_, Option<&str>>(2),
        row.get::<_, Option<i64>>(3),
        row.get::<_, Option<i64>>(4),
        row.get::<_, Option<i64>>(5),
    ) {
        (Some(t), Some(c), Some(n), Some(f)) => Some(TrajectoryTally {
            trajectory: decode_trajectory(t)?,
            count: number(c)?,
            newest: Timestamp::from_millis(n),
            first_seq: number(f)?,
        }),
        _ => None,
    };
    let pattern = match (
        row.get::<_, Option<f64>>(7),
        row.get::<_, Option<i64>>(8),
        row.get::<_, Option<i64>>(9),
        row.get::<_, Option<i64>>(10),
        row.get::<_, Option<i64>>(11),
    ) {
        (Some(c), Some(e), Some(co), Some(ct), Some(l)) => Some(PatternStats {
            confidence: c,
            evidence_count: number(e)?,
            corroborations: number(co)?,
            contradictions: number(ct)?,
            last_reinforced: Timestamp::from_millis(l),
        }),
        _ => None,
    };
    let pending: &str = row.get(6);
    Ok(Group {
        fingerprint,
        episode_count: number(row.get(1))?,
        canonical,
        pending: decode_pending(pending)
            .ok_or_else(|| Error::corrupt("trajectory_group.pending", pending))?,
        pattern,
    })
}

/// Reads the episodes of `partition` above `after` (at most `limit`), decoding each distinct
/// fingerprint once.
fn read_episodes(
    q: impl Single,
    partition: &Partition,
    after: Seq,
    limit: usize,
) -> std::result::Result<Vec<Episode>, Fail> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = q.rows(
        "SELECT seq, fingerprint, trajectory, outcome, recorded_at, source, session, client \
         FROM trajectory_episode \
         WHERE partition = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        &[&partition.as_str(), &seq_to_sql(after), &limit],
    )?;
    decode_episodes(&rows, partition)
}

/// Up to `limit` episodes of `partition` in the groups `fingerprints` with a sequence number
/// from `after` (exclusive) to `until` (inclusive), ascending: one range read of the
/// partition, whatever the number of groups.
fn read_episodes_in(
    q: impl Single,
    partition: &Partition,
    fingerprints: &[&str],
    (after, until): (Seq, Seq),
    limit: usize,
) -> std::result::Result<Vec<Episode>, Fail> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = q.rows(
        "SELECT seq, fingerprint, trajectory, outcome, recorded_at, source, session, client \
         FROM trajectory_episode \
         WHERE partition = $1 AND fingerprint = ANY($2::text[]) AND seq > $3 AND seq <= $4 \
         ORDER BY seq LIMIT $5",
        &[
            &partition.as_str(),
            &fingerprints,
            &seq_to_sql(after),
            &seq_to_sql(until),
            &limit,
        ],
    )?;
    decode_episodes(&rows, partition)
}

/// The episodes of `partition` in `rows` (the columns [`read_episodes`] selects).
fn decode_episodes(rows: &[Row], partition: &Partition) -> std::result::Result<Vec<Episode>, Fail> {
    let mut known: HashMap<&str, Fingerprint> = HashMap::new();
    let mut episodes = Vec::with_capacity(rows.len());
    for row in rows {
        let key: &str = row.get(1);
        let fingerprint = match known.get(key) {
            Some(fp) => fp.clone(),
            None => {
                let fp = Fingerprint::from_key(key)?;
                known.insert(key, fp.clone());
                fp
            }
        };
        let recorded_at = Timestamp::from_millis(row.get(4));
        let provenance = stored_writer(row, 5, recorded_at, "trajectory_episode")?;
        episodes.push(Episode {
            seq: seq_from_sql(row.get(0), "trajectory_episode.seq")?,
            episode: NewEpisode {
                partition: partition.clone(),
                fingerprint,
                trajectory: decode_trajectory(row.get(2))?,
                outcome: row.get(3),
                recorded_at,
                provenance,
            },
        });
    }
    Ok(episodes)
}

fn episodes_fit(episodes: &[NewEpisode]) -> Result<()> {
    for (i, episode) in episodes.iter().enumerate() {
        let item = || format!("episode {}", i + 1);
        check_texts(
            item,
            episode
                .fingerprint
                .pairs()
                .iter()
                .flat_map(|(k, v)| [("fingerprint", k.as_str()), ("fingerprint", v.as_str())])
                .chain(
                    episode
                        .trajectory
                        .iter()
                        .map(|a| ("trajectory", a.as_str())),
                )
                .chain([("outcome", episode.outcome.as_str())]),
        )?;
        if let Some(by) = &episode.provenance {
            provenance_fits(item, by)?;
        }
    }
    Ok(())
}

/// Inserts a batch of episodes (`unnest` of arrays `$1`..`$5`, and `$8`..`$10` for the
/// writers' source, session and client) after taking the shared
/// advisory lock (class `$6`) of each partition in `$7` (sorted): the lock subquery is
/// materialized and aggregated, so every lock is held before the first row is formed and
/// draws its sequence number; the locks last until the statement's transaction ends. Rows
/// are inserted in ordinality order, so their identities ascend in batch order.
const APPEND: &str = "WITH locked AS MATERIALIZED ( \
       SELECT count(pg_advisory_xact_lock_shared($6::integer, hashtext(l))) AS held \
       FROM unnest($7::text[]) AS u(l)) \
     INSERT INTO trajectory_episode (partition, fingerprint, trajectory, outcome, recorded_at, \
       source, session, client) \
     SELECT e.p, e.f, e.t, e.o, e.r, e.s, e.ss, e.c FROM locked, unnest($1::text[], $2::text[], \
       $3::text[], $4::text[], $5::bigint[], $8::text[], $9::text[], $10::text[]) \
       WITH ORDINALITY AS e(p, f, t, o, r, s, ss, c, n) ORDER BY e.n \
     RETURNING seq";

/// [`APPEND`] for a single episode (an agent recording each trajectory as it ends): the same
/// row and the same lock taken before the row draws its sequence number, with the values
/// bound as they are rather than as one-element arrays, so the server neither unnests nor
/// sorts. `$1`..`$5` are the row's columns, `$6` the lock class, `$7`..`$9` the writer's
/// source, session and client.
///
/// The same statement keeps the audit trail ([`WriteRun`]): once it holds the partition's
/// lock, it makes sure the newest entry about the partition is a write by the same writer
/// (`$11`..`$13`: source, session, client, as the trail stores them); otherwise it takes the
/// trail's lock (class `$10`) and appends the entry opening the writer's run (memory `$14`,
/// detail `$15`). So one record is still one round trip, and once its writer's run is open it
/// inserts nothing into `audit`.
///
/// The trail must be read as it is once the lock is held. The statement's snapshot was taken
/// before the lock: a forget that committed while this insert waited would be invisible to it,
/// and the insert would continue the run the forget had ended. `audit_keep_run` (migration
/// 17) reads a snapshot of its own, taken when it runs, but calling it costs a plan's
/// execution more. So the statement first asks whether its snapshot can miss anything: the
/// trail's entries are numbered from `audit_seq_seq`, one value at a time, by a writer that
/// holds the trail's lock from the number's draw until its commit, so they commit in number
/// order; an entry committed after the snapshot was taken therefore has a number above every
/// entry the snapshot sees. When the sequence's last value, read once the lock is held, is the
/// number of the partition's newest visible entry or of the trail's newest, the snapshot sees
/// every entry there is, and its own lookup decides. Otherwise (an entry drawn since, or one
/// rolled back, or an empty trail) the function does.
///
/// The order is in the nesting: the innermost subquery takes the lock, the projection around
/// it reads the sequence (and calls the function when needed) on its row, and the insert draws
/// the episode's sequence number on the row of that; none can be merged into the query around
/// it, since each selects a volatile function.
const APPEND_ONE: &str = "INSERT INTO trajectory_episode (partition, fingerprint, trajectory, \
       outcome, recorded_at, source, session, client) \
     SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $7::text, $8::text, $9::text \
     FROM (SELECT CASE \
         WHEN n.action = 'write' AND n.source = $11::text \
           AND n.session IS NOT DISTINCT FROM $12::text \
           AND n.client IS NOT DISTINCT FROM $13::text \
           AND pg_sequence_last_value('audit_seq_seq'::regclass) \
             IN (n.seq, (SELECT max(seq) FROM audit)) THEN true \
         ELSE audit_keep_run($10::integer, $5::bigint, $14::text, $1::text, $11::text, \
           $12::text, $13::text, $15::text) END \
       FROM (SELECT pg_advisory_xact_lock_shared($6::integer, hashtext($1::text))) AS locked \
       LEFT JOIN (SELECT a.seq, a.action, a.source, a.session, a.client FROM audit a \
         WHERE a.memory = $14::text AND a.scope = '' AND a.item = $1::text \
         ORDER BY a.seq DESC LIMIT 1) AS n ON true) AS kept \
     RETURNING seq";

/// Appends one episode with [`APPEND_ONE`], keeping the audit trail in the same statement,
/// and returns its sequence number.
fn append_one(q: impl Single, e: &NewEpisode) -> std::result::Result<Vec<i64>, Fail> {
    let by = e.provenance.as_ref();
    let run = WriteRun::episodes(e.partition.as_str(), by, e.recorded_at);
    let rows = q.rows(
        APPEND_ONE,
        &[
            &e.partition.as_str(),
            &e.fingerprint.as_key(),
            &encode_trajectory(&e.trajectory),
            &e.outcome,
            &e.recorded_at.as_millis(),
            &lock::PARTITION,
            &by.map(|b| b.source.to_string()),
            &by.and_then(|b| b.session.as_deref()),
            &by.and_then(|b| b.client.as_deref()),
            &lock::AUDIT,
            &run.by.source.to_string(),
            &run.by.session,
            &run.by.client,
            &run.memory,
            &run.detail,
        ],
    )?;
    Ok(sorted_seqs(rows))
}

/// Appends `episodes` (one, or a batch with one statement, [`APPEND`]) and the audit
/// entries opening their writers' runs, in the caller's transaction; returns their sequence
/// numbers in ascending order, which is batch order.
fn append(tx: &mut Tx<'_>, episodes: &[NewEpisode]) -> std::result::Result<Vec<i64>, Fail> {
    if let [e] = episodes {
        return append_one(tx, e);
    }
    let seqs = append_batch(&mut *tx, episodes)?;
    for run in WriteRun::episode_runs(episodes) {
        audit_write_run(tx, &run)?;
    }
    Ok(seqs)
}

/// Appends a batch of episodes with [`APPEND`]; returns their sequence numbers in
/// ascending order.
fn append_batch(q: impl Single, episodes: &[NewEpisode]) -> std::result::Result<Vec<i64>, Fail> {
    let partitions: BTreeSet<&str> = episodes.iter().map(|e| e.partition.as_str()).collect();
    let names: Vec<&str> = episodes.iter().map(|e| e.partition.as_str()).collect();
    let keys: Vec<&str> = episodes.iter().map(|e| e.fingerprint.as_key()).collect();
    let trajectories: Vec<String> = episodes
        .iter()
        .map(|e| encode_trajectory(&e.trajectory))
        .collect();
    let outcomes: Vec<&str> = episodes.iter().map(|e| e.outcome.as_str()).collect();
    let times: Vec<i64> = episodes.iter().map(|e| e.recorded_at.as_millis()).collect();
    let writers = WriterArrays::of(episodes.iter().map(|e| e.provenance.as_ref()));
    // The partitions' shared locks, in sorted order, are taken by the insert itself before
    // any row gets its sequence number (see [`APPEND`]).
    let partitions: Vec<&str> = partitions.into_iter().collect();
    let rows = q.rows(
        APPEND,
        &[
            &names,
            &keys,
            &trajectories,
            &outcomes,
            &times,
            &lock::PARTITION,
            &partitions,
            &writers.sources,
            &writers.sessions,
            &writers.clients,
        ],
    )?;
    Ok(sorted_seqs(rows))
}

fn sorted_seqs(rows: Vec<Row>) -> Vec<i64> {
    let mut seqs: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
    seqs.sort_unstable();
    seqs
}

impl EpisodeStore for PostgresStore {
    fn append_episodes_with_settings(
        &self,
        episodes: &[NewEpisode],
        settings: &[(&MetaKey, &str)],
    ) -> Result<Vec<Seq>> {
        if episodes.is_empty() && settings.is_empty() {
            return Ok(Vec::new());
        }
        episodes_fit(episodes)?;
        for (key, value) in settings {
            check_texts(
                || format!("setting {:?}", key.as_str()),
                [("value", *value)],
            )?;
        }
        let seqs = if let ([], [episode]) = (settings, episodes) {
            // One statement on its own: one round trip, committed when it returns.
            self.write_one("append episodes", |one| append_one(one, episode))?
        } else {
            self.write("append episodes", |tx| {
                // Every setting is checked before the first write, so a conflict leaves the
                // transaction without changes.
                for (key, wanted) in settings {
                    // Inserting first makes two first writers queue on the key: the second
                    // then finds the first one's value.
                    tx.execute(
                        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                        &[&key.as_str(), wanted],
                    )?;
                    if let Some(found) = meta::get(&mut *tx, key.as_str())?
                        && found != *wanted {
                            return Err(settings_conflict(key, wanted, &found).into());
                        }
                }
                if episodes.is_empty() {
                    return Ok(Vec::new());
                }
                append(tx, episodes)
            })?
        };
        seqs.into_iter()
            .map(|seq| seq_from_sql(seq, "trajectory_episode.seq"))
            .collect()
    }

    fn episodes_after(
        &self,
        partition: &Partition,
        after: Seq,
        limit: usize,
    ) -> Result<Vec<Episode>> {
        self.read_one("read episodes", |one| {
            read_episodes(one, partition, after, limit)
        })
    }

    fn prune_episodes(&self, partition: &Partition, before: Timestamp) -> Result<u64> {
        self.write("prune episodes", |tx| {
            lock_partition(tx, partition.as_str(), true)?;
            let watermark = watermark_of(&mut *tx, partition.as_str())?;
            Ok(tx.execute(
                "DELETE FROM trajectory_episode \
                 WHERE partition = $1 AND seq <= $2 AND recorded_at < $3",
                &[
                    &partition.as_str(),
                    &seq_to_sql(watermark),
                    &before.as_millis(),
                ],
            )?)
        })
    }
}

/// Applies `step` to one page of a crystallize run's episodes, inside the run's
/// transaction: reads the state of the groups they touch (as the run's earlier pages wrote
/// it), writes `step`'s output and notes it in `patterns`.
fn crystallize_page(
    tx: &mut Tx<'_>,
    name: &str,
    episodes: Vec<Episode>,
    step: CrystallizeStep<'_>,
    patterns: &mut ReinforcedPatterns,
) -> std::result::Result<(), Fail> {
    let mut fingerprints: HashMap<&str, &Fingerprint> = HashMap::new();
    for e in &episodes {
        fingerprints
            .entry(e.episode.fingerprint.as_key())
            .or_insert(&e.episode.fingerprint);
    }
    let keys: Vec<&str> = fingerprints.keys().copied().collect();
    let mut input = CrystallizeInput::default();
    let mut stored: HashSet<String> = HashSet::new();
    for row in tx.query(
        concat!(
            "SELECT ",
            group_columns!(),
            " FROM trajectory_group WHERE partition = $1 AND fingerprint = ANY($2::text[])"
        ),
        &[&name, &keys],
    )? {
        let key: &str = row.get(0);
        let group = decode_group(&row, fingerprints.get(key).copied())?;
        stored.insert(key.to_owned());
        input.groups.push(group);
    }
    // Tallies are written with their group, so only stored groups have any to read.
    let mut pairs: HashSet<(&str, &[String])> = HashSet::new();
    let mut tally_keys = Vec::new();
    let mut tally_trajectories = Vec::new();
    for e in &episodes {
        let key = e.episode.fingerprint.as_key();
        if stored.contains(key) && pairs.insert((key, e.episode.trajectory.as_slice())) {
            tally_keys.push(key);
            tally_trajectories.push(encode_trajectory(&e.episode.trajectory));
        }
    }
    if !tally_keys.is_empty() {
        for row in tx.query(
            "SELECT t.fingerprint, t.trajectory, t.count, t.newest, t.first_seq \
             FROM trajectory_tally t \
             JOIN unnest($2::text[], $3::text[]) AS q(f, tr) \
               ON t.fingerprint = q.f AND t.trajectory = q.tr \
             WHERE t.partition = $1",
            &[&name, &tally_keys, &tally_trajectories],
        )? {
            input.tallies.push((
                row.get(0),
                TrajectoryTally {
                    trajectory: decode_trajectory(row.get(1))?,
                    count: seq_from_sql(row.get(2), "trajectory_tally")?,
                    newest: Timestamp::from_millis(row.get(3)),
                    first_seq: seq_from_sql(row.get(4), "trajectory_tally")?,
                },
            ));
        }
    }
    drop((fingerprints, keys, pairs, tally_keys, tally_trajectories));
    input.episodes = episodes;
    patterns.touch(&input.episodes);
    let output = step(&input)?;
    write_output(tx, name, &input, &output)?;
    patterns.written(&output);
    Ok(())
}

impl PatternStore for PostgresStore {
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
        let name = partition.as_str();
        let page = page.max(1);
        self.write("crystallize", |tx| {
            lock_partition(tx, name, true)?;
            let watermark = watermark_of(&mut *tx, name)?;
            let mut patterns = ReinforcedPatterns::default();
            let mut last = watermark;
            loop {
                let episodes = read_episodes(&mut *tx, partition, last, page)?;
                let Some(seq) = episodes.last().map(|e| e.seq) else {
                    break;
                };
                let more = episodes.len() == page;
                crystallize_page(tx, name, episodes, step, &mut patterns)?;
                last = seq;
                if !more {
                    break;
                }
            }
            if last == watermark {
                return Ok(Vec::new());
            }
            tx.execute(
                "INSERT INTO trajectory_watermark (partition, seq) VALUES ($1, $2) \
                 ON CONFLICT (partition) DO UPDATE SET seq = EXCLUDED.seq",
                &[&name, &seq_to_sql(last)],
            )?;
            Ok(patterns.patterns(partition))
        })
    }

    fn watermark(&self, partition: &Partition) -> Result<Seq> {
        self.read_one("read watermark", |one| {
            watermark_of(one, partition.as_str())
        })
    }

    fn patterns(&self, partition: &Partition, filter: &Fingerprint) -> Result<Vec<Pattern>> {
        let pairs = pair_texts(filter);
        let rows = self.read_one("recall patterns", |one| {
            Ok(one.rows(
                concat!(
                    "SELECT ",
                    group_columns!(),
                    " FROM trajectory_group WHERE partition = $1 AND confidence IS NOT NULL AND pairs @> $2::text[]"
                ),
                &[&partition.as_str(), &pairs],
            )?)
        })?;
        let mut patterns = Vec::with_capacity(rows.len());
        for row in &rows {
            let group = decode_group(row, None)?;
            if !group.fingerprint.matches(filter) {
                continue;
            }
            if let Some(pattern) = Pattern::of_group(partition, &group) {
                patterns.push(pattern);
            }
        }
        Ok(patterns)
    }

    fn group(&self, partition: &Partition, fingerprint: &Fingerprint) -> Result<Option<Group>> {
        let row = self.read_one("read group", |one| {
            Ok(one.row(
                concat!(
                    "SELECT ",
                    group_columns!(),
                    " FROM trajectory_group WHERE partition = $1 AND fingerprint = $2"
                ),
                &[&partition.as_str(), &fingerprint.as_key()],
            )?)
        })?;
        row.map(|row| decode_group(&row, Some(fingerprint)))
            .transpose()
    }

    fn pending_groups(&self, partition: &Partition) -> Result<Vec<Group>> {
        let rows = self.read_one("list pending groups", |one| {
            Ok(one.rows(
                concat!(
                    "SELECT ",
                    group_columns!(),
                    " FROM trajectory_group WHERE partition = $1 AND confidence IS NULL"
                ),
                &[&partition.as_str()],
            )?)
        })?;
        let mut groups = rows
            .iter()
            .map(|row| decode_group(row, None))
            .collect::<Result<Vec<_>>>()?;
        // Ordered as fingerprints order (by pairs), which the key's text order is not.
        groups.sort_by(|a, b| a.fingerprint.cmp(&b.fingerprint));
        Ok(groups)
    }

    fn patterns_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Pattern>> {
        let (rows, total) = groups_page(self, partition, true, after, limit)?;
        let mut items = Vec::with_capacity(rows.len());
        for row in &rows {
            if let Some(pattern) = Pattern::of_group(partition, &decode_group(row, None)?) {
                items.push(pattern);
            }
        }
        Ok(Page { items, total })
    }

    fn pending_groups_page(
        &self,
        partition: &Partition,
        after: Option<&Fingerprint>,
        limit: usize,
    ) -> Result<Page<Group>> {
        let (rows, total) = groups_page(self, partition, false, after, limit)?;
        let items = rows
            .iter()
            .map(|row| decode_group(row, None))
            .collect::<Result<Vec<_>>>()?;
        Ok(Page { items, total })
    }

    fn partitions(&self) -> Result<Vec<PartitionSummary>> {
        let rows = self.read_one("list partitions", |one| {
            Ok(one.rows(
                "WITH e AS (SELECT partition, count(*) AS n,
                                   sum(octet_length(trajectory) + octet_length(outcome))::bigint AS bytes,
                                   max(recorded_at) AS newest
                            FROM trajectory_episode GROUP BY partition),
                      g AS (SELECT partition,
                                   count(*) FILTER (WHERE confidence IS NOT NULL) AS patterns,
                                   count(*) FILTER (WHERE confidence IS NULL) AS pending
                            FROM trajectory_group GROUP BY partition)
                 SELECT name, n, patterns, pending,
                        coalesce((SELECT seq FROM trajectory_watermark w WHERE w.partition = name), 0),
                        bytes, newest
                 FROM (SELECT coalesce(e.partition, g.partition) AS name, coalesce(e.n, 0) AS n,
                              coalesce(g.patterns, 0) AS patterns, coalesce(g.pending, 0) AS pending,
                              coalesce(e.bytes, 0) AS bytes, e.newest AS newest
                       FROM e FULL JOIN g ON e.partition = g.partition) AS p
                 ORDER BY name COLLATE \"C\"",
                &[],
            )?)
        })?;
        rows.iter()
            .map(|row| {
                Ok(PartitionSummary {
                    partition: Partition::new(row.get::<_, String>(0))?,
                    episodes: count(row.get(1)),
                    patterns: count(row.get(2)),
                    pending_groups: count(row.get(3)),
                    watermark: count(row.get(4)),
                    bytes: count(row.get(5)),
                    last_write: row.get::<_, Option<i64>>(6).map(Timestamp::from_millis),
                })
            })
            .collect()
    }

    fn forget_partition(
        &self,
        partition: &Partition,
        settings: &[&MetaKey],
        by: &Provenance,
    ) -> Result<u64> {
        let name = partition.as_str();
        provenance_fits(|| format!("forget of partition {name}"), by)?;
        let keys: Vec<&str> = settings.iter().map(|k| k.as_str()).collect();
        self.write("forget partition", |tx| {
            // The settings go first: an append with settings writes them before it takes the
            // partition's lock, so taking them in that order too cannot deadlock with it.
            tx.execute("DELETE FROM meta WHERE key = ANY($1::text[])", &[&keys])?;
            lock_partition(tx, name, true)?;
            tx.execute(
                "DELETE FROM trajectory_tally WHERE partition = $1",
                &[&name],
            )?;
            tx.execute(
                "DELETE FROM trajectory_group WHERE partition = $1",
                &[&name],
            )?;
            let episodes = tx.execute(
                "DELETE FROM trajectory_episode WHERE partition = $1",
                &[&name],
            )?;
            tx.execute(
                "DELETE FROM trajectory_watermark WHERE partition = $1",
                &[&name],
            )?;
            let detail = forget_detail(&[(episodes, "episode", "episodes")]);
            audit_in(
                tx,
                "trajectory",
                Action::Forget,
                NO_SCOPE,
                name,
                by,
                &detail,
            )?;
            Ok(episodes)
        })
    }

    fn forget_episodes_by(
        &self,
        partition: &Partition,
        writer: &Writer,
        by: &Provenance,
        step: CrystallizeStep<'_>,
    ) -> Result<EpisodesForgotten> {
        writer.check()?;
        let name = partition.as_str();
        provenance_fits(|| format!("forget of episodes by writer in {name}"), by)?;
        let source = writer.source.as_ref().map(ToString::to_string);
        check_texts(
            || "episode writer".to_owned(),
            [
                ("source", source.as_deref().unwrap_or_default()),
                ("session", writer.session.as_deref().unwrap_or_default()),
                ("client", writer.client.as_deref().unwrap_or_default()),
            ],
        )?;
        self.write("forget episodes by writer", |tx| {
            lock_partition(tx, name, true)?;
            let watermark = watermark_of(&mut *tx, name)?;
            let rows = tx.query(
                "DELETE FROM trajectory_episode WHERE partition = $4 AND source IS NOT NULL \
                 AND ($1::text IS NULL OR source = $1) \
                 AND ($2::text IS NULL OR session = $2) \
                 AND ($3::text IS NULL OR client = $3) \
                 RETURNING seq, fingerprint",
                &[&source, &writer.session, &writer.client, &name],
            )?;
            // The groups the watermark says some of them were folded into.
            let mut folded: BTreeSet<String> = BTreeSet::new();
            for row in &rows {
                if seq_from_sql(row.get(0), "trajectory_episode.seq")? <= watermark {
                    folded.insert(row.get(1));
                }
            }
            let mut forgotten = EpisodesForgotten {
                episodes: rows.len() as u64,
                groups: Vec::with_capacity(folded.len()),
            };
            let keys: Vec<&str> = folded.iter().map(String::as_str).collect();
            for table in [
                "DELETE FROM trajectory_tally WHERE partition = $1 AND fingerprint = ANY($2::text[])",
                "DELETE FROM trajectory_group WHERE partition = $1 AND fingerprint = ANY($2::text[])",
            ] {
                tx.execute(table, &[&name, &keys])?;
            }
            // The episodes left in those groups, folded again from nothing in one pass over
            // the partition, a page at a time: groups fold independently, so this is each
            // group's own run.
            let mut from: HashMap<String, u64> = HashMap::new();
            let mut patterns = ReinforcedPatterns::default();
            let mut after = 0;
            while !keys.is_empty() {
                let page =
                    read_episodes_in(&mut *tx, partition, &keys, (after, watermark), REBUILD_PAGE)?;
                let Some(last) = page.last().map(|e| e.seq) else {
                    break;
                };
                let more = page.len() == REBUILD_PAGE;
                for e in &page {
                    *from.entry(e.episode.fingerprint.key()).or_default() += 1;
                }
                crystallize_page(tx, name, page, step, &mut patterns)?;
                after = last;
                if !more {
                    break;
                }
            }
            for key in &folded {
                let episodes = from.get(key).copied().unwrap_or(0);
                forgotten.groups.push((Fingerprint::from_key(key)?, episodes));
            }
            forgotten.groups.sort_by(|a, b| a.0.cmp(&b.0));
            let detail = episodes_forgotten_detail(&forgotten);
            audit_in(
                tx,
                "trajectory",
                Action::Forget,
                NO_SCOPE,
                name,
                by,
                &detail,
            )?;
            Ok(forgotten)
        })
    }
}

/// Episodes a forget by writer folds at once when it rebuilds a group.
const REBUILD_PAGE: usize = 1_000;

/// Writes the groups and tallies a step returned, each set in one upsert. Every fingerprint
/// must be one this run read episodes of.
fn write_output(
    tx: &mut Tx<'_>,
    partition: &str,
    input: &agent_memory_core::store::trajectory::CrystallizeInput,
    output: &agent_memory_core::store::trajectory::CrystallizeOutput,
) -> std::result::Result<(), Fail> {
    let known: HashSet<&str> = input
        .episodes
        .iter()
        .map(|e| e.episode.fingerprint.as_key())
        .collect();
    let unknown = |what: &str, key: &str| {
        Fail::Core(Error::invalid_input(
            "crystallize output",
            format!("{what}fingerprint {key:?} has no new episode in this run"),
        ))
    };
    if !output.groups.is_empty() {
        let mut keys = Vec::new();
        let mut pair_lists = Vec::new();
        let mut counts = Vec::new();
        let mut canonical = Vec::new();
        let mut canonical_count = Vec::new();
        let mut canonical_newest = Vec::new();
        let mut canonical_first = Vec::new();
        let mut pending = Vec::new();
        let mut confidence = Vec::new();
        let mut evidence = Vec::new();
        let mut corroborations = Vec::new();
        let mut contradictions = Vec::new();
        let mut reinforced = Vec::new();
        // A later state of a group wins over an earlier one, as one write after another.
        let mut seen = HashSet::new();
        for group in output.groups.iter().rev() {
            let key = group.fingerprint.as_key();
            if !known.contains(key) {
                return Err(unknown("", key));
            }
            if !seen.insert(key) {
                continue;
            }
            keys.push(key);
            pair_lists.push(pair_texts(&group.fingerprint));
            counts.push(seq_to_sql(group.episode_count));
            let c = group.canonical.as_ref();
            canonical.push(c.map(|c| encode_trajectory(&c.trajectory)));
            canonical_count.push(c.map(|c| seq_to_sql(c.count)));
            canonical_newest.push(c.map(|c| c.newest.as_millis()));
            canonical_first.push(c.map(|c| seq_to_sql(c.first_seq)));
            pending.push(encode_pending(&group.pending));
            let s = group.pattern.as_ref();
            confidence.push(s.map(|s| s.confidence));
            evidence.push(s.map(|s| seq_to_sql(s.evidence_count)));
            corroborations.push(s.map(|s| seq_to_sql(s.corroborations)));
            contradictions.push(s.map(|s| seq_to_sql(s.contradictions)));
            reinforced.push(s.map(|s| s.last_reinforced.as_millis()));
        }
        // One upsert per group would be a round trip each. The pairs are the only ragged
        // column (arrays of arrays cannot be), so a second statement writes them, keyed like
        // the first.
        tx.execute(
            "INSERT INTO trajectory_group (partition, fingerprint, pairs, episode_count, \
               canonical, canonical_count, canonical_newest, canonical_first_seq, pending, \
               confidence, evidence_count, corroborations, contradictions, last_reinforced) \
             SELECT $1, f, '{}', n, c, cc, cn, cf, p, conf, ev, co, ct, lr \
             FROM unnest($2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], \
               $7::bigint[], $8::text[], $9::float8[], $10::bigint[], $11::bigint[], \
               $12::bigint[], $13::bigint[]) \
               AS g(f, n, c, cc, cn, cf, p, conf, ev, co, ct, lr) \
             ON CONFLICT (partition, fingerprint) DO UPDATE SET \
               episode_count = EXCLUDED.episode_count, canonical = EXCLUDED.canonical, \
               canonical_count = EXCLUDED.canonical_count, \
               canonical_newest = EXCLUDED.canonical_newest, \
               canonical_first_seq = EXCLUDED.canonical_first_seq, pending = EXCLUDED.pending, \
               confidence = EXCLUDED.confidence, evidence_count = EXCLUDED.evidence_count, \
               corroborations = EXCLUDED.corroborations, \
               contradictions = EXCLUDED.contradictions, \
               last_reinforced = EXCLUDED.last_reinforced",
            &[
                &partition,
                &keys,
                &counts,
                &canonical,
                &canonical_count,
                &canonical_newest,
                &canonical_first,
                &pending,
                &confidence,
                &evidence,
                &corroborations,
                &contradictions,
                &reinforced,
            ],
        )?;
        // New groups got an empty pair list above; fill it in (a no-op for stored groups).
        let mut new_keys = Vec::new();
        let mut new_pairs = Vec::new();
        for (key, list) in keys.iter().zip(&pair_lists) {
            for pair in list {
                new_keys.push(*key);
                new_pairs.push(pair.as_str());
            }
        }
        tx.execute(
            "UPDATE trajectory_group g SET pairs = q.pairs \
             FROM (SELECT f, array_agg(p) AS pairs FROM unnest($2::text[], $3::text[]) AS u(f, p) \
                   GROUP BY f) AS q \
             WHERE g.partition = $1 AND g.fingerprint = q.f AND g.pairs = '{}'",
            &[&partition, &new_keys, &new_pairs],
        )?;
    }
    if !output.tallies.is_empty() {
        let mut keys = Vec::new();
        let mut trajectories = Vec::new();
        let mut counts = Vec::new();
        let mut newest = Vec::new();
        let mut first = Vec::new();
        let mut seen = HashSet::new();
        for (key, tally) in output.tallies.iter().rev() {
            if !known.contains(key.as_str()) {
                return Err(unknown("tally of ", key));
            }
            if !seen.insert((key.as_str(), tally.trajectory.as_slice())) {
                continue;
            }
            keys.push(key.as_str());
            trajectories.push(encode_trajectory(&tally.trajectory));
            counts.push(seq_to_sql(tally.count));
            newest.push(tally.newest.as_millis());
            first.push(seq_to_sql(tally.first_seq));
        }
        tx.execute(
            "INSERT INTO trajectory_tally (partition, fingerprint, trajectory, count, newest, first_seq) \
             SELECT $1, f, t, c, n, s FROM unnest($2::text[], $3::text[], $4::bigint[], \
               $5::bigint[], $6::bigint[]) AS u(f, t, c, n, s) \
             ON CONFLICT (partition, fingerprint, trajectory) DO UPDATE SET \
               count = EXCLUDED.count, newest = EXCLUDED.newest, first_seq = EXCLUDED.first_seq",
            &[&partition, &keys, &trajectories, &counts, &newest, &first],
        )?;
    }
    Ok(())
}
