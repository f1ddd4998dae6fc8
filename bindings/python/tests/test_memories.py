"""Every memory through agent_memory.Store and agent_memory.aio.Store, on each backend; a
value marked sensitive never reaches an output or the database."""

import asyncio
import json

import pytest

import agent_memory
import agent_memory.aio
from agent_memory import _native

from conftest import NOW
from memories import CANARY, walk


# Each operation's method, as the contract's table names it.
names = {operation["name"]: operation["python"] for operation in _native.operations()}


def methods(store):
    """The store's own method for each operation, so the walk goes through the public API."""

    def call(name, input):
        method = getattr(store, names[name])
        return method() if input is None else method(input)

    return call


def test_every_memory_through_the_native_api(location):
    store = agent_memory.Store(location, clock=lambda: NOW)
    outputs = []
    asyncio.run(walk(methods(store), outputs))
    assert CANARY not in json.dumps(outputs)
    assert store.list()["partitions"] == []


def test_every_memory_through_asyncio(location):
    async def main():
        store = agent_memory.aio.Store(location, clock=lambda: NOW)
        outputs = []
        await walk(methods(store), outputs)
        return outputs

    outputs = asyncio.run(main())
    assert CANARY not in json.dumps(outputs)


def test_a_sensitive_value_never_reaches_the_database_file(tmp_path):
    path = tmp_path / "secret.db"
    store = agent_memory.Store(str(path), clock=lambda: NOW)
    outputs = []
    asyncio.run(walk(methods(store), outputs))
    del store
    for file in tmp_path.iterdir():
        assert CANARY.encode() not in file.read_bytes(), file.name


def test_memory_stores_are_private_and_leave_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first, second = agent_memory.Store(":memory:"), agent_memory.Store(":memory:")
    first.trajectory_record({"partition": "p", "fields": ["task"], "episodes": [
        {"fingerprint": {"task": "t"}, "trajectory": ["a"], "outcome": 1}]})
    assert [p["partition"] for p in first.list()["partitions"]] == ["p"]
    assert second.list()["partitions"] == []
    assert list(tmp_path.iterdir()) == []


def test_check_reports_every_check_and_what_it_finds(location):
    store = agent_memory.Store(location)
    if location.startswith("postgres"):
        with pytest.raises(agent_memory.InvalidInputError, match="pg_amcheck"):
            store.check()
        return
    report = store.check()
    assert report["findings"] == [] and report["checks"], report
    assert all(check["findings"] == 0 for check in report["checks"])
