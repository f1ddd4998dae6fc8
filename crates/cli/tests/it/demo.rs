//! `agent-memory demo`: the guided tour prints the same story every time, on a fresh file only.

use crate::Sandbox;

#[test]
fn the_tour_runs_on_a_fresh_database() {
    let sandbox = Sandbox::new();
    let run = sandbox.run(&["--db", "tour.db", "demo"], &[]);
    assert_eq!(run.code, Some(0), "{run}");
    assert!(
        !run.stdout.contains("pw-9999zq"),
        "the tour printed a secret"
    );
    insta::assert_snapshot!(run);
}

#[test]
fn the_tour_refuses_a_database_in_use() {
    let sandbox = Sandbox::new();
    let first = sandbox.run(&["--db", "tour.db", "demo"], &[]);
    assert_eq!(first.code, Some(0), "{first}");
    let second = sandbox.run(&["--db", "tour.db", "demo"], &[]);
    assert_eq!(second.code, Some(1));
    insta::assert_snapshot!(second.stderr);
}
