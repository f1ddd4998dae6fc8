//! MCP over stdio, one JSON-RPC message per line, where every line the client sends gets an
//! answer or is a message that must get none. rmcp's own line transport drops a line it
//! cannot read, or one over its size limit, without a word, and a client waiting on that
//! request's id waits forever; here such a line is answered and the next one served:
//!
//! - a line that is not JSON (a syntax error, invalid UTF-8, a lone surrogate such as
//!   `"\ud800"`): JSON-RPC's parse error, -32700;
//! - a line longer than [`MAX_LINE_BYTES`] (4 MiB, what the HTTP door takes in a body): read
//!   no further than the limit, answered with -32600 "request too large" naming the limit,
//!   and the rest of it skipped;
//! - JSON that is not a message: -32600, invalid request;
//! - a request whose id is that of a request still in flight: -32600, naming the id (the
//!   service would otherwise lose one of the two answers).
//!
//! The answer carries the request's id when its beginning names one (`{"jsonrpc": "2.0",
//! "id": 7, ...`), else `null`, as JSON-RPC asks. A line that reads as a notification or a
//! response gets no answer, as JSON-RPC asks too (and a client that echoes what it cannot
//! read starts no storm). Lines are read by a task of their own, which sends each message to
//! the service and writes each answer through the writer the service's own messages go
//! through, so the two never interleave within a line.
//!
//! Backpressure: at most `--max-in-flight` requests ([`DEFAULT_MAX_IN_FLIGHT`] by default)
//! are read and not yet answered; while that many are, the reader reads no further, so what a
//! client sends beyond them waits in the pipe (and then in the client, whose writes block),
//! not in the server's memory. A request counts until its answer is written, so a client that
//! does not read its answers stops the reading too. A cancellation (`notifications/cancelled`)
//! is kept here rather than passed on: the operation runs to its end anyway (what it wrote is
//! committed), and its answer is dropped when it comes, as the protocol asks, which is also
//! when its place is freed.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};

use agent_memory_core::excerpt::bounded;
use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

/// The longest line read, in bytes without its newline: the most an HTTP request's body may
/// hold, so both doors take the same messages.
pub(crate) const MAX_LINE_BYTES: usize = agent_memory_contract::files::MAX_FILE_BYTES as usize;

/// JSON-RPC's code for text that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a request (and here for a request too large to read).
const INVALID_REQUEST: i64 = -32600;

/// Messages read but not yet taken by the service; the reader waits (and so does the client)
/// while the service is this far behind.
const QUEUED_MESSAGES: usize = 16;

/// The default of `--max-in-flight`: enough to keep every core busy with room to spare, few
/// enough that what they hold (their arguments, up to 4 MiB each, and their answers) stays
/// small.
pub(crate) const DEFAULT_MAX_IN_FLIGHT: u32 = 64;

/// The requests read and not yet answered, each holding one of the limit's permits.
struct InFlight {
    permits: Arc<Semaphore>,
    requests: std::sync::Mutex<HashMap<RequestId, Pending>>,
}

/// One request in flight.
struct Pending {
    /// Returned to the limit when the request is answered (or its answer dropped).
    _permit: OwnedSemaphorePermit,
    /// Whether the client cancelled it: its answer is dropped.
    cancelled: bool,
}

impl InFlight {
    fn new(limit: usize) -> Self {
        InFlight {
            permits: Arc::new(Semaphore::new(limit.max(1))),
            requests: std::sync::Mutex::new(HashMap::new()),
        }
    }

    fn requests(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Pending>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a request with `id` is in flight.
    fn holds(&self, id: &RequestId) -> bool {
        self.requests().contains_key(id)
    }

    /// Waits for a place, then counts request `id` in flight; `false` when the limit is closed.
    async fn begin(&self, id: RequestId) -> bool {
        let Ok(permit) = Arc::clone(&self.permits).acquire_owned().await else {
            return false;
        };
        self.requests().insert(
            id,
            Pending {
                _permit: permit,
                cancelled: false,
            },
        );
        true
    }

    /// Marks request `id` cancelled, if it is in flight.
    fn cancel(&self, id: &RequestId) {
        if let Some(pending) = self.requests().get_mut(id) {
            pending.cancelled = true;
        }
    }

    /// Takes request `id` out of flight as it is answered; its place is freed when the
    /// returned value is dropped.
    fn end(&self, id: &RequestId) -> Option<Pending> {
        self.requests().remove(id)
    }
}

/// Standard input and output as the line transport reads and writes them. Each that is a pipe
/// or a socket (as a client that starts the server makes them: Node's child processes get
/// socket pairs) is read and written by the runtime's own I/O driver, set non-blocking;
/// anything else (a file, a terminal) through tokio's standard streams, which hand each read
/// and each write to a blocking thread and back. Output stays with tokio's stream when
/// standard error is the same pipe or socket, so a line written there never meets a full,
/// non-blocking one.
#[cfg(unix)]
pub(crate) fn standard_streams() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin = std::io::stdin().as_fd().try_clone_to_owned();
    let input: Box<dyn AsyncRead + Send + Unpin> = match stdin.as_ref().ok().and_then(socket) {
        Some(socket) => Box::new(socket),
        None => match stdin.and_then(pipe::Receiver::from_owned_fd) {
            Ok(receiver) => Box::new(receiver),
            Err(_) => Box::new(tokio::io::stdin()),
        },
    };
    let stdout = std::io::stdout().as_fd().try_clone_to_owned();
    let shares_stderr = match (&stdout, std::io::stderr().as_fd().try_clone_to_owned()) {
        (Ok(out), Ok(err)) => same_file(out, err),
        _ => true,
    };
    let stdout = stdout.and_then(|fd| match shares_stderr {
        false => Ok(fd),
        true => Err(std::io::ErrorKind::Unsupported.into()),
    });
    let output: Box<dyn AsyncWrite + Send + Unpin> = match stdout.as_ref().ok().and_then(socket) {
        Some(socket) => Box::new(socket),
        None => match stdout.and_then(pipe::Sender::from_owned_fd) {
            Ok(sender) => Box::new(sender),
            Err(_) => Box::new(tokio::io::stdout()),
        },
    };
    (input, output)
}

/// `fd` as a non-blocking stream the runtime drives, when it is a socket.
#[cfg(unix)]
fn socket(fd: &std::os::fd::OwnedFd) -> Option<tokio::net::UnixStream> {
    use std::os::unix::fs::FileTypeExt;
    let file = std::fs::File::from(fd.try_clone().ok()?);
    if !file.metadata().ok()?.file_type().is_socket() {
        return None;
    }
    // Reads and writes of any stream socket are plain `read` and `write` calls.
    let stream = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(file));
    stream.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(stream).ok()
}

/// Standard input and output as tokio's standard streams.
#[cfg(not(unix))]
pub(crate) fn standard_streams() -> (
    Box<dyn AsyncRead + Send + Unpin>,
    Box<dyn AsyncWrite + Send + Unpin>,
) {
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

/// Whether two descriptors name the same file (the same pipe, for two ends of one).
#[cfg(unix)]
fn same_file(a: &std::os::fd::OwnedFd, b: std::os::fd::OwnedFd) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(a) = a.try_clone().map(std::fs::File::from) else {
        return true;
    };
    match (a.metadata(), std::fs::File::from(b).metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => true,
    }
}

/// The writer both the service and the line reader write whole lines to; `None` once closed.
type SharedWriter<W> = Arc<Mutex<Option<W>>>;

/// The stdio transport: messages from the line reader's task, answers to one writer.
pub(crate) struct LineTransport<W> {
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    writer: SharedWriter<W>,
    reader: JoinHandle<()>,
    in_flight: Arc<InFlight>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> LineTransport<W> {
    /// Serves the lines of `read`, answering on `write`, with at most `max_in_flight`
    /// requests read and not yet answered; the reader starts on the current runtime.
    pub(crate) fn new<R: AsyncRead + Send + Unpin + 'static>(
        read: R,
        write: W,
        max_in_flight: usize,
    ) -> Self {
        let writer = Arc::new(Mutex::new(Some(write)));
        let (sender, messages) = mpsc::channel(QUEUED_MESSAGES);
        let in_flight = Arc::new(InFlight::new(max_in_flight));
        let reader = tokio::spawn(read_lines(
            BufReader::new(read),
            Lines {
                messages: sender,
                writer: Arc::clone(&writer),
                in_flight: Arc::clone(&in_flight),
                max: MAX_LINE_BYTES,
            },
        ));
        LineTransport {
            messages,
            writer,
            reader,
            in_flight,
        }
    }
}

impl<W> Drop for LineTransport<W> {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Transport<RoleServer> for LineTransport<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let in_flight = Arc::clone(&self.in_flight);
        async move {
            let answered = match &item {
                JsonRpcMessage::Response(response) => in_flight.end(&response.id),
                JsonRpcMessage::Error(error) => error.id.as_ref().and_then(|id| in_flight.end(id)),
                _ => None,
            };
            if answered.as_ref().is_some_and(|pending| pending.cancelled) {
                return Ok(());
            }
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            // The request's place is freed once its answer is written, not before.
            let written = write_line(&writer, line).await;
            drop(answered);
            written
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        // Cancel-safe: the service polls this beside its other work and may drop it.
        self.messages.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        let closed = self.writer.lock().await.take();
        if let Some(mut write) = closed {
            write.shutdown().await?;
        }
        Ok(())
    }
}

/// Writes `line` and a newline, whole, and flushes.
async fn write_line<W: AsyncWrite + Unpin>(
    writer: &SharedWriter<W>,
    mut line: Vec<u8>,
) -> std::io::Result<()> {
    line.push(b'\n');
    let mut writer = writer.lock().await;
    let Some(write) = writer.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the transport is closed",
        ));
    };
    write.write_all(&line).await?;
    write.flush().await
}

/// What one read of a line found.
enum Line {
    /// A whole line (its newline, if it had one, included).
    Whole,
    /// A line longer than the limit: its first bytes, up to the limit, are kept; `ended`
    /// tells whether its newline was read too.
    TooLong { ended: bool },
    /// The end of the input.
    End,
}

/// Reads the next line into `line`, never holding more than `max` bytes of it.
async fn read_line<R: AsyncBufRead + Unpin>(
    read: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    line.clear();
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            // A last line without a newline is still a line.
            return Ok(if line.is_empty() {
                Line::End
            } else {
                Line::Whole
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let take = newline.map_or(available.len(), |at| at + 1);
        let content = take - usize::from(newline.is_some());
        if line.len() + content > max {
            let room = max - line.len();
            line.extend_from_slice(&available[..room]);
            read.consume(take);
            return Ok(Line::TooLong {
                ended: newline.is_some(),
            });
        }
        line.extend_from_slice(&available[..take]);
        read.consume(take);
        if newline.is_some() {
            return Ok(Line::Whole);
        }
    }
}

/// Reads and drops the rest of a line; `false` when the input ended first.
async fn skip_line<R: AsyncBufRead + Unpin>(read: &mut R) -> std::io::Result<bool> {
    loop {
        let available = read.fill_buf().await?;
        if available.is_empty() {
            return Ok(false);
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(at) => {
                read.consume(at + 1);
                return Ok(true);
            }
            None => {
                let all = available.len();
                read.consume(all);
            }
        }
    }
}

/// Where the line reader sends what it reads.
struct Lines<W> {
    /// The service's messages.
    messages: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    /// The answers to lines the service never sees.
    writer: SharedWriter<W>,
    /// The requests sent to the service and not yet answered.
    in_flight: Arc<InFlight>,
    /// The longest line read.
    max: usize,
}

/// What the reader does with a message it read.
enum Pass {
    /// Send it to the service.
    On(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing more: it was taken care of here.
    Kept,
    /// Answer it with this error.
    Refuse(Failure),
}

impl<W> Lines<W> {
    /// Counts a request in flight (waiting, with the reading, for a place), and keeps a
    /// cancellation; `None` when the limit is closed.
    async fn admit(&self, message: Box<RxJsonRpcMessage<RoleServer>>) -> Option<Pass> {
        match &*message {
            JsonRpcMessage::Request(request) => {
                if self.in_flight.holds(&request.id) {
                    return Some(Pass::Refuse(failure(
                        serde_json::to_value(&request.id).unwrap_or(Value::Null),
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: request id {} is already in flight; give each request an id of its own",
                            request.id
                        ),
                        None,
                    )));
                }
                if !self.in_flight.begin(request.id.clone()).await {
                    return None;
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                {
                    if let Some(id) = &cancelled.params.request_id {
                        self.in_flight.cancel(id);
                    }
                    return Some(Pass::Kept);
                }
            }
            _ => {}
        }
        Some(Pass::On(message))
    }
}

/// The line reader: each message to the service, each unreadable line answered, until the
/// input ends, fails, or the service stops taking messages.
async fn read_lines<R: AsyncBufRead + Unpin, W: AsyncWrite + Unpin>(mut read: R, lines: Lines<W>) {
    let Lines {
        ref messages,
        ref writer,
        max,
        ..
    } = lines;
    let mut line = Vec::new();
    loop {
        let answer = match read_line(&mut read, &mut line, max).await {
            Ok(Line::End) | Err(_) => return,
            Ok(Line::TooLong { ended }) => {
                let answer = too_large(probe_id(&line), max);
                // The prefix is no longer needed: keep the buffer small for the next line.
                line = Vec::new();
                if write_failure(writer, &answer).await.is_err() {
                    return;
                }
                if !ended && !matches!(skip_line(&mut read).await, Ok(true)) {
                    return;
                }
                continue;
            }
            Ok(Line::Whole) => match read_message(&line) {
                Read::Message(message) => match lines.admit(message).await {
                    None => return,
                    Some(Pass::Kept) => continue,
                    Some(Pass::Refuse(answer)) => answer,
                    Some(Pass::On(message)) => {
                        if messages.send(*message).await.is_err() {
                            return;
                        }
                        continue;
                    }
                },
                Read::Nothing => continue,
                Read::Answer(answer) => answer,
            },
        };
        if write_failure(writer, &answer).await.is_err() {
            return;
        }
    }
}

/// What a whole line holds.
enum Read {
    /// A message for the service.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to answer: a blank line, a notification or a response that does not read.
    Nothing,
    /// The error to answer with.
    Answer(Failure),
}

/// Reads one line (its newline included, if it had one).
fn read_message(line: &[u8]) -> Read {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // RFC 8259 lets a reader ignore a byte order mark.
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Read::Nothing;
    }
    let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => return Read::Message(Box::new(message)),
        Err(error) => error,
    };
    if !error.is_data() {
        return Read::Answer(failure(
            probe_id(line),
            PARSE_ERROR,
            format!("Parse error: {}", bounded(&error.to_string())),
            None,
        ));
    }
    // JSON, but not a message the server takes.
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Read::Answer(failure(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request".to_owned(),
            None,
        ));
    };
    if let Some(object) = value.as_object() {
        let has_id = object.contains_key("id");
        let is_response = !object.contains_key("method")
            && (object.contains_key("result") || object.contains_key("error"));
        if is_response || (!has_id && object.get("method").is_some_and(Value::is_string)) {
            // JSON-RPC answers neither a notification nor a response; rmcp drops the
            // notifications it does not know (other protocols' on a shared pipe) the same way.
            return Read::Nothing;
        }
    }
    Read::Answer(failure(
        id_of(&value),
        INVALID_REQUEST,
        format!("Invalid Request: {}", bounded(&error.to_string())),
        None,
    ))
}

/// The answer to a line over `max` bytes.
fn too_large(id: Value, max: usize) -> Failure {
    failure(
        id,
        INVALID_REQUEST,
        format!(
            "request too large: a message on stdio holds at most {max} bytes ({} MiB) on one line",
            max / (1024 * 1024)
        ),
        Some(json!({ "max_bytes": max })),
    )
}

/// A JSON-RPC error response, its members in the order rmcp writes them.
#[derive(serde::Serialize)]
struct Failure {
    jsonrpc: &'static str,
    id: Value,
    error: FailureError,
}

/// The `error` member of a [`Failure`].
#[derive(serde::Serialize)]
struct FailureError {
    code: i64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

/// A JSON-RPC error response.
fn failure(id: Value, code: i64, message: String, data: Option<Value>) -> Failure {
    Failure {
        jsonrpc: "2.0",
        id,
        error: FailureError {
            code,
            message,
            data,
        },
    }
}

/// Writes `answer` as one line.
async fn write_failure<W: AsyncWrite + Unpin>(
    writer: &SharedWriter<W>,
    answer: &Failure,
) -> std::io::Result<()> {
    let line = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    write_line(writer, line).await
}

/// The id of a request object, if it has one JSON-RPC allows (a string or a number), else
/// `null`.
fn id_of(value: &Value) -> Value {
    match value.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    }
}

/// The id of the request `text` begins, if its top-level `"id"` comes before the first thing
/// that cannot be read (bad JSON, a lone surrogate in a key, the end of a cut line); else
/// `null`. The members before it are skipped, not kept (a skipped string's escapes are not
/// decoded, so a lone surrogate in a value does not stop the search).
fn probe_id(text: &[u8]) -> Value {
    let mut found = None;
    let mut reader = serde_json::Deserializer::from_slice(text);
    // Whatever follows the id may well fail: the id is what was wanted.
    let _ = IdProbe(&mut found).deserialize(&mut reader);
    found.unwrap_or(Value::Null)
}

/// Reads the members of an object up to `"id"`, keeping its value if JSON-RPC allows it.
struct IdProbe<'a>(&'a mut Option<Value>);

impl<'de> DeserializeSeed<'de> for IdProbe<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, reader: D) -> Result<(), D::Error> {
        reader.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for IdProbe<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON-RPC request")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<(), A::Error> {
        while let Some(key) = members.next_key::<String>()? {
            if key == "id" {
                let id: Value = members.next_value()?;
                *self.0 = Some(id_of(&json!({ "id": id })));
                return Ok(());
            }
            members.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_found_before_what_cannot_be_read() {
        let cases: [(&[u8], Value); 9] = [
            (
                br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"\ud800"}}"#,
                json!(7),
            ),
            (
                br#"{"method":"x","params":{"a":[1,{"b":"c"}]},"id":"r-1","x":"#,
                json!("r-1"),
            ),
            (
                br#"{"jsonrpc":"2.0","params":{"a":"\ud800"},"id":7}"#,
                json!(7),
            ),
            (br#"{"jsonrpc":"2.0","\ud800":1,"id":7}"#, Value::Null),
            (br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#, Value::Null),
            (
                br#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#,
                Value::Null,
            ),
            (b"{\"id\":3,\"method\":\"\xff\"}", json!(3)),
            (b"not json", Value::Null),
            (br#"["id", 1]"#, Value::Null),
        ];
        for (text, id) in cases {
            assert_eq!(probe_id(text), id, "{}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn every_line_that_is_not_a_message_is_answered_or_is_a_notification() {
        let answer = |line: &str| match read_message(line.as_bytes()) {
            Read::Answer(answer) => Some((answer.id, json!(answer.error.code))),
            Read::Message(_) => Some((Value::Null, json!("message"))),
            Read::Nothing => None,
        };
        let cases = [
            ("garbage\n", Some((Value::Null, json!(PARSE_ERROR)))),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":"\udc00"}}"#,
                Some((json!(4), json!(PARSE_ERROR))),
            ),
            ("42", Some((Value::Null, json!(INVALID_REQUEST)))),
            ("[]", Some((Value::Null, json!(INVALID_REQUEST)))),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"x"}"#,
                Some((json!(5), json!(INVALID_REQUEST))),
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
                Some((Value::Null, json!("message"))),
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":"bad"}"#,
                None,
            ),
            (r#"{"jsonrpc":"2.0","id":null,"error":{"code":1}}"#, None),
            ("\r\n", None),
        ];
        for (line, expected) in cases {
            assert_eq!(answer(line), expected, "{line}");
        }
    }

    #[tokio::test]
    async fn a_long_line_is_read_only_up_to_the_limit() {
        let input = format!("{}\n{{}}\n{}", "a".repeat(100), "b".repeat(7));
        let mut read = BufReader::with_capacity(8, input.as_bytes());
        let mut line = Vec::new();
        let first = read_line(&mut read, &mut line, 10).await.expect("read");
        assert!(matches!(first, Line::TooLong { ended: false }));
        assert_eq!(line, b"aaaaaaaaaa");
        assert!(skip_line(&mut read).await.expect("skip"));
        assert!(matches!(
            read_line(&mut read, &mut line, 10).await,
            Ok(Line::Whole)
        ));
        assert_eq!(line, b"{}\n");
        assert!(matches!(
            read_line(&mut read, &mut line, 10).await,
            Ok(Line::Whole)
        ));
        assert_eq!(line, b"bbbbbbb");
        assert!(matches!(
            read_line(&mut read, &mut line, 10).await,
            Ok(Line::End)
        ));
        let exact = "c".repeat(10) + "\n";
        let mut read = BufReader::with_capacity(4, exact.as_bytes());
        assert!(matches!(
            read_line(&mut read, &mut line, 10).await,
            Ok(Line::Whole)
        ));
    }
}
