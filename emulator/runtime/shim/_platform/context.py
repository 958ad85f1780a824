"""``_platform.context``: ``StreamResponse`` (with ``.sse(gen)``), ``sse``, ``AgentContext``..."""

from makers_store.emulator.runtime.context import (
    AbortActiveRunResult,
    AgentContext,
    AgentRequest,
    Utils,
)
from makers_store.emulator.runtime.sse import StreamResponse, sse

ContextUtils = Utils  # the platform's class name for ctx.utils

__all__ = [
    "AbortActiveRunResult",
    "AgentContext",
    "AgentRequest",
    "ContextUtils",
    "StreamResponse",
    "sse",
]
