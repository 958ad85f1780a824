"""Values on the store RPC wire: requests in, replies out, Node's names.

JSON cannot carry everything a JavaScript caller may pass: ``NaN``,
``Infinity``, functions, symbols, BigInts, cycles, and nesting deep enough to
overflow a parser. ``store.mjs`` sends ``null`` in their place and lists
where they were under the reserved param ``$nonjson``
(``[{"path": ["content", "a", 0], "kind": "NaN"}]``). :func:`decode_request`
puts an equivalent Python value back at each place (a float NaN, an object of
a class named ``function``, a reference to the enclosing container, lists
nested past the store's limit), so the store's own validation rejects the
call with exactly the message a Python caller gets.
"""

from __future__ import annotations

import functools
import importlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from makers_store.errors import MemoryValidationError
from makers_store.limits import MAX_NESTING
from makers_store.models import ConversationMeta, ListConversationsResult, Message

from ..log import ignored_option

#: One store RPC method: its params (Node names) in, its result (JSON-able) out.
Handler = Callable[[dict[str, Any]], Awaitable[Any]]
NONJSON = "$nonjson"
BIND = "$bind"
_FLOATS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
#: JavaScript types JSON cannot hold, as Python classes of the same name, so
#: that Python's message reads "a value of type function is not JSON serializable"
_JS_TYPES = {name: type(name, (), {}) for name in ("function", "symbol", "bigint")}
_UPPER = re.compile(r"(?<!^)(?=[A-Z])")
logger = logging.getLogger("makers_store.serve")
#: (method, key) pairs already warned about in this process


# Memoized: each call maps its argument names, and a regex per name cost more
# than some whole store calls. Only names a method takes are converted (an
# unknown option is dropped before), so the caches hold the API's own names.
@functools.lru_cache(maxsize=1024)
def snake(name: str) -> str:
    """``conversationId`` -> ``conversation_id``."""
    return _UPPER.sub("_", name).lower()


@functools.lru_cache(maxsize=1024)
def camel(name: str) -> str:
    """``conversation_id`` -> ``conversationId``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# JSON on the wire: orjson where it is installed (the ``serve`` extra brings
# it), the standard library otherwise. Measured on this RPC's lines: a 6 KB
# getMessages answer takes json.dumps 68 us and orjson 5 us, a 360-byte
# request json.loads 11 us and orjson 2 us. orjson is used only where it gives
# what json gives: anything it refuses (a lone surrogate, an int past 64 bits,
# a NaN literal, keys that are not strings) goes to json, which decides as
# before; datetimes, dataclasses and subclasses of str, int, dict and list are
# passed through to it too, so nothing json would refuse is encoded. (A float
# NaN, which no stored value holds, becomes null, where json wrote NaN, which
# JSON.parse refuses.)
orjson: Any
try:
    orjson = importlib.import_module("orjson")
except ImportError:  # the serve extra installs it
    orjson = None


def loads(line: bytes) -> Any:
    """``json.loads``, by orjson where it reads the same (above)."""
    if orjson is not None:
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass  # json says why, or reads what orjson does not (a lone surrogate)
    return json.loads(line)


def decode_request(line: bytes) -> dict[str, Any]:
    """One request line as ``{"id", "method", "params"}`` with ``$nonjson`` applied."""
    try:
        request = loads(line)
    except (ValueError, RecursionError) as exc:
        raise MemoryValidationError(f"store RPC request is not JSON: {exc}") from None
    if not isinstance(request, dict) or not isinstance(request.get("params", {}), dict):
        raise MemoryValidationError("store RPC request must be an object with object params")
    params = request.setdefault("params", {})
    for place in params.pop(NONJSON, None) or ():
        _restore(params, place)
    return request


def _restore(params: dict[str, Any], place: Any) -> None:
    path, kind = place.get("path"), place.get("kind")
    if not isinstance(path, list) or not path:
        raise MemoryValidationError(f"store RPC {NONJSON} entry has no path: {place!r}")
    parent: Any = params
    try:
        for step in path[:-1]:
            parent = parent[step]
    except (KeyError, IndexError, TypeError):
        raise MemoryValidationError(f"store RPC {NONJSON} path {path!r} names no value") from None
    if kind in _FLOATS:
        value: Any = _FLOATS[kind]
    elif kind in _JS_TYPES:
        value = _JS_TYPES[kind]()
    elif kind == "circular":
        value = parent  # the enclosing container: a real cycle, as in JavaScript
    elif kind == "deep":
        value = []
        for _ in range(MAX_NESTING):
            value = [value]
    else:
        raise MemoryValidationError(f"store RPC {NONJSON} entry of unknown kind {kind!r}")
    parent[path[-1]] = value


def encode_reply(reply: dict[str, Any]) -> bytes:
    """One reply line (ASCII-escaped only if it holds a lone surrogate, which
    UTF-8 cannot carry: an error message may quote the caller's bad value)."""
    if orjson is not None:
        try:
            line: bytes = orjson.dumps(reply, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError too: json decides, as without orjson
            pass
        else:
            return line
    text = json.dumps(reply, ensure_ascii=False, separators=(",", ":"))
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(reply, separators=(",", ":")) + "\n").encode("ascii")


_ORJSON_OPTIONS = (
    0
    if orjson is None
    else orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def take_bind(params: dict[str, Any]) -> tuple[str | None, str | None]:
    """The conversation and run a call is bound to (``$bind``), if any."""
    bind = params.pop(BIND, None) or {}
    if not isinstance(bind, dict):
        raise MemoryValidationError(f"store RPC {BIND} must be an object")
    return bind.get("conversationId"), bind.get("runId")


def keyword_arguments(
    method: str, params: dict[str, Any], accepted: tuple[str, ...]
) -> dict[str, Any]:
    """``params`` (Node names) as Python keyword arguments, refusing unknown names
    (for the adapters' calls, whose params ``store.mjs`` itself builds)."""
    unknown = [name for name in params if name not in accepted]
    if unknown:
        raise MemoryValidationError(
            f"{method} got an unknown argument {unknown[0]!r}; it takes " + ", ".join(accepted)
        )
    return {snake(name): value for name, value in params.items()}


def ignore_unknown(method: str, key: str, accepted: tuple[str, ...]) -> None:
    """Log once per process that ``method`` ignores the option ``key``."""
    ignored_option(f"context.store.{method}", key, accepted)


def option_arguments(
    method: str, params: dict[str, Any], accepted: tuple[str, ...]
) -> dict[str, Any]:
    """A Node option object as Python keyword arguments, leaving out (with a
    warning, :func:`ignore_unknown`) the keys ``method`` does not take: the
    platform's store is JavaScript, where an extra property is not an error."""
    kwargs = {}
    for name, value in params.items():
        if name in accepted:
            kwargs[snake(name)] = value
        else:
            ignore_unknown(method, name, accepted)
    return kwargs


def required(kwargs: dict[str, Any], name: str) -> Any:
    """``kwargs[name]``, or the store's own error for a missing argument."""
    if name not in kwargs:
        raise MemoryValidationError(f"{name} is required")
    return kwargs[name]


def to_node(value: Any) -> Any:
    """A store result with Node's names (the platform's TypeScript interfaces):
    optional fields that are unset are left out, as ``metadata?`` reads."""
    if isinstance(value, Message):
        out = {
            "messageId": value.message_id,
            "role": value.role,
            "content": value.content,
            "createdAt": value.created_at,
        }
        if value.metadata is not None:
            out["metadata"] = value.metadata
        if value.updated_at is not None:
            out["updatedAt"] = value.updated_at
        return out
    if isinstance(value, ConversationMeta):
        return {camel(name): item for name, item in value.to_dict().items()}
    if isinstance(value, ListConversationsResult):
        page: dict[str, Any] = {"items": [to_node(item) for item in value.items]}
        if value.next_cursor is not None:
            page["nextCursor"] = value.next_cursor
        if value.previous_cursor is not None:
            page["previousCursor"] = value.previous_cursor
        return page
    if isinstance(value, list):
        return [to_node(item) for item in value]
    return value
