"""``ctx.env``: the project's ``.env`` files merged with the real environment.

Precedence, lowest first: ``.env``, then ``.env.local``, then variables
already set in the environment of ``makers-store serve`` (so a shell export
always wins, as with dotenv tools). Syntax: ``KEY=value`` lines, optional
``export`` prefix, ``#`` comments, single quotes (literal) or double quotes
(``\\n``, ``\\t``, ``\\"`` and ``\\\\`` escapes); no variable expansion.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from makers_store.errors import MemoryValidationError

ENV_FILES = (".env", ".env.local")
_LINE = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)$")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def _double_quoted(raw: str, where: str) -> str:
    out: list[str] = []
    index = 1
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            out.append(_ESCAPES.get(raw[index + 1], "\\" + raw[index + 1]))
            index += 2
            continue
        if char == '"':
            return "".join(out)
        out.append(char)
        index += 1
    raise MemoryValidationError(f"{where}: unterminated double quote")


def _value(raw: str, where: str) -> str:
    if raw.startswith('"'):
        return _double_quoted(raw, where)
    if raw.startswith("'"):
        end = raw.find("'", 1)
        if end < 0:
            raise MemoryValidationError(f"{where}: unterminated single quote")
        return raw[1:end]
    comment = re.search(r"\s#", raw)
    return (raw[: comment.start()] if comment else raw).strip()


def parse_env(text: str, *, source: str = ".env") -> dict[str, str]:
    """The variables one ``.env`` file defines."""
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        found = _LINE.match(stripped)
        if found is None:
            raise MemoryValidationError(f"{source}:{number}: expected KEY=value, got {line!r}")
        values[found.group(1)] = _value(found.group(2), f"{source}:{number}")
    return values


def project_env(project: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """``.env`` < ``.env.local`` < ``environ``, merged."""
    merged: dict[str, str] = {}
    for name in ENV_FILES:
        path = project / name
        if path.is_file():
            merged.update(parse_env(path.read_text(encoding="utf-8"), source=str(path)))
    merged.update(environ)
    return merged


def positive_number(name: str, default: float) -> float:
    """``$name`` as a number above 0, or ``default`` when unset; ValueError naming it if bad.

    For the few limits tests need to shorten (timeouts, caps); the production
    value stays the named default.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, not {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be more than 0, not {raw!r}")
    return value
