"""Turn what an agent handler returns into an HTTP response (spec section 5).

==========================================  =====================================
handler returns                             response
==========================================  =====================================
dict / list (or anything JSON-encodable)    200, JSON
str                                         200, text/plain
bytes                                       200, application/octet-stream
None                                        204, no body
``(body, status)``, ``(body, status, h)``   body as above, that status (and headers)
``{"status_code": n, "body": b, "headers": h}``   the same, as a dict
async generator, ``StreamResponse``         200, server-sent events, each frame
                                            flushed as it is produced
a starlette ``Response``                    sent unchanged
==========================================  =====================================
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterable, Callable, Iterable, Mapping
from typing import Any

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..errors import ResultError
from ..sse import SSE_HEADERS, StreamResponse, dumps, sse, to_frame
from .runs import Run

logger = logging.getLogger("makers_store.serve")

_ENVELOPE_KEYS = {"status_code", "body", "headers"}


#: on_end(status): the run is over; status is "ok", "error", "interrupted" or the
#: run's stop reason ("aborted", "disconnected", "timeout").
OnEnd = Callable[[str], None]


def is_graph_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is LangGraph's ``GraphInterrupt`` (human-in-the-loop, not an error).

    Checked by name along the class's bases, so langgraph is never imported here.
    """
    return any(
        cls.__name__ == "GraphInterrupt" and cls.__module__.startswith("langgraph")
        for cls in type(exc).__mro__
    )


def json_response(
    value: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    try:
        text = dumps(value)
    except (TypeError, ValueError) as exc:
        raise ResultError(f"the handler's result cannot be encoded as JSON: {exc}") from exc
    merged = {"content-type": "application/json", **_lower(headers)}
    return Response(text.encode("utf-8"), status_code=status, headers=merged)


def error_response(status: int, message: str, **extra: Any) -> Response:
    return json_response({"error": message, **extra}, status)


def _lower(headers: Mapping[str, str] | None) -> dict[str, str]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise ResultError(f"response headers must be a dict, not {type(headers).__name__}")
    return {str(key).lower(): str(value) for key, value in headers.items()}


def _status(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise ResultError(f"a response status must be an int from 100 to 599, not {value!r}")
    return value


def to_response(result: Any, run: Run, on_stream_end: OnEnd) -> Response:
    """The response for ``result`` (see the module docstring)."""
    if isinstance(result, tuple):
        if len(result) not in (2, 3):
            raise ResultError(
                "return (body, status) or (body, status, headers), "
                f"not a tuple of {len(result)} items"
            )
        headers = result[2] if len(result) == 3 else None
        return _body(result[0], _status(result[1]), headers, run, on_stream_end)
    if isinstance(result, dict) and "status_code" in result:
        unknown = set(result) - _ENVELOPE_KEYS
        if unknown:
            raise ResultError(
                "a dict with 'status_code' is a response envelope and may only hold "
                f"status_code, body and headers; it also has {sorted(unknown)}"
            )
        return _body(
            result.get("body"), _status(result["status_code"]), result.get("headers"), run,
            on_stream_end,
        )
    return _body(result, 200, None, run, on_stream_end)


def _body(
    body: Any,
    status: int,
    headers: Mapping[str, str] | None,
    run: Run,
    on_stream_end: OnEnd,
) -> Response:
    extra = _lower(headers)
    if isinstance(body, Response):
        body.status_code = status if status != 200 else body.status_code
        for key, value in extra.items():
            body.headers[key] = value
        return body
    if isinstance(body, StreamResponse):
        merged = {**_lower(body.headers), **extra}
        return SSEResponse(body.source, body.status if status == 200 else status, merged, run,
                           on_stream_end)
    if isinstance(body, AsyncIterable):
        return SSEResponse(body, status, extra, run, on_stream_end)
    if body is None:
        return Response(None, status_code=204 if status == 200 else status, headers=extra)
    if isinstance(body, str):
        return Response(
            body.encode("utf-8"),
            status_code=status,
            headers={"content-type": "text/plain; charset=utf-8", **extra},
        )
    if isinstance(body, bytes | bytearray | memoryview):
        return Response(
            bytes(body),
            status_code=status,
            headers={"content-type": "application/octet-stream", **extra},
        )
    return json_response(body, status, extra)


async def _iterate(source: AsyncIterable[Any] | Iterable[Any]) -> AsyncGenerator[Any, None]:
    if isinstance(source, AsyncIterable):
        async for item in source:
            yield item
    else:
        for item in source:
            yield item


class SSEResponse(Response):
    """Streams frames from a handler, flushing each; stops the handler if the client left."""

    def __init__(
        self,
        source: AsyncIterable[Any] | Iterable[Any],
        status: int,
        headers: Mapping[str, str],
        run: Run,
        on_end: OnEnd,
    ) -> None:
        self.source = source
        self.status_code = status
        self.background = None
        self.run = run
        self.on_end = on_end
        self.init_headers({**SSE_HEADERS, **headers})

    async def _drive(self, send: Send) -> str:
        """Send every frame; the run's status at the end."""
        iterator = _iterate(self.source)
        status = "ok"
        try:
            async for item in iterator:
                frame = to_frame(item)
                await send({"type": "http.response.body", "body": frame, "more_body": True})
        except Exception as exc:
            if is_graph_interrupt(exc):
                logger.info("run %s: GraphInterrupt; the stream ends (not an error)",
                            self.run.run_id)
                return "interrupted"
            logger.exception("run %s: the stream raised", self.run.run_id)
            frame = sse({"error": f"{type(exc).__name__}: {exc}"}, event="error")
            await send({"type": "http.response.body", "body": frame, "more_body": True})
            status = "error"
        finally:
            await iterator.aclose()
            close = getattr(self.source, "aclose", None)
            if close is not None:
                await close()
        return status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        driver = asyncio.create_task(self._drive(send))
        stop = asyncio.create_task(self.run.must_stop.wait())
        status = "error"
        try:
            await asyncio.wait({driver, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not driver.done():
                logger.warning(
                    "run %s: %s and still streaming after the grace period; cancelling it",
                    self.run.run_id,
                    self.run.reason,
                )
                driver.cancel()
            await asyncio.gather(driver, return_exceptions=True)
            if not driver.cancelled() and driver.exception() is None:
                status = driver.result()
            if (self.run.reason is not None and status == "ok") or driver.cancelled():
                status = self.run.reason or "error"
        finally:
            stop.cancel()
            await asyncio.gather(stop, return_exceptions=True)
            self.on_end(status)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
