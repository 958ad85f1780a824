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
from collections.abc import AsyncIterator

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
