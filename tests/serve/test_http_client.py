"""The front's client for its workers (emulator/runtime/http_client.py), against raw sockets.

Each test's server is a few lines of asyncio writing exact bytes, so what is
checked is what goes over the wire: the request's framing, the raw target,
one body piece per chunk, an answer that comes before the body was read,
and every way a worker can break an exchange.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from makers_store.emulator.runtime.errors import UpstreamError
from makers_store.emulator.runtime.http_client import Connection, request_json

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def server(handler: Handler) -> AsyncIterator[int]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        finally:
            writer.close()

    listening = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()
        await listening.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> tuple[list[bytes], bytes]:
    """The request's head lines and its body (de-chunked), read by hand."""
    lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")[:-2]
    fields = {line.split(b":")[0].lower(): line.split(b":", 1)[1].strip() for line in lines[1:]}
    if fields.get(b"transfer-encoding") == b"chunked":
        body = b""
        while size := int((await reader.readuntil(b"\r\n"))[:-2], 16):
            body += (await reader.readexactly(size + 2))[:-2]
        await reader.readexactly(2)
        return lines, body
    return lines, await reader.readexactly(int(fields.get(b"content-length", b"0")))


def answering(*parts: bytes, pause_s: float = 0.0) -> Handler:
    """A handler that reads the request, then writes ``parts`` (pausing between them)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        for part in parts:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(pause_s)

    return handle


async def exchange(
    port: int, method: str = "GET", target: bytes = b"/", body: list[bytes] | None = None,
    length: int | None = 0,
) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:  # fmt: skip
    connection = await Connection.open("127.0.0.1", port, within_s=5)

    async def pieces() -> AsyncIterator[bytes]:
        for piece in body or []:
            yield piece

    try:
        await connection.send_streamed(method, target, [(b"host", b"w")], pieces(), length)
        head = await connection.read_head()
        return head.status, head.headers, [piece async for piece in connection.iter_body()]
    finally:
        await connection.close()


async def test_request_framing_and_the_raw_target_reach_the_worker() -> None:
    seen: list[tuple[list[bytes], bytes]] = []

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")

    async with server(record) as port:
        assert (await exchange(port, "POST", b"/a/../b%2Fc?q=1", [b"ab", b"cd"], None))[0] == 204
        assert (await exchange(port, "PUT", b"/x", [b"abcd"], 4))[0] == 204
        assert (await exchange(port))[0] == 204
    (chunked_head, chunked_body), (sized_head, sized_body), (empty_head, empty_body) = seen
    assert chunked_head[0] == b"POST /a/../b%2Fc?q=1 HTTP/1.1"  # forwarded as the client sent it
    assert b"transfer-encoding: chunked" in chunked_head and chunked_body == b"abcd"
    assert b"content-length: 4" in sized_head and sized_body == b"abcd"
    assert b"content-length: 0" in empty_head and empty_body == b""
    assert all(b"connection: close" in head for head, _ in seen)


async def test_a_chunked_answer_comes_one_piece_per_chunk() -> None:
    frame = b"data: {}\n\n"
    # the first chunk arrives in two writes; the second and third in one
    parts = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\na\r\ndata",
        b": {}\n\n\r\n" + b"a\r\n" + frame + b"\r\n" + b"a\r\n" + frame + b"\r\n",
        b"0\r\n\r\n",
    )
    async with server(answering(*parts, pause_s=0.05)) as port:
        status, headers, pieces = await exchange(port)
    assert status == 200 and (b"content-type", b"text/event-stream") in headers
    assert pieces == [frame, frame, frame]


async def test_a_large_chunk_comes_in_pieces_of_about_64_kib() -> None:
    size = 300 * 1024
    parts = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n%x\r\n" % size,
             b"z" * size + b"\r\n0\r\n\r\n")  # fmt: skip
    async with server(answering(*parts)) as port:
        _, _, pieces = await exchange(port)
    assert b"".join(pieces) == b"z" * size
    assert len(pieces) > 1 and all(len(piece) < 2 * 64 * 1024 for piece in pieces)


@pytest.mark.parametrize(
    ("answer", "method", "body"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Run:  r1 \r\n\r\nhello", "GET", b"hello"),
        (b"HTTP/1.1 200 OK\r\n\r\nuntil the end", "GET", b"until the end"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n", "HEAD", b""),
        (b"HTTP/1.1 304 Not Modified\r\ncontent-length: 5\r\n\r\n", "GET", b""),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\ncontent-length: 1\r\n\r\nx",
         "GET", b"x"),
    ],
    ids=["content-length", "until-close", "head", "304", "after-100"],
)  # fmt: skip
async def test_body_framings(answer: bytes, method: str, body: bytes) -> None:
    async with server(answering(answer)) as port:
        status, headers, pieces = await exchange(port, method)
    assert b"".join(pieces) == body
    if method == "GET" and status == 200 and body == b"hello":
        assert headers == [(b"content-length", b"5"), (b"x-run", b"r1")]  # lowercased, stripped


async def test_an_answer_before_the_body_was_read_is_read() -> None:
    """A worker may answer (404, a limit) as soon as it has the head, while the
    body is still coming: the answer is read once the body is sent."""

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 413 Too Large\r\ncontent-length: 4\r\n\r\nbig!")
        await writer.drain()
        while await reader.read(1 << 16):  # discarded, as uvicorn discards an unread body
            pass

    block = b"b" * (1024 * 1024)
    async with server(refuse) as port:
        status, _, pieces = await exchange(port, "POST", b"/", [block] * 16, len(block) * 16)
    assert (status, pieces) == (413, [b"big!"])


async def test_what_the_body_source_raises_propagates_unchanged() -> None:
    class Gone(Exception):
        pass

    async def pieces() -> AsyncIterator[bytes]:
        yield b"a"
        raise Gone

    async with server(answering(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")) as port:
        connection = await Connection.open("127.0.0.1", port, within_s=5)
        with pytest.raises(Gone):
            await connection.send_streamed("POST", b"/", [(b"host", b"w")], pieces(), None)
        await connection.close()


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"", "closed before the response was complete"),
        (b"HTTP/1.1 200 OK\r\ncontent-le", "closed before the response was complete"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nhalf", "in the middle of the body"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nab",
         "in the middle of the body"),
        (b"SMTP ready\r\n\r\n", "not valid HTTP/1.1"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "not valid HTTP/1.1"),
    ],
    ids=["nothing", "mid-head", "mid-body", "mid-chunk", "not-http", "bad-chunk-size"],
)  # fmt: skip
async def test_a_broken_exchange_is_an_upstream_error(answer: bytes, message: str) -> None:
    async with server(answering(answer)) as port:
        with pytest.raises(UpstreamError, match=message):
            await exchange(port)


async def test_connecting_to_nothing_is_an_upstream_error() -> None:
    async with server(answering()) as port:
        pass  # closed: nothing listens there now
    with pytest.raises(UpstreamError, match="cannot connect"):
        await Connection.open("127.0.0.1", port, within_s=5)


async def test_request_json() -> None:
    received: list[bytes] = []

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines, body = await read_request(reader)
        received.extend(lines)
        answer = json.dumps({"got": json.loads(body)}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer))

    async with server(echo) as port:
        status, data = await request_json(
            "127.0.0.1", port, "POST", "/internal/abort",
            headers=[(b"x-token", b"t")], payload={"a": 1},
        )  # fmt: skip
    assert (status, data) == (200, {"got": {"a": 1}})
    assert received[0] == b"POST /internal/abort HTTP/1.1"
    assert {b"x-token: t", b"content-type: application/json", b"host: 127.0.0.1:%d" % port} <= set(
        received
    )


async def test_request_json_failures() -> None:
    async with server(answering(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nnot")) as port:
        with pytest.raises(UpstreamError, match="not JSON"):
            await request_json("127.0.0.1", port, "GET", "/")

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers; ends when the client gives up and closes

    async with server(silent) as port:
        with pytest.raises(UpstreamError, match=r"within 0\.2s"):
            await request_json("127.0.0.1", port, "GET", "/", within_s=0.2)
