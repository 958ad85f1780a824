"""Options shared by several commands, and the parsing of what users type.

Only typer and the standard library at import time (``--help`` stays fast).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .errors import UsageProblem

if TYPE_CHECKING:
    from datetime import timedelta

#: The API's page size limit; the CLI pages through larger requests.
PAGE = 100


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


def complete_conversation_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """Tab completion (typer's ``--install-completion``): ids of the current
    store's most recent conversations. Never creates a store, never fails."""
    try:
        from .context import Session

        url = ctx.find_root().params.get("store")
        session = Session(url if isinstance(url, str) else None)
        try:
            page = session.store.list_conversations(limit=PAGE)
        finally:
            session.close()
        return [m.conversation_id for m in page.items if m.conversation_id.startswith(incomplete)]
    except Exception:  # a completion that fails offers nothing rather than a traceback
        return []


ConversationId = Annotated[
    str,
    typer.Argument(
        metavar="CONVERSATION_ID",
        help="The conversation id.",
        show_default=False,
        autocompletion=complete_conversation_ids,
    ),
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
Yes = Annotated[
    bool, typer.Option("--yes", "-y", help="Go ahead without asking (needed without a terminal).")
]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print what would be deleted or replaced; change nothing.")
]
#: Where a local server (``serve``, ``studio``) listens; each command sets its default port.
ListenHost = Annotated[
    str,
    typer.Option(help="Interface to listen on; anything but loopback is reachable by others."),
]
ListenPort = Annotated[
    int, typer.Option(min=0, max=65535, help="Port to listen on (0 picks a free one).")
]


#: The forms of a duration, as every help and error names them.
DURATION_FORMS = "45s, 90min, 12h, 30d, 2w, 6mo"

Since = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="TIME",
        help="From this time: ISO (2026-12-01, 2026-12-01T09:30) or an age "
        f"({DURATION_FORMS}; min is a minute, mo 30 days).",
    ),
]
Until = Annotated[
    str | None,
    typer.Option("--until", metavar="TIME", help="Up to this time (the same forms as --since)."),
]

#: Seconds per unit of a duration. ``m`` alone is no unit: in a cron line
#: ``--idle-for 6m`` meant six months to one reader and six minutes to
#: another (issue 32), so minutes are ``min`` and months ``mo`` (30 days).
_UNITS = {"s": 1, "min": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400, "mo": 30 * 86_400}
#: The units spelled out (``30 days``, ``2 hours``), singular and plural.
_UNIT_WORDS = {"sec": "s", "second": "s", "minute": "min", "hour": "h", "hr": "h", "day": "d",
               "week": "w", "month": "mo"}  # fmt: skip
#: The longest duration taken (100 years): longer ones name no time a
#: store holds, and would overflow dates.
MAX_DURATION_DAYS = 36_500


def age_ms(text: str, option: str) -> int | None:
    """A duration (``90s``, ``15min``, ``2h``, ``7d``, ``4w``, ``6mo``; a
    fraction too: ``1.5h``) in milliseconds, or None when ``text`` is not
    written as a number and a word: the one reader of durations, behind
    ``--since``/``--until`` and ``--idle-for``. The unit ``m`` (minutes or
    months?), an unknown unit and a duration past 100 years are usage
    errors naming ``option``."""
    import re

    written = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]+)", text.strip())
    if written is None:
        return None
    amount, unit = float(written.group(1)), written.group(2).lower()
    if unit not in _UNITS:  # a word (days, hours) or a plural (mins, hrs)
        singular = unit.removesuffix("s")
        if singular in _UNIT_WORDS or (singular in _UNITS and singular != "m"):
            unit = _UNIT_WORDS.get(singular, singular)
    if unit == "m":
        raise UsageProblem(
            f"{option} {text!r}: 'm' could mean minutes or months; write min for minutes "
            f"({written.group(1)}min) or mo for months of 30 days ({written.group(1)}mo)"
        )
    if unit not in _UNITS:
        raise UsageProblem(
            f"{option} {text!r}: unknown unit {unit!r}; a duration is a number and one of "
            f"s, min, h, d, w, mo ({DURATION_FORMS})"
        )
    seconds = amount * _UNITS[unit]
    if not seconds <= MAX_DURATION_DAYS * 86_400:  # inf and huge values alike
        raise UsageProblem(
            f"{option} {text!r} is too long: at most {MAX_DURATION_DAYS}d (100 years)"
        )
    return int(seconds * 1000)


def parse_duration(value: str, option: str) -> timedelta:
    """A positive duration given to ``option`` (``--idle-for 30d``) as a
    timedelta, or a usage error naming the option."""
    from datetime import timedelta

    ms = age_ms(value, option)
    if ms is None or ms <= 0:
        raise UsageProblem(
            f"{option} must be a positive duration: a number and a unit, "
            f"s, min, h, d, w or mo ({DURATION_FORMS}); got {value!r}"
        )
    return timedelta(milliseconds=ms)


def spoken_duration(ms: int) -> str:
    """A duration in the largest unit that says it whole: ``30 days``,
    ``6 minutes``, ``90 minutes`` (for 1.5h), ``1 second``."""
    from .text import counted

    for size, unit in ((86_400_000, "day"), (3_600_000, "hour"), (60_000, "minute")):
        if ms >= size and ms % size == 0:
            return counted(ms // size, unit)
    if ms % 1000 == 0:
        return counted(ms // 1000, "second")
    return f"{ms / 1000:,.3f} seconds"


def parse_time(value: str | None, option: str, *, now_ms: int | None = None) -> int | None:
    """``--since``/``--until`` as epoch milliseconds: an ISO date or time
    (without a zone: local time) or an age back from now (``2h``, ``7d``)."""
    import time
    from datetime import datetime

    if value is None:
        return None
    text = value.strip()
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    age = age_ms(text, option)
    if age is not None:
        return now - age
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        return int(moment.astimezone().timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise UsageProblem(
            f"{option} must be an ISO time (2026-12-01, 2026-12-01T09:30, with a zone or in "
            f"local time) or an age ({DURATION_FORMS}); got {value!r}"
        ) from None


def time_range(since: str | None, until: str | None) -> tuple[int | None, int | None]:
    """Both times, parsed, and refused when the range is empty."""
    start, end = parse_time(since, "--since"), parse_time(until, "--until")
    if start is not None and end is not None and start > end:
        raise UsageProblem(f"--since {since} is after --until {until}: nothing is in between")
    return start, end


def examples(*lines: str) -> str:
    """A command's help epilog: one or two example command lines, printed as
    written (click's ``\\b`` marker stops it from re-wrapping them)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  $ {line}" for line in lines)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def too_deep(argument: str) -> UsageProblem:
    """JSON nested deeper than Python's parser recurses (far deeper than any
    store accepts): said in the words the library uses for its own limit."""
    try:
        from makers_store.limits import MAX_NESTING

        limit = f" (at most {MAX_NESTING} levels of lists and dicts)"
    except ImportError:  # the limit's home moved: the message stays true without it
        limit = ""
    return UsageProblem(f"{argument} must be JSON nested less deeply{limit}")


def parse_json(text: str, argument: str) -> Any:
    """Strict JSON typed by the user, or a usage error naming the argument."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        raise UsageProblem(f"{argument} must be JSON ({exc}); got {_clip(text)!r}") from None
    except RecursionError:
        raise too_deep(argument) from None


def parse_loose(text: str, argument: str = "VALUE") -> Any:
    """JSON when the text parses as JSON, else the text itself (JSON too deep
    to parse is a usage error naming ``argument``, not a string)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return text
    except RecursionError:
        raise too_deep(argument) from None


def parse_pairs(pairs: list[str] | None, option: str) -> dict[str, Any]:
    """``KEY=VALUE`` items into a dict; values parsed with :func:`parse_loose`."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageProblem(f"{option} expects KEY=VALUE, got {pair!r}")
        out[key] = parse_loose(value, f"{option} {key}=VALUE")
    return out


def utf8_text(data: bytes, where: str) -> str:
    """``data`` decoded as UTF-8, or a usage error naming ``where``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageProblem(
            f"{where} is not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})"
        ) from None


def read_text_argument(value: str, option: str) -> str:
    """``-`` means standard input (read as UTF-8; anything else is refused,
    naming ``option``)."""
    if value != "-":
        return value
    return utf8_text(sys.stdin.buffer.read(), f"standard input (for {option} -)")


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
        return True, read_text_argument(content, "--content")
    if content_json is not None:
        text = read_text_argument(content_json, "--content-json")
        return True, parse_json(text, "--content-json")
    assert content_file is not None
    try:
        return True, content_file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageProblem(f"--content-file {content_file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageProblem(f"--content-file {content_file}: not UTF-8 text") from None


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@contextmanager
def api_arguments_as_flags(*names: str, **flags: str) -> Iterator[None]:
    """The library names its arguments (``after must be ...``); the user typed
    ``--after``: say that instead. ``flags`` names the option of an argument
    spelled otherwise (``user_id="user"``: ``--user must not be empty``)."""
    from makers_store.errors import MemoryValidationError

    try:
        yield
    except MemoryValidationError as exc:
        message = str(exc)
        for name in names:
            if message.startswith(f"{name} "):
                raise UsageProblem(f"--{message}") from None
        for name, flag in flags.items():
            if message.startswith(f"{name} "):
                raise UsageProblem(f"--{flag}{message[len(name) :]}") from None
        raise


@dataclass
class Plan:
    """What a command that deletes or replaces data is about to do.

    ``action`` is one clause in the imperative (``delete conversation 'c1' and
    its 3 messages``); ``destructive`` is whether it deletes or replaces
    anything that exists (an import into an empty store does not, and goes
    ahead without a question); ``details`` are the lines ``--dry-run`` prints
    after it (ids, one per line); ``counts`` what ``--dry-run --json`` prints.
    """

    action: str
    destructive: bool = True
    details: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)


def confirmed(plan: Plan, *, yes: bool, dry_run: bool, as_json: bool = False) -> None:
    """The one gate before a command deletes or replaces existing data.

    ``--dry-run`` prints the plan on stdout and ends the command (exit code 0,
    nothing changed). A plan that destroys nothing goes ahead. ``--yes`` goes
    ahead. Otherwise the question is asked on the terminal (on stderr, the
    answer read from stdin; no answer is no); without a terminal to ask on
    (a script, a pipe, stdin holding data) the command is refused, exit code 1,
    nothing changed: a script says --yes when it means it.
    """
    from .errors import CliError
    from .text import printable

    if dry_run:
        if as_json:
            from .render import emit_json

            emit_json({"dry_run": True, "action": plan.action, **plan.counts})
        else:
            from .render import stdout

            screen = stdout()
            screen.print(f"would {plan.action}")
            for line in plan.details:
                screen.print(line)
        raise typer.Exit(0)
    if yes or not plan.destructive:
        return
    refused = f"did not {plan.action}"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise CliError(
            f"{refused}: no terminal to ask on (--yes goes ahead, --dry-run shows the plan)"
        )
    sys.stderr.write(f"{printable(plan.action[:1].upper() + plan.action[1:])}? "
                     "This cannot be undone [y/N]: ")  # fmt: skip
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer.endswith("\n"):
        sys.stderr.write("\n")
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError(f"{refused} (--yes skips the question)")


def check_cursor_flags(after: str | None, before: str | None) -> None:
    """--after and --before name opposite directions; refuse both at once."""
    if after is not None and before is not None:
        raise UsageProblem("--after and --before are mutually exclusive; pass one")
