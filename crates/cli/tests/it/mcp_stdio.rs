//! `agent-memory mcp` on stdio answers every line a client sends, in order: a line that is
//! not JSON, a lone surrogate, invalid UTF-8 and a 32 MB line each get an error naming the
//! request's id where it can be read, and the server goes on serving the lines after them.
//! A flood of requests from a client that reads no answer waits in the pipe, not in the
//! server's memory (`--max-in-flight`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::Sandbox;

const BIN: &str = env!("CARGO_BIN_EXE_agent-memory");

/// How long to wait for an answer before calling it lost (a bound on a hang, not a speed).
const PATIENCE: Duration = Duration::from_secs(120);

/// The server as a child process, its stdout read line by line on a thread of its own.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    answers: mpsc::Receiver<String>,
}

impl Server {
    fn start(sandbox: &Sandbox) -> Server {
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(sandbox.path().join("memory.db"))
            .arg("mcp")
            .env_remove("AGENT_MEMORY_DB")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the server");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if sender.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            answers,
        }
    }

    /// Writes `line` and a newline.
    fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).expect("write a line");
        stdin.write_all(b"\n").expect("write a newline");
        stdin.flush().expect("flush");
    }

    /// The next line the server writes, as JSON.
    fn answer(&self) -> Value {
        let line = self
            .answers
            .recv_timeout(PATIENCE)
            .expect("the server answers every line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `tools/call` request of the `notes` tool.
fn notes_call(id: u64, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"notes","arguments":{arguments}}}}}"#
    )
}

/// The id and error code of an error answer, and its message.
fn error_of(answer: &Value) -> (Value, i64, String) {
    (
        answer["id"].clone(),
        answer["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("an error: {answer}")),
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[test]
fn every_line_gets_an_answer_in_order() {
    let sandbox = Sandbox::new();
    let mut server = Server::start(&sandbox);
    server.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "lines", "version": "1"}
        }})
        .to_string()
        .as_bytes(),
    );
    let initialized = server.answer();
    assert_eq!(initialized["id"], 1);
    assert!(
        initialized["result"]["serverInfo"].is_object(),
        "{initialized}"
    );
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);

    server.send(b"this is not JSON");
    let surrogate = notes_call(
        2,
        r#"{"command":"create","path":"/memories/a.md","file_text":"half \ud800 a pair"}"#,
    );
    server.send(surrogate.as_bytes());
    let mut not_utf8 = notes_call(
        3,
        r#"{"command":"create","path":"/memories/b.md","file_text":"#,
    )
    .into_bytes();
    not_utf8.truncate(not_utf8.len() - 2);
    not_utf8.extend_from_slice(b"\"\xff\xfe\"}}}");
    server.send(&not_utf8);
    let huge = notes_call(
        4,
        &format!(
            r#"{{"command":"create","path":"/memories/c.md","file_text":"{}"}}"#,
            "x".repeat(32 * 1024 * 1024)
        ),
    );
    server.send(huge.as_bytes());
    drop(huge);
    server.send(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"not an object"}"#);
    server.send(b"[1, 2]");
    server.send(
        notes_call(
            6,
            r#"{"command":"create","path":"/memories/d.md","file_text":"kept"}"#,
        )
        .as_bytes(),
    );

    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (Value::Null, -32700), "{message}");
    assert!(message.starts_with("Parse error: "), "{message}");
    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (json!(2), -32700), "{message}");
    assert!(message.starts_with("Parse error: "), "{message}");
    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (json!(3), -32700), "{message}");
    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (json!(4), -32600), "{message}");
    assert_eq!(
        message,
        "request too large: a message on stdio holds at most 4194304 bytes (4 MiB) on one line"
    );
    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (json!(5), -32600), "{message}");
    let (id, code, message) = error_of(&server.answer());
    assert_eq!((id, code), (Value::Null, -32600), "{message}");
    let created = server.answer();
    assert_eq!(created["id"], 6, "{created}");
    assert_eq!(
        created["result"]["structuredContent"]["text"],
        "File created successfully at: /memories/d.md"
    );
    // The service runs tool calls side by side and answers each when it is done, so the
    // listing is asked for once the write it must show has been answered.
    server.send(notes_call(7, r#"{"command":"view","path":"/memories"}"#).as_bytes());
    let listed = server.answer();
    assert_eq!(listed["id"], 7, "{listed}");
    let listing = listed["result"]["structuredContent"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(listing.contains("/memories/d.md"), "{listing}");
    assert!(
        !listing.contains("/memories/a.md") && !listing.contains("/memories/c.md"),
        "no refused line wrote anything: {listing}"
    );

    // Closing stdin ends the server, cleanly.
    drop(server.stdin.take());
    let status = server.child.wait().expect("the server exits");
    assert!(status.success(), "{status}");
}

/// A client that only reads leaves no database behind: a read before the first write answers
/// as on an empty memory, and the first write creates the file.
#[test]
fn reads_before_the_first_write_answer_empty_and_create_no_file() {
    let sandbox = Sandbox::new();
    let db = sandbox.path().join("memory.db");
    let mut server = Server::start(&sandbox);
    server.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "reads", "version": "1"}
        }})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(server.answer()["id"], 1);
    server.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "trajectory_recall",
            "arguments": {"partition": "team", "fingerprint": {"task": "deploy"}}
        }})
        .to_string()
        .as_bytes(),
    );
    let recalled = server.answer();
    assert_eq!(recalled["id"], 2, "{recalled}");
    assert_eq!(
        recalled["result"]["structuredContent"]["patterns"],
        json!([]),
        "{recalled}"
    );
    server.send(notes_call(3, r#"{"command":"view","path":"/memories"}"#).as_bytes());
    let viewed = server.answer();
    assert_eq!(viewed["result"]["isError"], false, "{viewed}");
    assert!(!db.exists(), "a read created the database");
    server.send(
        notes_call(
            4,
            r#"{"command":"create","path":"/memories/a.md","file_text":"kept"}"#,
        )
        .as_bytes(),
    );
    let created = server.answer();
    assert_eq!(created["id"], 4, "{created}");
    assert!(db.exists(), "the first write creates the database");
}

/// The most memory the server ever held, in KiB (`VmHWM` of `/proc/<pid>/status`).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("its status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"))
}

/// A client sends a thousand requests for a 200 KB note and reads no answer until it has sent
/// them all. With `--max-in-flight 1` the server reads one request, writes its answer and
/// reads no further until the answer is taken, so the rest wait in the pipe (and the client's
/// writes block); every request is answered, in order, once the client reads, and the server's
/// memory never held more than a few answers. Unbounded, it would have read every request
/// and held every answer: a thousand times ~400 KB (the note as text and as structured
/// content), over 300 MiB.
#[test]
fn a_flood_waits_in_the_pipe_not_in_the_servers_memory() {
    const REQUESTS: u64 = 1000;
    let sandbox = Sandbox::new();
    let mut child = Command::new(BIN)
        .arg("--db")
        .arg(sandbox.path().join("memory.db"))
        .args(["mcp", "--max-in-flight", "1"])
        .env_remove("AGENT_MEMORY_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut answers = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next_answer = || -> Value {
        let line = answers
            .next()
            .expect("the server answers every request")
            .expect("a line");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).expect("write a line");
        stdin.write_all(b"\n").expect("write a newline");
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"}
        }})
        .to_string(),
    );
    assert_eq!(next_answer()["id"], 0);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let line = format!("- {}\n", "a decision kept for later ".repeat(4));
    let text = line.repeat(200 * 1024 / line.len());
    send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "notes",
            "arguments": {"command": "create", "path": "/memories/big.md", "file_text": text}
        }})
        .to_string(),
    );
    let created = next_answer();
    assert_eq!(created["result"]["isError"], false, "{created}");

    let (sent, all_sent) = mpsc::channel();
    let writer = std::thread::spawn(move || {
        for id in 2..2 + REQUESTS {
            send_line(
                &mut stdin,
                &notes_call(id, r#"{"command":"view","path":"/memories/big.md"}"#),
            );
        }
        let _ = sent.send(());
        stdin
    });
    // While nothing is read, the server stops reading, and so the client stops writing.
    assert!(
        all_sent.recv_timeout(Duration::from_secs(3)).is_err(),
        "the server read every request while none of its answers was taken"
    );
    for id in 2..2 + REQUESTS {
        let answer = next_answer();
        assert_eq!(answer["id"], id, "answers come in order");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let stdin = writer.join().expect("the writer");
    // Read while the server runs: an exited process reports no memory.
    let peak = peak_kib(child.id());
    drop(stdin);
    let status = child.wait().expect("the server exits");
    assert!(status.success(), "{status}");
    // Unbounded, the answers alone would pass 300 MiB; the server, its database's page cache
    // and a few answers in flight stay far below 150 MiB.
    assert!(
        peak < 150 * 1024,
        "the server held {} MiB at its peak",
        peak / 1024
    );
}

/// Writes `line` and a newline to `stdin`.
fn send_line(stdin: &mut ChildStdin, line: &str) {
    stdin.write_all(line.as_bytes()).expect("write a line");
    stdin.write_all(b"\n").expect("write a newline");
}
