"""The ``ctx`` an agent handler receives, and ``self.context`` of a cloud function.

Field for field what spec section 5 lists: ``request`` (``body``, ``headers``,
``query``, ``signal``), ``env``, ``conversation_id``, ``run_id``, ``store``,
``utils`` (``sse``, ``stream_sse``, ``abort_active_run``), ``tracer``; and
``tools``, ``sandbox`` and ``kv``, which exist only on the platform and
raise :class:`PlatformOnlyError` here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from makers_store import ContextStore, SyncContextStore
from makers_store.errors import StoreError

from . import sse as sse_module
from .sse import StreamResponse
from .tracing import Tracer

logger = logging.getLogger("makers_store.serve")

#: abort(conversation_id, except_run) -> number of runs signalled, on every instance.
AbortFunction = Callable[[str, str | None], Awaitable[int]]


class PlatformOnlyError(StoreError, AttributeError):
    """A ``ctx`` field that only the EdgeOne Makers platform provides.

    It is also an ``AttributeError``, so ``getattr(ctx, "tools", None)`` and
    ``hasattr`` let code degrade gracefully when run locally.
    """


_PLATFORM_ONLY = {
    "tools": "the platform's sandbox tools (commands, files, code_interpreter, browser)",
    "sandbox": "the platform's code sandbox",
    "kv": "EdgeOne KV storage",
}


def _platform_only(name: str) -> PlatformOnlyError:
    return PlatformOnlyError(
        f"ctx.{name} ({_PLATFORM_ONLY[name]}) exists only on the EdgeOne Makers platform, "
        "not under `makers-store serve`; guard it with getattr(ctx, "
        f"{name!r}, None) or keep per-conversation data in ctx.store.state"
    )


@dataclass
class AgentRequest:
    method: str
    path: str
    url: str
    headers: dict[str, str]
    query: dict[str, str]
    body: Any
    raw_body: bytes
    signal: asyncio.Event


class Utils:
    """``ctx.utils``."""

    def __init__(self, run_id: str, abort: AbortFunction) -> None:
        self._run_id = run_id
        self._abort = abort

    @staticmethod
    def sse(
        data: Any, event: str | None = None, id: str | None = None, retry: int | None = None
    ) -> bytes:
        """One SSE frame as bytes (``data`` as is if a str, else JSON)."""
        return sse_module.sse(data, event=event, id=id, retry=retry)

    @staticmethod
    def stream_sse(
        source: AsyncIterable[Any] | Iterable[Any],
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> StreamResponse:
        """A streaming response that sends each item ``source`` yields as an SSE frame."""
        return StreamResponse(source, status=status, headers=headers)

    def abort_active_run(self, conversation_id: str) -> asyncio.Task[bool]:
        """Set the ``signal`` of the running request(s) of ``conversation_id``.

        The abort starts at once, on every instance; await the result to learn
        whether a run was found (``True``) or none was active (``False``).
        The caller's own run is never aborted.
        """
        if not isinstance(conversation_id, str) or not conversation_id:
            raise ValueError("abort_active_run: conversation_id must be a non-empty string")

        async def run() -> bool:
            try:
                return await self._abort(conversation_id, self._run_id) > 0
            except Exception:
                logger.exception("abort_active_run(%r) failed", conversation_id)
                return False

        return asyncio.get_running_loop().create_task(run())


@dataclass
class AgentContext:
    """What ``handler(ctx)`` receives."""

    request: AgentRequest
    env: Mapping[str, str]
    conversation_id: str
    run_id: str
    store: ContextStore
    utils: Utils
    tracer: Tracer

    @property
    def tools(self) -> Any:
        raise _platform_only("tools")

    @property
    def sandbox(self) -> Any:
        raise _platform_only("sandbox")

    @property
    def kv(self) -> Any:
        raise _platform_only("kv")


@dataclass
class AgentHandle:
    """``self.context.agent`` in a cloud function."""

    store: SyncContextStore


@dataclass
class FunctionContext:
    """``self.context`` in a cloud function (``self.context.agent.store`` is synchronous)."""

    agent: AgentHandle
    conversation_id: str
    run_id: str
    env: Mapping[str, str]
    params: dict[str, str] = field(default_factory=dict)

    @property
    def store(self) -> SyncContextStore:
        return self.agent.store
