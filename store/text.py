"""User data made safe to show to a person: on a terminal or in a page.

Stored text, a request header, a file name may hold anything: ANSI colour
codes, an OSC sequence that retitles the window (``\\x1b]0;title\\x07``), a
carriage return that hides what came before it, right-to-left overrides that
show "abc" as "cba". Every line a person reads shows each such character as a
visible escape (``\\x1b``): the CLI's output, ``serve``'s and ``studio``'s
lines and logs, the Studio's pages (its script mirrors :data:`UNSAFE`, and a
test holds the two to the same characters). ``--json`` keeps text exact.

Here, below the CLI and the emulator, so both print through this one
implementation (``emulator/`` never imports ``cli/``). Only the standard
library: error lines use it before anything else is imported.
"""

from __future__ import annotations

import re

#: C0 controls but tab and newline, DEL, C1 controls, the bidirectional
#: overrides/isolates that reorder how the rest of a line looks, and lone
#: surrogates (which no terminal encoding can write).
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with terminal control characters shown as ``\\xNN`` escapes."""
    return UNSAFE.sub(_escape, text)


def printable_json(text: str) -> str:
    """JSON text with the same characters escaped as ``\\uNNNN`` (still valid JSON,
    decoding to the same value)."""
    return UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def printable_line(text: str) -> str:
    """:func:`printable`, and newlines and tabs escaped too (one line of a table
    or a log, which a value must not break in two)."""
    return printable(text).replace("\n", "\\n").replace("\t", "\\t")


def size_text(count: int) -> str:
    """``count`` bytes for people: bytes, KB, MB or GB (the CLI's and the Studio's)."""
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{count:,} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count:,} bytes"
