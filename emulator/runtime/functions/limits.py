"""The platform's cloud-function limits, enforced by ``makers-store serve``.

Cloud functions get a 6 MB request body and 120 s of wall clock
(platform-runtime.md §6). A larger body is refused with 413 before the
function runs; a function still running at the limit gets 504 (or, if it had
already started a response, that response is cut off). Both limits name
themselves in the error so a surprised caller learns which rule it met.
``serve --no-function-limits`` turns both off.

Python cannot kill a thread, so a handler-mode function (a thread) or a WSGI
app that outlives its 504 keeps running until it returns; whatever it writes
after that fails with ``BrokenPipeError``, as a write to a closed socket
would. ASGI apps are cancelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from ..platform_choices import FUNCTION_MAX_BODY_BYTES
from ..project.envfile import positive_number
from ..worker.responses import error_response

#: The platform's wall-clock limit per cloud-function request.
WALL_CLOCK_S = 120.0
#: Lowers (or raises) WALL_CLOCK_S for this serve session, in seconds: for tests
#: and for trying the timeout out without waiting two minutes.
WALL_CLOCK_ENV = "MAKERS_STORE_FUNCTION_TIMEOUT_S"
TOO_LARGE_STATUS = 413
TIMEOUT_STATUS = 504


@dataclass(frozen=True)
class FunctionLimits:
    """The limits one worker applies (None: no limit)."""

    max_body_bytes: int | None
    wall_clock_s: float | None

    @classmethod
    def for_serve(cls, enabled: bool) -> FunctionLimits:
        """The platform's limits, or none at all under ``--no-function-limits``."""
        if not enabled:
            return cls(None, None)
        return cls(FUNCTION_MAX_BODY_BYTES, positive_number(WALL_CLOCK_ENV, WALL_CLOCK_S))


def _too_large(limit: int) -> Response:
    return error_response(
        TOO_LARGE_STATUS,
        f"the request body is larger than the platform's cloud-function limit of 6 MB "
        f"({limit} bytes); `makers-store serve --no-function-limits` lifts it locally",
        limit_bytes=limit,
    )


def timed_out(label: str, limits: FunctionLimits) -> Response:
    """The 504 a cloud function gets when it is still running at the wall-clock limit."""
    seconds = limits.wall_clock_s
    return error_response(
        TIMEOUT_STATUS,
        f"{label} ran longer than the platform's cloud-function wall-clock limit of "
        f"{seconds:g} s (the platform allows {WALL_CLOCK_S:g} s); "
        "`makers-store serve --no-function-limits` lifts it locally",
        limit_seconds=seconds,
    )


async def read_body(request: Request, limits: FunctionLimits) -> bytes | Response:
    """The request body, or the 413 response when it is over the limit.

    Past the limit the rest is read and dropped, not kept: the front is still
    sending it, and a worker that answered mid-upload would break that
    connection (the client would get 502 instead of the 413).
    """
    limit = limits.max_body_bytes
    if limit is None:
        return await request.body()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
    return _too_large(limit) if size > limit else b"".join(chunks)
