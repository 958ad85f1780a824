"""User data made safe to show on a terminal.

Stored text may hold anything: ANSI colour codes, an OSC sequence that
retitles the window (``\\x1b]0;title\\x07``), a carriage return that hides
what came before it, right-to-left overrides. Human output shows every such
character as a visible escape (``\\x1b``); ``--json`` keeps the text exact.
Only the standard library: error lines use this too, before rich is imported.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, the bidirectional
# overrides/isolates that reorder how the rest of a line looks, and lone
# surrogates (which no terminal encoding can write).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\xNN`` escapes."""
    return _UNSAFE.sub(_escape, text)


def printable_json(text: str) -> str:
    """JSON text with the same characters escaped as ``\\uNNNN`` (still valid JSON,
    decoding to the same value)."""
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def printable_line(text: str) -> str:
    """:func:`printable`, and newlines and tabs escaped too (one line of a table)."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 conversation``, ``6,000 conversations``: every count a person reads
    (``plural`` for nouns that do not just take an ``s``: ``state entries``)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {plural or noun + 's'}"
