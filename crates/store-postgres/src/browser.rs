//! The browser store traits on PostgreSQL: trajectories (their steps as arrays in the row)
//! with a `browser_trajectory_token` posting table for matching, sites (facts, sessions and
//! selectors as arrays in the row), run manifests, hints and suite summaries
//! (`sql/0005_browser.sql`).
//!
//! Every write is one transaction that first takes the scope's advisory lock
//! ([`lock::SCOPE`]), so the writes of a scope are ordered: an observation loads the site,
//! applies the shared rules of `agent_memory_core::store::browser` and writes it back without
//! losing a concurrent observation, and of several concurrent stores of one image the first
//! writes it and the others find it unchanged. (In PostgreSQL's default READ COMMITTED
//! isolation each statement after the lock sees every write committed before it was granted.)

use std::collections::HashMap;

use agent_memory_core::evidence::{Action, Writer, forget_detail};
use agent_memory_core::store::browser::{
    Approval, BrowserStore, BrowserWrite, Candidate, CandidateQuery, FORGOTTEN_HELD_RUN,
    FORGOTTEN_TRAJECTORY, Fact, FactKind, FinishedRun, ForgotBy, Forgotten, HeldRun, HintStore,
    IMAGE_ITEM, ImageStored, MemoryImage, RunFilter, RunManifest, RunManifestStore, RunStatus,
    SelectorEntry, SessionEntry, SiteMemory, SiteMemoryStore, SiteObservation, SuiteSummary,
    Trajectory, TrajectoryStep, TrajectoryStore, forgotten_observations, run_item,
    run_start_outcome,
};
use agent_memory_core::store::site_log::{LOG_FOLD_AT, LOG_KEEP, LogEntry, LogEvent, SiteLog};
use agent_memory_core::{Clock, Error, Page, Provenance, Result, Scope, Source, Timestamp};
use postgres::Row;

use crate::notes::{audit_in, audit_write_run, keep_vouches, provenance_fits, stored_writer};
use crate::{Fail, PostgresStore, Single, Tx, check_texts, lock};

/// Refuses a writer of `write` PostgreSQL cannot keep in the audit trail.
fn writer_fits(write: &BrowserWrite, by: Option<&Provenance>) -> Result<()> {
    by.map_or(Ok(()), |by| {
        provenance_fits(|| format!("{} {}", write.detail, write.item), by)
    })
}

/// What the body of a store call returns.
type Step<T> = std::result::Result<T, Fail>;

/// Takes the scope's advisory lock until the transaction ends.
fn lock_scope(tx: &mut Tx<'_>, scope: &Scope) -> Step<()> {
    Ok(tx.advisory_lock(lock::SCOPE, scope.as_str(), true)?)
}

/// `value` as a `bigint`; one above `i64::MAX` is refused naming `field` of `item`.
fn to_bigint(value: u64, item: &dyn Fn() -> String, field: &str) -> Result<i64> {
    i64::try_from(value).map_err(|_| {
        Error::invalid_input(
            format!("{} {field}", item()),
            format!(
                "{value} is larger than the largest storable value ({})",
                i64::MAX
            ),
        )
    })
}

/// A stored integer as `T`; out of range is corruption at `location`.
fn from_int<T: TryFrom<i64>>(value: i64, location: &dyn Fn() -> String, field: &str) -> Result<T> {
    T::try_from(value)
        .map_err(|_| Error::corrupt(location(), format!("{field} {value} is out of range")))
}

/// Fails unless every list of a record's parallel arrays has the same length.
fn same_lengths(location: &dyn Fn() -> String, list: &str, lengths: &[usize]) -> Result<()> {
    if lengths.windows(2).all(|pair| pair[0] == pair[1]) {
        Ok(())
    } else {
        Err(Error::corrupt(
            location(),
            format!("the {list} arrays differ in length: {lengths:?}"),
        ))
    }
}

/// The distinct tokens of a goal, sorted, as posting keys: a goal without tokens is filed
/// under the empty token (real tokens are never empty), so a query without tokens finds
/// exactly those goals.
fn index_keys(tokens: &[String]) -> Vec<&str> {
    let mut keys: Vec<&str> = tokens.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        keys.push("");
    }
    keys
}

// ---- trajectories ----

fn check_trajectory(t: &Trajectory, tokens: &[String]) -> Result<()> {
    let item = || format!("trajectory {:?}", t.id);
    check_texts(
        item,
        [
            ("id", t.id.as_str()),
            ("goal", &t.goal),
            ("origin", t.origin.as_deref().unwrap_or_default()),
            ("model", &t.model),
            ("timestamp", &t.timestamp),
        ],
    )?;
    check_texts(item, tokens.iter().map(|token| ("token", token.as_str())))?;
    if let Some(by) = &t.provenance {
        provenance_fits(item, by)?;
    }
    for (i, step) in t.steps.iter().enumerate() {
        check_texts(
            || format!("trajectory {:?} step {}", t.id, i + 1),
            [
                ("url", step.url.as_str()),
                ("action", &step.action),
                ("snapshot_hash", &step.snapshot_hash),
                (
                    "expected_effect",
                    step.expected_effect.as_deref().unwrap_or_default(),
                ),
            ],
        )?;
    }
    Ok(())
}

/// Upserts the row (a replacement keeps its `id`, so its place in the list) and brings its
/// postings to `$16`: the ones no longer wanted deleted, the new ones added, in one statement.
const PUT_TRAJECTORY: &str = "WITH t AS (
       INSERT INTO browser_trajectory (scope, traj_id, goal, origin, success, duration_ms, model,
         timestamp, recorded_at, token_count, step_url, step_action, step_hash, step_verified,
         step_effect, source, session, client, written_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $17, $18, $19,
         $20)
       ON CONFLICT (scope, traj_id) DO UPDATE SET goal = excluded.goal, origin = excluded.origin,
         success = excluded.success, duration_ms = excluded.duration_ms, model = excluded.model,
         timestamp = excluded.timestamp, recorded_at = excluded.recorded_at,
         token_count = excluded.token_count, step_url = excluded.step_url,
         step_action = excluded.step_action, step_hash = excluded.step_hash,
         step_verified = excluded.step_verified, step_effect = excluded.step_effect,
         source = excluded.source, session = excluded.session, client = excluded.client,
         written_at = excluded.written_at
       RETURNING id
     ), gone AS (
       DELETE FROM browser_trajectory_token k USING t
       WHERE k.traj = t.id AND k.token <> ALL ($16::text[])
     )
     INSERT INTO browser_trajectory_token (scope, token, traj)
     SELECT $1, key, t.id FROM t, unnest($16::text[]) AS key
     ON CONFLICT DO NOTHING";

/// Stores `t` with its goal `tokens`, in a transaction holding the scope lock.
fn put_trajectory(tx: &mut Tx<'_>, scope: &Scope, t: &Trajectory, tokens: &[String]) -> Step<()> {
    check_trajectory(t, tokens)?;
    let item = || format!("trajectory {:?}", t.id);
    let keys = index_keys(tokens);
    let token_count = if tokens.is_empty() { 0 } else { keys.len() };
    let token_count = i32::try_from(token_count)
        .map_err(|_| Error::invalid_input(format!("{} tokens", item()), "too many tokens"))?;
    let duration_ms = to_bigint(t.duration_ms, &item, "duration_ms")?;
    let urls: Vec<&str> = t.steps.iter().map(|s| s.url.as_str()).collect();
    let actions: Vec<&str> = t.steps.iter().map(|s| s.action.as_str()).collect();
    let hashes: Vec<&str> = t.steps.iter().map(|s| s.snapshot_hash.as_str()).collect();
    let verified: Vec<bool> = t.steps.iter().map(|s| s.verified).collect();
    let effects: Vec<Option<&str>> = t
        .steps
        .iter()
        .map(|s| s.expected_effect.as_deref())
        .collect();
    let by = t.provenance.as_ref();
    tx.execute(
        PUT_TRAJECTORY,
        &[
            &scope.as_str(),
            &t.id,
            &t.goal,
            &t.origin,
            &t.success,
            &duration_ms,
            &t.model,
            &t.timestamp,
            &t.recorded_at.map(Timestamp::as_millis),
            &token_count,
            &urls,
            &actions,
            &hashes,
            &verified,
            &effects,
            &keys,
            &by.map(|p| p.source.to_string()),
            &by.and_then(|p| p.session.as_deref()),
            &by.and_then(|p| p.client.as_deref()),
            &by.map(|p| p.at.as_millis()),
        ],
    )?;
    Ok(())
}

/// The columns [`trajectory_from`] reads, in its order.
macro_rules! trajectory_columns {
    () => {
        "traj_id, goal, origin, success, duration_ms, model, timestamp, recorded_at, step_url,
         step_action, step_hash, step_verified, step_effect, source, session, client, written_at"
    };
}

fn trajectory_from(row: &Row) -> Step<Trajectory> {
    let id: String = row.try_get(0)?;
    let location = || format!("browser_trajectory row {id:?}");
    let urls: Vec<String> = row.try_get(8)?;
    let actions: Vec<String> = row.try_get(9)?;
    let hashes: Vec<String> = row.try_get(10)?;
    let verified: Vec<bool> = row.try_get(11)?;
    let effects: Vec<Option<String>> = row.try_get(12)?;
    same_lengths(
        &location,
        "step",
        &[
            urls.len(),
            actions.len(),
            hashes.len(),
            verified.len(),
            effects.len(),
        ],
    )?;
    let steps = urls
        .into_iter()
        .zip(actions)
        .zip(hashes)
        .zip(verified)
        .zip(effects)
        .map(
            |((((url, action), snapshot_hash), verified), expected_effect)| TrajectoryStep {
                url,
                action,
                snapshot_hash,
                verified,
                expected_effect,
            },
        )
        .collect();
    let duration_ms = from_int(row.try_get(4)?, &location, "duration_ms")?;
    let provenance = match row.try_get::<_, Option<String>>(13)? {
        None => None,
        Some(source) => Some(Provenance {
            source: Source::parse(&source)
                .map_err(|e| Error::corrupt(location(), format!("source: {e}")))?,
            session: row.try_get(14)?,
            client: row.try_get(15)?,
            at: Timestamp::from_millis(row.try_get(16)?),
        }),
    };
    Ok(Trajectory {
        goal: row.try_get(1)?,
        origin: row.try_get(2)?,
        steps,
        success: row.try_get(3)?,
        duration_ms,
        model: row.try_get(5)?,
        timestamp: row.try_get(6)?,
        recorded_at: row
            .try_get::<_, Option<i64>>(7)?
            .map(Timestamp::from_millis),
        id,
        provenance,
    })
}

fn get_trajectory(q: impl Single, scope: &Scope, id: &str) -> Step<Option<Trajectory>> {
    let sql = concat!(
        "SELECT ",
        trajectory_columns!(),
        " FROM browser_trajectory WHERE scope = $1 AND traj_id = $2"
    );
    q.row(sql, &[&scope.as_str(), &id])?
        .as_ref()
        .map(trajectory_from)
        .transpose()
}

/// Counts, per trajectory, the query's tokens among its postings (reading only the postings
/// of those tokens), keeps the counts reaching the minimum, then applies the filters to those
/// trajectories' rows.
const CANDIDATES: &str = "SELECT t.traj_id, c.shared, t.token_count, t.recorded_at, t.duration_ms,
            cardinality(t.step_verified), cardinality(array_positions(t.step_verified, true))
     FROM (SELECT traj, count(*) AS shared FROM browser_trajectory_token
           WHERE scope = $1 AND token = ANY ($2::text[])
           GROUP BY traj HAVING count(*) >= $3::bigint) c
     JOIN browser_trajectory t ON t.id = c.traj
     WHERE ($4::text IS NULL OR t.origin = $4)
       AND (NOT $5::boolean OR t.success)
       AND ($6::bigint IS NULL OR t.recorded_at IS NULL OR t.recorded_at >= $6)";

fn candidates(q: impl Single, scope: &Scope, query: &CandidateQuery) -> Step<Vec<Candidate>> {
    let tokenless = query.tokens.is_empty();
    let keys = index_keys(&query.tokens);
    let min = i64::try_from(query.min_shared.max(1)).unwrap_or(i64::MAX);
    let rows = q.rows(
        CANDIDATES,
        &[
            &scope.as_str(),
            &keys,
            &min,
            &query.origin,
            &query.success_only,
            &query.not_before.map(Timestamp::as_millis),
        ],
    )?;
    let mut found = rows
        .iter()
        .map(|row| {
            let id: String = row.try_get(0)?;
            let location = || format!("browser_trajectory row {id:?}");
            let shared = from_int(row.try_get(1)?, &location, "shared tokens")?;
            let token_count = from_int(row.try_get::<_, i32>(2)?.into(), &location, "token_count")?;
            let duration_ms: i64 = row.try_get(4)?;
            Ok(Candidate {
                shared: if tokenless { 0 } else { shared },
                token_count,
                recorded_at: row
                    .try_get::<_, Option<i64>>(3)?
                    .map(Timestamp::from_millis),
                duration_ms: from_int(duration_ms, &location, "duration_ms")?,
                steps: from_int(row.try_get::<_, i32>(5)?.into(), &location, "steps")?,
                verified_steps: from_int(
                    row.try_get::<_, i32>(6)?.into(),
                    &location,
                    "verified steps",
                )?,
                id,
            })
        })
        .collect::<Step<Vec<_>>>()?;
    found.sort();
    Ok(found)
}

/// Appends the forget of `item` of `scope`'s browser memory to the audit trail, in the
/// caller's transaction.
fn forgot(
    tx: &mut Tx<'_>,
    scope: &str,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> std::result::Result<(), Fail> {
    audit_in(tx, "browser", Action::Forget, scope, item, by, detail)
}

impl TrajectoryStore for PostgresStore {
    fn trajectory_put(
        &self,
        scope: &Scope,
        trajectory: &Trajectory,
        tokens: &[String],
    ) -> Result<()> {
        check_trajectory(trajectory, tokens)?;
        self.write("store trajectory", |tx| {
            lock_scope(tx, scope)?;
            put_trajectory(tx, scope, trajectory, tokens)?;
            audit_write_run(tx, &trajectory.write_run(scope))
        })
    }

    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
        self.read_one("read trajectory", |one| get_trajectory(one, scope, id))
    }

    fn trajectory_get_many(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Trajectory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = concat!(
            "SELECT ",
            trajectory_columns!(),
            " FROM browser_trajectory WHERE scope = $1 AND traj_id = ANY($2::text[])"
        );
        let found: Vec<Trajectory> = self.read_one("read trajectories", |one| {
            one.rows(sql, &[&scope.as_str(), &ids])?
                .iter()
                .map(trajectory_from)
                .collect()
        })?;
        let by_id: std::collections::HashMap<&str, &Trajectory> =
            found.iter().map(|t| (t.id.as_str(), t)).collect();
        Ok(ids
            .iter()
            .filter_map(|id| by_id.get(id).map(|t| (*t).clone()))
            .collect())
    }

    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        self.read_one("find trajectory candidates", |one| {
            candidates(one, scope, query)
        })
    }

    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>> {
        let sql = concat!(
            "SELECT ",
            trajectory_columns!(),
            " FROM browser_trajectory WHERE scope = $1 ORDER BY id"
        );
        self.read_one("list trajectories", |one| {
            one.rows(sql, &[&scope.as_str()])?
                .iter()
                .map(trajectory_from)
                .collect()
        })
    }

    fn trajectory_recent_page(
        &self,
        scope: &Scope,
        from: u64,
        limit: usize,
    ) -> Result<Page<Trajectory>> {
        let sql = concat!(
            "SELECT ",
            trajectory_columns!(),
            " FROM browser_trajectory WHERE scope = $1 \
              ORDER BY recorded_at DESC NULLS LAST, traj_id DESC LIMIT $2 OFFSET $3"
        );
        let count = "SELECT count(*) FROM browser_trajectory WHERE scope = $1";
        self.scope_page(
            "list trajectories",
            (sql, count),
            scope,
            from,
            limit,
            trajectory_from,
        )
    }

    fn trajectory_count(&self, scope: &Scope) -> Result<u64> {
        self.read_one("count trajectories", |one| {
            let row = one.row(
                "SELECT count(*) FROM browser_trajectory WHERE scope = $1",
                &[&scope.as_str()],
            )?;
            Ok(row.map_or(0, |r| crate::count(r.get(0))))
        })
    }

    fn trajectory_newest(&self, scope: &Scope) -> Result<Option<Timestamp>> {
        // One seek into `browser_trajectory_by_age`.
        self.read_one("newest trajectory", |one| {
            let row = one.row(
                "SELECT max(recorded_at) FROM browser_trajectory WHERE scope = $1",
                &[&scope.as_str()],
            )?;
            Ok(row
                .and_then(|r| r.get::<_, Option<i64>>(0))
                .map(Timestamp::from_millis))
        })
    }

    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize> {
        self.write("prune trajectories", |tx| {
            lock_scope(tx, scope)?;
            // The postings go with their trajectories (ON DELETE CASCADE).
            let removed = tx.execute(
                "DELETE FROM browser_trajectory WHERE scope = $1 AND recorded_at < $2",
                &[&scope.as_str(), &cutoff.as_millis()],
            )?;
            Ok(usize::try_from(removed).unwrap_or(usize::MAX))
        })
    }

    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool> {
        check_texts(|| "trajectory".to_owned(), [("id", id)])?;
        provenance_fits(|| format!("forget of trajectory {id:?}"), by)?;
        self.write("forget trajectory", |tx| {
            lock_scope(tx, scope)?;
            let removed = tx.execute(
                "DELETE FROM browser_trajectory WHERE scope = $1 AND traj_id = $2",
                &[&scope.as_str(), &id],
            )?;
            let detail = forget_detail(&[(removed, "trajectory", "trajectories")]);
            forgot(tx, scope.as_str(), id, by, &detail)?;
            Ok(removed > 0)
        })
    }

    fn trajectory_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<ForgotBy> {
        writer.check()?;
        provenance_fits(|| "forget of trajectories by writer".to_owned(), by)?;
        let source = writer.source.as_ref().map(ToString::to_string);
        let filter = (&source, &writer.session, &writer.client);
        self.write("forget trajectories by writer", |tx| {
            // The scopes to lock, in byte order so that two forgets cannot deadlock: the one
            // asked for, or every scope holding a trajectory by the writer.
            let mut scopes: Vec<String> = match scope {
                Some(scope) => vec![scope.as_str().to_owned()],
                None => tx
                    .query(
                        "SELECT scope FROM browser_trajectory WHERE source IS NOT NULL \
                         AND ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR session = $2) \
                         AND ($3::text IS NULL OR client = $3) \
                         UNION SELECT scope FROM browser_held \
                         WHERE ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR source_session = $2) \
                         AND ($3::text IS NULL OR client = $3) \
                         UNION SELECT scope FROM browser_site_log WHERE source IS NOT NULL \
                         AND ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR session = $2) \
                         AND ($3::text IS NULL OR client = $3)",
                        &[filter.0, filter.1, filter.2],
                    )?
                    .into_iter()
                    .map(|row| row.get(0))
                    .collect(),
            };
            scopes.sort();
            let mut locked = Vec::with_capacity(scopes.len());
            for name in &scopes {
                let scope = Scope::new(name.as_str())?;
                lock_scope(tx, &scope)?;
                locked.push(scope);
            }
            let mut gone: Vec<(Scope, String)> = Vec::new();
            let mut held_gone: Vec<(Scope, String)> = Vec::new();
            let mut sites = Vec::new();
            for scope in locked {
                let mut ids: Vec<String> = tx
                    .query(
                        "DELETE FROM browser_trajectory WHERE scope = $4 AND source IS NOT NULL \
                         AND ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR session = $2) \
                         AND ($3::text IS NULL OR client = $3) \
                         RETURNING traj_id",
                        &[filter.0, filter.1, filter.2, &scope.as_str()],
                    )?
                    .into_iter()
                    .map(|row| row.get(0))
                    .collect();
                ids.sort();
                for id in ids {
                    let detail = FORGOTTEN_TRAJECTORY;
                    forgot(tx, scope.as_str(), &id, by, detail)?;
                    gone.push((scope.clone(), id));
                }
                let mut held: Vec<String> = tx
                    .query(
                        "DELETE FROM browser_held WHERE scope = $4 \
                         AND ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR source_session = $2) \
                         AND ($3::text IS NULL OR client = $3) \
                         RETURNING id",
                        &[filter.0, filter.1, filter.2, &scope.as_str()],
                    )?
                    .into_iter()
                    .map(|row| row.get(0))
                    .collect();
                held.sort();
                held_gone.extend(held.into_iter().map(|id| (scope.clone(), id)));
                let taught: Vec<String> = tx
                    .query(
                        "SELECT DISTINCT site FROM browser_site_log WHERE scope = $4 \
                         AND source IS NOT NULL \
                         AND ($1::text IS NULL OR source = $1) \
                         AND ($2::text IS NULL OR session = $2) \
                         AND ($3::text IS NULL OR client = $3) ORDER BY site",
                        &[filter.0, filter.1, filter.2, &scope.as_str()],
                    )?
                    .into_iter()
                    .map(|row| row.get(0))
                    .collect();
                for site in taught {
                    let Some(mut log) = load_log(tx, &scope, &site)? else {
                        continue;
                    };
                    let Some((n, rebuilt)) = log.take_back(writer) else {
                        continue;
                    };
                    if let Some(rebuilt) = rebuilt {
                        put_site(tx, &scope, &rebuilt)?;
                        store_log(tx, &scope, &site, &log)?;
                    } else {
                        tx.execute(
                            "DELETE FROM browser_site WHERE scope = $1 AND site = $2",
                            &[&scope.as_str(), &site],
                        )?;
                    }
                    sites.push((scope.clone(), site, n));
                }
            }
            for (scope, site, n) in &sites {
                let item = Forgotten::item(Some(site));
                forgot(tx, scope.as_str(), &item, by, &forgotten_observations(*n))?;
            }
            for (scope, id) in &held_gone {
                forgot(
                    tx,
                    scope.as_str(),
                    &HeldRun::item(id),
                    by,
                    FORGOTTEN_HELD_RUN,
                )?;
            }
            gone.extend(held_gone.iter().cloned());
            Ok(ForgotBy { runs: gone, sites })
        })
    }
}

// ---- sites ----

fn check_site(m: &SiteMemory) -> Result<()> {
    check_texts(
        || format!("site {:?}", m.site),
        [
            ("site", m.site.as_str()),
            ("label", &m.label),
            ("knowledge_updated_at", &m.knowledge_updated_at),
            ("selectors_updated_at", &m.selectors_updated_at),
        ],
    )?;
    for f in &m.facts {
        check_texts(
            || format!("site {:?} fact {:?}", m.site, f.key),
            [
                ("key", f.key.as_str()),
                ("value", &f.value),
                ("last_seen", &f.last_seen),
            ],
        )?;
    }
    for s in &m.sessions {
        check_texts(
            || format!("site {:?} session {:?}", m.site, s.id),
            [
                ("id", s.id.as_str()),
                ("goal", &s.goal),
                ("outcome", &s.outcome),
                ("final_url", &s.final_url),
                ("timestamp", &s.timestamp),
            ],
        )?;
    }
    for e in &m.selectors {
        check_texts(
            || format!("site {:?} selector {:?}", m.site, e.element),
            [
                ("element", e.element.as_str()),
                ("last_ref", e.last_ref.as_deref().unwrap_or_default()),
                (
                    "stable_selector",
                    e.stable_selector.as_deref().unwrap_or_default(),
                ),
                ("last_used", &e.last_used),
            ],
        )?;
    }
    Ok(())
}

/// Replaces the whole row of a site.
const PUT_SITE: &str = "INSERT INTO browser_site (scope, site, label, knowledge_updated_at,
       selectors_updated_at, fact_kind, fact_key, fact_value, fact_confidence, fact_sources,
       fact_last_seen, session_id, session_goal, session_outcome, session_success,
       session_final_url, session_timestamp, session_turns_used, session_duration_ms,
       selector_element, selector_last_ref, selector_stable, selector_success_count,
       selector_last_used)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18,
       $19, $20, $21, $22, $23, $24)
     ON CONFLICT (scope, site) DO UPDATE SET label = excluded.label,
       knowledge_updated_at = excluded.knowledge_updated_at,
       selectors_updated_at = excluded.selectors_updated_at, fact_kind = excluded.fact_kind,
       fact_key = excluded.fact_key, fact_value = excluded.fact_value,
       fact_confidence = excluded.fact_confidence, fact_sources = excluded.fact_sources,
       fact_last_seen = excluded.fact_last_seen, session_id = excluded.session_id,
       session_goal = excluded.session_goal, session_outcome = excluded.session_outcome,
       session_success = excluded.session_success, session_final_url = excluded.session_final_url,
       session_timestamp = excluded.session_timestamp,
       session_turns_used = excluded.session_turns_used,
       session_duration_ms = excluded.session_duration_ms,
       selector_element = excluded.selector_element, selector_last_ref = excluded.selector_last_ref,
       selector_stable = excluded.selector_stable,
       selector_success_count = excluded.selector_success_count,
       selector_last_used = excluded.selector_last_used";

/// Stores `m` whole, in a transaction holding the scope lock.
fn put_site(tx: &mut Tx<'_>, scope: &Scope, m: &SiteMemory) -> Step<()> {
    check_site(m)?;
    let facts = &m.facts;
    let kinds: Vec<&str> = facts.iter().map(|f| f.kind.as_str()).collect();
    let keys: Vec<&str> = facts.iter().map(|f| f.key.as_str()).collect();
    let values: Vec<&str> = facts.iter().map(|f| f.value.as_str()).collect();
    let confidences: Vec<f64> = facts.iter().map(|f| f.confidence).collect();
    let sources: Vec<i64> = facts.iter().map(|f| i64::from(f.sources)).collect();
    let seen: Vec<&str> = facts.iter().map(|f| f.last_seen.as_str()).collect();
    let sessions = &m.sessions;
    let ids: Vec<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    let goals: Vec<&str> = sessions.iter().map(|s| s.goal.as_str()).collect();
    let outcomes: Vec<&str> = sessions.iter().map(|s| s.outcome.as_str()).collect();
    let successes: Vec<bool> = sessions.iter().map(|s| s.success).collect();
    let final_urls: Vec<&str> = sessions.iter().map(|s| s.final_url.as_str()).collect();
    let timestamps: Vec<&str> = sessions.iter().map(|s| s.timestamp.as_str()).collect();
    let turns: Vec<i64> = sessions.iter().map(|s| i64::from(s.turns_used)).collect();
    let durations = sessions
        .iter()
        .map(|s| {
            let item = || format!("site {:?} session {:?}", m.site, s.id);
            to_bigint(s.duration_ms, &item, "duration_ms")
        })
        .collect::<Result<Vec<i64>>>()?;
    let selectors = &m.selectors;
    let elements: Vec<&str> = selectors.iter().map(|e| e.element.as_str()).collect();
    let refs: Vec<Option<&str>> = selectors.iter().map(|e| e.last_ref.as_deref()).collect();
    let stables: Vec<Option<&str>> = selectors
        .iter()
        .map(|e| e.stable_selector.as_deref())
        .collect();
    let counts: Vec<i64> = selectors
        .iter()
        .map(|e| i64::from(e.success_count))
        .collect();
    let used: Vec<&str> = selectors.iter().map(|e| e.last_used.as_str()).collect();
    tx.execute(
        PUT_SITE,
        &[
            &scope.as_str(),
            &m.site,
            &m.label,
            &m.knowledge_updated_at,
            &m.selectors_updated_at,
            &kinds,
            &keys,
            &values,
            &confidences,
            &sources,
            &seen,
            &ids,
            &goals,
            &outcomes,
            &successes,
            &final_urls,
            &timestamps,
            &turns,
            &durations,
            &elements,
            &refs,
            &stables,
            &counts,
            &used,
        ],
    )?;
    Ok(())
}

/// The columns [`site_from`] reads, in its order.
macro_rules! site_columns {
    () => {
        "site, label, knowledge_updated_at, selectors_updated_at, fact_kind, fact_key, fact_value,
         fact_confidence, fact_sources, fact_last_seen, session_id, session_goal, session_outcome,
         session_success, session_final_url, session_timestamp, session_turns_used,
         session_duration_ms, selector_element, selector_last_ref, selector_stable,
         selector_success_count, selector_last_used"
    };
}

fn site_from(row: &Row) -> Step<SiteMemory> {
    let site: String = row.try_get(0)?;
    let location = || format!("browser_site row {site:?}");
    let facts = facts_from(row, &location)?;
    let sessions = sessions_from(row, &location)?;
    let selectors = selectors_from(row, &location)?;
    Ok(SiteMemory {
        label: row.try_get(1)?,
        knowledge_updated_at: row.try_get(2)?,
        selectors_updated_at: row.try_get(3)?,
        facts,
        sessions,
        selectors,
        site,
    })
}

fn facts_from(row: &Row, location: &dyn Fn() -> String) -> Step<Vec<Fact>> {
    let kinds: Vec<String> = row.try_get(4)?;
    let keys: Vec<String> = row.try_get(5)?;
    let values: Vec<String> = row.try_get(6)?;
    let confidences: Vec<f64> = row.try_get(7)?;
    let sources: Vec<i64> = row.try_get(8)?;
    let seen: Vec<String> = row.try_get(9)?;
    same_lengths(
        location,
        "fact",
        &[
            kinds.len(),
            keys.len(),
            values.len(),
            confidences.len(),
            sources.len(),
            seen.len(),
        ],
    )?;
    let facts = kinds
        .into_iter()
        .zip(keys)
        .zip(values)
        .zip(confidences)
        .zip(sources)
        .zip(seen)
        .map(
            |(((((kind, key), value), confidence), sources), last_seen)| {
                Ok(Fact {
                    kind: FactKind::parse(&kind).ok_or_else(|| {
                        Error::corrupt(location(), format!("unknown fact kind {kind:?}"))
                    })?,
                    key,
                    value,
                    confidence,
                    sources: from_int(sources, location, "fact sources")?,
                    last_seen,
                })
            },
        )
        .collect::<Result<Vec<_>>>()?;
    Ok(facts)
}

fn sessions_from(row: &Row, location: &dyn Fn() -> String) -> Step<Vec<SessionEntry>> {
    let ids: Vec<String> = row.try_get(10)?;
    let goals: Vec<String> = row.try_get(11)?;
    let outcomes: Vec<String> = row.try_get(12)?;
    let successes: Vec<bool> = row.try_get(13)?;
    let final_urls: Vec<String> = row.try_get(14)?;
    let timestamps: Vec<String> = row.try_get(15)?;
    let turns: Vec<i64> = row.try_get(16)?;
    let durations: Vec<i64> = row.try_get(17)?;
    same_lengths(
        location,
        "session",
        &[
            ids.len(),
            goals.len(),
            outcomes.len(),
            successes.len(),
            final_urls.len(),
            timestamps.len(),
            turns.len(),
            durations.len(),
        ],
    )?;
    let sessions = ids
        .into_iter()
        .zip(goals)
        .zip(outcomes)
        .zip(successes)
        .zip(final_urls)
        .zip(timestamps)
        .zip(turns)
        .zip(durations)
        .map(
            |(((((((id, goal), outcome), success), final_url), timestamp), turns), duration)| {
                Ok(SessionEntry {
                    id,
                    goal,
                    outcome,
                    success,
                    final_url,
                    timestamp,
                    turns_used: from_int(turns, location, "session turns_used")?,
                    duration_ms: from_int(duration, location, "session duration_ms")?,
                })
            },
        )
        .collect::<Result<Vec<_>>>()?;
    Ok(sessions)
}

fn selectors_from(row: &Row, location: &dyn Fn() -> String) -> Step<Vec<SelectorEntry>> {
    let elements: Vec<String> = row.try_get(18)?;
    let refs: Vec<Option<String>> = row.try_get(19)?;
    let stables: Vec<Option<String>> = row.try_get(20)?;
    let counts: Vec<i64> = row.try_get(21)?;
    let used: Vec<String> = row.try_get(22)?;
    same_lengths(
        location,
        "selector",
        &[
            elements.len(),
            refs.len(),
            stables.len(),
            counts.len(),
            used.len(),
        ],
    )?;
    let selectors = elements
        .into_iter()
        .zip(refs)
        .zip(stables)
        .zip(counts)
        .zip(used)
        .map(
            |((((element, last_ref), stable_selector), count), last_used)| {
                Ok(SelectorEntry {
                    element,
                    last_ref,
                    stable_selector,
                    success_count: from_int(count, location, "selector success_count")?,
                    last_used,
                })
            },
        )
        .collect::<Result<Vec<_>>>()?;
    Ok(selectors)
}

fn get_site(q: impl Single, scope: &Scope, site: &str) -> Step<Option<SiteMemory>> {
    let sql = concat!(
        "SELECT ",
        site_columns!(),
        " FROM browser_site WHERE scope = $1 AND site = $2"
    );
    q.row(sql, &[&scope.as_str(), &site])?
        .as_ref()
        .map(site_from)
        .transpose()
}

/// Loads the site (or starts it), applies the shared rules and writes it back, and appends
/// the observation by `by` to the site's log (starting the log from the site as it was when
/// it has none), in a transaction holding the scope lock.
fn observe(
    tx: &mut Tx<'_>,
    scope: &Scope,
    observation: &SiteObservation,
    by: &Provenance,
) -> Step<()> {
    let site = &observation.site;
    let event = LogEvent::encode_observed(observation);
    check_texts(
        || format!("site {site:?}"),
        [("observation", event.as_str())],
    )?;
    let sql = concat!(
        "SELECT ",
        site_columns!(),
        ", log_base IS NOT NULL FROM browser_site WHERE scope = $1 AND site = $2"
    );
    let (mut memory, logged) = match tx.query_opt(sql, &[&scope.as_str(), site])? {
        Some(row) => (site_from(&row)?, row.try_get(row.len() - 1)?),
        None => (
            SiteMemory {
                site: site.clone(),
                ..SiteMemory::default()
            },
            false,
        ),
    };
    let base = (!logged).then(|| SiteLog::encode_base(&memory));
    memory.apply(observation);
    put_site(tx, scope, &memory)?;
    if let Some(base) = base {
        tx.execute(
            "UPDATE browser_site SET log_base = $3 WHERE scope = $1 AND site = $2",
            &[&scope.as_str(), site, &base],
        )?;
    }
    let appended = tx.query_one(
        "INSERT INTO browser_site_log (scope, site, seq, source, session, client, written_at, event)
         VALUES ($1, $2, (SELECT coalesce(max(seq) + 1, 0) FROM browser_site_log
           WHERE scope = $1 AND site = $2), $3, $4, $5, $6, $7) RETURNING seq",
        &[
            &scope.as_str(),
            site,
            &by.source.to_string(),
            &by.session,
            &by.client,
            &by.at.as_millis(),
            &event,
        ],
    )?;
    // Entries are numbered from 0 with no gap, so `seq + 1` is how many the log holds.
    let seq: i64 = appended.try_get(0)?;
    if usize::try_from(seq).map_or(true, |seq| seq + 1 >= LOG_FOLD_AT)
        && let Some(mut log) = load_log(tx, scope, site)?
        && log.fold_oldest(LOG_KEEP)
    {
        store_log(tx, scope, site, &log)?;
    }
    Ok(())
}

/// Stores `m` whole as the site's own base: its log starts again.
fn put_site_whole(tx: &mut Tx<'_>, scope: &Scope, m: &SiteMemory) -> Step<()> {
    put_site(tx, scope, m)?;
    tx.execute(
        "WITH gone AS (DELETE FROM browser_site_log WHERE scope = $1 AND site = $2)
         UPDATE browser_site SET log_base = NULL WHERE scope = $1 AND site = $2",
        &[&scope.as_str(), &m.site],
    )?;
    Ok(())
}

/// The log of `site` (its base and every entry, oldest first), if it has one.
fn load_log(tx: &mut Tx<'_>, scope: &Scope, site: &str) -> Step<Option<SiteLog>> {
    let location = || format!("browser_site_log of site {site:?}");
    let base: Option<String> = tx
        .query_opt(
            "SELECT log_base FROM browser_site WHERE scope = $1 AND site = $2",
            &[&scope.as_str(), &site],
        )?
        .and_then(|row| row.get(0));
    let Some(base) = base else {
        return Ok(None);
    };
    let base = SiteLog::decode_base(&base)
        .ok_or_else(|| Error::corrupt(location(), "the log's base is not an encoded site"))?;
    let rows = tx.query(
        "SELECT source, session, client, written_at, event FROM browser_site_log
         WHERE scope = $1 AND site = $2 ORDER BY seq",
        &[&scope.as_str(), &site],
    )?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in &rows {
        let at = Timestamp::from_millis(row.get::<_, Option<i64>>(3).unwrap_or_default());
        entries.push(LogEntry {
            by: stored_writer(row, 0, at, "browser_site_log")?,
            event: LogEvent::decode(row.get(4))
                .ok_or_else(|| Error::corrupt(location(), "an entry is not an encoded event"))?,
        });
    }
    Ok(Some(SiteLog { base, entries }))
}

/// Replaces the log of `site` with `log`, in a transaction holding the scope lock.
fn store_log(tx: &mut Tx<'_>, scope: &Scope, site: &str, log: &SiteLog) -> Step<()> {
    let name = scope.as_str();
    tx.execute(
        "WITH gone AS (DELETE FROM browser_site_log WHERE scope = $1 AND site = $2)
         UPDATE browser_site SET log_base = $3 WHERE scope = $1 AND site = $2",
        &[&name, &site, &SiteLog::encode_base(&log.base)],
    )?;
    fn by(e: &LogEntry) -> Option<&Provenance> {
        e.by.as_ref()
    }
    let sources: Vec<Option<String>> = (log.entries.iter())
        .map(|e| by(e).map(|b| b.source.to_string()))
        .collect();
    let sessions: Vec<Option<&str>> = (log.entries.iter())
        .map(|e| by(e).and_then(|b| b.session.as_deref()))
        .collect();
    let clients: Vec<Option<&str>> = (log.entries.iter())
        .map(|e| by(e).and_then(|b| b.client.as_deref()))
        .collect();
    let times: Vec<Option<i64>> = (log.entries.iter())
        .map(|e| by(e).map(|b| b.at.as_millis()))
        .collect();
    let events: Vec<String> = log.entries.iter().map(|e| e.event.encode()).collect();
    tx.execute(
        "INSERT INTO browser_site_log (scope, site, seq, source, session, client, written_at, event)
         SELECT $1, $2, n - 1, source, session, client, written_at, event
         FROM unnest($3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
           WITH ORDINALITY AS e (source, session, client, written_at, event, n)",
        &[&name, &site, &sources, &sessions, &clients, &times, &events],
    )?;
    Ok(())
}

impl SiteMemoryStore for PostgresStore {
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
        self.read_one("read site memory", |one| get_site(one, scope, site))
    }

    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()> {
        check_site(memory)?;
        self.write("store site memory", |tx| {
            lock_scope(tx, scope)?;
            put_site_whole(tx, scope, memory)
        })
    }

    fn site_observe(
        &self,
        scope: &Scope,
        observation: &SiteObservation,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::site(&observation.site);
        writer_fits(&write, by)?;
        let run = write.write_run(scope, by, self.clock.now());
        self.write("observe site", |tx| {
            lock_scope(tx, scope)?;
            observe(tx, scope, observation, &run.by)?;
            audit_write_run(tx, &run)
        })
    }

    fn site_forget_knowledge(
        &self,
        scope: &Scope,
        site: &str,
        sessions: bool,
        at: &str,
    ) -> Result<bool> {
        check_texts(|| format!("site {site:?}"), [("knowledge time", at)])?;
        self.write("forget site knowledge", |tx| {
            lock_scope(tx, scope)?;
            let Some(mut memory) = get_site(&mut *tx, scope, site)? else {
                return Ok(false);
            };
            memory.forget_knowledge(sessions, at);
            put_site(tx, scope, &memory)?;
            if let Some(mut log) = load_log(tx, scope, site)? {
                log.forget_knowledge(sessions, at);
                store_log(tx, scope, site, &log)?;
            }
            Ok(true)
        })
    }

    fn site_log(&self, scope: &Scope, site: &str) -> Result<Option<SiteLog>> {
        self.read("read a site's log", |tx| load_log(tx, scope, site))
    }

    fn site_list(&self, scope: &Scope) -> Result<Vec<String>> {
        self.read_one("list sites", |one| {
            one.rows(
                "SELECT site FROM browser_site WHERE scope = $1 ORDER BY site",
                &[&scope.as_str()],
            )?
            .iter()
            .map(|row| Ok(row.try_get(0)?))
            .collect()
        })
    }
}

// ---- run manifests ----

fn optional(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or_default()
}

fn check_run(m: &RunManifest) -> Result<()> {
    check_texts(
        || format!("run manifest {:?}", m.run_id),
        [
            ("run_id", m.run_id.as_str()),
            ("session_id", optional(&m.session_id)),
            ("parent_run_id", optional(&m.parent_run_id)),
            ("goal", &m.goal),
            ("domain", &m.domain),
            ("start_url", optional(&m.start_url)),
            ("current_url", optional(&m.current_url)),
            ("final_url", optional(&m.final_url)),
            ("started_at", &m.started_at),
            ("updated_at", &m.updated_at),
            ("completed_at", optional(&m.completed_at)),
            ("summary", optional(&m.summary)),
            ("result", optional(&m.result)),
            ("reason", optional(&m.reason)),
        ]
        .into_iter()
        .chain(
            m.artifact_paths
                .iter()
                .map(|p| ("artifact_paths", p.as_str())),
        ),
    )
}

/// Replaces the whole row of a run.
const PUT_RUN: &str = "INSERT INTO browser_run (scope, run_id, session_id, parent_run_id, status,
       goal, domain, start_url, current_url, final_url, started_at, updated_at, completed_at,
       success, summary, artifact_paths, turn_count, result, reason)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
     ON CONFLICT (scope, run_id) DO UPDATE SET session_id = excluded.session_id,
       parent_run_id = excluded.parent_run_id, status = excluded.status, goal = excluded.goal,
       domain = excluded.domain, start_url = excluded.start_url,
       current_url = excluded.current_url, final_url = excluded.final_url,
       started_at = excluded.started_at, updated_at = excluded.updated_at,
       completed_at = excluded.completed_at, success = excluded.success,
       summary = excluded.summary, artifact_paths = excluded.artifact_paths,
       turn_count = excluded.turn_count, result = excluded.result, reason = excluded.reason";

fn put_run(tx: &mut Tx<'_>, scope: &Scope, m: &RunManifest) -> Step<()> {
    check_run(m)?;
    tx.execute(
        PUT_RUN,
        &[
            &scope.as_str(),
            &m.run_id,
            &m.session_id,
            &m.parent_run_id,
            &m.status.as_str(),
            &m.goal,
            &m.domain,
            &m.start_url,
            &m.current_url,
            &m.final_url,
            &m.started_at,
            &m.updated_at,
            &m.completed_at,
            &m.success,
            &m.summary,
            &m.artifact_paths,
            &i64::from(m.turn_count),
            &m.result,
            &m.reason,
        ],
    )?;
    Ok(())
}

/// The columns [`run_from`] reads, in its order.
macro_rules! run_columns {
    () => {
        "run_id, session_id, parent_run_id, status, goal, domain, start_url, current_url,
         final_url, started_at, updated_at, completed_at, success, summary, artifact_paths,
         turn_count, result, reason"
    };
}

fn run_from(row: &Row) -> Step<RunManifest> {
    let run_id: String = row.try_get(0)?;
    let location = || format!("browser_run row {run_id:?}");
    let status: String = row.try_get(3)?;
    let status = RunStatus::parse(&status)
        .ok_or_else(|| Error::corrupt(location(), format!("unknown status {status:?}")))?;
    let turn_count = from_int(row.try_get(15)?, &location, "turn_count")?;
    Ok(RunManifest {
        session_id: row.try_get(1)?,
        parent_run_id: row.try_get(2)?,
        status,
        goal: row.try_get(4)?,
        domain: row.try_get(5)?,
        start_url: row.try_get(6)?,
        current_url: row.try_get(7)?,
        final_url: row.try_get(8)?,
        started_at: row.try_get(9)?,
        updated_at: row.try_get(10)?,
        completed_at: row.try_get(11)?,
        success: row.try_get(12)?,
        summary: row.try_get(13)?,
        artifact_paths: row.try_get(14)?,
        turn_count,
        result: row.try_get(16)?,
        reason: row.try_get(17)?,
        run_id,
    })
}

impl RunManifestStore for PostgresStore {
    fn run_put(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<()> {
        check_run(manifest)?;
        let write = BrowserWrite::run(&manifest.run_id);
        writer_fits(&write, by)?;
        let run = write.write_run(scope, by, self.clock.now());
        self.write("store run manifest", |tx| {
            lock_scope(tx, scope)?;
            put_run(tx, scope, manifest)?;
            audit_write_run(tx, &run)
        })
    }

    fn run_start(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<Option<RunManifest>> {
        check_run(manifest)?;
        let write = BrowserWrite::run(&manifest.run_id);
        writer_fits(&write, by)?;
        let run = write.write_run(scope, by, self.clock.now());
        let sql = concat!(
            "SELECT ",
            run_columns!(),
            " FROM browser_run WHERE scope = $1 AND run_id = $2"
        );
        self.write("start run", |tx| {
            // The scope's lock, taken before the look, queues every other start of the run
            // (and every other write of the scope) until this transaction ends.
            lock_scope(tx, scope)?;
            match tx.query_opt(sql, &[&scope.as_str(), &manifest.run_id])? {
                Some(row) => Ok(Some(run_start_outcome(run_from(&row)?, manifest)?)),
                None => {
                    put_run(tx, scope, manifest)?;
                    audit_write_run(tx, &run)?;
                    Ok(None)
                }
            }
        })
    }

    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
        let sql = concat!(
            "SELECT ",
            run_columns!(),
            " FROM browser_run WHERE scope = $1 AND run_id = $2"
        );
        self.read_one("read run manifest", |one| {
            one.row(sql, &[&scope.as_str(), &run_id])?
                .as_ref()
                .map(run_from)
                .transpose()
        })
    }

    fn run_page(&self, scope: &Scope, from: u64, limit: usize) -> Result<Page<RunManifest>> {
        let sql = concat!(
            "SELECT ",
            run_columns!(),
            " FROM browser_run WHERE scope = $1 ORDER BY updated_at DESC, run_id \
              LIMIT $2 OFFSET $3"
        );
        let count = "SELECT count(*) FROM browser_run WHERE scope = $1";
        self.scope_page(
            "list run manifests",
            (sql, count),
            scope,
            from,
            limit,
            run_from,
        )
    }

    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        // `LIMIT NULL` is no limit.
        let sql = concat!(
            "SELECT ",
            run_columns!(),
            " FROM browser_run WHERE scope = $1 AND ($2::text IS NULL OR domain = $2)
              AND ($3::text IS NULL OR session_id = $3) AND ($4::text IS NULL OR status = $4)
              ORDER BY updated_at DESC, run_id LIMIT $5::bigint"
        );
        let limit = filter
            .limit
            .filter(|&limit| limit > 0)
            .map(|limit| i64::try_from(limit).unwrap_or(i64::MAX));
        let status = filter.status.map(RunStatus::as_str);
        self.read_one("list run manifests", |one| {
            one.rows(
                sql,
                &[
                    &scope.as_str(),
                    &filter.domain,
                    &filter.session_id,
                    &status,
                    &limit,
                ],
            )?
            .iter()
            .map(run_from)
            .collect()
        })
    }

    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool> {
        check_texts(|| "run manifest".to_owned(), [("run_id", run_id)])?;
        provenance_fits(|| format!("forget of run {run_id:?}"), by)?;
        self.write("forget run manifest", |tx| {
            lock_scope(tx, scope)?;
            let removed = tx.execute(
                "DELETE FROM browser_run WHERE scope = $1 AND run_id = $2",
                &[&scope.as_str(), &run_id],
            )?;
            let detail = forget_detail(&[(removed, "run", "runs")]);
            let item = run_item(run_id);
            forgot(tx, scope.as_str(), &item, by, &detail)?;
            Ok(removed > 0)
        })
    }
}

// ---- hints and suite summaries ----

fn check_hints(hints: &str, updated_at: &str) -> Result<()> {
    check_texts(
        || "hints".to_owned(),
        [("hints", hints), ("updated_at", updated_at)],
    )
}

fn check_summary(summary: &SuiteSummary) -> Result<()> {
    check_texts(
        || format!("suite summary {:?}", summary.id),
        [("id", summary.id.as_str()), ("json", &summary.json)],
    )
}

fn get_hints(q: impl Single, scope: &Scope) -> Step<Option<(String, String)>> {
    q.row(
        "SELECT hints, updated_at FROM browser_hints WHERE scope = $1",
        &[&scope.as_str()],
    )?
    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
    .transpose()
}

fn put_hints(tx: &mut Tx<'_>, scope: &Scope, hints: &str, updated_at: &str) -> Step<()> {
    check_hints(hints, updated_at)?;
    tx.execute(
        "INSERT INTO browser_hints (scope, hints, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (scope) DO UPDATE SET hints = excluded.hints, updated_at = excluded.updated_at",
        &[&scope.as_str(), &hints, &updated_at],
    )?;
    Ok(())
}

fn put_summary(tx: &mut Tx<'_>, scope: &Scope, summary: &SuiteSummary) -> Step<()> {
    check_summary(summary)?;
    tx.execute(
        "INSERT INTO browser_suite_summary (scope, id, json) VALUES ($1, $2, $3)
         ON CONFLICT (scope, id) DO UPDATE SET json = excluded.json",
        &[&scope.as_str(), &summary.id, &summary.json],
    )?;
    Ok(())
}

impl HintStore for PostgresStore {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>> {
        self.read_one("read hints", |one| get_hints(one, scope))
    }

    fn hints_put(
        &self,
        scope: &Scope,
        hints: &str,
        updated_at: &str,
        by: Option<&Provenance>,
    ) -> Result<()> {
        check_hints(hints, updated_at)?;
        let write = BrowserWrite::hints();
        writer_fits(&write, by)?;
        let run = write.write_run(scope, by, self.clock.now());
        self.write("store hints", |tx| {
            lock_scope(tx, scope)?;
            put_hints(tx, scope, hints, updated_at)?;
            audit_write_run(tx, &run)
        })
    }

    fn suite_summary_put(
        &self,
        scope: &Scope,
        summary: &SuiteSummary,
        by: Option<&Provenance>,
    ) -> Result<()> {
        check_summary(summary)?;
        let write = BrowserWrite::suite_summary();
        writer_fits(&write, by)?;
        let run = write.write_run(scope, by, self.clock.now());
        self.write("store suite summary", |tx| {
            lock_scope(tx, scope)?;
            put_summary(tx, scope, summary)?;
            audit_write_run(tx, &run)
        })
    }

    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>> {
        self.read_one("list suite summaries", |one| {
            one.rows(
                "SELECT id, json FROM browser_suite_summary WHERE scope = $1 ORDER BY id",
                &[&scope.as_str()],
            )?
            .iter()
            .map(|row| {
                Ok(SuiteSummary {
                    id: row.try_get(0)?,
                    json: row.try_get(1)?,
                })
            })
            .collect()
        })
    }
}

// ---- the whole browser memory ----

fn check_run_parts(run: &FinishedRun) -> Result<()> {
    check_trajectory(&run.trajectory, &run.tokens)?;
    // The observation's texts all reach the site row, where `put_site` checks them; the
    // site key is checked here too, because it is looked up first.
    check_texts(
        || format!("site {:?}", run.site.site),
        [("site", run.site.site.as_str())],
    )?;
    if let Some(manifest) = &run.manifest {
        check_run(manifest)?;
    }
    Ok(())
}

fn check_image(image: &MemoryImage) -> Result<()> {
    image.check_site_logs()?;
    for (t, tokens) in &image.trajectories {
        check_trajectory(t, tokens)?;
    }
    for site in &image.sites {
        check_site(site)?;
    }
    for run in &image.runs {
        check_run(run)?;
    }
    if let Some((hints, updated_at)) = &image.hints {
        check_hints(hints, updated_at)?;
    }
    for summary in &image.suite_summaries {
        check_summary(summary)?;
    }
    Ok(())
}

/// Counts one record of an image as written or unchanged.
fn tally(stored: &mut ImageStored, changed: bool) {
    if changed {
        stored.written += 1;
    } else {
        stored.unchanged += 1;
    }
}

/// Stores every record of `image` that differs from the stored one, in a transaction
/// holding the scope lock. The stored records with the image's keys are read in one query
/// per kind; a written record replaces its entry, so a later record with the same key is
/// compared with what the image itself wrote.
fn store_image(tx: &mut Tx<'_>, scope: &Scope, image: &MemoryImage) -> Step<ImageStored> {
    let name = scope.as_str();
    let mut stored = ImageStored::default();

    let ids: Vec<&str> = image
        .trajectories
        .iter()
        .map(|(t, _)| t.id.as_str())
        .collect();
    let sql = concat!(
        "SELECT ",
        trajectory_columns!(),
        " FROM browser_trajectory WHERE scope = $1 AND traj_id = ANY ($2::text[])"
    );
    let mut trajectories = tx
        .query(sql, &[&name, &ids])?
        .iter()
        .map(|row| trajectory_from(row).map(|t| (t.id.clone(), t)))
        .collect::<Step<HashMap<String, Trajectory>>>()?;
    for (t, tokens) in &image.trajectories {
        let changed = !trajectories.get(&t.id).is_some_and(|s| s.unchanged_by(t));
        if changed {
            put_trajectory(tx, scope, t, tokens)?;
            trajectories.insert(t.id.clone(), t.clone());
        }
        tally(&mut stored, changed);
    }

    let keys: Vec<&str> = image.sites.iter().map(|m| m.site.as_str()).collect();
    let sql = concat!(
        "SELECT ",
        site_columns!(),
        " FROM browser_site WHERE scope = $1 AND site = ANY ($2::text[])"
    );
    let mut sites = tx
        .query(sql, &[&name, &keys])?
        .iter()
        .map(|row| site_from(row).map(|m| (m.site.clone(), m)))
        .collect::<Step<HashMap<String, SiteMemory>>>()?;
    for site in &image.sites {
        let changed = image.site_changed(site, sites.get(&site.site), || {
            load_log(tx, scope, &site.site)
        })?;
        if changed {
            put_site_whole(tx, scope, site)?;
            if let Some(log) = image.site_logs.get(&site.site) {
                store_log(tx, scope, &site.site, log)?;
            }
            sites.insert(site.site.clone(), site.clone());
        }
        tally(&mut stored, changed);
    }

    let ids: Vec<&str> = image.runs.iter().map(|m| m.run_id.as_str()).collect();
    let sql = concat!(
        "SELECT ",
        run_columns!(),
        " FROM browser_run WHERE scope = $1 AND run_id = ANY ($2::text[])"
    );
    let mut runs = tx
        .query(sql, &[&name, &ids])?
        .iter()
        .map(|row| run_from(row).map(|m| (m.run_id.clone(), m)))
        .collect::<Step<HashMap<String, RunManifest>>>()?;
    for run in &image.runs {
        let changed = runs.get(&run.run_id) != Some(run);
        if changed {
            put_run(tx, scope, run)?;
            runs.insert(run.run_id.clone(), run.clone());
        }
        tally(&mut stored, changed);
    }

    if let Some(hints) = &image.hints {
        let changed = get_hints(&mut *tx, scope)?.as_ref() != Some(hints);
        if changed {
            put_hints(tx, scope, &hints.0, &hints.1)?;
        }
        tally(&mut stored, changed);
    }

    let ids: Vec<&str> = image
        .suite_summaries
        .iter()
        .map(|s| s.id.as_str())
        .collect();
    let mut summaries = tx
        .query(
            "SELECT id, json FROM browser_suite_summary WHERE scope = $1 AND id = ANY ($2::text[])",
            &[&name, &ids],
        )?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Step<HashMap<String, String>>>()?;
    for summary in &image.suite_summaries {
        let changed = summaries.get(&summary.id) != Some(&summary.json);
        if changed {
            put_summary(tx, scope, summary)?;
            summaries.insert(summary.id.clone(), summary.json.clone());
        }
        tally(&mut stored, changed);
    }
    Ok(stored)
}

/// Deletes the browser memory of `scope`, or of one site of it with its origins, in a
/// transaction holding the scope lock.
fn forget(tx: &mut Tx<'_>, scope: &Scope, site: Option<(&str, &[String])>) -> Step<Forgotten> {
    let name = scope.as_str();
    let Some((site, origins)) = site else {
        // The scope's postings in one statement rather than one cascade per trajectory.
        tx.execute(
            "DELETE FROM browser_trajectory_token WHERE scope = $1",
            &[&name],
        )?;
        let trajectories =
            tx.execute("DELETE FROM browser_trajectory WHERE scope = $1", &[&name])?;
        let sites = tx.execute("DELETE FROM browser_site WHERE scope = $1", &[&name])?;
        let runs = tx.execute("DELETE FROM browser_run WHERE scope = $1", &[&name])?;
        let hints = tx.execute("DELETE FROM browser_hints WHERE scope = $1", &[&name])?
            + tx.execute(
                "DELETE FROM browser_suite_summary WHERE scope = $1",
                &[&name],
            )?;
        let held = tx.execute("DELETE FROM browser_held WHERE scope = $1", &[&name])?;
        return Ok(Forgotten {
            trajectories,
            sites,
            runs,
            hints,
            held,
        });
    };
    Ok(Forgotten {
        trajectories: tx.execute(
            "DELETE FROM browser_trajectory WHERE scope = $1 AND origin = ANY ($2::text[])",
            &[&name, &origins],
        )?,
        sites: tx.execute(
            "DELETE FROM browser_site WHERE scope = $1 AND site = $2",
            &[&name, &site],
        )?,
        runs: tx.execute(
            "DELETE FROM browser_run WHERE scope = $1 AND domain = $2",
            &[&name, &site],
        )?,
        hints: 0,
        held: tx.execute(
            "DELETE FROM browser_held WHERE scope = $1 AND site = $2",
            &[&name, &site],
        )?,
    })
}

/// Every scope that holds a browser record of any kind.
const SCOPES: &str = "SELECT scope FROM browser_trajectory UNION SELECT scope FROM browser_site
     UNION SELECT scope FROM browser_run UNION SELECT scope FROM browser_hints
     UNION SELECT scope FROM browser_suite_summary UNION SELECT scope FROM browser_held";

/// Records everything `run` (checked by [`check_run_parts`]) leaves behind in `scope`, in
/// the caller's transaction, which holds the scope's lock.
fn record_in(tx: &mut Tx<'_>, scope: &Scope, run: &FinishedRun) -> std::result::Result<(), Fail> {
    put_trajectory(tx, scope, &run.trajectory, &run.tokens)?;
    if !run.site.is_empty() {
        observe(tx, scope, &run.site, &run.written_by())?;
    }
    if let Some(manifest) = &run.manifest {
        let stored = if run.completes_stored {
            let sql = concat!(
                "SELECT ",
                run_columns!(),
                " FROM browser_run WHERE scope = $1 AND run_id = $2"
            );
            tx.query_opt(sql, &[&scope.as_str(), &manifest.run_id])?
                .as_ref()
                .map(run_from)
                .transpose()?
        } else {
            None
        };
        match stored {
            // Both parts were checked: the stored one as it was stored.
            Some(stored) => put_run(tx, scope, &stored.completed_by(manifest))?,
            None => put_run(tx, scope, manifest)?,
        }
    }
    Ok(())
}

impl BrowserStore for PostgresStore {
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()> {
        check_run_parts(run)?;
        self.write("record finished run", |tx| {
            lock_scope(tx, scope)?;
            record_in(tx, scope, run)?;
            let (item, by) = (&run.trajectory.id, &run.written_by());
            audit_in(
                tx,
                "browser",
                Action::Write,
                scope.as_str(),
                item,
                by,
                &run.detail(),
            )
        })
    }

    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()> {
        let reasons = held.reasons_text();
        let detail = held.detail();
        check_texts(
            || format!("held run {:?}", held.id),
            [
                ("id", held.id.as_str()),
                ("site", held.site.as_str()),
                ("goal", held.goal.as_str()),
                ("reasons", reasons.as_str()),
                ("run", held.run.as_str()),
            ],
        )?;
        let by = &held.written_by;
        provenance_fits(|| format!("held run {:?}", held.id), by)?;
        self.write("hold finished run", |tx| {
            lock_scope(tx, scope)?;
            let inserted = tx.execute(
                "INSERT INTO browser_held (scope, id, site, goal, reasons, run, source, \
                 source_session, client, held_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
                &[
                    &scope.as_str(),
                    &held.id,
                    &held.site,
                    &held.goal,
                    &reasons,
                    &held.run,
                    &by.source.to_string(),
                    &by.session,
                    &by.client,
                    &by.at.as_millis(),
                ],
            )?;
            if inserted == 0 {
                return Err(Fail::Core(HeldRun::already_held(&held.id)));
            }
            let item = HeldRun::item(&held.id);
            audit_in(
                tx,
                "browser",
                Action::Write,
                scope.as_str(),
                &item,
                by,
                &detail,
            )
        })
    }

    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self.read("list held runs", |tx| {
            Ok(tx.query(
                concat!(
                    "SELECT ",
                    held_columns!(),
                    " FROM browser_held WHERE ($1::text IS NULL OR scope = $1) \
                     ORDER BY held_at, scope, id LIMIT $2"
                ),
                &[&scope.map(Scope::as_str), &limit],
            )?)
        })?;
        rows.iter().map(decode_held).collect()
    }

    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>> {
        let rows = self.read("read a held run", |tx| {
            Ok(tx.query(
                concat!(
                    "SELECT ",
                    held_columns!(),
                    " FROM browser_held WHERE scope = $1 AND id = $2"
                ),
                &[&scope.as_str(), &id],
            )?)
        })?;
        Ok(rows
            .first()
            .map(decode_held)
            .transpose()?
            .map(|(_, held)| held))
    }

    fn run_decide(
        &self,
        scope: &Scope,
        id: &str,
        approve: Option<Approval<'_>>,
        by: &Provenance,
    ) -> Result<bool> {
        if let Some(approval) = approve {
            check_run_parts(approval.run)?;
            for vouch in approval.vouches {
                vouch.check()?;
            }
        }
        provenance_fits(|| format!("decision on held run {id:?}"), by)?;
        let item = HeldRun::item(id);
        let detail = HeldRun::decision_detail(approve);
        self.write("decide on a held run", |tx| {
            lock_scope(tx, scope)?;
            let deleted = tx.execute(
                "DELETE FROM browser_held WHERE scope = $1 AND id = $2",
                &[&scope.as_str(), &id],
            )?;
            if deleted == 0 {
                return Ok(false);
            }
            let action = match approve {
                Some(approval) => {
                    record_in(tx, scope, approval.run)?;
                    keep_vouches(tx, approval.vouches, by)?;
                    Action::Approve
                }
                None => Action::Reject,
            };
            audit_in(
                tx,
                HeldRun::MEMORY,
                action,
                scope.as_str(),
                &item,
                by,
                &detail,
            )?;
            Ok(true)
        })
    }

    fn browser_scopes(&self) -> Result<Vec<Scope>> {
        let names: Vec<String> = self.read_one("list browser scopes", |one| {
            one.rows(SCOPES, &[])?
                .iter()
                .map(|row| Ok(row.try_get(0)?))
                .collect()
        })?;
        let mut scopes = names
            .into_iter()
            .map(|name| {
                Scope::new(name.as_str())
                    .map_err(|e| Error::corrupt(format!("browser scope {name:?}"), e.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        scopes.sort();
        Ok(scopes)
    }

    fn forget_browser(
        &self,
        scope: &Scope,
        site: Option<(&str, &[String])>,
        by: &Provenance,
    ) -> Result<Forgotten> {
        let item = Forgotten::item(site.map(|(key, _)| key));
        check_texts(|| "browser memory".to_owned(), [("site", item.as_str())])?;
        provenance_fits(|| format!("forget of {item} in scope {scope}"), by)?;
        self.write("forget browser memory", |tx| {
            lock_scope(tx, scope)?;
            let forgotten = forget(tx, scope, site)?;
            let detail = forgotten.detail();
            forgot(tx, scope.as_str(), &item, by, &detail)?;
            Ok(forgotten)
        })
    }

    fn store_image(
        &self,
        scope: &Scope,
        image: &MemoryImage,
        by: Option<&Provenance>,
    ) -> Result<ImageStored> {
        check_image(image)?;
        let by = ImageStored::writer(by, self.clock.now());
        provenance_fits(|| "memory image".to_owned(), &by)?;
        self.write("store a memory image", |tx| {
            lock_scope(tx, scope)?;
            let stored = store_image(tx, scope, image)?;
            if stored.written > 0 {
                let detail = stored.detail();
                audit_in(
                    tx,
                    "browser",
                    Action::Write,
                    scope.as_str(),
                    IMAGE_ITEM,
                    &by,
                    &detail,
                )?;
            }
            Ok(stored)
        })
    }
}

impl PostgresStore {
    /// The page of `from` .. `from + limit` of a scope's rows that `select` selects (`$1` the
    /// scope, `$2` the limit, `$3` the offset), each read by `row`, with the total `count`
    /// counts (`$1` the scope), both in one snapshot.
    fn scope_page<T>(
        &self,
        operation: &str,
        (select, count): (&'static str, &'static str),
        scope: &Scope,
        from: u64,
        limit: usize,
        row: fn(&Row) -> Step<T>,
    ) -> Result<Page<T>> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let (items, total) = self.read(operation, |tx| {
            let items = tx
                .query(select, &[&scope.as_str(), &limit, &from])?
                .iter()
                .map(row)
                .collect::<Step<Vec<T>>>()?;
            let total: i64 = tx.query_one(count, &[&scope.as_str()])?.get(0);
            Ok((items, total))
        })?;
        Ok(Page {
            items,
            total: crate::count(total),
        })
    }
}

/// The columns of a held run [`decode_held`] reads, in its order.
macro_rules! held_columns {
    () => {
        "scope, id, site, goal, reasons, run, held_at, source, source_session, client"
    };
}
use held_columns;

/// A held run and its scope from a row of [`held_columns`].
fn decode_held(row: &postgres::Row) -> Result<(Scope, HeldRun)> {
    let at = Timestamp::from_millis(row.get(6));
    HeldRun::from_stored(
        row.get(0),
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
        stored_writer(row, 7, at, "browser_held")?,
    )
}
