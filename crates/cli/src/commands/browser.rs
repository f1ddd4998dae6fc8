//! `agent-memory browser`: the memory of a browser agent (crate `browser-memory`): the context
//! a run would get, the run registry (list, resume, fork), `.agent-memory/` import and
//! export, pruning of expired trajectories, and hints from analysing them.

use std::path::PathBuf;

use agent_memory_browser::compat::to_pretty;
use agent_memory_browser::{
    BrowserMemory, DEFAULT_BUDGET_CHARS, DEFAULT_TTL_DAYS, MemoryRoot, Transfer, export_dir,
    import_dir,
};
use agent_memory_core::store::browser::{HintStore, RunFilter, RunManifest, RunStatus};
use agent_memory_core::{Clock, RandomIds, Scope};
use anyhow::{Context, Result, bail};
use schemars::{JsonSchema, Schema};
use serde::Serialize;

use crate::output::{Table, print_json};
use crate::progress::Progress;
use crate::{GlobalArgs, database, input, ops};

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
    /// Records progress: `{"run_id", "status"?, "current_url"?, "turn_count"?, "artifact_paths"?}`.
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
    let scope =
        Scope::new(args.scope.clone()).with_context(|| format!("scope {:?}", args.scope))?;
    let clock = global.clock();
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
        database::open_existing(&global.db)?
    } else {
        database::open(&global.db)?
    };
    let mut memory = BrowserMemory::new(&store, scope.clone(), clock.as_ref(), RandomIds::new());
    match &args.command {
        BrowserCommand::Run(command) => run_lifecycle(command, args, global, &store),
        BrowserCommand::Record(doc) => {
            let mut input: ops::browser::RecordRunInput = input::document(&doc.file)?;
            input.scope = input.scope.or(Some(args.scope.clone()));
            let recorded = ops::browser::record_run(&global.env(&store), input)?;
            if global.json {
                return print_json(&recorded);
            }
            println!(
                "recorded trajectory {} ({} step(s)) for site {} in session {}",
                recorded.trajectory_id, recorded.steps, recorded.site, recorded.session_id
            );
            Ok(())
        }
        BrowserCommand::Context(context) => {
            // The contract's operation, the same as the MCP tool `browser_context`.
            let report = ops::browser::context(
                &global.env(&store),
                ops::browser::ContextInput {
                    scope: Some(args.scope.clone()),
                    goal: context.goal.clone(),
                    url: context.url.clone(),
                    trace_scoring: context.trace_scoring,
                    ttl_days: Some(ttl(context.ttl_days)?),
                    budget: Some(context.budget),
                    layout: match context.layout {
                        LayoutArg::Layered => ops::browser::LayoutInput::Layered,
                        LayoutArg::Compat => ops::browser::LayoutInput::Compat,
                    },
                },
            )?;
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
        BrowserCommand::Runs(runs) if global.json => {
            // The contract's listing, the same as the MCP tool `browser_runs`.
            let status = match runs.status.as_deref() {
                Some("running") => Some(ops::runs::RunState::Running),
                Some("completed") => Some(ops::runs::RunState::Completed),
                Some("failed") => Some(ops::runs::RunState::Failed),
                _ => None,
            };
            let listed = ops::browser::runs(
                &global.env(&store),
                ops::browser::RunsInput {
                    scope: Some(args.scope.clone()),
                    session_id: runs.session_id.clone(),
                    domain: runs.domain.clone(),
                    status,
                    limit: runs.limit,
                },
            )?;
            print_json(&listed)
        }
        BrowserCommand::Runs(runs) => {
            let filter = RunFilter {
                domain: runs.domain.clone(),
                session_id: runs.session_id.clone(),
                status: runs.status.as_deref().and_then(RunStatus::parse),
                limit: runs.limit,
            };
            let manifests = memory.runs().list(&filter)?;
            print_runs(&manifests)
        }
        BrowserCommand::Resume(scenario) if global.json => print_json(&ops::browser::resume(
            &global.env(&store),
            scenario.input(&args.scope),
        )?),
        BrowserCommand::Fork(scenario) if global.json => print_json(&ops::browser::fork(
            &global.env(&store),
            scenario.input(&args.scope),
        )?),
        BrowserCommand::Resume(scenario) => {
            let found = memory
                .runs()
                .resume(&scenario.run_id, scenario.goal.as_deref())?;
            println!("{}", to_pretty(&found).context("rendering JSON")?);
            Ok(())
        }
        BrowserCommand::Fork(scenario) => {
            let registry = memory.runs();
            let goal = match &scenario.goal {
                Some(goal) => goal.clone(),
                None => registry
                    .find(&scenario.run_id)?
                    .map(|m| m.goal)
                    .unwrap_or_default(),
            };
            let found = registry.fork(&scenario.run_id, &goal)?;
            println!("{}", to_pretty(&found).context("rendering JSON")?);
            Ok(())
        }
        BrowserCommand::Import(dir) => {
            if !dir.dir.is_dir() {
                bail!("cannot import {}: not a directory", dir.dir.display());
            }
            let progress = Progress::start(None, "importing");
            let transfer = import_dir(&store, &scope, &MemoryRoot::new(&dir.dir), clock.now());
            progress.finish();
            let transfer =
                transfer.with_context(|| format!("cannot import {}", dir.dir.display()))?;
            print_import(&dir.dir, &transfer, global)
        }
        BrowserCommand::Export(dir) => {
            let progress = Progress::start(None, "exporting");
            let transfer = export_dir(&store, &scope, &MemoryRoot::new(&dir.dir));
            progress.finish();
            let transfer =
                transfer.with_context(|| format!("cannot export to {}", dir.dir.display()))?;
            print_transfer("exported", &transfer, global)
        }
        BrowserCommand::Prune(prune) => {
            memory.options.ttl_days = ttl(prune.ttl_days)?;
            let removed = memory.prune()?;
            if global.json {
                return print_json(&PruneView { removed });
            }
            println!(
                "removed {removed} expired trajector{}",
                if removed == 1 { "y" } else { "ies" }
            );
            Ok(())
        }
        BrowserCommand::Hints(hints) => {
            if hints.refresh {
                memory.analyse_trajectories()?;
            }
            print_hints(&store, &scope, global)
        }
    }
}

fn print_hints(store: &dyn HintStore, scope: &Scope, global: &GlobalArgs) -> Result<()> {
    let stored = store.hints_get(scope)?;
    if global.json {
        let (hints, updated_at) = stored.unwrap_or_default();
        return print_json(&HintsView { hints, updated_at });
    }
    match stored {
        Some((hints, _)) if !hints.is_empty() => println!("{hints}"),
        Some(_) => println!("no hints: nothing stood out in the runs analysed"),
        None => {
            println!("no hints stored (run `browser hints --refresh` to analyse the trajectories)")
        }
    }
    Ok(())
}

fn ttl(days: f64) -> Result<f64> {
    if !days.is_finite() || days < 0.0 {
        bail!("--ttl-days must be a number of days at least 0, got {days}");
    }
    Ok(days)
}

/// The runs as a table (with `--json`, the `Runs` arm prints the contract's listing).
fn print_runs(manifests: &[RunManifest]) -> Result<()> {
    if manifests.is_empty() {
        println!("no runs");
        return Ok(());
    }
    let mut table = Table::new(["run", "status", "turns", "updated", "session", "goal"]);
    for m in manifests {
        table.row([
            m.run_id.clone(),
            m.status.as_str().to_owned(),
            m.turn_count.to_string(),
            m.updated_at.clone(),
            m.session_id.clone().unwrap_or_else(|| "-".to_owned()),
            m.goal.clone(),
        ]);
    }
    print!("{table}");
    Ok(())
}

/// `browser export --json` (and the counts of `browser import --json`): records written.
#[derive(Debug, Serialize, JsonSchema)]
struct TransferView {
    /// Trajectories.
    trajectories: usize,
    /// Sites' knowledge and selectors.
    sites: usize,
    /// Run manifests.
    runs: usize,
    /// Whether the hints were transferred.
    hints: bool,
    /// Suite summaries.
    suite_summaries: usize,
}

/// A file an import did not read, and why.
#[derive(Debug, Serialize, JsonSchema)]
struct SkippedView {
    /// The file.
    path: String,
    /// Why it was skipped.
    reason: &'static str,
}

/// `browser prune --json`.
#[derive(Debug, Serialize, JsonSchema)]
struct PruneView {
    /// Expired trajectories removed.
    removed: usize,
}

/// `browser hints --json`: empty texts when no hints are stored.
#[derive(Debug, Serialize, JsonSchema)]
struct HintsView {
    /// The hints text.
    hints: String,
    /// When they were analysed (browser-agent-driver's ISO time), empty when never.
    updated_at: String,
}

/// The schemas of what `browser` prints with `--json` beyond the operations' outputs.
pub(super) fn schemas() -> Vec<(String, Schema)> {
    use super::output;
    vec![
        output::<ImportView>("browser_import.output"),
        output::<TransferView>("browser_export.output"),
        output::<PruneView>("browser_prune.output"),
        output::<HintsView>("browser_hints.output"),
    ]
}

/// `browser import --json`: what was read, what was already there, what was skipped.
#[derive(Debug, Serialize, JsonSchema)]
struct ImportView {
    /// Records read.
    #[serde(flatten)]
    read: TransferView,
    /// Of them, records already stored as they are.
    unchanged: usize,
    /// Files not read.
    skipped: Vec<SkippedView>,
}

/// Reports an import: each file it did not read (on stderr, as warnings, or in the JSON), then
/// what it read and how much of it was already there. A directory with nothing to import is
/// refused, as the other imports refuse an empty file.
fn print_import(dir: &std::path::Path, transfer: &Transfer, global: &GlobalArgs) -> Result<()> {
    if !global.json {
        for skipped in &transfer.skipped {
            eprintln!("warning: {skipped}");
        }
    }
    let records = transfer.records();
    if records == 0 {
        bail!(
            "{} holds no browser memory (no trajectories, domains/*/knowledge.json or selectors.json, agent-runs/, hints.json or runs/); nothing to import",
            dir.display()
        );
    }
    if global.json {
        return print_json(&ImportView {
            read: transfer_view(transfer),
            unchanged: transfer.unchanged,
            skipped: transfer
                .skipped
                .iter()
                .map(|s| SkippedView {
                    path: s.path.display().to_string(),
                    reason: s.reason,
                })
                .collect(),
        });
    }
    if transfer.unchanged == records {
        println!(
            "{} is already there: all {records} records unchanged",
            dir.display()
        );
        return Ok(());
    }
    print_transfer("imported", transfer, global)?;
    if transfer.unchanged > 0 {
        println!("({} of them already there, unchanged)", transfer.unchanged);
    }
    Ok(())
}

fn transfer_view(transfer: &Transfer) -> TransferView {
    TransferView {
        trajectories: transfer.trajectories,
        sites: transfer.sites,
        runs: transfer.runs,
        hints: transfer.hints,
        suite_summaries: transfer.suite_summaries,
    }
}

fn print_transfer(verb: &str, transfer: &Transfer, global: &GlobalArgs) -> Result<()> {
    let view = transfer_view(transfer);
    if global.json {
        return print_json(&view);
    }
    println!(
        "{verb} {} trajectories, {} sites, {} runs, {} suite summaries{}",
        view.trajectories,
        view.sites,
        view.runs,
        view.suite_summaries,
        if view.hints { " and hints" } else { "" }
    );
    Ok(())
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
