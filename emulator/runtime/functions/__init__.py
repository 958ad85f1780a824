"""Cloud functions (``cloud-functions/``), run inside a worker process as the platform runs them.

Three ways a file can answer, by its entry pattern (``runtime/project/entry_patterns.py``):
a ``BaseHTTPRequestHandler`` class (:mod:`.handler_classes`, in a thread of
its own), a Flask / Django / FastAPI app owning its folder
(:mod:`.framework_apps`), or ``async def handler(context)``
(:mod:`.context_handlers`, agent-style). All three run under the platform's
body and wall-clock limits (:mod:`.limits`) and see the store without its
LangGraph adapters (:mod:`.store`).

A room apart from ``worker/`` because it is the other half of what a worker
serves, with rules of its own (no streaming, no ``ctx.tools``, the 6 MB / 120 s
limits); the worker app (``worker/app.py``) picks the runner, and these import
from the worker room only what every handler shares (``ctx``, responses, runs).
"""
