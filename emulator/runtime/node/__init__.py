"""The Node bridge: Node routes of a project, served by a Node process under each Python worker.

Python side: :mod:`.setup` finds Node and installs tsx once, in the front,
before any worker starts; in a worker, :mod:`.instance` is the Node half of
the instance, :mod:`.worker` starts, watches and stops the Node process and
serves it the store RPC (``runtime/store_rpc/``), :mod:`.proxy` hands it each
request of a Node route (a run of the Python worker like any other), and
:mod:`.handlers` answers the Node ``context``'s calls for ``kv``, ``tools``,
``tracer`` and ``abortActiveRun`` on the Python ``ctx`` of the run.

Node side, in this folder as package data: ``worker.mjs`` (the Node worker,
which ``worker.py`` starts), ``context.mjs`` (the Node ``context``),
``store.mjs`` with ``store_client.mjs`` and ``store_convert.mjs`` (the
``context.store`` client, typed by ``store.d.ts``), ``respond.mjs``,
``sse.mjs``, ``tracer.mjs``, ``tools.mjs``, ``sync_rpc*.mjs``, and the
framework adapters' clients (``*.cjs``). The two halves share one folder so
that what speaks to what sits side by side; they agree on the names in
``runtime/wire.py``.
"""
