"""The wire between the runtime's processes: the names and encodings they share.

``makers-store serve`` is three kinds of process: the front (one public port),
Python workers (one per instance), and a Node worker under each Python worker
of a project with Node routes. What one writes and another reads is defined
here, once, so each side imports the protocol rather than the other side's
code (the front once imported the whole worker app for two header names,
and the worker pool the worker's process module for its ready line). Nothing
here imports the runtime, starlette or uvicorn.

Front -> Python worker: HTTP/1.1 on 127.0.0.1, one connection per request.

- the client's headers, minus any ``makers-internal*`` one
  (:data:`INTERNAL_HEADER_PREFIX`: a client cannot forge what follows), plus
  :data:`RUN_ID_INTERNAL_HEADER`, the run id the front chose at dispatch
  (:func:`new_run_id`; a worker without a front makes its own);
- :data:`CONVERSATION_HEADER` in, and with :data:`RUN_HEADER` back out on
  every answer (public: clients read them); the front adds
  :data:`INSTANCE_HEADER` and :data:`INSTANCE_PID_HEADER`;
- internal calls (abort fan-out, both ways) under :data:`INTERNAL_PREFIX`,
  guarded by :data:`TOKEN_HEADER` (the session's token).

Starting a Python worker: ``python -m makers_store.emulator.runtime.worker``
with :class:`WorkerSettings` as JSON in :data:`SETTINGS_ENV`; it prints
:data:`READY_MARKER` and its port when it can take requests.

Python worker -> its Node worker (``node/worker.mjs`` spells the same names;
``tests/serve/test_runtime_units.py`` checks they agree): settings in
:data:`NODE_SETTINGS_ENV`, the store socket's path in :data:`NODE_RPC_ENV`,
the ready line :data:`NODE_READY_MARKER`; each request carries
:data:`NODE_META_HEADER` (:func:`node_meta`: which route, run and
conversation) and :data:`TOKEN_HEADER`; the answer of a handler that threw
carries :data:`NODE_OUTCOME_HEADER`; an abort is ``POST`` :data:`ABORT_PATH`.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# --- front <-> Python worker -------------------------------------------------------

#: The conversation of a request (clients send it; every answer echoes it).
CONVERSATION_HEADER = "makers-conversation-id"
#: The run id of a request, on every answer.
RUN_HEADER = "makers-run-id"
#: Which instance answered, and its process id (the front adds both).
INSTANCE_HEADER = b"makers-instance"
INSTANCE_PID_HEADER = b"makers-instance-pid"
#: Headers only the runtime sends: the front drops every client header that
#: starts so, and a handler never sees them in its request.
INTERNAL_HEADER_PREFIX = b"makers-internal"
#: The run id the front chose for a request (clients cannot send it: see above).
RUN_ID_INTERNAL_HEADER = "makers-internal-run-id"
#: The session's token, on every internal call.
TOKEN_HEADER = "makers-internal-token"
#: Where internal calls go (a worker, the front's control listener, a Node worker).
INTERNAL_PREFIX = "/__makers/"
#: "Abort these runs" (the abort fan-out; the Node worker's abort of one run).
ABORT_PATH = INTERNAL_PREFIX + "abort"

_RUN_ID = re.compile(r"^run_[0-9a-f]{32}$")


def new_run_id() -> str:
    return "run_" + uuid.uuid4().hex


def is_run_id(text: str) -> bool:
    """Whether ``text`` is a run id :func:`new_run_id` could have made."""
    return _RUN_ID.match(text) is not None


# --- starting a Python worker --------------------------------------------------------

SETTINGS_ENV = "MAKERS_SERVE_WORKER"
READY_MARKER = "MAKERS-SERVE-WORKER-READY"


@dataclass(frozen=True)
class WorkerSettings:
    """What one worker process serves and how (the front's :data:`SETTINGS_ENV`)."""

    project: Path
    store_url: str
    instance: int
    token: str
    #: The front's control port (abort fan-out); 0 when running without a front.
    control_port: int = 0
    #: ``agents.framework`` from edgeone.json (None when absent); shapes ``ctx.tools``.
    framework: str | None = None
    #: False under ``serve --no-tools``: ``ctx.tools`` and ``ctx.sandbox`` refuse to run anything.
    tools_enabled: bool = True
    #: ``agents.timeout`` from edgeone.json, in seconds (None: no limit).
    agent_timeout_s: float | None = None
    #: The platform's cloud-function limits (6 MB body, 120 s wall clock);
    #: False under ``serve --no-function-limits``.
    function_limits: bool = True
    #: ``NodeRuntime.to_json()``: how to start this instance's Node worker (None: no Node routes).
    node: dict[str, str | None] | None = None
    #: Whether this worker shows the traceback of a route that fails to import
    #: (the front asks one worker per start or reload; the others say it in one line).
    report_imports: bool = True

    def encode(self) -> str:
        return json.dumps({**asdict(self), "project": str(self.project)})

    @classmethod
    def decode(cls, raw: str) -> WorkerSettings:
        data = json.loads(raw)
        return cls(
            project=Path(data["project"]),
            store_url=data["store_url"],
            instance=int(data["instance"]),
            token=data["token"],
            control_port=int(data["control_port"]),
            framework=data.get("framework"),
            tools_enabled=bool(data.get("tools_enabled", True)),
            agent_timeout_s=data.get("agent_timeout_s"),
            function_limits=bool(data.get("function_limits", True)),
            node=data.get("node"),
            report_imports=bool(data.get("report_imports", True)),
        )


# --- Python worker <-> its Node worker -----------------------------------------------

NODE_SETTINGS_ENV = "MAKERS_NODE_WORKER"
NODE_RPC_ENV = "MAKERS_STORE_RPC"
NODE_READY_MARKER = b"MAKERS-SERVE-NODE-READY"
NODE_META_HEADER = b"makers-internal-node"
#: Set by the Node worker on the 500 of a handler that threw.
NODE_OUTCOME_HEADER = b"makers-internal-outcome"


def node_meta(
    file: str, relative: str, kind: str, run_id: str, conversation_id: str, **extra: Any
) -> bytes:
    """The :data:`NODE_META_HEADER` of one request: the route's file, the run and more."""
    meta = {"file": file, "relative": relative, "kind": kind, "runId": run_id,
            "conversationId": conversation_id, **extra}
    return json.dumps(meta, ensure_ascii=True).encode("ascii")


# --- front <-> the middleware host -------------------------------------------------
# node/middleware_host.mjs spells the same names (its header comment describes
# the exchange); tests/serve/test_runtime_units.py checks they agree.

MIDDLEWARE_SETTINGS_ENV = "MAKERS_MIDDLEWARE_HOST"
MIDDLEWARE_READY_MARKER = b"MAKERS-SERVE-MIDDLEWARE-READY"
#: ``next``, ``rewrite`` or ``skip`` (a JSON decision) or ``respond`` (the middleware's Response).
MIDDLEWARE_DECISION_HEADER = b"makers-internal-middleware"
#: Where the front sends each request's head.
MIDDLEWARE_RUN_PATH = "/run"
#: The host's exit code when the middleware file cannot be loaded.
MIDDLEWARE_LOAD_FAILED = 3
