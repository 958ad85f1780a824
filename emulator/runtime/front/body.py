"""Request bodies at the front: checked against the cap, streamed, never held whole.

A declared ``Content-Length`` over the cap is refused with 413 before any of
the body is read. Otherwise the body goes to the worker piece by piece as it
arrives (uvicorn pauses reading the client past 64 KiB buffered, and the
front drains each piece to the worker before asking for the next), so the
front holds about one piece per request whatever the body's size. A chunked
body that grows past the cap, or a pause longer than the body timeout
between two pieces, ends the request (413 / 408) and cuts the worker's copy off.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from starlette.types import Receive

from ..errors import BodyRefused, ClientGone
from ..http_client import Headers
from .limits import FrontLimits


def too_large(limit: int) -> BodyRefused:
    return BodyRefused(413, f"the request body is larger than {limit} bytes, serve's limit")


def declared_length(headers: Headers, limits: FrontLimits) -> int | None:
    """The request's ``Content-Length`` (None: chunked or absent); BodyRefused if over the cap.

    uvicorn (h11) has already refused a malformed or duplicated one with 400.
    """
    for name, value in headers:
        if name == b"content-length":
            length = int(value)
            if length > limits.max_body_bytes:
                raise too_large(limits.max_body_bytes)
            return length
    return None


async def body_pieces(receive: Receive, limits: FrontLimits) -> AsyncIterator[bytes]:
    """The request body as it arrives; ClientGone or BodyRefused (408, 413) on the way."""
    size = 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), limits.body_timeout_s)
        except TimeoutError:
            raise BodyRefused(
                408, f"no part of the request body arrived for {limits.body_timeout_s:g}s"
            ) from None
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limits.max_body_bytes:
            raise too_large(limits.max_body_bytes)
        if chunk:
            yield chunk
        if not message.get("more_body", False):
            return


async def read_small_json(receive: Receive, limits: FrontLimits, cap: int) -> object:
    """A whole small JSON body (the control calls); ValueError / ClientGone / BodyRefused."""
    capped = dataclasses.replace(limits, max_body_bytes=cap)
    data = b"".join([piece async for piece in body_pieces(receive, capped)])
    return json.loads(data)


async def unless_client_leaves(
    receive: Receive, relay: Coroutine[Any, Any, None], finished: asyncio.Event
) -> bool:
    """Run ``relay`` (relaying an answer, once the request body is read) while
    watching the client: if it disconnects before ``finished`` is set, ``relay``
    is cancelled, which closes the connection behind it (a worker's run sees
    its ``signal`` set). True when it was cancelled so."""
    gone = asyncio.Event()

    async def watch() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                if not finished.is_set():
                    gone.set()
                return

    task = asyncio.create_task(relay)
    watcher = asyncio.create_task(watch())
    cancelled = False
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if gone.is_set() and not task.done():
            cancelled = True
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            if not cancelled:
                raise
    finally:
        if not task.done():
            task.cancel()
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    return cancelled
