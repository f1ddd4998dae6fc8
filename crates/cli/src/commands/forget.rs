//! `agent-memory forget`: delete one partition, session, browser scope (or one site of it),
//! run or trajectory, and erase its text from the database file.

use anyhow::Result;

use crate::GlobalArgs;
use crate::ops::{self, memory::ForgetInput};
use crate::output::{Table, print_json};

/// Exactly one of the targets.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["partition", "session", "scope", "run", "trajectory"])))]
pub(crate) struct ForgetArgs {
    /// A procedural-memory partition: its episodes, patterns and fields.
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// A session: its turn-memory events and its recorded tool calls.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// A scope, whole: its browser memory and its notes (or only `--site` of its browser
    /// memory).
    #[arg(long, value_name = "NAME")]
    scope: Option<String>,
    /// With `--scope`: only this site (its key, e.g. `shop.example.com`, or a URL on it).
    #[arg(long, value_name = "SITE", requires = "scope")]
    site: Option<String>,
    /// A browser run's manifest, by run id.
    #[arg(long, value_name = "RUN_ID")]
    run: Option<String>,
    /// A browser trajectory, by id.
    #[arg(long, value_name = "ID")]
    trajectory: Option<String>,
    /// The scope `--run` and `--trajectory` are looked up in.
    #[arg(long = "in-scope", value_name = "NAME", default_value = "shared")]
    in_scope: String,
}

pub(crate) fn run(args: &ForgetArgs, global: &GlobalArgs) -> Result<()> {
    let store = global.open_existing_for_writing()?;
    let by_id = args.run.is_some() || args.trajectory.is_some();
    let input = ForgetInput {
        partition: args.partition.clone(),
        session: args.session.clone(),
        scope: args.scope.clone(),
        site: args.site.clone(),
        run: args.run.clone(),
        trajectory: args.trajectory.clone(),
        in_scope: by_id.then(|| args.in_scope.clone()),
    };
    let forgotten = ops::memory::forget(&global.env(&store), input)?;
    if global.json {
        return print_json(&forgotten);
    }
    let counts = [
        ("episodes", forgotten.episodes),
        ("turn events", forgotten.events),
        ("tool logs", forgotten.tool_logs),
        ("trajectories", forgotten.trajectories),
        ("site memories", forgotten.sites),
        ("runs", forgotten.runs),
        ("hints", forgotten.hints),
        ("notes", forgotten.notes),
    ];
    if counts.iter().all(|(_, count)| *count == 0) {
        println!("nothing stored under {}", forgotten.target);
        return Ok(());
    }
    let mut table = Table::new(["", ""]).without_header();
    table.row(["forgot".to_owned(), forgotten.target.clone()]);
    for (what, count) in counts {
        if count > 0 {
            table.row([what.to_owned(), count.to_string()]);
        }
    }
    print!("{table}");
    Ok(())
}
