"""WebSocket upgrades for the frontend, spliced as raw bytes.

A dev server's hot reload (Vite's socket, Next's ``/_next/webpack-hmr``)
is a WebSocket through serve's port. The front does not speak WebSocket
(uvicorn runs with ``ws="none"``): :class:`.limits.GuardedH11Protocol` hands
an upgrade a :class:`Splicer` takes to it, with the client's socket, before
uvicorn looks at it further. The request goes to the dev server as it came
(headers adjusted as for any request to the frontend), and from then on the
two sockets are joined byte for byte: the dev server's ``101`` answer,
subprotocols, extensions and frames pass untouched, and either side closing
closes the other. Back-pressure holds: a side that cannot keep up pauses the
reading of the other.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from starlette.types import Scope


class Splicer(Protocol):
    """What the front's protocol asks about an upgrade, and hands it to."""

    def takes_upgrade(self, scope: Scope) -> bool:
        """Whether this WebSocket upgrade request is spliced (else uvicorn serves it as HTTP)."""
        ...

    def splice(self, scope: Scope, transport: asyncio.Transport, early: bytes) -> None:
        """Take over ``transport`` (the client's); ``early`` is what the client
        sent after the request's head."""
        ...


class Pipe(asyncio.Protocol):
    """One side of a splice: what it receives is written to its peer."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.peer: Pipe | None = None
        self._held: list[bytes] = []
        self._closed = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def join(self, peer: Pipe) -> None:
        self.peer = peer
        peer.peer = self
        for pipe in (self, peer):
            held, pipe._held = pipe._held, []
            for data in held:
                pipe.data_received(data)

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self._held.append(data)  # before the other side is connected
        elif not peer.transport.is_closing():
            peer.transport.write(data)

    def eof_received(self) -> bool | None:
        return False  # the transport closes; connection_lost closes the peer

    def pause_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed.set()
        peer = self.peer
        if peer is not None and peer.transport is not None and not peer.transport.is_closing():
            # what was written to the peer is still sent before it closes
            peer.transport.close()

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    async def closed(self) -> None:
        await self._closed.wait()


class Splices:
    """The open splices, so serve's stop closes them (uvicorn no longer counts them)."""

    def __init__(self) -> None:
        self._open: set[Pipe] = set()

    def client_side(self, transport: asyncio.Transport) -> Pipe:
        """Make ``transport`` (the client's) one side of a splice; reading paused."""
        pipe = Pipe()
        transport.pause_reading()
        transport.set_protocol(pipe)
        pipe.connection_made(transport)
        self._open.add(pipe)
        return pipe

    async def join(self, client: Pipe, host: str, port: int, head: bytes) -> None:
        """Connect to ``host:port``, send ``head``, join it with ``client``;
        OSError when the connection cannot be made (``client`` is left open)."""
        loop = asyncio.get_running_loop()
        transport, upstream = await loop.create_connection(Pipe, host, port)
        self._open.add(upstream)
        transport.write(head)
        client.join(upstream)
        if client.transport is not None:
            client.transport.resume_reading()
        if client.transport is None or client.transport.is_closing():
            upstream.close()
        await asyncio.wait(
            {asyncio.ensure_future(client.closed()), asyncio.ensure_future(upstream.closed())},
            return_when=asyncio.ALL_COMPLETED,
        )
        self._open.discard(client)
        self._open.discard(upstream)

    def refuse(self, client: Pipe, status: bytes) -> None:
        """Answer ``status`` (``b"502 Bad Gateway"``) and close."""
        if client.transport is not None and not client.transport.is_closing():
            client.transport.write(
                b"HTTP/1.1 " + status + b"\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
        client.close()
        self._open.discard(client)

    def close_all(self) -> None:
        for pipe in list(self._open):
            pipe.close()
        self._open.clear()
