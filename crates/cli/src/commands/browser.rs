//! `agent-memory browser`: the memory of a browser agent (crate `browser-memory`): the context
//! a run would get, the run registry (list, resume, fork), `.agent-memory/` import and
//! export, pruning of expired trajectories, and hints from analysing them.

use std::path::PathBuf;

use agent_memory_core::Scope;
use anyhow::{Context, Result};
use serde::Serialize;

use crate::ops::browser::{DEFAULT_BUDGET_CHARS, DEFAULT_TTL_DAYS, ScenarioOutput};
use crate::output::{Table, print_json};
use crate::progress::Progress;
use crate::{GlobalArgs, input, ops};

/// `browser` and its subcommands.
#[derive(Debug, clap::Args)]
pub(crate) struct BrowserArgs {
    #[command(subcommand)]
    command: BrowserCommand,
    /// The memory scope to use.
    #[arg(long, global = true, default_value = "shared")]
    scope: String,
}

#[derive(Debug, clap::Subcommand)]
enum BrowserCommand {
    /// The memory context a run with this goal on this URL would get.
    Context(ContextArgs),
    /// Registered runs, newest first.
    Runs(RunsArgs),
    /// The scenario that continues a run (same session, from where it ended), as JSON.
    Resume(ScenarioArgs),
    /// The scenario that branches from a run in a new session, as JSON.
    Fork(ScenarioArgs),
    /// Reads a `.agent-memory/` directory into the scope.
    ///
    /// This fills one scope (`shared` unless `--scope`), which the command line, MCP and the
    /// packages' `Store` read. The browser-agent-driver drop-in classes of the npm package keep
    /// one scope per folder they are given (its absolute path: a `TrajectoryStore` folder, the
    /// folder of a `knowledge.json` or `selectors.json`, `<memory>/agent-runs`) and adopt that
    /// folder's files themselves the first time they use it; `browser adopt-files --scope
    /// <that absolute folder>` with `{"kind": "trajectories|knowledge|selectors|runs",
    /// "path": <folder or file>, "url"?: <the site, for knowledge and selectors>}` does that
    /// adoption ahead of time.
    Import(DirArgs),
    /// Writes the scope as a `.agent-memory/` directory.
    Export(DirArgs),
    /// Removes trajectories older than the TTL; prints how many.
    Prune(PruneArgs),
    /// The stored cross-domain hints; `--refresh` first analyses the stored trajectories.
    Hints(HintsArgs),
    /// The run registry's life cycle for an orchestrator: start, update, complete.
    #[command(subcommand)]
    Run(RunCommand),
    /// Record a finished run (schemas/browser_record_run.input.json) in one transaction:
    /// trajectory, session, facts, selectors and, with `run_id`, the run's manifest.
    Record(DocumentArgs),
}

/// `browser run`: one JSON document in (`--file PATH`, or `-` for stdin), the manifest out.
#[derive(Debug, clap::Subcommand)]
enum RunCommand {
    /// Registers a run: `{"goal", "domain", "start_url"?, "session_id"?, "parent_run_id"?, "run_id"?}`.
    Start(DocumentArgs),
    /// Records progress: `{"run_id", "status"?, "current_url"?, "turn_count"?, "artifact_paths"?, "final_url"?, ...}`.
    Update(DocumentArgs),
    /// Finishes a run: `{"run_id", "success", "turn_count", "final_url"?, "summary"?, ...}`.
    Complete(DocumentArgs),
}

#[derive(Debug, clap::Args)]
struct DocumentArgs {
    /// The JSON document (schemas/browser_run_*.input.json): a file, or `-` for stdin.
    #[arg(long, value_name = "PATH")]
    file: PathBuf,
}

/// The context assembly the budget arranges.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum LayoutArg {
    /// Session history 50, reference trajectory 40, app knowledge 30, selectors 25.
    Layered,
    /// The reference code's assembly, byte for byte.
    Compat,
}

#[derive(Debug, clap::Args)]
struct ContextArgs {
    /// The goal of the run.
    #[arg(long)]
    goal: String,
    /// The URL the run starts on.
    #[arg(long)]
    url: String,
    /// Rank matching trajectories by the trace score instead of goal similarity alone.
    #[arg(long)]
    trace_scoring: bool,
    /// Trajectories older than this many days are not used.
    #[arg(long, default_value_t = DEFAULT_TTL_DAYS, value_name = "N")]
    ttl_days: f64,
    /// The context budget, in characters (with `--layout compat`, UTF-16 code units, as the
    /// reference counts JavaScript string lengths).
    #[arg(long, default_value_t = DEFAULT_BUDGET_CHARS, value_name = "N")]
    budget: usize,
    /// How the memory parts are assembled.
    #[arg(long, value_enum, default_value = "layered")]
    layout: LayoutArg,
    /// Each part inside a <memory-item source=… trust=…> data block.
    #[arg(long)]
    as_data: bool,
}

#[derive(Debug, clap::Args)]
struct RunsArgs {
    /// Only runs of this session.
    #[arg(long)]
    session_id: Option<String>,
    /// Only runs filed under this domain.
    #[arg(long)]
    domain: Option<String>,
    /// Only runs in this state.
    #[arg(long, value_parser = ["running", "completed", "failed"])]
    status: Option<String>,
    /// At most this many runs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

#[derive(Debug, clap::Args)]
struct ScenarioArgs {
    /// The run to continue or branch from.
    run_id: String,
    /// The new goal (default: the run's goal).
    #[arg(long)]
    goal: Option<String>,
}

impl ScenarioArgs {
    /// The operation's input in `scope`.
    fn input(&self, scope: &str) -> ops::browser::ScenarioInput {
        ops::browser::ScenarioInput {
            scope: Some(scope.to_owned()),
            run_id: self.run_id.clone(),
            goal: self.goal.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
struct DirArgs {
    /// The `.agent-memory/` directory.
    dir: PathBuf,
}

#[derive(Debug, clap::Args)]
struct PruneArgs {
    /// Trajectories older than this many days are removed.
    #[arg(long, default_value_t = DEFAULT_TTL_DAYS, value_name = "N")]
    ttl_days: f64,
}

#[derive(Debug, clap::Args)]
struct HintsArgs {
    /// Analyse every stored trajectory of the scope and store the hints it gives (replacing
    /// the stored ones, imported or earlier) before printing them.
    #[arg(long)]
    refresh: bool,
}

pub(crate) fn run(args: &BrowserArgs, global: &GlobalArgs) -> Result<()> {
    // The scope is checked before the database is opened, as any argument is.
    Scope::new(args.scope.clone()).with_context(|| format!("scope {:?}", args.scope))?;
    // Commands that only read open the database read-only: they never create, migrate or
    // change it.
    let reads_only = match &args.command {
        BrowserCommand::Context(_)
        | BrowserCommand::Runs(_)
        | BrowserCommand::Resume(_)
        | BrowserCommand::Fork(_)
        | BrowserCommand::Export(_) => true,
        BrowserCommand::Hints(hints) => !hints.refresh,
        _ => false,
    };
    let store = if reads_only {
        global.open_for_reading()?
    } else {
        global.open()?
    };
    let env = global.env(&store);
    let scope = Some(args.scope.clone());
    match &args.command {
        BrowserCommand::Run(command) => run_lifecycle(command, args, global, &store),
        BrowserCommand::Record(doc) => {
            let mut input: ops::browser::RecordRunInput = input::document(&doc.file)?;
            input.scope = input.scope.or(scope);
            let recorded = ops::browser::record_run(&env, input)?;
            if global.json {
                return print_json(&recorded);
            }
            if recorded.held {
                println!(
                    "held run {} ({} step(s)) for site {} for review: the write screen flagged it",
                    recorded.trajectory_id, recorded.steps, recorded.site
                );
                for reason in &recorded.reasons {
                    println!("  {reason}");
                }
                println!(
                    "approve it with `review approve-run --id {0}`, or erase it with `review reject-run --id {0}`",
                    recorded.trajectory_id
                );
                return Ok(());
            }
            println!(
                "recorded trajectory {} ({} step(s)) for site {} in session {}",
                recorded.trajectory_id, recorded.steps, recorded.site, recorded.session_id
            );
            Ok(())
        }
        BrowserCommand::Context(context) => {
            let report = ops::browser::context(
                &env,
                ops::browser::ContextInput {
                    scope,
                    goal: context.goal.clone(),
                    url: context.url.clone(),
                    trace_scoring: context.trace_scoring,
                    ttl_days: Some(context.ttl_days),
                    budget: Some(context.budget),
                    layout: match context.layout {
                        LayoutArg::Layered => ops::browser::LayoutInput::Layered,
                        LayoutArg::Compat => ops::browser::LayoutInput::Compat,
                    },
                    as_data: context.as_data,
                },
            )
            .map_err(ttl_flag)?;
            if global.json {
                return print_json(&report);
            }
            let text = &report.context;
            if text.is_empty() {
                println!("no memory for this goal and site");
            } else {
                println!("{text}");
            }
            Ok(())
        }
        BrowserCommand::Runs(runs) => {
            let status = match runs.status.as_deref() {
                Some("running") => Some(ops::runs::RunState::Running),
                Some("completed") => Some(ops::runs::RunState::Completed),
                Some("failed") => Some(ops::runs::RunState::Failed),
                _ => None,
            };
            let listed = ops::browser::runs(
                &env,
                ops::browser::RunsInput {
                    scope,
                    session_id: runs.session_id.clone(),
                    domain: runs.domain.clone(),
                    status,
                    limit: runs.limit,
                },
            )?;
            if global.json {
                return print_json(&listed);
            }
            print_runs(&listed.runs);
            Ok(())
        }
        BrowserCommand::Resume(scenario) => print_scenario(
            ops::browser::resume(&env, scenario.input(&args.scope))?,
            global,
        ),
        BrowserCommand::Fork(scenario) => print_scenario(
            ops::browser::fork(&env, scenario.input(&args.scope))?,
            global,
        ),
        BrowserCommand::Import(dir) => {
            let progress = Progress::start(None, "importing");
            let imported = ops::browser::import(
                &env,
                ops::browser::ImportInput {
                    scope,
                    dir: dir.dir.display().to_string(),
                },
            );
            progress.finish();
            print_import(&dir.dir, &imported?, global)
        }
        BrowserCommand::Export(dir) => {
            let progress = Progress::start(None, "exporting");
            let exported = ops::browser::export(
                &env,
                ops::browser::ExportInput {
                    scope,
                    dir: dir.dir.display().to_string(),
                },
            );
            progress.finish();
            let exported = exported?;
            if global.json {
                return print_json(&exported);
            }
            print_counts(
                "exported",
                [
                    exported.trajectories,
                    exported.sites,
                    exported.runs,
                    exported.suite_summaries,
                ],
                exported.hints,
            );
            Ok(())
        }
        BrowserCommand::Prune(prune) => {
            let pruned = ops::browser::prune(
                &env,
                ops::browser::PruneInput {
                    scope,
                    ttl_days: Some(prune.ttl_days),
                },
            )
            .map_err(ttl_flag)?;
            if global.json {
                return print_json(&pruned);
            }
            let removed = pruned.removed;
            println!(
                "removed {removed} expired trajector{}",
                if removed == 1 { "y" } else { "ies" }
            );
            Ok(())
        }
        BrowserCommand::Hints(hints) => {
            let stored = ops::browser::hints(
                &env,
                ops::browser::HintsInput {
                    scope,
                    refresh: hints.refresh,
                },
            )?;
            if global.json {
                return print_json(&stored);
            }
            match (stored.hints.is_empty(), stored.updated_at.is_empty()) {
                (false, _) => println!("{}", stored.hints),
                (true, false) => println!("no hints: nothing stood out in the runs analysed"),
                (true, true) => println!(
                    "no hints stored (run `browser hints --refresh` to analyse the trajectories)"
                ),
            }
            Ok(())
        }
    }
}

/// An operation's error about its `ttl_days`, worded for the flag that gave it.
fn ttl_flag(error: ops::Error) -> ops::Error {
    match (error.input(), error.message().strip_prefix("ttl_days")) {
        (Some("ttl_days"), Some(rest)) => {
            ops::Error::new(error.kind(), format!("--ttl-days{rest}")).about("--ttl-days")
        }
        _ => error,
    }
}

/// The runs as a table.
fn print_runs(runs: &[ops::runs::RunDocument]) {
    if runs.is_empty() {
        println!("no runs");
        return;
    }
    let mut table = Table::new(["run", "status", "turns", "updated", "session", "goal"]);
    for run in runs {
        table.row([
            run.run_id.clone(),
            run.status.as_str().to_owned(),
            run.turn_count.to_string(),
            run.updated_at.clone(),
            run.session_id.clone().unwrap_or_else(|| "-".to_owned()),
            run.goal.clone(),
        ]);
    }
    print!("{table}");
}

/// A scenario as browser-agent-driver writes one (camelCase keys); with `--json`, the
/// operation's output.
fn print_scenario(scenario: ScenarioOutput, global: &GlobalArgs) -> Result<()> {
    if global.json {
        return print_json(&scenario);
    }
    /// The scenario's keys as the reference names them.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Reference {
        goal: String,
        start_url: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        parent_run_id: String,
    }
    print_json(&Reference {
        goal: scenario.goal,
        start_url: scenario.start_url,
        session_id: scenario.session_id,
        parent_run_id: scenario.parent_run_id,
    })
}

/// Reports an import: each file it did not read (on stderr, as warnings, or in the JSON),
/// then what it read and how much of it was already there.
fn print_import(
    dir: &std::path::Path,
    imported: &ops::browser::ImportOutput,
    global: &GlobalArgs,
) -> Result<()> {
    if global.json {
        return print_json(imported);
    }
    for skipped in &imported.skipped {
        eprintln!("warning: skipped {}: {}", skipped.path, skipped.reason);
    }
    let records = imported.records();
    if imported.unchanged == records {
        println!(
            "{} is already there: all {records} records unchanged",
            dir.display()
        );
        return Ok(());
    }
    print_counts(
        "imported",
        [
            imported.trajectories,
            imported.sites,
            imported.runs,
            imported.suite_summaries,
        ],
        imported.hints,
    );
    if imported.unchanged > 0 {
        println!("({} of them already there, unchanged)", imported.unchanged);
    }
    Ok(())
}

/// `<verb> N trajectories, N sites, N runs, N suite summaries[ and hints]`.
fn print_counts(verb: &str, [trajectories, sites, runs, summaries]: [usize; 4], hints: bool) {
    println!(
        "{verb} {trajectories} trajectories, {sites} sites, {runs} runs, {summaries} suite summaries{}",
        if hints { " and hints" } else { "" }
    );
}

/// `browser run start | update | complete`: the `scope` of the document wins over `--scope`.
fn run_lifecycle(
    command: &RunCommand,
    args: &BrowserArgs,
    global: &GlobalArgs,
    store: &crate::database::Store,
) -> Result<()> {
    let env = global.env(store);
    let scope = Some(args.scope.clone());
    let manifest = match command {
        RunCommand::Start(doc) => {
            let mut input: ops::runs::RunStartInput = input::document(&doc.file)?;
            input.scope = input.scope.or(scope);
            ops::runs::start(&env, input)?
        }
        RunCommand::Update(doc) => {
            let mut input: ops::runs::RunUpdateInput = input::document(&doc.file)?;
            input.scope = input.scope.or(scope);
            ops::runs::update(&env, input)?
        }
        RunCommand::Complete(doc) => {
            let mut input: ops::runs::RunCompleteInput = input::document(&doc.file)?;
            input.scope = input.scope.or(scope);
            ops::runs::complete(&env, input)?
        }
    };
    if global.json {
        return print_json(&manifest);
    }
    let mut table = Table::new(["", ""]).without_header();
    table.row(["run".to_owned(), manifest.run_id.clone()]);
    table.row([
        "status".to_owned(),
        format!("{:?}", manifest.status).to_lowercase(),
    ]);
    table.row(["goal".to_owned(), manifest.goal.clone()]);
    table.row(["updated".to_owned(), manifest.updated_at.clone()]);
    print!("{table}");
    Ok(())
}
