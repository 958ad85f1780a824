"""The store RPC: a Node worker's ``context.store`` calls the one Python store.

A Node worker has no store of its own. ``node/store.mjs`` sends each call
over a Unix socket to :mod:`.server` (newline-delimited JSON, pipelined),
which runs it on the Python worker's :class:`~makers_store.ContextStore`, so
Python agents, Node agents and the CLI see the same data, errors and limits.
The methods by Node name: :mod:`.methods` (the generic API and ``state``,
their arguments derived from ``store/api/conversation_store.py``'s signatures), :mod:`.adapters`
(Claude, OpenAI sessions) and :mod:`.langgraph` (checkpointer and store, with
:mod:`.checkpoints` relaying LangGraph.js's serialized checkpoints);
:mod:`.values` carries values across (``$bind``, ``$nonjson``, Node's names).
``node/handlers.py`` adds the methods of the rest of a Node ``context``
(kv, tools, tracer, ``abortActiveRun``) on the same socket.

A room apart from ``node/`` because it is the store's side of the socket and
knows nothing of processes: it is served and tested without any Node worker.
"""

from .server import StoreRpcServer, handlers_for, start_store_rpc
from .values import Handler

__all__ = ["Handler", "StoreRpcServer", "handlers_for", "start_store_rpc"]
