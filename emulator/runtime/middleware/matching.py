"""Which requests the middleware sees: its ``config.matcher``, tested in the front.

The host (``node/middleware_host.mjs`` with ``middleware_matcher.mjs``) reads
the matcher and turns each entry into a JavaScript regular expression as the
platform does (path patterns compiled, regular-expression strings as
written); the front tests every request against that list here, so a request
no entry covers costs nothing (no round trip to Node). An expression Python
cannot compile the same way is left to the host, which then tests the path
itself (:data:`Coverage.ASK`).

The path tested is the request URL's pathname as the platform's runtime sees
it (a WHATWG URL: dot segments resolved, ``%2e`` counting as a dot, ``\\`` as
``/``, the characters a URL escapes escaped), and also the path as sent: a
request is covered when either is. The second test is ours (the platform's
CLI tests the first only): a path such as ``/chat/%2e%2e/admin`` must not
reach a route the middleware guards without the middleware seeing it,
whatever the route table makes of the dots.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Bytes a URL path escapes (the WHATWG path percent-encode set, beyond controls and non-ASCII).
_ESCAPED = frozenset(b' "<>`{}')
_DOTS = frozenset({".", "%2e"})
_DOUBLE_DOTS = frozenset({"..", ".%2e", "%2e.", "%2e%2e"})
#: JavaScript's named groups, spelled Python's way.
_JS_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z_])")
_JS_BACKREFERENCE = re.compile(r"\\k<([A-Za-z_]\w*)>")


class Coverage(enum.Enum):
    NO = "no"
    YES = "yes"
    #: An entry only JavaScript can test: the host decides.
    ASK = "ask"


def url_pathname(raw_path: bytes) -> str:
    """The pathname ``new URL("http://host" + raw_path)`` gives, for a path as sent."""
    text = "".join(
        "/" if byte == 0x5C
        else f"%{byte:02X}" if byte < 0x21 or byte > 0x7E or byte in _ESCAPED
        else chr(byte)
        for byte in raw_path.split(b"#", 1)[0]
    )
    segments = text.split("/")[1:] if text.startswith("/") else text.split("/")
    resolved: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOTS:
            if resolved:
                resolved.pop()
            if last:
                resolved.append("")
        elif lowered in _DOTS:
            if last:
                resolved.append("")
        else:
            resolved.append(segment)
    return "/" + "/".join(resolved)


def _python_pattern(source: str) -> re.Pattern[str] | None:
    """A JavaScript expression (no flags) as Python's ``re``; None when it cannot be one."""
    translated = _JS_BACKREFERENCE.sub(r"(?P=\1)", _JS_NAMED_GROUP.sub("(?P<", source))
    try:
        return re.compile(translated, re.ASCII)
    except (re.error, RecursionError, OverflowError):
        return None


@dataclass(frozen=True)
class Entry:
    source: str
    pattern: re.Pattern[str] | None
    #: JavaScript cannot compile the entry: only this exact path matches.
    equals: str | None
    #: Python cannot compile what JavaScript can: the host tests it.
    host_tests: bool

    def covers(self, path: str) -> Coverage:
        if self.host_tests:
            return Coverage.ASK
        if self.pattern is None:
            return Coverage.YES if path == self.equals else Coverage.NO
        return Coverage.YES if self.pattern.search(path) else Coverage.NO


class Matchers:
    """The host's matcher list (``[{source, regex, equals}]``), ready to test paths."""

    def __init__(self, listed: Sequence[Any]) -> None:
        entries = []
        for item in listed:
            regex, equals = item.get("regex"), item.get("equals")
            pattern = _python_pattern(regex) if isinstance(regex, str) else None
            entries.append(Entry(
                str(item.get("source")), pattern, equals if regex is None else None,
                host_tests=isinstance(regex, str) and pattern is None,
            ))
        self.entries = tuple(entries)

    @property
    def sources(self) -> list[str]:
        return [entry.source for entry in self.entries]

    def covers(self, raw_path: bytes) -> Coverage:
        """Whether the request with this path (as sent, without the query) is covered."""
        paths = {url_pathname(raw_path), raw_path.decode("latin-1")}
        found = Coverage.NO
        for entry in self.entries:
            for path in paths:
                coverage = entry.covers(path)
                if coverage is Coverage.YES:
                    return coverage
                if coverage is Coverage.ASK:
                    found = coverage
        return found
