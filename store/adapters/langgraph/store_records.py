"""The LangGraph store's item records, filters and ranking (pure functions).

An item is one blob of three lines, so that readers parse only what they
need (JSON text never contains a raw newline):

1. header: ``created_ms updated_ms`` or, for an item with a TTL,
   ``created_ms updated_ms ttl_minutes expires_ms`` (ASCII, space-separated:
   every reader parses it, so it is cheaper than JSON);
2. the value, strict JSON (:func:`makers_store._core.codec.encode_json`);
3. the embeddings, ``{"path": [floats], ...}``, or ``{}``.

One blob per item keeps an item and its vectors consistent even on backends
that run a program one operation at a time.

Ranking. With an embedder, a query ranks items by the best cosine similarity
of any of their vectors; items without vectors follow, with score None.
Without one, the query is split into lower-case word terms and an item's
score is the fraction of distinct query terms found among the words of its
JSON keys and scalar values (1.0: every term present, 0.0: none); every item
the filter admits is returned, best first. Ties, and searches without a
query, go by ``updated_at`` descending, then by blob key (namespace, then key).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import MatchCondition

from ..._core import adapter_keys
from ..._core.codec import decode_json
from ...errors import MemoryCorruptError, MemoryValidationError

FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_WORD = re.compile(r"\w+")


# --- records ---------------------------------------------------------------


@dataclass(slots=True)
class Record:
    """One stored item, decoded as far as a reader asked."""

    blob_key: str
    created: int
    updated: int
    ttl: float | None
    expires: int | None
    value_text: bytes
    vectors_text: bytes

    def identity(self) -> tuple[tuple[str, ...], str]:
        """(namespace, key), parsed only for the items a reader returns."""
        return adapter_keys.parse_langgraph_item_key(self.blob_key)

    def value(self) -> dict[str, Any]:
        value = decode_json(self.value_text, what=f"LangGraph item {self.blob_key!r}")
        if not isinstance(value, dict):
            raise MemoryCorruptError(f"LangGraph item {self.blob_key!r} is not a JSON object")
        return value

    def vectors(self) -> list[list[float]]:
        decoded = decode_json(self.vectors_text, what=f"embeddings of {self.blob_key!r}")
        return list(decoded.values()) if isinstance(decoded, dict) else []


def encode_record(
    created: int, updated: int, ttl: float | None, expires: int | None, value: str, vectors: str
) -> bytes:
    header = f"{created} {updated}" if ttl is None else f"{created} {updated} {ttl!r} {expires}"
    return f"{header}\n{value}\n{vectors}".encode()


def decode_record(blob_key: str, data: bytes) -> Record:
    parts = data.split(b"\n", 2)
    if len(parts) != 3:
        raise MemoryCorruptError(f"{blob_key!r} is not a LangGraph store item")
    header = parts[0].split(b" ")
    try:
        if len(header) == 2:
            return Record(blob_key, int(header[0]), int(header[1]), None, None, parts[1], parts[2])
        created, updated, ttl, expires = header
        return Record(
            blob_key, int(created), int(updated), float(ttl), int(expires), parts[1], parts[2]
        )
    except ValueError as exc:
        raise MemoryCorruptError(f"header of {blob_key!r} is malformed: {exc}") from None


def expired(record: Record, now: int) -> bool:
    return record.expires is not None and record.expires <= now


def as_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


# --- filters ---------------------------------------------------------------


def check_filter(value: Any, path: str = "filter") -> Any:
    """The filter as plain dicts and lists, refusing unknown ``$`` operators
    before anything runs."""
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for name, child in value.items():
            if not isinstance(name, str):
                raise MemoryValidationError(f"{path} keys must be strings, got {name!r}")
            if name.startswith("$") and name not in FILTER_OPERATORS:
                raise MemoryValidationError(
                    f"{path} uses unsupported operator {name!r}; "
                    f"supported: {', '.join(sorted(FILTER_OPERATORS))}"
                )
            plain[name] = check_filter(child, f"{path}.{name}")
        return plain
    if isinstance(value, list | tuple):
        return [check_filter(child, f"{path}[{index}]") for index, child in enumerate(value)]
    return value


def matches(item_value: Any, wanted: Any) -> bool:
    """InMemoryStore's filter semantics: nested objects match field by field,
    lists element by element, ``$`` operators compare, anything else is ==.
    ``wanted`` is a filter :func:`check_filter` returned."""
    if type(wanted) is dict:
        if any(name[:1] == "$" for name in wanted):
            return all(_compare(item_value, op, operand) for op, operand in wanted.items())
        if type(item_value) is not dict:
            return False
        return all(matches(item_value.get(name), child) for name, child in wanted.items())
    if type(wanted) is list:
        return (
            type(item_value) is list
            and len(item_value) == len(wanted)
            and all(matches(have, want) for have, want in zip(item_value, wanted, strict=True))
        )
    return bool(item_value == wanted)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    left, right = _number(value), _number(operand)
    if left is None or right is None:  # not comparable: the item does not match
        return False
    if operator == "$gt":
        return left > right
    if operator == "$gte":
        return left >= right
    if operator == "$lt":
        return left < right
    return left <= right  # $lte (operators were checked up front)


# --- ranking ---------------------------------------------------------------


def query_terms(query: str) -> frozenset[str]:
    return frozenset(_WORD.findall(query.lower()))


def _words(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for name, child in node.items():
                yield from _WORD.findall(name.lower())
                stack.append(child)
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            yield from _WORD.findall(node.lower())
        elif node is not None:
            yield str(node).lower()


def term_score(terms: frozenset[str], value: Any) -> float:
    """Fraction of the distinct query terms found among the item's words."""
    if not terms:
        return 0.0
    found = {word for word in _words(value) if word in terms}
    return len(found) / len(terms)


def cosine(left: list[float], right: list[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=False))
    norms = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norms if norms else 0.0


def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    else:
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    return all(want == "*" or have == want for have, want in pairs)
