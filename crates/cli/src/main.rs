//! The `agent-memory` binary: the command line of [`agent_memory_cli::run`].

fn main() -> std::process::ExitCode {
    agent_memory_cli::run(std::env::args_os())
}
