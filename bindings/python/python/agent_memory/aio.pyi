"""Stubs of agent_memory.aio: the store's methods as coroutines (generated, `_store.pyi`)."""

from ._store import AsyncStore as Store

__all__ = ["Store"]
