"""Errors: each kind is its own exception class under agent_memory.Error, with kind, message
and input; bad input raises a clear exception naming it, never crashes and never writes
half a batch."""

import math
import sqlite3

import pytest

import agent_memory
from agent_memory.errors import from_contract
from agent_memory.popoto import TrajectoryMemory

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


def test_a_misfit_names_its_place_in_the_input():
    store = agent_memory.Store(":memory:")
    cases = [
        (lambda: store.trajectory_recall({"partition": None, "fingerprint": {}}), "partition",
         "invalid arguments for trajectory_recall: partition: invalid type: null, expected a string"),
        (lambda: record(store, {**EPISODE, "trajectory": "ab"}), "episodes[0].trajectory",
         'invalid arguments for trajectory_record: episodes[0].trajectory: invalid type: string "ab", expected a sequence'),
        (lambda: store.trajectory_recall({"partition": "p", "fingerprint": {"task": 1}}), "fingerprint.task",
         "invalid arguments for trajectory_recall: fingerprint.task: invalid type: integer `1`, expected a string"),
    ]
    for call, place, message in cases:
        with pytest.raises(agent_memory.InvalidInputError) as raised:
            call()
        assert raised.value.input == place
        assert str(raised.value).startswith(message), str(raised.value)
    # The drop-in's recall compares each weight with 0 first, as popoto does: a weight that
    # is no number is popoto's TypeError.
    memory = TrajectoryMemory(db=store, fingerprint_fields=["task"])
    with pytest.raises(TypeError, match="'>' not supported between instances of 'str' and 'int'"):
        memory.recall(fingerprint={"task": "deploy"}, partition="p", score_weights={"confidence": "high"})


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


def _outcome(call):
    """What `call()` did: its result, or its exception's class, kind, message and input."""
    try:
        return ("ok", call())
    except Exception as error:  # noqa: BLE001 - every failure is compared
        return (type(error).__name__, getattr(error, "kind", None), str(error), getattr(error, "input", None))


GOOD_RECORD = {"partition": "p", "fields": ["task"], "cluster_threshold": 1,
               "episodes": [{"fingerprint": {"task": "deploy"}, "trajectory": ["build", "ship"],
                             "outcome": {"success": True}, "recorded_at": 1_767_225_600_000}]}
#: Inputs of the shape the popoto drop-in sends, and near misses: the typed path reads the
#: first without JSON, and must hand each other one to the JSON path to fail the same way.
RECORD_INPUTS = [
    GOOD_RECORD,
    {**GOOD_RECORD, "partition": ""},
    {**GOOD_RECORD, "partition": 7},
    {**GOOD_RECORD, "fields": []},
    {**GOOD_RECORD, "fields": ["a,b"]},
    {**GOOD_RECORD, "fields": "task"},
    {**GOOD_RECORD, "cluster_threshold": -1},
    {**GOOD_RECORD, "cluster_threshold": 2.5},
    {**GOOD_RECORD, "cluster_threshold": True},
    {**GOOD_RECORD, "initial_confidence": float("nan")},
    {**GOOD_RECORD, "episodes": []},
    {**GOOD_RECORD, "episodes": [{**GOOD_RECORD["episodes"][0], "fingerprint": {}}]},
    {**GOOD_RECORD, "episodes": [{**GOOD_RECORD["episodes"][0], "fingerprint": {"task": 1}}]},
    {**GOOD_RECORD, "episodes": [{**GOOD_RECORD["episodes"][0], "trajectory": "build"}]},
    {**GOOD_RECORD, "episodes": [{**GOOD_RECORD["episodes"][0], "recorded_at": "yesterday"}]},
    {**GOOD_RECORD, "episodes": [{**GOOD_RECORD["episodes"][0], "surprise": 1}]},
    {**GOOD_RECORD, "surprise": 1},
    {"partition": "p"},
]
GOOD_RECALL = {"partition": "p", "fingerprint": {"task": "deploy"}, "limit": 100,
               "confidence_weight": 0.6, "recency_weight": 0.4}
RECALL_INPUTS = [
    GOOD_RECALL,
    {**GOOD_RECALL, "fingerprint": {}},
    {**GOOD_RECALL, "fingerprint": {"elsewhere": "x"}},
    {**GOOD_RECALL, "fingerprint": {"task": 1}},
    {**GOOD_RECALL, "fingerprint": "deploy"},
    {**GOOD_RECALL, "partition": None},
    {**GOOD_RECALL, "partition": "nowhere"},
    {**GOOD_RECALL, "limit": -1},
    {**GOOD_RECALL, "limit": 0},
    {**GOOD_RECALL, "limit": 2 ** 70},
    {**GOOD_RECALL, "confidence_weight": 1},
    {**GOOD_RECALL, "confidence_weight": float("inf")},
    {**GOOD_RECALL, "recency_weight": "high"},
    {**GOOD_RECALL, "surprise": 1},
    {"fingerprint": {"task": "deploy"}},
    [],
]


@pytest.mark.parametrize("given", RECORD_INPUTS, ids=range(len(RECORD_INPUTS)))
def test_a_record_of_the_drop_ins_shape_fails_as_the_json_path_does(tmp_path, given):
    typed, plain = (agent_memory.Store(str(tmp_path / name))._native for name in ("typed.db", "plain.db"))
    now = 1_767_225_600_000
    expected = _outcome(lambda: plain.call("trajectory_record", given, now))
    got = _outcome(lambda: typed.record_episodes(given, now))
    assert got[0] == expected[0]
    if expected[0] == "ok":
        assert typed.call("trajectory_patterns", {"partition": "p"}, now) == plain.call("trajectory_patterns", {"partition": "p"}, now)
        assert typed.call("memory_list", None, now) == plain.call("memory_list", None, now)
    else:
        assert got == expected


@pytest.mark.parametrize("given", RECALL_INPUTS, ids=range(len(RECALL_INPUTS)))
def test_a_recall_of_the_drop_ins_shape_answers_as_the_json_path_does(tmp_path, given):
    from agent_memory.popoto import _RESERVED, Pattern

    native = agent_memory.Store(str(tmp_path / "memory.db"))._native
    now = 1_767_225_600_000
    native.call("trajectory_record", GOOD_RECORD, now)
    native.call("trajectory_crystallize", {"partition": "p"}, now)
    expected = _outcome(lambda: native.call("trajectory_recall", given, now))
    got = _outcome(lambda: native.call_patterns("trajectory_recall", given, now, Pattern, "p", _RESERVED))
    if expected[0] == "ok":
        assert got[0] == "ok"
        assert [(p.fingerprint, p.canonical_sequence, p.confidence, p.score) for p in got[1]] == [
            (p["fingerprint"], p["canonical_sequence"], p["confidence"], p["score"]) for p in expected[1]["patterns"]]
    else:
        assert got == expected
