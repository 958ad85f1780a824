"""``_platform.memory``: the store's errors, where platform code may import them from.

The platform's import path for these classes is UNKNOWN; this mirrors the
module name ``_platform.memory`` (the platform's ``ConversationMemory``).
"""

from makers_store import ContextStore as ConversationMemory
from makers_store.errors import (
    MemoryConflictError,
    MemoryCorruptError,
    MemoryNotFoundError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    StoreError,
)

__all__ = [
    "ConversationMemory",
    "MemoryConflictError",
    "MemoryCorruptError",
    "MemoryNotFoundError",
    "MemoryQuotaExceededError",
    "MemoryValidationError",
    "StoreError",
]
