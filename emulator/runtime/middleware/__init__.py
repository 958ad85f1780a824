"""The project's middleware (``middleware.js`` / ``.ts``), run in front of everything serve serves.

The platform runs a Makers project's middleware at the edge, before any
function, agent or page. Under serve it runs in one Node process per serve,
the host (``node/middleware_host.mjs``, beside the other Node files), which
the front starts and owns (:mod:`.host`). The front tests each request's path
against the middleware's matcher (:mod:`.matching`), so a request it does not
cover costs no round trip, and sends a covered request's head to the host;
:mod:`.step` applies the answer (a Response relayed, headers set, a path
rewritten) before the request goes on to an agent, a cloud function, the
Studio or the frontend.

A room of the front process: ``front/`` may import it; it imports no other
room (only the shared modules and ``project/``), and reaches the host over
HTTP on 127.0.0.1 in the terms of ``runtime/wire.py``, so nothing a
middleware does can take the front down.
"""
