//! The engine's floor beneath W-traj-pg's records: bare `postgres` code writing the rows the
//! PostgreSQL store writes for an episode (partition, fingerprint text, trajectory text,
//! outcome JSON text, `recorded_at`) and nothing else: no locks, no audit trail, no
//! validation. `store-postgres/benches/floor.rs` measures it on its own under criterion;
//! W-traj measures it in turns with the store (`record, single, in turns with bare postgres`).

use postgres::{Client, NoTls, Statement};

/// A table of the floor's shape in a schema of its own (dropped with the value), on one
/// connection, with its two inserts prepared.
pub struct PgFloor {
    client: Client,
    schema: String,
    batched: Statement,
    single: Statement,
}

impl PgFloor {
    /// A fresh, empty table in the schema `<name>_<process id>` of the server at `url`.
    ///
    /// # Panics
    ///
    /// When the server cannot be reached or the table cannot be created: a bench has nothing
    /// to measure then.
    pub fn connect(url: &str, name: &str) -> PgFloor {
        let mut client = Client::connect(url, NoTls)
            .unwrap_or_else(|e| panic!("connect to the PostgreSQL floor server: {e}"));
        let schema = format!("{name}_{}", std::process::id());
        client
            .batch_execute(&format!(
                "DROP SCHEMA IF EXISTS {schema} CASCADE;
                 CREATE SCHEMA {schema};
                 SET search_path = {schema};
                 CREATE TABLE episode (
                     seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                     partition text NOT NULL,
                     fingerprint text NOT NULL,
                     trajectory text NOT NULL,
                     outcome text NOT NULL,
                     recorded_at bigint NOT NULL
                 );
                 CREATE INDEX episode_by_partition ON episode (partition, seq);"
            ))
            .expect("create the floor table");
        let batched = client
            .prepare(
                "INSERT INTO episode (partition, fingerprint, trajectory, outcome, recorded_at) \
                 SELECT $1::text, * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[])",
            )
            .expect("prepare the floor's batched insert");
        let single = client
            .prepare(
                "INSERT INTO episode (partition, fingerprint, trajectory, outcome, recorded_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .expect("prepare the floor's insert");
        PgFloor {
            client,
            schema,
            batched,
            single,
        }
    }

    /// Empties the table.
    ///
    /// # Panics
    ///
    /// When the server fails the statement.
    pub fn clear(&mut self) {
        self.client
            .batch_execute("TRUNCATE episode")
            .expect("truncate the floor table");
    }

    /// Inserts one row per element of the slices (which have the same length) in one
    /// statement, one transaction: one multi-row `INSERT ... SELECT FROM unnest(...)`.
    ///
    /// # Panics
    ///
    /// When the server fails the statement.
    pub fn insert_batch(
        &mut self,
        partition: &str,
        fingerprints: &[&str],
        trajectories: &[&str],
        outcomes: &[&str],
        recorded_at: &[i64],
    ) {
        self.client
            .execute(
                &self.batched,
                &[
                    &partition,
                    &fingerprints,
                    &trajectories,
                    &outcomes,
                    &recorded_at,
                ],
            )
            .expect("insert a batch into the floor table");
    }

    /// Inserts one row in its own (autocommitted) transaction: one round trip on a prepared
    /// statement, the cheapest a transaction per row can be.
    ///
    /// # Panics
    ///
    /// When the server fails the statement.
    pub fn insert_one(
        &mut self,
        partition: &str,
        fingerprint: &str,
        trajectory: &str,
        outcome: &str,
        recorded_at: i64,
    ) {
        self.client
            .execute(
                &self.single,
                &[
                    &partition,
                    &fingerprint,
                    &trajectory,
                    &outcome,
                    &recorded_at,
                ],
            )
            .expect("insert into the floor table");
    }
}

impl Drop for PgFloor {
    fn drop(&mut self) {
        let _ = self
            .client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.schema));
    }
}
