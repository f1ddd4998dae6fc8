#!/usr/bin/env python3
"""A whole agent driving agent-memory through its command line, with Python's standard
library only: what an agent written in any language does.

It writes all four memories through the JSON contract (documents and JSON lines on stdin),
reads each back, lists what is stored, forgets part of it, and checks every step. Every
`--json` output is parsed; every error is the contract's JSON error object.

    python3 crates/cli/tests/agent_cli.py path/to/agent-memory

It prints one line per check and ends with `N passed, N failed`; the exit code is 0 only
when every check passed. `cargo xtask ci` runs it.
"""

import json
import os
import subprocess
import sys
import tempfile

CHECKS = {"passed": 0, "failed": 0}


class Memory:
    """The agent's handle on one database, through the agent-memory binary."""

    def __init__(self, binary, db):
        self.binary = binary
        self.db = db

    def run(self, *args, stdin=None, expect=0):
        env = dict(os.environ, AGENT_MEMORY_NOW="2026-01-01T00:00:00.000Z")
        done = subprocess.run(
            [self.binary, "--db", self.db, "--json", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        if done.returncode != expect:
            raise AssertionError(
                f"agent-memory {' '.join(args)} exited {done.returncode}, expected {expect}\n"
                f"stdout: {done.stdout}\nstderr: {done.stderr}"
            )
        if expect != 0:
            return json.loads(done.stderr)
        return json.loads(done.stdout) if done.stdout.strip() else None

    def lines(self, *args, rows):
        """Runs a write command with `rows` as JSON lines on stdin."""
        text = "".join(json.dumps(row) + "\n" for row in rows)
        return self.run(*args, "--file", "-", stdin=text)

    def document(self, *args, doc):
        """Runs a write command with `doc` as one JSON document on stdin."""
        return self.run(*args, "--file", "-", stdin=json.dumps(doc))


def check(name, condition, detail=""):
    if condition:
        CHECKS["passed"] += 1
        print(f"ok    {name}")
    else:
        CHECKS["failed"] += 1
        print(f"FAIL  {name} {detail}")


def procedural_memory(memory):
    """What worked last time: episodes in, a crystallized pattern out."""
    fields = ["problem_topology", "affected_layer"]
    episode = {
        "fingerprint": {"problem_topology": "flaky_test", "affected_layer": "ci"},
        "trajectory": ["read_logs", "pin_seed", "run_tests"],
        "outcome": {"success": True},
    }
    memory.lines(
        "trajectory", "record", "--partition", "team", "--fields", ",".join(fields),
        rows=[episode, episode, episode],
    )
    memory.run("trajectory", "crystallize", "--partition", "team")
    recalled = memory.run(
        "trajectory", "recall", "--partition", "team", "--field", "affected_layer=ci"
    )
    patterns = recalled["patterns"]
    check(
        "a recalled pattern is the recorded trajectory",
        patterns and patterns[0]["canonical_sequence"] == episode["trajectory"],
        recalled,
    )


def browser_memory(memory):
    """A browser run recorded, then the context the next run on the site gets."""
    started = memory.document(
        "browser", "run", "start",
        doc={"goal": "Add Smart Watch X to the cart", "domain": "shop.example.com",
             "start_url": "https://shop.example.com/", "run_id": "run-py-1"},
    )
    check("a run starts as running", started["status"] == "running", started)
    recorded = memory.document(
        "browser", "record",
        doc={
            "goal": "Add Smart Watch X to the cart",
            "start_url": "https://shop.example.com/",
            "run_id": "run-py-1",
            "success": True,
            "outcome": "the watch is in the cart",
            "turns": [
                {"url": "https://shop.example.com/", "verified": True, "duration_ms": 800,
                 "action": {"action": "type", "selector": "#search", "text": "Smart Watch X"}},
                {"url": "https://shop.example.com/search?q=watch", "verified": True,
                 "duration_ms": 600, "action": {"action": "click", "selector": "#add-to-cart"}},
            ],
            "selectors": [{"element": "search box", "selector": "#search"}],
        },
    )
    check("a recorded run stores its steps", recorded["steps"] == 2, recorded)
    context = memory.run(
        "browser", "context", "--goal", "add smart watch x to the cart",
        "--url", "https://shop.example.com/",
    )
    text = context["context"]
    check("the next run gets the reference trajectory", "REFERENCE TRAJECTORY" in text, text)
    check("and the session history", "SESSION HISTORY" in text, text)
    runs = memory.run("browser", "runs")
    listed = runs["runs"] if isinstance(runs, dict) else runs
    check(
        "the run is completed in the registry",
        any(r["run_id"] == "run-py-1" and r["status"] == "completed" for r in listed),
        runs,
    )


def turn_memory(memory):
    """A coding agent's turns appended as they happen, then what the model is sent."""
    events = [
        {"type": "session_started", "session": "py-session", "started_at": 1767225600000},
        {"type": "user_message", "text": "Make the tests pass."},
        {"type": "assistant_turn", "text": "Fixed the parser; one test still fails.",
         "memory": {"files_changed": ["src/parser.rs"],
                    "failed_commands": [{"command": "cargo test", "exit_code": 101}]}},
    ]
    appended = memory.lines("turns", "append", "--session", "py-session", rows=events)
    check("three events appended", appended["appended"] == 3, appended)
    again = memory.lines(
        "turns", "append", "--session", "py-session", "--start", "0", rows=events
    )
    check("appending the same events again changes nothing", again["appended"] == 0, again)
    conflict = memory.run(
        "turns", "append", "--session", "py-session", "--start", "1", "--file", "-",
        stdin=json.dumps({"type": "user_message", "text": "Something else."}) + "\n",
        expect=1,
    )
    check(
        "a conflicting event is an error naming its position",
        conflict["error"]["kind"] == "conflict" and "1" in conflict["error"]["message"],
        conflict,
    )
    shown = memory.run("turns", "show", "py-session", "--format", "anthropic")
    check("the request is Anthropic's", shown.get("format") == "anthropic", shown)
    sent = json.dumps(shown["request"])
    check("the model is told what failed", "cargo test" in sent and "101" in sent, sent[:300])


def recordings(memory):
    """Tool logs appended with their memory snapshots, then a trail with tokens."""
    logs = [
        {"toolName": "merchantFactory_loadAccount", "parameters": {"account": "tea-house"},
         "successful": True, "durationMs": 40, "timestamp": 1000,
         "memorySnapshot": [
             {"key": "merchant_email", "value": "shop+tea@example.com",
              "writtenBy": "merchantFactory_loadAccount", "writtenAt": 1000,
              "existedBefore": False},
             # The agent knows its secret and marks it: the value is scrubbed, never kept.
             {"key": "merchant_password", "value": "hunter2-canary", "sensitive": True}]},
        {"toolName": "signIn",
         "parameters": {"email": "shop+tea@example.com", "password": "hunter2-canary"},
         "successful": True, "durationMs": 900, "timestamp": 2000,
         "memorySnapshot": [
             {"key": "merchant_email", "value": "shop+tea@example.com",
              "writtenBy": "merchantFactory_loadAccount", "writtenAt": 1000},
             {"key": "merchant_password", "sensitive": True}]},
    ]
    appended = memory.lines("recording", "append", "--session", "py-run", rows=logs)
    check("two tool logs appended", appended["appended"] == 2, appended)
    trail = memory.run("recording", "templatize", "--session", "py-run")
    text = json.dumps(trail)
    check("the trail holds the memory token", "${merchant_email}" in text, text[:300])


def listing_and_forgetting(memory, db):
    listed = memory.run("list")
    check("the partition is listed", [p["partition"] for p in listed["partitions"]] == ["team"], listed)
    check("the turn session is listed",
          [s["session"] for s in listed["turn_sessions"]] == ["py-session"], listed)
    check("the tool-log session is listed",
          [s["session"] for s in listed["tool_log_sessions"]] == ["py-run"], listed)
    forgotten = memory.run("forget", "--session", "py-session")
    check("forgetting a session deletes its events", forgotten["events"] == 3, forgotten)
    missing = Memory(memory.binary, db + ".typo").run("stats", expect=1)
    check("a mistyped database is an error, not a new file",
          missing["error"]["kind"] == "not_found" and not os.path.exists(db + ".typo"), missing)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: agent_cli.py PATH_TO_AGENT_MEMORY")
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "agent.db")
        memory = Memory(binary, db)
        for part in (procedural_memory, browser_memory, turn_memory, recordings):
            try:
                part(memory)
            except AssertionError as error:
                check(part.__name__, False, str(error))
        try:
            listing_and_forgetting(memory, db)
        except AssertionError as error:
            check("listing_and_forgetting", False, str(error))
        with open(db, "rb") as f:
            check("no secret reached the database", b"hunter2-canary" not in f.read())
    print(f"{CHECKS['passed']} passed, {CHECKS['failed']} failed")
    sys.exit(1 if CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
