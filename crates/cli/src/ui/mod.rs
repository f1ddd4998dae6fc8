//! `agent-memory ui`: the inspector page. A small web application served by the binary itself
//! (its page, script and style are compiled in), reading the memory through the contract's
//! operations ([`views`]) and forgetting through `memory_forget`, on SQLite and PostgreSQL
//! alike.
//!
//! It binds loopback by default; any other address needs a bearer token, as `mcp --http`
//! does. A browser sends the token once as `/?token=TOKEN` and is redirected to `/` with a
//! session cookie of this server's own: a random id from the operating system's generator,
//! never the token (a cookie is sent to every port of its host, so another server there
//! sees it), known only to the process that issued it, and one of a bounded number. Every
//! data request is a `POST` to `/api/<view>` carrying the per-server CSRF token the page was
//! served with, from a page of this server's own origin; a loopback server answers only a
//! `Host` naming this machine (against DNS rebinding). The page shows what the store holds,
//! and the store never holds a value given as sensitive.
//!
//! On a SQLite file the views read through a read-only connection of their own, and only a
//! forget writes through the other: a read never queues behind a forget's write lock, as
//! WAL lets it read the last committed snapshot meanwhile.

mod views;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use serde_json::Value;

use agent_memory_contract::files::{Confined, FileAccess};
use agent_memory_contract::{Env, Error as ErrorBody, ErrorKind};
use agent_memory_core::{IdSource, ManualClock, RandomIds, SystemClock, Timestamp};

use crate::mcp::http::{self, Body, plain};
use crate::{GlobalArgs, database};

/// The page, its script and its style, compiled into the binary.
const INDEX: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/style.css");

/// The most bytes a view's input may hold.
const MAX_BODY_BYTES: usize = 1 << 20;

/// The start of the session cookie's name; the server's port ends it, so inspectors on two
/// ports of one host (which share their cookies) each find their own.
const SESSION_COOKIE: &str = "agent_memory_session_";

/// The most browser sessions a server keeps; a login beyond them ends the oldest.
const MAX_SESSIONS: usize = 64;

/// The page cache of the views' read-only connection, in KiB: enough for a page of any view,
/// and small beside the writer's, so the server's memory stays small whatever it reads.
const READER_CACHE_KIB: u32 = 8 * 1024;

/// `ui`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct UiArgs {
    /// The address to serve the page on (port 0 picks one); anything but loopback needs
    /// a token.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    listen: SocketAddr,
    /// The bearer token every request must carry, required to bind an address other than
    /// loopback; open `http://HOST:PORT/?token=TOKEN` once in the browser.
    #[arg(
        long,
        env = "AGENT_MEMORY_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    token: Option<String>,
    /// The most connections open at once.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 64,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    max_connections: u32,
}

/// What every request is answered with.
struct Inspector {
    /// The store the views read: on a SQLite file a read-only connection of its own, so a
    /// read never waits for [`writer`](Self::writer); elsewhere the same store.
    reader: database::Store,
    /// The store a forget writes to.
    writer: database::Store,
    now: Option<Timestamp>,
    ids: Arc<RandomIds>,
    /// The per-server token every `POST` must carry in `X-CSRF-Token`.
    csrf: String,
    /// The bearer token, when one is required.
    token: Option<String>,
    /// The session ids this server gave browsers that logged in with the token, oldest
    /// first, at most [`MAX_SESSIONS`].
    sessions: Mutex<VecDeque<String>>,
    /// The session cookie's name ([`SESSION_COOKIE`] and the port).
    cookie: String,
    local_hosts_only: bool,
}

/// Serves the inspector until interrupted.
pub(crate) fn run(args: &UiArgs, global: &GlobalArgs) -> Result<()> {
    crate::mcp::check_access(args.listen, args.token.as_deref())?;
    let writer = global.open()?;
    let reader = database::open_reader(&global.db, &writer, READER_CACHE_KIB)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let bound = listener.local_addr().context("reading the bound address")?;
        let inspector = Arc::new(Inspector {
            reader: Arc::clone(&reader),
            writer: Arc::clone(&writer),
            now: global.now,
            ids: Arc::new(RandomIds::new()),
            csrf: random_token()?,
            token: args.token.clone(),
            sessions: Mutex::new(VecDeque::new()),
            cookie: format!("{SESSION_COOKIE}{}", bound.port()),
            local_hosts_only: args.listen.ip().is_loopback(),
        });
        eprintln!("agent-memory: the inspector is at http://{bound}/");
        let handler: http::Handler = Arc::new(move |request| {
            let inspector = Arc::clone(&inspector);
            Box::pin(async move { inspector.handle(request).await })
        });
        http::accept(listener, args.max_connections as usize, handler).await
    });
    drop(runtime);
    drop((reader, writer));
    served
}

/// 32 random hex digits from the operating system's generator.
fn random_token() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("no random numbers: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn with_type(mut response: Response<Body>, content_type: &'static str) -> Response<Body> {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    headers.insert(
        "x-content-type-options",
        header::HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    headers.insert(
        "referrer-policy",
        header::HeaderValue::from_static("no-referrer"),
    );
    response
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    let mut response = plain(status, value.to_string());
    *response.status_mut() = status;
    with_type(response, "application/json")
}

impl Inspector {
    /// The refusal of a request the token, `Host` or `Origin` rules turn away.
    fn refusal(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        if let Some(token) = &self.token {
            let bearer = format!("Bearer {token}");
            let by_header = request
                .headers()
                .get(header::AUTHORIZATION)
                .is_some_and(|v| http::same(v.as_bytes(), bearer.as_bytes()));
            if !by_header && !self.in_session(request) {
                return Some(plain(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized: open /?token=TOKEN once, or send Authorization: Bearer TOKEN\n",
                ));
            }
        }
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let host_name = host
            .parse::<hyper::Uri>()
            .ok()
            .and_then(|uri| uri.host().map(str::to_owned))
            .unwrap_or_default();
        if self.local_hosts_only && !http::is_local_host(&host_name) {
            return Some(plain(
                StatusCode::FORBIDDEN,
                "forbidden: the Host header must name this machine (localhost or a loopback address)\n",
            ));
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let own = format!("http://{host}");
            let same_origin = origin
                .to_str()
                .is_ok_and(|origin| origin.eq_ignore_ascii_case(&own));
            if !same_origin {
                return Some(plain(
                    StatusCode::FORBIDDEN,
                    "forbidden: only this server's own page may call it (foreign Origin)\n",
                ));
            }
        }
        None
    }

    async fn handle(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        if let Some(token) = self.token_login(&request) {
            return token;
        }
        if let Some(refusal) = self.refusal(&request) {
            return refusal;
        }
        let path = request.uri().path().to_owned();
        match (request.method(), path.as_str()) {
            (&Method::GET, "/") => with_type(
                plain(StatusCode::OK, INDEX.replace("{{CSRF}}", &self.csrf)),
                "text/html; charset=utf-8",
            ),
            (&Method::GET, "/app.js") => with_type(
                plain(StatusCode::OK, SCRIPT),
                "text/javascript; charset=utf-8",
            ),
            (&Method::GET, "/style.css") => {
                with_type(plain(StatusCode::OK, STYLE), "text/css; charset=utf-8")
            }
            (&Method::POST, api) if api.starts_with("/api/") => self.api(request).await,
            (_, "/" | "/app.js" | "/style.css") => {
                plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
            }
            _ => plain(StatusCode::NOT_FOUND, "not found\n"),
        }
    }

    /// Whether `request` carries this server's session cookie with an id it gave and still
    /// keeps. Only a session id counts: a cookie holding the token is no credential.
    fn in_session(&self, request: &Request<Incoming>) -> bool {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        request
            .headers()
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .filter(|(name, _)| *name == self.cookie)
            .any(|(_, value)| {
                sessions
                    .iter()
                    .any(|id| http::same(value.as_bytes(), id.as_bytes()))
            })
    }

    /// A new session id, kept among the newest [`MAX_SESSIONS`].
    fn new_session(&self) -> Result<String> {
        let id = random_token()?;
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if sessions.len() >= MAX_SESSIONS {
            sessions.pop_front();
        }
        sessions.push_back(id.clone());
        Ok(id)
    }

    /// `GET /?token=TOKEN` with the right token: sets a session cookie and goes to the page,
    /// whose address no longer carries the token.
    fn token_login(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        let token = self.token.as_ref()?;
        if request.method() != Method::GET || request.uri().path() != "/" {
            return None;
        }
        let given = request
            .uri()
            .query()?
            .split('&')
            .find_map(|pair| pair.strip_prefix("token="))?;
        if !http::same(given.as_bytes(), token.as_bytes()) {
            return None;
        }
        let Ok(session) = self.new_session() else {
            return Some(plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: no random numbers for a session\n",
            ));
        };
        let mut response = plain(StatusCode::SEE_OTHER, "");
        let headers = response.headers_mut();
        headers.insert(header::LOCATION, header::HeaderValue::from_static("/"));
        headers.insert(
            header::CACHE_CONTROL,
            header::HeaderValue::from_static("no-store"),
        );
        headers.insert(
            "referrer-policy",
            header::HeaderValue::from_static("no-referrer"),
        );
        let cookie = format!(
            "{}={session}; HttpOnly; SameSite=Strict; Path=/",
            self.cookie
        );
        if let Ok(value) = header::HeaderValue::from_str(&cookie) {
            headers.insert(header::SET_COOKIE, value);
        }
        Some(response)
    }

    async fn api(self: Arc<Self>, request: Request<Incoming>) -> Response<Body> {
        let given = request
            .headers()
            .get("x-csrf-token")
            .map(|v| v.as_bytes().to_vec())
            .unwrap_or_default();
        if !http::same(&given, self.csrf.as_bytes()) {
            return plain(
                StatusCode::FORBIDDEN,
                "forbidden: a request needs this page's X-CSRF-Token (reload the page)\n",
            );
        }
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if !json {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported media type: send Content-Type: application/json\n",
            );
        }
        let view = request.uri().path().trim_start_matches("/api/").to_owned();
        if !views::VIEWS.contains(&view.as_str()) {
            return plain(
                StatusCode::NOT_FOUND,
                format!("not found: no view {view:?}\n"),
            );
        }
        let body = match http::read_body(request.into_body(), MAX_BODY_BYTES).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
        };
        let input: Value = if body.is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_slice(&body) {
                Ok(input) => input,
                Err(e) => {
                    let body = ErrorBody::new(
                        ErrorKind::InvalidInput,
                        format!("the request body is not JSON: {e}"),
                    );
                    return json_response(
                        StatusCode::BAD_REQUEST,
                        &serde_json::json!({ "error": body }),
                    );
                }
            }
        };
        let inspector = Arc::clone(&self);
        let answered = tokio::task::spawn_blocking(move || {
            let store = if views::WRITES.contains(&view.as_str()) {
                &inspector.writer
            } else {
                &inspector.reader
            };
            let env = Env {
                client: Some("inspector".to_owned()),
                store,
                clock: match inspector.now {
                    Some(at) => Box::new(ManualClock::new(at)),
                    None => Box::new(SystemClock),
                },
                ids: Box::new(Arc::clone(&inspector.ids) as Arc<dyn IdSource>),
                files: FileAccess::Within(
                    Confined::new(&[], "the inspector reads no file a page names")
                        .expect("no folders to resolve"),
                ),
            };
            views::answer(&env, &view, input)
        })
        .await;
        match answered {
            Ok(Ok(value)) => json_response(StatusCode::OK, &value),
            Ok(Err(error)) => {
                let body = crate::contract_error(&error);
                let status = match body.kind() {
                    ErrorKind::InvalidInput | ErrorKind::Usage => StatusCode::BAD_REQUEST,
                    ErrorKind::NotFound => StatusCode::NOT_FOUND,
                    ErrorKind::Conflict => StatusCode::CONFLICT,
                    _ => StatusCode::INTERNAL_SERVER_ERROR,
                };
                json_response(status, &serde_json::json!({ "error": body }))
            }
            Err(_) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: the view failed\n",
            ),
        }
    }
}
