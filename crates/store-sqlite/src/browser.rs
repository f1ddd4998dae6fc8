//! The browser memory traits on SQLite: trajectories (their steps in the row) with a token
//! index of packed postings (`token_index.rs`), sites (their session log in the row) with
//! facts and selectors, run manifests (their artifact paths in the row), hints and suite
//! summaries. Recording a finished run is one transaction.

use agent_memory_core::evidence::{Action, Writer, forget_detail};
use agent_memory_core::store::browser::{
    Approval, BrowserStore, BrowserWrite, Candidate, CandidateQuery, FORGOTTEN_HELD_RUN,
    FORGOTTEN_TRAJECTORY, Fact, FactKind, FinishedRun, ForgotBy, Forgotten, HeldRun, HintStore,
    IMAGE_ITEM, ImageStored, IndexedCandidate, MemoryImage, RunFilter, RunManifest,
    RunManifestStore, RunStatus, SelectorEntry, SessionEntry, SiteMemory, SiteMemoryStore,
    SiteObservation, SuiteSummary, Trajectory, TrajectoryStore, forgotten_observations, run_item,
    run_start_outcome, within_margin,
};
use agent_memory_core::store::site_log::{LOG_FOLD_AT, LOG_KEEP, LogEntry, LogEvent, SiteLog};
use agent_memory_core::store::trajectory::{decode_texts, encode_texts};
use agent_memory_core::{Clock, Error, Page, Provenance, Result, Scope, Source, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::notes::{audit_in, audit_write_run, keep_vouches, stored_writer, writer_columns};
use crate::{SqliteStore, codec, item_error, to_core, token_index};

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
    let steps = codec::encode_steps(&t.steps);
    let by = t.provenance.as_ref();
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
        encoded_keys,
        steps,
        by.map(|p| p.source.to_string()),
        by.and_then(|p| p.session.as_deref()),
        by.and_then(|p| p.client.as_deref()),
        by.map(|p| p.at.as_millis()),
    ];
    let id = match existing {
        Some((id, old_origin, old_keys)) => {
            token_index::remove(
                conn,
                scope.as_str(),
                &[(id, old_origin.unwrap_or_default(), old_keys)],
            )?;
            conn.prepare_cached(
                "UPDATE browser_trajectories SET goal = ?3, origin = ?4, success = ?5, duration_ms = ?6,
                 model = ?7, timestamp = ?8, recorded_at = ?9, token_count = ?10, index_keys = ?11,
                 steps = ?12, source = ?13, session = ?14, client = ?15, written_at = ?16
                 WHERE scope = ?1 AND traj_id = ?2",
            )?
            .execute(row)?;
            id
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO browser_trajectories (scope, traj_id, goal, origin, success, duration_ms,
                 model, timestamp, recorded_at, token_count, index_keys, steps, source, session,
                 client, written_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
            )?
            .execute(row)?;
            conn.last_insert_rowid()
        }
    };
    let origin = t.origin.as_deref().unwrap_or_default();
    let recorded_at = t.recorded_at.map(Timestamp::as_millis);
    let token_count = token_count as i64;
    token_index::add(
        conn,
        scope.as_str(),
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

/// The columns of a stored trajectory, in the order [`trajectory_from`] reads them (a macro,
/// so that the statements below are `concat!` constants rather than text formatted on every
/// call).
macro_rules! trajectory_columns {
    () => {
        "id, traj_id, goal, origin, success, duration_ms, model, timestamp, recorded_at, steps, \
         source, session, client, written_at"
    };
}

/// One trajectory by scope and id.
const GET_TRAJECTORY: &str = concat!(
    "SELECT ",
    trajectory_columns!(),
    " FROM browser_trajectories WHERE scope = ?1 AND traj_id = ?2"
);

/// A scope's trajectories in the order they were stored.
const LIST_TRAJECTORIES: &str = concat!(
    "SELECT ",
    trajectory_columns!(),
    " FROM browser_trajectories WHERE scope = ?1 ORDER BY id"
);

/// A scope's most recent trajectories.
const RECENT_TRAJECTORIES: &str = concat!(
    "SELECT ",
    trajectory_columns!(),
    " FROM browser_trajectories WHERE scope = ?1 \
     ORDER BY recorded_at IS NULL, recorded_at DESC, traj_id DESC LIMIT ?2"
);

/// [`RECENT_TRAJECTORIES`] from position `?3`.
const RECENT_TRAJECTORIES_FROM: &str = concat!(
    "SELECT ",
    trajectory_columns!(),
    " FROM browser_trajectories WHERE scope = ?1 \
     ORDER BY recorded_at IS NULL, recorded_at DESC, traj_id DESC LIMIT ?2 OFFSET ?3"
);

fn trajectory_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Trajectory>> {
    let rowid: i64 = r.get(0)?;
    let duration_ms: i64 = r.get(5)?;
    let steps = r.get_ref(9)?.as_str()?;
    let location = || format!("browser_trajectories row {rowid}");
    let Some(steps) = codec::decode_steps(steps) else {
        return Ok(Err(Error::corrupt(
            location(),
            "the steps column is not an encoded step list",
        )));
    };
    let duration_ms = match uint(duration_ms, &location()) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e)),
    };
    let provenance = match r.get::<_, Option<String>>(10)? {
        None => None,
        Some(source) => match Source::parse(&source) {
            Ok(source) => Some(Provenance {
                source,
                session: r.get(11)?,
                client: r.get(12)?,
                at: Timestamp::from_millis(r.get(13)?),
            }),
            Err(e) => return Ok(Err(Error::corrupt(location(), e.to_string()))),
        },
    };
    Ok(Ok(Trajectory {
        id: r.get(1)?,
        goal: r.get(2)?,
        origin: r.get(3)?,
        steps,
        success: r.get(4)?,
        duration_ms,
        model: r.get(6)?,
        timestamp: r.get(7)?,
        recorded_at: r.get::<_, Option<i64>>(8)?.map(Timestamp::from_millis),
        provenance,
    }))
}

fn get_trajectory(conn: &Connection, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
    conn.prepare_cached(GET_TRAJECTORY)
        .and_then(|mut stmt| {
            stmt.query_row(params![scope.as_str(), id], trajectory_from)
                .optional()
        })
        .map_err(|e| to_core("read trajectory", e))?
        .transpose()
}

/// The tallies of the trajectories of `scope` that pass `query`'s filters and share at least
/// its minimum of tokens.
fn tallies(
    conn: &Connection,
    scope: &Scope,
    query: &CandidateQuery,
) -> rusqlite::Result<Vec<token_index::Tally>> {
    let keys = index_keys(&query.tokens);
    let mut tallies = token_index::count(
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
    tallies.retain(|t| t.shared >= min);
    Ok(tallies)
}

/// What the index knows of a tally's trajectory (a query without tokens shares none).
fn indexed(tally: &token_index::Tally, tokenless: bool) -> IndexedCandidate {
    IndexedCandidate {
        shared: if tokenless { 0 } else { tally.shared },
        token_count: usize::try_from(tally.token_count).unwrap_or(0),
        recorded_at: tally.recorded_at.map(Timestamp::from_millis),
    }
}

/// The candidates of `tallies`, their rows read for the id and what the trace score needs
/// (the steps counted in their column, not decoded), ordered by id.
fn candidates_of(
    conn: &Connection,
    tallies: &[(&token_index::Tally, IndexedCandidate)],
) -> Result<Vec<Candidate>> {
    let op = "find trajectory candidates";
    let mut row = conn
        .prepare_cached(
            "SELECT traj_id, duration_ms, steps FROM browser_trajectories WHERE id = ?1",
        )
        .map_err(|e| to_core(op, e))?;
    let mut found = Vec::with_capacity(tallies.len());
    for (tally, known) in tallies {
        let location = || format!("browser_trajectories row {}", tally.traj);
        let (id, duration_ms, counts) = row
            .query_row([tally.traj], |r| {
                let steps = codec::step_counts(r.get_ref(2)?.as_str()?);
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, steps))
            })
            .map_err(|e| to_core(op, e))?;
        let Some((steps, verified_steps)) = counts else {
            return Err(Error::corrupt(
                location(),
                "the steps column is not an encoded step list",
            ));
        };
        found.push(Candidate {
            id,
            shared: known.shared,
            token_count: known.token_count,
            recorded_at: known.recorded_at,
            duration_ms: uint(duration_ms, &location())?,
            steps,
            verified_steps,
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

/// Removes the trajectories of `scope` that `select` picks (its first column the row id, then
/// the origin and index keys, values bound from `params`), index first; returns how many.
fn remove_selected(
    conn: &Connection,
    scope: &Scope,
    select: &str,
    params: &[&dyn rusqlite::ToSql],
) -> rusqlite::Result<usize> {
    let doomed: Vec<(i64, String, String)> = conn
        .prepare_cached(select)?
        .query_map(params, |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    token_index::remove(conn, scope.as_str(), &doomed)?;
    let mut delete = conn.prepare_cached("DELETE FROM browser_trajectories WHERE id = ?1")?;
    for (id, _, _) in &doomed {
        delete.execute([id])?;
    }
    Ok(doomed.len())
}

/// The columns [`remove_selected`] reads.
const DOOMED_COLUMNS: &str = "id, coalesce(origin, ''), index_keys";

/// Records everything `run` leaves behind in `scope`, in the caller's transaction.
fn record_in(tx: &Connection, scope: &Scope, run: &FinishedRun, op: &str) -> Result<()> {
    put_trajectory(tx, scope, &run.trajectory, &run.tokens).map_err(|e| to_core(op, e))?;
    if !run.site.is_empty() {
        observe(tx, scope, &run.site, &run.written_by())?;
    }
    if let Some(manifest) = &run.manifest {
        let stored = if run.completes_stored {
            get_run(tx, scope, &manifest.run_id)?
        } else {
            None
        };
        match stored {
            Some(stored) => put_run(tx, scope, &stored.completed_by(manifest)),
            None => put_run(tx, scope, manifest),
        }
        .map_err(|e| to_core(op, e))?;
    }
    Ok(())
}

/// Deletes the browser memory of `scope`, or of one site of it with its origins.
fn forget(
    conn: &Connection,
    scope: &Scope,
    site: Option<(&str, &[String])>,
) -> rusqlite::Result<Forgotten> {
    let name = scope.as_str();
    let Some((site, origins)) = site else {
        let select = format!("SELECT {DOOMED_COLUMNS} FROM browser_trajectories WHERE scope = ?1");
        let trajectories = remove_selected(conn, scope, &select, &[&name])?;
        let run = |sql: &str| conn.prepare_cached(sql)?.execute([name]);
        return Ok(Forgotten {
            trajectories: trajectories as u64,
            sites: run("DELETE FROM browser_sites WHERE scope = ?1")? as u64,
            runs: run("DELETE FROM browser_runs WHERE scope = ?1")? as u64,
            hints: (run("DELETE FROM browser_hints WHERE scope = ?1")?
                + run("DELETE FROM browser_suite_summaries WHERE scope = ?1")?)
                as u64,
            held: run("DELETE FROM browser_held WHERE scope = ?1")? as u64,
        });
    };
    let select = format!(
        "SELECT {DOOMED_COLUMNS} FROM browser_trajectories WHERE scope = ?1 AND origin = ?2"
    );
    let mut trajectories = 0;
    for origin in origins {
        trajectories += remove_selected(conn, scope, &select, &[&name, origin])?;
    }
    let run = |sql: &str| conn.prepare_cached(sql)?.execute(params![name, site]);
    Ok(Forgotten {
        trajectories: trajectories as u64,
        sites: run("DELETE FROM browser_sites WHERE scope = ?1 AND site = ?2")? as u64,
        runs: run("DELETE FROM browser_runs WHERE scope = ?1 AND domain = ?2")? as u64,
        hints: 0,
        held: run("DELETE FROM browser_held WHERE scope = ?1 AND site = ?2")? as u64,
    })
}

/// Appends the forget of `item` of `scope`'s browser memory to the audit trail, in the
/// caller's transaction.
fn forgot(
    conn: &Connection,
    scope: &str,
    item: &str,
    by: &Provenance,
    detail: &str,
) -> rusqlite::Result<()> {
    audit_in(conn, "browser", Action::Forget, scope, item, by, detail)
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
            put_trajectory(tx, scope, trajectory, tokens)
                .and_then(|()| audit_write_run(tx, &trajectory.write_run(scope)))
                .map_err(|e| to_core(op, e))
        })
    }

    fn trajectory_get(&self, scope: &Scope, id: &str) -> Result<Option<Trajectory>> {
        self.read_with(|conn| get_trajectory(conn, scope, id))
    }

    fn trajectory_get_many(&self, scope: &Scope, ids: &[&str]) -> Result<Vec<Trajectory>> {
        // One read transaction for all of them, where the trait's default takes one each.
        self.read_with(|conn| {
            let mut found = Vec::with_capacity(ids.len());
            for id in ids {
                if let Some(trajectory) = get_trajectory(conn, scope, id)? {
                    found.push(trajectory);
                }
            }
            Ok(found)
        })
    }

    fn trajectory_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
    ) -> Result<Vec<Candidate>> {
        let tokenless = query.tokens.is_empty();
        self.read_with(|conn| {
            let tallies = tallies(conn, scope, query)
                .map_err(|e| to_core("find trajectory candidates", e))?;
            let known: Vec<_> = tallies.iter().map(|t| (t, indexed(t, tokenless))).collect();
            candidates_of(conn, &known)
        })
    }

    fn trajectory_top_candidates(
        &self,
        scope: &Scope,
        query: &CandidateQuery,
        rank: &dyn Fn(&IndexedCandidate) -> Option<f64>,
        margin: f64,
    ) -> Result<Vec<Candidate>> {
        // Ranked from the postings alone: only the rows of the candidates kept are read.
        let tokenless = query.tokens.is_empty();
        self.read_with(|conn| {
            let tallies = tallies(conn, scope, query)
                .map_err(|e| to_core("find trajectory candidates", e))?;
            let ranked: Vec<_> = tallies
                .iter()
                .filter_map(|t| {
                    let known = indexed(t, tokenless);
                    rank(&known).map(|r| ((t, known), r))
                })
                .collect();
            candidates_of(conn, &within_margin(ranked, margin))
        })
    }

    fn trajectory_list(&self, scope: &Scope) -> Result<Vec<Trajectory>> {
        self.read_with(|conn| {
            conn.prepare_cached(LIST_TRAJECTORIES)
                .and_then(|mut stmt| {
                    stmt.query_map([scope.as_str()], trajectory_from)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(|e| to_core("list trajectories", e))?
                .into_iter()
                .collect()
        })
    }

    fn trajectory_recent(&self, scope: &Scope, limit: usize) -> Result<Vec<Trajectory>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read_with(|conn| {
            conn.prepare_cached(RECENT_TRAJECTORIES)
                .and_then(|mut stmt| {
                    stmt.query_map(params![scope.as_str(), limit], trajectory_from)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(|e| to_core("list trajectories", e))?
                .into_iter()
                .collect()
        })
    }

    fn trajectory_recent_page(
        &self,
        scope: &Scope,
        from: u64,
        limit: usize,
    ) -> Result<Page<Trajectory>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        self.read_with(|conn| {
            let op = |e| to_core("list trajectories", e);
            let items = conn
                .prepare_cached(RECENT_TRAJECTORIES_FROM)
                .and_then(|mut stmt| {
                    stmt.query_map(params![scope.as_str(), limit, from], trajectory_from)?
                        .collect::<rusqlite::Result<Vec<_>>>()
                })
                .map_err(op)?
                .into_iter()
                .collect::<Result<Vec<_>>>()?;
            let total: i64 = conn
                .prepare_cached("SELECT count(*) FROM browser_trajectories WHERE scope = ?1")
                .and_then(|mut stmt| stmt.query_row([scope.as_str()], |r| r.get(0)))
                .map_err(op)?;
            Ok(Page {
                items,
                total: u64::try_from(total).unwrap_or(0),
            })
        })
    }

    fn trajectory_newest(&self, scope: &Scope) -> Result<Option<Timestamp>> {
        // One seek into `browser_trajectories_by_age`.
        let newest: Option<i64> = self.read("newest trajectory", |conn| {
            conn.prepare_cached(
                "SELECT max(recorded_at) FROM browser_trajectories WHERE scope = ?1",
            )?
            .query_row([scope.as_str()], |row| row.get(0))
        })?;
        Ok(newest.map(Timestamp::from_millis))
    }

    fn trajectory_count(&self, scope: &Scope) -> Result<u64> {
        let op = "count trajectories";
        let count: i64 = self.read(op, |conn| {
            conn.prepare_cached("SELECT count(*) FROM browser_trajectories WHERE scope = ?1")
                .and_then(|mut stmt| stmt.query_row([scope.as_str()], |r| r.get(0)))
        })?;
        Ok(u64::try_from(count).unwrap_or(0))
    }

    fn trajectory_prune(&self, scope: &Scope, cutoff: Timestamp) -> Result<usize> {
        let op = "prune trajectories";
        self.write(op, |tx| {
            prune(tx, scope, cutoff).map_err(|e| to_core(op, e))
        })
    }

    fn trajectory_forget(&self, scope: &Scope, id: &str, by: &Provenance) -> Result<bool> {
        let op = "forget trajectory";
        let select = format!(
            "SELECT {DOOMED_COLUMNS} FROM browser_trajectories WHERE scope = ?1 AND traj_id = ?2"
        );
        let removed = self.write(op, |tx| {
            let run = || -> rusqlite::Result<usize> {
                let removed = remove_selected(tx, scope, &select, &[&scope.as_str(), &id])?;
                let detail = forget_detail(&[(removed as u64, "trajectory", "trajectories")]);
                forgot(tx, scope.as_str(), id, by, &detail)?;
                Ok(removed)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if removed > 0 {
            self.erase_freed_pages()?;
        }
        Ok(removed > 0)
    }

    fn trajectory_forget_by(
        &self,
        scope: Option<&Scope>,
        writer: &Writer,
        by: &Provenance,
    ) -> Result<ForgotBy> {
        writer.check()?;
        let op = "forget trajectories by writer";
        // Only placeholders are added to the text; every value is bound.
        let source = writer.source.as_ref().map(ToString::to_string);
        let mut find =
            "SELECT scope, traj_id FROM browser_trajectories WHERE source IS NOT NULL".to_owned();
        // The sites whose log holds an observation of the writer's.
        let mut find_sites =
            "SELECT DISTINCT scope, site FROM browser_site_log WHERE source IS NOT NULL".to_owned();
        let mut values: Vec<&str> = Vec::new();
        for (column, value) in [
            ("source", source.as_deref()),
            ("session", writer.session.as_deref()),
            ("client", writer.client.as_deref()),
            ("scope", scope.map(Scope::as_str)),
        ] {
            if let Some(value) = value {
                find.push_str(&format!(" AND {column} = ?"));
                find_sites.push_str(&format!(" AND {column} = ?"));
                values.push(value);
            }
        }
        find.push_str(" ORDER BY scope, traj_id");
        find_sites.push_str(" ORDER BY scope, site");
        // The runs held for review by the writer: the same filter on `browser_held`, where
        // the writer's session is `source_session`.
        let mut find_held = "SELECT scope, id FROM browser_held WHERE true".to_owned();
        for (column, value) in [
            ("source", source.as_deref()),
            ("source_session", writer.session.as_deref()),
            ("client", writer.client.as_deref()),
            ("scope", scope.map(Scope::as_str)),
        ] {
            if value.is_some() {
                find_held.push_str(&format!(" AND {column} = ?"));
            }
        }
        find_held.push_str(" ORDER BY scope, id");
        let one = format!(
            "SELECT {DOOMED_COLUMNS} FROM browser_trajectories WHERE scope = ?1 AND traj_id = ?2"
        );
        let gone = self.write(op, |tx| {
            let run = || -> rusqlite::Result<Vec<(Scope, String)>> {
                let found: Vec<(String, String)> = tx
                    .prepare(&find)?
                    .query_map(rusqlite::params_from_iter(&values), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                let mut gone = Vec::with_capacity(found.len());
                for (name, id) in found {
                    let scope = Scope::new(&name).map_err(|e| {
                        rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
                    })?;
                    remove_selected(tx, &scope, &one, &[&name, &id])?;
                    let detail = FORGOTTEN_TRAJECTORY;
                    forgot(tx, &name, &id, by, detail)?;
                    gone.push((scope, id));
                }
                let held: Vec<(String, String)> = tx
                    .prepare(&find_held)?
                    .query_map(rusqlite::params_from_iter(&values), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?
                    .collect::<rusqlite::Result<_>>()?;
                let mut delete =
                    tx.prepare_cached("DELETE FROM browser_held WHERE scope = ?1 AND id = ?2")?;
                for (name, id) in held {
                    let scope = Scope::new(&name).map_err(|e| {
                        rusqlite::Error::ToSqlConversionFailure(e.to_string().into())
                    })?;
                    delete.execute(params![name, id])?;
                    forgot(tx, &name, &HeldRun::item(&id), by, FORGOTTEN_HELD_RUN)?;
                    gone.push((scope, id));
                }
                Ok(gone)
            };
            let runs = run().map_err(|e| to_core(op, e))?;
            let taught: Vec<(String, String)> = tx
                .prepare(&find_sites)
                .and_then(|mut s| {
                    s.query_map(rusqlite::params_from_iter(&values), |r| {
                        Ok((r.get(0)?, r.get(1)?))
                    })?
                    .collect()
                })
                .map_err(|e| to_core(op, e))?;
            let mut sites = Vec::with_capacity(taught.len());
            for (name, site) in taught {
                let scope = Scope::new(&name)?;
                let Some(mut log) = load_log(tx, &scope, &site)? else {
                    continue;
                };
                let Some((n, rebuilt)) = log.take_back(writer) else {
                    continue;
                };
                let write = || -> rusqlite::Result<()> {
                    if let Some(rebuilt) = &rebuilt {
                        put_site(tx, &scope, rebuilt)?;
                        store_log(tx, &scope, &site, &log)?;
                    } else {
                        tx.prepare_cached(
                            "DELETE FROM browser_sites WHERE scope = ?1 AND site = ?2",
                        )?
                        .execute(params![name, site])?;
                    }
                    let item = Forgotten::item(Some(&site));
                    forgot(tx, &name, &item, by, &forgotten_observations(n))
                };
                write().map_err(|e| to_core(op, e))?;
                sites.push((scope, site, n));
            }
            Ok(ForgotBy { runs, sites })
        })?;
        if !gone.runs.is_empty() || !gone.sites.is_empty() {
            self.erase_freed_pages()?;
        }
        Ok(gone)
    }
}

/// `element, last_ref, stable_selector, success_count, last_used`.
type SelectorRow = (String, Option<String>, Option<String>, i64, String);

fn decode_sessions(site: &str, text: &str) -> Result<Vec<SessionEntry>> {
    codec::decode_sessions(text).ok_or_else(|| {
        Error::corrupt(
            format!("browser_sites row of site {site:?}"),
            "the sessions column is not an encoded session list",
        )
    })
}

fn get_site(conn: &Connection, scope: &Scope, site: &str) -> Result<Option<SiteMemory>> {
    let op = "read site memory";
    let fail = |e| to_core(op, e);
    let head: Option<(String, String, String, String)> = conn
        .prepare_cached(
            "SELECT label, knowledge_updated_at, selectors_updated_at, sessions FROM browser_sites
             WHERE scope = ?1 AND site = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![scope.as_str(), site], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })
            .optional()
        })
        .map_err(fail)?;
    let Some((label, knowledge_updated_at, selectors_updated_at, sessions)) = head else {
        return Ok(None);
    };
    let sessions = decode_sessions(site, &sessions)?;
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
    conn.prepare_cached("DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2")?
        .execute(key)?;
    // The site stored whole is its own base: its log starts again.
    conn.prepare_cached("DELETE FROM browser_site_log WHERE scope = ?1 AND site = ?2")?
        .execute(key)?;
    conn.prepare_cached("DELETE FROM browser_site_base WHERE scope = ?1 AND site = ?2")?
        .execute(key)?;
    conn.prepare_cached("DELETE FROM browser_selectors WHERE scope = ?1 AND site = ?2")?
        .execute(key)?;
    let next_seq = m.facts.len().max(m.selectors.len()) as i64;
    conn.prepare_cached(
        "INSERT INTO browser_sites (scope, site, label, knowledge_updated_at, selectors_updated_at, sessions, next_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (scope, site) DO UPDATE SET label = excluded.label,
         knowledge_updated_at = excluded.knowledge_updated_at, selectors_updated_at = excluded.selectors_updated_at,
         sessions = excluded.sessions, next_seq = excluded.next_seq",
    )?
    .execute(params![
        scope.as_str(),
        m.site,
        m.label,
        m.knowledge_updated_at,
        m.selectors_updated_at,
        codec::encode_sessions(&m.sessions),
        next_seq
    ])?;
    let mut fact = conn.prepare_cached(
        "INSERT INTO browser_facts (scope, site, kind, key, seq, value, confidence, sources, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (seq, f) in m.facts.iter().enumerate() {
        fact.execute(params![
            scope.as_str(),
            m.site,
            f.kind.as_str(),
            f.key,
            seq as i64,
            f.value,
            f.confidence,
            f.sources,
            f.last_seen
        ])?;
    }
    let mut selector = conn.prepare_cached(
        "INSERT INTO browser_selectors (scope, site, element, seq, last_ref, stable_selector, success_count, last_used)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    for (seq, e) in m.selectors.iter().enumerate() {
        selector.execute(params![
            scope.as_str(),
            m.site,
            e.element,
            seq as i64,
            e.last_ref,
            e.stable_selector,
            e.success_count,
            e.last_used
        ])?;
    }
    Ok(())
}

/// Applies an observation row by row, touching only the rows it changes: the site row (which
/// holds the session log and the next sequence number), the facts sharing a kind and key with
/// an observed fact, and the selectors observed. The rules are the shared ones of
/// `agent_memory_core::store::browser`.
fn observe(conn: &Connection, scope: &Scope, o: &SiteObservation, by: &Provenance) -> Result<()> {
    let op = "observe site";
    let head: Option<(String, i64, bool)> = conn
        .prepare_cached(
            "SELECT sessions, next_seq,
               EXISTS (SELECT 1 FROM browser_site_base WHERE scope = ?1 AND site = ?2)
             FROM browser_sites WHERE scope = ?1 AND site = ?2",
        )
        .and_then(|mut s| {
            s.query_row(params![scope.as_str(), o.site], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()
        })
        .map_err(|e| to_core(op, e))?;
    // A site without a log starts one from what it holds now.
    let base = match &head {
        Some((_, _, true)) => None,
        Some(_) => get_site(conn, scope, &o.site)?,
        None => Some(SiteMemory {
            site: o.site.clone(),
            ..SiteMemory::default()
        }),
    };
    let (sessions, next_seq, _) = head.unwrap_or_default();
    let sessions = match &o.session {
        Some(session) => {
            let mut log = decode_sessions(&o.site, &sessions)?;
            agent_memory_core::store::browser::append_session(&mut log, session.clone());
            codec::encode_sessions(&log)
        }
        None => sessions,
    };
    observe_rows(conn, scope, o, &sessions, next_seq).map_err(|e| to_core(op, e))?;
    let log = || -> rusqlite::Result<(i64, i64)> {
        if let Some(base) = &base {
            put_base(conn, scope, &o.site, base)?;
        }
        // The log's first and next numbers: entries are numbered without a gap.
        let (first, next): (i64, i64) = conn
            .prepare_cached(
                "SELECT coalesce((SELECT min(seq) FROM browser_site_log WHERE scope = ?1 AND site = ?2), 0),
                        coalesce((SELECT max(seq) + 1 FROM browser_site_log WHERE scope = ?1 AND site = ?2), 0)",
            )?
            .query_row(params![scope.as_str(), o.site], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let event = LogEvent::encode_observed(o);
        insert_entry(conn, scope, &o.site, next, Some(by), &event)?;
        Ok((first, next))
    };
    let (first, next) = log().map_err(|e| to_core(op, e))?;
    // At `LOG_FOLD_AT` entries the oldest fold into the base, and only they are deleted: the
    // kept entries keep their numbers.
    let count = next + 1 - first;
    if usize::try_from(count).is_ok_and(|count| count >= LOG_FOLD_AT) {
        let cut = next + 1 - LOG_KEEP as i64;
        if let Some(folded) = load_log_below(conn, scope, &o.site, cut)? {
            let fold = || -> rusqlite::Result<()> {
                put_base(conn, scope, &o.site, &folded.rebuild())?;
                conn.prepare_cached(
                    "DELETE FROM browser_site_log WHERE scope = ?1 AND site = ?2 AND seq < ?3",
                )?
                .execute(params![scope.as_str(), o.site, cut])?;
                Ok(())
            };
            fold().map_err(|e| to_core(op, e))?;
        }
    }
    Ok(())
}

/// Inserts an entry (its writer and encoded event) as number `seq` of the log of `site`,
/// in the caller's transaction.
fn insert_entry(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    seq: i64,
    by: Option<&Provenance>,
    event: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO browser_site_log (scope, site, seq, source, session, client, written_at, event)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        scope.as_str(),
        site,
        seq,
        by.map(|b| b.source.to_string()),
        by.and_then(|b| b.session.as_deref()),
        by.and_then(|b| b.client.as_deref()),
        by.map(|b| b.at.as_millis()),
        event
    ])?;
    Ok(())
}

/// Stores the base of the log of `site`, in the caller's transaction.
fn put_base(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    base: &SiteMemory,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO browser_site_base (scope, site, base) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope, site) DO UPDATE SET base = excluded.base",
    )?
    .execute(params![scope.as_str(), site, SiteLog::encode_base(base)])?;
    Ok(())
}

/// The log of `site` (its base and every entry, oldest first), if it has one.
fn load_log(conn: &Connection, scope: &Scope, site: &str) -> Result<Option<SiteLog>> {
    load_log_below(conn, scope, site, i64::MAX)
}

/// The base of the log of `site` and its entries numbered below `below`, oldest first, if
/// it has a log.
fn load_log_below(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    below: i64,
) -> Result<Option<SiteLog>> {
    let op = "read a site's log";
    let location = || format!("browser_site_log of site {site:?}");
    let base: Option<String> = conn
        .prepare_cached("SELECT base FROM browser_site_base WHERE scope = ?1 AND site = ?2")
        .and_then(|mut s| {
            s.query_row(params![scope.as_str(), site], |r| r.get(0))
                .optional()
        })
        .map_err(|e| to_core(op, e))?;
    let Some(base) = base else {
        return Ok(None);
    };
    let base = SiteLog::decode_base(&base)
        .ok_or_else(|| Error::corrupt(location(), "the log's base is not an encoded site"))?;
    type Row = (
        (Option<String>, Option<String>, Option<String>),
        Option<i64>,
        String,
    );
    let rows: Vec<Row> = conn
        .prepare_cached(
            "SELECT source, session, client, written_at, event FROM browser_site_log
             WHERE scope = ?1 AND site = ?2 AND seq < ?3 ORDER BY seq",
        )
        .and_then(|mut s| {
            s.query_map(params![scope.as_str(), site, below], |r| {
                Ok((writer_columns(r, 0)?, r.get(3)?, r.get(4)?))
            })?
            .collect()
        })
        .map_err(|e| to_core(op, e))?;
    let mut entries = Vec::with_capacity(rows.len());
    for (writer, at, event) in rows {
        let at = Timestamp::from_millis(at.unwrap_or_default());
        entries.push(LogEntry {
            by: stored_writer(writer, at, "browser_site_log")?,
            event: LogEvent::decode(&event)
                .ok_or_else(|| Error::corrupt(location(), "an entry is not an encoded event"))?,
        });
    }
    Ok(Some(SiteLog { base, entries }))
}

/// Replaces the log of `site` with `log`, in the caller's transaction.
fn store_log(conn: &Connection, scope: &Scope, site: &str, log: &SiteLog) -> rusqlite::Result<()> {
    put_base(conn, scope, site, &log.base)?;
    conn.prepare_cached("DELETE FROM browser_site_log WHERE scope = ?1 AND site = ?2")?
        .execute(params![scope.as_str(), site])?;
    for (seq, entry) in (0..).zip(&log.entries) {
        let event = entry.event.encode();
        insert_entry(conn, scope, site, seq, entry.by.as_ref(), &event)?;
    }
    Ok(())
}

fn observe_rows(
    conn: &Connection,
    scope: &Scope,
    o: &SiteObservation,
    sessions: &str,
    next_seq: i64,
) -> rusqlite::Result<()> {
    let now = &o.observed_at;
    let knowledge_changed = o.session.is_some() || !o.facts.is_empty();
    let selectors_changed = !o.selectors.is_empty();
    conn.prepare_cached(
        "INSERT INTO browser_sites (scope, site, label, knowledge_updated_at, selectors_updated_at, sessions)
         VALUES (?1, ?2, ?3, CASE WHEN ?4 THEN ?6 ELSE '' END, CASE WHEN ?5 THEN ?6 ELSE '' END, ?7)
         ON CONFLICT (scope, site) DO UPDATE SET
           label = CASE WHEN label = '' THEN excluded.label ELSE label END,
           knowledge_updated_at = CASE WHEN ?4 THEN ?6 ELSE knowledge_updated_at END,
           selectors_updated_at = CASE WHEN ?5 THEN ?6 ELSE selectors_updated_at END,
           sessions = excluded.sessions",
    )?
    .execute(params![
        scope.as_str(),
        o.site,
        o.label,
        knowledge_changed,
        selectors_changed,
        now,
        sessions
    ])?;
    let mut seq = next_seq;
    for fact in &o.facts {
        observe_one_fact(conn, scope, &o.site, fact, now, &mut seq)?;
    }
    if !o.facts.is_empty() {
        conn.prepare_cached(
            "DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2 AND confidence < ?3",
        )?
        .execute(params![
            scope.as_str(),
            o.site,
            agent_memory_core::store::browser::PRUNE_BELOW
        ])?;
    }
    for (element, selector) in &o.selectors {
        observe_selector(conn, scope, &o.site, element, selector, now, &mut seq)?;
    }
    if seq != next_seq {
        conn.prepare_cached(
            "UPDATE browser_sites SET next_seq = ?3 WHERE scope = ?1 AND site = ?2",
        )?
        .execute(params![scope.as_str(), o.site, seq])?;
    }
    Ok(())
}

fn observe_one_fact(
    conn: &Connection,
    scope: &Scope,
    site: &str,
    fact: &agent_memory_core::store::browser::FactObservation,
    now: &str,
    next_seq: &mut i64,
) -> rusqlite::Result<()> {
    let key = params![scope.as_str(), site, fact.kind.as_str(), fact.key];
    let rows: Vec<(i64, String, f64, i64, String)> = conn
        .prepare_cached(
            "SELECT seq, value, confidence, sources, last_seen FROM browser_facts
             WHERE scope = ?1 AND site = ?2 AND kind = ?3 AND key = ?4 ORDER BY seq",
        )?
        .query_map(key, |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let seqs: Vec<i64> = rows.iter().map(|r| r.0).collect();
    let before: Vec<Fact> = rows
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
    let mut group = before.clone();
    agent_memory_core::store::browser::observe_fact(
        &mut group,
        fact.kind,
        &fact.key,
        &fact.value,
        now,
    );
    // The rule changes facts in place, drops those that fall below the pruning threshold and
    // appends at most one new fact, keeping the order: walk both lists to pair each remaining
    // fact with its row, so every fact keeps its sequence number and only changed rows are
    // written.
    let mut put = conn.prepare_cached(
        "INSERT OR REPLACE INTO browser_facts (scope, site, kind, key, seq, value, confidence, sources, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    let mut drop = conn.prepare_cached(
        "DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2 AND kind = ?3 AND key = ?4 AND seq = ?5",
    )?;
    let mut forget = |seq: &i64| {
        drop.execute(params![
            scope.as_str(),
            site,
            fact.kind.as_str(),
            fact.key,
            seq
        ])
    };
    let mut old = before.iter().zip(&seqs);
    for f in &group {
        // Skip (and delete) the old facts the rule pruned before this one.
        let mut seq = None;
        for (o, s) in old.by_ref() {
            if o.value == f.value {
                seq = Some((o, *s));
                break;
            }
            forget(s)?;
        }
        let seq = match seq {
            Some((o, _)) if o == f => continue,
            Some((_, s)) => s,
            None => {
                let s = *next_seq;
                *next_seq += 1;
                s
            }
        };
        put.execute(params![
            scope.as_str(),
            site,
            f.kind.as_str(),
            f.key,
            seq,
            f.value,
            f.confidence,
            f.sources,
            f.last_seen
        ])?;
    }
    for (_, s) in old {
        forget(s)?;
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
    next_seq: &mut i64,
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
        conn.prepare_cached(
            "INSERT INTO browser_selectors (scope, site, element, seq, last_ref, stable_selector, success_count, last_used)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7)",
        )?
        .execute(params![
            scope.as_str(), site, element, *next_seq,
            is_ref.then_some(selector), (!is_ref).then_some(selector), now
        ])?;
        *next_seq += 1;
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

    fn site_observe(
        &self,
        scope: &Scope,
        observation: &SiteObservation,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let write = BrowserWrite::site(&observation.site);
        let run = write.write_run(scope, by, self.clock.now());
        self.write("observe site", |tx| {
            observe(tx, scope, observation, &run.by)?;
            audit_write_run(tx, &run).map_err(|e| to_core("observe site", e))
        })
    }

    fn site_forget_knowledge(
        &self,
        scope: &Scope,
        site: &str,
        sessions: bool,
        at: &str,
    ) -> Result<bool> {
        let op = "forget site knowledge";
        let no_sessions = codec::encode_sessions(&[]);
        let forgotten = self.write(op, |tx| {
            let key = params![scope.as_str(), site];
            let changed = tx
                .prepare_cached(
                    "UPDATE browser_sites SET knowledge_updated_at = ?3,
                     sessions = CASE WHEN ?4 THEN ?5 ELSE sessions END
                     WHERE scope = ?1 AND site = ?2",
                )
                .and_then(|mut s| {
                    s.execute(params![scope.as_str(), site, at, sessions, no_sessions])
                })
                .map_err(|e| to_core(op, e))?;
            if changed == 0 {
                return Ok(false);
            }
            tx.prepare_cached("DELETE FROM browser_facts WHERE scope = ?1 AND site = ?2")
                .and_then(|mut s| s.execute(key))
                .map_err(|e| to_core(op, e))?;
            if let Some(mut log) = load_log(tx, scope, site)? {
                log.forget_knowledge(sessions, at);
                store_log(tx, scope, site, &log).map_err(|e| to_core(op, e))?;
            }
            Ok(true)
        })?;
        // The facts (and sessions) are forgotten as every forget is: their text erased from
        // the file and its log, not left in free pages.
        if forgotten {
            self.erase_freed_pages()?;
        }
        Ok(forgotten)
    }

    fn site_log(&self, scope: &Scope, site: &str) -> Result<Option<SiteLog>> {
        self.read_with(|conn| load_log(conn, scope, site))
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
    conn.prepare_cached(
        "INSERT INTO browser_runs (scope, run_id, session_id, parent_run_id, status, goal, domain, start_url,
         current_url, final_url, started_at, updated_at, completed_at, success, summary, turn_count, result, reason,
         artifact_paths)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)
         ON CONFLICT (scope, run_id) DO UPDATE SET session_id = excluded.session_id,
         parent_run_id = excluded.parent_run_id, status = excluded.status, goal = excluded.goal,
         domain = excluded.domain, start_url = excluded.start_url, current_url = excluded.current_url,
         final_url = excluded.final_url, started_at = excluded.started_at, updated_at = excluded.updated_at,
         completed_at = excluded.completed_at, success = excluded.success, summary = excluded.summary,
         turn_count = excluded.turn_count, result = excluded.result, reason = excluded.reason,
         artifact_paths = excluded.artifact_paths",
    )?
    .execute(params![
        scope.as_str(), m.run_id, m.session_id, m.parent_run_id, m.status.as_str(), m.goal, m.domain, m.start_url,
        m.current_url, m.final_url, m.started_at, m.updated_at, m.completed_at, m.success, m.summary, m.turn_count,
        m.result, m.reason, encode_texts(m.artifact_paths.iter().map(String::as_str))
    ])?;
    Ok(())
}

/// A run manifest's columns, in the order [`run_from`] reads them (a macro, so that the
/// statements below are `concat!` constants rather than text formatted on every call).
macro_rules! run_columns {
    () => {
        "run_id, session_id, parent_run_id, status, goal, domain, start_url, current_url, final_url,
     started_at, updated_at, completed_at, success, summary, turn_count, result, reason, artifact_paths"
    };
}

/// One run manifest by scope and id.
const GET_RUN: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM browser_runs WHERE scope = ?1 AND run_id = ?2"
);

/// A scope's run manifests, filtered, newest first.
const LIST_RUNS: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM browser_runs WHERE scope = ?1
     AND (?2 IS NULL OR domain = ?2) AND (?3 IS NULL OR session_id = ?3) AND (?4 IS NULL OR status = ?4)
     ORDER BY updated_at DESC, run_id LIMIT ?5"
);

/// Every manifest of scope `?1` in [`LIST_RUNS`]' order, at most `?2` from position `?3`.
const RUNS_FROM: &str = concat!(
    "SELECT ",
    run_columns!(),
    " FROM browser_runs WHERE scope = ?1 ORDER BY updated_at DESC, run_id LIMIT ?2 OFFSET ?3"
);

/// A manifest with its stored status text, or the problem with the row.
fn run_from(r: &rusqlite::Row<'_>) -> rusqlite::Result<(RunManifest, String, bool)> {
    let run_id: String = r.get(0)?;
    let artifacts = decode_texts(r.get_ref(17)?.as_str()?);
    let artifacts_ok = artifacts.is_some();
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
            artifact_paths: artifacts.unwrap_or_default(),
            turn_count: u32::try_from(turn_count).unwrap_or(u32::MAX),
            result: r.get(15)?,
            reason: r.get(16)?,
        },
        status,
        artifacts_ok,
    ))
}

fn checked(found: (RunManifest, String, bool)) -> Result<RunManifest> {
    let (manifest, status, artifacts_ok) = found;
    let location = || format!("browser_runs row {:?}", manifest.run_id);
    if RunStatus::parse(&status).is_none() {
        return Err(Error::corrupt(
            location(),
            format!("unknown status {status:?}"),
        ));
    }
    if !artifacts_ok {
        return Err(Error::corrupt(
            location(),
            "the artifact_paths column is not an encoded list",
        ));
    }
    Ok(manifest)
}

impl RunManifestStore for SqliteStore {
    fn run_put(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let op = "store run manifest";
        let write = BrowserWrite::run(&manifest.run_id);
        let run = write.write_run(scope, by, self.clock.now());
        self.write(op, |tx| {
            put_run(tx, scope, manifest)
                .and_then(|()| audit_write_run(tx, &run))
                .map_err(|e| to_core(op, e))
        })
    }

    fn run_forget(&self, scope: &Scope, run_id: &str, by: &Provenance) -> Result<bool> {
        let op = "forget run manifest";
        let removed = self.write(op, |tx| {
            let run = || -> rusqlite::Result<usize> {
                let removed = tx
                    .prepare_cached("DELETE FROM browser_runs WHERE scope = ?1 AND run_id = ?2")?
                    .execute(params![scope.as_str(), run_id])?;
                let detail = forget_detail(&[(removed as u64, "run", "runs")]);
                let item = run_item(run_id);
                forgot(tx, scope.as_str(), &item, by, &detail)?;
                Ok(removed)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if removed > 0 {
            self.erase_freed_pages()?;
        }
        Ok(removed > 0)
    }

    fn run_start(
        &self,
        scope: &Scope,
        manifest: &RunManifest,
        by: Option<&Provenance>,
    ) -> Result<Option<RunManifest>> {
        let op = "start run";
        let write = BrowserWrite::run(&manifest.run_id);
        let run = write.write_run(scope, by, self.clock.now());
        // One immediate transaction: no other start of the run can come between the look and
        // the insert.
        self.write(op, |tx| match get_run(tx, scope, &manifest.run_id)? {
            Some(stored) => run_start_outcome(stored, manifest).map(Some),
            None => {
                put_run(tx, scope, manifest)
                    .and_then(|()| audit_write_run(tx, &run))
                    .map_err(|e| to_core(op, e))?;
                Ok(None)
            }
        })
    }

    fn run_get(&self, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
        self.read_with(|conn| get_run(conn, scope, run_id))
    }

    fn run_list(&self, scope: &Scope, filter: &RunFilter) -> Result<Vec<RunManifest>> {
        let limit = filter
            .limit
            .filter(|&l| l > 0)
            .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
        let found = self.read("list run manifests", |conn| {
            conn.prepare_cached(LIST_RUNS)?
                .query_map(
                    params![
                        scope.as_str(),
                        filter.domain,
                        filter.session_id,
                        filter.status.map(RunStatus::as_str),
                        limit
                    ],
                    run_from,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()
        })?;
        found.into_iter().map(checked).collect()
    }

    fn run_page(&self, scope: &Scope, from: u64, limit: usize) -> Result<Page<RunManifest>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let (found, total) = self.read("list run manifests", |conn| {
            let found = conn
                .prepare_cached(RUNS_FROM)?
                .query_map(params![scope.as_str(), limit, from], run_from)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = conn
                .prepare_cached("SELECT count(*) FROM browser_runs WHERE scope = ?1")?
                .query_row([scope.as_str()], |r| r.get(0))?;
            Ok((found, total))
        })?;
        Ok(Page {
            items: found.into_iter().map(checked).collect::<Result<_>>()?,
            total: u64::try_from(total).unwrap_or(0),
        })
    }
}

fn get_hints(conn: &Connection, scope: &Scope) -> rusqlite::Result<Option<(String, String)>> {
    conn.prepare_cached("SELECT hints, updated_at FROM browser_hints WHERE scope = ?1")?
        .query_row([scope.as_str()], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()
}

fn put_hints(
    conn: &Connection,
    scope: &Scope,
    hints: &str,
    updated_at: &str,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO browser_hints (scope, hints, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope) DO UPDATE SET hints = excluded.hints, updated_at = excluded.updated_at",
    )?
    .execute(params![scope.as_str(), hints, updated_at])?;
    Ok(())
}

fn put_suite_summary(
    conn: &Connection,
    scope: &Scope,
    summary: &SuiteSummary,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO browser_suite_summaries (scope, id, json) VALUES (?1, ?2, ?3)
         ON CONFLICT (scope, id) DO UPDATE SET json = excluded.json",
    )?
    .execute(params![scope.as_str(), summary.id, summary.json])?;
    Ok(())
}

fn get_run(conn: &Connection, scope: &Scope, run_id: &str) -> Result<Option<RunManifest>> {
    let found = conn
        .prepare_cached(GET_RUN)
        .and_then(|mut s| {
            s.query_row(params![scope.as_str(), run_id], run_from)
                .optional()
        })
        .map_err(|e| to_core("read run manifest", e))?;
    found.map(checked).transpose()
}

impl HintStore for SqliteStore {
    fn hints_get(&self, scope: &Scope) -> Result<Option<(String, String)>> {
        self.read("read hints", |conn| get_hints(conn, scope))
    }

    fn hints_put(
        &self,
        scope: &Scope,
        hints: &str,
        updated_at: &str,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let op = "store hints";
        let write = BrowserWrite::hints();
        let run = write.write_run(scope, by, self.clock.now());
        self.write(op, |tx| {
            put_hints(tx, scope, hints, updated_at)
                .and_then(|()| audit_write_run(tx, &run))
                .map_err(|e| to_core(op, e))
        })
    }

    fn suite_summary_put(
        &self,
        scope: &Scope,
        summary: &SuiteSummary,
        by: Option<&Provenance>,
    ) -> Result<()> {
        let op = "store suite summary";
        let write = BrowserWrite::suite_summary();
        let run = write.write_run(scope, by, self.clock.now());
        self.write(op, |tx| {
            put_suite_summary(tx, scope, summary)
                .and_then(|()| audit_write_run(tx, &run))
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
            record_in(tx, scope, run, op)?;
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
            .map_err(|e| to_core(op, e))
        })
    }

    fn run_hold(&self, scope: &Scope, held: &HeldRun) -> Result<()> {
        let op = "hold finished run";
        self.write(op, |tx| {
            let by = &held.written_by;
            let run = || -> rusqlite::Result<usize> {
                let inserted = tx
                    .prepare_cached(
                        "INSERT INTO browser_held (scope, id, site, goal, reasons, run, source, \
                         source_session, client, held_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT DO NOTHING",
                    )?
                    .execute(params![
                        scope.as_str(),
                        held.id,
                        held.site,
                        held.goal,
                        held.reasons_text(),
                        held.run,
                        by.source.to_string(),
                        by.session,
                        by.client,
                        by.at.as_millis(),
                    ])?;
                if inserted == 1 {
                    audit_in(
                        tx,
                        "browser",
                        Action::Write,
                        scope.as_str(),
                        &HeldRun::item(&held.id),
                        by,
                        &held.detail(),
                    )?;
                }
                Ok(inserted)
            };
            match run().map_err(|e| to_core(op, e))? {
                1 => Ok(()),
                _ => Err(HeldRun::already_held(&held.id)),
            }
        })
    }

    fn runs_held(&self, scope: Option<&Scope>, limit: usize) -> Result<Vec<(Scope, HeldRun)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT {HELD_COLUMNS} FROM browser_held WHERE (?1 IS NULL OR scope = ?1) \
             ORDER BY held_at, scope, id LIMIT ?2"
        );
        held_runs(self, &sql, params![scope.map(Scope::as_str), limit])
    }

    fn run_held(&self, scope: &Scope, id: &str) -> Result<Option<HeldRun>> {
        let sql = format!("SELECT {HELD_COLUMNS} FROM browser_held WHERE scope = ?1 AND id = ?2");
        let found = held_runs(self, &sql, params![scope.as_str(), id])?;
        Ok(found.into_iter().next().map(|(_, held)| held))
    }

    fn run_decide(
        &self,
        scope: &Scope,
        id: &str,
        approve: Option<Approval<'_>>,
        by: &Provenance,
    ) -> Result<bool> {
        for vouch in approve.map_or(&[][..], |a| a.vouches) {
            vouch.check()?;
        }
        let op = "decide on a held run";
        let decided = self.write(op, |tx| {
            let deleted = tx
                .prepare_cached("DELETE FROM browser_held WHERE scope = ?1 AND id = ?2")
                .and_then(|mut stmt| stmt.execute(params![scope.as_str(), id]))
                .map_err(|e| to_core(op, e))?;
            if deleted == 0 {
                return Ok(false);
            }
            let action = match approve {
                Some(approval) => {
                    record_in(tx, scope, approval.run, op)?;
                    keep_vouches(tx, approval.vouches, by).map_err(|e| to_core(op, e))?;
                    Action::Approve
                }
                None => Action::Reject,
            };
            audit_in(
                tx,
                HeldRun::MEMORY,
                action,
                scope.as_str(),
                &HeldRun::item(id),
                by,
                &HeldRun::decision_detail(approve),
            )
            .map_err(|e| to_core(op, e))?;
            Ok(true)
        })?;
        if decided && approve.is_none() {
            self.erase_freed_pages()?;
        }
        Ok(decided)
    }

    fn browser_scopes(&self) -> Result<Vec<Scope>> {
        let names: Vec<String> = self.read("list browser scopes", |conn| {
            conn.prepare_cached(
                "SELECT scope FROM browser_trajectories UNION SELECT scope FROM browser_sites
                 UNION SELECT scope FROM browser_runs UNION SELECT scope FROM browser_hints
                 UNION SELECT scope FROM browser_suite_summaries UNION SELECT scope FROM browser_held \
                 ORDER BY 1",
            )?
            .query_map([], |r| r.get(0))?
            .collect()
        })?;
        names
            .into_iter()
            .map(|name| {
                Scope::new(name).map_err(|e| Error::corrupt("browser scope", e.to_string()))
            })
            .collect()
    }

    fn forget_browser(
        &self,
        scope: &Scope,
        site: Option<(&str, &[String])>,
        by: &Provenance,
    ) -> Result<Forgotten> {
        let op = "forget browser memory";
        let forgotten = self.write(op, |tx| {
            let run = || -> rusqlite::Result<Forgotten> {
                let forgotten = forget(tx, scope, site)?;
                let item = Forgotten::item(site.map(|(key, _)| key));
                let detail = forgotten.detail();
                forgot(tx, scope.as_str(), &item, by, &detail)?;
                Ok(forgotten)
            };
            run().map_err(|e| to_core(op, e))
        })?;
        if forgotten != Forgotten::default() {
            self.erase_freed_pages()?;
        }
        Ok(forgotten)
    }

    fn store_image(
        &self,
        scope: &Scope,
        image: &MemoryImage,
        by: Option<&Provenance>,
    ) -> Result<ImageStored> {
        let op = "store a memory image";
        image.check_site_logs()?;
        let by = ImageStored::writer(by, self.clock.now());
        self.write(op, |tx| {
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
                )
                .map_err(|e| to_core(op, e))?;
            }
            Ok(stored)
        })
    }
}

/// Stores every record of `image` that differs from the stored one, in the caller's
/// transaction. An error names the record.
fn store_image(conn: &Connection, scope: &Scope, image: &MemoryImage) -> Result<ImageStored> {
    let op = "store a memory image";
    let mut stored = ImageStored::default();
    let mut count = |changed: bool| {
        if changed {
            stored.written += 1;
        } else {
            stored.unchanged += 1;
        }
    };
    for (t, tokens) in &image.trajectories {
        let changed = !get_trajectory(conn, scope, &t.id)?.is_some_and(|s| s.unchanged_by(t));
        if changed {
            put_trajectory(conn, scope, t, tokens)
                .map_err(|e| item_error(&format!("trajectory {:?}", t.id), op, e))?;
        }
        count(changed);
    }
    for site in &image.sites {
        let stored_site = get_site(conn, scope, &site.site)?;
        let changed = image.site_changed(site, stored_site.as_ref(), || {
            load_log(conn, scope, &site.site)
        })?;
        if changed {
            let log = image.site_logs.get(&site.site);
            put_site(conn, scope, site)
                .and_then(|()| log.map_or(Ok(()), |log| store_log(conn, scope, &site.site, log)))
                .map_err(|e| item_error(&format!("site {:?}", site.site), op, e))?;
        }
        count(changed);
    }
    for run in &image.runs {
        let changed = get_run(conn, scope, &run.run_id)?.as_ref() != Some(run);
        if changed {
            put_run(conn, scope, run)
                .map_err(|e| item_error(&format!("run manifest {:?}", run.run_id), op, e))?;
        }
        count(changed);
    }
    if let Some((hints, updated_at)) = &image.hints {
        let found = get_hints(conn, scope).map_err(|e| to_core(op, e))?;
        let changed = found.as_ref().map(|(h, u)| (h.as_str(), u.as_str()))
            != Some((hints.as_str(), updated_at.as_str()));
        if changed {
            put_hints(conn, scope, hints, updated_at).map_err(|e| item_error("hints", op, e))?;
        }
        count(changed);
    }
    for summary in &image.suite_summaries {
        let found: Option<String> = conn
            .prepare_cached("SELECT json FROM browser_suite_summaries WHERE scope = ?1 AND id = ?2")
            .and_then(|mut s| {
                s.query_row(params![scope.as_str(), summary.id], |r| r.get(0))
                    .optional()
            })
            .map_err(|e| to_core(op, e))?;
        let changed = found.as_deref() != Some(summary.json.as_str());
        if changed {
            put_suite_summary(conn, scope, summary)
                .map_err(|e| item_error(&format!("suite summary {:?}", summary.id), op, e))?;
        }
        count(changed);
    }
    Ok(stored)
}

/// The columns of a held run [`held_runs`] decodes, in its order.
const HELD_COLUMNS: &str =
    "scope, id, site, goal, reasons, run, held_at, source, source_session, client";

/// The held runs `sql` selects (the columns [`HELD_COLUMNS`]), each with its scope.
fn held_runs(
    store: &SqliteStore,
    sql: &str,
    values: impl rusqlite::Params,
) -> Result<Vec<(Scope, HeldRun)>> {
    type WriterRow = (Option<String>, Option<String>, Option<String>);
    type Row = (
        String,
        String,
        String,
        String,
        String,
        String,
        i64,
        WriterRow,
    );
    let rows: Vec<Row> = store.read("list held runs", |conn| {
        conn.prepare_cached(sql)?
            .query_map(values, |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    writer_columns(r, 7)?,
                ))
            })?
            .collect()
    })?;
    rows.into_iter()
        .map(|(scope, id, site, goal, reasons, run, at, writer)| {
            let at = Timestamp::from_millis(at);
            let written_by = stored_writer(writer, at, "browser_held")?;
            HeldRun::from_stored(&scope, id, site, goal, &reasons, run, written_by)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use agent_memory_core::Scope;
    use agent_memory_core::store::browser::{
        FactKind, RunManifestStore, SiteMemoryStore, TrajectoryStep, TrajectoryStore,
    };
    use rusqlite::{Connection, params};

    /// A version 6 database holding steps, sessions, facts, selectors and artifacts in their
    /// own tables reads back the same after the upgrade to version 7 folds them into rows.
    #[test]
    fn a_version_6_database_keeps_its_browser_memory_through_the_upgrade() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("v6.db");
        {
            let mut conn = Connection::open(&path).expect("open");
            crate::schema::migrate_to(&mut conn, 6)
                .map_err(|(m, e)| format!("{}: {e}", m.name))
                .expect("migrate to 6");
            conn.execute_batch(
                "INSERT INTO browser_trajectories (id, scope, traj_id, goal, origin, success, duration_ms,
                   model, timestamp, recorded_at, token_count, index_keys)
                 VALUES (1, 'shared', 'traj_1', 'buy a watch', 'https://a.test', 1, 5, 'm', 't', 10, 3,
                   '3:buy1:a5:watch'),
                        (2, 'shared', 'traj_2', 'no steps', NULL, 0, 0, 'm', 't', NULL, 2, '2:no5:steps');
                 INSERT INTO browser_trajectory_steps VALUES
                   (1, 1, 'https://a.test/cart', 'click: ü', 'h2', 0, ''),
                   (1, 0, 'https://a.test/', 'goto', 'h1', 1, NULL),
                   (1, 2, 'https://a.test/done', 'done', 'h3', 1, 'cart shows 1');
                 INSERT INTO browser_sites VALUES ('shared', 'a.test', 'https://a.test', 'k', 's');
                 INSERT INTO browser_sessions VALUES
                   ('shared', 'a.test', 1, 's2', 'g2', 'o2', 0, 'https://a.test/2', 't2', 4, 40),
                   ('shared', 'a.test', 0, 's1', 'g:1', '', 1, '', 't1', 3, 30);
                 INSERT INTO browser_facts VALUES
                   ('shared', 'a.test', 0, 'quirk', 'k', 'v', 0.5, 1, 't'),
                   ('shared', 'a.test', 4, 'pattern', 'p', 'w', 0.7, 2, 't');
                 INSERT INTO browser_selectors VALUES
                   ('shared', 'a.test', 7, 'add to cart', '@e3', NULL, 3, 't'),
                   ('shared', 'a.test', 2, 'search', NULL, '#q', 1, 't');
                 INSERT INTO browser_runs (scope, run_id, status, goal, domain, started_at, updated_at, turn_count)
                   VALUES ('shared', 'run_1', 'completed', 'g', 'a.test', 't', 't', 2);
                 INSERT INTO browser_run_artifacts VALUES
                   ('shared', 'run_1', 1, 'b.png'), ('shared', 'run_1', 0, 'a.png');",
            )
            .expect("version 6 rows");
        }
        let store = crate::SqliteStore::open(&path).expect("upgrade");
        let scope = Scope::shared();
        let t = store
            .trajectory_get(&scope, "traj_1")
            .expect("read")
            .expect("kept");
        let step =
            |url: &str, action: &str, hash: &str, verified, effect: Option<&str>| TrajectoryStep {
                url: url.to_owned(),
                action: action.to_owned(),
                snapshot_hash: hash.to_owned(),
                verified,
                expected_effect: effect.map(str::to_owned),
            };
        assert_eq!(
            t.steps,
            vec![
                step("https://a.test/", "goto", "h1", true, None),
                step("https://a.test/cart", "click: ü", "h2", false, Some("")),
                step(
                    "https://a.test/done",
                    "done",
                    "h3",
                    true,
                    Some("cart shows 1")
                ),
            ]
        );
        let empty = store
            .trajectory_get(&scope, "traj_2")
            .expect("read")
            .expect("kept");
        assert!(empty.steps.is_empty());
        let site = store
            .site_get(&scope, "a.test")
            .expect("read")
            .expect("kept");
        let sessions: Vec<_> = site
            .sessions
            .iter()
            .map(|s| {
                (
                    s.id.as_str(),
                    s.goal.as_str(),
                    s.success,
                    s.turns_used,
                    s.duration_ms,
                )
            })
            .collect();
        assert_eq!(
            sessions,
            vec![("s1", "g:1", true, 3, 30), ("s2", "g2", false, 4, 40)]
        );
        let facts: Vec<_> = site
            .facts
            .iter()
            .map(|f| (f.kind, f.key.as_str(), f.value.as_str(), f.sources))
            .collect();
        assert_eq!(
            facts,
            vec![
                (FactKind::Quirk, "k", "v", 1),
                (FactKind::Pattern, "p", "w", 2)
            ]
        );
        let selectors: Vec<_> = site
            .selectors
            .iter()
            .map(|s| (s.element.as_str(), s.success_count))
            .collect();
        assert_eq!(selectors, vec![("search", 1), ("add to cart", 3)]);
        let run = store.run_get(&scope, "run_1").expect("read").expect("kept");
        assert_eq!(run.artifact_paths, vec!["a.png", "b.png"]);
        // New facts and selectors are numbered after the carried-over ones.
        let next: i64 = store
            .read("read next_seq", |c| {
                c.query_row(
                    "SELECT next_seq FROM browser_sites WHERE site = ?1",
                    params!["a.test"],
                    |r| r.get(0),
                )
            })
            .expect("next_seq");
        assert_eq!(next, 8);
    }

    /// A list column that is not an encoded list is reported with its row, not a panic.
    #[test]
    fn a_corrupt_list_column_is_an_error_naming_the_row() {
        let store = crate::SqliteStore::open_in_memory().expect("open");
        let scope = Scope::shared();
        store
            .write("seed", |tx| {
                tx.execute_batch(
                    "INSERT INTO browser_trajectories (id, scope, traj_id, goal, origin, success, duration_ms,
                       model, timestamp, recorded_at, token_count, steps)
                     VALUES (1, 'shared', 'traj_1', 'g', NULL, 1, 0, 'm', 't', NULL, 1, '9:short');
                     INSERT INTO browser_sites (scope, site, label, knowledge_updated_at, selectors_updated_at, sessions)
                     VALUES ('shared', 'a.test', 'a', '', '', '1:x');
                     INSERT INTO browser_runs (scope, run_id, status, goal, domain, started_at, updated_at,
                       turn_count, artifact_paths)
                     VALUES ('shared', 'run_1', 'completed', 'g', 'a.test', 't', 't', 0, 'nolength');",
                )
                .map_err(|e| crate::to_core("seed", e))
            })
            .expect("seed");
        let message = |e: agent_memory_core::Error| e.to_string();
        let trajectory = message(store.trajectory_get(&scope, "traj_1").expect_err("corrupt"));
        assert!(
            trajectory.contains("browser_trajectories row 1") && trajectory.contains("steps"),
            "{trajectory}"
        );
        let site = message(store.site_get(&scope, "a.test").expect_err("corrupt"));
        assert!(
            site.contains("a.test") && site.contains("sessions"),
            "{site}"
        );
        let run = message(store.run_get(&scope, "run_1").expect_err("corrupt"));
        assert!(
            run.contains("run_1") && run.contains("artifact_paths"),
            "{run}"
        );
    }
}
