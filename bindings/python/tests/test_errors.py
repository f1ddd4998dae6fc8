"""Errors: each kind is its own exception class under agent_memory.Error, with kind, message
and input; bad input raises a clear exception naming it, never crashes and never writes
half a batch."""

import math
import sqlite3

import pytest

import agent_memory
from agent_memory.errors import from_contract

EPISODE = {"fingerprint": {"task": "deploy"}, "trajectory": ["build"], "outcome": {"success": True}}
KINDS = {
    "usage": agent_memory.UsageError,
    "invalid_input": agent_memory.InvalidInputError,
    "not_found": agent_memory.NotFoundError,
    "conflict": agent_memory.ConflictError,
    "corrupt": agent_memory.CorruptError,
    "io": agent_memory.IoError,
    "database": agent_memory.DatabaseError,
    "error": agent_memory.Error,
}


def record(store, *episodes, partition="p"):
    return store.trajectory_record({"partition": partition, "fields": ["task"], "episodes": list(episodes)})


def test_each_kind_has_its_class_under_the_common_base():
    for kind, cls in KINDS.items():
        error = from_contract(kind, f"a {kind} error", "the-input")
        assert type(error) is cls and isinstance(error, agent_memory.Error)
        assert (error.kind, error.message, error.input, str(error)) == (kind, f"a {kind} error", "the-input", f"a {kind} error")
    assert isinstance(from_contract("invalid_input", "m"), ValueError)
    assert isinstance(from_contract("not_found", "m"), LookupError)
    assert type(from_contract("a kind from the future", "m")) is agent_memory.Error


def test_invalid_input_names_the_field(store):
    with pytest.raises(agent_memory.InvalidInputError) as raised:
        record(store, {**EPISODE, "fingerprint": {}})
    assert raised.value.input == "episodes[0].fingerprint"
    assert "task" in raised.value.message


def test_not_found_names_the_run(store):
    with pytest.raises(agent_memory.NotFoundError) as raised:
        store.browser_resume({"run_id": "run_nowhere"})
    assert raised.value.input == "run_nowhere"
    assert "run_nowhere" in raised.value.message


def test_an_empty_partition_recalls_nothing_with_a_note(store):
    recalled = store.trajectory_recall({"partition": "nowhere", "fingerprint": {"task": "x"}})
    assert recalled["patterns"] == []
    assert recalled["note"] == "partition nowhere holds nothing yet (nothing was recorded in it)"


def test_conflict_names_the_position(store):
    events = [{"type": "session_started", "session": "s", "started_at": 0}, {"type": "user_message", "text": "a"}]
    store.turns_append({"session": "s", "events": events})
    with pytest.raises(agent_memory.Error) as raised:
        store.turns_append({"session": "s", "start": 1, "events": [{"type": "user_message", "text": "b"}]})
    assert raised.value.kind == "conflict", raised.value
    assert isinstance(raised.value, agent_memory.ConflictError)


def test_a_file_that_is_not_a_database_is_a_database_error_naming_it(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"not a database at all " * 100)
    with pytest.raises(agent_memory.DatabaseError) as raised:
        agent_memory.Store(str(path))
    assert raised.value.input == str(path)
    assert str(path) in raised.value.message


def test_a_folder_that_cannot_be_made_is_an_io_error(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    path = tmp_path / "notes.txt" / "deeper" / "memory.db"
    with pytest.raises(agent_memory.IoError) as raised:
        agent_memory.Store(str(path))
    assert raised.value.kind == "io" and str(path) in raised.value.message


def test_corrupt_rows_are_a_corrupt_error(tmp_path):
    path = tmp_path / "memory.db"
    store = agent_memory.Store(str(path))
    record(store, EPISODE, EPISODE, EPISODE)
    store.trajectory_crystallize({"partition": "p"})
    del store
    # A pattern's canonical sequence is stored as length-prefixed items; this is none.
    with sqlite3.connect(path) as db:
        assert db.execute("UPDATE trajectory_group SET canonical = 'garbage'").rowcount == 1
    db.close()
    store = agent_memory.Store(str(path))
    with pytest.raises(agent_memory.Error) as raised:
        store.trajectory_patterns({"partition": "p"})
    assert raised.value.kind == "corrupt", raised.value
    assert isinstance(raised.value, agent_memory.CorruptError)
    assert store.check()["findings"], "check finds the damaged row"


def test_wrong_python_types_name_the_argument():
    with pytest.raises(TypeError, match="path_or_url must be a str or os.PathLike, not int"):
        agent_memory.Store(123)
    store = agent_memory.Store(":memory:")
    with pytest.raises(TypeError, match="trajectory_record: input must be a dict, not str"):
        store.trajectory_record("p")
    with pytest.raises(TypeError, match=r"input\.episodes\[0\]\.trajectory: a set is not JSON"):
        record(store, {**EPISODE, "trajectory": {"build"}})
    with pytest.raises(TypeError, match=r"input\.episodes\[0\]\.fingerprint: keys must be str, not int"):
        record(store, {**EPISODE, "fingerprint": {1: "x"}})
    with pytest.raises(TypeError, match="clock must be a function"):
        agent_memory.Store(":memory:", clock=5)


def test_none_and_wrong_json_types_are_invalid_input_naming_the_operation():
    store = agent_memory.Store(":memory:")
    with pytest.raises(agent_memory.InvalidInputError, match="invalid arguments for trajectory_record"):
        store.trajectory_record(None)
    with pytest.raises(agent_memory.InvalidInputError, match="invalid arguments for trajectory_recall"):
        store.trajectory_recall({"partition": 3, "fingerprint": {}})
    with pytest.raises(agent_memory.InvalidInputError) as raised:
        store.call("no_such_operation", {})
    assert raised.value.input == "no_such_operation"


def test_values_json_cannot_hold_are_invalid_input_naming_them():
    store = agent_memory.Store(":memory:")
    cases = [
        ({**EPISODE, "trajectory": ["ok", "\ud800"]}, "input.episodes[1].trajectory[1]", "lone surrogate"),
        ({**EPISODE, "fingerprint": {"task": "\udfff"}}, "input.episodes[1].fingerprint.task", "lone surrogate"),
        ({**EPISODE, "outcome": 10 ** 30}, "input.episodes[1].outcome", "64 bits"),
        ({**EPISODE, "outcome": math.nan}, "input.episodes[1].outcome", "not a JSON number"),
    ]
    for episode, where, why in cases:
        with pytest.raises(agent_memory.InvalidInputError) as raised:
            record(store, EPISODE, episode)
        assert raised.value.input == where and why in raised.value.message, raised.value
    nested = []
    for _ in range(200):
        nested = [nested]
    with pytest.raises(agent_memory.InvalidInputError, match="nests deeper"):
        record(store, {**EPISODE, "outcome": nested})
    assert store.list()["partitions"] == []


def test_huge_strings_are_refused_or_kept_whole():
    store = agent_memory.Store(":memory:")
    with pytest.raises(agent_memory.InvalidInputError) as raised:
        record(store, EPISODE, partition="p" * 5_000_000)
    assert len(raised.value.message) < 1_000
    step = "s" * 5_000_000
    record(store, EPISODE, {**EPISODE, "trajectory": [step]}, {**EPISODE, "trajectory": [step]})
    [pattern] = store.trajectory_crystallize({"partition": "p"})["patterns"]
    assert pattern["canonical_sequence"] == [step]


def test_a_failed_batch_writes_nothing(store):
    with pytest.raises(agent_memory.InvalidInputError):
        record(store, EPISODE, EPISODE, {**EPISODE, "fingerprint": {"other": "x"}})
    with pytest.raises(agent_memory.InvalidInputError):
        record(store, EPISODE, EPISODE, {**EPISODE, "recorded_at": "yesterday"})
    assert store.list()["partitions"] == []
    record(store, EPISODE)
    assert [p["partition"] for p in store.list()["partitions"]] == ["p"]
