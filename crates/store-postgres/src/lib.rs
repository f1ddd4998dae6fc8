//! The shared store: every `memory-core` store trait on PostgreSQL (14 or newer), so many
//! agents on many machines share one memory.
//!
//! ```no_run
//! use agent_memory_core::{MetaKey, MetaStore};
//! use agent_memory_postgres::PostgresStore;
//!
//! let store = PostgresStore::connect("postgres://agent@db.internal/memory")?;
//! store.meta_set(&MetaKey::new("owner")?, "fleet")?;
//! assert_eq!(store.meta_get(&MetaKey::new("owner")?)?.as_deref(), Some("fleet"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The API is synchronous like the rest of the library (from async code, call it in
//! `spawn_blocking`). A store keeps a small pool of connections ([`PostgresOptions::pool_size`]),
//! so it is `Send + Sync` and serves many threads; share it behind an `Arc`.
//!
//! What the store promises is the contract of the traits, the same as SQLite's:
//!
//! - every call that writes several rows is one transaction: whole or nothing;
//! - the schema lives in its own PostgreSQL schema ([`PostgresOptions::schema`], default
//!   `agent_memory`), created and migrated forward on connect; migrations hold an advisory
//!   lock, so processes starting at once never race;
//! - crystallize observes every episode exactly once across processes and hosts: appends to
//!   a partition hold a shared advisory lock on it and crystallize an exclusive one, so a
//!   crystallizer never moves the watermark past an episode still being committed;
//! - a transaction the server rolled back (a serialization failure, a deadlock) or that lost
//!   its connection before committing is run again on a fresh connection, up to
//!   [`PostgresOptions::retries`] times; a connection lost during the commit itself is
//!   reported, never retried, because the write may have landed. A call that is one
//!   statement (recording episodes, and most reads) sends it on its own, one round trip with
//!   no `BEGIN` and `COMMIT`; for a write, a connection lost after sending it is such a lost
//!   commit;
//! - a call waits for a connection at most the connect timeout
//!   ([`PostgresOptions::connect_timeout`], or `connect_timeout=` in the connection string),
//!   then fails naming the server (never its password); [`PostgresStore::ping`] is a
//!   readiness probe.
//!
//! Where it differs from SQLite: a text holding a NUL character is refused (PostgreSQL's
//! `text` cannot hold one), each call costs round trips to the server, and a forgotten row's
//! bytes leave the server's files when PostgreSQL's (auto)vacuum reuses the space, not at
//! once.

#![deny(missing_docs)]

mod browser;
pub mod cluster;
mod error;
mod meta;
mod notes;
mod schema;
mod session;
mod stats;
mod tool_log;
mod trajectory;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agent_memory_core::{Clock, SharedClock};
use postgres::types::ToSql;
use postgres::{Client, GenericClient, NoTls, Row, Statement};

pub use error::Error;
pub use schema::SCHEMA_VERSION;

pub(crate) use error::{Fail, check_texts, to_core};

/// Options for connecting. `PostgresOptions::default()` is what [`PostgresStore::connect`]
/// uses; the `with_*` setters change one option each.
///
/// ```
/// use agent_memory_postgres::PostgresOptions;
///
/// let options = PostgresOptions::default().with_schema("team_a").with_pool_size(8);
/// assert_eq!(options.schema, "team_a");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The PostgreSQL schema the memory lives in. Several memories can share one database
    /// under different schemas. Default `agent_memory`. A connection string may also name it
    /// with a `schema` parameter (`postgres://host/db?schema=team_a`), which wins.
    pub schema: String,
    /// The most connections the store keeps open. Default 4.
    pub pool_size: u32,
    /// How long a call waits for a connection (from the pool, or a new one) before failing.
    /// Default 10 s; a connection string's `connect_timeout` (in seconds) wins.
    pub connect_timeout: Duration,
    /// How many times a transaction is run again after the server rolled it back or the
    /// connection was lost before it committed. Default 8 (with pauses growing from 10 ms to
    /// 1 s, so a server restart of a few seconds is ridden out).
    pub retries: u32,
    /// Open without write access: every transaction is read-only, and the schema is neither
    /// created nor migrated (a schema that is missing or behind is an error).
    pub read_only: bool,
    /// What stamps the writes that carry no time of their own (session events, notes), for
    /// the last write the summaries report. Default: the system clock.
    pub clock: SharedClock,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            schema: "agent_memory".to_owned(),
            pool_size: 4,
            connect_timeout: Duration::from_secs(10),
            retries: 8,
            read_only: false,
            clock: SharedClock::default(),
        }
    }
}

impl PostgresOptions {
    /// In the PostgreSQL schema `schema`.
    pub fn with_schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Keeping at most `connections` connections open.
    pub fn with_pool_size(mut self, connections: u32) -> Self {
        self.pool_size = connections;
        self
    }

    /// Waiting at most `timeout` for a connection.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Running a failed transaction again at most `retries` times.
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Read-only (`true`) or read-write.
    pub fn with_read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Stamping session and note writes with `clock`.
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = SharedClock::new(clock);
        self
    }
}

/// One pooled connection with the statements it has prepared, so a hot call is one round
/// trip to the server instead of a parse and then an execute.
pub(crate) struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// When the connection last answered (for [`CHECK_IDLE_AFTER`]).
    idle_since: Instant,
    /// Found dead by a check: the pool drops it.
    broken: bool,
}

/// How long a pooled connection may sit idle before a one-statement write checks it is
/// still open (an empty query, one round trip). Far below the time a server takes to
/// restart, and long enough that a caller writing in a loop never pays for the check.
const CHECK_IDLE_AFTER: Duration = Duration::from_millis(100);

/// Opens connections for the pool. (`r2d2_postgres` does the same without a statement
/// cache; the cache must live with its connection, so the manager is ours.)
struct Manager {
    config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        Ok(Conn {
            client: self.config.connect(NoTls)?,
            statements: HashMap::new(),
            idle_since: Instant::now(),
            broken: false,
        })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(|_| ())
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.client.is_closed()
    }
}

/// A memory store in one schema of a PostgreSQL database. `Send + Sync`: share it behind an
/// `Arc`.
pub struct PostgresStore {
    pool: r2d2::Pool<Manager>,
    schema: String,
    target: String,
    retries: u32,
    read_only: bool,
    /// [`PostgresOptions::clock`].
    clock: SharedClock,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("target", &self.target)
            .field("schema", &self.schema)
            .field("read_only", &self.read_only)
            .finish_non_exhaustive()
    }
}

/// The transaction a store call runs in, with the connection's statement cache.
pub(crate) struct Tx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut HashMap<&'static str, Statement>,
}

/// The prepared form of `sql` from the connection's cache, prepared on `client` the first
/// time the connection sees it.
fn cached(
    statements: &mut HashMap<&'static str, Statement>,
    client: &mut impl GenericClient,
    sql: &'static str,
) -> Result<Statement, postgres::Error> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = client.prepare(sql)?;
    statements.insert(sql, statement.clone());
    Ok(statement)
}

impl<'a> Tx<'a> {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        cached(self.statements, &mut self.tx, sql)
    }

    /// Every row `sql` returns.
    pub(crate) fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query(&statement, params)
    }

    /// The one row `sql` returns, if any.
    pub(crate) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_opt(&statement, params)
    }

    /// The row `sql` returns; an error when there is none.
    pub(crate) fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_one(&statement, params)
    }

    /// Takes the advisory lock `(class, hashtext(key))` until the transaction ends: exclusive,
    /// or shared with other shared holders. Callers taking several take them in sorted order.
    pub(crate) fn advisory_lock(
        &mut self,
        class: i32,
        key: &str,
        exclusive: bool,
    ) -> Result<(), postgres::Error> {
        let sql = if exclusive {
            "SELECT pg_advisory_xact_lock($1, hashtext($2))"
        } else {
            "SELECT pg_advisory_xact_lock_shared($1, hashtext($2))"
        };
        self.execute(sql, &[&class, &key]).map(|_| ())
    }

    /// The transaction itself, for a statement built at run time (never cached).
    pub(crate) fn raw(&mut self) -> &mut postgres::Transaction<'a> {
        &mut self.tx
    }

    /// Runs `sql`; returns how many rows it changed.
    pub(crate) fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.execute(&statement, params)
    }
}

/// One statement sent on its own (autocommit), for [`PostgresStore::read_one`] and
/// [`PostgresStore::write_one`]. Each method takes the `One` by value, so a call cannot send
/// a second statement outside the first one's transaction.
pub(crate) struct One<'a> {
    client: &'a mut Client,
    statements: &'a mut HashMap<&'static str, Statement>,
    sent: &'a mut bool,
}

impl One<'_> {
    /// Prepares `sql` (from the cache) and marks the call as sent: from here on a lost
    /// connection may have run the statement.
    fn send(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        let statement = cached(self.statements, self.client, sql)?;
        *self.sent = true;
        Ok(statement)
    }
}

/// Sends one statement: inside a call's transaction (`&mut Tx`) or on its own ([`One`]). A
/// helper that takes one sends exactly one statement, so it serves both kinds of call.
pub(crate) trait Single {
    /// Every row `sql` returns.
    fn rows(
        self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error>;
    /// The one row `sql` returns, if any.
    fn row(
        self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error>;
}

impl Single for &mut Tx<'_> {
    fn rows(
        self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        self.query(sql, params)
    }

    fn row(
        self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        self.query_opt(sql, params)
    }
}

impl Single for One<'_> {
    fn rows(
        mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.send(sql)?;
        self.client.query(&statement, params)
    }

    fn row(
        mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.send(sql)?;
        self.client.query_opt(&statement, params)
    }
}

/// Advisory lock classes (the first key of the two-key form), one per kind of thing locked.
pub(crate) mod lock {
    /// Migrations of one schema.
    pub(crate) const MIGRATE: i32 = 0x616d_0001;
    /// A partition's episodes: shared by appends, exclusive for crystallize, prune, forget.
    pub(crate) const PARTITION: i32 = 0x616d_0002;
    /// One session's event log.
    pub(crate) const SESSION: i32 = 0x616d_0003;
    /// One session's tool logs.
    pub(crate) const TOOL_LOG: i32 = 0x616d_0004;
    /// One browser scope.
    pub(crate) const SCOPE: i32 = 0x616d_0005;
    /// The notes of one scope (a value apart from the others' run, so classes added beside
    /// it elsewhere do not meet it).
    pub(crate) const NOTES: i32 = 0x616d_0010;
    /// The audit trail of one schema (keyed by the schema's name), from an entry's append
    /// until its transaction ends (taken after a scope's lock, never before one), so entries
    /// number in the order they commit.
    pub(crate) const AUDIT: i32 = 0x616d_0011;
}

impl PostgresStore {
    /// Connects to the database named by `url` (a `postgres://` URL or a `key=value`
    /// connection string) with default options, creating or migrating the schema.
    pub fn connect(url: &str) -> Result<Self, Error> {
        PostgresStore::connect_with(url, &PostgresOptions::default())
    }

    /// Connects with `options`.
    pub fn connect_with(url: &str, options: &PostgresOptions) -> Result<Self, Error> {
        let (mut config, schema_param) = parse_url(url)?;
        let schema = schema_param.unwrap_or_else(|| options.schema.clone());
        if !valid_schema(&schema) {
            return Err(Error::InvalidSchema { schema });
        }
        let target = describe(&config);
        let mut startup = format!("-c search_path={schema}");
        if options.read_only {
            startup.push_str(" -c default_transaction_read_only=on");
        }
        config.options(&startup);
        if config.get_application_name().is_none() {
            config.application_name("agent-memory");
        }
        // A connection string's own `connect_timeout` wins, as its `schema` does.
        let connect_timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(options.connect_timeout);
        config.connect_timeout(connect_timeout);
        let pool = r2d2::Pool::builder()
            .max_size(options.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(connect_timeout)
            // A dead connection is found by the call that uses it and the call retried; a
            // check on every checkout would cost a round trip per call.
            .test_on_check_out(false)
            .build_unchecked(Manager { config });
        let store = PostgresStore {
            pool,
            schema,
            target,
            retries: options.retries,
            read_only: options.read_only,
            clock: options.clock.clone(),
        };
        let mut conn = store.pool.get().map_err(|e| Error::Connect {
            target: store.target.clone(),
            source: Box::new(e),
        })?;
        if options.read_only {
            schema::require_current(&mut conn.client, &store.target, &store.schema)?;
        } else {
            schema::migrate(&mut conn.client, &store.target, &store.schema)?;
        }
        drop(conn);
        Ok(store)
    }

    /// Checks that the server answers: one `SELECT 1` on a pooled connection, one round
    /// trip, the same path every one-statement call takes (a readiness probe for a service,
    /// and the latency floor of every call, which `W-traj-pg` measures beside recall).
    pub fn ping(&self) -> agent_memory_core::Result<()> {
        self.read_one("ping", |one| Ok(one.row("SELECT 1", &[])?))
            .map(|_| ())
    }

    /// The PostgreSQL schema the memory lives in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Where the store connects: host, port and database, without credentials.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Refuses `operation` on a store opened read-only.
    fn writable(&self, operation: &str) -> agent_memory_core::Result<()> {
        if self.read_only {
            return Err(agent_memory_core::Error::backend(
                "postgres",
                operation.to_owned(),
                ReadOnly {
                    schema: self.schema.clone(),
                },
            ));
        }
        Ok(())
    }

    /// Runs `f` in one read-write transaction and commits when it returns `Ok`; on `Err` it
    /// rolls back. Retried as [`PostgresOptions::retries`] says, so `f` may run more than
    /// once and must have no effect outside the transaction.
    pub(crate) fn write<T>(
        &self,
        operation: &str,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T, Fail>,
    ) -> agent_memory_core::Result<T> {
        self.writable(operation)?;
        self.run(operation, false, &mut f)
    }

    /// Runs `f` in one read-only transaction (a consistent snapshot), retried as writes are.
    pub(crate) fn read<T>(
        &self,
        operation: &str,
        mut f: impl FnMut(&mut Tx<'_>) -> Result<T, Fail>,
    ) -> agent_memory_core::Result<T> {
        self.run(operation, true, &mut f)
    }

    /// Runs `f`, which sends one statement on its own (autocommit: the statement is its own
    /// transaction), so the call is one round trip with no `BEGIN` and `COMMIT`. A write
    /// whose connection is lost after the statement was sent is reported as "may or may not
    /// have been stored", as a lost commit is; one rolled back by the server is run again.
    pub(crate) fn write_one<T>(
        &self,
        operation: &str,
        mut f: impl FnMut(One<'_>) -> Result<T, Fail>,
    ) -> agent_memory_core::Result<T> {
        self.writable(operation)?;
        self.retrying(operation, false, &mut || self.attempt_one(false, &mut f))
    }

    /// Runs `f`, which sends one read statement on its own: one round trip, and a consistent
    /// snapshot because a statement always sees one. Retried as [`read`](Self::read) is.
    pub(crate) fn read_one<T>(
        &self,
        operation: &str,
        mut f: impl FnMut(One<'_>) -> Result<T, Fail>,
    ) -> agent_memory_core::Result<T> {
        self.retrying(operation, true, &mut || self.attempt_one(true, &mut f))
    }

    fn run<T>(
        &self,
        operation: &str,
        read: bool,
        f: &mut dyn FnMut(&mut Tx<'_>) -> Result<T, Fail>,
    ) -> agent_memory_core::Result<T> {
        self.retrying(operation, read, &mut || self.attempt(read, f))
    }

    fn retrying<T>(
        &self,
        operation: &str,
        read: bool,
        attempt_once: &mut dyn FnMut() -> Result<T, Attempt>,
    ) -> agent_memory_core::Result<T> {
        let mut attempt = 0u32;
        let mut pause = Duration::from_millis(10);
        loop {
            match attempt_once() {
                Ok(value) => return Ok(value),
                Err(Attempt::Done(error)) => return Err(error),
                Err(Attempt::Stale) if attempt < self.retries => {
                    // Nothing was sent: take another connection at once.
                    attempt += 1;
                    continue;
                }
                Err(Attempt::Stale) => {
                    return Err(agent_memory_core::Error::backend(
                        "postgres",
                        operation.to_owned(),
                        Error::Connect {
                            target: self.target.clone(),
                            source: "every pooled connection was closed by the server".into(),
                        },
                    ));
                }
                Err(Attempt::Pg { error, committing }) => {
                    let retry = error::retryable(&error);
                    let safe = match retry {
                        error::Retry::RolledBack => true,
                        error::Retry::ConnectionLost => !committing || read,
                        error::Retry::No => false,
                    };
                    if !safe || attempt >= self.retries {
                        if retry == error::Retry::ConnectionLost && committing && !read {
                            return Err(agent_memory_core::Error::backend(
                                "postgres",
                                operation.to_owned(),
                                OutcomeUnknown {
                                    error: error::Redacted::of(&error),
                                },
                            ));
                        }
                        return Err(to_core(operation, error));
                    }
                }
                Err(Attempt::Pool(error)) => {
                    // The pool has already tried to connect for the whole connect timeout
                    // (the wait the options promise); trying again would multiply it.
                    return Err(agent_memory_core::Error::backend(
                        "postgres",
                        operation.to_owned(),
                        Error::Connect {
                            target: self.target.clone(),
                            source: Box::new(error),
                        },
                    ));
                }
            }
            attempt += 1;
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    fn attempt_one<T>(
        &self,
        read: bool,
        f: &mut dyn FnMut(One<'_>) -> Result<T, Fail>,
    ) -> Result<T, Attempt> {
        let mut pooled = self.pool.get().map_err(Attempt::Pool)?;
        if !read && pooled.idle_since.elapsed() > CHECK_IDLE_AFTER {
            // A write sent on a connection the server has closed meanwhile (a restart, say)
            // could not tell "not stored" from "stored, reply lost". A connection idle for a
            // while is checked first with an empty query; one in steady use is not (a server
            // cannot restart in that time).
            let alive = pooled.client.simple_query("").is_ok();
            pooled.idle_since = Instant::now();
            if !alive {
                pooled.broken = true;
                return Err(Attempt::Stale);
            }
        }
        let Conn {
            client,
            statements,
            idle_since,
            ..
        } = &mut *pooled;
        let mut sent = false;
        let one = One {
            client,
            statements,
            sent: &mut sent,
        };
        let result = f(one);
        *idle_since = Instant::now();
        match result {
            Ok(value) => Ok(value),
            Err(Fail::Core(error)) => Err(Attempt::Done(error)),
            Err(Fail::Pg(error)) => {
                statements.clear();
                Err(Attempt::Pg {
                    error,
                    committing: sent,
                })
            }
        }
    }

    fn attempt<T>(
        &self,
        read: bool,
        f: &mut dyn FnMut(&mut Tx<'_>) -> Result<T, Fail>,
    ) -> Result<T, Attempt> {
        let mut pooled = self.pool.get().map_err(Attempt::Pool)?;
        // In use from now: a transaction finds a closed connection itself (its `BEGIN`
        // fails, and is retried), so it needs no check, only to keep the clock for the next.
        pooled.idle_since = Instant::now();
        let Conn {
            client, statements, ..
        } = &mut *pooled;
        let pg = |error, committing| Attempt::Pg { error, committing };
        let mut builder = client.build_transaction();
        if read {
            builder = builder
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true);
        }
        let tx = builder.start().map_err(|e| pg(e, false))?;
        let mut tx = Tx { tx, statements };
        let value = match f(&mut tx) {
            Ok(value) => value,
            Err(Fail::Core(error)) => return Err(Attempt::Done(error)),
            Err(Fail::Pg(error)) => {
                // A statement that failed may have been prepared against a schema that changed;
                // the cache starts over on the next call.
                tx.statements.clear();
                return Err(pg(error, false));
            }
        };
        tx.tx.commit().map_err(|e| pg(e, true))?;
        Ok(value)
    }
}

enum Attempt {
    /// A domain error: reported as it is.
    Done(agent_memory_core::Error),
    /// The pooled connection turned out closed before anything was sent on it.
    Stale,
    /// A driver error, and whether it came from the commit.
    Pg {
        error: postgres::Error,
        committing: bool,
    },
    /// No connection could be had.
    Pool(r2d2::Error),
}

/// A write to a store opened read-only.
#[derive(Debug, thiserror::Error)]
#[error("schema {schema} was opened read-only")]
struct ReadOnly {
    schema: String,
}

/// The connection was lost while the server was committing.
#[derive(Debug, thiserror::Error)]
#[error(
    "the connection was lost while committing ({error}); the write may or may not have been stored"
)]
struct OutcomeUnknown {
    error: error::Redacted,
}

/// Splits our own `schema` parameter off a connection string and parses the rest.
fn parse_url(url: &str) -> Result<(postgres::Config, Option<String>), Error> {
    refuse_at_in_query(url)?;
    let mut schema = None;
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            Some((base, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| match pair.strip_prefix("schema=") {
                        Some(value) => {
                            schema = Some(value.to_owned());
                            false
                        }
                        None => !pair.is_empty(),
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
            None => url.to_owned(),
        }
    } else {
        url.to_owned()
    };
    let config = rest
        .parse::<postgres::Config>()
        .map_err(|e| Error::InvalidUrl {
            reason: e.to_string(),
        })?;
    Ok((config, schema))
}

/// Refuses a URL whose first `@` stands in its query (`?password=a@b`, legal in a URL): the
/// driver ends the userinfo at the first `@` wherever it is, so it would take the host, path
/// and part of the password for a user and password, and the rest of the password for the
/// host that every message names.
fn refuse_at_in_query(url: &str) -> Result<(), Error> {
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        return Ok(());
    };
    let Some(before) = rest.find('@').map(|at| &rest[..at]) else {
        return Ok(());
    };
    if before.find('?').is_some_and(|q| before[q..].contains('=')) {
        return Err(Error::InvalidUrl {
            reason: "write an '@' in the query as %40 (the driver reads up to a raw '@' as \
                     the user and password)"
                .to_owned(),
        });
    }
    Ok(())
}

/// Host, port and database of `config`, for messages; never the password, nor a part of it
/// a malformed URL (a raw `@` in the password) left in the host.
fn describe(config: &postgres::Config) -> String {
    use postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.rsplit('@').next().unwrap_or_default().to_owned(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    // PostgreSQL's default database is the user's name; shown only when it is a plain name.
    let plain = |name: &&str| {
        name.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
    };
    let database = config
        .get_dbname()
        .or(config.get_user().filter(plain))
        .unwrap_or("postgres");
    format!("{host}:{port}/{database}")
}

fn valid_schema(schema: &str) -> bool {
    let mut chars = schema.chars();
    schema.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Converts a count the server returned (`bigint`) into `u64`.
pub(crate) fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_parameter_is_ours_and_the_rest_goes_to_the_driver() {
        let (config, schema) =
            parse_url("postgres://me:secret@db.example:6543/memory?schema=team_a&sslmode=disable")
                .expect("parses");
        assert_eq!(schema.as_deref(), Some("team_a"));
        assert_eq!(config.get_dbname(), Some("memory"));
        assert_eq!(describe(&config), "db.example:6543/memory");
        assert!(!describe(&config).contains("secret"));
        let (_, none) = parse_url("host=/tmp dbname=x").expect("key=value form");
        assert_eq!(none, None);
    }

    #[test]
    fn no_part_of_a_password_reaches_the_target() {
        for url in [
            "postgres://me:Xq7@Zk9@db.example/memory",
            "postgres://me:Xq7/Zk9@db.example/memory",
            "postgres://me:Xq7?Zk9@db.example/memory",
            "postgres://me@db.example/memory?password=Xq7%40Zk9",
        ] {
            let (config, _) = parse_url(url).expect("parses");
            assert_eq!(describe(&config), "db.example:5432/memory", "{url}");
        }
        for url in [
            "postgres://db.example/memory?password=Xq7@Zk9",
            "postgres://db.example:5432/memory?user=me&password=Xq7@Zk9",
        ] {
            let error = parse_url(url).expect_err("an '@' in the query");
            let text = error.to_string();
            assert!(text.contains("%40"), "{text}");
            assert!(!text.contains("Xq7") && !text.contains("Zk9"), "{text}");
        }
    }

    #[test]
    fn a_bad_url_is_an_error_naming_why() {
        let error = parse_url("postgres://h/db?nonsense=1").expect_err("unknown option");
        assert!(
            error.to_string().contains("invalid connection string"),
            "{error}"
        );
    }

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(valid_schema("agent_memory"));
        assert!(valid_schema("_t1"));
        for bad in ["", "1abc", "Team", "a-b", "a;drop", &"a".repeat(64)] {
            assert!(!valid_schema(bad), "{bad:?}");
        }
    }
}
