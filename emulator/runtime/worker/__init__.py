"""One worker process: a project's agents and cloud functions, and the ``ctx`` they get.

:mod:`.__main__` is the process (``python -m makers_store.emulator.runtime.worker``,
started by the front's pool) and :mod:`.app` the ASGI app it serves: each
request is routed to an agent, a cloud function (``runtime/functions/``) or a
Node route (``runtime/node/``). An agent request is one run
(:mod:`.agent_run`), registered in :mod:`.runs` so an abort can reach it
(:mod:`.aborts` takes ``abort_active_run`` to the other instances through the
front). What the handler gets: ``ctx`` (:mod:`.context`, with :mod:`.kv`,
:mod:`.tracing` and ``runtime/tools/``), the request body as
:mod:`.request_body` decides it; what it returns becomes HTTP in
:mod:`.responses`. :mod:`.loader` imports project code, :mod:`.trace_log`
writes ``traces.jsonl`` (which the Studio reads).

Everything that runs project code runs here, in a process the front can
replace, never in the front.
"""
