"""A minimal HTTP/1.1 client over asyncio streams, for talking to our own workers.

The front uses it to forward requests to worker processes and stream their
answers back; workers use it to reach the front's control endpoint. One
connection per request (``Connection: close``); bodies framed by
``Content-Length``, chunked encoding, or the end of the connection.
Only the standard library: ``makers-store[serve]`` needs nothing more.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

Headers = list[tuple[bytes, bytes]]
_READ = 64 * 1024
_LIMIT = 1024 * 1024


class UpstreamError(Exception):
    """The other side broke the HTTP exchange (closed early, sent garbage)."""


@dataclass
class ResponseHead:
    status: int
    headers: Headers

    def get(self, name: bytes) -> bytes | None:
        for key, value in self.headers:
            if key == name:
                return value
        return None


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

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
        lines = [method.encode("ascii") + b" " + target + b" HTTP/1.1"]
        lines += [name + b": " + value for name, value in headers]
        lines += [b"content-length: " + str(len(body)).encode(), b"connection: close"]
        try:
            self.writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
            await self.writer.drain()
        except OSError as exc:
            raise UpstreamError(f"sending the request failed: {exc}") from exc

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
        chunked = length is None
        framing = (
            b"transfer-encoding: chunked" if length is None else b"content-length: %d" % length
        )
        lines = [method.encode("ascii") + b" " + target + b" HTTP/1.1"]
        lines += [name + b": " + value for name, value in headers]
        lines += [framing, b"connection: close"]
        try:
            self.writer.write(b"\r\n".join(lines) + b"\r\n\r\n")
            await self.writer.drain()
        except OSError as exc:
            raise UpstreamError(f"sending the request failed: {exc}") from exc
        try:
            async for piece in pieces:
                if chunked:
                    self.writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    self.writer.write(piece)
                await self.writer.drain()
            if chunked:
                self.writer.write(b"0\r\n\r\n")
            await self.writer.drain()
        except OSError:
            return  # the worker stopped reading: its answer (or its absence) tells

    async def _line(self) -> bytes:
        try:
            line = await self.reader.readuntil(b"\r\n")
        except asyncio.IncompleteReadError as exc:
            raise UpstreamError("the connection closed before the response was complete") from exc
        except (asyncio.LimitOverrunError, OSError) as exc:
            raise UpstreamError(f"reading the response failed: {exc}") from exc
        return line[:-2]

    async def read_head(self) -> ResponseHead:
        status_line = await self._line()
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise UpstreamError(f"bad status line {status_line[:80]!r}")
        headers: Headers = []
        while True:
            line = await self._line()
            if not line:
                break
            name, sep, value = line.partition(b":")
            if not sep:
                raise UpstreamError(f"bad header line {line[:80]!r}")
            headers.append((name.strip().lower(), value.strip()))
        return ResponseHead(int(parts[1]), headers)

    async def _exactly(self, size: int) -> bytes:
        try:
            return await self.reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise UpstreamError("the connection closed in the middle of the body") from exc
        except OSError as exc:
            raise UpstreamError(f"reading the body failed: {exc}") from exc

    async def iter_body(self, head: ResponseHead, *, method: str) -> AsyncIterator[bytes]:
        """The body's pieces as they arrive (one per chunk when chunked)."""
        if method == "HEAD" or head.status in (204, 304) or head.status < 200:
            return
        encoding = (head.get(b"transfer-encoding") or b"").lower()
        length = head.get(b"content-length")
        if b"chunked" in encoding:
            while True:
                size_line = (await self._line()).split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError as exc:
                    raise UpstreamError(f"bad chunk size {size_line[:20]!r}") from exc
                if size == 0:
                    while await self._line():  # trailers
                        pass
                    return
                while size > 0:
                    piece = await self._exactly(min(size, _READ))
                    size -= len(piece)
                    yield piece
                if await self._exactly(2) != b"\r\n":
                    raise UpstreamError("bad chunk terminator")
        elif length is not None:
            remaining = int(length)
            while remaining > 0:
                piece = await self._exactly(min(remaining, _READ))
                remaining -= len(piece)
                yield piece
        else:
            while True:
                try:
                    piece = await self.reader.read(_READ)
                except OSError as exc:
                    raise UpstreamError(f"reading the body failed: {exc}") from exc
                if not piece:
                    return
                yield piece

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
            data = b"".join([piece async for piece in connection.iter_body(head, method=method)])
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
