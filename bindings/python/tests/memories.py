"""One walk through every memory, written once and run through the native API and through
agent_memory.aio: `call(name, input)` is the door under test."""

from typing import Any, Awaitable, Callable, Dict, Union

Call = Callable[[str, Dict[str, Any]], Union[Any, Awaitable[Any]]]

EPISODE = {"fingerprint": {"task": "deploy"}, "trajectory": ["build", "test", "ship"], "outcome": {"success": True}}

RUN = {
    "goal": "find green tea",
    "start_url": "https://shop.test/",
    "turns": [
        {"url": "https://shop.test/", "action": {"action": "click", "selector": "#search"}, "verified": True, "duration_ms": 900},
        {"url": "https://shop.test/results", "action": '{"action":"complete"}', "verified": True, "duration_ms": 100},
    ],
    "success": True,
    "outcome": "found it",
    "session_id": "py-tea",
    "final_url": "https://shop.test/results",
    "selectors": [{"element": "search box", "selector": "#search"}],
    "run_id": "py-run-1",
}

EVENTS = [
    {"type": "session_started", "session": "py-code", "started_at": 1767225600000},
    {"type": "user_message", "text": "fix the flaky test"},
    {"type": "assistant_turn", "text": "Fixed.", "memory": {"files_changed": ["src/retry.rs"]}},
]

#: A secret the agent marks sensitive: it must never reach the database or an output.
CANARY = "hunter2-canary-7f3a9"


def snapshot(created: bool, with_secret: bool):
    return [
        {"key": "merchant_email", "value": "shop+coffee.abc123@example.com", "writtenBy": "merchantFactory_loadAccount",
         "writtenAt": 1000, "existedBefore": not created},
        {"key": "merchant_password", "value": CANARY, "sensitive": True} if with_secret
        else {"key": "merchant_password", "sensitive": True},
    ]


LOGS = [
    {"toolName": "merchantFactory_loadAccount", "parameters": {"account": "coffee-shop"}, "successful": True,
     "durationMs": 12, "timestamp": 1000, "memorySnapshot": snapshot(True, True)},
    {"toolName": "signIn", "parameters": {"email": "shop+coffee.abc123@example.com", "password": CANARY},
     "successful": True, "durationMs": 12, "timestamp": 2000, "memorySnapshot": snapshot(False, False)},
]


async def walk(call: Call, outputs: list) -> None:
    """Every memory, each output appended to `outputs`; `call` may be sync or async."""

    async def run(name: str, input: Any = None) -> Any:
        result = call(name, input)
        if hasattr(result, "__await__"):
            result = await result
        outputs.append(result)
        return result

    recorded = await run("trajectory_record", {"partition": "py-team", "fields": ["task"], "episodes": [EPISODE] * 3})
    assert recorded["episodes"] == 3, recorded
    crystallized = await run("trajectory_crystallize", {"partition": "py-team"})
    assert len(crystallized["patterns"]) == 1, crystallized
    recalled = await run("trajectory_recall", {"partition": "py-team", "fingerprint": {"task": "deploy"}})
    assert recalled["patterns"][0]["canonical_sequence"] == ["build", "test", "ship"], recalled
    assert (await run("trajectory_patterns", {"partition": "py-team"}))["fields"] == ["task"]

    stored = await run("browser_record_run", RUN)
    assert stored["site"] == "shop.test", stored
    context = await run("browser_context", {"goal": "find green tea", "url": "https://shop.test/"})
    assert "#search" in context["context"], context
    assert (await run("browser_resume", {"run_id": "py-run-1"}))["start_url"] == "https://shop.test/results"
    assert (await run("browser_fork", {"run_id": "py-run-1", "goal": "find black tea"}))["session_id"].startswith("fork_")
    runs = await run("browser_runs", {"session_id": "py-tea"})
    assert [r["run_id"] for r in runs["runs"]] == ["py-run-1"], runs
    started = await run("browser_run_start", {"goal": "buy oolong", "domain": "shop.test", "run_id": "py-run-2"})
    assert started["status"] == "running", started
    await run("browser_run_update", {"run_id": "py-run-2", "turn_count": 2, "current_url": "https://shop.test/oolong"})
    completed = await run("browser_run_complete", {"run_id": "py-run-2", "success": True, "turn_count": 3})
    assert completed["status"] != "running", completed

    appended = await run("turns_append", {"session": "py-code", "events": EVENTS})
    assert appended["appended"] == 3, appended
    view = await run("turns_view", {"session": "py-code", "provider": "openai_responses"})
    assert "src/retry.rs" in str(view["messages"]), view

    assert (await run("recording_append", {"session": "py-rec", "logs": LOGS}))["logs"] == 2
    trail = (await run("recording_templatize", {"session": "py-rec"}))["trail"]
    assert "${merchant_email}" in trail, trail
    lint = await run("recording_lint", {
        "trail": "- tools:\n  - signIn:\n      email: shop+coffee.abc123@example.com\n",
        "memory": {"merchant_email": "shop+coffee.abc123@example.com"},
    })
    assert lint["findings"][0]["key"] == "merchant_email", lint
    step = await run("recording_next_call", {"trail": trail, "device": "android-phone", "writes": []})
    assert step["done"] is False and step["next"]["tool"] == "merchantFactory_loadAccount", step

    listed = await run("memory_list")
    assert [p["partition"] for p in listed["partitions"]] == ["py-team"], listed
    assert [s["session"] for s in listed["turn_sessions"]] == ["py-code"], listed
    assert (await run("memory_stats"))["schema_version"] > 0
    assert (await run("memory_forget", {"partition": "py-team"}))["episodes"] == 3
