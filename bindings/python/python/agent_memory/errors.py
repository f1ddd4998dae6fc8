"""The exceptions of agent_memory: one class per kind of the contract's errors.

Every error a store call raises is an :class:`Error` with the contract's ``kind`` (a stable
word a program can branch on), ``message`` (what a person reads, the command line's text)
and ``input`` (the file, field or name it is about, or ``None``). Each kind has a subclass,
so ``except agent_memory.NotFoundError`` catches only that kind.
"""

from typing import Dict, Optional, Type

__all__ = [
    "Error",
    "UsageError",
    "InvalidInputError",
    "NotFoundError",
    "ConflictError",
    "CorruptError",
    "IoError",
    "DatabaseError",
    "from_contract",
]


class Error(Exception):
    """An error of the memory store: ``kind``, ``message`` and ``input``."""

    kind: str = "error"

    def __init__(self, message: str, kind: Optional[str] = None, input: Optional[str] = None):
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.input = input

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, kind={self.kind!r}, input={self.input!r})"


class UsageError(Error):
    """A command line used wrongly."""

    kind = "usage"


class InvalidInputError(Error, ValueError):
    """An input the contract refuses (a missing field, a bad name, a value out of range)."""

    kind = "invalid_input"


class NotFoundError(Error, LookupError):
    """What the input names does not exist (a partition, session, run or database)."""

    kind = "not_found"


class ConflictError(Error):
    """The write conflicts with what is stored (another configuration, another event)."""

    kind = "conflict"


class CorruptError(Error):
    """Stored data that is not what the store wrote."""

    kind = "corrupt"


class IoError(Error):
    """A file could not be read or written."""

    kind = "io"


class DatabaseError(Error):
    """The database failed or refused (a file that is not ours, a lost connection)."""

    kind = "database"


_BY_KIND: Dict[str, Type[Error]] = {
    cls.kind: cls
    for cls in (Error, UsageError, InvalidInputError, NotFoundError, ConflictError,
                CorruptError, IoError, DatabaseError)
}


def from_contract(kind: str, message: str, input: Optional[str] = None) -> Error:
    """The exception for a contract error of ``kind`` (an unknown kind is a plain Error)."""
    return _BY_KIND.get(kind, Error)(message, kind, input)
