"""Every choice ``makers-store serve`` makes where the platform's behaviour is UNKNOWN.

The facts file (``spec/platform-runtime.md``) marks these points UNKNOWN or
CONFLICT. Each constant below is the one place the choice is made; change
it here and the whole runtime follows. docs/serve-python.md lists them.
"""

from __future__ import annotations

#: ``agents.framework`` when edgeone.json has none. CONFLICT in the sources:
#: an old doc (2026-06-09) falls back to ``basic`` inside the toolkit, the
#: newer SKILL.md (2026-08-14) says ``claude-agent-sdk``; PAS ships no
#: edgeone.json and reads ``ctx.tools.all()`` generically. We pass None
#: ("not set") so ``ctx.tools`` keeps its generic shape, which works for
#: code written against either reading.
FRAMEWORK_WHEN_ABSENT: str | None = None

#: ``agents.framework`` values the platform documents (anything else: a warning,
#: then treated as absent, as the console does with a generic icon).
KNOWN_FRAMEWORKS = ("claude-agent-sdk", "openai-agents-sdk", "langgraph", "crewai", "deepagents")

#: After ``signal`` is set (abort, client disconnect, ``agents.timeout``) a run has
#: this long to finish on its own (save a partial answer, send a last frame)
#: before it is cancelled. The platform's grace, if any, is UNKNOWN. 3 s: the
#: TypeScript Claude Agent SDK ends its query about 2 s after its abort fires
#: (it waits that long for the CLI to exit), and a template that breaks out of
#: its loop then still sends its last frames.
STOP_GRACE_S = 3.0
TIMEOUT_GRACE_S = 5.0

#: Status of a non-streaming run cancelled after an abort or a disconnect
#: (nginx's "client closed request"); UNKNOWN on the platform.
ABORTED_STATUS = 499
#: Status of a non-streaming run cancelled at ``agents.timeout``; UNKNOWN on the platform.
TIMEOUT_STATUS = 504

#: A non-streaming handler that raises LangGraph's ``GraphInterrupt`` answers
#: 200 with ``{"interrupted": true, "interrupts": [...], "run_id": ...}``. The
#: platform only says it is "not an error"; the response shape is UNKNOWN.
INTERRUPT_STATUS = 200

# abort_active_run names the latest aborted run in ``run_id`` (the platform keeps
# one active run per conversation; we may have several and abort them all, except
# the caller's own run) - see runs.latest.
#: How long a worker's ``abort_active_run`` waits for the other instances
#: (it is synchronous, so it blocks that worker's event loop meanwhile).
ABORT_CALL_TIMEOUT_S = 3.0
#: How long the front waits for each instance during an abort fan-out.
ABORT_FANOUT_TIMEOUT_S = 2.0

#: ``ctx.kv``: scope, limits and TTL are UNKNOWN. Ours: one namespace per
#: route file, per worker process (lost when the instance is recycled, which
#: is what "temporary" means locally), no TTL.
KV_MAX_KEY_LENGTH = 512
KV_MAX_VALUE_BYTES = 1024 * 1024

# ``ctx.utils.sse(data)``: the platform falls back to ``str(data)`` when json.dumps
# raises TypeError (so do we, see sse._data_text); its JSON details (non-ASCII,
# NaN, separators) are UNKNOWN. Ours (sse.dumps): non-ASCII kept, NaN refused
# (ValueError -> an error frame), the default ", " / ": " separators.

# A POST with an empty body: the platform refuses it with 400 (RAG template
# evidence); we hand the handler ``{}`` and log a warning once per route
# (request_body.handler_body), so ``curl -X POST`` keeps working locally.

# Request bodies (request_body.handler_body): the platform parses JSON and hands a
# multipart upload to a Node agent as the raw Buffer (csv-analyze template
# evidence); a body of any type that is neither is UNKNOWN there. Ours: a JSON
# Content-Type (application/json, */*+json) is parsed; one of the types below
# is parsed when the body is JSON and handed over raw otherwise; every other
# type (multipart/form-data, application/octet-stream, text/plain, ...) is
# handed over raw: a Buffer in Node, bytes in Python, never a 400.
#: Types whose body is JSON when it parses, raw otherwise. "" is a request
#: with no Content-Type (scripts and raw HTTP clients, which mostly send
#: JSON); application/x-www-form-urlencoded is what ``curl -d`` sends when no
#: type is given, as the README's quickstart and the README ``init`` writes
#: do. A body parsed under the latter logs a warning once per route (send
#: application/json).
BODY_JSON_WHEN_PARSES = ("", "application/x-www-form-urlencoded")

#: A body whose Content-Type says JSON but that does not parse (the platform's
#: answer is UNKNOWN): agents in both languages and Python context handlers
#: answer this status before the handler runs, naming the parse error, since
#: their ``request.body`` is documented as the parsed JSON and there is none.
#: A Node cloud function is the exception: its ``context.request`` is a
#: standard Request whose ``json()`` the handler calls and may catch (official
#: templates do), so its handler runs, with ``context.request.body`` the raw
#: Buffer, ``request.json()`` rejecting with SyntaxError, and a warning once
#: per route.
INVALID_JSON_BODY_STATUS = 400

# Node store option objects (store_rpc/methods.py): the platform's store is
# JavaScript, where a property that no method reads is ignored; so a key a
# method does not take is ignored here too, with one warning per method and key
# in each worker's log, while a key it takes is checked (a wrong type is still a
# MemoryValidationError). ``userId`` on getMessages, clearMessages and
# deleteConversation, which official templates pass, has no meaning in the
# platform's store doc (only appendMessage takes it, as the conversation's
# owner); whether the platform scopes those calls by it is UNKNOWN. Ours:
# checked as a user id, then ignored (store_rpc/methods.py, IGNORED_USER_ID).

#: Dev-server views the platform's ``edgeone makers dev`` is said to have.
HEALTH_PATH = "/health"
METRICS_PATH = "/agent-metrics"

# --- cloud functions ----------------------------------------------------------

#: How a framework-mode cloud function (Flask, FastAPI, Django) reaches
#: ``context`` is UNKNOWN on the platform. Ours: the ``FunctionContext`` sits
#: under this key in the ASGI scope and the WSGI environ
#: (``flask.request.environ["makers.context"]``, ``request.scope["makers.context"]``).
FUNCTION_CONTEXT_KEY = "makers.context"

#: The cloud-function request-body limit is "6 MB" [CF:python-functions.md];
#: whether that is 6,000,000 or 6,291,456 bytes is UNKNOWN. Read as MiB.
FUNCTION_MAX_BODY_BYTES = 6 * 1024 * 1024

#: The agent request-body limit is UNKNOWN (the facts file gives none; cloud
#: functions get 6 MB, the store takes 50 MB per message content). Ours: 64 MiB,
#: enough for one message at the store's content limit plus its JSON envelope.
#: The front refuses a larger body with 413, from its Content-Length before
#: reading any of it; it is also the most any route (cloud functions under
#: ``--no-function-limits`` too) is sent.
AGENT_MAX_BODY_BYTES = 64 * 1024 * 1024

#: CONFLICT: which ``cloud-functions/`` files are routes. The cloud-functions
#: doc [CF:python-functions.md "Entry file recognition"] lists four entry
#: patterns (``class handler(BaseHTTPRequestHandler)``, ``app = Flask(...)``,
#: ``app = FastAPI(...)``, ``application = get_wsgi_application()``), and
#: older templates load each function as a top-level module (sys.path + bare
#: imports). The current official claude-agent-starter-python
#: (TencentEdgeOne/claude-agent-starter-python, cloud-functions/history,
#: conversations, clear-history, delete-conversation at 3cf4d5b / 4f3fc23)
#: writes them agent-style instead: a module-level ``async def handler(context)``
#: reading ``context.request.body``, awaiting ``context.agent.store``, returning
#: dicts or ``{"status_code": n, "body": ...}``, and importing siblings with
#: relative imports (``from .._logger import ...``), so the platform must load
#: those as package members. Official templates must run unchanged, so with
#: True a module-level function named ``handler`` (async or not) is a fifth
#: entry pattern, the "context handler" (functions/context_handlers.py): it gets an
#: agent-like ``context`` with the ASYNC store (what the template awaits; a
#: plain ``def handler`` gets it too, and a warning), and its relative imports
#: do not warn. The four documented patterns win when a file also has one.
#: False: such files are helper modules again, as the doc alone says.
CONTEXT_HANDLER_ENTRY = True

#: Which answers of a Node handler are relayed as they are produced. The
#: platform's Node agents return a ``Response`` and stream SSE; how it treats
#: other bodies is UNKNOWN. Ours: a body of these content types is relayed chunk
#: by chunk; any other is collected first (so an instance that dies mid-answer
#: gives a clean 502). Used by the Python side and passed to the Node worker.
NODE_STREAMED_TYPES = ("text/event-stream", "application/x-ndjson")

#: A Node route whose file exports handlers for other methods only
#: (``onRequestGet`` and a ``POST``): the platform's answer is UNKNOWN. Ours:
#: this status, with an ``Allow`` header naming the methods it has.
NODE_METHOD_NOT_ALLOWED_STATUS = 405

# --- the frontend (front/frontend.py, front/devserver.py, project/frontend.py) ---
# Facts from the platform's CLI (edgeone 1.4.9) are followed: the dev command,
# `--port` from 6699, the order of routing, HMR and `_rsc=` requests to the
# frontend, the 502 JSON, the static 404 rules. Where it does something else or
# nothing is known, ours:

#: Seconds a request for the frontend waits for the dev server's port to accept
#: (the CLI waits for nothing: a first page load while the dev server starts got
#: 502). Ours waits, up to this, and then answers the CLI's 502 JSON.
FRONTEND_START_WAIT_S = 60.0

# - Methods: an agent route takes POST only, so another method on its path goes
#   to the frontend (the CLI checks each route's methods; which ones an agent
#   route lists is not in its bundle). A cloud function takes every method
#   (the CLI lists methods per Node handler export; ours does not look).
# - WebSocket upgrades: the CLI sends hot-reload ones (its path list) to the
#   frontend and DROPS any other that no function takes, Vite's own socket
#   (`/?token=...`) included, whose client then falls back to the dev server's
#   own port. Ours sends every upgrade no route takes to the dev server, so hot
#   reload works through serve's port alone.
# - Headers to the dev server: the CLI rewrites Host (changeOrigin) and adds
#   X-Forwarded-For/-Port/-Proto/-Host. Ours sends Host `localhost:<dev port>`,
#   rewrites an Origin (and Referer) of the page's own origin the same way (so
#   Next.js dev serves /_next/* and its HMR socket at any address, without
#   allowedDevOrigins), adds X-Forwarded-For and -Proto, and leaves out
#   X-Forwarded-Host (Next's Server Actions compare it with Origin). A Location
#   naming the dev server's origin is turned back into the client's.
# - After the dev server exits: the CLI clears it 2 s later and serves the
#   static rules from the project folder; ours keeps answering the 502 JSON
#   (the exit is logged with its code) until serve restarts.
# - Static `outputDirectory`: the CLI also serves it when edgeone.json has
#   none (from the project folder itself, `.env` included) and reads the
#   `OutputDir` environment variable; ours serves only an outputDirectory
#   edgeone.json names, never a path outside it, and treats a folder like a
#   missing file (the CLI streams a folder, which fails).
# - The dev server's environment: serve's own (the CLI adds FORCE_COLOR=1;
#   ours does not, and drops colour codes from its lines).
# - A dev command whose npm packages are missing is not started (npx would
#   fetch a package of that name from the registry): one line says to run
#   `npm install`, and the agents are served.

# --- the project's middleware (middleware.js / .ts; runtime/middleware/) ---------------
# Source for the facts: the platform's CLI, npm ``edgeone`` 1.4.9 (edgeone-dist/cli.js:
# its dev server's request handler, its middleware builder and runtime wrapper).

#: A middleware that throws (or rejects): the CLI's runtime wrapper catches the
#: error, logs it and returns "no middleware answer", and its dev server logs
#: "Middleware execution error" and routes the request as if there were no
#: middleware (no 500). What the edge does is not documented; we follow the
#: CLI: True logs the error (with its stack, each time) and the request goes on
#: unchanged. False would answer 500 instead. Passed to the host.
MIDDLEWARE_ERROR_GOES_ON = True

# Matching (node/middleware_matcher.mjs, middleware/matching.py): the CLI compiles
# a path pattern with path-to-regexp 6 "case-insensitive", but keeps only the
# expression's source and tests ``new RegExp(source)`` without flags, so
# matching is in fact CASE-SENSITIVE; so is ours. The CLI tests the URL's
# pathname (dot segments resolved); we test that AND the path as sent, and run
# the middleware when either is covered (ours: a guard must not be skipped by a
# path whose dots the routes read differently).

# Loading: a middleware that fails to import or exports no function makes the
# CLI's dev server log the failure and serve without it, but the platform's
# build (which bundles it) fails, so nothing is deployed. Ours: serve does not
# start (one line naming the file, the error above it); on --reload the
# middleware that was running keeps running (the CLI does the same on a failed
# rebuild). A project with a middleware and no Node: serve does not start.
# The host process dying is ours alone: requests it covers wait for it to be
# started again, then are answered 502; never let through.

# Files: the CLI's build takes middleware.js, middleware.ts, proxy.js, proxy.ts in ./
# then ./src/; its dev server looks only for the middleware.* names. Ours: all
# four, as the build does (what the platform runs). Next.js projects (as the CLI
# detects them): not run, one warning.

# ``context``: ``geo`` is ``{}`` and ``request`` has no body, as in the CLI's dev
# server; ``clientIp`` is the client's address (the CLI gives "" locally, the
# edge the client's); ``env`` is what agents get (.env < .env.local < the shell).
# ``next({headers})`` sets those request headers AND adds them to the response,
# as the CLI's helper does; ``next({request: {headers}})`` sets only the request's.
# ``waitUntil(promise)``: the promise runs on, its failure logged (the CLI ignores it).
#: ``rewrite(url)`` to another origin: the CLI would route a mangled path; the
#: edge's behaviour is UNKNOWN. Ours: this status, the URL named in the error.
MIDDLEWARE_REWRITE_ELSEWHERE_STATUS = 502
