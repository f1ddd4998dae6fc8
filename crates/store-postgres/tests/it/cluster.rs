//! The throwaway cluster: it starts, serves over its socket and TCP, survives an immediate
//! stop (a crash to the database) with its acknowledged writes, and restarts on its data.

use agent_memory_core::Partition;
use agent_memory_core::store::trajectory::EpisodeStore;
use agent_memory_postgres::cluster::{self, Cluster};
use agent_memory_postgres::{PostgresOptions, PostgresStore};
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};

use crate::one_statement::episode;

fn connect(url: &str) -> Client {
    Client::connect(url, NoTls).unwrap_or_else(|e| panic!("connect to {url}: {e}"))
}

/// A data directory under cargo's scratch space for integration tests: its parents are
/// searchable by the server's user when the tests run as root.
fn data_dir(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()))
}

#[test]
fn a_cluster_starts_survives_an_immediate_stop_and_starts_again() {
    let bin = match cluster::bin_dir() {
        Ok(bin) => bin,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "with CI=true the cluster test needs PostgreSQL: {e}");
            eprintln!("skipping the cluster test: {e}");
            return;
        }
    };
    let dir = data_dir("cluster");
    let mut cluster = Cluster::start_with_binaries(&bin, &dir).unwrap_or_else(|e| panic!("{e}"));
    assert!(cluster.is_running());
    assert!(cluster.data_dir().join("PG_VERSION").is_file());

    let url = cluster.url();
    let config: postgres::Config = url.parse().expect("the socket url parses");
    assert!(
        matches!(config.get_hosts(), [postgres::config::Host::Unix(path)] if path == cluster.socket_dir()),
        "{url} -> {:?}",
        config.get_hosts()
    );
    let mut client = connect(&url);
    let one: i32 = client.query_one("SELECT 1", &[]).expect("select").get(0);
    assert_eq!(one, 1);
    let max: String = client
        .query_one("SHOW max_connections", &[])
        .expect("show")
        .get(0);
    assert_eq!(max, cluster::MAX_CONNECTIONS.to_string());
    client
        .batch_execute("CREATE TABLE acked (n int); INSERT INTO acked VALUES (7)")
        .expect("write");
    // A store whose one pooled connection the restart below will close.
    let store = PostgresStore::connect_with(&url, &PostgresOptions::default().with_pool_size(1))
        .expect("connect a store");
    let before = store
        .append_episodes(&[episode("restart", "before")])
        .expect("append before the restart");
    // A second store, for the readiness probe (the first keeps its connection for the
    // idle check below).
    // Its connection string's `connect_timeout` wins over the options' default (10 s).
    let probe = PostgresStore::connect_with(
        &format!("{url}&connect_timeout=1"),
        &PostgresOptions::default().with_pool_size(1),
    )
    .expect("connect a probe");
    probe.ping().expect("the server answers");

    let mut tcp = connect(&cluster.tcp_url());
    let addr: String = tcp
        .query_one("SELECT host(inet_server_addr())", &[])
        .expect("server address")
        .get(0);
    assert_eq!(addr, "127.0.0.1");

    cluster.stop_immediate().expect("stop -m immediate");
    assert!(!cluster.is_running());
    assert!(
        client.query_one("SELECT 1", &[]).is_err(),
        "the server is down"
    );
    drop((client, tcp));
    let asked = Instant::now();
    let down = probe.ping().expect_err("no server, no answer");
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "a call waits for a connection for the URL's connect timeout (1 s), once: {:?}",
        asked.elapsed()
    );
    assert!(
        matches!(down, agent_memory_core::Error::Backend { .. }),
        "{down:?}"
    );

    cluster.start_again().expect("start again");
    let mut client = connect(&cluster.url());
    let n: i32 = client
        .query_one("SELECT n FROM acked", &[])
        .expect("the acknowledged row survived")
        .get(0);
    assert_eq!(n, 7);
    drop(client);
    probe.ping().expect("the server answers again");
    // The pooled connection is dead; the write must find that out before sending (an
    // append is one statement, so a loss after sending would be "outcome unknown").
    let after = store
        .append_episodes(&[episode("restart", "after")])
        .expect("an append after the restart is not lost to the closed connection");
    let all = store
        .episodes_after(&Partition::new("restart").expect("partition"), 0, 10)
        .expect("read after the restart");
    let seqs: Vec<_> = all.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [before, after].concat());
    let written: Vec<_> = all.into_iter().map(|e| e.episode).collect();
    assert_eq!(
        written,
        [episode("restart", "before"), episode("restart", "after")]
    );
    drop(store);

    cluster.stop().expect("stop");
    assert!(connect_fails(&cluster.tcp_url()));
    let socket_dir = cluster.socket_dir().to_owned();
    drop(cluster);
    assert!(!socket_dir.exists(), "the socket directory is removed");
    std::fs::remove_dir_all(&dir).expect("remove the data directory");
}

fn connect_fails(url: &str) -> bool {
    Client::connect(url, NoTls).is_err()
}

#[test]
fn a_missing_binary_directory_is_named() {
    let error = Cluster::start_with_binaries(
        std::path::Path::new("/nonexistent/pg/bin"),
        data_dir("never"),
    )
    .expect_err("no binaries");
    assert!(
        error.to_string().contains("/nonexistent/pg/bin/initdb"),
        "{error}"
    );
}
