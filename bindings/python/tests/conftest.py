"""Fixtures: a fresh store on each backend, SQLite always and PostgreSQL when
AGENT_MEMORY_TEST_POSTGRES names a server (each test gets a schema of its own)."""

import itertools
import os
import uuid

import pytest

import agent_memory

POSTGRES = os.environ.get("AGENT_MEMORY_TEST_POSTGRES")
BACKENDS = ["sqlite"] + (["postgres"] if POSTGRES else [])
_schemas = itertools.count()

#: 2026-01-01T00:00:00Z, "now" for tests that fix the clock.
NOW = 1_767_225_600.0


def postgres_url(name: str) -> str:
    """The test server's URL with a fresh schema of its own."""
    separator = "&" if "?" in POSTGRES else "?"
    return f"{POSTGRES}{separator}schema={name}"


def fresh_location(backend: str, tmp_path) -> str:
    if backend == "sqlite":
        return str(tmp_path / "memory.db")
    return postgres_url(f"py_{os.getpid()}_{next(_schemas)}_{uuid.uuid4().hex[:8]}")


@pytest.fixture(params=BACKENDS)
def location(request, tmp_path) -> str:
    """Where a fresh store lives, on each backend."""
    return fresh_location(request.param, tmp_path)


@pytest.fixture
def store(location) -> agent_memory.Store:
    """A fresh store on each backend, at a fixed "now"."""
    return agent_memory.Store(location, clock=lambda: NOW)
