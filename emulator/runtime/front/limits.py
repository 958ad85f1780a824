"""What the front lets one client hold: time to send a request, connections, body size.

uvicorn gives us a keep-alive timeout (idle time *after* a response) and
``limit_concurrency``, which answers 503 only once a request's headers are
complete and counts half-open connections too, so a client that opens many
connections and never finishes a request would hold every file descriptor
and make each real client wait or get 503. It has no timeout for reading a
request. :class:`GuardedH11Protocol` adds, at the connection level (below the
app, where a request that never completes is visible):

- a *header* timeout: the request line and headers must arrive within
  ``header_timeout_s`` of the connection opening (or of the first byte of
  the next request on a kept-alive connection), else 408 and close; nginx's
  ``client_header_timeout`` works the same way;
- a *connection cap*: past ``max_connections`` the oldest connection still
  waiting for a request is closed to make room (so idle or half-sent
  connections cannot lock real clients out); when every connection is busy
  with a request, the new one gets 503 and is closed at once.

WebSocket upgrades the front's :class:`.upgrade.Splicer` takes (the
frontend's hot reload) leave uvicorn here: the client's socket is handed over
before uvicorn would refuse the upgrade (it runs without a WebSocket library).

The *body* timeout (``body_timeout_s`` between two reads of the body, as
nginx's ``client_body_timeout``) and the body caps are applied by the front
app while it streams the body to a worker (:mod:`.body`).
"""

from __future__ import annotations

import asyncio
import resource
import time
from dataclasses import dataclass
from typing import Any, cast

import h11
from starlette.types import Scope
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..platform_choices import AGENT_MAX_BODY_BYTES
from ..project.envfile import positive_number
from .upgrade import Splicer

#: Seconds a client has to send a request's line and headers: generous for a
#: person typing into ``nc``, far too short to hold connections open for free.
HEADER_TIMEOUT_S = 10.0
#: Seconds the front waits for the next piece of a request body before it gives
#: up with 408 (between reads, not in total, so a large upload on a slow link works).
BODY_TIMEOUT_S = 30.0
#: Connections the front keeps open at once (clients and the workers' control
#: calls). Each proxied request also holds one connection to a worker, so the cap
#: is lowered to fit half the process's file-descriptor limit (see :func:`_fitting`).
MAX_CONNECTIONS = 512
#: File descriptors kept for everything else (worker pipes, the store, logs).
_RESERVED_FDS = 64
#: The largest request body the front forwards. Agents: AGENT_MAX_BODY_BYTES;
#: cloud functions are refused by the worker past their 6 MB platform limit.
MAX_BODY_BYTES = AGENT_MAX_BODY_BYTES

#: Environment variables that override the limits for one serve session
#: (for tests, and for trying a timeout out without waiting).
HEADER_TIMEOUT_ENV = "MAKERS_STORE_SERVE_HEADER_TIMEOUT_S"
BODY_TIMEOUT_ENV = "MAKERS_STORE_SERVE_BODY_TIMEOUT_S"
MAX_CONNECTIONS_ENV = "MAKERS_STORE_SERVE_MAX_CONNECTIONS"

_TIMEOUT_RESPONSE = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s"
)
_BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\nretry-after: 1\r\ncontent-length: %d\r\n\r\n%s"
)


@dataclass(frozen=True)
class FrontLimits:
    header_timeout_s: float = HEADER_TIMEOUT_S
    body_timeout_s: float = BODY_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    max_body_bytes: int = MAX_BODY_BYTES

    @classmethod
    def from_env(cls) -> FrontLimits:
        """The defaults, each overridable by its environment variable; ValueError if bad."""
        return cls(
            header_timeout_s=positive_number(HEADER_TIMEOUT_ENV, HEADER_TIMEOUT_S),
            body_timeout_s=positive_number(BODY_TIMEOUT_ENV, BODY_TIMEOUT_S),
            max_connections=_fitting(int(positive_number(MAX_CONNECTIONS_ENV, MAX_CONNECTIONS))),
        )


def _fitting(wanted: int) -> int:
    """``wanted``, lowered so two descriptors per connection fit the soft fd limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return wanted
    return max(1, min(wanted, (soft - _RESERVED_FDS) // 2))


def _plain(template: bytes, message: str) -> bytes:
    body = message.encode("utf-8")
    return template % (len(body), body)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout and a connection cap."""

    limits: FrontLimits = FrontLimits()
    #: Who takes WebSocket upgrades (None: uvicorn serves them as plain HTTP).
    splicer: Splicer | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None
        #: When this connection began waiting for its current request (for eviction).
        self.waiting_since = time.monotonic()

    @classmethod
    def with_limits(
        cls, limits: FrontLimits, splicer: Splicer | None = None
    ) -> type[GuardedH11Protocol]:
        return type(cls.__name__, (cls,), {"limits": limits, "splicer": splicer})

    @property
    def waiting_for_request(self) -> bool:
        """No request in progress: before the first one, or between two on a kept-alive one."""
        idle = self.cycle is None or self.cycle.response_complete
        return idle and self.conn.their_state is h11.IDLE

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            transport.write(_plain(_BUSY_RESPONSE, "too many connections; try again shortly\n"))
            transport.close()
            return
        self._arm_header_timer()

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a request; False if none does."""
        waiting = [
            c
            for c in self.connections
            if c is not self and isinstance(c, GuardedH11Protocol) and c.waiting_for_request
            and not c.transport.is_closing()
        ]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.waiting_since)
        oldest.transport.close()
        self.connections.discard(oldest)  # closing: no longer counted against the cap
        return True

    def data_received(self, data: bytes) -> None:
        if self._header_timer is None and self.waiting_for_request:
            self.waiting_since = time.monotonic()  # the next request on a kept-alive connection
            self._arm_header_timer()
        super().data_received(data)
        if not self.waiting_for_request:
            self._disarm_header_timer()

    # --- WebSocket upgrades -------------------------------------------------------

    def _should_upgrade_to_ws(self) -> bool:
        return self.splicer is not None and self.splicer.takes_upgrade(cast(Scope, self.scope))

    def _unsupported_upgrade_warning(self) -> None:
        pass  # uvicorn's advice to install a WebSocket library is not serve's

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        assert self.splicer is not None
        self._disarm_header_timer()
        self.connections.discard(self)  # no longer uvicorn's to count, time out or close
        self._unset_keepalive_if_required()
        early = b""
        try:  # what the client sent after the head (nothing, for a WebSocket client)
            while isinstance(self.conn.next_event(), h11.EndOfMessage | h11.Data):
                pass
            early = self.conn.trailing_data[0]
        except h11.ProtocolError:
            pass
        self.splicer.splice(cast(Scope, self.scope), self.transport, early)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(
            self.limits.header_timeout_s, self._header_timed_out
        )

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or not self.waiting_for_request:
            return
        message = (
            f"the request headers did not arrive within {self.limits.header_timeout_s:g}s\n"
        )
        self.transport.write(_plain(_TIMEOUT_RESPONSE, message))
        self.transport.close()
