"""The front process: the one public port, and the worker processes behind it.

:mod:`.app` takes each request and hands it to a worker: it picks the run id
and the instance (:mod:`.supervisor`, the pool of workers: spreading,
sticky conversations, recycling, replacing crashed ones), streams the body
under the caps (:mod:`.body`), passes the headers on (:mod:`.headers`) and
relays the answer. :mod:`.limits` guards connections below the app (header
timeout, connection cap); :mod:`.control` is the listener behind
``abort_active_run`` across instances; :mod:`.reload` watches the project for
``--reload``. What no agent or cloud function takes goes to the project's
frontend (:mod:`.frontend`): its dev server (:mod:`.devserver`, run under
:mod:`.guard`, a tiny process that stops the dev server's whole process group
whenever serve stops, even killed), WebSocket upgrades spliced to it as raw
bytes (:mod:`.upgrade`), or a built site's files. ``runtime/server.py`` puts
these together when serve starts.
A project's middleware runs before all of it, in the ``middleware/`` room
(its own Node process; the app calls its step first).

Nothing here imports project code (the frontend's dev server is another
process, reached over HTTP like the workers) or a worker's modules: the front reaches a
worker only over HTTP, in the terms of ``runtime/wire.py``, so nothing a
handler does can take the front down.
"""
