"""An agent written in Python drives `agent-memory mcp` through the official MCP Python SDK.

Over stdio (the server as a child process) and over streamable HTTP (with a bearer token),
it lists the tools, checks each has an input and an output schema, and runs a whole agent
loop over all four memories: procedural memory, browser memory, coding-session turns and
recorded tool calls, then lists and forgets. A tool error must come back as an MCP tool
error carrying the command line's message.

    python agent_loop.py path/to/agent-memory WORK_DIR

`cargo xtask ci` runs it in a virtual environment under target/ with `mcp` installed.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

# The tools the server must list, in order: the contract's MCP operations, from the operation
# table (`cargo xtask mcp-python` passes them), never a list typed here.
TOOLS = [name for name in os.environ.get("AGENT_MEMORY_MCP_TOOLS", "").split(",") if name]


class Agent:
    """One connected client and the checks it makes."""

    def __init__(self, client: Client, transport: str) -> None:
        self.client = client
        self.transport = transport
        self.calls = 0

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        self.calls += 1
        text = result.content[0].text if result.content else ""
        assert not result.is_error, f"{self.transport}: {tool} failed: {text}"
        assert isinstance(result.structured_content, dict), f"{tool}: {result}"
        return result.structured_content

    async def fails(self, tool: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        result = await self.client.call_tool(tool, arguments)
        self.calls += 1
        assert result.is_error, f"{self.transport}: {tool} should have failed: {result}"
        meta = result.meta or {}
        return result.content[0].text, meta.get("agent-memory/error", {})

    async def check_tools(self) -> None:
        listed = await self.client.list_tools()
        names = [tool.name for tool in listed.tools]
        assert names == TOOLS, f"{self.transport}: tools {names}"
        for tool in listed.tools:
            assert tool.input_schema.get("type") == "object", tool.name
            # Output schemas stay out of the list (a model never reads them).
            assert tool.output_schema is None, tool.name
            assert tool.description and tool.description.endswith("."), tool.name

    async def procedural_memory(self) -> None:
        episode = {
            "fingerprint": {"task": "deploy"},
            "trajectory": ["build", "test", "ship"],
            "outcome": {"success": True},
        }
        recorded = await self.call(
            "trajectory_record",
            {"partition": "py-team", "fields": ["task"], "episodes": [episode] * 3},
        )
        assert recorded["episodes"] == 3, recorded
        crystallized = await self.call("trajectory_crystallize", {"partition": "py-team"})
        assert len(crystallized["patterns"]) == 1, crystallized
        recalled = await self.call(
            "trajectory_recall", {"partition": "py-team", "fingerprint": {"task": "deploy"}}
        )
        assert recalled["patterns"][0]["canonical_sequence"] == ["build", "test", "ship"]
        patterns = await self.call("trajectory_patterns", {"partition": "py-team"})
        assert patterns["fields"] == ["task"], patterns

    async def browser_memory(self) -> None:
        run = {
            "goal": "find green tea",
            "start_url": "https://shop.test/",
            "turns": [
                {
                    "url": "https://shop.test/",
                    "action": {"action": "click", "selector": "#search"},
                    "verified": True,
                    "duration_ms": 900,
                },
                {
                    "url": "https://shop.test/results",
                    "action": '{"action":"complete"}',
                    "verified": True,
                    "duration_ms": 100,
                },
            ],
            "success": True,
            "outcome": "found it",
            "session_id": "py-tea",
            "final_url": "https://shop.test/results",
            "selectors": [{"element": "search box", "selector": "#search"}],
            "run_id": "py-run-1",
        }
        stored = await self.call("browser_record_run", run)
        assert stored["site"] == "shop.test", stored
        context = await self.call(
            "browser_context", {"goal": "find green tea", "url": "https://shop.test/"}
        )
        assert "#search" in context["context"], context
        resumed = await self.call("browser_resume", {"run_id": "py-run-1"})
        assert resumed["start_url"] == "https://shop.test/results", resumed
        forked = await self.call("browser_fork", {"run_id": "py-run-1", "goal": "find black tea"})
        assert forked["session_id"].startswith("fork_"), forked
        runs = await self.call("browser_runs", {"session_id": "py-tea"})
        assert [r["run_id"] for r in runs["runs"]] == ["py-run-1"], runs

    async def turn_memory(self) -> None:
        events = [
            {"type": "session_started", "session": "py-code", "started_at": 1767225600000},
            {"type": "user_message", "text": "fix the flaky test"},
            {
                "type": "assistant_turn",
                "text": "Fixed.",
                "memory": {"files_changed": ["src/retry.rs"]},
            },
        ]
        appended = await self.call("turns_append", {"session": "py-code", "events": events})
        assert appended["appended"] == 3, appended
        retried = await self.call(
            "turns_append", {"session": "py-code", "start": 0, "events": events}
        )
        assert (retried["appended"], retried["already_stored"]) == (0, 3), retried
        message, error = await self.fails(
            "turns_append",
            {"session": "py-code", "start": 5, "events": [events[1]]},
        )
        assert message.startswith("event at position 5 leaves a gap"), message
        assert error.get("kind") == "invalid_input", error
        view = await self.call("turns_view", {"session": "py-code", "provider": "openai_responses"})
        assert "src/retry.rs" in str(view["messages"]), view

    async def recorded_tool_calls(self) -> None:
        def snapshot(created: bool) -> list[dict[str, Any]]:
            """Memory after a call; `created`: the call wrote the key for the first time."""
            return [
                {
                    "key": "merchant_email",
                    "value": "shop+coffee.abc123@example.com",
                    "writtenBy": "merchantFactory_loadAccount",
                    "writtenAt": 1000,
                    "existedBefore": not created,
                }
            ]

        def log(tool: str, parameters: dict[str, Any], at: int, created: bool) -> dict[str, Any]:
            return {
                "toolName": tool,
                "parameters": parameters,
                "successful": True,
                "durationMs": 12,
                "timestamp": at,
                "memorySnapshot": snapshot(created),
            }

        logs = [
            log("merchantFactory_loadAccount", {"account": "coffee-shop"}, 1000, True),
            log("signIn", {"email": "shop+coffee.abc123@example.com"}, 2000, False),
        ]
        appended = await self.call("recording_append", {"session": "py-rec", "logs": logs})
        assert appended["logs"] == 2, appended
        templatized = await self.call(
            "recording_templatize",
            {
                "session": "py-rec",
                "objectives": [
                    {"step": "Load the account", "started_at": 0},
                    {"step": "Sign in", "started_at": 1500},
                ],
            },
        )
        trail = templatized["trail"]
        assert "${merchant_email}" in trail, trail
        lint = await self.call(
            "recording_lint",
            {
                "trail": "- tools:\n  - signIn:\n      email: shop+coffee.abc123@example.com\n",
                "memory": {"merchant_email": "shop+coffee.abc123@example.com"},
            },
        )
        assert lint["findings"][0]["key"] == "merchant_email", lint
        # Step by step: the provisioning tool loads a new account, and its write reaches the
        # sign-in that follows.
        calls, writes = [], []
        while True:
            step = await self.call(
                "recording_next_call",
                {"trail": trail, "device": "android-phone", "writes": writes},
            )
            if step["done"]:
                break
            dispatch = step["next"]
            calls.append(dispatch)
            if dispatch.get("tool") == "merchantFactory_loadAccount":
                writes.append({"set": {"merchant_email": "tea+new@example.com"}})
            else:
                writes.append({})
            assert len(calls) <= 2, step
        assert calls[1]["parameters"]["email"] == "tea+new@example.com", calls

    async def listing_and_forgetting(self) -> None:
        listed = await self.call("memory_list", {})
        assert [p["partition"] for p in listed["partitions"]] == ["py-team"], listed
        assert [s["session"] for s in listed["turn_sessions"]] == ["py-code"], listed
        assert [s["session"] for s in listed["tool_log_sessions"]] == ["py-rec"], listed
        assert [s["scope"] for s in listed["browser_scopes"]] == ["shared"], listed
        stats = await self.call("memory_stats", {})
        assert stats["schema_version"] > 0, stats
        forgotten = await self.call("memory_forget", {"partition": "py-team"})
        assert forgotten["episodes"] == 3, forgotten
        # A forgotten partition holds nothing: it recalls nothing, with a note saying so.
        empty = await self.call(
            "trajectory_recall", {"partition": "py-team", "fingerprint": {"task": "deploy"}}
        )
        assert empty["patterns"] == [], empty
        assert empty["note"] == "partition py-team holds nothing yet (nothing was recorded in it)", empty
        message, error = await self.fails("browser_resume", {"run_id": "run_9"})
        assert message == 'run "run_9" not found', message
        assert error.get("kind") == "not_found" and error.get("input") == "run_9", error

    async def run(self) -> None:
        await self.check_tools()
        await self.procedural_memory()
        await self.browser_memory()
        await self.turn_memory()
        await self.recorded_tool_calls()
        await self.listing_and_forgetting()


async def over_stdio(binary: str, work: Path) -> int:
    server = StdioServerParameters(
        command=binary,
        args=["--db", str(work / "stdio.db"), "mcp"],
        env={"PATH": os.environ.get("PATH", "")},
    )
    async with Client(server) as client:
        agent = Agent(client, "stdio")
        await agent.run()
        return agent.calls


async def over_http(binary: str, work: Path) -> int:
    token = secrets.token_hex(16)
    server = subprocess.Popen(
        [binary, "--db", str(work / "http.db"), "mcp", "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "AGENT_MEMORY_TOKEN": token},
        text=True,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        assert "http://" in line, f"the server did not start: {line!r}"
        url = line[line.index("http://") :].strip()
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30.0, read=300.0),
        ) as http:
            refused = await http.post(url, json={}, headers={"Authorization": "Bearer wrong"})
            assert refused.status_code == 401, refused.status_code
            async with Client(streamable_http_client(url, http_client=http)) as client:
                agent = Agent(client, "http")
                await agent.run()
                return agent.calls
    finally:
        server.terminate()
        server.wait(timeout=10)


async def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: agent_loop.py AGENT_MEMORY_BINARY WORK_DIR")
    if not TOOLS:
        sys.exit("AGENT_MEMORY_MCP_TOOLS names no tool: run this through `cargo xtask mcp-python`")
    binary, work = sys.argv[1], Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    for name in ("stdio.db", "http.db"):
        for suffix in ("", "-wal", "-shm"):
            (work / f"{name}{suffix}").unlink(missing_ok=True)
    stdio_calls = await over_stdio(binary, work)
    print(f"stdio: {len(TOOLS)} tools listed, {stdio_calls} calls checked")
    http_calls = await over_http(binary, work)
    print(f"http: {len(TOOLS)} tools listed, {http_calls} calls checked")
    print("2 passed, 0 failed")


if __name__ == "__main__":
    asyncio.run(main())
