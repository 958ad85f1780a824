"""What the store accepts of a caller's values, for code that checks before it sends.

The store's own checks (:mod:`makers_store._core.validate`, the codec) use these
rules, and so do the CLI (``--json`` input nesting) and the serve runtime (a
worker's KV values, request bodies, the Node store RPC): one rule each, here
in the foundation so that code outside the store needs nothing private.

- ids (``conversation_id``, ``user_id``...): a non-empty string of at most
  :data:`MAX_ID_LENGTH` characters that UTF-8 can encode (:func:`identifier`);
- strings: no lone surrogate, the one ``str`` UTF-8 cannot encode
  (:func:`has_surrogate`, :func:`find_surrogate` to say where);
- JSON values: at most :data:`MAX_NESTING` levels of lists and dicts.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import MemoryValidationError

#: Most levels of lists and dicts in one value (``[[1]]`` has two). Records
#: wrap a value in two more levels, and Python's decoder gives up near its
#: recursion limit (~1000 frames, shared with the caller's stack), so the
#: limit keeps every accepted value decodable from any call depth.
MAX_NESTING = 100
#: Longest id (conversation, user, message, key...), in characters.
MAX_ID_LENGTH = 256

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (the one str UTF-8 cannot encode)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def json_path(path: str, key: str) -> str:
    """The path ``path`` (``$``, ``$.a``) one key deeper: ``$.a.b``, or ``$.a['b c']``."""
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def find_surrogate(value: Any) -> str | None:
    """Where the first lone surrogate in a JSON-like value (str, dict, list,
    tuple, nested) is, as ``the string at $.a[0]`` or ``the key 'k' at $``;
    None when it holds none. Iterative, so any depth is safe; it builds paths,
    so callers on a hot path run it only when a surrogate is possible."""
    stack: list[tuple[Any, str]] = [(value, "$")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str) and has_surrogate(item):
            return f"the string at {path}"
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and has_surrogate(key):
                    return f"the key {key!r} at {path}"
                stack.append((child, json_path(path, str(key))))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
    return None


def identifier(value: Any, argument: str) -> str:
    """``value`` if it is a valid id, else the error naming ``argument``."""
    if not isinstance(value, str):
        raise MemoryValidationError(f"{argument} must be a string, not {type(value).__name__}")
    if not value:
        raise MemoryValidationError(f"{argument} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise MemoryValidationError(
            f"{argument} must be at most {MAX_ID_LENGTH} characters, got {len(value)}"
        )
    return text(value, argument)


def text(value: str, argument: str) -> str:
    """``value`` if UTF-8 can encode it (it holds no lone surrogate), else the
    one error for that, naming ``argument``. For names that go into keys and
    records; whole JSON values are checked by the codec."""
    if has_surrogate(value):
        raise MemoryValidationError(
            f"{argument} must be valid Unicode: {value!r} holds a lone surrogate, "
            "which UTF-8 cannot encode"
        )
    return value
