"""Durable memory for AI agents: procedural (trajectory), browser, coding-session (turns) and
recording memory, in one SQLite file or a shared PostgreSQL database.

>>> import agent_memory
>>> store = agent_memory.Store(":memory:")
>>> store.list()["partitions"]
[]

Every method takes and returns plain dicts and lists in the shapes of the JSON contract (the
schemas under ``schemas/`` of the repository; the type stubs name them). Errors are
:class:`agent_memory.Error` subclasses, one per kind. A store is shared safely by threads,
and every call releases the GIL while it runs. ``agent_memory.aio`` offers the same methods
as coroutines, ``agent_memory.popoto`` a drop-in for popoto's ``TrajectoryMemory``.
"""

import os
from typing import Any, Callable, Dict, List, Optional, Union

from . import _native
from .errors import (
    ConflictError,
    CorruptError,
    DatabaseError,
    Error,
    InvalidInputError,
    IoError,
    NotFoundError,
    UsageError,
)

__all__ = [
    "Store",
    "Error",
    "UsageError",
    "InvalidInputError",
    "NotFoundError",
    "ConflictError",
    "CorruptError",
    "IoError",
    "DatabaseError",
    "OPERATIONS",
]

#: The name of every operation of the contract.
OPERATIONS: List[str] = list(_native.operation_names())

Clock = Callable[[], float]


class Store:
    """An open memory store.

    ``path_or_url`` is a SQLite file (created with its folder on first use), ``":memory:"``
    for a private database in memory, or a ``postgres://`` URL. ``clock``, when given, is
    "now" for every call: a function returning seconds since the epoch, as ``time.time``
    does (tests fix it; the default is the system clock).
    """

    __slots__ = ("_native", "_clock")

    def __init__(self, path_or_url: Union[str, "os.PathLike[str]"], *, clock: Optional[Clock] = None):
        if clock is not None and not callable(clock):
            raise TypeError(f"clock must be a function returning seconds since the epoch, not {type(clock).__name__}")
        self._native = _native.Store(path_or_url)
        self._clock = clock

    @property
    def location(self) -> str:
        """The database: a file's path, ``:memory:``, or a URL without its password."""
        return self._native.location

    def __repr__(self) -> str:
        return f"agent_memory.Store({self._native.location!r})"

    def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any:
        """Runs the contract's ``operation`` on ``input`` and returns its output."""
        if not isinstance(operation, str):
            raise TypeError(f"operation must be a str, not {type(operation).__name__}")
        return self._native.call(operation, input, self._now_ms())

    def _now_ms(self) -> Optional[int]:
        """"Now" by the store's clock in milliseconds, or None for the system clock."""
        if self._clock is None:
            return None
        return round(float(self._clock()) * 1000)

    # Procedural memory: what worked last time.

    def trajectory_record(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Records episodes (``{"partition", "episodes": [...]}``) in one transaction."""
        return self.call("trajectory_record", input)

    def trajectory_record_episode(self, partition: str, episode: Dict[str, Any]) -> Dict[str, Any]:
        """Records one episode (``{"fingerprint", "trajectory", "outcome"}``) in ``partition``."""
        return self.call("trajectory_record", {"partition": partition, "episodes": [episode]})

    def trajectory_crystallize(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Turns the episodes recorded since the last run into patterns."""
        return self.call("trajectory_crystallize", input)

    def trajectory_recall(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The patterns matching a full or partial fingerprint, best first."""
        return self.call("trajectory_recall", input)

    def trajectory_patterns(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Every pattern of a partition."""
        return self.call("trajectory_patterns", input)

    # Browser memory.

    def browser_record_run(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Records a finished browser run."""
        return self.call("browser_record_run", input)

    def browser_context(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The memory context for a run with this goal on this URL."""
        return self.call("browser_context", input)

    def browser_runs(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Registered runs, newest first, filtered."""
        return self.call("browser_runs", input)

    def browser_resume(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The scenario that continues a run in its session."""
        return self.call("browser_resume", input)

    def browser_fork(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The scenario that branches from a run into a new session."""
        return self.call("browser_fork", input)

    def browser_run_start(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Registers a run as running."""
        return self.call("browser_run_start", input)

    def browser_run_update(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Records a running run's progress."""
        return self.call("browser_run_update", input)

    def browser_run_complete(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Marks a run finished."""
        return self.call("browser_run_complete", input)

    # Coding sessions.

    def turns_append(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Appends a coding session's events."""
        return self.call("turns_append", input)

    def turns_view(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The model view of a session, rendered for a provider."""
        return self.call("turns_view", input)

    # Recordings of tool calls.

    def recording_append(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Appends recorded tool calls, each with the memory after it."""
        return self.call("recording_append", input)

    def recording_templatize(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """A session's calls as trail YAML with ``${key}`` tokens."""
        return self.call("recording_templatize", input)

    def recording_lint(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Literals in a trail that will go stale."""
        return self.call("recording_lint", input)

    def recording_next_call(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """The next step of a trail replay."""
        return self.call("recording_next_call", input)

    # Notes: the memory tool's /memories directory.

    def notes(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Runs one command of the memory tool (view, create, str_replace, insert, delete,
        rename) or a search on a scope's notes; ``text`` is the tool's answer."""
        return self.call("notes", input)

    # The whole memory.

    def list(self) -> Dict[str, Any]:
        """Everything the memory holds, with counts."""
        return self.call("memory_list")

    def forget(self, input: Dict[str, Any]) -> Dict[str, Any]:
        """Forgets one partition, session, scope, run or trajectory for good."""
        return self.call("memory_forget", input)

    def stats(self) -> Dict[str, Any]:
        """The database, its schema version, size and rows per table."""
        return self.call("memory_stats")

    def check(self) -> Dict[str, Any]:
        """Checks a SQLite database (its integrity and the store's own invariants): every
        check with its findings. A PostgreSQL database is checked by its own tools."""
        return self.call("check")
