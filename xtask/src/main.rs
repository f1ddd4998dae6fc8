//! `cargo xtask`: the workspace's build system, in Rust so it runs wherever cargo does.
//!
//! - `cargo xtask ci`: every check CI runs, in order, stopping at the first failure.
//! - `cargo xtask deps`: only the dependency rules of `ARCHITECTURE.md`.

mod ci;
mod deps;

use anyhow::{Result, bail};

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((task, rest)) = args.split_first() else {
        print_usage();
        bail!("no task given");
    };
    match task.as_str() {
        "ci" => ci::run(rest),
        "deps" => deps::check_workspace(),
        "help" | "--help" | "-h" => {
            print_usage();
            Ok(())
        }
        other => {
            print_usage();
            bail!("unknown task {other:?}")
        }
    }
}

fn print_usage() {
    eprintln!(
        "usage: cargo xtask <task>\n\n\
         tasks:\n  \
         ci     format, lint, test, snapshot, doc, bench smoke and dependency checks\n  \
         deps   check the dependency rules between crates"
    );
}

/// The workspace root: the parent of this crate's folder.
pub(crate) fn workspace_root() -> std::path::PathBuf {
    let manifest_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}
