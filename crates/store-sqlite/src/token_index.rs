//! The browser token index: posting blocks and tails behind a pending list (schema versions
//! 6 and 8).
//!
//! A stored trajectory's postings (one per distinct goal token, carrying what the candidate
//! filters read) are appended to `browser_trajectory_tokens_pending`, clustered by trajectory.
//! Once that list holds [`PENDING_POSTINGS`] postings, those of its oldest trajectories are
//! merged, [`MERGE_STEP`] at a time, so no write does all the merging at once: each
//! `(scope, token, origin)` key keeps its newest postings in a small tail row
//! (`browser_token_tails`), and a tail that reaches [`TAIL_POSTINGS`] is written out as a new
//! row of `browser_token_blocks`, which is never appended to again. Small tails pack a dozen
//! keys to a page, so a merge touching hundreds of keys writes far fewer pages than appending
//! to each key's last block did. A query reads the blocks and the tail of each of its tokens
//! and the small pending list.
//!
//! Removing a trajectory (replaced or pruned) drops its pending postings, or rewrites the
//! blocks and tails named by its stored index keys without it.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use agent_memory_core::store::trajectory::{decode_texts, encode_texts};
use rusqlite::{Connection, OptionalExtension, params};

/// Postings the pending list holds before its oldest are merged into blocks, a
/// [`MERGE_STEP`] at a time: a merge writes each touched tail once for several runs, and
/// matching still scans the list in microseconds.
pub(crate) const PENDING_POSTINGS: i64 = 256;

/// Postings a tail holds before it is written out as a block (a block of 32 is 608 bytes).
/// Blocks written by version 6 hold up to 128.
pub(crate) const TAIL_POSTINGS: usize = 32;

/// Bytes of one packed posting.
const ENTRY: usize = 19;

/// One posting: what the candidate filters and the similarity need about a trajectory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posting {
    pub(crate) traj: i64,
    pub(crate) recorded_at: Option<i64>,
    pub(crate) token_count: i64,
    pub(crate) success: bool,
}

impl Posting {
    fn pack(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.traj.to_le_bytes());
        out.extend_from_slice(&self.recorded_at.unwrap_or(i64::MIN).to_le_bytes());
        let count = u16::try_from(self.token_count).unwrap_or(u16::MAX);
        out.extend_from_slice(&count.to_le_bytes());
        out.push(u8::from(self.success));
    }

    fn unpack(entry: &[u8]) -> Posting {
        let i64_at = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&entry[at..at + 8]);
            i64::from_le_bytes(bytes)
        };
        let recorded_at = i64_at(8);
        Posting {
            traj: i64_at(0),
            recorded_at: (recorded_at != i64::MIN).then_some(recorded_at),
            token_count: i64::from(u16::from_le_bytes([entry[16], entry[17]])),
            success: entry[18] != 0,
        }
    }
}

/// The postings of a block, or an error naming the block when its length is not a whole
/// number of entries.
fn unpack_all(blob: &[u8]) -> rusqlite::Result<impl Iterator<Item = Posting> + '_> {
    if !blob.len().is_multiple_of(ENTRY) {
        return Err(rusqlite::Error::FromSqlConversionFailure(
            blob.len(),
            rusqlite::types::Type::Blob,
            format!(
                "a token block of {} bytes is not whole postings",
                blob.len()
            )
            .into(),
        ));
    }
    Ok(blob.chunks_exact(ENTRY).map(Posting::unpack))
}

/// The stored form of a trajectory's index keys.
pub(crate) fn encode_keys(keys: &[&str]) -> String {
    encode_texts(keys.iter().copied())
}

/// Indexes trajectory `traj` of `scope` under `keys` (its distinct tokens, or `""`).
pub(crate) fn add(
    conn: &Connection,
    scope: &str,
    keys: &[&str],
    origin: &str,
    posting: Posting,
) -> rusqlite::Result<()> {
    let mut insert = conn.prepare_cached(
        "INSERT INTO browser_trajectory_tokens_pending (traj, token, scope, origin, success, recorded_at, token_count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for key in keys {
        insert.execute(params![
            posting.traj,
            key,
            scope,
            origin,
            posting.success,
            posting.recorded_at,
            posting.token_count
        ])?;
    }
    merge_if_full(conn)
}

/// How many postings are pending. A bare `count(*)` of the table is SQLite's `Count` opcode,
/// which sums the cells of the list's leaf pages (a handful) instead of stepping through its
/// postings, as counting a `LIMIT`ed subquery did on every write. The list stays near
/// [`PENDING_POSTINGS`]: an open for writing merges whatever a migration left pending.
pub(crate) const PENDING_COUNT: &str = "SELECT count(*) FROM browser_trajectory_tokens_pending";

/// Once the pending list holds [`PENDING_POSTINGS`] postings, merges its oldest
/// [`MERGE_STEP`] (see [`merge_pending`]).
pub(crate) fn merge_if_full(conn: &Connection) -> rusqlite::Result<()> {
    let pending: i64 = conn
        .prepare_cached(PENDING_COUNT)?
        .query_row([], |r| r.get(0))?;
    if pending >= PENDING_POSTINGS {
        merge_pending(conn, Some(MERGE_STEP))?;
    }
    Ok(())
}

/// Postings a full pending list merges at a time (whole trajectories, the oldest first).
/// Merging all 512 at once made one write in about a hundred take tens of milliseconds;
/// merging a step whenever the list is full spreads that work over the writes (one in a
/// few merges a few dozen keys), and the list stays as long as before for matching.
pub(crate) const MERGE_STEP: i64 = 32;

/// The pending postings of a merge step: those of the trajectories up to `?1`, read by the
/// primary key's range (one statement for both cases, `?1 IS NULL OR traj <= ?1`, scanned the
/// whole list on every step).
const STEP_POSTINGS: &str = "SELECT scope, token, origin, traj, success, recorded_at, token_count
     FROM browser_trajectory_tokens_pending WHERE traj <= ?1";

/// Every pending posting.
const ALL_POSTINGS: &str = "SELECT scope, token, origin, traj, success, recorded_at, token_count
     FROM browser_trajectory_tokens_pending";

/// Drops the postings a merge step moved, by the same range as [`STEP_POSTINGS`].
const STEP_DELETE: &str = "DELETE FROM browser_trajectory_tokens_pending WHERE traj <= ?1";

/// Drops every pending posting, once merged.
const ALL_DELETE: &str = "DELETE FROM browser_trajectory_tokens_pending";

/// Moves pending postings into the tail of their key, writing out each tail that reaches
/// [`TAIL_POSTINGS`] as new blocks: every pending posting, or with `step` those of the
/// oldest trajectories up to the one holding the `step`-th posting. A trajectory's postings
/// are always moved together, so it is wholly pending or wholly merged ([`remove`] relies
/// on it).
pub(crate) fn merge_pending(conn: &Connection, step: Option<i64>) -> rusqlite::Result<()> {
    let through: Option<i64> = match step {
        Some(step) => conn
            .prepare_cached(
                "SELECT traj FROM browser_trajectory_tokens_pending ORDER BY traj LIMIT 1 OFFSET ?1",
            )?
            .query_row([step - 1], |r| r.get(0))
            .optional()?,
        None => None,
    };
    let mut groups: BTreeMap<(String, String, String), Vec<Posting>> = BTreeMap::new();
    {
        let mut stmt = conn.prepare_cached(match through {
            Some(_) => STEP_POSTINGS,
            None => ALL_POSTINGS,
        })?;
        let mut rows = match through {
            Some(through) => stmt.query([through])?,
            None => stmt.query([])?,
        };
        while let Some(row) = rows.next()? {
            groups
                .entry((row.get(0)?, row.get(1)?, row.get(2)?))
                .or_default()
                .push(Posting {
                    traj: row.get(3)?,
                    success: row.get(4)?,
                    recorded_at: row.get(5)?,
                    token_count: row.get(6)?,
                });
        }
    }
    if groups.is_empty() {
        return Ok(());
    }
    let mut tail = conn.prepare_cached(
        "SELECT postings FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut put_tail = conn.prepare_cached(
        "INSERT OR REPLACE INTO browser_token_tails (scope, token, origin, postings)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut drop_tail = conn.prepare_cached(
        "DELETE FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut next_block = conn.prepare_cached(
        "SELECT coalesce(max(block), -1) + 1 FROM browser_token_blocks
         WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut put_block = conn.prepare_cached(
        "INSERT INTO browser_token_blocks (scope, token, origin, block, postings)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for ((scope, token, origin), mut postings) in groups {
        postings.sort_by_key(|p| p.traj);
        let key = params![scope, token, origin];
        let mut blob: Vec<u8> = tail
            .query_row(key, |r| r.get(0))
            .optional()?
            .unwrap_or_default();
        let had_tail = !blob.is_empty();
        postings.iter().for_each(|p| p.pack(&mut blob));
        let full = blob.len() / ENTRY / TAIL_POSTINGS * TAIL_POSTINGS * ENTRY;
        if full > 0 {
            let first: i64 = next_block.query_row(key, |r| r.get(0))?;
            for (block, chunk) in (first..).zip(blob[..full].chunks(TAIL_POSTINGS * ENTRY)) {
                put_block.execute(params![scope, token, origin, block, chunk])?;
            }
            blob.drain(..full);
        }
        if !blob.is_empty() {
            put_tail.execute(params![scope, token, origin, blob])?;
        } else if had_tail {
            drop_tail.execute(key)?;
        }
    }
    match through {
        Some(through) => conn.prepare_cached(STEP_DELETE)?.execute([through])?,
        None => conn.prepare_cached(ALL_DELETE)?.execute([])?,
    };
    Ok(())
}

/// Removes trajectories from the index: `doomed` maps each trajectory id to its origin and
/// stored index keys. Call before deleting their rows.
pub(crate) fn remove(
    conn: &Connection,
    scope: &str,
    doomed: &[(i64, String, String)],
) -> rusqlite::Result<()> {
    let mut merged: HashSet<i64> = HashSet::new();
    let mut keys: BTreeSet<(String, String)> = BTreeSet::new();
    let mut unpend =
        conn.prepare_cached("DELETE FROM browser_trajectory_tokens_pending WHERE traj = ?1")?;
    for (traj, origin, index_keys) in doomed {
        // A merge moves every pending posting at once: a trajectory is wholly pending or
        // wholly in blocks.
        if unpend.execute([traj])? > 0 {
            continue;
        }
        merged.insert(*traj);
        let decoded = decode_texts(index_keys).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                index_keys.len(),
                rusqlite::types::Type::Text,
                format!("index keys of trajectory row {traj} are not an encoded list").into(),
            )
        })?;
        for key in decoded {
            keys.insert((key, origin.clone()));
        }
    }
    if merged.is_empty() {
        return Ok(());
    }
    let mut blocks = conn.prepare_cached(
        "SELECT block, postings FROM browser_token_blocks
         WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut put = conn.prepare_cached(
        "UPDATE browser_token_blocks SET postings = ?5
         WHERE scope = ?1 AND token = ?2 AND origin = ?3 AND block = ?4",
    )?;
    let mut drop = conn.prepare_cached(
        "DELETE FROM browser_token_blocks WHERE scope = ?1 AND token = ?2 AND origin = ?3 AND block = ?4",
    )?;
    let mut tail = conn.prepare_cached(
        "SELECT postings FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut put_tail = conn.prepare_cached(
        "UPDATE browser_token_tails SET postings = ?4 WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    let mut drop_tail = conn.prepare_cached(
        "DELETE FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND origin = ?3",
    )?;
    for (token, origin) in keys {
        if let Some(blob) = tail
            .query_row(params![scope, token, origin], |r| r.get::<_, Vec<u8>>(0))
            .optional()?
        {
            match without(&blob, &merged)? {
                Some(kept) if kept.is_empty() => {
                    drop_tail.execute(params![scope, token, origin])?;
                }
                Some(kept) => {
                    put_tail.execute(params![scope, token, origin, kept])?;
                }
                None => {}
            }
        }
        let found: Vec<(i64, Vec<u8>)> = blocks
            .query_map(params![scope, token, origin], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (block, blob) in found {
            match without(&blob, &merged)? {
                Some(kept) if kept.is_empty() => {
                    drop.execute(params![scope, token, origin, block])?;
                }
                Some(kept) => {
                    put.execute(params![scope, token, origin, block, kept])?;
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// `blob` without the postings of the trajectories in `doomed`; `None` when it holds none.
fn without(blob: &[u8], doomed: &HashSet<i64>) -> rusqlite::Result<Option<Vec<u8>>> {
    let mut kept = Vec::with_capacity(blob.len());
    unpack_all(blob)?
        .filter(|p| !doomed.contains(&p.traj))
        .for_each(|p| p.pack(&mut kept));
    Ok((kept.len() != blob.len()).then_some(kept))
}

/// One posting list of the index, as `check` reads it.
pub(crate) struct PostingList {
    pub(crate) scope: String,
    pub(crate) token: String,
    pub(crate) origin: String,
    /// The postings, or why the stored list does not decode.
    pub(crate) postings: Result<Vec<Posting>, String>,
}

/// Hands `visit` every posting list, one at a time (the check holds one list in memory, not
/// the index): blocks, tails and the pending list (one list per pending row), each with
/// where it is stored.
pub(crate) fn for_each_posting_list(
    conn: &Connection,
    mut visit: impl FnMut(String, PostingList) -> rusqlite::Result<()>,
) -> rusqlite::Result<()> {
    for (table, sql) in [
        (
            "browser_token_blocks",
            "SELECT scope, token, origin, postings, block FROM browser_token_blocks",
        ),
        (
            "browser_token_tails",
            "SELECT scope, token, origin, postings, NULL FROM browser_token_tails",
        ),
    ] {
        let mut stmt = conn.prepare(sql)?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let (scope, token, origin): (String, String, String) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            let block: Option<i64> = row.get(4)?;
            let place = match block {
                Some(block) => format!("{table} {scope:?} {token:?} {origin:?} block {block}"),
                None => format!("{table} {scope:?} {token:?} {origin:?}"),
            };
            let blob = row.get_ref(3)?.as_blob()?;
            let postings = unpack_all(blob)
                .map(Iterator::collect)
                .map_err(|e| e.to_string());
            visit(
                place,
                PostingList {
                    scope,
                    token,
                    origin,
                    postings,
                },
            )?;
        }
    }
    let mut stmt = conn.prepare(
        "SELECT scope, token, origin, traj, success, recorded_at, token_count \
         FROM browser_trajectory_tokens_pending",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (scope, token, origin): (String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?);
        let posting = Posting {
            traj: row.get(3)?,
            success: row.get(4)?,
            recorded_at: row.get(5)?,
            token_count: row.get(6)?,
        };
        let place = format!("browser_trajectory_tokens_pending {scope:?} {token:?} {origin:?}");
        visit(
            place,
            PostingList {
                scope,
                token,
                origin,
                postings: Ok(vec![posting]),
            },
        )?;
    }
    Ok(())
}

/// What a candidate query filters on.
pub(crate) struct Filter<'a> {
    pub(crate) origin: Option<&'a str>,
    pub(crate) success_only: bool,
    pub(crate) not_before: Option<i64>,
}

impl Filter<'_> {
    fn keeps(&self, p: &Posting) -> bool {
        (!self.success_only || p.success)
            && match (self.not_before, p.recorded_at) {
                (Some(cutoff), Some(at)) => at >= cutoff,
                _ => true,
            }
    }
}

/// The lookup of one key in the blocks and the tail at once, with the origin part of the key
/// range when the query has one (`?3`).
fn lookup_sql(by_origin: bool) -> &'static str {
    if by_origin {
        "SELECT postings FROM browser_token_blocks WHERE scope = ?1 AND token = ?2 AND origin = ?3
         UNION ALL
         SELECT postings FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND origin = ?3"
    } else {
        "SELECT postings FROM browser_token_blocks WHERE scope = ?1 AND token = ?2 AND ?3 IS NULL
         UNION ALL
         SELECT postings FROM browser_token_tails WHERE scope = ?1 AND token = ?2 AND ?3 IS NULL"
    }
}

/// One trajectory found by [`count`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) traj: i64,
    /// How many of the query's keys it holds.
    pub(crate) shared: usize,
    pub(crate) token_count: i64,
    pub(crate) recorded_at: Option<i64>,
}

/// For each trajectory of `scope` that passes `filter` and holds at least one of `keys`
/// (sorted, distinct): how many of them it holds, and its token count; ordered by row id.
pub(crate) fn count(
    conn: &Connection,
    scope: &str,
    keys: &[&str],
    filter: &Filter<'_>,
) -> rusqlite::Result<Vec<Tally>> {
    let mut kept: Vec<Posting> = Vec::new();
    // One statement over both tables per key: starting statements is much of a query's time.
    let mut lists = conn.prepare_cached(lookup_sql(filter.origin.is_some()))?;
    for key in keys {
        let mut rows = lists.query(params![scope, key, filter.origin])?;
        while let Some(row) = rows.next()? {
            let blob = row.get_ref(0)?.as_blob()?;
            // A common word's postings number in thousands: room for them up front, not by
            // regrowing the list as it fills.
            kept.reserve(blob.len() / ENTRY);
            kept.extend(unpack_all(blob)?.filter(|p| filter.keeps(p)));
        }
    }
    // The pending list is small: one pass over it, keeping the query's tokens.
    let mut pending = conn.prepare_cached(
        "SELECT traj, token, token_count, success, recorded_at FROM browser_trajectory_tokens_pending
         WHERE scope = ?1 AND (?2 IS NULL OR origin = ?2)",
    )?;
    let mut rows = pending.query(params![scope, filter.origin])?;
    while let Some(row) = rows.next()? {
        let token = row.get_ref(1)?.as_str()?;
        if keys.binary_search(&token).is_ok() {
            let posting = Posting {
                traj: row.get(0)?,
                token_count: row.get(2)?,
                success: row.get(3)?,
                recorded_at: row.get(4)?,
            };
            if filter.keeps(&posting) {
                kept.push(posting);
            }
        }
    }
    Ok(tally(kept))
}

/// The postings of `kept` counted per trajectory, ordered by row id.
fn tally(mut kept: Vec<Posting>) -> Vec<Tally> {
    let tally_of = |p: &Posting, shared| Tally {
        traj: p.traj,
        shared,
        token_count: p.token_count,
        recorded_at: p.recorded_at,
    };
    let (Some(low), Some(high)) = (
        kept.iter().map(|p| p.traj).min(),
        kept.iter().map(|p| p.traj).max(),
    ) else {
        return Vec::new();
    };
    // Row ids are dense: when they span no more than a few times the postings, one counter
    // per row id (ScanCount, as the in-memory store counts) is linear; a common word's
    // thousands of postings took longer to sort than the rest of a match.
    let span = usize::try_from(high.abs_diff(low)).unwrap_or(usize::MAX);
    if span < kept.len().saturating_mul(4).max(1024) {
        // Per row id: how many postings, and the index of its first in `kept`.
        let mut counts: Vec<(usize, usize)> = vec![(0, 0); span + 1];
        for (i, p) in kept.iter().enumerate() {
            // Within the span checked above, so the offset fits.
            let offset = usize::try_from(p.traj.abs_diff(low)).unwrap_or(span);
            let slot = &mut counts[offset];
            if slot.0 == 0 {
                slot.1 = i;
            }
            slot.0 += 1;
        }
        return counts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|&(n, first)| tally_of(&kept[first], n))
            .collect();
    }
    // Sparse row ids (after many deletions): sorting a few postings by trajectory beats
    // hashing each into a map.
    kept.sort_unstable_by_key(|p| p.traj);
    let mut tallies: Vec<Tally> = Vec::new();
    for p in &kept {
        match tallies.last_mut() {
            Some(t) if t.traj == p.traj => t.shared += 1,
            _ => tallies.push(tally_of(p, 1)),
        }
    }
    tallies
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_memory_core::Scope;
    use agent_memory_core::Timestamp;
    use agent_memory_core::store::browser::{CandidateQuery, Trajectory, TrajectoryStore};

    /// A version 5 database with `n` trajectories of 6 tokens each in the old posting table,
    /// upgraded by opening it: every trajectory is still found, replaced and pruned.
    #[test]
    fn postings_of_a_version_5_database_survive_the_upgrade() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("v5.db");
        let n = 100; // 600 postings: more than the pending bound, so opening merges them
        {
            let mut conn = Connection::open(&path).expect("open");
            crate::schema::migrate_to(&mut conn, 5)
                .map_err(|(m, e)| format!("{}: {e}", m.name))
                .expect("migrate to 5");
            for i in 0..n {
                conn.execute(
                    "INSERT INTO browser_trajectories (id, scope, traj_id, goal, origin, success,
                     duration_ms, model, timestamp, recorded_at, token_count)
                     VALUES (?1, 'shared', ?2, 'g', 'https://a.test', 1, 1, 'm', 't', ?3, 6)",
                    params![i + 1, format!("traj_{i}"), i * 1000],
                )
                .expect("trajectory");
                for token in ["alpha", "beta", "gamma", "delta", "ε", &format!("t{i}")] {
                    conn.execute(
                        "INSERT INTO browser_trajectory_tokens (scope, token, origin, traj, success, recorded_at, token_count)
                         VALUES ('shared', ?1, 'https://a.test', ?2, 1, ?3, 6)",
                        params![token, i + 1, i * 1000],
                    )
                    .expect("posting");
                }
            }
        }
        let store = crate::SqliteStore::open(&path).expect("upgrade");
        let pending: i64 = store
            .read("count pending", |c| {
                c.query_row(
                    "SELECT count(*) FROM browser_trajectory_tokens_pending",
                    [],
                    |r| r.get(0),
                )
            })
            .expect("count");
        assert_eq!(pending, 0, "opening merged the carried-over postings");
        let scope = Scope::shared();
        let query = |tokens: &[&str]| CandidateQuery {
            tokens: tokens.iter().map(|t| (*t).to_owned()).collect(),
            origin: Some("https://a.test".to_owned()),
            success_only: true,
            not_before: None,
            min_shared: 1,
        };
        let found = store
            .trajectory_candidates(&scope, &query(&["ε", "t7"]))
            .expect("match");
        assert_eq!(found.len(), n as usize);
        assert!(
            found
                .iter()
                .any(|c| c.id == "traj_7" && c.shared == 2 && c.token_count == 6)
        );
        // Pruning the older half removes them from the blocks, by their migrated keys.
        let pruned = store
            .trajectory_prune(&scope, agent_memory_core::Timestamp::from_millis(50_000))
            .expect("prune");
        assert_eq!(pruned, 50);
        let found = store
            .trajectory_candidates(&scope, &query(&["alpha"]))
            .expect("match");
        assert_eq!(found.len(), 50);
        assert!(
            store
                .trajectory_candidates(&scope, &query(&["t7"]))
                .expect("match")
                .is_empty()
        );
    }

    /// Trajectory `i` of the tests: goal `alpha t{i}` on `https://a.test`, recorded at second
    /// `i`.
    fn alpha(i: i64) -> Trajectory {
        Trajectory {
            id: format!("traj_{i}"),
            goal: format!("alpha t{i}"),
            origin: Some("https://a.test".to_owned()),
            steps: Vec::new(),
            success: true,
            duration_ms: 1,
            model: "m".to_owned(),
            timestamp: "t".to_owned(),
            recorded_at: Some(Timestamp::from_millis(i * 1000)),
            provenance: None,
        }
    }

    /// Each stored trajectory asks how long the pending list is. The count costs a constant
    /// handful of VM steps per write, whatever the list's length (the `LIMIT`ed subquery it
    /// replaced stepped through every pending posting, about 7 steps each), and the store
    /// compiles it once.
    #[test]
    fn the_pending_count_does_not_step_through_the_list() {
        use rusqlite::StatementStatus;
        let store = crate::SqliteStore::open_in_memory().expect("open");
        // 200 postings, all still pending (below the bound, no merge).
        let writes = 200;
        for i in 0..writes {
            store
                .trajectory_put(&Scope::shared(), &alpha(i), &["alpha".to_owned()])
                .expect("put");
        }
        let conn = store.lock();
        let pending: i64 = conn
            .query_row(PENDING_COUNT, [], |r| r.get(0))
            .expect("count");
        assert_eq!(pending, writes);
        // The store's own cached statement: the same text answers the same handle.
        let statement = conn.prepare_cached(PENDING_COUNT).expect("cached");
        let steps = statement.get_status(StatementStatus::VmStep);
        assert!(steps > 0, "the writes ran the statement");
        assert!(
            steps <= 16 * writes as i32,
            "{steps} VM steps for {writes} counts: the count walks the postings"
        );
        assert_eq!(statement.get_status(StatementStatus::RePrepare), 0);
    }

    /// A merge step reads and drops its own postings by the primary key's range: no step
    /// scans the whole pending list (the statement that did ran a full scan on each).
    #[test]
    fn a_merge_step_reads_and_drops_its_postings_by_range() {
        use rusqlite::StatementStatus;
        let store = crate::SqliteStore::open_in_memory().expect("open");
        // 400 postings under one key: the list reaches its bound and merges step by step.
        for i in 0..400 {
            store
                .trajectory_put(&Scope::shared(), &alpha(i), &["alpha".to_owned()])
                .expect("put");
        }
        let conn = store.lock();
        for sql in [STEP_POSTINGS, STEP_DELETE] {
            let statement = conn.prepare_cached(sql).expect("cached");
            assert!(
                statement.get_status(StatementStatus::VmStep) > 0,
                "the merges ran {sql}"
            );
            assert_eq!(
                statement.get_status(StatementStatus::FullscanStep),
                0,
                "{sql} scanned the pending list"
            );
        }
    }

    /// Many trajectories under one key: merges fill the key's tail, write it out as blocks of
    /// [`TAIL_POSTINGS`], and a removal rewrites whichever block or tail holds the trajectory.
    #[test]
    fn tails_become_blocks_and_removals_reach_both() {
        let store = crate::SqliteStore::open_in_memory().expect("open");
        let scope = Scope::shared();
        let n = 1000; // 2,000 postings: several merges, 31 blocks of "alpha" and a tail
        for i in 0..n {
            store
                .trajectory_put(&scope, &alpha(i), &["alpha".to_owned(), format!("t{i}")])
                .expect("put");
        }
        let rows = |sql: &str| -> i64 {
            store
                .read("count", |c| c.query_row(sql, [], |r| r.get(0)))
                .expect("count")
        };
        let alpha_blocks = rows("SELECT count(*) FROM browser_token_blocks WHERE token = 'alpha'");
        let alpha_tail = rows(
            "SELECT coalesce(sum(length(postings)), 0) / 19 FROM browser_token_tails WHERE token = 'alpha'",
        );
        let pending =
            rows("SELECT count(*) FROM browser_trajectory_tokens_pending WHERE token = 'alpha'");
        assert!(alpha_blocks >= 2, "{alpha_blocks} blocks");
        assert_eq!(
            rows("SELECT count(*) FROM browser_token_blocks WHERE length(postings) != 32 * 19"),
            0,
            "every block written out is a full tail"
        );
        assert!(alpha_tail < TAIL_POSTINGS as i64);
        assert_eq!(
            alpha_blocks * TAIL_POSTINGS as i64 + alpha_tail + pending,
            n
        );
        // Merging a step at a time keeps the pending list below the bound plus a step, and
        // moves whole trajectories: each pending one has both its postings there.
        let all_pending = rows("SELECT count(*) FROM browser_trajectory_tokens_pending");
        assert!(all_pending < PENDING_POSTINGS, "{all_pending} pending");
        assert!(
            all_pending >= PENDING_POSTINGS - MERGE_STEP - 2,
            "{all_pending} pending"
        );
        assert_eq!(
            rows(
                "SELECT count(*) FROM (SELECT traj FROM browser_trajectory_tokens_pending
                 GROUP BY traj HAVING count(*) != 2)"
            ),
            0,
            "a trajectory is wholly pending or wholly merged"
        );
        let query = |tokens: &[&str]| CandidateQuery {
            tokens: tokens.iter().map(|t| (*t).to_owned()).collect(),
            origin: Some("https://a.test".to_owned()),
            success_only: false,
            not_before: None,
            min_shared: 1,
        };
        let found = store
            .trajectory_candidates(&scope, &query(&["alpha"]))
            .expect("match");
        assert_eq!(found.len(), n as usize);
        // Prune the oldest 900: they sit in blocks, in the tail and in single-token tails.
        let pruned = store
            .trajectory_prune(&scope, Timestamp::from_millis(900_000))
            .expect("prune");
        assert_eq!(pruned, 900);
        let found = store
            .trajectory_candidates(&scope, &query(&["alpha", "t5", "t950"]))
            .expect("match");
        assert_eq!(found.len(), 100);
        assert!(found.iter().any(|c| c.id == "traj_950" && c.shared == 2));
        assert!(found.iter().all(|c| c.id != "traj_5"));
        assert_eq!(
            rows("SELECT count(*) FROM browser_token_tails WHERE token = 't5'"),
            0,
            "an emptied tail is deleted"
        );
    }

    #[test]
    fn dense_and_sparse_row_ids_tally_alike() {
        let posting = |traj, token_count| Posting {
            traj,
            recorded_at: Some(traj / 2),
            token_count,
            success: true,
        };
        let check = |kept: Vec<Posting>| {
            let mut sorted = kept.clone();
            sorted.sort_by_key(|p| p.traj);
            let mut want: Vec<Tally> = Vec::new();
            for p in &sorted {
                match want.last_mut() {
                    Some(t) if t.traj == p.traj => t.shared += 1,
                    _ => want.push(Tally {
                        traj: p.traj,
                        shared: 1,
                        token_count: p.token_count,
                        recorded_at: p.recorded_at,
                    }),
                }
            }
            assert_eq!(tally(kept), want);
        };
        // Dense: row ids 1..=300, each under one to three keys, in key order.
        let dense: Vec<Posting> = (1..=3)
            .flat_map(|k| (1..=300).filter(move |t| t % k == 0).map(move |t| (t, k)))
            .map(|(t, _)| posting(t, t % 7 + 1))
            .collect();
        check(dense);
        // Sparse: row ids far apart, and the extremes of the range.
        check(vec![
            posting(i64::MAX, 2),
            posting(1, 2),
            posting(i64::MAX, 2),
        ]);
        check(vec![posting(5, 1)]);
        check(Vec::new());
    }

    #[test]
    fn postings_pack_and_unpack() {
        for posting in [
            Posting {
                traj: 7,
                recorded_at: Some(1_767_225_600_000),
                token_count: 12,
                success: true,
            },
            Posting {
                traj: i64::MAX,
                recorded_at: None,
                token_count: 0,
                success: false,
            },
        ] {
            let mut blob = Vec::new();
            posting.pack(&mut blob);
            assert_eq!(blob.len(), ENTRY);
            assert_eq!(Posting::unpack(&blob), posting);
        }
        assert!(unpack_all(&[0u8; ENTRY + 1]).is_err());
    }
}
