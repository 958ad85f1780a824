"""What a search index keeps of a message: its text, case-folded the way the
search matches it (:mod:`makers_store.maintenance.search`).

The search's rule is Python's: ``re.compile(re.escape(text), re.IGNORECASE)``
finds ``text`` in a message's text strings (:func:`message_texts`). Under that
flag a character of the pattern matches a character of the text when their
*simple* lowercase forms are equal or are among the few equivalents Python
adds (long s U+017F and ``s``, dotless i U+0131 and ``i``, Greek and
Cyrillic variants...).
:func:`fold` maps every character to one representative of its class, one
character for one, so ``text`` matches a message exactly when
``fold(text)`` is a substring of :func:`indexed_text` of that message's
record (the parts are joined by a line feed, which can make a match across
two parts: the index finds candidates, and the search checks each against the
rule itself, so such a candidate is dropped there). Backends keep this text
in a trigram index (SQLite FTS5, PostgreSQL ``pg_trgm``) beside the blob, in
the unit of work that writes the blob; an index answers queries of at least
:data:`MIN_QUERY` characters, shorter ones fall back to the scan.

This module depends on nothing of the store but the message record's shape,
so that every backend can import it.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: The shortest query a trigram index answers; shorter ones are scanned.
MIN_QUERY = 3
#: Nesting followed into structured content (the store allows 100 levels).
_MAX_DEPTH = 100
#: A message blob's key: ``c/{cid}/m/{seq}`` or ``c/{cid}/g/{gen}/m/{seq}``
#: (see :mod:`makers_store._core.keys`).
MESSAGE_KEY = re.compile(r"c/([^/]+)/(?:g/([a-z0-9]{1,32})/)?m/(\d{10})")
#: A GLOB every message key matches (and few others): what a SQL trigger
#: tests before it asks for the text.
MESSAGE_KEY_GLOB = "c/*/m/[0-9]*"
#: Between two text parts of one message in the indexed text.
PART_SEPARATOR = "\n"
_decoder = json.JSONDecoder()


def message_texts(content: Any, depth: int = 0) -> Iterator[str]:
    """The strings of a message's content that are its text: a string
    content, and the ``text`` strings of structured parts (in lists and
    nested ``content``)."""
    if isinstance(content, str):
        yield content
    elif depth < _MAX_DEPTH and isinstance(content, list):
        for part in content:
            yield from message_texts(part, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(content, dict):
        if isinstance(content.get("text"), str):
            yield content["text"]
        if isinstance(content.get("content"), str | list):
            yield from message_texts(content["content"], depth + 1)


def _simple_lower(code: int) -> int:
    """The simple (one character) lowercase mapping the ``re`` module uses."""
    try:
        return int(importlib.import_module("_sre").unicode_tolower(code))
    except (ImportError, AttributeError):  # pragma: no cover - CPython has it
        lowered = chr(code).lower()
        return ord(lowered) if len(lowered) == 1 else code


def _extra_cases() -> dict[int, tuple[int, ...]]:
    try:
        return dict(importlib.import_module("re._casefix")._EXTRA_CASES)
    except (ImportError, AttributeError):  # pragma: no cover - CPython 3.11+ has it
        return {}


_EXTRA = _extra_cases()


class _FoldTable(dict[int, int]):
    """``str.translate`` table of :func:`fold`, filled as characters are met."""

    def __missing__(self, code: int) -> int:
        lower = _simple_lower(code)
        folded = min((lower, *_EXTRA.get(lower, ())))
        self[code] = folded
        return folded


_FOLD = _FoldTable()


def fold(text: str) -> str:
    """``text`` with each character replaced by its case class's
    representative (see the module docstring); same length as ``text``."""
    if text.isascii():
        return text.lower()  # in ASCII, the representatives are the lowercase letters
    return text.translate(_FOLD)


def is_message_key(key: str) -> bool:
    return MESSAGE_KEY.fullmatch(key) is not None


def indexed_text(data: bytes) -> str | None:
    """What an index keeps of a message record: its folded text parts joined
    by :data:`PART_SEPARATOR`; None when ``data`` is not a message record
    (the index leaves it out: the store reports such a blob elsewhere)."""
    try:
        row = _decoder.decode(data.decode("utf-8"))
        content = row[7]
    except (UnicodeDecodeError, ValueError, RecursionError, IndexError, KeyError, TypeError):
        return None
    if not isinstance(row, list):
        return None
    return fold(PART_SEPARATOR.join(message_texts(content)))


def message_text_of_blob(key: str, data: bytes) -> str | None:
    """:func:`indexed_text` of the blob at ``key`` when it is a message blob, else None."""
    return indexed_text(data) if is_message_key(key) else None


@dataclass(frozen=True, slots=True)
class SearchIndexCheck:
    """A backend's search index against its message blobs: keys of message
    blobs it lacks (``missing``), entries of blobs that are gone (``stale``),
    entries whose text differs (``wrong``), whether the index's own
    structure is sound (``sound``), and how many message blobs wait to be
    indexed (``pending``: a search reads those itself, so they are no drift)."""

    index: str
    messages: int
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    sound: bool = True
    pending: int = 0

    @property
    def ok(self) -> bool:
        return self.sound and not (self.missing or self.stale or self.wrong)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "messages": self.messages,
            "missing": self.missing,
            "stale": self.stale,
            "wrong": self.wrong,
            "sound": self.sound,
            "pending": self.pending,
            "ok": self.ok,
        }
