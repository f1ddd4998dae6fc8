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
import os
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Union

from . import Store as _Store
from ._store import AsyncStoreOperations

if TYPE_CHECKING:
    from .types import trajectory_record_input, trajectory_record_output

__all__ = ["Store"]


class Store(AsyncStoreOperations):
    """An open memory store whose methods are coroutines (``agent_memory._store``, generated
    from the contract's table), each running the synchronous store's :meth:`call` in a worker
    thread; ``path_or_url`` and ``clock`` as :class:`agent_memory.Store` takes them. Opening
    is a blocking call: use :meth:`open` inside a running loop to open in a thread too."""

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
        """The database: a file's path, ``:memory:``, or a URL without its password."""
        return self.sync.location

    def __repr__(self) -> str:
        return f"agent_memory.aio.Store({self.sync.location!r})"

    async def call(self, operation: str, input: Optional[Dict[str, Any]] = None) -> Any:
        """Runs the contract's ``operation`` on ``input`` in a worker thread."""
        return await asyncio.to_thread(self.sync.call, operation, input)

    async def trajectory_record_episode(
        self, partition: str, episode: "trajectory_record_input.EpisodeInput"
    ) -> "trajectory_record_output.RecordOutput":
        """Records one episode (``{"fingerprint", "trajectory", "outcome"}``) in ``partition``."""
        return await self.trajectory_record({"partition": partition, "episodes": [episode]})
