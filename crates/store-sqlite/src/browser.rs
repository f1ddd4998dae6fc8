//! The browser memory traits on SQLite: trajectories with their steps and a token index of
//! packed posting blocks (`token_index.rs`), per-site facts, sessions and selectors, run
//! manifests, hints and suite summaries. Recording a finished run is one transaction.

use memory_core::store::browser::{
    BrowserStore, Candidate, CandidateQuery, Fact, FactKind, FinishedRun, HintStore, RunFilter,
    RunManifest, RunManifestStore, RunStatus, SelectorEntry, SessionEntry, SiteMemory,
    SiteMemoryStore, SiteObservation, SuiteSummary, Trajectory, TrajectoryStep, TrajectoryStore,
};
use memory_core::{Error, Result, Scope, Timestamp};
use rusqlite::{Connection, OptionalExtension, ToSql, params, params_from_iter};

use crate::{SqliteStore, to_core, token_index};

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint<T: TryFrom<i64>>(value: i64, location: &str) -> Result<T> {
    T::try_from(value).map_err(|_| Error::corrupt(location, format!("{value} is out of range")))
}

/// The posting keys of a goal: a goal without tokens is filed under the empty token.
fn index_keys(tokens: &[String]) -> Vec<&str> {
    let mut keys: Vec<&str> = tokens.iter().map(String::as_str).collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.is_empty() {
        keys.push("");
    }
    keys
}

/// Rows per multi-row `INSERT`: a run's steps take one or two statements.
const ROWS_PER_INSERT: usize = 16;

/// Inserts `rows` with multi-row `INSERT` statements (`head` ends with `VALUES `), at most
/// [`ROWS_PER_INSERT`] rows each; each row count is its own cached statement.
fn insert_rows<const N: usize>(
    conn: &Connection,
    head: &str,
    rows: &[[&dyn ToSql; N]],
) -> rusqlite::Result<()> {
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let row = format!("({})", vec!["?"; N].join(", "));
        let sql = format!("{head}{}", vec![row; chunk.len()].join(", "));
        conn.prepare_cached(&sql)?
            .execute(params_from_iter(chunk.iter().flatten()))?;
    }
    Ok(())
}

fn put_trajectory(
    conn: &Connection,
    scope: &Scope,
    t: &Trajectory,
    tokens: &[String],
) -> rusqlite::Result<()> {
    let keys = index_keys(tokens);
    let token_count = if tokens.is_empty() { 0 } else { keys.len() };
    let existing: Option<(i64, Option<String>, String)> = conn
        .prepare_cached(
            "SELECT id, origin, index_keys FROM browser_trajectories WHERE scope = ?1 AND traj_id = ?2",
        )?
        .query_row(params![scope.as_str(), t.id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let encoded_keys = token_index::encode_keys(&keys);
    let row = params![
        scope.as_str(),
        t.id,
        t.goal,
        t.origin,
        t.success,
        int(t.duration_ms),
        t.model,
        t.timestamp,
        t.recorded_at.map(Timestamp::as_millis),
        token_count as i64,
        encoded_keys
    ];
    let id = match existing {
        Some((id, old_origin, old_keys)) => {
            conn.prepare_cached("DELETE FROM browser_trajectory_steps WHERE traj = ?1")?
                .execute([id])?;
            token_index::remove(
                conn,
                scope.as_str(),
                &[(id, old_origin.unwrap_or_default(), old_keys)],
            )?;
            conn.prepare_cached(
                "UPDATE browser_trajectories SET goal = ?3, origin = ?4, success = ?5, duration_ms = ?6,
                 model = ?7, timestamp = ?8, recorded_at = ?9, token_count = ?10, index_keys = ?11
                 WHERE scope = ?1 AND traj_id = ?2",
            )?
            .execute(row)?;
            id
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO browser_trajectories (scope, traj_id, goal, origin, success, duration_ms,
                 model, timestamp, recorded_at, token_count, index_keys)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            )?
            .execute(row)?;
            conn.last_insert_rowid()
        }
    };
    let origin = t.origin.as_deref().unwrap_or_default();
    let recorded_at = t.recorded_at.map(Timestamp::as_millis);
    let token_count = token_count as i64;
    let scope_str = scope.as_str();
    let seqs: Vec<i64> = (0..t.steps.len()).map(|seq| seq as i64).collect();
    let steps: Vec<[&dyn ToSql; 7]> = t
        .steps
        .iter()
        .zip(&seqs)
        .map(|(s, seq)| {
            [
                &id as &dyn ToSql,
                seq,
                &s.url,
                &s.action,
                &s.snapshot_hash,
                &s.verified,
                &s.expected_effect,
            ]
        })
        .collect();
    insert_rows(
        conn,
        "INSERT INTO browser_trajectory_steps (traj, seq, url, action, snapshot_hash, verified, expected_effect) VALUES ",
        &steps,
    )?;
    token_index::add(
        conn,
        scope_str,
        &keys,
        origin,
        token_index::Posting {
            traj: id,
            recorded_at,
            token_count,
            success: t.success,
        },
    )?;
    Ok(())
}

type TrajectoryRow = (
    i64,
    String,
    String,
    Option<String>,
    bool,
    i64,
    String,
    String,
    Option<i64>,
);

fn get_trajectory(conn: &Connection, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
    let op = "read trajectory";
    let row: Option<TrajectoryRow> = conn
        .prepare_cached(
            "SELECT id, traj_id, goal, origin, success, duration_ms, model, timestamp, recorded_at
             FROM browser_trajectories WHERE scope = ?1 AND traj_id = ?2",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![scope.as_str(), id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    r.get(8)?,
                ))
            })
            .optional()
        })
        .map_err(|e| to_core(op, e))?;
    row.map(|row| trajectory_from(conn, row)).transpose()
}

fn trajectory_from(conn: &Connection, row: TrajectoryRow) -> Result<Trajectory> {
    let (rowid, id, goal, origin, success, duration_ms, model, timestamp, recorded_at) = row;
    let steps = conn
        .prepare_cached(
            "SELECT url, action, snapshot_hash, verified, expected_effect
             FROM browser_trajectory_steps WHERE traj = ?1 ORDER BY seq",
        )
        .and_then(|mut stmt| {
            stmt.query_map([rowid], |r| {
                Ok(TrajectoryStep {
                    url: r.get(0)?,
                    action: r.get(1)?,
                    snapshot_hash: r.get(2)?,
                    verified: r.get(3)?,
                    expected_effect: r.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(|e| to_core("read trajectory steps", e))?;
    Ok(Trajectory {
        duration_ms: uint(duration_ms, &format!("browser_trajectories row {rowid}"))?,
        recorded_at: recorded_at.map(Timestamp::from_millis),
        id,
        goal,
        origin,
        steps,
        success,
        model,
        timestamp,
    })
}

fn candidates(
    conn: &Connection,
    scope: &Scope,
    query: &CandidateQuery,
) -> rusqlite::Result<Vec<Candidate>> {
    let tokenless = query.tokens.is_empty();
    let keys = index_keys(&query.tokens);
    let counts = token_index::count(
        conn,
        scope.as_str(),
        &keys,
        &token_index::Filter {
            origin: query.origin.as_deref(),
            success_only: query.success_only,
            not_before: query.not_before.map(Timestamp::as_millis),
        },
    )?;
    let min = query.min_shared.max(1);
    let mut name = conn.prepare_cached("SELECT traj_id FROM browser_trajectories WHERE id = ?1")?;
    let mut found = Vec::new();
    for (rowid, (shared, token_count)) in counts {
        if shared < min {
            continue;
        }
        found.push(Candidate {
            id: name.query_row([rowid], |r| r.get(0))?,
            shared: if tokenless { 0 } else { shared },
            token_count: usize::try_from(token_count).unwrap_or(0),
        });
    }
    found.sort();
    Ok(found)
}

/// Removes the trajectories of `scope` recorded before `cutoff`, index first.
fn prune(conn: &Connection, scope: &Scope, cutoff: Timestamp) -> rusqlite::Result<usize> {
    let doomed: Vec<(i64, String, String)> = conn
        .prepare_cached(
            "SELECT id, coalesce(origin, ''), index_keys FROM browser_trajectories
             WHERE scope = ?1 AND recorded_at < ?2",
        )?
        .query_map(params![scope.as_str(), cutoff.as_millis()], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    token_index::remove(conn, scope.as_str(), &doomed)?;
    conn.prepare_cached("DELETE FROM browser_trajectories WHERE scope = ?1 AND recorded_at < ?2")?
        .execute(params![scope.as_str(), cutoff.as_millis()])
}

impl TrajectoryStore for SqliteStore {
    fn trajectory_put(
        &self,
        scope: &Scope,
        trajectory: &Trajectory,
        tokens: &[String],
    ) -> Result<()> {
        let op = "store trajectory";
        self.write(op, |tx| {
            put_trajectory(tx, scope, trajectory, tokens).map_err(|e| to_core(op, e))
        })
    }

    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
        self.read_with(|conn| get_trajectory(conn, scope, id))
    }

    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        self.read("find trajectory candidates", |conn| {
            candidates(conn, scope, query)
        })
    }

    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>> {
        self.read_with(|conn| {
            let rows: Vec<TrajectoryRow> = conn
                .prepare_cached(
                    "SELECT id, traj_id, goal, origin, success, duration_ms, model, timestamp, recorded_at
                     FROM browser_trajectories WHERE scope = ?1 ORDER BY id",
                )
                .and_then(|mut stmt| {
                    stmt.query_map([scope.as_str()], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?, r.get(8)?))
                    })?
                    .collect()
                })
                .map_err(|e| to_core("list trajectories", e))?;
            rows.into_iter().map(|row| trajectory_from(conn, row)).collect()
        })
    }

    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize> {
        let op = "prune trajectories";
        self.write(op, |tx| {
            prune(tx, scope, cutoff).map_err(|e| to_core(op, e))
        })
    }
}

/// `id, goal, outcome, success, final_url, timestamp, turns_used, duration_ms`.
type SessionRow = (String, String, String, bool, String, String, i64, i64);
/// `element, last_ref, stable_selector, success_count, last_used`.
type SelectorRow = (String, Option<String>, Option<String>, i64, String);

fn get_site(conn: &Connection, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
    let op = "read site memory";
    let fail = |e| to_core(op, e);
    let head: Option<(String, String, String)> = conn
        .prepare_cached(
            "SELECT label, knowledge_updated_at, selectors_updated_at FROM browser_sites WHERE scope = ?1 AND site = ?2",
        )
        .and_then(|mut s| s.query_row(params![scope.as_str(), site], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
        .map_err(fail)?;
    let Some((label, knowledge_updated_at, selectors_updated_at)) = head else {
        return Ok(None);
    };
    let location = format!("browser_facts of site {site:?}");
    let facts: Vec<(String, String, String, f64, i64, String)> = conn
        .prepare_cached(
            "SELECT kind, key, value, confidence, sources, last_seen FROM browser_facts
             WHERE scope = ?1 AND site = ?2 ORDER BY seq",
        )
        .and_then(|mut s| {
            s.query_map(params![scope.as_str(), site], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })?
            .collect()
        })
        .map_err(fail)?;
    let facts = facts
        .into_iter()
        .map(|(kind, key, value, confidence, sources, last_seen)| {
            Ok(Fact {
                kind: FactKind::parse(&kind).ok_or_else(|| {
                    Error::corrupt(&location, format!("unknown fact kind {kind:?}"))
                })?,
                key,
                value,
                confidence,
                sources: uint(sources, &location)?,
                last_seen,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let sessions: Vec<SessionRow> = conn
        .prepare_cached(
            "SELECT id, goal, outcome, success, final_url, timestamp, turns_used, duration_ms FROM browser_sessions
             WHERE scope = ?1 AND site = ?2 ORDER BY seq",
        )
        .and_then(|mut s| {
            s.query_map(params![scope.as_str(), site], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
            })?
            .collect()
        })
        .map_err(fail)?;
    let sessions = sessions
        .into_iter()
        .map(
            |(id, goal, outcome, success, final_url, timestamp, turns, duration)| {
                Ok(SessionEntry {
                    id,
                    goal,
                    outcome,
                    success,
                    final_url,
                    timestamp,
                    turns_used: uint(turns, "browser_sessions")?,
                    duration_ms: uint(duration, "browser_sessions")?,
                })
            },
        )
        .collect::<Result<Vec<_>>>()?;
    let selectors: Vec<SelectorRow> = conn
        .prepare_cached(
            "SELECT element, last_ref, stable_selector, success_count, last_used FROM browser_selectors
             WHERE scope = ?1 AND site = ?2 ORDER BY seq",
        )
        .and_then(|mut s| {
            s.query_map(params![scope.as_str(), site], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))?
                .collect()
        })
        .map_err(fail)?;
    let selectors = selectors
        .into_iter()
        .map(|(element, last_ref, stable_selector, count, last_used)| {
            Ok(SelectorEntry {
                element,
                last_ref,
                stable_selector,
                success_count: uint(count, "browser_selectors")?,
                last_used,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(SiteMemory {
        site: site.to_owned(),
        label,
        facts,
        sessions,
        knowledge_updated_at,
        selectors,
        selectors_updated_at,
    }))
}

fn put_site(conn: &Connection, scope: &Scope, m: &SiteMemory) -> rusqlite::Result<()> {
    let key = params![scope.as_str(), m.site];
    for table in ["browser_facts", "browser_sessions", "browser_selectors"] {
        let sql = match table {
            "browser_facts" => "DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2",
            "browser_sessions" => "DELETE FROM browser_sessions WHERE scope = ?1 AND site = ?2",
            _ => "DELETE FROM browser_selectors WHERE scope = ?1 AND site = ?2",
        };
        conn.prepare_cached(sql)?.execute(key)?;
    }
    conn.prepare_cached(
        "INSERT INTO browser_sites (scope, site, label, knowledge_updated_at, selectors_updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (scope, site) DO UPDATE SET label = excluded.label,
         knowledge_updated_at = excluded.knowledge_updated_at, selectors_updated_at = excluded.selectors_updated_at",
    )?
    .execute(params![scope.as_str(), m.site, m.label, m.knowledge_updated_at, m.selectors_updated_at])?;
    let mut fact = conn.prepare_cached(
        "INSERT INTO browser_facts (scope, site, seq, kind, key, value, confidence, sources, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, f) in m.facts.iter().enumerate() {
        fact.execute(params![
            scope.as_str(),
            m.site,
            seq as i64,
            f.kind.as_str(),
            f.key,
            f.value,
            f.confidence,
            f.sources,
            f.last_seen
        ])?;
    }
    let mut session = conn.prepare_cached(
        "INSERT INTO browser_sessions (scope, site, seq, id, goal, outcome, success, final_url, timestamp, turns_used, duration_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (seq, s) in m.sessions.iter().enumerate() {
        session.execute(params![
            scope.as_str(),
            m.site,
            seq as i64,
            s.id,
            s.goal,
            s.outcome,
            s.success,
            s.final_url,
            s.timestamp,
            s.turns_used,
            int(s.duration_ms)
        ])?;
    }
    let mut selector = conn.prepare_cached(
        "INSERT INTO browser_selectors (scope, site, seq, element, last_ref, stable_selector, success_count, last_used)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, e) in m.selectors.iter().enumerate() {
        selector.execute(params![
            scope.as_str(),
            m.site,
            seq as i64,
            e.element,
            e.last_ref,
            e.stable_selector,
            e.success_count,
            e.last_used
        ])?;
    }
    Ok(())
}

/// Applies an observation row by row, touching only the rows it changes: the site row, the
/// session log (at most six rows), the facts sharing a kind and key with an observed fact, and
/// the selectors observed. The rules are the shared ones of `memory_core::store::browser`.
fn observe(conn: &Connection, scope: &Scope, o: &SiteObservation) -> Result<()> {
    observe_rows(conn, scope, o).map_err(|e| to_core("observe site", e))
}

fn next_seq(conn: &Connection, sql: &str, scope: &Scope, site: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached(sql)?
        .query_row(params![scope.as_str(), site], |r| r.get(0))
}

fn observe_rows(conn: &Connection, scope: &Scope, o: &SiteObservation) -> rusqlite::Result<()> {
    let now = &o.observed_at;
    let knowledge_changed = o.session.is_some() || !o.facts.is_empty();
    let selectors_changed = !o.selectors.is_empty();
    conn.prepare_cached(
        "INSERT INTO browser_sites (scope, site, label, knowledge_updated_at, selectors_updated_at)
         VALUES (?1, ?2, ?3, CASE WHEN ?4 THEN ?6 ELSE '' END, CASE WHEN ?5 THEN ?6 ELSE '' END)
         ON CONFLICT (scope, site) DO UPDATE SET
           label = CASE WHEN label = '' THEN excluded.label ELSE label END,
           knowledge_updated_at = CASE WHEN ?4 THEN ?6 ELSE knowledge_updated_at END,
           selectors_updated_at = CASE WHEN ?5 THEN ?6 ELSE selectors_updated_at END",
    )?
    .execute(params![
        scope.as_str(),
        o.site,
        o.label,
        knowledge_changed,
        selectors_changed,
        now
    ])?;
    if let Some(session) = &o.session {
        observe_session(conn, scope, &o.site, session)?;
    }
    for fact in &o.facts {
        observe_one_fact(conn, scope, &o.site, fact, now)?;
    }
    if !o.facts.is_empty() {
        conn.prepare_cached(
            "DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2 AND confidence < ?3",
        )?
        .execute(params![
            scope.as_str(),
            o.site,
            memory_core::store::browser::PRUNE_BELOW
        ])?;
    }
    for (element, selector) in &o.selectors {
        observe_selector(conn, scope, &o.site, element, selector, now)?;
    }
    Ok(())
}

fn observe_session(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    session: &SessionEntry,
) -> rusqlite::Result<()> {
    let mut sessions: Vec<SessionEntry> = conn
        .prepare_cached(
            "SELECT id, goal, outcome, success, final_url, timestamp, turns_used, duration_ms FROM browser_sessions
             WHERE scope = ?1 AND site = ?2 ORDER BY seq",
        )?
        .query_map(params![scope.as_str(), site], |r| {
            Ok(SessionEntry {
                id: r.get(0)?,
                goal: r.get(1)?,
                outcome: r.get(2)?,
                success: r.get(3)?,
                final_url: r.get(4)?,
                timestamp: r.get(5)?,
                turns_used: r.get(6)?,
                duration_ms: r.get::<_, i64>(7).map(|d| u64::try_from(d).unwrap_or(0))?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    memory_core::store::browser::append_session(&mut sessions, session.clone());
    conn.prepare_cached("DELETE FROM browser_sessions WHERE scope = ?1 AND site = ?2")?
        .execute(params![scope.as_str(), site])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO browser_sessions (scope, site, seq, id, goal, outcome, success, final_url, timestamp, turns_used, duration_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    for (seq, s) in sessions.iter().enumerate() {
        insert.execute(params![
            scope.as_str(),
            site,
            seq as i64,
            s.id,
            s.goal,
            s.outcome,
            s.success,
            s.final_url,
            s.timestamp,
            s.turns_used,
            int(s.duration_ms)
        ])?;
    }
    Ok(())
}

fn observe_one_fact(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    fact: &memory_core::store::browser::FactObservation,
    now: &str,
) -> rusqlite::Result<()> {
    let rows: Vec<(i64, String, f64, i64, String)> = conn
        .prepare_cached(
            "SELECT seq, value, confidence, sources, last_seen FROM browser_facts
             WHERE scope = ?1 AND site = ?2 AND kind = ?3 AND key = ?4 ORDER BY seq",
        )?
        .query_map(
            params![scope.as_str(), site, fact.kind.as_str(), fact.key],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )?
        .collect::<rusqlite::Result<_>>()?;
    let mut seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let mut group: Vec<Fact> = rows
        .into_iter()
        .map(|(_, value, confidence, sources, last_seen)| Fact {
            kind: fact.kind,
            key: fact.key.clone(),
            value,
            confidence,
            sources: u32::try_from(sources).unwrap_or(u32::MAX),
            last_seen,
        })
        .collect();
    let before = group.len();
    memory_core::store::browser::observe_fact(&mut group, fact.kind, &fact.key, &fact.value, now);
    if group.len() > before {
        seqs.push(next_seq(
            conn,
            "SELECT coalesce(max(seq), -1) + 1 FROM browser_facts WHERE scope = ?1 AND site = ?2",
            scope,
            site,
        )?);
    }
    // The rule keeps the group's order; pruned facts (below 0.1) are removed after all
    // observations, so every remaining fact keeps its sequence number.
    conn.prepare_cached(
        "DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2 AND kind = ?3 AND key = ?4",
    )?
    .execute(params![scope.as_str(), site, fact.kind.as_str(), fact.key])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO browser_facts (scope, site, seq, kind, key, value, confidence, sources, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (f, seq) in group.iter().zip(seqs) {
        insert.execute(params![
            scope.as_str(),
            site,
            seq,
            f.kind.as_str(),
            f.key,
            f.value,
            f.confidence,
            f.sources,
            f.last_seen
        ])?;
    }
    Ok(())
}

fn observe_selector(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    element: &str,
    selector: &str,
    now: &str,
) -> rusqlite::Result<()> {
    let is_ref = selector.starts_with('@');
    let updated = conn
        .prepare_cached(
            "UPDATE browser_selectors SET success_count = success_count + 1, last_used = ?4,
               last_ref = CASE WHEN ?5 THEN ?6 ELSE last_ref END,
               stable_selector = CASE WHEN ?5 THEN stable_selector ELSE ?6 END
             WHERE scope = ?1 AND site = ?2 AND element = ?3",
        )?
        .execute(params![
            scope.as_str(),
            site,
            element,
            now,
            is_ref,
            selector
        ])?;
    if updated == 0 {
        let seq = next_seq(
            conn,
            "SELECT coalesce(max(seq), -1) + 1 FROM browser_selectors WHERE scope = ?1 AND site = ?2",
            scope,
            site,
        )?;
        conn.prepare_cached(
            "INSERT INTO browser_selectors (scope, site, seq, element, last_ref, stable_selector, success_count, last_used)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7)",
        )?
        .execute(params![
            scope.as_str(), site, seq, element,
            is_ref.then_some(selector), (!is_ref).then_some(selector), now
        ])?;
    }
    Ok(())
}

impl SiteMemoryStore for SqliteStore {
    fn site_get(&self, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
        self.read_with(|conn| get_site(conn, scope, site))
    }

    fn site_put(&self, scope: &Scope, memory: &SiteMemory) -> Result<()> {
        let op = "store site memory";
        self.write(op, |tx| {
            put_site(tx, scope, memory).map_err(|e| to_core(op, e))
        })
    }

    fn site_observe(&self, scope: &Scope, observation: &SiteObservation) -> Result<()> {
        self.write("observe site", |tx| observe(tx, scope, observation))
    }

    fn site_list(&self, scope: &Scope) -> Result<Vec<String>> {
        self.read("list sites", |conn| {
            conn.prepare_cached("SELECT site FROM browser_sites WHERE scope = ?1 ORDER BY site")?
                .query_map([scope.as_str()], |r| r.get(0))?
                .collect()
        })
    }
}

fn put_run(conn: &Connection, scope: &Scope, m: &RunManifest) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM browser_runs WHERE scope = ?1 AND run_id = ?2")?
        .execute(params![scope.as_str(), m.run_id])?;
    conn.prepare_cached(
        "INSERT INTO browser_runs (scope, run_id, session_id, parent_run_id, status, goal, domain, start_url,
         current_url, final_url, started_at, updated_at, completed_at, success, summary, turn_count, result, reason)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        scope.as_str(), m.run_id, m.session_id, m.parent_run_id, m.status.as_str(), m.goal, m.domain, m.start_url,
        m.current_url, m.final_url, m.started_at, m.updated_at, m.completed_at, m.success, m.summary, m.turn_count,
        m.result, m.reason
    ])?;
    let mut artifact = conn.prepare_cached(
        "INSERT INTO browser_run_artifacts (scope, run_id, seq, path) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, path) in m.artifact_paths.iter().enumerate() {
        artifact.execute(params![scope.as_str(), m.run_id, seq as i64, path])?;
    }
    Ok(())
}

const RUN_COLUMNS: &str =
    "run_id, session_id, parent_run_id, status, goal, domain, start_url, current_url, final_url,
     started_at, updated_at, completed_at, success, summary, turn_count, result, reason";

fn run_from(
    conn: &Connection,
    scope: &Scope,
    r: &rusqlite::Row<'_>,
) -> rusqlite::Result<(RunManifest, String)> {
    let run_id: String = r.get(0)?;
    let artifact_paths = conn
        .prepare_cached(
            "SELECT path FROM browser_run_artifacts WHERE scope = ?1 AND run_id = ?2 ORDER BY seq",
        )?
        .query_map(params![scope.as_str(), run_id], |a| a.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    let status: String = r.get(3)?;
    let turn_count: i64 = r.get(14)?;
    Ok((
        RunManifest {
            run_id,
            session_id: r.get(1)?,
            parent_run_id: r.get(2)?,
            status: RunStatus::parse(&status).unwrap_or(RunStatus::Running),
            goal: r.get(4)?,
            domain: r.get(5)?,
            start_url: r.get(6)?,
            current_url: r.get(7)?,
            final_url: r.get(8)?,
            started_at: r.get(9)?,
            updated_at: r.get(10)?,
            completed_at: r.get(11)?,
            success: r.get(12)?,
            summary: r.get(13)?,
            artifact_paths,
            turn_count: u32::try_from(turn_count).unwrap_or(u32::MAX),
            result: r.get(15)?,
            reason: r.get(16)?,
        },
        status,
    ))
}

fn checked(found: (RunManifest, String)) -> Result<RunManifest> {
    let (manifest, status) = found;
    if RunStatus::parse(&status).is_none() {
        return Err(Error::corrupt(
            format!("browser_runs row {:?}", manifest.run_id),
            format!("unknown status {status:?}"),
        ));
    }
    Ok(manifest)
}

impl RunManifestStore for SqliteStore {
    fn run_put(&self, scope: &Scope, manifest: &RunManifest) -> Result<()> {
        let op = "store run manifest";
        self.write(op, |tx| {
            put_run(tx, scope, manifest).map_err(|e| to_core(op, e))
        })
    }

    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM browser_runs WHERE scope = ?1 AND run_id = ?2");
        let found = self.read("read run manifest", |conn| {
            conn.prepare_cached(&sql)?
                .query_row(params![scope.as_str(), run_id], |r| {
                    run_from(conn, scope, r)
                })
                .optional()
        })?;
        found.map(checked).transpose()
    }

    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM browser_runs WHERE scope = ?1
             AND (?2 IS NULL OR domain = ?2) AND (?3 IS NULL OR session_id = ?3) AND (?4 IS NULL OR status = ?4)
             ORDER BY updated_at DESC, run_id LIMIT ?5"
        );
        let limit = filter
            .limit
            .filter(|&l| l > 0)
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let found = self.read("list run manifests", |conn| {
            conn.prepare_cached(&sql)?
                .query_map(
                    params![
                        scope.as_str(),
                        filter.domain,
                        filter.session_id,
                        filter.status.map(RunStatus::as_str),
                        limit
                    ],
                    |r| run_from(conn, scope, r),
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        found.into_iter().map(checked).collect()
    }
}

impl HintStore for SqliteStore {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>> {
        self.read("read hints", |conn| {
            conn.prepare_cached("SELECT hints, updated_at FROM browser_hints WHERE scope = ?1")?
                .query_row([scope.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        })
    }

    fn hints_put(&self, scope: &Scope, hints: &str, updated_at: &str) -> Result<()> {
        let op = "store hints";
        self.write(op, |tx| {
            tx.prepare_cached(
                "INSERT INTO browser_hints (scope, hints, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope) DO UPDATE SET hints = excluded.hints, updated_at = excluded.updated_at",
            )
            .and_then(|mut s| s.execute(params![scope.as_str(), hints, updated_at]))
            .map(|_| ())
            .map_err(|e| to_core(op, e))
        })
    }

    fn suite_summary_put(&self, scope: &Scope, summary: &SuiteSummary) -> Result<()> {
        let op = "store suite summary";
        self.write(op, |tx| {
            tx.prepare_cached(
                "INSERT INTO browser_suite_summaries (scope, id, json) VALUES (?1, ?2, ?3)
                 ON CONFLICT (scope, id) DO UPDATE SET json = excluded.json",
            )
            .and_then(|mut s| s.execute(params![scope.as_str(), summary.id, summary.json]))
            .map(|_| ())
            .map_err(|e| to_core(op, e))
        })
    }

    fn suite_summaries(&self, scope: &Scope) -> Result<Vec<SuiteSummary>> {
        self.read("list suite summaries", |conn| {
            conn.prepare_cached(
                "SELECT id, json FROM browser_suite_summaries WHERE scope = ?1 ORDER BY id",
            )?
            .query_map([scope.as_str()], |r| {
                Ok(SuiteSummary {
                    id: r.get(0)?,
                    json: r.get(1)?,
                })
            })?
            .collect()
        })
    }
}

impl BrowserStore for SqliteStore {
    fn record_run(&self, scope: &Scope, run: &FinishedRun) -> Result<()> {
        let op = "record finished run";
        self.write(op, |tx| {
            put_trajectory(tx, scope, &run.trajectory, &run.tokens).map_err(|e| to_core(op, e))?;
            observe(tx, scope, &run.site)?;
            if let Some(manifest) = &run.manifest {
                put_run(tx, scope, manifest).map_err(|e| to_core(op, e))?;
            }
            Ok(())
        })
    }
}
