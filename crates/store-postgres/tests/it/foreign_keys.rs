//! Every foreign key of the schema has an index whose leading columns are its referring
//! columns, read from the catalogue (`pg_constraint`, `pg_index`): without one, each deleted
//! or re-keyed parent row makes PostgreSQL read the whole referring table, so a forget would
//! cost the rows it deletes times the size of the other partitions.

use postgres::{Client, NoTls};

use crate::support::{drop_schemas, fresh_schema, fresh_store, server};

/// Each foreign key of `schema` that no complete b-tree index of its table begins with, as
/// `table (columns) -> parent`.
fn unindexed_foreign_keys(client: &mut Client, schema: &str) -> Vec<String> {
    client
        .query(
            "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text,
                    (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
                     FROM unnest(c.conkey) WITH ORDINALITY AS k (attnum, n)
                     JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum)
             FROM pg_constraint c
             JOIN pg_namespace s ON s.oid = c.connamespace
             WHERE c.contype = 'f' AND s.nspname = $1
               AND NOT EXISTS (
                   SELECT 1 FROM pg_index i
                   JOIN pg_class ic ON ic.oid = i.indexrelid
                   JOIN pg_am am ON am.oid = ic.relam
                   WHERE i.indrelid = c.conrelid AND i.indpred IS NULL AND am.amname = 'btree'
                     -- The index's first columns are the key's columns, in any order.
                     AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
                     AND (i.indkey::int2[])[0:cardinality(c.conkey) - 1] <@ c.conkey)
             ORDER BY 1, 3",
            &[&schema],
        )
        .unwrap_or_else(|e| panic!("read the catalogue: {e}"))
        .iter()
        .map(|row| {
            let (table, parent, columns): (String, String, String) =
                (row.get(0), row.get(1), row.get(2));
            format!("{table} ({columns}) -> {parent}")
        })
        .collect()
}

#[test]
fn every_foreign_key_has_an_index_beginning_with_its_columns() {
    let Some(url) = server() else {
        return;
    };
    let store = fresh_store(&url);
    let schema = store.schema().to_owned();
    let mut client = Client::connect(&url, NoTls).unwrap_or_else(|e| panic!("connect: {e}"));
    let keys: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_constraint c JOIN pg_namespace s ON s.oid = c.connamespace \
             WHERE c.contype = 'f' AND s.nspname = $1",
            &[&schema],
        )
        .unwrap_or_else(|e| panic!("count foreign keys: {e}"))
        .get(0);
    assert!(
        keys >= 2,
        "the rule reads the keys of the catalogue: {keys}"
    );
    assert_eq!(
        unindexed_foreign_keys(&mut client, &schema),
        Vec::<String>::new()
    );
    drop(store);
    drop_schemas(&url, &[schema]);
}

/// The catalogue query finds what it is for: keys with no index, with an index that begins
/// with other columns, with a partial index, or with an index on only part of the key.
#[test]
fn the_rule_finds_a_foreign_key_without_its_index() {
    let Some(url) = server() else {
        return;
    };
    let schema = fresh_schema("fk");
    let mut client = Client::connect(&url, NoTls).unwrap_or_else(|e| panic!("connect: {e}"));
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema};
             SET search_path TO {schema};
             CREATE TABLE parent (id bigint PRIMARY KEY, a text, b text, UNIQUE (a, b));
             CREATE TABLE bare (p bigint REFERENCES parent (id));
             CREATE TABLE second (z text, p bigint REFERENCES parent (id));
             CREATE INDEX second_by_z ON second (z, p);
             CREATE TABLE partial (p bigint REFERENCES parent (id));
             CREATE INDEX partial_some ON partial (p) WHERE p > 10;
             CREATE TABLE served (p bigint PRIMARY KEY REFERENCES parent (id));
             CREATE TABLE pair (a text, b text, c text, FOREIGN KEY (a, b) REFERENCES parent (a, b));
             CREATE INDEX pair_reversed ON pair (b, a, c);
             CREATE TABLE half (a text, b text, FOREIGN KEY (a, b) REFERENCES parent (a, b));
             CREATE INDEX half_a ON half (a);"
        ))
        .unwrap_or_else(|e| panic!("tables: {e}"));
    let found = unindexed_foreign_keys(&mut client, &schema);
    drop(client);
    drop_schemas(&url, std::slice::from_ref(&schema));
    let qualified = |table: &str, columns: &str| format!("{table} ({columns}) -> parent");
    assert_eq!(
        found,
        [
            qualified("bare", "p"),
            qualified("half", "a, b"),
            qualified("partial", "p"),
            qualified("second", "p"),
        ]
    );
}
