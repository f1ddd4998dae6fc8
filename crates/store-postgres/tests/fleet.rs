//! Many agents on one database: worker processes (this binary re-executed) share one schema
//! for a bounded time, each recording episodes with ids of its own, crystallizing and reading
//! back what recall reads; afterwards every acknowledged episode is stored exactly once and
//! crystallize observed every episode exactly once across all workers.
//!
//! Each crystallize runs a counting step: it adds one to its group's episode count per
//! episode it is handed, and the worker reports the sequence numbers its successful step saw
//! (a step may run again when the store retries the transaction; only the last run counts).
//! After the workers stop, the parent crystallizes once more, then checks that the reported
//! sequence numbers are exactly the stored ones with none seen twice, that the groups'
//! episode counts add up to the number of episodes, and that the watermark is the last one.
//!
//! Where the machine allows it (root, `ip` from iproute2), each worker runs in a network
//! namespace of its own, reaching a private cluster (`agent_memory_postgres::cluster`) over
//! a veth pair on a bridge, as separate hosts would; the server listens on the bridge's
//! address. When the namespaces cannot be set up the test says why on stderr and runs the
//! workers as plain processes against `AGENT_MEMORY_TEST_POSTGRES` (without a server it says so
//! and passes, except with `CI=true`).
//!
//! `AGENT_MEMORY_FLEET_AGENTS` sets how many workers (default 8), `AGENT_MEMORY_FLEET_MILLIS`
//! for how long they write (default 3000); `AGENT_MEMORY_FLEET_NAMESPACES=0` runs them as plain
//! processes. The workers' choices come from fixed seeds.

#[allow(dead_code)]
#[path = "it/support.rs"]
mod support;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use agent_memory_core::store::trajectory::Seq;
use agent_memory_core::store::trajectory::{
    CrystallizeInput, CrystallizeOutput, Fingerprint, Group, NewEpisode,
};
use agent_memory_core::{EpisodeStore, Partition, PatternStore, SplitMix64, Timestamp};
use agent_memory_postgres::cluster::Cluster;
use agent_memory_postgres::{PostgresOptions, PostgresStore};

/// Set in a worker's environment: `<agent> <schema> <url>`.
const WORKER_ENV: &str = "AGENT_MEMORY_FLEET_WORKER";
const AGENTS_ENV: &str = "AGENT_MEMORY_FLEET_AGENTS";
const MILLIS_ENV: &str = "AGENT_MEMORY_FLEET_MILLIS";
/// Set to `0` to run the workers as plain processes even where namespaces would work.
const NAMESPACES_ENV: &str = "AGENT_MEMORY_FLEET_NAMESPACES";
const NAME: &str = "agents_share_one_memory_without_losing_or_repeating_an_episode";

fn main() -> ExitCode {
    if let Ok(args) = std::env::var(WORKER_ENV) {
        return match worker(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("fleet worker {args:?}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if std::env::args().any(|a| a == "--list") {
        println!("{NAME}: test");
        return ExitCode::SUCCESS;
    }
    match parent() {
        Ok(summary) => {
            println!("{summary}");
            println!("1 passed, 0 failed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{NAME} FAILED: {e}");
            println!("0 passed, 1 failed");
            ExitCode::FAILURE
        }
    }
}

fn partition() -> Partition {
    Partition::new("fleet").expect("valid partition")
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn open(url: &str, schema: &str) -> Result<PostgresStore, String> {
    let options = PostgresOptions::default()
        .with_schema(schema)
        .with_pool_size(2);
    PostgresStore::connect_with(url, &options).map_err(|e| format!("connect to {url}: {e}"))
}

/// Crystallizes `partition` with a step that counts each episode into its group's episode
/// count; returns the sequence numbers the committed run of the step saw.
fn crystallize(store: &PostgresStore) -> Result<Vec<Seq>, String> {
    let seen: RefCell<Vec<Seq>> = RefCell::new(Vec::new());
    let step = |input: &CrystallizeInput| {
        // A retried transaction runs the step again: only the last run is the one committed.
        *seen.borrow_mut() = input.episodes.iter().map(|e| e.seq).collect();
        let mut groups: BTreeMap<String, Group> = input
            .groups
            .iter()
            .map(|g| (g.fingerprint.key(), g.clone()))
            .collect();
        for e in &input.episodes {
            groups
                .entry(e.episode.fingerprint.key())
                .or_insert_with(|| Group {
                    fingerprint: e.episode.fingerprint.clone(),
                    episode_count: 0,
                    canonical: None,
                    pending: Vec::new(),
                    pattern: None,
                })
                .episode_count += 1;
        }
        Ok(CrystallizeOutput {
            groups: groups.into_values().collect(),
            tallies: input.tallies.clone(),
            reinforced: Vec::new(),
        })
    };
    store
        .crystallize_with(&partition(), &step)
        .map_err(|e| format!("crystallize: {e}"))?;
    Ok(seen.into_inner())
}

/// The fingerprints the workers record under: a few, so crystallizes touch the same groups.
fn fingerprint(task: u64) -> Result<Fingerprint, String> {
    Fingerprint::new([("task", task.to_string())]).map_err(|e| e.to_string())
}

/// A worker: until its time is up, records a batch of episodes, and now and then
/// crystallizes or reads back. Prints `recorded <agent> <n> <seq>` per acknowledged episode,
/// `observed <seq>...` per crystallize, and a closing `done` line with its counts.
fn worker(args: &str) -> Result<(), String> {
    let mut parts = args.splitn(3, ' ');
    let (Some(agent), Some(schema), Some(url)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(format!("{WORKER_ENV} must be `<agent> <schema> <url>`"));
    };
    let agent: u64 = agent.parse().map_err(|_| format!("bad agent {agent:?}"))?;
    let store = open(url, schema)?;
    let until = Instant::now() + Duration::from_millis(env_number(MILLIS_ENV, 3000));
    let mut rng = SplitMix64::new(0xf1ee7 + agent);
    let mut out = std::io::stdout().lock();
    let (mut n, mut crystallizes, mut recalls) = (0u64, 0u64, 0u64);
    let io = |e: std::io::Error| e.to_string();
    while Instant::now() < until {
        let batch: Vec<NewEpisode> = (0..1 + rng.below(4))
            .map(|i| {
                Ok(NewEpisode {
                    partition: partition(),
                    fingerprint: fingerprint(rng.below(4))?,
                    trajectory: vec!["open".to_owned(), format!("step{}", i % 3)],
                    outcome: format!(r#"{{"agent":{agent},"n":{}}}"#, n + i),
                    recorded_at: Timestamp::from_millis(1_767_225_600_000 + (n + i) as i64),
                    provenance: None,
                })
            })
            .collect::<Result<_, String>>()?;
        let stored = store
            .append_episodes(&batch)
            .map_err(|e| format!("record: {e}"))?;
        for seq in &stored {
            writeln!(out, "recorded {agent} {n} {seq}").map_err(io)?;
            n += 1;
        }
        match rng.below(6) {
            0 => {
                let seen = crystallize(&store)?;
                let list: Vec<String> = seen.iter().map(u64::to_string).collect();
                writeln!(out, "observed {}", list.join(" ")).map_err(io)?;
                crystallizes += 1;
            }
            1 | 2 => {
                // What recall reads: the partition's patterns and a group's state.
                store
                    .patterns(&partition(), &Fingerprint::default())
                    .map_err(|e| format!("recall patterns: {e}"))?;
                store
                    .group(&partition(), &fingerprint(rng.below(4))?)
                    .map_err(|e| format!("recall group: {e}"))?;
                recalls += 1;
            }
            _ => {}
        }
    }
    writeln!(out, "done {n} {crystallizes} {recalls}").map_err(io)?;
    out.flush().map_err(io)
}

/// Where the workers run: plain processes against a server, or each in a network namespace
/// of its own against a private cluster.
struct Fleet {
    url: String,
    worker_url: String,
    namespaces: Option<Namespaces>,
    /// Kept alive (and stopped when dropped) when the fleet has its own cluster.
    _cluster: Option<Cluster>,
}

fn parent() -> Result<String, String> {
    let agents = env_number(AGENTS_ENV, 8);
    let Some(fleet) = fleet(agents)? else {
        return Ok("no server: skipped".to_owned());
    };
    let schema = support::fresh_schema("fleet");
    let store = open(&fleet.url, &schema)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut children = Vec::new();
    for agent in 0..agents {
        let env = format!("{agent} {schema} {}", fleet.worker_url);
        let mut command = match &fleet.namespaces {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns.name(agent)]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let child = command
            .env(WORKER_ENV, env)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("spawn worker {agent}: {e}"))?;
        children.push(child);
    }
    let mut outputs = Vec::new();
    for (agent, child) in children.into_iter().enumerate() {
        let output = child
            .wait_with_output()
            .map_err(|e| format!("wait for worker {agent}: {e}"))?;
        if !output.status.success() {
            return Err(format!("worker {agent} failed ({})", output.status));
        }
        outputs.push(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let final_seen = crystallize(&store)?;
    let summary = check(&store, &outputs, &final_seen)?;
    let place = match &fleet.namespaces {
        Some(_) => "each in a network namespace of its own over a veth pair",
        None => "as plain processes",
    };
    drop_schema(&fleet.url, &schema)?;
    Ok(format!("{agents} agents {place}: {summary}"))
}

/// Checks the stored episodes and the crystallizes against what the workers reported.
fn check(store: &PostgresStore, outputs: &[String], final_seen: &[Seq]) -> Result<String, String> {
    let bad = |line: &str| format!("bad worker line {line:?}");
    // (agent, n) -> seq as acknowledged.
    let mut acknowledged: BTreeMap<(u64, u64), Seq> = BTreeMap::new();
    let mut observed: BTreeMap<Seq, u32> = BTreeMap::new();
    let (mut crystallizes, mut recalls, mut done) = (0u64, 0u64, 0usize);
    for output in outputs {
        for line in output.lines() {
            let fields: Vec<&str> = line.split(' ').collect();
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad(line));
            match fields[..] {
                ["recorded", agent, n, seq] => {
                    if acknowledged
                        .insert((num(agent)?, num(n)?), num(seq)?)
                        .is_some()
                    {
                        return Err(format!("episode {agent}/{n} acknowledged twice"));
                    }
                }
                ["observed", ref seqs @ ..] => {
                    for seq in seqs.iter().filter(|s| !s.is_empty()) {
                        *observed.entry(num(seq)?).or_default() += 1;
                    }
                }
                ["done", _, c, r] => {
                    crystallizes += num(c)?;
                    recalls += num(r)?;
                    done += 1;
                }
                _ => return Err(bad(line)),
            }
        }
    }
    if done != outputs.len() {
        return Err(format!(
            "{} of {} workers did not finish",
            outputs.len() - done,
            outputs.len()
        ));
    }
    for seq in final_seen {
        *observed.entry(*seq).or_default() += 1;
    }
    let stored = store
        .episodes_after(&partition(), 0, usize::MAX)
        .map_err(|e| format!("read the episodes: {e}"))?;
    let mut found: BTreeMap<(u64, u64), Seq> = BTreeMap::new();
    for e in &stored {
        let id = episode_id(&e.episode.outcome)?;
        if let Some(first) = found.insert(id, e.seq) {
            return Err(format!(
                "episode {}/{} is stored twice (seqs {first} and {})",
                id.0, id.1, e.seq
            ));
        }
    }
    for (id, seq) in &acknowledged {
        match found.get(id) {
            Some(stored) if stored == seq => {}
            Some(stored) => {
                return Err(format!(
                    "episode {}/{} was acknowledged as seq {seq} but is stored as {stored}",
                    id.0, id.1
                ));
            }
            None => {
                return Err(format!(
                    "acknowledged episode {}/{} (seq {seq}) is missing",
                    id.0, id.1
                ));
            }
        }
    }
    if let Some(id) = found.keys().find(|id| !acknowledged.contains_key(id)) {
        return Err(format!(
            "episode {}/{} is stored but was never acknowledged",
            id.0, id.1
        ));
    }
    if let Some((seq, times)) = observed.iter().find(|(_, times)| **times > 1) {
        return Err(format!("crystallize observed seq {seq} {times} times"));
    }
    let stored_seqs: BTreeSet<Seq> = stored.iter().map(|e| e.seq).collect();
    let observed_seqs: BTreeSet<Seq> = observed.keys().copied().collect();
    if let Some(seq) = stored_seqs.difference(&observed_seqs).next() {
        return Err(format!("crystallize never observed seq {seq}"));
    }
    if let Some(seq) = observed_seqs.difference(&stored_seqs).next() {
        return Err(format!(
            "crystallize observed seq {seq}, which is not stored"
        ));
    }
    let mut counted = 0;
    for task in 0..4 {
        if let Some(group) = store
            .group(&partition(), &fingerprint(task)?)
            .map_err(|e| format!("read group {task}: {e}"))?
        {
            counted += group.episode_count;
        }
    }
    if counted != stored.len() as u64 {
        return Err(format!(
            "the groups count {counted} episodes, the partition holds {}",
            stored.len()
        ));
    }
    let watermark = store.watermark(&partition()).map_err(|e| e.to_string())?;
    let last = stored_seqs.last().copied().unwrap_or(0);
    if watermark != last {
        return Err(format!(
            "the watermark is {watermark}, the last episode {last}"
        ));
    }
    Ok(format!(
        "{} episodes recorded and stored once each, {crystallizes} crystallizes (+1 at the end) observed each once, {recalls} recalls",
        stored.len()
    ))
}

/// `(agent, n)` of an episode's outcome `{"agent":A,"n":N}`.
fn episode_id(outcome: &str) -> Result<(u64, u64), String> {
    let bad = || format!("unexpected outcome {outcome:?}");
    let rest = outcome.strip_prefix(r#"{"agent":"#).ok_or_else(bad)?;
    let (agent, rest) = rest.split_once(r#","n":"#).ok_or_else(bad)?;
    let n = rest.strip_suffix('}').ok_or_else(bad)?;
    Ok((
        agent.parse().map_err(|_| bad())?,
        n.parse().map_err(|_| bad())?,
    ))
}

/// Drops a passed test's schema.
fn drop_schema(url: &str, schema: &str) -> Result<(), String> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)
        .map_err(|e| format!("connect to drop {schema}: {e}"))?;
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .map_err(|e| format!("drop schema {schema}: {e}"))
}

/// The fleet: namespaces and a private cluster where the machine allows, else the test
/// server; `None` when there is no server (outside CI).
fn fleet(agents: u64) -> Result<Option<Fleet>, String> {
    let wanted = std::env::var(NAMESPACES_ENV).map_or(true, |v| v != "0");
    let attempt = if wanted {
        namespaced(agents)
    } else {
        Err(format!("{NAMESPACES_ENV}=0"))
    };
    match attempt {
        Ok(fleet) => return Ok(Some(fleet)),
        Err(e) => {
            eprintln!("network namespaces unavailable ({e}): the agents run as plain processes")
        }
    }
    Ok(support::server().map(|url| Fleet {
        worker_url: url.clone(),
        url,
        namespaces: None,
        _cluster: None,
    }))
}

/// A bridge on the host and one namespace per agent, joined to it by a veth pair, and a
/// private cluster listening on the bridge's address.
fn namespaced(agents: u64) -> Result<Fleet, String> {
    let namespaces = Namespaces::create(agents)?;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pg-fleet");
    let mut cluster = Cluster::start(&dir).map_err(|e| format!("start a cluster: {e}"))?;
    let url = cluster.url();
    let host = namespaces.host_address();
    {
        let mut client =
            postgres::Client::connect(&url, postgres::NoTls).map_err(|e| e.to_string())?;
        client
            .batch_execute(&format!(
                "ALTER SYSTEM SET listen_addresses = '127.0.0.1,{host}'"
            ))
            .map_err(|e| format!("listen on {host}: {e}"))?;
    }
    let hba = cluster.data_dir().join("pg_hba.conf");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&hba)
        .map_err(|e| format!("open {}: {e}", hba.display()))?;
    writeln!(file, "host all all {}/24 trust", namespaces.subnet())
        .map_err(|e| format!("write {}: {e}", hba.display()))?;
    cluster.stop().map_err(|e| e.to_string())?;
    cluster.start_again().map_err(|e| e.to_string())?;
    Ok(Fleet {
        worker_url: format!("postgres://postgres@{host}:{}/postgres", cluster.port()),
        url,
        namespaces: Some(namespaces),
        _cluster: Some(cluster),
    })
}

/// The namespaces of one run, removed when dropped.
struct Namespaces {
    id: u32,
    agents: u64,
}

impl Namespaces {
    fn create(agents: u64) -> Result<Namespaces, String> {
        let id = std::process::id();
        // Dropping removes whatever was made, even when a later step fails.
        let made = Namespaces { id, agents: 0 };
        let bridge = made.bridge();
        ip(&["link", "add", &bridge, "type", "bridge"])?;
        ip(&[
            "addr",
            "add",
            &format!("{}/24", made.host_address()),
            "dev",
            &bridge,
        ])?;
        ip(&["link", "set", &bridge, "up"])?;
        let mut made = made;
        for agent in 0..agents {
            let ns = made.name(agent);
            let (host_end, ns_end) = (format!("amh{id}x{agent}"), format!("amn{id}x{agent}"));
            ip(&["netns", "add", &ns])?;
            made.agents = agent + 1;
            ip(&[
                "link", "add", &host_end, "type", "veth", "peer", "name", &ns_end,
            ])?;
            ip(&["link", "set", &ns_end, "netns", &ns])?;
            ip(&["link", "set", &host_end, "master", &bridge])?;
            ip(&["link", "set", &host_end, "up"])?;
            let address = format!("{}.{}/24", made.subnet_prefix(), 10 + agent);
            ip(&["-n", &ns, "addr", "add", &address, "dev", &ns_end])?;
            ip(&["-n", &ns, "link", "set", &ns_end, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(made)
    }

    fn name(&self, agent: u64) -> String {
        format!("agent-memory-fleet-{}-{agent}", self.id)
    }

    fn bridge(&self) -> String {
        format!("amb{}", self.id)
    }

    /// The first three octets of this run's subnet (one of 200, from the process id).
    fn subnet_prefix(&self) -> String {
        format!("10.213.{}", 20 + self.id % 200)
    }

    fn subnet(&self) -> String {
        format!("{}.0", self.subnet_prefix())
    }

    fn host_address(&self) -> String {
        format!("{}.1", self.subnet_prefix())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for agent in 0..self.agents {
            // Deleting a namespace deletes the veth pair with its end inside.
            let _ = ip(&["netns", "del", &self.name(agent)]);
        }
        let _ = ip(&["link", "del", &self.bridge()]);
    }
}

/// Runs `ip args`; an error says what failed and what `ip` printed.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    ))
}
