//! Streamable HTTP: rmcp's `StreamableHttpService` at `/mcp`, served by hyper, behind a gate
//! that asks for the bearer token when one is set.
//!
//! rmcp itself validates the `Host` header (loopback names only when bound to loopback) and
//! the `Origin` header, as the MCP specification asks against DNS rebinding: a request from
//! a browser page of another origin is refused with 403. Requests without `Origin` (every
//! non-browser client) pass.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::mcp::server::MemoryServer;

/// The path the MCP endpoint is served at.
pub(crate) const PATH: &str = "/mcp";

/// Who may call the server over HTTP.
#[derive(Debug)]
pub(crate) struct Access {
    /// The bearer token every request must carry, if any.
    pub(crate) token: Option<String>,
    /// Browser origins allowed besides the loopback ones.
    pub(crate) origins: Vec<String>,
}

/// The origins of pages served from this machine, on any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

struct Gate {
    service: StreamableHttpService<MemoryServer, LocalSessionManager>,
    /// `Bearer <token>`, as the `Authorization` header must read.
    expected: Option<Vec<u8>>,
}

fn plain(status: StatusCode, text: &'static str) -> Response<BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
}

/// Compares in time independent of where the texts differ, so the token cannot be guessed
/// a byte at a time.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Gate {
    async fn handle(&self, request: Request<Incoming>) -> Response<BoxBody<Bytes, Infallible>> {
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
                return response;
            }
        }
        if request.uri().path() != PATH {
            return plain(
                StatusCode::NOT_FOUND,
                "not found: the MCP endpoint is /mcp\n",
            );
        }
        self.service.handle(request).await
    }
}

/// Serves `server` at `address` until interrupted (Ctrl-C or SIGTERM).
pub(crate) async fn serve(server: MemoryServer, address: SocketAddr, access: Access) -> Result<()> {
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(
            LOOPBACK_ORIGINS
                .iter()
                .map(|o| (*o).to_owned())
                .chain(access.origins.iter().cloned()),
        )
        .enforce_origin_validation();
    if !address.ip().is_loopback() {
        // Clients reach a non-loopback address by names the server cannot know; the bearer
        // token, required there, is what keeps other pages and hosts out.
        config = config.disable_allowed_hosts();
    }
    let stop = config.cancellation_token.clone();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let gate = Arc::new(Gate {
        service,
        expected: access
            .token
            .map(|token| format!("Bearer {token}").into_bytes()),
    });
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let bound = listener.local_addr().context("reading the bound address")?;
    eprintln!("agent-memory: MCP over streamable HTTP at http://{bound}{PATH}");
    let mut terminate = terminate_signal()?;
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(connection) => connection,
                // A connection that failed before it was accepted concerns only its client.
                Err(_) => continue,
            },
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
        };
        let gate = Arc::clone(&gate);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let gate = Arc::clone(&gate);
                async move { Ok::<_, Infallible>(gate.handle(request).await) }
            });
            // A client that goes away mid-request ends only its own connection.
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
    stop.cancel();
    Ok(())
}

#[cfg(unix)]
fn terminate_signal() -> Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("listening for SIGTERM")
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"Bearer abc", b"Bearer abc"));
        assert!(!same(b"Bearer abd", b"Bearer abc"));
        assert!(!same(b"Bearer ab", b"Bearer abc"));
        assert!(!same(b"", b"Bearer abc"));
    }
}
