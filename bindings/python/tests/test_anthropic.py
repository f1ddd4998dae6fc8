"""agent_memory.anthropic: the Anthropic SDK's memory-tool handler on the store, called with
the tool-use inputs a model sends (no API key, no network), and the texts it answers."""

import asyncio
import json
import subprocess
import sys

import pytest

import agent_memory
import agent_memory.aio
from agent_memory.anthropic import AsyncNotesMemoryTool, NotesMemoryTool
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError

# The handler answers as the Python SDK's own local filesystem tool words it.
LISTING = "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items:\n"

# (the input a model sends, the text the tool answers) in order, each on the notes the
# earlier ones left.
SESSION = [
    ({"command": "view", "path": "/memories"}, LISTING + "0B\t/memories"),
    ({"command": "create", "path": "/memories/preferences.md", "file_text": "Package manager: npm\nEditor: vim\n"},
     "File created successfully at: /memories/preferences.md"),
    ({"command": "str_replace", "path": "/memories/preferences.md", "old_str": "npm", "new_str": "pnpm"},
     "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
     "     1\tPackage manager: pnpm\n     2\tEditor: vim\n     3\t"),
    ({"command": "insert", "path": "/memories/preferences.md", "insert_line": 0, "insert_text": "# Alice\n"},
     "The file /memories/preferences.md has been edited."),
    ({"command": "view", "path": "/memories/preferences.md"},
     "Here's the content of /memories/preferences.md with line numbers:\n"
     "     1\t# Alice\n     2\tPackage manager: pnpm\n     3\tEditor: vim\n     4\t"),
    ({"command": "view", "path": "/memories/preferences.md", "view_range": [2, 2]},
     "Here's the content of /memories/preferences.md with line numbers:\n     2\tPackage manager: pnpm"),
    ({"command": "rename", "old_path": "/memories/preferences.md", "new_path": "/memories/alice/preferences.md"},
     "Successfully renamed /memories/preferences.md to /memories/alice/preferences.md"),
    ({"command": "view", "path": "/memories"},
     LISTING + "42B\t/memories\n42B\t/memories/alice/\n42B\t/memories/alice/preferences.md"),
    ({"command": "delete", "path": "/memories/alice"}, "Successfully deleted /memories/alice"),
    ({"command": "view", "path": "/memories"}, LISTING + "0B\t/memories"),
]

# (a command the store refuses, the error text the model gets)
ERRORS = [
    ({"command": "view", "path": "/memories/missing.md"},
     "The path /memories/missing.md does not exist. Please provide a valid path."),
    ({"command": "create", "path": "/memories/a.md", "file_text": "again"}, "File /memories/a.md already exists"),
    ({"command": "str_replace", "path": "/memories/a.md", "old_str": "purple", "new_str": "red"},
     "No replacement was performed, old_str `purple` did not appear verbatim in /memories/a.md."),
    ({"command": "str_replace", "path": "/memories/a.md", "old_str": "o", "new_str": "0"},
     "No replacement was performed. Multiple occurrences of old_str `o` in lines: 1, 2. Please ensure it is unique"),
    ({"command": "insert", "path": "/memories/a.md", "insert_line": 9, "insert_text": "x"},
     "Invalid `insert_line` parameter: 9. It should be within the range [0, 2]."),
    ({"command": "insert", "path": "/memories/missing.md", "insert_line": 0, "insert_text": "x"},
     "The path /memories/missing.md does not exist. Please provide a valid path."),
    ({"command": "create", "path": "/invalid/path.md", "file_text": "x"},
     "Path must start with /memories, got: /invalid/path.md"),
    ({"command": "view", "path": "/memories/a.md", "view_range": [0, 2]},
     "Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 2]"),
    ({"command": "delete", "path": "/memories/missing.md"}, "The path /memories/missing.md does not exist"),
    ({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
     "The destination /memories/b.md already exists"),
]


@pytest.fixture
def tool(store):
    return NotesMemoryTool(store, scope="alice")


def test_it_is_the_sdks_memory_tool(tool):
    assert isinstance(tool, BetaAbstractMemoryTool)
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    cached = NotesMemoryTool(tool.store, cache_control={"type": "ephemeral"})
    assert cached.to_dict()["cache_control"] == {"type": "ephemeral"}


def test_a_session_of_every_command_answers_the_tools_texts(tool):
    for given, answer in SESSION:
        assert tool.call(given) == answer, given


@pytest.mark.parametrize("given, message", ERRORS, ids=[f"{c['command']}-{i}" for i, (c, _) in enumerate(ERRORS)])
def test_a_refused_command_is_a_tool_error_with_the_tools_text(tool, given, message):
    tool.call({"command": "create", "path": "/memories/a.md", "file_text": "one\ntwo"})
    tool.call({"command": "create", "path": "/memories/b.md", "file_text": "b"})
    with pytest.raises(ToolError) as raised:
        tool.call(given)
    assert raised.value.content == message


@pytest.mark.parametrize("path", ["/etc/passwd", "/memories/../secrets", "/memories/%2e%2e/x", "memories/x", "/memories/a\x00b"])
def test_a_path_outside_memories_is_refused(tool, path):
    with pytest.raises(ToolError):
        tool.call({"command": "create", "path": path, "file_text": "x"})
    assert tool.call({"command": "view", "path": "/memories"}) == LISTING + "0B\t/memories"


def test_scopes_are_directories_of_their_own(store):
    alice, bob = NotesMemoryTool(store, scope="alice"), NotesMemoryTool(store, scope="bob")
    alice.call({"command": "create", "path": "/memories/x.md", "file_text": "alice's"})
    with pytest.raises(ToolError, match="does not exist"):
        bob.call({"command": "view", "path": "/memories/x.md"})
    # The notes are the store's: another handler, or the store itself, sees them.
    assert "alice's" in NotesMemoryTool(store, scope="alice").call({"command": "view", "path": "/memories/x.md"})
    assert store.notes({"command": "view", "path": "/memories/x.md", "scope": "alice"})["text"].endswith("alice's")


def test_secrets_never_reach_the_notes(store):
    tool = NotesMemoryTool(store, scope="s", secrets={"api_key": "sk-live-0123456789"})
    tool.call({"command": "create", "path": "/memories/keys.md", "file_text": "the key is sk-live-0123456789"})
    text = tool.call({"command": "view", "path": "/memories/keys.md"})
    assert "sk-live-0123456789" not in text and "${api_key}" in text


def test_the_note_limit_is_the_handlers_to_set(store):
    big = "x" * (300 * 1024)
    with pytest.raises(ToolError) as raised:
        NotesMemoryTool(store, scope="big").call({"command": "create", "path": "/memories/big.md", "file_text": big})
    assert raised.value.content == (
        "File /memories/big.md would be 307200 bytes, over the limit of 262144 bytes per file (max_note_bytes)")
    roomy = NotesMemoryTool(store, scope="big", max_note_bytes=1024 * 1024)
    assert roomy.call({"command": "create", "path": "/memories/big.md", "file_text": big}).startswith("File created")
    with pytest.raises(TypeError, match="max_note_bytes must be an int"):
        NotesMemoryTool(store, max_note_bytes="1M")  # type: ignore[arg-type]


def test_a_store_the_handler_opens_from_a_path(tmp_path):
    tool = NotesMemoryTool(str(tmp_path / "notes.db"))
    tool.call({"command": "create", "path": "/memories/n.md", "file_text": "kept"})
    reopened = NotesMemoryTool(agent_memory.Store(str(tmp_path / "notes.db")))
    assert reopened.call({"command": "view", "path": "/memories/n.md"}).endswith("1\tkept")
    with pytest.raises(TypeError, match="scope must be a str"):
        NotesMemoryTool(tool.store, scope=7)


def test_the_async_handler_answers_alike(store):
    async def session():
        tool = AsyncNotesMemoryTool(agent_memory.aio.Store(store), scope="alice")
        assert isinstance(tool, BetaAsyncAbstractMemoryTool)
        answers = [await tool.call(given) for given, _ in SESSION]
        with pytest.raises(ToolError, match="does not exist"):
            await tool.call({"command": "delete", "path": "/memories/gone"})
        return answers

    assert asyncio.run(session()) == [answer for _, answer in SESSION]


def test_the_package_imports_without_the_sdk(tmp_path):
    # A directory named `anthropic` that fails to import stands in for an absent SDK.
    shadow = tmp_path / "anthropic"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('no SDK here')\n")
    script = (
        "import agent_memory, agent_memory.aio, agent_memory.popoto\n"
        "try:\n"
        "    import agent_memory.anthropic\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    assert "pip install 'durable-agent-memory[anthropic]'" in run.stdout


def reply(content, stop_reason):
    """A Messages API response, as the SDK reads it."""
    return {"id": "msg_test", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1}}


def test_the_sdks_tool_runner_runs_the_models_memory_calls(store):
    """The SDK's own tool runner, against a stand-in for the API (no key, no network): the
    model's memory tool uses are run on the store and their texts sent back as results."""
    import anthropic
    import httpx2

    uses = [
        {"command": "create", "path": "/memories/preferences.md", "file_text": "Package manager: pnpm\n"},
        {"command": "view", "path": "/memories/missing.md"},
    ]
    replies = [
        reply([{"type": "tool_use", "id": f"toolu_{i}", "name": "memory", "input": use} for i, use in enumerate(uses)],
              "tool_use"),
        reply([{"type": "text", "text": "Noted."}], "end_turn"),
    ]
    sent = []

    def api(request):
        sent.append(json.loads(request.content))
        return httpx2.Response(200, json=replies[len(sent) - 1])

    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=httpx2.MockTransport(api)))
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-5-5", max_tokens=256, tools=[NotesMemoryTool(store, scope="alice")], thread=False,
        messages=[{"role": "user", "content": "Remember that I prefer pnpm."}],
    )
    final = runner.until_done()
    assert final.content[0].text == "Noted."
    assert len(sent) == 2 and sent[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    results = {r["tool_use_id"]: r for r in sent[1]["messages"][-1]["content"]}
    assert texts(results["toolu_0"]["content"]) == "File created successfully at: /memories/preferences.md"
    assert not results["toolu_0"].get("is_error")
    assert texts(results["toolu_1"]["content"]) == "The path /memories/missing.md does not exist. Please provide a valid path."
    assert results["toolu_1"]["is_error"] is True
    assert store.notes({"command": "view", "path": "/memories/preferences.md", "scope": "alice"})["text"].endswith(
        "1\tPackage manager: pnpm\n     2\t")


def texts(content):
    """A tool result's content as one text (a string, or text blocks)."""
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def test_each_version_names_the_model_its_session_and_the_package(store):
    tool = NotesMemoryTool(store, scope="s", session="run-12")
    tool.call({"command": "create", "path": "/memories/plan.md", "file_text": "step one"})
    # A field the tool's input does not have never reaches the store, so a model cannot
    # name another writer.
    tool.call({"command": "str_replace", "path": "/memories/plan.md", "old_str": "one",
               "new_str": "two", "source": "user"})
    versions = store.note_history({"path": "/memories/plan.md", "scope": "s"})["versions"]
    assert [v["provenance"]["source"] for v in versions] == ["model", "model"]
    assert {v["provenance"]["session"] for v in versions} == {"run-12"}
    assert {v["provenance"]["client"] for v in versions} == {"python"}
    assert store.note_forget_by({"session": "run-12"})["notes"] == 1
    with pytest.raises(TypeError, match="session must be a str"):
        NotesMemoryTool(store, session=12)
