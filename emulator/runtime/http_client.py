"""The front's HTTP/1.1 client for its own workers: h11 for the protocol, asyncio for the bytes.

The front forwards each request to a worker process and streams the answer
back; the supervisor makes the small JSON control calls (abort fan-out) to
workers. h11 (the protocol library uvicorn itself runs on) writes the
request's framing (``Content-Length``, or chunked when the length is not
known), parses and checks the worker's answer, and decodes its body framing
(``Content-Length``, chunked, or the end of the connection); this module only
moves the bytes over asyncio streams and maps failures to
:class:`UpstreamError`.

Why h11 and not httpx (which the ``serve`` extra also installs): the front
needs the three steps of an exchange apart, as they happen, and httpx joins
them into one call. Connecting is separate because a worker that refuses the
connection has been sent nothing, so another worker may take the request;
sending the body is separate because the front answers a client that
disconnects or breaks a limit while it is still sending (ClientGone,
BodyRefused), and only then starts watching for the client's disconnect while
it waits for the answer. httpx would also normalise the request target
(``/a/../b`` becomes ``/b``), and the front forwards the client's raw path
unchanged.

One connection per request (``Connection: close``); closing it is how the
front tells a worker that its client has gone.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

import h11

from .errors import UpstreamError

Headers = list[tuple[bytes, bytes]]
#: Bytes read from the socket at a time, and the largest body piece yielded.
_READ = 64 * 1024
#: The largest response head accepted (status line and headers).
_LIMIT = 1024 * 1024


@dataclass
class ResponseHead:
    status: int
    #: Names lowercased (as h11 gives them), values as sent.
    headers: Headers

    def get(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class Connection:
    """One request and its answer over one connection: send, then read the head, then the body."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self._protocol = h11.Connection(h11.CLIENT, max_incomplete_event_size=_LIMIT)
        self._chunked_answer = False

    @classmethod
    async def open(cls, host: str, port: int, *, within_s: float) -> Connection:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=_LIMIT), within_s
            )
        except (OSError, TimeoutError) as exc:
            raise UpstreamError(f"cannot connect to {host}:{port}: {exc}") from exc
        return cls(reader, writer)

    async def send_request(
        self, method: str, target: bytes, headers: Sequence[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """The request with a body known in full (framed by ``Content-Length``)."""

        async def whole() -> AsyncIterator[bytes]:
            if body:
                yield body

        await self.send_streamed(method, target, headers, whole(), len(body))

    async def send_streamed(
        self,
        method: str,
        target: bytes,
        headers: Sequence[tuple[bytes, bytes]],
        pieces: AsyncIterator[bytes],
        length: int | None,
    ) -> None:
        """The request with its body sent piece by piece as ``pieces`` yields it.

        Framed by ``Content-Length`` when ``length`` is known, chunked otherwise.
        Each piece is drained before the next is read, so only about one piece
        is held in memory. What ``pieces`` raises propagates unchanged.

        A worker may answer before it has read the body (a 404, a limit) and
        close the connection, so a failed write of the *body* is not an error
        here: the answer is read next, and only a missing answer fails.
        """
        framing = (
            (b"transfer-encoding", b"chunked")
            if length is None
            else (b"content-length", str(length).encode("ascii"))
        )
        request = h11.Request(
            method=method,
            target=target,
            headers=[*headers, framing, (b"connection", b"close")],
        )
        try:
            await self._write(self._protocol.send(request))
        except h11.LocalProtocolError as exc:
            raise UpstreamError(f"the request cannot be sent: {exc}") from exc
        except OSError as exc:
            raise UpstreamError(f"sending the request failed: {exc}") from exc
        try:
            async for piece in pieces:
                # the piece itself is written, framed, not copied into one buffer first
                await self._write_parts(self._protocol.send_with_data_passthrough(h11.Data(piece)))
            await self._write(self._protocol.send(h11.EndOfMessage()))
        except h11.LocalProtocolError as exc:  # more or less body than ``length`` said
            raise UpstreamError(f"the request body does not match its framing: {exc}") from exc
        except OSError:
            return  # the worker stopped reading: its answer (or its absence) tells

    async def _write(self, data: bytes | None) -> None:
        if data:
            self.writer.write(data)
        await self.writer.drain()

    async def _write_parts(self, parts: list[bytes] | None) -> None:
        if parts:
            self.writer.writelines(parts)
        await self.writer.drain()

    async def _next_event(self, closed_early: str) -> h11.Event:
        """The worker's next protocol event, reading from the socket as h11 needs.

        ``closed_early`` is the error's text if the worker closes the
        connection before the event is complete.
        """
        while True:
            try:
                event = self._protocol.next_event()
            except h11.RemoteProtocolError as exc:
                if self._protocol.their_state is h11.ERROR and self.reader.at_eof():
                    raise UpstreamError(closed_early) from exc
                raise UpstreamError(f"the response is not valid HTTP/1.1: {exc}") from exc
            if isinstance(event, h11.Event):
                return event
            if event is h11.PAUSED:  # only after a complete answer, which ends the reading
                raise UpstreamError("the worker sent more than one response")
            try:
                data = await self.reader.read(_READ)
            except OSError as exc:
                raise UpstreamError(f"reading the response failed: {exc}") from exc
            self._protocol.receive_data(data)  # b"": the worker closed the connection

    async def read_head(self) -> ResponseHead:
        """The status and headers of the worker's answer (1xx interim answers skipped)."""
        closed_early = "the connection closed before the response was complete"
        while True:
            event = await self._next_event(closed_early)
            if isinstance(event, h11.Response):
                headers = list(event.headers)
                self._chunked_answer = any(
                    name == b"transfer-encoding" and b"chunked" in value.lower()
                    for name, value in headers
                )
                return ResponseHead(event.status_code, headers)
            if not isinstance(event, h11.InformationalResponse):
                raise UpstreamError(closed_early)

    async def iter_body(self) -> AsyncIterator[bytes]:
        """The body of the answer :meth:`read_head` began, in pieces as they
        arrive: one per chunk when chunked (a chunk over 64 KiB in pieces of
        about that size), else as read. Empty for a HEAD request and for 1xx,
        204 and 304 answers: h11 knows from the request and the head.
        """
        closed_early = "the connection closed in the middle of the body"
        pending: list[bytes] = []
        held = 0
        while True:
            event = await self._next_event(closed_early)
            if isinstance(event, h11.Data):
                pending.append(event.data)
                held += len(event.data)
                if event.chunk_end or not self._chunked_answer or held >= _READ:
                    yield b"".join(pending)
                    pending, held = [], 0
            elif isinstance(event, h11.EndOfMessage):
                if pending:
                    yield b"".join(pending)
                return
            else:
                raise UpstreamError(closed_early)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except OSError:
            pass


async def request_json(
    host: str,
    port: int,
    method: str,
    target: str,
    *,
    headers: Sequence[tuple[bytes, bytes]] = (),
    payload: Any = None,
    within_s: float = 10.0,
) -> tuple[int, Any]:
    """One small JSON request; (status, decoded JSON body or None)."""

    async def exchange() -> tuple[int, Any]:
        connection = await Connection.open(host, port, within_s=within_s)
        try:
            body = b"" if payload is None else json.dumps(payload).encode("utf-8")
            all_headers = [*headers, (b"host", f"{host}:{port}".encode())]
            if payload is not None:
                all_headers.append((b"content-type", b"application/json"))
            await connection.send_request(method, target.encode("ascii"), all_headers, body)
            head = await connection.read_head()
            data = b"".join([piece async for piece in connection.iter_body()])
        finally:
            await connection.close()
        try:
            return head.status, json.loads(data) if data else None
        except ValueError as exc:
            raise UpstreamError(f"the response is not JSON: {data[:80]!r}") from exc

    try:
        return await asyncio.wait_for(exchange(), within_s)
    except TimeoutError as exc:
        raise UpstreamError(f"no answer from {host}:{port} within {within_s:g}s") from exc
