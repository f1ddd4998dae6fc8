"""agent_memory's API as coroutines: every method of :class:`agent_memory.Store`, run in a
worker thread (``asyncio.to_thread``) so the event loop never waits on the store.

>>> import asyncio, agent_memory.aio
>>> async def main():
...     store = agent_memory.aio.Store(":memory:")
...     return (await store.list())["partitions"]
>>> asyncio.run(main())
[]
"""

import asyncio
import functools
import os
from typing import Any, Callable, Dict, Optional, Union

from . import Store as _Store

__all__ = ["Store"]


class Store:
    """An open memory store whose methods are coroutines; ``path_or_url`` and ``clock`` as
    :class:`agent_memory.Store` takes them. Opening is a blocking call: use :meth:`open`
    inside a running loop to open in a thread too."""

    __slots__ = ("sync",)

    def __init__(self, path_or_url: Union[str, "os.PathLike[str]", _Store], *,
                 clock: Optional[Callable[[], float]] = None):
        #: The synchronous store underneath, shared with any thread.
        self.sync = path_or_url if isinstance(path_or_url, _Store) else _Store(path_or_url, clock=clock)

    @classmethod
    async def open(cls, path_or_url: Union[str, "os.PathLike[str]"], *,
                   clock: Optional[Callable[[], float]] = None) -> "Store":
        """Opens the store in a worker thread (a PostgreSQL connection may take a while)."""
        return cls(await asyncio.to_thread(_Store, path_or_url, clock=clock))

    @property
    def location(self) -> str:
        return self.sync.location

    def __repr__(self) -> str:
        return f"agent_memory.aio.Store({self.sync.location!r})"

    async def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any:
        """Runs the contract's ``operation`` on ``input`` in a worker thread."""
        return await asyncio.to_thread(self.sync.call, operation, input)


def _coroutine(name: str) -> Callable[..., Any]:
    method = getattr(_Store, name)

    @functools.wraps(method)
    async def run(self: Store, *args: Any) -> Any:
        return await asyncio.to_thread(method, self.sync, *args)

    return run


# The same methods as agent_memory.Store, each a coroutine.
for _name in (
    "trajectory_record", "trajectory_record_episode", "trajectory_crystallize", "trajectory_recall",
    "trajectory_patterns", "browser_record_run", "browser_context", "browser_runs", "browser_resume",
    "browser_fork", "browser_run_start", "browser_run_update", "browser_run_complete", "turns_append",
    "turns_view", "recording_append", "recording_templatize", "recording_lint", "recording_next_call",
    "notes", "list", "forget", "stats", "check",
):
    setattr(Store, _name, _coroutine(_name))
del _name
