"""Stubs of agent_memory: the store (generated, `_store.pyi`) and the errors."""

from typing import List

from ._store import Clock as Clock
from ._store import Store as Store
from .errors import ConflictError as ConflictError
from .errors import CorruptError as CorruptError
from .errors import DatabaseError as DatabaseError
from .errors import Error as Error
from .errors import InvalidInputError as InvalidInputError
from .errors import IoError as IoError
from .errors import NotFoundError as NotFoundError
from .errors import UsageError as UsageError

OPERATIONS: List[str]
