"""The `agent-memory` console script the wheel installs: the whole command line, no Rust
toolchain needed."""

import json
import os
import subprocess
import sys

import agent_memory

SCRIPT = os.path.join(os.path.dirname(sys.executable), "agent-memory")


def run(*args, input=None):
    return subprocess.run([SCRIPT, *args], input=input, capture_output=True, text=True, timeout=120)


def test_the_console_script_reads_what_python_wrote(tmp_path):
    db = str(tmp_path / "memory.db")
    store = agent_memory.Store(db)
    store.trajectory_record({"partition": "team", "fields": ["task"], "episodes": [
        {"fingerprint": {"task": "deploy"}, "trajectory": ["build"], "outcome": {"success": True}}]})
    listed = run("--db", db, "--json", "list")
    assert listed.returncode == 0, listed.stderr
    assert [p["partition"] for p in json.loads(listed.stdout)["partitions"]] == ["team"]


def test_usage_errors_exit_2_and_failures_exit_1(tmp_path):
    usage = run("--json", "no-such-command")
    assert usage.returncode == 2
    assert json.loads(usage.stderr)["error"]["kind"] == "usage"
    missing = run("--db", str(tmp_path / "missing.db"), "--json", "stats")
    assert missing.returncode == 1
    assert json.loads(missing.stderr)["error"]["kind"] == "not_found"
    assert run("--version").stdout.startswith("agent-memory ")


def test_the_mcp_server_answers_over_stdio(tmp_path):
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "1"}}}
    served = run("--db", str(tmp_path / "memory.db"), "mcp", input=json.dumps(request) + "\n")
    assert served.returncode == 0, served.stderr
    answer = json.loads(served.stdout.splitlines()[0])
    assert answer["id"] == 1 and "serverInfo" in answer["result"], answer
