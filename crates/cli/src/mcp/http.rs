//! Streamable HTTP: rmcp's `StreamableHttpService` at `/mcp`, served by hyper, behind a gate
//! that asks for the bearer token when one is set, checks `Host` and `Origin`, reads the body
//! within a time and size limit, and keeps the number of sessions under its limit.
//!
//! `Host` and `Origin` are checked here rather than by rmcp, as the MCP specification asks
//! against DNS rebinding: rmcp compares names exactly, while every loopback address
//! (127.0.0.0/8, `::1`) is this machine. A server bound to loopback answers only a `Host`
//! that is `localhost` or a loopback address (a rebound name is refused with 403); a request
//! from a browser page is refused with 403 unless the page is served from this machine or
//! from an origin given with `--allow-origin`. Requests without `Origin` (every non-browser
//! client) pass.
//!
//! A client that is slow on purpose cannot starve the others: a request's headers must
//! arrive within [`HEADER_READ_TIMEOUT`] and its body within [`BODY_READ_TIMEOUT`], at most
//! `--max-connections` are open at once, and when one more arrives the connection that has
//! waited longest for a request is closed to make room. Accepting fails for want of
//! descriptors make room the same way, then wait a little longer each time. A session has at
//! most `--max-in-flight` requests being answered at once (each counted until its response
//! body ends); one more gets 429 with a JSON-RPC error naming the limit, so one client's flood
//! over many connections holds no more than that.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Notify;

use crate::mcp::server::MemoryServer;
use crate::ops::files::MAX_FILE_BYTES;

/// The path the MCP endpoint is served at.
pub(crate) const PATH: &str = "/mcp";

/// How long a client has to send a request's headers (and an idle connection to begin its
/// next request) before the connection is closed.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send a request's body.
pub(crate) const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The default of `--max-connections`.
pub(crate) const DEFAULT_MAX_CONNECTIONS: u32 = 256;

/// The default of `--max-sessions`: about 5 MB of sessions at ~50 KB each.
pub(crate) const DEFAULT_MAX_SESSIONS: u32 = 100;

/// Who may call the server over HTTP, and how much of it they may hold.
#[derive(Debug)]
pub(crate) struct Access {
    /// The bearer token every request must carry, if any.
    pub(crate) token: Option<String>,
    /// Browser origins allowed besides the loopback ones.
    pub(crate) origins: Vec<String>,
    /// The most connections open at once.
    pub(crate) max_connections: usize,
    /// The most MCP sessions at once.
    pub(crate) max_sessions: usize,
    /// The most requests of one session being answered at once.
    pub(crate) max_in_flight: usize,
}

pub(crate) type Body = BoxBody<Bytes, Infallible>;

struct Gate {
    service: StreamableHttpService<MemoryServer, LocalSessionManager>,
    /// The sessions `service` keeps, counted against `max_sessions`.
    sessions: Arc<LocalSessionManager>,
    max_sessions: usize,
    /// Held while a request that may create a session is answered, so the count holds.
    creating: tokio::sync::Mutex<()>,
    /// `Bearer <token>`, as the `Authorization` header must read.
    expected: Option<Vec<u8>>,
    /// Whether `Host` must name this machine (the server is bound to loopback).
    local_hosts_only: bool,
    /// The `--allow-origin` origins.
    origins: Vec<AllowedOrigin>,
    /// The requests each session has being answered.
    loads: Arc<SessionLoads>,
    /// The most requests of one session being answered at once.
    max_in_flight: usize,
}

/// The requests each session has being answered, by session id (sessions with none are
/// not kept).
#[derive(Default)]
struct SessionLoads(Mutex<HashMap<String, usize>>);

/// One request of a session counted in flight until dropped, with the end of its response.
struct InFlight {
    loads: Arc<SessionLoads>,
    session: String,
}

impl SessionLoads {
    /// Counts one more request of `session`; `None` when it already has `limit`.
    fn begin(self: &Arc<Self>, session: &str, limit: usize) -> Option<InFlight> {
        let mut loads = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let count = loads.entry(session.to_owned()).or_insert(0);
        if *count >= limit {
            return None;
        }
        *count += 1;
        Some(InFlight {
            loads: Arc::clone(self),
            session: session.to_owned(),
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut loads = self.loads.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = loads.get_mut(&self.session) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                loads.remove(&self.session);
            }
        }
    }
}

pub(crate) fn plain(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(text.into()).boxed());
    *response.status_mut() = status;
    response
}

/// Compares in time independent of where the texts differ, so the token cannot be guessed
/// a byte at a time.
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `host` (a URL's or `Host` header's host, IPv6 in brackets or not) is this machine.
pub(crate) fn is_local_host(host: &str) -> bool {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.eq_ignore_ascii_case("localhost")
        || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// An origin `--allow-origin` names: `scheme://host[:port]`, `:*` for any port (a port
/// left out also matches any, as rmcp reads it), or `null`.
#[derive(Debug, PartialEq)]
enum AllowedOrigin {
    Null,
    Page {
        scheme: String,
        host: String,
        /// `None`: any port.
        port: Option<u16>,
    },
}

/// The scheme, host and port of an `Origin` value; `None` for `null` or a malformed one.
pub(crate) fn parse_origin(value: &str) -> Option<(String, String, Option<u16>)> {
    let uri = value.trim().parse::<hyper::Uri>().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = authority.port_u16().or(match scheme.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    Some((scheme, host.to_ascii_lowercase(), port))
}

impl AllowedOrigin {
    fn parse(entry: &str) -> Option<AllowedOrigin> {
        let entry = entry.trim();
        if entry.eq_ignore_ascii_case("null") {
            return Some(AllowedOrigin::Null);
        }
        let (base, any_port) = match entry.strip_suffix(":*") {
            Some(base) => (base, true),
            None => (entry, false),
        };
        let uri = base.parse::<hyper::Uri>().ok()?;
        let authority = uri.authority()?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        Some(AllowedOrigin::Page {
            scheme: uri.scheme_str()?.to_ascii_lowercase(),
            host: host.to_ascii_lowercase(),
            port: if any_port { None } else { authority.port_u16() },
        })
    }

    fn admits(&self, origin: &str) -> bool {
        match (self, parse_origin(origin)) {
            (AllowedOrigin::Null, None) => origin.trim().eq_ignore_ascii_case("null"),
            (AllowedOrigin::Page { scheme, host, port }, Some((s, h, p))) => {
                *scheme == s && *host == h && (port.is_none() || *port == p)
            }
            _ => false,
        }
    }
}

impl Gate {
    /// The refusal of a request the token, path, `Host` or `Origin` rules turn away.
    fn refusal(&self, request: &Request<Incoming>) -> Option<Response<Body>> {
        if let Some(expected) = &self.expected {
            let given = request
                .headers()
                .get(header::AUTHORIZATION)
                .map(|v| v.as_bytes())
                .unwrap_or_default();
            if !same(given, expected) {
                let mut response = plain(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized: send the server's bearer token (Authorization: Bearer TOKEN)\n",
                );
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer realm=\"agent-memory\""),
                );
                return Some(response);
            }
        }
        if request.uri().path() != PATH {
            return Some(plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is /mcp\n",
            ));
        }
        if self.local_hosts_only {
            let host = match request.headers().get(header::HOST) {
                Some(value) => value
                    .to_str()
                    .ok()
                    .and_then(|v| v.parse::<hyper::Uri>().ok()),
                None => Some(request.uri().clone()),
            };
            let local = host
                .as_ref()
                .and_then(|uri| uri.host())
                .is_some_and(is_local_host);
            if !local {
                return Some(plain(
                    StatusCode::FORBIDDEN,
                    "forbidden: the Host header must name this machine (localhost or a loopback address)\n",
                ));
            }
        }
        if let Some(origin) = request.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or_default();
            let local = parse_origin(origin).is_some_and(|(scheme, host, _)| {
                (scheme == "http" || scheme == "https") && is_local_host(&host)
            });
            if !local && !self.origins.iter().any(|allowed| allowed.admits(origin)) {
                return Some(plain(
                    StatusCode::FORBIDDEN,
                    "forbidden: pages of this Origin may not call the server (see --allow-origin)\n",
                ));
            }
        }
        None
    }

    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if let Some(refusal) = self.refusal(&request) {
            return refusal;
        }
        let (parts, body) = request.into_parts();
        let body = match read_body(body, MAX_FILE_BYTES as usize).await {
            Ok(body) => body,
            Err(refusal) => return refusal,
        };
        let request = Request::from_parts(parts, Full::new(body));
        // A POST without a session id is an `initialize` that opens a session (or a request
        // of a stateless protocol version, which opens none): answered one at a time, so
        // the count of sessions cannot pass the limit between the check and the creation.
        let opens_session =
            request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
        if !opens_session {
            let session = request
                .headers()
                .get("mcp-session-id")
                .map(|id| String::from_utf8_lossy(id.as_bytes()).into_owned());
            // A GET is the session's standing stream of server messages, not a request.
            let (&Method::POST, Some(session)) = (request.method(), session) else {
                return self.service.handle(request).await;
            };
            let Some(in_flight) = self.loads.begin(&session, self.max_in_flight) else {
                return too_many_in_flight(self.max_in_flight);
            };
            // Counted until the response's body (perhaps a stream) is done.
            return self.service.handle(request).await.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &in_flight;
                    frame
                })
                .boxed()
            });
        }
        let _one = self.creating.lock().await;
        if self.sessions.sessions.read().await.len() >= self.max_sessions {
            return too_many_sessions(self.max_sessions);
        }
        self.service.handle(request).await
    }
}

/// A request's body, read within [`BODY_READ_TIMEOUT`] and `limit` bytes; the answer to send
/// when it is too large, malformed or too slow.
pub(crate) async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, Response<Body>> {
    let collected =
        tokio::time::timeout(BODY_READ_TIMEOUT, Limited::new(body, limit).collect()).await;
    match collected {
        Ok(Ok(body)) => Ok(body.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => Err(plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("payload too large: a request body holds at most {limit} bytes\n"),
        )),
        Ok(Err(error)) => Err(plain(
            StatusCode::BAD_REQUEST,
            format!("bad request: {error}\n"),
        )),
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "request timeout: the body did not arrive within {} s\n",
                BODY_READ_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// 503 with a JSON-RPC error naming the limit and the flag that sets it.
fn too_many_sessions(limit: usize) -> Response<Body> {
    let message = format!(
        "the server holds its limit of {limit} sessions: close one (DELETE /mcp with its \
         Mcp-Session-Id), wait for an idle one to expire (5 minutes), or start the server with \
         a higher --max-sessions"
    );
    json_error(StatusCode::SERVICE_UNAVAILABLE, &message, "5")
}

/// `status` with a JSON-RPC error of `message` and a `Retry-After` of `seconds`.
fn json_error(status: StatusCode, message: &str, seconds: &'static str) -> Response<Body> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32000, "message": message},
    });
    let mut response = plain(status, body.to_string());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::RETRY_AFTER,
        header::HeaderValue::from_static(seconds),
    );
    response
}

/// 429 with a JSON-RPC error naming the limit and the flag that sets it.
fn too_many_in_flight(limit: usize) -> Response<Body> {
    let message = format!(
        "too many requests: this session has {limit} requests being answered; send the next \
         when one is answered, or start the server with a higher --max-in-flight"
    );
    json_error(StatusCode::TOO_MANY_REQUESTS, &message, "1")
}

/// One open connection, as the limit sees it.
#[derive(Default)]
struct Connection {
    /// Requests being answered (a response streams on after its handler returns).
    answering: AtomicUsize,
    /// Whether a request ever arrived on it.
    served: AtomicBool,
    /// Notified when it is closed to make room.
    close: Notify,
}

/// Counts a request as answered until dropped, with the end of its response body.
struct Answering(Arc<Connection>);

impl Answering {
    fn begin(connection: &Arc<Connection>) -> Answering {
        connection.served.store(true, Ordering::SeqCst);
        connection.answering.fetch_add(1, Ordering::SeqCst);
        Answering(Arc::clone(connection))
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.0.answering.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections, oldest first, and how many may be open at once.
struct Connections {
    limit: usize,
    open: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next: AtomicU64,
}

impl Connections {
    fn new(limit: usize) -> Connections {
        Connections {
            limit: limit.max(1),
            open: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
        }
    }

    /// Registers a new connection, closing the one that has waited longest for a request
    /// when the limit is reached; `None` when every open connection is answering one.
    fn admit(&self) -> Option<(u64, Arc<Connection>)> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= self.limit && !Self::close_one(&mut open) {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection::default());
        open.insert(id, Arc::clone(&connection));
        Some((id, connection))
    }

    /// Closes a connection to free its descriptor; whether there was one to close.
    fn make_room(&self) -> bool {
        Self::close_one(&mut self.open.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Closes the oldest connection waiting for its first request, else the oldest idle
    /// one; a connection answering a request is never closed.
    fn close_one(open: &mut BTreeMap<u64, Arc<Connection>>) -> bool {
        let idle = |c: &Arc<Connection>| c.answering.load(Ordering::SeqCst) == 0;
        let victim = open
            .iter()
            .find(|(_, c)| idle(c) && !c.served.load(Ordering::SeqCst))
            .or_else(|| open.iter().find(|(_, c)| idle(c)))
            .map(|(id, _)| *id);
        let Some(connection) = victim.and_then(|id| open.remove(&id)) else {
            return false;
        };
        connection.close.notify_one();
        true
    }

    fn release(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}

/// What a connection beyond the limit reads when every open one is answering a request.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n\
Content-Length: 67\r\nRetry-After: 1\r\nConnection: close\r\n\r\n\
service unavailable: every connection is busy (see --max-connections)";

/// Serves `server` at `address` until interrupted (Ctrl-C or SIGTERM).
pub(crate) async fn serve(server: MemoryServer, address: SocketAddr, access: Access) -> Result<()> {
    // `Host` and `Origin` are the gate's to check (see the module's documentation).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_FILE_BYTES as usize);
    let stop = config.cancellation_token.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::clone(&sessions), config);
    let origins = access
        .origins
        .iter()
        .map(|entry| {
            AllowedOrigin::parse(entry).with_context(|| {
                format!(
                    "--allow-origin {entry:?} is not an origin such as https://app.example.com:443"
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let gate = Arc::new(Gate {
        service,
        sessions,
        max_sessions: access.max_sessions.max(1),
        creating: tokio::sync::Mutex::new(()),
        expected: access
            .token
            .map(|token| format!("Bearer {token}").into_bytes()),
        // Clients reach a non-loopback address by names the server cannot know; the bearer
        // token, required there, is what keeps other pages and hosts out.
        local_hosts_only: address.ip().is_loopback(),
        origins,
        loads: Arc::new(SessionLoads::default()),
        max_in_flight: access.max_in_flight.max(1),
    });
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    eprintln!("agent-memory: MCP over streamable HTTP at http://{bound}{PATH}");
    let handler: Handler = Arc::new(move |request| {
        let gate = Arc::clone(&gate);
        Box::pin(async move { gate.handle(request).await })
    });
    accept(listener, access.max_connections, handler).await?;
    stop.cancel();
    Ok(())
}

/// Answers one request; what [`accept`] calls for each.
pub(crate) type Handler = Arc<
    dyn Fn(
            Request<Incoming>,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Response<Body>> + Send>>
        + Send
        + Sync,
>;

/// Accepts connections on `listener` and answers their requests with `handler` until
/// interrupted (Ctrl-C or SIGTERM), holding at most `max_connections` open at once.
pub(crate) async fn accept(
    listener: tokio::net::TcpListener,
    max_connections: usize,
    handler: Handler,
) -> Result<()> {
    let connections = Arc::new(Connections::new(max_connections));
    let mut terminate = terminate_signal()?;
    let mut pause = Duration::ZERO;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                pause = Duration::ZERO;
                stream
            }
            Err(error) => {
                // A connection that failed before it was accepted concerns only its client;
                // anything else (out of descriptors or memory) would fail again at once, so
                // free a descriptor and wait, longer each time, rather than spin.
                if !matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::Interrupted
                ) {
                    connections.make_room();
                    pause = (pause * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                    tokio::time::sleep(pause).await;
                }
                continue;
            }
        };
        // MCP messages are small: send each at once rather than wait to fill a segment.
        let _ = stream.set_nodelay(true);
        let Some((id, connection)) = connections.admit() else {
            let _ = stream.try_write(BUSY);
            continue;
        };
        tokio::spawn(serve_connection(
            stream,
            id,
            connection,
            Arc::clone(&handler),
            Arc::clone(&connections),
        ));
    }
    Ok(())
}

/// Serves one connection until it ends, fails, times out or is closed to make room.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    id: u64,
    connection: Arc<Connection>,
    handler: Handler,
    connections: Arc<Connections>,
) {
    let counted = Arc::clone(&connection);
    let service = hyper::service::service_fn(move |request| {
        let handler = Arc::clone(&handler);
        let answering = Answering::begin(&counted);
        async move {
            let response = handler(request).await;
            // The request counts as answered until its body (perhaps a stream) is done.
            let response = response.map(|body| {
                body.map_frame(move |frame| {
                    let _ = &answering;
                    frame
                })
                .boxed()
            });
            Ok::<_, Infallible>(response)
        }
    });
    let serving = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service);
    // A client that goes away mid-request, or is too slow, ends only its own connection.
    tokio::select! {
        _ = serving => {}
        _ = connection.close.notified() => {}
    }
    connections.release(id);
}

#[cfg(unix)]
fn terminate_signal() -> Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_session_has_at_most_its_limit_in_flight() {
        let loads = Arc::new(SessionLoads::default());
        let first = loads.begin("a", 2).expect("room");
        let second = loads.begin("a", 2).expect("room");
        assert!(loads.begin("a", 2).is_none(), "a third is refused");
        let other = loads
            .begin("b", 2)
            .expect("another session has its own room");
        drop(first);
        let again = loads
            .begin("a", 2)
            .expect("room again once one is answered");
        drop((second, again, other));
        assert!(
            loads.0.lock().expect("loads").is_empty(),
            "sessions with nothing in flight are not kept"
        );
        let refused = too_many_in_flight(2);
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        let body = refused
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        let error: serde_json::Value = serde_json::from_slice(&body).expect("JSON-RPC error");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("2 requests") && message.contains("--max-in-flight"),
            "{message}"
        );
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abd", b"Bearer abc"));
        assert!(!same(b"Bearer ab", b"Bearer abc"));
        assert!(!same(b"", b"Bearer abc"));
    }

    #[test]
    fn every_loopback_address_is_this_machine() {
        for host in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.0.0.2",
            "127.255.0.9",
            "[::1]",
            "::1",
        ] {
            assert!(is_local_host(host), "{host}");
        }
        for host in [
            "example.com",
            "127.0.0.1.example.com",
            "10.0.0.1",
            "[::2]",
            "0.0.0.0",
            "localhost.example",
        ] {
            assert!(!is_local_host(host), "{host}");
        }
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_port() {
        let check = |entry: &str, origin: &str, admitted: bool| {
            let allowed = AllowedOrigin::parse(entry).expect("an origin");
            assert_eq!(allowed.admits(origin), admitted, "{entry} {origin}");
        };
        check(
            "https://app.example.com:443",
            "https://app.example.com",
            true,
        );
        check(
            "https://app.example.com:443",
            "https://app.example.com:8443",
            false,
        );
        check(
            "https://app.example.com:*",
            "https://app.example.com:8443",
            true,
        );
        check("https://app.example.com", "https://APP.example.com:1", true);
        check(
            "https://app.example.com:443",
            "http://app.example.com:443",
            false,
        );
        check(
            "https://app.example.com:443",
            "https://app.example.org",
            false,
        );
        check("null", "null", true);
        check("null", "https://app.example.com", false);
        assert_eq!(AllowedOrigin::parse("not an origin"), None);
    }

    #[test]
    fn a_full_server_closes_the_oldest_idle_connection_never_a_busy_one() {
        let connections = Connections::new(2);
        let is_open = |id: u64| connections.open.lock().expect("lock").contains_key(&id);
        let (a, first) = connections.admit().expect("room");
        let (b, _) = connections.admit().expect("room");
        let busy = Answering::begin(&first);
        // a answers a request and b waits for its first: b makes room.
        let (c, _) = connections.admit().expect("room made");
        assert!(is_open(a) && !is_open(b) && is_open(c));
        // a idle again, c still waiting for its first request: c goes first.
        drop(busy);
        let (d, _) = connections.admit().expect("room made");
        assert!(is_open(a) && !is_open(c) && is_open(d));
        // Both answering: nothing to close, the newcomer is turned away.
        let _busy = (
            Answering::begin(&first),
            Answering::begin(&connections.open.lock().expect("lock")[&d]),
        );
        assert!(connections.admit().is_none());
    }
}
