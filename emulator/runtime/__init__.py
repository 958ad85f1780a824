"""The local agent runtime behind ``makers-store serve`` (spec section 5): a map.

``serve`` is a front process (the public port) and worker processes behind it
(one per instance, each with a Node process when the project has Node
routes). The code is in rooms by process, or by concept where a concept
spans processes; a folder is an import path.

==============  ================================================================
room            what is in it
==============  ================================================================
``server.py``   ``makers-store serve``: checks the options, starts the front
                and its workers, stops them (the one place the rooms meet)
``front/``      the front process: the app that hands each request to a
                worker, body streaming and limits, headers, the abort
                control listener, the worker pool (``supervisor``), --reload,
                and the project's frontend (its dev server, proxied)
``middleware/`` the project's ``middleware.js`` / ``.ts``, run first on the
                front's port: its Node host process, the matcher test, the
                step that applies its answer (the host's .mjs is in ``node/``)
``worker/``     one worker process (``python -m ...runtime.worker``): its app,
                agent runs and aborts, ``ctx`` with kv and tracing, request
                bodies, responses, the loader, ``traces.jsonl``
``functions/``  cloud functions, served by a worker: handler classes,
                framework apps, context handlers, their limits, their store
``node/``       the Node bridge: finding Node and tsx (in the front), the Node
                process of an instance, proxying runs to it, the calls its
                ``context`` makes back; and the Node files themselves (.mjs)
``store_rpc/``  the store's side of the Node socket: the generic methods,
                the adapters, LangGraph, and the values on the wire
``tools/``      ``ctx.tools`` and ``ctx.sandbox``: the workspace, the tools,
                their framework shapes
``project/``    a project on disk, read without running it (routes, entry
                patterns, edgeone.json, .env) or written (``init``)
``shim/``       the ``_platform`` package served code imports (package data)
==============  ================================================================

Shared by the rooms, at this top: :mod:`.errors` (every exception the runtime
defines), :mod:`.wire` (what the front, workers and Node workers say to each
other: headers, paths, run ids, settings), :mod:`.platform_choices` (every
choice made where the platform's behaviour is unknown), :mod:`.sse` (the
event-stream format: workers stream it, the front ends a broken stream with
it, project code imports :class:`StreamResponse`), :mod:`.http_client` (the
front's client for its workers, and a worker's for its Node worker),
:mod:`.listening` and :mod:`.uvicorn_server` (binding and serving a port, for
``serve`` and ``studio`` alike), :mod:`.log` (every line they print made safe
to show, with :mod:`makers_store.text`, the CLI's own). These import no room.

Which room imports which: every room may import the shared modules and
``project/``. ``front/`` imports no other room but ``middleware/``, a room of
the front process that imports no other room itself: the front reaches a
worker, and the middleware's host, only over HTTP in the terms of
:mod:`.wire`, so it never imports project code and nothing a handler or a
middleware does can take it down. ``worker/app.py`` is where a worker
takes in ``functions/`` and ``node/``, which build on the worker's ``ctx``,
responses and runs; ``node/`` serves ``store_rpc/`` and ``tools/``, which
import no room. No module imports another that imports it back
(``tests/test_store_imports.py`` checks the whole project).

Only pure-Python pieces are imported here, so project code may ``from
makers_store.emulator.runtime import StreamResponse`` cheaply; everything
needing starlette or uvicorn is imported on use.
"""

from __future__ import annotations

from .errors import PlatformOnlyError
from .sse import StreamResponse
from .worker.context import AbortActiveRunResult

# not the sse() function: it would shadow the .sse module on this package
__all__ = ["AbortActiveRunResult", "PlatformOnlyError", "StreamResponse"]
