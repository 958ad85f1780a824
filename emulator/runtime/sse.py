"""Server-sent events and JSON for agent responses (no web framework needed).

What a streaming agent may yield, and what goes on the wire:

- ``bytes``: sent as is (already a frame, e.g. from ``ctx.utils.sse(...)``);
- ``str``: sent as is when it is a complete frame (ends with a blank line),
  otherwise as the ``data:`` of one frame;
- anything else (dict, list, number, an object with ``to_dict()``): one frame
  whose ``data:`` is its JSON; data JSON cannot encode is sent as ``str(data)``,
  as the platform does, with one warning per type.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterable, Iterable, Mapping
from typing import Any

logger = logging.getLogger("makers_store.serve")

SSE_HEADERS = {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    "x-accel-buffering": "no",
}
#: The platform also sends ``Connection: keep-alive``; a hop-by-hop header, so
#: the front adds it towards the client (HTTP/1.1) rather than the worker.
SSE_CONNECTION_HEADER = (b"connection", b"keep-alive")
_WARNED_TYPES: set[str] = set()


def _default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """JSON text of ``value``; store objects (``Message``...) encode via ``to_dict()``."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=_default)


def sse(
    data: Any, event: str | None = None, id: str | None = None, retry: int | None = None
) -> bytes:
    """One SSE frame: ``data`` as is if it is a str, else as JSON."""
    lines: list[str] = []
    for name, value in (("event", event), ("id", id)):
        if value is not None:
            if "\n" in value or "\r" in value:
                raise ValueError(f"sse {name} must be one line")
            lines.append(f"{name}: {value}")
    if retry is not None:
        lines.append(f"retry: {int(retry)}")
    text = data if isinstance(data, str) else _data_text(data)
    lines.extend(f"data: {line}" for line in text.replace("\r\n", "\n").split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def _data_text(data: Any) -> str:
    try:
        return dumps(data)
    except TypeError:
        # the platform's sse() does the same: json.dumps, then str() on TypeError
        name = type(data).__name__
        if name not in _WARNED_TYPES:
            _WARNED_TYPES.add(name)
            logger.warning(
                "sse(): %s data is not JSON-encodable; sent as str(data), as the platform "
                "does (a Python repr on the wire; convert it to a dict yourself)",
                name,
            )
        return str(data)


def to_frame(item: Any) -> bytes:
    """The bytes sent for one item a stream yields (see the module docstring)."""
    if isinstance(item, bytes | bytearray | memoryview):
        return bytes(item)
    if isinstance(item, str):
        return item.encode("utf-8") if item.endswith("\n\n") else sse(item)
    return sse(item)


class StreamResponse:
    """A server-sent-events response: ``return StreamResponse(gen())`` from a handler.

    ``source`` is an async (or plain) iterable of frames; ``ctx.utils.stream_sse(gen)``
    builds one. Each frame is flushed to the client as soon as it is produced.
    """

    def __init__(
        self,
        source: AsyncIterable[Any] | Iterable[Any],
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.status = status
        self.headers = dict(headers or {})

    @classmethod
    def sse(
        cls,
        source: AsyncIterable[Any] | Iterable[Any],
        *,
        status: int = 200,
        headers: Mapping[str, str] | None = None,
    ) -> StreamResponse:
        """``StreamResponse.sse(gen())``: the platform's spelling of ``ctx.utils.stream_sse``."""
        return cls(source, status=status, headers=headers)
