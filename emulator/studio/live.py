"""Live updates: ``GET {prefix}/events?id=CID`` streams server-sent events.

Each event is one :class:`makers_store.StoreChange` from
:meth:`ContextStore.watch` (``event: change``, ``data: {"conversation_id",
"parts"}``); the page then fetches the fragments that changed. A comment
line every :data:`HEARTBEAT_S` keeps proxies from closing the stream and
lets the server notice a closed tab; the stream ends when the server begins
to stop (:attr:`.config.StudioConfig.stopping`). Watching starts with the
stream; the page refreshes once when the stream opens, so nothing written
between rendering the page and opening the stream is missed.
"""

from __future__ import annotations

import asyncio
import json
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncIterator

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from makers_store import StoreChange

from .config import StudioConfig

HEARTBEAT_S = 15.0
#: How often object storage (S3) is polled for a page's changes.
POLL_INTERVAL_S = 1.0


def frame(change: StoreChange) -> bytes:
    data = {"conversation_id": change.conversation_id, "parts": sorted(change.parts)}
    return f"event: change\ndata: {json.dumps(data)}\n\n".encode()


def routes(p: str, config: StudioConfig) -> list[Route]:
    store = config.store

    async def events(request: Request) -> Response:
        cid = request.query_params.get("id") or None
        watch = store.watch(cid, poll_interval=POLL_INTERVAL_S)
        await watch.start()  # before the answer starts: a bad id is a 400, not a broken stream

        async def stream() -> AsyncIterator[bytes]:
            pending: asyncio.Task[StoreChange] | None = None
            # the stream never ends by itself: it ends when the server stops,
            # else the stop would wait for every open tab
            stopping = asyncio.ensure_future(config.stopping.wait())
            try:
                yield b"event: ready\ndata: {}\n\n"
                while not stopping.done():
                    if pending is None:
                        pending = asyncio.ensure_future(anext(watch))
                    # never cancel a pending step of the watch: wait on it again
                    done, _ = await asyncio.wait(
                        {pending, stopping}, timeout=HEARTBEAT_S, return_when=FIRST_COMPLETED
                    )
                    if not done:
                        yield b": keep-alive\n\n"
                    elif pending in done:
                        change, pending = pending.result(), None
                        yield frame(change)
            finally:
                stopping.cancel()
                if pending is not None:
                    pending.cancel()
                    await asyncio.gather(pending, return_exceptions=True)
                await watch.aclose()

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers=headers,
            background=BackgroundTask(watch.aclose),  # also when the stream never started
        )

    return [Route(f"{p}/events", events)]
