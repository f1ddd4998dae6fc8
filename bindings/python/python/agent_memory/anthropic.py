"""Claude's memory tool (``memory_20250818``) on agent_memory's store, for the Anthropic
Python SDK's tool runner: install with ``pip install 'durable-agent-memory[anthropic]'``.

.. code-block:: python

    import anthropic
    from agent_memory import Store
    from agent_memory.anthropic import NotesMemoryTool

    memory = NotesMemoryTool(Store("memory.db"), scope="alice")
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=2048, tools=[memory],
        messages=[{"role": "user", "content": "Remember that I prefer pnpm"}],
    )

:class:`NotesMemoryTool` subclasses the SDK's ``BetaAbstractMemoryTool``, and
:class:`AsyncNotesMemoryTool` its ``BetaAsyncAbstractMemoryTool``: each of the six commands
(``view``, ``create``, ``str_replace``, ``insert``, ``delete``, ``rename``) is one call of the
store's ``notes`` operation on ``scope`` with ``sdk="python"``, and returns the text the
SDK's own ``BetaLocalFilesystemMemoryTool`` answers, word for word (the SDK's tests run
against these handlers). A command the store refuses (a missing file, a path outside
``/memories``, an ``old_str`` found twice, a file already there, a note over
``max_note_bytes``) raises the SDK's ``ToolError`` with that tool's error text, which the
tool runner hands the model as an error result; any other failure (the database
unreachable) is raised as the store raised it.
"""

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Union, cast

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
except ImportError as missing:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "agent_memory.anthropic needs the Anthropic SDK: pip install 'durable-agent-memory[anthropic]'"
    ) from missing

from . import ConflictError, InvalidInputError, NotFoundError, Store
from . import aio

if TYPE_CHECKING:
    from .types import notes_input

__all__ = ["NotesMemoryTool", "AsyncNotesMemoryTool"]

# The failures that are the command's own (the model can correct them), as the tool reports them.
_COMMAND_ERRORS = (InvalidInputError, NotFoundError, ConflictError)


def _input(command: Any) -> Dict[str, Any]:
    """The notes input of one of the SDK's memory-tool commands: its fields, as the model
    sent them (an absent ``view_range`` is left out)."""
    fields = {"command": command.command}
    for name in ("path", "view_range", "file_text", "old_str", "new_str", "insert_line", "insert_text",
                 "old_path", "new_path"):
        value = getattr(command, name, None)
        if value is not None:
            fields[name] = list(value) if name == "view_range" else value
    return fields


class _Scope:
    """What both handlers hold: the scope their notes live in, and the secrets kept out."""

    def _given(self, scope: str, secrets: Optional[Mapping[str, str]], max_note_bytes: Optional[int],
               session: Optional[str] = None) -> None:
        if not isinstance(scope, str):
            raise TypeError(f"scope must be a str, not {type(scope).__name__}")
        if session is not None and not isinstance(session, str):
            raise TypeError(f"session must be a str, not {type(session).__name__}")
        self.session = session
        if max_note_bytes is not None and (isinstance(max_note_bytes, bool) or not isinstance(max_note_bytes, int)):
            raise TypeError(f"max_note_bytes must be an int, not {type(max_note_bytes).__name__}")
        self.scope = scope
        self._secrets = dict(secrets) if secrets else None
        self.max_note_bytes = max_note_bytes

    def _notes_input(self, command: Any) -> "notes_input.NotesInput":
        """The notes input of ``command`` on this scope; its shape is the model's, which the
        store checks."""
        given = _input(command)
        given["scope"] = self.scope
        # The texts of this SDK's own local filesystem tool, which models are shown.
        given["sdk"] = "python"
        if self._secrets:
            given["secrets"] = self._secrets
        if self.max_note_bytes is not None:
            given["max_note_bytes"] = self.max_note_bytes
        # Each version the model writes is kept as the model's, in this session: what
        # ``Store.note_forget_by`` can forget after a poisoned run.
        if self.session is not None:
            given["session"] = self.session
        return cast("notes_input.NotesInput", given)


class NotesMemoryTool(_Scope, BetaAbstractMemoryTool):
    """The memory tool on ``store`` (an :class:`agent_memory.Store`, or a path or URL to open
    one), each scope a ``/memories`` directory of its own. ``secrets`` (name to value) are
    replaced by ``${name}`` in everything written or answered; ``max_note_bytes`` is the
    largest note a write may leave (256 KiB when ``None``, at most 64 MiB), and a write past
    it is refused with a text naming the limit; ``session`` is kept with every version the
    model writes (its writer is the model, through ``python``); ``cache_control`` is the
    SDK's."""

    def __init__(self, store: Union[Store, str], scope: str = "default", *,
                 secrets: Optional[Mapping[str, str]] = None, max_note_bytes: Optional[int] = None,
                 session: Optional[str] = None, cache_control: Any = None):
        super().__init__(cache_control=cache_control)
        self.store = store if isinstance(store, Store) else Store(store)
        self._given(scope, secrets, max_note_bytes, session)

    def _run(self, command: Any) -> str:
        try:
            return self.store.notes(self._notes_input(command))["text"]
        except _COMMAND_ERRORS as error:
            raise ToolError(error.message) from error

    def view(self, command: Any) -> str:
        return self._run(command)

    def create(self, command: Any) -> str:
        return self._run(command)

    def str_replace(self, command: Any) -> str:
        return self._run(command)

    def insert(self, command: Any) -> str:
        return self._run(command)

    def delete(self, command: Any) -> str:
        return self._run(command)

    def rename(self, command: Any) -> str:
        return self._run(command)


class AsyncNotesMemoryTool(_Scope, BetaAsyncAbstractMemoryTool):
    """:class:`NotesMemoryTool` for the SDK's async tool runner: each command runs in a
    worker thread (``agent_memory.aio``), so the event loop never waits on the store."""

    def __init__(self, store: Union[aio.Store, Store, str], scope: str = "default", *,
                 secrets: Optional[Mapping[str, str]] = None, max_note_bytes: Optional[int] = None,
                 session: Optional[str] = None, cache_control: Any = None):
        super().__init__(cache_control=cache_control)
        self.store = store if isinstance(store, aio.Store) else aio.Store(store)
        self._given(scope, secrets, max_note_bytes, session)

    async def _run(self, command: Any) -> str:
        try:
            return (await self.store.notes(self._notes_input(command)))["text"]
        except _COMMAND_ERRORS as error:
            raise ToolError(error.message) from error

    async def view(self, command: Any) -> str:
        return await self._run(command)

    async def create(self, command: Any) -> str:
        return await self._run(command)

    async def str_replace(self, command: Any) -> str:
        return await self._run(command)

    async def insert(self, command: Any) -> str:
        return await self._run(command)

    async def delete(self, command: Any) -> str:
        return await self._run(command)

    async def rename(self, command: Any) -> str:
        return await self._run(command)
