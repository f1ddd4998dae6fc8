//! `agent-memory mcp`: the Model Context Protocol server over the contract's operations, on
//! stdio (the default; lines read by [`stdio`], which answers every line) or streamable HTTP
//! (`--http ADDR`), built on the official Rust SDK (`rmcp`). One long-running process keeps the database open; every tool is one operation
//! of [`crate::ops`], listed with that operation's committed input and output schemas.

pub(crate) mod http;
mod server;
mod stdio;
mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;

use crate::GlobalArgs;
use crate::ops::files::{Confined, FileAccess};

/// `mcp`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks one) instead
    /// of stdio. The endpoint is /mcp.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The bearer token every HTTP request must carry (`Authorization: Bearer TOKEN`);
    /// required to bind an address other than loopback.
    #[arg(
        long,
        env = "AGENT_MEMORY_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    token: Option<String>,
    /// A browser origin allowed to call the HTTP server besides localhost, e.g.
    /// `https://app.example.com:443` (repeat for more).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// A folder whose files clients may name (`trail_path`), repeat for more; by default a
    /// client names no file. Paths are resolved (`..`, symlinks) before they are checked.
    #[arg(long = "allow-dir", value_name = "DIR")]
    allow_dir: Vec<PathBuf>,
    /// The most HTTP connections open at once; beyond it the connection that has waited
    /// longest for a request is closed to make room.
    #[arg(
        long,
        value_name = "N",
        default_value_t = http::DEFAULT_MAX_CONNECTIONS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_connections: u32,
    /// The most MCP sessions over HTTP at once (each holds about 50 KB until it is closed or
    /// idle for 5 minutes); beyond it an `initialize` gets 503.
    #[arg(
        long,
        value_name = "N",
        default_value_t = http::DEFAULT_MAX_SESSIONS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_sessions: u32,
    /// The most requests a client may have in flight (read, not yet answered). On stdio the
    /// server reads no further until one is answered, so more wait in the pipe, not in its
    /// memory; over HTTP a session's request beyond it gets 429.
    #[arg(
        long,
        value_name = "N",
        default_value_t = stdio::DEFAULT_MAX_IN_FLIGHT,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_in_flight: u32,
    /// Serve only these families of tools, comma-separated: `notes`, `trajectory`, `browser`,
    /// `turns`, `recording`, `admin` (list, forget, stats). Default: all of them. Fewer tools
    /// keep a client's context small.
    #[arg(
        long,
        value_name = "FAMILIES",
        value_delimiter = ',',
        value_parser = clap::builder::PossibleValuesParser::new(agent_memory_contract::operations::FAMILIES)
    )]
    tools: Vec<String>,
}

/// Serves MCP until the client closes stdin (stdio) or the process is interrupted (HTTP).
pub(crate) fn run(args: &McpArgs, global: &GlobalArgs) -> Result<()> {
    if let Some(address) = args.http {
        check_access(address, args.token.as_deref())?;
    }
    let files = FileAccess::Within(Confined::new(
        &args.allow_dir,
        "start the server with --allow-dir DIR to let clients read files inside DIR",
    )?);
    // Created by the first write: a client that only reads leaves no file behind.
    let database = std::sync::Arc::new(global.database()?);
    // The last reference is dropped here, after the runtime: the PostgreSQL driver closes its
    // connections with a runtime of its own, which cannot start inside another.
    let server = server::MemoryServer::new(
        std::sync::Arc::clone(&database),
        if args.tools.is_empty() {
            tools::all()?
        } else {
            let families: Vec<&str> = args.tools.iter().map(String::as_str).collect();
            tools::of_families(&families)?
        },
        global.now,
        files,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(async {
        match args.http {
            Some(address) => {
                let access = http::Access {
                    token: args.token.clone(),
                    origins: args.allow_origin.clone(),
                    max_connections: args.max_connections as usize,
                    max_sessions: args.max_sessions as usize,
                    max_in_flight: args.max_in_flight as usize,
                };
                http::serve(server, address, access).await
            }
            None => {
                let (read, write) = stdio::standard_streams();
                let running = server
                    .serve(stdio::LineTransport::new(
                        read,
                        write,
                        args.max_in_flight as usize,
                    ))
                    .await
                    .context("starting MCP on stdio")?;
                running.waiting().await.context("serving MCP on stdio")?;
                Ok(())
            }
        }
    });
    drop(runtime);
    drop(database);
    served
}

/// Refuses to bind beyond loopback without a token, and an empty token anywhere.
pub(crate) fn check_access(address: SocketAddr, token: Option<&str>) -> Result<()> {
    match token {
        Some(token) if token.trim().is_empty() => {
            bail!("the bearer token is empty; give a non-empty --token or AGENT_MEMORY_TOKEN")
        }
        Some(_) => Ok(()),
        None if address.ip().is_loopback() => Ok(()),
        None => bail!(
            "{address} is not a loopback address: serving it needs a bearer token (--token or AGENT_MEMORY_TOKEN)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::check_access;

    #[test]
    fn only_loopback_may_go_without_a_token() {
        let loopback = "127.0.0.1:0".parse().expect("address");
        let anywhere = "0.0.0.0:8765".parse().expect("address");
        assert!(check_access(loopback, None).is_ok());
        assert!(check_access("[::1]:0".parse().expect("address"), None).is_ok());
        assert!(check_access(anywhere, Some("s3cret")).is_ok());
        let refused = check_access(anywhere, None).expect_err("no token");
        assert_eq!(
            refused.to_string(),
            "0.0.0.0:8765 is not a loopback address: serving it needs a bearer token (--token or AGENT_MEMORY_TOKEN)"
        );
        assert!(check_access(loopback, Some(" ")).is_err());
    }
}
