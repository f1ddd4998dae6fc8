//! The contract of [`EpisodeStore`](crate::store::trajectory::EpisodeStore) and [`PatternStore`].
//!
//! The cases drive crystallize with [`counting_step`], a step with no policy at all (every
//! episode counts once into its group and tally), so what they check is the store's part:
//! sequence numbers, watermarks, atomicity, exactly-once delivery and recall filtering.

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use crate::names::{MetaKey, Partition};
use crate::provenance::{Provenance, Source};
use crate::store::AuditStore;
use crate::store::trajectory::{
    CrystallizeInput, CrystallizeOutput, Episode, Fingerprint, Group, NewEpisode, PatternStats,
    PatternStore, TrajectoryTally, decode_texts, encode_texts,
};
use crate::testkit::{Case, CaseResult, forgets_of, forgetter, forgot, writes_of};
use crate::time::Timestamp;
use crate::{Error, ensure, ensure_eq};

/// The suite's name in reports.
pub const SUITE: &str = "EpisodeStore + PatternStore";

/// Every case of the trajectory store contract.
pub fn cases<S: PatternStore + AuditStore>() -> Vec<Case<S>> {
    vec![
        Case {
            name: "append numbers episodes in order",
            run: append_numbers_in_order,
        },
        Case {
            name: "an episode keeps who recorded it",
            run: episodes_keep_their_writer,
        },
        Case {
            name: "each writer's run of episodes is one entry of the audit trail",
            run: each_run_of_episodes_is_audited,
        },
        Case {
            name: "a large batch numbers every episode, and numbers are never reused, pruned or forgotten",
            run: large_batches_number_every_episode,
        },
        Case {
            name: "crystallize observes each episode once",
            run: observes_each_episode_once,
        },
        Case {
            name: "crystallize hands over touched state only",
            run: hands_over_touched_state,
        },
        Case {
            name: "a run in pages stores and answers what one step over all its episodes does",
            run: a_run_in_pages_equals_one_step,
        },
        Case {
            name: "failed step changes nothing",
            run: failed_step_changes_nothing,
        },
        Case {
            name: "recall filters exact and partial",
            run: recall_filters,
        },
        Case {
            name: "partitions are isolated",
            run: partitions_are_isolated,
        },
        Case {
            name: "prune removes only observed old episodes",
            run: prune_only_observed,
        },
        Case {
            name: "values keep any text",
            run: values_keep_any_text,
        },
        Case {
            name: "concurrent crystallizers observe each episode once",
            run: concurrent_crystallizers,
        },
        Case {
            name: "settings are stored with the episodes or not at all",
            run: settings_with_episodes,
        },
        Case {
            name: "racing first writers with other settings store one of them",
            run: racing_first_writers,
        },
        Case {
            name: "partitions list with their counts",
            run: partitions_list_with_counts,
        },
        Case {
            name: "forget deletes one partition only, its configuration with it",
            run: forget_deletes_one_partition_only,
        },
        Case {
            name: "pending groups are the groups below the threshold, by fingerprint",
            run: pending_groups_below_the_threshold,
        },
        Case {
            name: "a group's episodes, in order, and only its own",
            run: group_episodes_in_order,
        },
        Case {
            name: "patterns and pending groups page by fingerprint key, with their totals",
            run: groups_page_by_key,
        },
        Case {
            name: "a forget by writer takes its episodes and rebuilds what they taught from the rest",
            run: forget_by_writer_rebuilds_groups,
        },
    ]
}

fn forget_by_writer_rebuilds_groups<S: PatternStore + AuditStore>(store: &S) -> CaseResult {
    let by = |session: &str| {
        let mut by = Provenance::new(Source::Model("m".to_owned()), Timestamp::from_millis(1));
        by.session = Some(session.to_owned());
        Some(by)
    };
    let written = |p: &str, fp: &str, trajectory: &str, at: i64, session: Option<&str>| {
        let mut e = episode(p, &[("f", fp)], &[trajectory], at);
        e.provenance = session.and_then(by);
        if let Some(writer) = &mut e.provenance {
            writer.at = e.recorded_at;
        }
        e
    };
    let p = partition("p");
    // Writers "bad" and "good" share their source and differ by session.
    let before = appended(
        store,
        vec![
            written("p", "1", "a", 1, Some("bad")),
            written("p", "1", "b", 2, Some("good")),
            written("p", "1", "b", 3, None),
            written("p", "2", "c", 4, Some("bad")),
            written("p", "3", "d", 5, Some("good")),
            written("q", "1", "a", 6, Some("bad")),
        ],
    )?;
    store.crystallize_with(&p, &counting_step)?;
    let watermark = store.watermark(&p)?;
    // Three more by the bad writer, above the watermark: never observed. Group 4 was never
    // crystallized, and the good writer has an episode in it too.
    let after = appended(
        store,
        vec![
            written("p", "1", "a", 7, Some("bad")),
            written("p", "3", "e", 8, Some("bad")),
            written("p", "4", "x", 9, Some("bad")),
            written("p", "4", "y", 10, Some("good")),
        ],
    )?;
    let bad = crate::evidence::Writer {
        source: Some(Source::Model("m".to_owned())),
        ..crate::evidence::Writer::session("bad")
    };
    ensure!(
        store
            .forget_episodes_by(
                &p,
                &crate::evidence::Writer::default(),
                &forgetter(),
                &counting_step
            )
            .is_err(),
        "a forget by a writer naming nothing must be refused"
    );
    // A failed rebuild changes nothing.
    let failing = |_: &CrystallizeInput| -> Result<CrystallizeOutput> {
        Err(Error::invalid_input("step", "refused on purpose"))
    };
    ensure!(
        store
            .forget_episodes_by(&p, &bad, &forgetter(), &failing)
            .is_err(),
        "a forget whose rebuild fails must fail"
    );
    ensure_eq!(
        store.episodes_after(&p, 0, 100)?.len(),
        9,
        "a forget whose rebuild failed deleted episodes"
    );
    ensure_eq!(evidence(store, "p", &[("f", "1")])?, 3);
    ensure_eq!(forgets_of(store, "trajectory")?, Vec::new());

    let forgotten = store.forget_episodes_by(&p, &bad, &forgetter(), &counting_step)?;
    ensure_eq!(
        forgotten,
        crate::store::trajectory::EpisodesForgotten {
            episodes: 5,
            groups: vec![
                (fingerprint(&[("f", "1")]), 2),
                (fingerprint(&[("f", "2")]), 0)
            ],
        },
        "the writer's five episodes of p go; the two groups they were folded into are rebuilt"
    );
    ensure_eq!(
        store.episodes_after(&p, 0, 100)?,
        vec![
            before[1].clone(),
            before[2].clone(),
            before[4].clone(),
            after[3].clone()
        ],
        "only the writer's episodes go, the same source in another session stays"
    );
    ensure_eq!(
        store.episodes_after(&partition("q"), 0, 100)?,
        vec![before[5].clone()],
        "another partition is untouched"
    );
    ensure_eq!(store.watermark(&p)?, watermark, "the watermark stays");
    // Group 1 is as if the writer had never recorded: two episodes, both "b".
    let one = store.group(&p, &fingerprint(&[("f", "1")]))?;
    ensure_eq!(one.as_ref().map(|g| g.episode_count), Some(2));
    ensure_eq!(
        one.as_ref().and_then(|g| g.canonical.clone()),
        Some(TrajectoryTally {
            trajectory: vec!["b".to_owned()],
            count: 2,
            newest: Timestamp::from_millis(3),
            first_seq: before[1].seq,
        })
    );
    ensure_eq!(evidence(store, "p", &[("f", "1")])?, 2);
    ensure_eq!(
        store.group(&p, &fingerprint(&[("f", "2")]))?,
        None,
        "a group with no episode left is gone"
    );
    ensure_eq!(
        evidence(store, "p", &[("f", "3")])?,
        1,
        "an untouched group stays"
    );
    ensure_eq!(
        forgets_of(store, "trajectory")?,
        vec![forgot("", "p", "5 episodes, 2 groups rebuilt")]
    );
    // The next run: the forgotten numbers are not given again, the writer's "a" tally is
    // gone with it, and the episode above the old watermark is never observed.
    let next = appended(store, vec![written("p", "1", "a", 11, Some("other"))])?;
    ensure!(
        next[0].seq > after[3].seq,
        "a forgotten episode's number was given again"
    );
    let seen = std::sync::Mutex::new(Vec::new());
    let watching = |input: &CrystallizeInput| {
        if let Ok(mut seen) = seen.lock() {
            *seen = input.tallies.clone();
        }
        counting_step(input)
    };
    store.crystallize_with(&p, &watching)?;
    let tallies = seen.lock().map(|t| t.clone()).unwrap_or_default();
    ensure!(
        tallies.iter().all(|(_, t)| t.trajectory != ["a"]),
        "the forgotten writer's tally was handed to the next run: {tallies:?}"
    );
    ensure_eq!(evidence(store, "p", &[("f", "1")])?, 3);
    ensure_eq!(evidence(store, "p", &[("f", "3")])?, 1);
    ensure_eq!(
        evidence(store, "p", &[("f", "4")])?,
        1,
        "a group the writer shared with another before any crystallize keeps the other's episode"
    );
    ensure_eq!(
        store.forget_episodes_by(&p, &bad, &forgetter(), &counting_step)?,
        crate::store::trajectory::EpisodesForgotten::default(),
        "a second forget finds nothing"
    );
    Ok(())
}

/// [`counting_step`], except that a group becomes a pattern only from two episodes on, so
/// the cases can tell patterns from groups still below a threshold.
fn step_with_threshold_two(input: &CrystallizeInput) -> Result<CrystallizeOutput> {
    let mut output = counting_step(input)?;
    for group in &mut output.groups {
        if group.episode_count < 2 {
            group.pattern = None;
        }
    }
    output.reinforced.retain(|fp| {
        output
            .groups
            .iter()
            .any(|g| &g.fingerprint == fp && g.pattern.is_some())
    });
    Ok(output)
}

/// `episodes` appended, each with the sequence number the store answered for it; fails
/// unless it answered one per episode.
fn appended<S: PatternStore>(store: &S, episodes: Vec<NewEpisode>) -> Result<Vec<Episode>> {
    let seqs = store.append_episodes(&episodes)?;
    Episode::numbered(episodes, seqs)
}

fn group_episodes_in_order<S: PatternStore>(store: &S) -> CaseResult {
    let one = fingerprint(&[("f", "1"), ("g", "x")]);
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, 0, 10)?,
        Vec::new()
    );
    let stored = appended(
        store,
        vec![
            episode("p", &[("f", "1"), ("g", "x")], &["a"], 1),
            episode("p", &[("f", "1")], &["b"], 2),
            episode("q", &[("f", "1"), ("g", "x")], &["c"], 3),
            episode("p", &[("f", "1"), ("g", "x")], &["d"], 4),
            episode("p", &[("f", "2"), ("g", "x")], &["e"], 5),
            episode("p", &[("g", "x"), ("f", "1")], &["f"], 6),
        ],
    )?;
    let mine: Vec<Episode> = [0, 3, 5].iter().map(|&i| stored[i].clone()).collect();
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, 0, 10)?,
        mine.clone()
    );
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, 0, 2)?,
        mine[..2].to_vec()
    );
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, 0, 0)?,
        Vec::new()
    );
    ensure_eq!(
        store.group_episodes(&partition("r"), &one, 0, 10)?,
        Vec::new(),
        "an unknown partition"
    );
    // The next page starts after the last episode of the one before.
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, mine[1].seq, 10)?,
        mine[2..].to_vec(),
        "after the second episode"
    );
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, mine[0].seq, 1)?,
        mine[1..2].to_vec(),
        "one after the first"
    );
    ensure_eq!(
        store.group_episodes(&partition("p"), &one, mine[2].seq, 10)?,
        Vec::new(),
        "after the last"
    );
    Ok(())
}

fn partitions_list_with_counts<S: PatternStore>(store: &S) -> CaseResult {
    ensure_eq!(store.partitions()?, Vec::new());
    let episodes = [
        episode("p", &[("f", "1")], &["x"], 1),
        episode("p", &[("f", "1")], &["x", "step two"], 7),
        episode("p", &[("f", "2")], &["y"], 3),
        episode("q", &[("f", "1")], &["x"], 4),
    ];
    store.append_episodes(&episodes)?;
    store.crystallize_with(&partition("p"), &step_with_threshold_two)?;
    let bytes = |p: &str| -> u64 {
        episodes
            .iter()
            .filter(|e| e.partition.as_str() == p)
            .map(|e| {
                let trajectory = encode_texts(e.trajectory.iter().map(String::as_str));
                (trajectory.len() + e.outcome.len()) as u64
            })
            .sum()
    };
    // Name, episodes, patterns, pending groups, crystallized, bytes, last write.
    type Listed = (String, u64, u64, u64, bool, u64, Option<Timestamp>);
    let listed: Vec<Listed> = store
        .partitions()?
        .into_iter()
        .map(|s| {
            let at_end = s.watermark > 0;
            (
                s.partition.as_str().to_owned(),
                s.episodes,
                s.patterns,
                s.pending_groups,
                at_end,
                s.bytes,
                s.last_write,
            )
        })
        .collect();
    // The last write is the newest episode's own time, not the last appended's.
    ensure_eq!(
        listed,
        vec![
            (
                "p".to_owned(),
                3,
                1,
                1,
                true,
                bytes("p"),
                Some(Timestamp::from_millis(7))
            ),
            (
                "q".to_owned(),
                1,
                0,
                0,
                false,
                bytes("q"),
                Some(Timestamp::from_millis(4))
            )
        ]
    );
    // Pruned episodes leave the counts; a partition of groups only has no last write.
    let first = {
        let e = &episodes[0];
        (encode_texts(e.trajectory.iter().map(String::as_str)).len() + e.outcome.len()) as u64
    };
    ensure_eq!(
        store.prune_episodes(&partition("p"), Timestamp::from_millis(2))?,
        1
    );
    let p = |store: &S| -> Result<Option<(u64, u64, Option<Timestamp>)>> {
        Ok(store
            .partitions()?
            .into_iter()
            .find(|s| s.partition.as_str() == "p")
            .map(|s| (s.episodes, s.bytes, s.last_write)))
    };
    ensure_eq!(
        p(store)?,
        Some((2, bytes("p") - first, Some(Timestamp::from_millis(7))))
    );
    ensure_eq!(
        store.prune_episodes(&partition("p"), Timestamp::from_millis(100))?,
        2
    );
    ensure_eq!(p(store)?, Some((0, 0, None)));
    Ok(())
}

fn pending_groups_below_the_threshold<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    ensure_eq!(store.pending_groups(&p)?, Vec::new());
    // "10" sorts before "9" as text, after it as a stored length-prefixed key would.
    store.append_episodes(&[
        episode("p", &[("f", "9")], &["x"], 1),
        episode("p", &[("f", "a")], &["x"], 2),
        episode("p", &[("f", "a")], &["x"], 3),
        episode("p", &[("f", "10")], &["y"], 4),
        episode("q", &[("f", "1")], &["x"], 5),
    ])?;
    // Episodes not crystallized yet belong to no group.
    ensure_eq!(store.pending_groups(&p)?, Vec::new());
    store.crystallize_with(&p, &step_with_threshold_two)?;
    store.crystallize_with(&partition("q"), &step_with_threshold_two)?;
    // Each pending group as (its value of `f`, episodes, whether it has no pattern).
    type Listed = Vec<(String, u64, bool)>;
    let listed = |store: &S, name: &str| -> Result<Listed> {
        Ok(store
            .pending_groups(&partition(name))?
            .into_iter()
            .map(|g| {
                let value = g.fingerprint.get("f").unwrap_or_default().to_owned();
                (value, g.episode_count, g.pattern.is_none())
            })
            .collect())
    };
    let pair = |v: &str| v.to_owned();
    ensure_eq!(
        listed(store, "p")?,
        vec![(pair("10"), 1, true), (pair("9"), 1, true)]
    );
    ensure_eq!(listed(store, "q")?, vec![(pair("1"), 1, true)]);
    // A group that reaches the threshold is a pattern, no longer pending.
    store.append_episodes(&[episode("p", &[("f", "9")], &["x"], 6)])?;
    store.crystallize_with(&p, &step_with_threshold_two)?;
    ensure_eq!(listed(store, "p")?, vec![(pair("10"), 1, true)]);
    ensure_eq!(listed(store, "none")?, Vec::new());
    Ok(())
}

fn groups_page_by_key<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    let none = store.patterns_page(&p, None, 10)?;
    ensure_eq!((none.items.len(), none.total), (0, 0), "an empty partition");
    ensure_eq!(store.pending_groups_page(&p, None, 10)?.total, 0);
    // Two episodes make a pattern, one a pending group; values whose keys sort otherwise
    // than the values ("10" after "9" as a key), a second field, and another partition.
    let mut episodes = Vec::new();
    for (i, value) in ["9", "10", "a", "b", "c", "é"].iter().enumerate() {
        let times = if i % 2 == 0 { 2 } else { 1 };
        for t in 0..times {
            episodes.push(episode("p", &[("f", value)], &["x"], t));
        }
    }
    episodes.push(episode("p", &[("f", "z"), ("g", "1")], &["x"], 9));
    episodes.push(episode("q", &[("f", "a")], &["x"], 9));
    store.append_episodes(&episodes)?;
    store.crystallize_with(&p, &step_with_threshold_two)?;
    store.crystallize_with(&partition("q"), &step_with_threshold_two)?;
    let mut pattern_keys: Vec<String> = store
        .patterns(&p, &Fingerprint::default())?
        .iter()
        .map(|x| x.fingerprint.key())
        .collect();
    pattern_keys.sort();
    let mut pending_keys: Vec<String> = store
        .pending_groups(&p)?
        .iter()
        .map(|g| g.fingerprint.key())
        .collect();
    pending_keys.sort();
    ensure_eq!((pattern_keys.len(), pending_keys.len()), (3, 4));
    // Pages of two, each after the last key of the one before, go through every one in key
    // order, and each names the whole list's total.
    let mut walked = Vec::new();
    let mut after: Option<Fingerprint> = None;
    loop {
        let page = store.patterns_page(&p, after.as_ref(), 2)?;
        ensure_eq!(page.total, 3, "the patterns' total on every page");
        ensure!(
            page.items.len() <= 2,
            "a page of {} patterns",
            page.items.len()
        );
        let Some(last) = page.items.last() else { break };
        after = Some(last.fingerprint.clone());
        walked.extend(page.items.iter().map(|x| x.fingerprint.key()));
    }
    ensure_eq!(walked, pattern_keys, "the patterns, a page at a time");
    let mut walked = Vec::new();
    let mut after: Option<Fingerprint> = None;
    loop {
        let page = store.pending_groups_page(&p, after.as_ref(), 3)?;
        ensure_eq!(page.total, 4, "the pending groups' total on every page");
        let Some(last) = page.items.last() else { break };
        ensure!(
            page.items
                .iter()
                .all(|g| g.pattern.is_none() && g.episode_count == 1),
            "a pending group as the whole list has it"
        );
        after = Some(last.fingerprint.clone());
        walked.extend(page.items.iter().map(|g| g.fingerprint.key()));
    }
    ensure_eq!(walked, pending_keys, "the pending groups, a page at a time");
    // A page is the pattern itself, as the whole list holds it.
    let first = store.patterns_page(&p, None, 1)?;
    let whole = store.patterns(&p, &first.items[0].fingerprint)?;
    ensure_eq!(first.items, whole);
    // A cursor need not be stored: the page starts after where it would be.
    let between = fingerprint(&[("f", "aa")]);
    let page = store.patterns_page(&p, Some(&between), 10)?;
    let expected: Vec<&String> = pattern_keys
        .iter()
        .filter(|k| k.as_str() > between.as_key())
        .collect();
    ensure_eq!(
        page.items
            .iter()
            .map(|x| x.fingerprint.key())
            .collect::<Vec<_>>(),
        expected.into_iter().cloned().collect::<Vec<_>>()
    );
    ensure_eq!(store.patterns_page(&p, None, 0)?.items, Vec::new());
    ensure_eq!(store.patterns_page(&partition("q"), None, 10)?.total, 0);
    ensure_eq!(
        store.pending_groups_page(&partition("q"), None, 10)?.total,
        1
    );
    Ok(())
}

fn forget_deletes_one_partition_only<S: PatternStore + AuditStore>(store: &S) -> CaseResult {
    let (keep_config, drop_config) = (meta_key("config.keep"), meta_key("config.drop"));
    let settings = [(&keep_config, "task"), (&drop_config, "task")];
    for t in 0..3 {
        let episodes = [
            episode("keep", &[("f", "1")], &["x"], t),
            episode("drop", &[("f", "1")], &["x"], t),
        ];
        store.append_episodes_with_settings(&episodes, &settings)?;
    }
    store.crystallize_with(&partition("keep"), &counting_step)?;
    store.crystallize_with(&partition("drop"), &counting_step)?;
    let forgotten = store.forget_partition(&partition("drop"), &[&drop_config], &forgetter())?;
    ensure_eq!(forgotten, 3);
    // Its configuration went with it: another one is taken; the other partition's stays.
    store.append_episodes_with_settings(&[], &[(&drop_config, "other")])?;
    ensure!(
        store
            .append_episodes_with_settings(&[], &[(&keep_config, "other")])
            .is_err(),
        "forgetting one partition forgot another's configuration"
    );
    let drop = partition("drop");
    ensure_eq!(store.episodes_after(&drop, 0, 10)?, Vec::new());
    ensure_eq!(store.watermark(&drop)?, 0);
    ensure_eq!(store.patterns(&drop, &Fingerprint::default())?, Vec::new());
    ensure_eq!(store.group(&drop, &fingerprint(&[("f", "1")]))?, None);
    ensure_eq!(evidence(store, "keep", &[("f", "1")])?, 3);
    ensure_eq!(store.forget_partition(&drop, &[], &forgetter())?, 0);
    // Each forget is in the audit trail with who asked, the second too.
    ensure_eq!(
        forgets_of(store, "trajectory")?,
        vec![
            forgot("", "drop", "3 episodes"),
            forgot("", "drop", "0 episodes")
        ]
    );
    // A forgotten partition starts again from nothing: new episodes count from zero.
    store.append_episodes(&[episode("drop", &[("f", "1")], &["x"], 9)])?;
    store.crystallize_with(&drop, &counting_step)?;
    ensure_eq!(evidence(store, "drop", &[("f", "1")])?, 1);
    Ok(())
}

fn partition(name: &str) -> Partition {
    Partition::new(name).unwrap_or_else(|e| panic!("test partition {name:?}: {e}"))
}

fn fingerprint(pairs: &[(&str, &str)]) -> Fingerprint {
    Fingerprint::new(pairs.iter().copied()).unwrap_or_else(|e| panic!("test fingerprint: {e}"))
}

fn episodes_keep_their_writer<S: PatternStore>(store: &S) -> CaseResult {
    let at = Timestamp::from_millis(5);
    let by = |source: Source, session: Option<&str>, client: Option<&str>| {
        let mut by = Provenance::new(source, at);
        by.session = session.map(str::to_owned);
        by.client = client.map(str::to_owned);
        Some(by)
    };
    let mut episodes = [
        episode("p", &[("f", "1")], &["a"], 5),
        episode("p", &[("f", "1")], &["b"], 5),
        episode("p", &[("f", "2")], &["c"], 5),
        episode("p", &[("f", "1")], &["d"], 5),
    ];
    episodes[0].provenance = by(Source::Model("m".to_owned()), Some("run-7"), Some("cli"));
    episodes[1].provenance = by(Source::Tool("deploy".to_owned()), None, Some("python"));
    episodes[2].provenance = by(Source::User, Some("run-8"), None);
    store.append_episodes(&episodes[..2])?;
    store.append_episodes(&episodes[2..3])?;
    store.append_episodes(&episodes[3..])?;
    let writers = |read: Vec<Episode>| -> Vec<Option<Provenance>> {
        read.into_iter().map(|e| e.episode.provenance).collect()
    };
    let all: Vec<Option<Provenance>> = episodes.iter().map(|e| e.provenance.clone()).collect();
    ensure_eq!(
        writers(store.episodes_after(&partition("p"), 0, 10)?),
        all,
        "episodes_after must give back each episode's writer, or none"
    );
    let group = store.group_episodes(&partition("p"), &fingerprint(&[("f", "1")]), 0, 10)?;
    ensure_eq!(
        writers(group),
        vec![all[0].clone(), all[1].clone(), None],
        "group_episodes must give back each episode's writer, or none"
    );
    Ok(())
}

fn each_run_of_episodes_is_audited<S: PatternStore + AuditStore>(store: &S) -> CaseResult {
    let writer = |source: Source, client: &str| {
        Provenance::new(source, Timestamp::from_millis(1))
            .with_session("run-1")
            .with_client(client)
    };
    let model = writer(Source::Model("m".to_owned()), "cli");
    let page = writer(Source::Page("https://evil.test/".to_owned()), "cli");
    let python = writer(Source::Model("m".to_owned()), "python");
    let by = |p: &str, writer: Option<&Provenance>, at: i64| {
        let mut e = episode(p, &[("f", "1")], &["a"], at);
        e.provenance = writer.cloned();
        e
    };
    // One call of two, then one more: one run.
    store.append_episodes(&[by("p", Some(&model), 10), by("p", Some(&model), 11)])?;
    store.append_episodes(&[by("p", Some(&model), 20)])?;
    // One call to two partitions, by two writers: each opens a run.
    store.append_episodes(&[by("q", Some(&model), 30), by("p", Some(&page), 31)])?;
    // The model again, then through another client, then nobody known, twice.
    store.append_episodes(&[by("p", Some(&model), 40)])?;
    store.append_episodes(&[by("p", Some(&python), 50)])?;
    store.append_episodes(&[by("p", None, 60)])?;
    store.append_episodes(&[by("p", None, 70)])?;
    // A forget ends the partition's run.
    store.forget_partition(&partition("q"), &[], &forgetter())?;
    store.append_episodes(&[by("q", Some(&model), 80)])?;
    let entry = |p: &str, writer: &Provenance, at: i64| {
        let by = Provenance {
            at: Timestamp::from_millis(at),
            ..writer.clone()
        };
        (String::new(), p.to_owned(), by, "episodes".to_owned())
    };
    let unknown = Provenance::new(Source::Unknown, Timestamp::from_millis(60));
    ensure_eq!(
        writes_of(store, "trajectory")?,
        vec![
            entry("p", &model, 10),
            entry("q", &model, 30),
            entry("p", &page, 31),
            entry("p", &model, 40),
            entry("p", &python, 50),
            entry("p", &unknown, 60),
            entry("q", &model, 80),
        ],
        "one write entry per writer's run, at its first episode's time"
    );
    Ok(())
}

fn episode(p: &str, fp: &[(&str, &str)], trajectory: &[&str], at: i64) -> NewEpisode {
    NewEpisode {
        partition: partition(p),
        fingerprint: fingerprint(fp),
        trajectory: trajectory.iter().map(|s| (*s).to_owned()).collect(),
        outcome: r#"{"success": true}"#.to_owned(),
        recorded_at: Timestamp::from_millis(at),
        provenance: None,
    }
}

/// A crystallize step with no policy: each new episode adds one to its group's count and to
/// its trajectory's tally; the canonical tally is the most counted (first seen on ties);
/// every group is a pattern whose evidence equals its episode count and whose confidence is
/// 0.5. Contract suites and store tests use it to check the store's mechanics.
pub fn counting_step(input: &CrystallizeInput) -> Result<CrystallizeOutput> {
    let mut groups: HashMap<String, Group> = input
        .groups
        .iter()
        .map(|g| (g.fingerprint.key(), g.clone()))
        .collect();
    let mut tallies: HashMap<(String, Vec<String>), TrajectoryTally> = input
        .tallies
        .iter()
        .map(|(k, t)| ((k.clone(), t.trajectory.clone()), t.clone()))
        .collect();
    let mut order = Vec::new();
    for e in &input.episodes {
        let ep = &e.episode;
        let key = ep.fingerprint.key();
        let group = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key.clone());
            Group {
                fingerprint: ep.fingerprint.clone(),
                episode_count: 0,
                canonical: None,
                pending: Vec::new(),
                pattern: None,
            }
        });
        let tally = tallies
            .entry((key.clone(), ep.trajectory.clone()))
            .or_insert_with(|| TrajectoryTally {
                trajectory: ep.trajectory.clone(),
                count: 0,
                newest: ep.recorded_at,
                first_seq: e.seq,
            });
        tally.count += 1;
        tally.newest = tally.newest.max(ep.recorded_at);
        group.episode_count += 1;
        if group
            .canonical
            .as_ref()
            .is_none_or(|c| c.trajectory == tally.trajectory || tally.count > c.count)
        {
            group.canonical = Some(tally.clone());
        }
        let stats = group.pattern.get_or_insert(PatternStats {
            confidence: 0.5,
            evidence_count: 0,
            corroborations: 0,
            contradictions: 0,
            last_reinforced: ep.recorded_at,
        });
        stats.evidence_count += 1;
        stats.corroborations += 1;
        stats.last_reinforced = stats.last_reinforced.max(ep.recorded_at);
    }
    // The groups of this run's episodes, found by key: a test with many groups stays linear.
    let new: HashSet<&str> = input
        .episodes
        .iter()
        .map(|e| e.episode.fingerprint.as_key())
        .collect();
    let touched: Vec<Fingerprint> = groups
        .values()
        .filter(|g| new.contains(g.fingerprint.as_key()))
        .map(|g| g.fingerprint.clone())
        .collect();
    Ok(CrystallizeOutput {
        groups: groups
            .into_values()
            .filter(|g| new.contains(g.fingerprint.as_key()))
            .collect(),
        tallies: tallies.into_iter().map(|((k, _), t)| (k, t)).collect(),
        reinforced: touched,
    })
}

fn evidence<S: PatternStore>(store: &S, p: &str, fp: &[(&str, &str)]) -> Result<u64> {
    Ok(store
        .group(&partition(p), &fingerprint(fp))?
        .and_then(|g| g.pattern)
        .map_or(0, |s| s.evidence_count))
}

fn append_numbers_in_order<S: PatternStore>(store: &S) -> CaseResult {
    let a = appended(
        store,
        vec![
            episode("p", &[("f", "1")], &["x"], 10),
            episode("p", &[("f", "2")], &["y"], 5),
        ],
    )?;
    let b = appended(store, vec![episode("p", &[("f", "1")], &["z"], 1)])?;
    ensure_eq!(a.len(), 2);
    ensure!(
        a[0].seq < a[1].seq && a[1].seq < b[0].seq,
        "sequence numbers must grow in recording order, whatever the clock: {:?}",
        [a[0].seq, a[1].seq, b[0].seq]
    );
    let listed = store.episodes_after(&partition("p"), 0, 10)?;
    ensure_eq!(listed.len(), 3);
    ensure_eq!(listed[2], b[0], "episodes read back as written");
    ensure_eq!(
        store.episodes_after(&partition("p"), a[1].seq, 10)?.len(),
        1,
        "after a sequence number"
    );
    ensure_eq!(
        store.episodes_after(&partition("p"), 0, 1)?.len(),
        1,
        "limit"
    );
    ensure_eq!(store.append_episodes(&[])?.len(), 0);
    Ok(())
}

fn observes_each_episode_once<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    for t in 0..3 {
        store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 100 - t)])?;
    }
    let first = store.crystallize_with(&p, &counting_step)?;
    ensure_eq!(first.len(), 1, "one pattern reinforced");
    ensure_eq!(first[0].stats.evidence_count, 3);
    let last_seq = store.episodes_after(&p, 0, 10)?.last().map_or(0, |e| e.seq);
    ensure_eq!(
        store.watermark(&p)?,
        last_seq,
        "watermark at the last episode"
    );
    let again = store.crystallize_with(&p, &|_| {
        Err(Error::invalid_input(
            "step",
            "must not run without new episodes",
        ))
    })?;
    ensure_eq!(again.len(), 0, "second run returns nothing");
    // An episode whose clock lags every earlier one is still observed.
    store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 0)])?;
    store.crystallize_with(&p, &counting_step)?;
    ensure_eq!(
        evidence(store, "p", &[("f", "1")])?,
        4,
        "lagging clock observed"
    );
    Ok(())
}

fn a_run_in_pages_equals_one_step<S: PatternStore>(store: &S) -> CaseResult {
    // The same episodes in two partitions: one crystallized a page at a time, the other at
    // once; groups stored before the run and groups it creates, trajectories seen before and
    // new ones, each page touching groups the earlier pages wrote.
    let (whole, paged) = (partition("whole"), partition("paged"));
    let kinds = ["a", "b", "c", "d"];
    let paths: [&[&str]; 3] = [&["x"], &["y", "z"], &["z"]];
    let batch = |name: &str, from: usize, n: usize| -> Vec<NewEpisode> {
        (from..from + n)
            .map(|i| {
                let kind = kinds[(i * 7 + i / 3) % kinds.len()];
                episode(
                    name,
                    &[("f", kind)],
                    paths[(i * 5 + i / 4) % 3],
                    (i % 11) as i64,
                )
            })
            .collect()
    };
    for p in [&whole, &paged] {
        store.append_episodes(&batch(p.as_str(), 0, 5))?;
        store.crystallize_with(p, &step_with_threshold_two)?;
        store.append_episodes(&batch(p.as_str(), 5, 40))?;
    }
    let at_once = store.crystallize_with(&whole, &step_with_threshold_two)?;
    let in_pages = store.crystallize_in_pages(&paged, 3, &step_with_threshold_two)?;
    let answered = |patterns: Vec<crate::store::trajectory::Pattern>| {
        let mut shown: Vec<_> = patterns
            .into_iter()
            .map(|p| (p.fingerprint, p.canonical_sequence, p.stats))
            .collect();
        shown.sort_by(|a, b| a.0.cmp(&b.0));
        shown
    };
    ensure_eq!(
        answered(in_pages),
        answered(at_once),
        "the patterns answered"
    );
    // Sequence numbers differ between the partitions: a tally's first episode is compared
    // by its place in its partition.
    let group_of = |p: &Partition, kind: &str| -> Result<Option<Group>> {
        let places: HashMap<u64, u64> = store
            .episodes_after(p, 0, 100)?
            .iter()
            .enumerate()
            .map(|(i, e)| (e.seq, i as u64))
            .collect();
        let mut group = store.group(p, &fingerprint(&[("f", kind)]))?;
        if let Some(tally) = group.as_mut().and_then(|g| g.canonical.as_mut()) {
            tally.first_seq = places.get(&tally.first_seq).copied().unwrap_or(u64::MAX);
        }
        Ok(group)
    };
    for kind in kinds {
        ensure_eq!(
            group_of(&paged, kind)?,
            group_of(&whole, kind)?,
            "group {kind}, canonical tally and pending observations included"
        );
    }
    ensure_eq!(
        store
            .episodes_after(&paged, store.watermark(&paged)?, 10)?
            .len(),
        0,
        "the watermark passes every page"
    );
    Ok(())
}

fn hands_over_touched_state<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    store.append_episodes(&[
        episode("p", &[("f", "1")], &["x"], 1),
        episode("p", &[("f", "2")], &["y"], 2),
    ])?;
    store.crystallize_with(&p, &counting_step)?;
    store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 3)])?;
    let seen = std::sync::Mutex::new(None);
    store.crystallize_with(&p, &|input| {
        *seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(input.clone());
        counting_step(input)
    })?;
    let input = seen
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .ok_or_else(|| "step was not called".to_owned())?;
    ensure_eq!(input.episodes.len(), 1, "only the new episode");
    ensure_eq!(input.groups.len(), 1, "only the touched group");
    ensure_eq!(input.groups[0].fingerprint, fingerprint(&[("f", "1")]));
    ensure_eq!(input.groups[0].episode_count, 1);
    ensure_eq!(input.tallies.len(), 1, "only the touched tally");
    ensure_eq!(input.tallies[0].1.count, 1);
    ensure_eq!(input.tallies[0].0, fingerprint(&[("f", "1")]).key());
    Ok(())
}

fn failed_step_changes_nothing<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 1)])?;
    store.crystallize_with(&p, &counting_step)?;
    let watermark = store.watermark(&p)?;
    store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 2)])?;
    let failed = store.crystallize_with(&p, &|_| Err(Error::invalid_input("step", "refused")));
    ensure!(failed.is_err(), "a failing step must fail the call");
    ensure_eq!(store.watermark(&p)?, watermark, "watermark unchanged");
    ensure_eq!(evidence(store, "p", &[("f", "1")])?, 1, "group unchanged");
    store.crystallize_with(&p, &counting_step)?;
    ensure_eq!(
        evidence(store, "p", &[("f", "1")])?,
        2,
        "retried run observes it"
    );
    Ok(())
}

fn recall_filters<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    store.append_episodes(&[
        episode("p", &[("t", "a"), ("l", "x")], &["1"], 1),
        episode("p", &[("t", "a"), ("l", "y")], &["2"], 2),
        episode("p", &[("t", "b"), ("l", "x")], &["3"], 3),
    ])?;
    store.crystallize_with(&p, &counting_step)?;
    let names = |filter: &[(&str, &str)]| -> Result<Vec<Vec<String>>> {
        let mut found: Vec<Vec<String>> = store
            .patterns(&p, &fingerprint(filter))?
            .into_iter()
            .map(|pat| pat.canonical_sequence)
            .collect();
        found.sort();
        Ok(found)
    };
    let seq =
        |s: &[&str]| -> Vec<Vec<String>> { s.iter().map(|x| vec![(*x).to_owned()]).collect() };
    ensure_eq!(names(&[("t", "a"), ("l", "x")])?, seq(&["1"]), "exact");
    ensure_eq!(names(&[("l", "x")])?, seq(&["1", "3"]), "partial");
    ensure_eq!(names(&[("t", "a")])?, seq(&["1", "2"]), "partial");
    ensure_eq!(
        names(&[])?,
        seq(&["1", "2", "3"]),
        "empty filter matches all"
    );
    ensure_eq!(names(&[("l", "z")])?, seq(&[]), "no match");
    ensure_eq!(names(&[("other", "x")])?, seq(&[]), "unknown field");
    Ok(())
}

fn partitions_are_isolated<S: PatternStore>(store: &S) -> CaseResult {
    store.append_episodes(&[
        episode("a", &[("f", "1")], &["x"], 1),
        episode("b", &[("f", "1")], &["y"], 2),
    ])?;
    let a = store.crystallize_with(&partition("a"), &counting_step)?;
    ensure_eq!(a.len(), 1);
    ensure_eq!(
        store
            .patterns(&partition("b"), &Fingerprint::default())?
            .len(),
        0
    );
    ensure_eq!(store.watermark(&partition("b"))?, 0, "b not crystallized");
    store.crystallize_with(&partition("b"), &counting_step)?;
    let b = store.patterns(&partition("b"), &Fingerprint::default())?;
    ensure_eq!(b.len(), 1);
    ensure_eq!(b[0].canonical_sequence, vec!["y".to_owned()]);
    ensure_eq!(b[0].stats.evidence_count, 1, "a's episode not counted in b");
    ensure_eq!(store.episodes_after(&partition("c"), 0, 10)?.len(), 0);
    Ok(())
}

/// Batches of sizes a store may split into statements of many rows (here 203 and 75, which
/// are no multiple of small powers of two), in two partitions at once: every episode gets
/// its own number, in recording order, read back with the episode it was given for; and a
/// number is never given again, even once every episode it was given to is pruned.
fn large_batches_number_every_episode<S: PatternStore>(store: &S) -> CaseResult {
    let batch = |from: i64, n: i64| -> Vec<NewEpisode> {
        (from..from + n)
            .map(|i| {
                let p = if i % 3 == 0 { "q" } else { "p" };
                let f = (i % 7).to_string();
                episode(p, &[("f", &f)], &[&format!("step {i}"), "end"], i)
            })
            .collect()
    };
    let first = appended(store, batch(0, 203))?;
    let second = appended(store, batch(203, 75))?;
    let all: Vec<&Episode> = first.iter().chain(&second).collect();
    ensure!(
        all.windows(2).all(|w| w[0].seq < w[1].seq),
        "sequence numbers must grow in recording order"
    );
    for name in ["p", "q"] {
        let read = store.episodes_after(&partition(name), 0, 1000)?;
        let written: Vec<&Episode> = all
            .iter()
            .copied()
            .filter(|e| e.episode.partition.as_str() == name)
            .collect();
        ensure_eq!(read.len(), written.len(), "episodes of partition {name}");
        for (read, written) in read.iter().zip(written) {
            ensure_eq!(read, written, "each episode read back under its number");
        }
    }
    let newest = all.last().map_or(0, |e| e.seq);
    for name in ["p", "q"] {
        store.crystallize_with(&partition(name), &counting_step)?;
        store.prune_episodes(&partition(name), Timestamp::from_millis(i64::MAX))?;
        ensure_eq!(store.episodes_after(&partition(name), 0, 1000)?.len(), 0);
    }
    let after = appended(store, batch(278, 9))?;
    ensure!(
        after.iter().all(|e| e.seq > newest),
        "a pruned episode's number is not given again: {:?} after {newest}",
        after.iter().map(|e| e.seq).collect::<Vec<_>>()
    );
    // The newest episodes forgotten with their partition: their numbers stay given too.
    let forgotten = appended(store, vec![episode("r", &[("f", "1")], &["x"], 1); 4])?;
    let newest = forgotten.last().map_or(0, |e| e.seq);
    store.forget_partition(&partition("r"), &[], &forgetter())?;
    let after = appended(store, batch(287, 2))?;
    ensure!(
        after.iter().all(|e| e.seq > newest),
        "a forgotten episode's number is not given again: {:?} after {newest}",
        after.iter().map(|e| e.seq).collect::<Vec<_>>()
    );
    Ok(())
}

fn prune_only_observed<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    store.append_episodes(&[
        episode("p", &[("f", "1")], &["x"], 10),
        episode("p", &[("f", "1")], &["x"], 20),
    ])?;
    store.crystallize_with(&p, &counting_step)?;
    store.append_episodes(&[episode("p", &[("f", "1")], &["x"], 5)])?;
    let pattern_before = store.patterns(&p, &Fingerprint::default())?;
    ensure_eq!(store.prune_episodes(&p, Timestamp::from_millis(15))?, 1);
    let left: Vec<i64> = store
        .episodes_after(&p, 0, 10)?
        .iter()
        .map(|e| e.episode.recorded_at.as_millis())
        .collect();
    ensure_eq!(left, vec![20, 5], "the unobserved old episode stays");
    ensure_eq!(
        store.patterns(&p, &Fingerprint::default())?,
        pattern_before,
        "patterns unchanged"
    );
    store.crystallize_with(&p, &counting_step)?;
    ensure_eq!(evidence(store, "p", &[("f", "1")])?, 3);
    Ok(())
}

fn values_keep_any_text<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    let odd = "3:x ' \" ; DROP TABLE x; -- ünïcødé \u{1F600}\n";
    let fp = [("field:1", odd), ("", "")];
    let traj = [odd, "", "12:", "a"];
    let written = appended(store, vec![episode("p", &fp, &traj, -5)])?;
    let read = store.episodes_after(&p, 0, 1)?;
    ensure_eq!(read, written);
    store.crystallize_with(&p, &counting_step)?;
    let found = store.patterns(&p, &fingerprint(&[("field:1", odd)]))?;
    ensure_eq!(found.len(), 1);
    ensure_eq!(found[0].fingerprint, fingerprint(&fp));
    let expected: Vec<String> = traj.iter().map(|s| (*s).to_owned()).collect();
    ensure_eq!(found[0].canonical_sequence, expected);
    ensure_eq!(found[0].stats.last_reinforced, Timestamp::from_millis(-5));
    let encoded = encode_texts(traj);
    ensure_eq!(decode_texts(&encoded), Some(expected));
    Ok(())
}

fn concurrent_crystallizers<S: PatternStore>(store: &S) -> CaseResult {
    let p = partition("p");
    let writers = 4;
    let per_writer = 50;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let p = &p;
                scope.spawn(move || -> Result<()> {
                    for i in 0..per_writer {
                        let f = (i % 3).to_string();
                        store.append_episodes(&[episode("p", &[("f", &f)], &["x"], w)])?;
                        store.crystallize_with(p, &counting_step)?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
    })?;
    store.crystallize_with(&p, &counting_step)?;
    let total: u64 = (0..3)
        .map(|f| evidence(store, "p", &[("f", &f.to_string())]))
        .sum::<Result<u64>>()?;
    ensure_eq!(
        total,
        (writers * per_writer) as u64,
        "evidence equals episodes"
    );
    Ok(())
}

fn meta_key(name: &str) -> MetaKey {
    MetaKey::new(name).unwrap_or_else(|e| panic!("test meta key {name:?}: {e}"))
}

fn episodes_in<S: PatternStore>(store: &S, p: &str) -> Result<usize> {
    Ok(store.episodes_after(&partition(p), 0, usize::MAX)?.len())
}

fn settings_with_episodes<S: PatternStore>(store: &S) -> CaseResult {
    let (fields, cap, extra) = (
        meta_key("t.fields.p"),
        meta_key("t.cap.p"),
        meta_key("t.x.p"),
    );
    let one = || [episode("p", &[("f", "1")], &["x"], 1)];
    let first = store.append_episodes_with_settings(&one(), &[(&fields, "f"), (&cap, "20")])?;
    ensure_eq!(first.len(), 1);
    store.append_episodes_with_settings(&one(), &[(&fields, "f"), (&cap, "20")])?;
    ensure_eq!(
        episodes_in(store, "p")?,
        2,
        "equal settings let episodes in"
    );
    // A conflict on the second setting must not write the first one or any episode.
    let refused = store.append_episodes_with_settings(&one(), &[(&extra, "new"), (&cap, "5")]);
    ensure!(
        matches!(&refused, Err(Error::Conflict { .. })),
        "another value of a stored setting must be a conflict, got {refused:?}"
    );
    ensure_eq!(
        episodes_in(store, "p")?,
        2,
        "a refused call stores no episode"
    );
    store.append_episodes_with_settings(&one(), &[(&extra, "other")])?;
    let refused = store.append_episodes_with_settings(&one(), &[(&extra, "new")]);
    ensure!(
        refused.as_ref().is_err_and(Error::is_conflict),
        "the setting a successful call stored must hold, got {refused:?}"
    );
    ensure_eq!(episodes_in(store, "p")?, 3);
    ensure_eq!(
        store
            .append_episodes_with_settings(&[], &[(&fields, "f")])?
            .len(),
        0,
        "settings alone"
    );
    Ok(())
}

fn racing_first_writers<S: PatternStore>(store: &S) -> CaseResult {
    let writers = 8;
    let key = meta_key("t.fields.race");
    let results: Vec<Result<Vec<_>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let key = &key;
                scope.spawn(move || {
                    let value = (w % 2).to_string();
                    let batch: Vec<NewEpisode> = (0..5)
                        .map(|i| episode("race", &[("f", &value)], &["x"], i))
                        .collect();
                    store.append_episodes_with_settings(&batch, &[(key, value.as_str())])
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let stored = store.episodes_after(&partition("race"), 0, usize::MAX)?;
    let winners: Vec<&str> = stored
        .iter()
        .filter_map(|e| e.episode.fingerprint.get("f"))
        .collect();
    ensure!(
        winners.windows(2).all(|w| w[0] == w[1]),
        "episodes of both settings were stored: {winners:?}"
    );
    let accepted = results.iter().filter(|r| r.is_ok()).count();
    ensure_eq!(
        stored.len(),
        5 * accepted,
        "every accepted call stored its episodes"
    );
    ensure_eq!(accepted, writers / 2, "the writers of one setting succeed");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        ensure!(
            refused.is_conflict(),
            "a loser must get a conflict: {refused}"
        );
    }
    Ok(())
}
