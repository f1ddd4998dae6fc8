//! Calls that are one statement on their own (no `BEGIN`/`COMMIT`): an append still takes
//! its partition's lock before it draws a sequence number and before it reads the audit
//! trail, and a write after a server restart is not lost to a pooled connection the server
//! had closed.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agent_memory_core::evidence::Action;
use agent_memory_core::store::trajectory::{Episode, EpisodeStore, Fingerprint, NewEpisode};
use agent_memory_core::{AuditStore, Partition, Timestamp};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use postgres::{Client, NoTls, Transaction};

use crate::notes::AUDIT_LOCK_CLASS;
use crate::support::{fresh_schema, server};

/// The advisory lock class of a partition. Every process of a fleet must agree on it, so it
/// is pinned here: changing it would let an old and a new build crystallize at once.
const PARTITION_LOCK_CLASS: i32 = 0x616d_0002;

pub(crate) fn episode(partition: &str, task: &str) -> NewEpisode {
    NewEpisode {
        partition: Partition::new(partition).expect("partition"),
        fingerprint: Fingerprint::new([("task", task)]).expect("fingerprint"),
        trajectory: vec!["open".to_owned(), "submit".to_owned()],
        outcome: "true".to_owned(),
        recorded_at: Timestamp::from_millis(1_700_000_000_000),
        provenance: None,
    }
}

fn sequence_value(client: &mut Client, schema: &str) -> i64 {
    client
        .query_one(
            "SELECT last_value FROM pg_sequences WHERE schemaname = $1 \
             AND sequencename = (SELECT split_part(pg_get_serial_sequence($2, 'seq'), '.', 2))",
            &[&schema, &format!("{schema}.trajectory_episode")],
        )
        .expect("read the episode sequence")
        .get::<_, Option<i64>>(0)
        .expect("the sequence was used")
}

#[test]
fn an_append_draws_its_sequence_number_only_once_it_holds_the_partition_lock() {
    let Some(url) = server() else { return };
    // One episode and a batch are sent as different statements; both must wait.
    for size in [1, 3] {
        append_waits_for_the_partition_lock(&url, size);
    }
}

/// An append of `size` episodes, sent while another connection holds the partition lock
/// exclusive, waits for it without drawing a sequence number.
fn append_waits_for_the_partition_lock(url: &str, size: usize) {
    let (store, schema, first) = store_with_one_episode(url, "lock");
    let mut holder = Client::connect(url, NoTls).expect("connect the lock holder");
    let mut crystallizer = holder.transaction().expect("begin");
    lock_partition_exclusive(&mut crystallizer);
    let mut watcher = Client::connect(url, NoTls).expect("connect the watcher");
    let appender = spawn_waiting_append(&store, size, &mut watcher);
    assert_eq!(
        sequence_value(&mut watcher, &schema),
        i64::try_from(first[0]).expect("seq"),
        "the waiting append of {size} drew a sequence number before it held the lock"
    );
    crystallizer.commit().expect("release the lock");
    let second = appender
        .join()
        .expect("the appender thread")
        .expect("the append completes once the lock is released");
    let want: Vec<u64> = (1..=size as u64).map(|i| first[0] + i).collect();
    assert_eq!(second, want);
    store.drop_schema().expect("drop the schema");
}

/// A store in a fresh schema (its name starting `name`) holding one episode of partition
/// `checkout`, with the schema's name and the episode's sequence number.
fn store_with_one_episode(url: &str, name: &str) -> (Arc<PostgresStore>, String, Vec<u64>) {
    let schema = fresh_schema(name);
    let store = Arc::new(
        PostgresStore::connect_with(url, &PostgresOptions::default().with_schema(&schema))
            .expect("connect"),
    );
    let first = store
        .append_episodes(&[episode("checkout", "a")])
        .expect("first append");
    (store, schema, first)
}

/// Takes partition `checkout`'s lock exclusive in `tx`, as a crystallize or a forget does.
fn lock_partition_exclusive(tx: &mut Transaction<'_>) {
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&PARTITION_LOCK_CLASS, &"checkout"],
    )
    .expect("take the partition lock exclusive");
}

/// Starts an append of `size` episodes to `checkout` on a thread of its own, and returns once
/// `watcher` sees it waiting for a partition's lock.
fn spawn_waiting_append(
    store: &Arc<PostgresStore>,
    size: usize,
    watcher: &mut Client,
) -> JoinHandle<agent_memory_core::Result<Vec<u64>>> {
    let appender = {
        let store = Arc::clone(store);
        let batch: Vec<NewEpisode> = (0..size)
            .map(|i| episode("checkout", &format!("b{i}")))
            .collect();
        std::thread::spawn(move || store.append_episodes(&batch))
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let waiting: i64 = watcher
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND classid::bigint = $1::bigint",
                &[&i64::from(PARTITION_LOCK_CLASS)],
            )
            .expect("read pg_locks")
            .get(0);
        if waiting > 0 {
            return appender;
        }
        assert!(
            Instant::now() < deadline,
            "the append of {size} never waited for the partition lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_forget_committed_while_an_append_waits_ends_the_writers_run() {
    let Some(url) = server() else { return };
    // One episode (the statement that reads the trail itself) and a batch.
    for size in [1, 3] {
        forget_while_append_waits(&url, size);
    }
}

/// Appends a forget of the partition `checkout` to the trail of `schema`, as a forget does.
fn append_forget_entry(tx: &mut Transaction<'_>, schema: &str) {
    tx.execute(
        &format!(
            "INSERT INTO {schema}.audit (at, action, memory, scope, item, source, detail) \
             VALUES (1, 'forget', 'trajectory', '', 'checkout', 'user', 'episodes')"
        ),
        &[],
    )
    .expect("append a forget's entry");
}

/// The trail's entries, oldest first: what each did and to which item.
fn trail(store: &PostgresStore) -> Vec<(Action, String)> {
    store
        .audit_page(None, 10)
        .expect("read the trail")
        .items
        .into_iter()
        .map(|entry| (entry.action, entry.item))
        .collect()
}

/// An append of `size` episodes by the writer whose run is open waits for the partition's
/// lock while another connection holds it exclusive and appends a forget of the partition to
/// the trail, as a forget does. Once that commits, the append must read the trail as it is
/// then: the forget ended the run, so the append opens a new one. (Reading the trail as it was
/// when the statement began, the append would find its run still open and leave episodes
/// after the forget with no write entry of their own.)
fn forget_while_append_waits(url: &str, size: usize) {
    let (store, schema, _) = store_with_one_episode(url, "forget_wait");
    let mut holder = Client::connect(url, NoTls).expect("connect the forgetter");
    let mut forgetter = holder.transaction().expect("begin");
    lock_partition_exclusive(&mut forgetter);
    let mut watcher = Client::connect(url, NoTls).expect("connect the watcher");
    let appender = spawn_waiting_append(&store, size, &mut watcher);
    forgetter
        .execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&AUDIT_LOCK_CLASS, &schema],
        )
        .expect("take the trail's lock");
    append_forget_entry(&mut forgetter, &schema);
    forgetter.commit().expect("commit the forget");
    appender
        .join()
        .expect("the appender thread")
        .expect("the append completes once the forget has committed");
    assert_eq!(
        trail(&store),
        [
            (Action::Write, "checkout".to_owned()),
            (Action::Forget, "checkout".to_owned()),
            (Action::Write, "checkout".to_owned()),
        ],
        "an append of {size} after a forget it waited for opens a new run"
    );
    store.drop_schema().expect("drop the schema");
}

#[test]
fn a_rolled_back_entry_or_another_partitions_entry_leaves_the_writers_run_open() {
    let Some(url) = server() else { return };
    let (store, schema, _) = store_with_one_episode(&url, "trail_gap");
    // A number drawn from the trail's sequence by an entry that was rolled back: the
    // sequence is ahead of every entry the next append sees.
    let mut other = Client::connect(&url, NoTls).expect("connect");
    let mut tx = other.transaction().expect("begin");
    append_forget_entry(&mut tx, &schema);
    tx.rollback().expect("roll it back");
    store
        .append_episodes(&[episode("checkout", "b")])
        .expect("append after the gap");
    // Another partition's run opens: the trail's newest entry is no longer about checkout.
    store
        .append_episodes(&[episode("returns", "c")])
        .expect("append to another partition");
    store
        .append_episodes(&[episode("checkout", "d")])
        .expect("append to checkout again");
    assert_eq!(
        trail(&store),
        [
            (Action::Write, "checkout".to_owned()),
            (Action::Write, "returns".to_owned()),
        ],
        "one writer's appends continue its run of each partition"
    );
    store.drop_schema().expect("drop the schema");
}

/// A one-episode append trusts its own snapshot of the trail when no entry was numbered after
/// the newest it sees (see `APPEND_ONE`), which holds because entries draw their numbers one at
/// a time, in the order they commit. A sequence handing out numbers in blocks per connection
/// would break that order.
#[test]
fn the_trail_draws_its_numbers_one_at_a_time() {
    let Some(url) = server() else { return };
    let (store, schema, _) = store_with_one_episode(&url, "trail_cache");
    let mut client = Client::connect(&url, NoTls).expect("connect");
    let cache: i64 = client
        .query_one(
            "SELECT cache_size FROM pg_sequences WHERE schemaname = $1 \
             AND sequencename = 'audit_seq_seq'",
            &[&schema],
        )
        .expect("the trail's sequence is audit_seq_seq")
        .get(0);
    assert_eq!(cache, 1, "the trail's sequence must not cache numbers");
    store.drop_schema().expect("drop the schema");
}

#[test]
fn a_partitionless_batch_of_many_partitions_gets_ascending_seqs_in_batch_order() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("order");
    let store = PostgresStore::connect_with(&url, &PostgresOptions::default().with_schema(&schema))
        .expect("connect");
    let batch: Vec<NewEpisode> = (0..50)
        .map(|i| episode(["b", "a", "c"][i % 3], &format!("t{i}")))
        .collect();
    let seqs = store.append_episodes(&batch).expect("append");
    assert_eq!(seqs.len(), batch.len());
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let stored = Episode::numbered(batch, seqs).expect("one number per episode");
    for partition in ["a", "b", "c"] {
        let read = store
            .episodes_after(&Partition::new(partition).expect("partition"), 0, 100)
            .expect("read back");
        let want: Vec<_> = stored
            .iter()
            .filter(|e| e.episode.partition.as_str() == partition)
            .cloned()
            .collect();
        assert_eq!(read, want);
    }
    store.drop_schema().expect("drop the schema");
}

#[test]
fn one_episode_alone_is_stored_as_the_same_row_as_in_a_batch() {
    let Some(url) = server() else { return };
    let schema = fresh_schema("rows");
    let store = PostgresStore::connect_with(&url, &PostgresOptions::default().with_schema(&schema))
        .expect("connect");
    let mut wanted = episode("p", "alone");
    wanted.trajectory = vec!["a \"quoted\" step".to_owned(), "ünïcode".to_owned()];
    wanted.outcome = r#"{"success":true}"#.to_owned();
    let alone = store
        .append_episodes(std::slice::from_ref(&wanted))
        .expect("append alone");
    let batch = store
        .append_episodes(&[wanted.clone(), episode("q", "other")])
        .expect("append in a batch");
    let mut client = Client::connect(&url, NoTls).expect("connect");
    let mut row = |seq: u64| {
        let row = client
            .query_one(
                &format!(
                    "SELECT partition, fingerprint, trajectory, outcome, recorded_at \
                     FROM {schema}.trajectory_episode WHERE seq = $1"
                ),
                &[&i64::try_from(seq).expect("seq")],
            )
            .expect("read the row");
        (
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, String>(3),
            row.get::<_, i64>(4),
        )
    };
    let (one, in_batch) = (row(alone[0]), row(batch[0]));
    assert_eq!(one, in_batch);
    assert_eq!(one.4, 1_700_000_000_000);
    store.drop_schema().expect("drop the schema");
}
