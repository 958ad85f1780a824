"""The ``ctx`` an agent handler receives, and ``self.context`` of a cloud function.

Field for field what the platform gives (spec/platform-runtime.md section 2):
``request`` (``body``, ``headers``, ``query``, ``signal``), ``env`` (a plain
dict per request), ``conversation_id`` ("" without the header), ``run_id``,
``store``, ``utils`` (``sse``, ``stream_sse``, ``abort_active_run`` /
``abortActiveRun``), ``tracer``, ``kv`` (per route, temporary), and
``tools`` / ``sandbox``, built on first use by :mod:`..tools`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Generic

from makers_store import ContextStore, SyncContextStore
from makers_store.errors import MemoryValidationError

from .. import sse as sse_module
from ..functions.store import CloudFunctionStore, StoreT
from ..sse import StreamResponse
from .kv import RouteKV
from .runs import AbortedRun, latest
from .tracing import Tracer

logger = logging.getLogger("makers_store.serve")

#: abort(conversation_id, except_run) -> the runs aborted, on every instance.
AbortFunction = Callable[[str, str | None], list[AbortedRun]]


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


@dataclass(frozen=True)
class AbortActiveRunResult:
    """What ``ctx.utils.abort_active_run`` returns (the platform's class name).

    Always truthy, as on the platform: test ``.aborted``. ``run_id`` names the
    latest run that was aborted, None when none was running.
    """

    aborted: bool
    conversation_id: str
    run_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Utils:
    """``ctx.utils``."""

    def __init__(self, run_id: str, abort: AbortFunction) -> None:
        self._run_id = run_id
        self._abort = abort

    @staticmethod
    def sse(
        data: Any, event: str | None = None, id: str | None = None, retry: int | None = None
    ) -> bytes:
        """One SSE frame as bytes (``data`` as is if a str, else JSON, else ``str(data)``)."""
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

    def abort_active_run(self, conversation_id: str) -> AbortActiveRunResult:
        """Stop the running request(s) of ``conversation_id``, on whichever instance.

        Synchronous, as on the platform: their ``signal`` is set before this
        returns (a stream that ignores it is cancelled after a short grace).
        The caller's own run is never aborted.
        """
        if not isinstance(conversation_id, str) or not conversation_id:
            raise MemoryValidationError(
                "abort_active_run: conversation_id must be a non-empty str, "
                f"not {conversation_id!r}"
            )
        found = latest(self._abort(conversation_id, self._run_id))
        return AbortActiveRunResult(
            aborted=found is not None,
            conversation_id=conversation_id,
            run_id=None if found is None else found.run_id,
        )

    abortActiveRun = abort_active_run  # the platform's camelCase alias


@dataclass(frozen=True)
class ToolsSetup:
    """What ``ctx.tools`` and ``ctx.sandbox`` are built from, on first use."""

    project: Path
    framework: str | None
    enabled: bool


@dataclass
class AgentContext:
    """What ``handler(ctx)`` receives."""

    request: AgentRequest
    env: dict[str, str]
    conversation_id: str
    run_id: str
    store: ContextStore
    utils: Utils
    tracer: Tracer
    kv: RouteKV
    tools_setup: ToolsSetup = field(repr=False, kw_only=True)
    _workspace: Any = field(default=None, init=False, repr=False)
    _tools: Any = field(default=None, init=False, repr=False)
    _sandbox: Any = field(default=None, init=False, repr=False)

    def _conversation_workspace(self) -> Any:
        if self._workspace is None:
            from ..tools import Workspace

            self._workspace = Workspace.for_conversation(
                self.tools_setup.project, self.conversation_id, self.run_id
            )
        return self._workspace

    @property
    def tools(self) -> Any:
        """The toolkit registry, shaped by ``agents.framework`` (built on first use)."""
        if self._tools is None:
            from ..tools import build_toolkit

            setup = self.tools_setup
            self._tools = build_toolkit(
                setup.framework, self._conversation_workspace(), setup.enabled, self.env
            )
        return self._tools

    @property
    def sandbox(self) -> Any:
        """The local stand-in for the platform's sandbox (built on first use)."""
        if self._sandbox is None:
            from ..tools import LocalSandbox

            self._sandbox = LocalSandbox(
                self._conversation_workspace(), enabled=self.tools_setup.enabled
            )
        return self._sandbox


@dataclass
class AgentHandle(Generic[StoreT]):
    """``context.agent`` in a cloud function: the platform's ``{conversation_id, store}``.

    ``conversation_id`` is the ``makers-conversation-id`` header ("" without
    one, and then ``store`` is bound to no conversation). ``store`` is
    synchronous for handler classes and framework apps, async for context
    handlers (:mod:`..functions.context_handlers`).
    """

    conversation_id: str
    store: CloudFunctionStore[StoreT]


@dataclass
class FunctionContext:
    """``self.context`` in a cloud function (``self.context.agent.store`` is synchronous).

    Only ``agent`` is known on the platform; ``conversation_id``, ``run_id``,
    ``env`` and ``params`` (the ``[id]`` / ``[[rest]]`` path parameters) are
    this emulator's extras.
    """

    agent: AgentHandle[SyncContextStore]
    conversation_id: str
    run_id: str
    env: Mapping[str, str]
    params: dict[str, str] = field(default_factory=dict)

    @property
    def store(self) -> CloudFunctionStore[SyncContextStore]:
        return self.agent.store
