"""Options shared by several commands, and the parsing of what users type.

Only typer and the standard library at import time (``--help`` stays fast).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from .errors import UsageProblem


class Order(StrEnum):
    asc = "asc"
    desc = "desc"


class Role(StrEnum):
    user = "user"
    assistant = "assistant"
    system = "system"
    tool = "tool"


JsonOutput = Annotated[
    bool, typer.Option("--json", help="Print JSON with the API's field names, for scripts.")
]
ConversationId = Annotated[
    str, typer.Argument(metavar="CONVERSATION_ID", help="The conversation id.", show_default=False)
]
UserFilter = Annotated[
    str | None, typer.Option("--user", "-u", metavar="USER_ID", help="Only this user's.")
]
After = Annotated[
    str | None,
    typer.Option("--after", metavar="CURSOR", help="Start after this cursor (in listing order)."),
]
Before = Annotated[
    str | None,
    typer.Option("--before", metavar="CURSOR", help="End before this cursor (in listing order)."),
]
All = Annotated[bool, typer.Option("--all", "-a", help="Every page, not only the first.")]

#: The API's page size limit; the CLI pages through larger requests.
PAGE = 100


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(text: str, argument: str) -> Any:
    """Strict JSON typed by the user, or a usage error naming the argument."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise UsageProblem(f"{argument} must be JSON ({exc}); got {_clip(text)!r}") from None


def parse_loose(text: str) -> Any:
    """JSON when the text parses as JSON, else the text itself."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return text


def parse_pairs(pairs: list[str] | None, option: str) -> dict[str, Any]:
    """``KEY=VALUE`` items into a dict; values parsed with :func:`parse_loose`."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageProblem(f"{option} expects KEY=VALUE, got {pair!r}")
        out[key] = parse_loose(value)
    return out


def read_text_argument(value: str) -> str:
    """``-`` means standard input."""
    return sys.stdin.read() if value == "-" else value


def read_content(
    content: str | None, content_json: str | None, content_file: Path | None, *, required: bool
) -> tuple[bool, Any]:
    """(given, content) from the mutually exclusive content options."""
    given = [
        name
        for name, value in (
            ("--content", content),
            ("--content-json", content_json),
            ("--content-file", content_file),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise UsageProblem(f"{' and '.join(given)} are mutually exclusive; pass one")
    if not given:
        if required:
            raise UsageProblem("pass the content: --content, --content-json or --content-file")
        return False, None
    if content is not None:
        return True, read_text_argument(content)
    if content_json is not None:
        return True, parse_json(read_text_argument(content_json), "--content-json")
    assert content_file is not None
    try:
        return True, content_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageProblem(f"--content-file {content_file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageProblem(f"--content-file {content_file}: not UTF-8 text") from None


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def check_cursor_flags(after: str | None, before: str | None) -> None:
    """--after and --before name opposite directions; refuse both at once."""
    if after is not None and before is not None:
        raise UsageProblem("--after and --before are mutually exclusive; pass one")
