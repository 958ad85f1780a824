"""The Studio's security model, as one ASGI middleware (:class:`Guard`).

* **Host check** (every request): the ``Host`` header must name this server
  (a loopback name, or the address it was bound to). A web page that points
  its own domain at 127.0.0.1 (DNS rebinding) is refused, so it cannot read
  the token below.
* **Writes** (any method but GET/HEAD/OPTIONS) need the per-process token in
  ``X-Studio-Token`` (the pages carry it; another site cannot read them) *and*
  an ``Origin`` equal to this server's own: a cross-site form or fetch is
  refused even before the token is looked at.
* **Headers** on every answer: a Content-Security-Policy allowing only the
  Studio's own script and styles (no inline script, so markup that slipped
  into a page could still run nothing), no framing, no sniffing, no referrer.

User content is rendered as text by the templates (Jinja2 autoescape) and by
the page script (``textContent``), never as markup.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_HEADER = "x-studio-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


def new_token() -> str:
    """A per-process secret the pages carry and every write must send back."""
    return secrets.token_urlsafe(32)


def host_name(host_header: str) -> str:
    """``127.0.0.1`` of ``127.0.0.1:8089``, ``::1`` of ``[::1]:8089``."""
    if host_header.startswith("["):
        return host_header[1 : host_header.find("]")].lower()
    return host_header.rsplit(":", 1)[0].lower() if ":" in host_header else host_header.lower()


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound_host: str) -> frozenset[str] | None:
    """The ``Host`` names accepted for a server bound to ``bound_host``
    (None: any, for a server bound to every interface, which warns)."""
    if bound_host in ("", "0.0.0.0", "::", "*"):
        return None
    return LOOPBACK_NAMES | {bound_host.strip("[]").lower()}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class Guard:
    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str] | None) -> None:
        self.app = app
        self.token = token
        self.hosts = None if hosts is None else frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope)
        if refused is not None:
            await _refuse(send, *refused)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, reason) when the request must be refused, else None."""
        host = _header(scope, b"host") or ""
        if self.hosts is not None and host_name(host) not in self.hosts:
            return 403, f"host {host!r} is not this Studio (DNS rebinding is refused)"
        if scope["method"] in SAFE_METHODS:
            return None
        origin = _header(scope, b"origin")
        own = f"{scope.get('scheme', 'http')}://{host}"
        if origin is None or origin != own:
            return 403, "cross-origin write refused: Origin must be this Studio's own"
        given = _header(scope, TOKEN_HEADER.encode()) or ""
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            return 403, f"write refused: missing or wrong {TOKEN_HEADER} header"
        return None


async def _refuse(send: Send, status: int, reason: str) -> None:
    body = json.dumps({"error": reason}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *_SECURITY_HEADERS,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
