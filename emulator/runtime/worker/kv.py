"""``ctx.kv``: the platform's per-route, temporary key-value store.

Locally one namespace per route file lives in the worker process's memory:
it survives between requests on one instance and is lost when the instance
is recycled or restarted (``--recycle-every``, ``--reload``, a crash), and
other instances do not see it. That is what "temporary" means on the
platform too; data that must survive belongs in ``ctx.store.state``.

API as templates use it: ``await kv.set(key, text)``, ``await kv.get(key,
type="text")`` -> str or None, ``type="json"`` -> the parsed value; plus
``delete(key)`` and ``list(prefix=None)`` (their platform spelling is
UNKNOWN). Values are strings only, as on the platform.
"""

from __future__ import annotations

import json
from typing import Any

from makers_store.errors import MemoryValidationError
from makers_store.limits import has_surrogate

from ..platform_choices import KV_MAX_KEY_LENGTH, KV_MAX_VALUE_BYTES

_TYPES = ("text", "json")


def _key(key: Any, method: str) -> str:
    if not isinstance(key, str) or not key:
        raise MemoryValidationError(f"kv.{method}: key must be a non-empty str, not {key!r}")
    if len(key) > KV_MAX_KEY_LENGTH:
        raise MemoryValidationError(
            f"kv.{method}: key is {len(key)} characters; at most {KV_MAX_KEY_LENGTH}"
        )
    if has_surrogate(key) or any(ord(char) < 0x20 for char in key):
        raise MemoryValidationError(
            f"kv.{method}: key {key!r} holds a control character or a lone surrogate"
        )
    return key


class RouteKV:
    """``ctx.kv`` of one route in one worker process."""

    def __init__(self, route: str) -> None:
        self.route = route
        self._values: dict[str, str] = {}

    async def get(self, key: str, type: str = "text") -> Any:
        """The value (``type="text"``: the str; ``"json"``: parsed), None when absent."""
        key = _key(key, "get")
        if type not in _TYPES:
            raise MemoryValidationError(f"kv.get: type must be 'text' or 'json', not {type!r}")
        value = self._values.get(key)
        if value is None or type == "text":
            return value
        try:
            return json.loads(value)
        except ValueError as exc:
            raise MemoryValidationError(
                f"kv.get({key!r}, type='json'): the stored text is not JSON: {exc}"
            ) from None

    async def set(self, key: str, value: str) -> None:
        key = _key(key, "set")
        if not isinstance(value, str):
            raise MemoryValidationError(
                f"kv.set: value must be a str (the platform stores text), not "
                f"{type(value).__name__}; use json.dumps(value) and get(key, type='json')"
            )
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > KV_MAX_VALUE_BYTES:
            raise MemoryValidationError(
                f"kv.set: value is {size} bytes; at most {KV_MAX_VALUE_BYTES} locally"
            )
        self._values[key] = value

    async def delete(self, key: str) -> None:
        """Remove ``key`` (idempotent)."""
        self._values.pop(_key(key, "delete"), None)

    async def list(self, prefix: str | None = None) -> list[str]:
        """The keys (starting with ``prefix``), sorted."""
        if prefix is not None and not isinstance(prefix, str):
            raise MemoryValidationError(f"kv.list: prefix must be a str, not {prefix!r}")
        return sorted(k for k in self._values if prefix is None or k.startswith(prefix))


class KVSpaces:
    """Every route's ``ctx.kv`` in this worker process."""

    def __init__(self) -> None:
        self._spaces: dict[str, RouteKV] = {}

    def for_route(self, route: str) -> RouteKV:
        space = self._spaces.get(route)
        if space is None:
            space = self._spaces[route] = RouteKV(route)
        return space
