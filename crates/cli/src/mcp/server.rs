//! [`MemoryServer`]: the MCP server handler over one open database. Every call runs its
//! operation in place on its worker thread (the store is synchronous), each store call one
//! transaction; calls that write are serialized by a write gate within this process. The
//! gate is not what keeps a session's log valid: a turns append checks its position in the
//! store's atomic step (`SessionStore::session_append_at`), which holds across processes,
//! servers and hosts too.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};

use crate::database::Database;
use agent_memory_core::{ManualClock, RandomIds, SystemClock, Timestamp};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    InitializeResult, JsonObject, ListToolsResult, MetaObject, PaginatedRequestParams,
    ServerCapabilities, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;

use crate::mcp::tools::{Effect, ToolDef};
use crate::ops::files::FileAccess;
use crate::ops::{Env, ErrorKind};

/// What every call shares: the database, the tools and the write gate.
struct Shared {
    /// Created by the first write; a read before it answers as on an empty database.
    database: Arc<Database>,
    tools: Vec<ToolDef>,
    ids: Arc<RandomIds>,
    /// A fixed "now" (`--now` / `AGENT_MEMORY_NOW`), else the system clock per call.
    now: Option<Timestamp>,
    /// Held by every call that writes, for the whole operation.
    writes: Mutex<()>,
    /// The files a client may name (`--allow-dir`).
    files: FileAccess,
}

/// The MCP server: cheap to clone (one per HTTP session), all clones on one database.
#[derive(Clone)]
pub(crate) struct MemoryServer {
    shared: Arc<Shared>,
}

/// The `_meta` key of a failed call's error document (`{"kind", "message", "input"}`).
pub(crate) const ERROR_META_KEY: &str = "agent-memory/error";

impl MemoryServer {
    /// A server over `database` offering `tools`, reading for its clients only the files
    /// `files` allows.
    pub(crate) fn new(
        database: Arc<Database>,
        tools: Vec<ToolDef>,
        now: Option<Timestamp>,
        files: FileAccess,
    ) -> Self {
        MemoryServer {
            shared: Arc::new(Shared {
                database,
                tools,
                ids: Arc::new(RandomIds::new()),
                now,
                writes: Mutex::new(()),
                files,
            }),
        }
    }

    fn database(&self) -> String {
        self.shared.database.location()
    }
}

/// The result of a failed call: the command line's one-line message as text, and the
/// contract's error body under [`ERROR_META_KEY`].
fn failure(error: &anyhow::Error, database: &str) -> CallToolResult {
    let mut body = crate::contract_error(error);
    if body.kind() == ErrorKind::Database && body.input().is_none() {
        body = body.about(database);
    }
    let message = body.message().to_owned();
    let mut result = CallToolResult::error(vec![ContentBlock::text(message)]);
    if let Ok(value) = serde_json::to_value(&body) {
        let mut meta = JsonObject::new();
        meta.insert(ERROR_META_KEY.to_owned(), value);
        result.meta = Some(MetaObject(meta));
    }
    result
}

/// The client a write's provenance names: `mcp:` and the name the client gave in its
/// `initialize` (at most 64 characters, control characters dropped), or `mcp`.
fn client_of(name: Option<&str>) -> String {
    let name: String = name
        .unwrap_or_default()
        .chars()
        .filter(|c| !c.is_control())
        .take(64)
        .collect();
    let name = name.trim();
    if name.is_empty() {
        "mcp".to_owned()
    } else {
        format!("mcp:{name}")
    }
}

/// Runs tool `index` on `arguments` for `client`, on this (blocking) thread.
fn run(
    shared: &Shared,
    index: usize,
    arguments: JsonObject,
    client: String,
) -> anyhow::Result<Value> {
    let def = &shared.tools[index];
    let arguments = Value::Object(arguments);
    let effect = def.effect_on(&arguments);
    let env = Env {
        client: Some(client),
        store: shared.database.store(effect)?,
        clock: match shared.now {
            Some(at) => Box::new(ManualClock::new(at)),
            None => Box::new(SystemClock),
        },
        ids: Box::new(Arc::clone(&shared.ids)),
        files: shared.files.clone(),
    };
    if effect == Effect::Reads {
        return def.call(&env, arguments);
    }
    // A panic inside an operation leaves nothing half-written (each store call is one
    // transaction), so a poisoned gate is still a valid gate.
    let _gate = shared.writes.lock().unwrap_or_else(PoisonError::into_inner);
    def.call(&env, arguments)
}

impl ServerHandler for MemoryServer {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("agent-memory", env!("CARGO_PKG_VERSION"))
                    .with_title("agent-memory"),
            )
            .with_instructions(
                "Durable memory for agents in one database: procedural memory (trajectory_*), \
                 browser-agent memory (browser_*), coding-session turns (turns_*) and recorded \
                 tool calls (recording_*). memory_list shows what is stored.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Tool> = self.shared.tools.iter().map(|d| d.tool.clone()).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared
            .tools
            .iter()
            .find(|d| d.tool.name == name)
            .map(|d| d.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = context.peer.peer_info();
        let client = client_of(peer.as_ref().map(|p| p.client_info.name.as_str()));
        let Some(index) = self
            .shared
            .tools
            .iter()
            .position(|d| d.tool.name == request.name)
        else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        // The operation runs on this worker thread, whose other tasks tokio hands to another
        // worker meanwhile (`block_in_place`), rather than on a blocking thread woken for it
        // and back: a short call's two hand-offs cost as much as its work on a busy machine.
        // It runs to its end even if the client goes away (a future blocked in its poll is
        // not dropped midway): what it wrote is committed, so nothing acknowledged is lost.
        let outcome = tokio::task::block_in_place(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                run(&self.shared, index, arguments, client)
            }))
        });
        let result = match outcome {
            Ok(Ok(value)) => CallToolResult::structured(value),
            Ok(Err(error)) => failure(&error, &self.database()),
            Err(panic) => {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "it panicked".to_owned());
                failure(
                    &anyhow::anyhow!("the {} call stopped: {why}", request.name),
                    &self.database(),
                )
            }
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod client_tests {
    use super::client_of;

    #[test]
    fn a_client_is_named_by_its_own_bounded_name() {
        assert_eq!(client_of(Some("claude-code")), "mcp:claude-code");
        assert_eq!(client_of(None), "mcp");
        assert_eq!(client_of(Some(" \u{7}\n ")), "mcp");
        assert_eq!(client_of(Some(&"x".repeat(500))).len(), "mcp:".len() + 64);
    }
}
