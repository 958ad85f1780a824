"""Every error makers_store raises, rooted at :class:`StoreError`.

::

    StoreError
    ├── MemoryValidationError (also ValueError)   an argument broke a rule, named in the error
    │   └── InvalidHistoryError                   a history for a model has an orphan tool call
    │                                             or result (strict=True)
    ├── MemoryQuotaExceededError                  a conversation holds the most messages allowed
    ├── MemoryNotFoundError (also KeyError)       the message or conversation named does not exist
    ├── MemoryConflictError                       a concurrent writer won; retrying may succeed
    │   └── PreconditionFailedError               a blob's if-match / if-none-match did not hold
    ├── MemoryCorruptError                        stored bytes do not decode as what they should be
    ├── SyncCallInEventLoopError (RuntimeError)   a blocking adapter call made on its own loop
    └── BackendError                              the storage backend failed (I/O, locks, driver)
        └── MissingExtraError (also ImportError)  an optional dependency is not installed

Backends translate their native exceptions into these at their edge; nothing
above the blob layer ever sees ``sqlite3.Error`` or a driver's exception.
The names keep the platform's ``Memory*`` prefix; none shadows the builtin
``MemoryError``.
"""

from __future__ import annotations

from collections.abc import Sequence


class StoreError(Exception):
    """Base class of every error raised by makers_store."""


class MemoryValidationError(StoreError, ValueError):
    """An argument broke a documented rule (length, type, range, JSON)."""


class InvalidHistoryError(MemoryValidationError):
    """A history about to be handed to a model holds an orphan tool call or
    tool result, and the caller asked ``strict=True`` (the converters,
    ``context_window``, the OpenAI session): ``findings`` lists them as the
    doctor names them (:class:`~makers_store.HistoryFinding`)."""

    def __init__(self, *args: object, findings: Sequence[object] = ()) -> None:
        super().__init__(*args)
        self.findings = list(findings)


class MemoryQuotaExceededError(StoreError):
    """A conversation already holds the maximum number of messages."""


class MemoryNotFoundError(StoreError, KeyError):
    """The message or conversation named by the caller does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MemoryConflictError(StoreError):
    """A concurrent writer changed the data first."""


class PreconditionFailedError(MemoryConflictError):
    """A conditional blob write or delete found a different version. ``key``
    is that blob's key where the backend knows it: the retry policy names
    what the writers kept changing from it."""

    def __init__(self, *args: object, key: str | None = None) -> None:
        super().__init__(*args)
        self.key = key


class MemoryCorruptError(StoreError):
    """Stored bytes could not be decoded."""


class BackendError(StoreError):
    """The storage backend failed."""


class SyncCallInEventLoopError(StoreError, RuntimeError):
    """A synchronous adapter method was called on the event loop that runs the
    adapter's async methods, which it would block; use the async method there."""


class MissingExtraError(BackendError, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


def missing_extra(package: str, extra: str) -> MissingExtraError:
    """Build the error raised when an optional import fails."""
    return MissingExtraError(
        f"{package} is not installed; install it with: pip install 'makers-store[{extra}]'"
    )
