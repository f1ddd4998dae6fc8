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
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Union

from . import _native, errors
from ._store import StoreOperations
from .errors import *  # noqa: F403 - the exception classes, one per kind (generated)

if TYPE_CHECKING:
    from .types import trajectory_record_input, trajectory_record_output

__all__ = ["Store", "OPERATIONS"]
__all__ += errors.__all__

#: The name of every operation of the contract.
OPERATIONS: List[str] = [operation["name"] for operation in _native.operations()]

Clock = Callable[[], float]


class Store(StoreOperations):
    """An open memory store: a method per operation of the contract (``agent_memory._store``,
    generated from the contract's table), around the one dispatch, :meth:`call`.

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

    def trajectory_record_episode(
        self, partition: str, episode: "trajectory_record_input.EpisodeInput"
    ) -> "trajectory_record_output.RecordOutput":
        """Records one episode (``{"fingerprint", "trajectory", "outcome"}``) in ``partition``."""
        return self.trajectory_record({"partition": partition, "episodes": [episode]})
