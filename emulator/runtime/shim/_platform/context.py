"""``_platform.context``: ``StreamResponse`` (with ``.sse(gen)``), ``sse``, ``AgentContext``..."""

from makers_store.emulator.runtime.sse import StreamResponse, sse
from makers_store.emulator.runtime.worker.context import (
    AbortActiveRunResult,
    AgentContext,
    AgentRequest,
    Utils,
)

ContextUtils = Utils  # the platform's class name for ctx.utils

__all__ = [
    "AbortActiveRunResult",
    "AgentContext",
    "AgentRequest",
    "ContextUtils",
    "StreamResponse",
    "sse",
]
