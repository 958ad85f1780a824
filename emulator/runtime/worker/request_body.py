"""What a handler's ``request.body`` is: the parsed JSON, or the body's raw bytes.

The platform documents an agent's body as already parsed JSON, and hands a
multipart upload to a Node agent as the raw ``Buffer`` (the official
csv-analyze template parses it itself); what it does with other types is
UNKNOWN. The local rule, by the request's ``Content-Type``
(:data:`..platform_choices.BODY_JSON_WHEN_PARSES`,
:data:`..platform_choices.INVALID_JSON_BODY_STATUS`):

- JSON (``application/json``, ``*/*+json``): parsed, ``{}`` when empty. A
  body that does not parse is refused with 400 before an agent or a Python
  context handler runs; a Node cloud function's handler gets it raw, since
  its ``request.json()`` rejects it as a standard ``Request``'s does.
- no ``Content-Type``, or ``application/x-www-form-urlencoded`` (what
  ``curl -d`` sends): parsed when it is JSON (``{}`` when empty), raw bytes
  otherwise.
- anything else (``multipart/form-data``, ``application/octet-stream``,
  ``text/plain``...): the raw bytes, never parsed.

JSON sent as a form or as ``text/plain`` (``fetch`` with a string body) is
logged once per route, since the platform may not read it as this rule does.

Applies to agents in both languages, Python context handlers, and a Node
cloud function's ``context.request.body``. Handler classes and framework
apps read the body themselves and are never given a parsed one.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any, Literal

from makers_store.limits import find_surrogate

from ..platform_choices import BODY_JSON_WHEN_PARSES
from ..project.routes import Route

logger = logging.getLogger("makers_store.serve")

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_warned: set[tuple[str, str]] = set()

#: How the Node worker builds ``request.body`` from the raw bytes it is sent.
NodeBodyKind = Literal["json", "empty", "raw"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_body(raw: bytes, *, javascript: bool = False) -> Any:
    """The request body as JSON (``{}`` when empty); ValueError if it is not JSON.

    ``javascript``: parse as ``JSON.parse`` does, for a Node route, whose
    runtime parses the same bytes again: ``NaN`` and ``Infinity`` (which
    Python's json accepts) are not JSON, and a lone ``\\uD800`` escape (which
    a JavaScript string can hold) is.
    """
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, parse_constant=_refuse_constant if javascript else None)
    except RecursionError:
        raise ValueError("the request body is not valid JSON: nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"the request body is not valid JSON: {exc}") from None
    # Valid UTF-8 holds no surrogates, so only a \uD800-\uDFFF escape can make
    # one: the walk over the decoded value runs only for bodies that have such an escape.
    if not javascript and _SURROGATE_ESCAPE.search(raw) and find_surrogate(value) is not None:
        raise ValueError("the request body is not valid JSON: a \\u escape is a lone surrogate")
    return value


def media_type(content_type: str | None) -> str | None:
    """``"application/json"`` of ``"Application/JSON; charset=utf-8"``; None without one."""
    if content_type is None:
        return None
    return content_type.split(";", 1)[0].strip().lower()


def declares_json(media: str | None) -> bool:
    return media is not None and (media == "application/json" or media.endswith("+json"))


def _warn_once(route: Route, case: str, message: str, *args: object) -> None:
    if (route.relative, case) in _warned:
        return
    _warned.add((route.relative, case))
    logger.warning(message, route.relative, *args)


def _looks_like_json(route: Route, raw: bytes, javascript: bool) -> bool:
    """Whether ``raw`` is a JSON object or array (tried only until the route was warned)."""
    if (route.relative, "plain") in _warned or raw.lstrip()[:1] not in (b"{", b"["):
        return False
    try:
        parse_body(raw, javascript=javascript)
    except ValueError:
        return False
    return True


def handler_body(
    route: Route,
    method: str,
    raw: bytes,
    content_type: str | None,
    *,
    lenient: bool = False,
) -> Any:
    """``request.body`` for ``route``: parsed JSON, or ``raw`` itself (bytes).

    ValueError (the 400's text) for a body declared as JSON that does not
    parse, unless ``lenient`` (a Node cloud function): then it is ``raw``,
    with a warning once per route.
    """
    javascript = route.language == "node"
    media = media_type(content_type)
    if declares_json(media):
        try:
            value = parse_body(raw, javascript=javascript)
        except ValueError as exc:
            if not lenient:
                raise
            _warn_once(route, "invalid", "%s: a body declared %s did not parse (%s); "
                       "context.request.body is the raw Buffer and request.json() rejects it",
                       media, exc)
            return raw
    elif (media or "") in BODY_JSON_WHEN_PARSES:
        try:
            value = parse_body(raw, javascript=javascript)
        except ValueError:
            return raw
        # a client that names a form type and sends JSON may get it raw
        # on the platform; one that names no type is the usual script, not worth a warning
        if media is not None and raw.strip():
            _warn_once(route, "sniffed", "%s: a body declared %s is parsed as JSON because it "
                       "is JSON; how the platform treats it is unknown: send Content-Type: "
                       "application/json", media)
    else:
        if media == "text/plain" and _looks_like_json(route, raw, javascript):
            # fetch() sends a string body as text/plain unless told otherwise
            _warn_once(route, "plain", "%s: a body declared text/plain is JSON but is handed "
                       "over raw, as every non-JSON type is: send Content-Type: "
                       "application/json")
        return raw
    # only agents: the platform's 400 for an empty body is known for agents alone
    if method == "POST" and route.runtime == "agent" and not raw.strip():
        _warn_once(route, "empty", "%s: a POST with an empty body is handed over as {}; the "
                   "platform refuses it with 400 (send {} from your frontend)")
    return value


def node_body_kind(body: Any, raw: bytes) -> NodeBodyKind:
    """What the Node worker makes of ``raw`` to get the body :func:`handler_body` decided."""
    if isinstance(body, bytes):
        return "raw"
    return "empty" if not raw.strip() else "json"
