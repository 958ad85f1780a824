"""The local agent runtime behind ``makers-store serve`` (spec section 5).

Layout: :mod:`.project.routes` (which file answers which URL), :mod:`.worker.loader`
(importing project code), :mod:`.worker.context` (``ctx``), :mod:`.sse` and
:mod:`.worker.responses` (what a handler returns -> HTTP), :mod:`.functions.handler_classes`
(``BaseHTTPRequestHandler`` classes), :mod:`.worker.app` / :mod:`.worker.__main__`
(one worker process), :mod:`.front.app` and :mod:`.front.supervisor` (the public port
and the pool of workers), :mod:`.front.reload`, :mod:`.server` (putting it
together), :mod:`.project.scaffold` (``makers-store init``).

Only this package's pure-Python pieces are imported here, so project code
may ``from makers_store.emulator.runtime import StreamResponse`` cheaply;
everything needing starlette or uvicorn is imported on use.
"""

from __future__ import annotations

from .errors import PlatformOnlyError
from .sse import StreamResponse
from .worker.context import AbortActiveRunResult

# not the sse() function: it would shadow the .sse module on this package
__all__ = ["AbortActiveRunResult", "PlatformOnlyError", "StreamResponse"]
