"""Output: rich tables and transcripts for people, JSON for scripts.

Imported by commands when they run (never at ``--help`` time); rich is
imported here, at module level.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.json import JSON
from rich.padding import Padding
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from makers_store import ConversationMeta, Message

ROLE_STYLES = {
    "user": "bold cyan",
    "assistant": "bold green",
    "system": "bold magenta",
    "tool": "bold yellow",
}
#: Strings longer than this inside structured content are abbreviated in transcripts.
LONG_STRING = 300


def stdout() -> Console:
    return Console(highlight=False, soft_wrap=False)


def stderr() -> Console:
    return Console(stderr=True, highlight=False)


# --- JSON for scripts ------------------------------------------------------------


def json_text(value: Any, *, indent: int | None = None) -> str:
    separators = None if indent else (",", ":")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


def emit_json(document: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json_text(document, indent=2) + "\n")
    sys.stdout.flush()


def emit_json_line(item: Any) -> None:
    """One line of a JSON-lines stream on stdout, flushed at once."""
    sys.stdout.write(json_text(item) + "\n")
    sys.stdout.flush()


# --- time ----------------------------------------------------------------------------


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def local_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S")


def ago(ms: int, now: int | None = None) -> str:
    """'just now', '3 min ago', '2 h ago', '5 days ago' (or 'in ...' for the future)."""
    delta = ((now_ms() if now is None else now) - ms) // 1000
    future, delta = delta < 0, abs(delta)
    if delta < 10:
        return "just now"
    for size, unit in ((86_400 * 365, "y"), (86_400, "days"), (3600, "h"), (60, "min")):
        if delta >= size:
            amount = delta // size
            label = "day" if unit == "days" and amount == 1 else unit
            text = f"{amount} {label}"
            break
    else:
        text = f"{delta} s"
    return f"in {text}" if future else f"{text} ago"


def when(ms: int) -> str:
    return f"{local_time(ms)} ({ago(ms)})"


# --- conversations -------------------------------------------------------------------


def title_of(meta: ConversationMeta) -> str:
    for key in ("title", "name", "subject"):
        value = meta.metadata.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def conversation_details(meta: ConversationMeta, users: list[str] | None = None) -> RenderableType:
    lines = Text()
    rows = [
        ("conversation", meta.conversation_id),
        ("title", title_of(meta) or "-"),
        ("messages", str(meta.message_count)),
        ("created", when(meta.created_at)),
        ("last message", when(meta.last_message_at)),
    ]
    for label, value in rows:
        lines.append(f"{label:>13}  ", style="dim")
        lines.append(f"{value}\n")
    parts: list[RenderableType] = [lines]
    if meta.metadata:
        parts += [Text("     metadata", style="dim"), json_view(meta.metadata)]
    return Group(*parts)


# --- messages ------------------------------------------------------------------------


def json_view(value: Any) -> RenderableType:
    return JSON.from_data(value, indent=2, ensure_ascii=False)


def _abbreviate(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG_STRING:
        return f"{value[:32]}… <{len(value)} characters>"
    if isinstance(value, list):
        return [_abbreviate(item) for item in value]
    if isinstance(value, dict):
        return {key: _abbreviate(item) for key, item in value.items()}
    return value


def content_view(content: Any, *, full: bool) -> RenderableType:
    """Text as text; multimodal parts one by one; other JSON pretty-printed."""
    if isinstance(content, str):
        return Text(content)
    shown = content if full else _abbreviate(content)
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        parts: list[RenderableType] = []
        for original, part in zip(content, shown, strict=True):
            kind = original.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(
                original.get("text"), str
            ):
                parts.append(Text(original["text"]))
            else:
                parts.append(Text(f"[{kind or 'part'}]", style="italic dim"))
                parts.append(json_view(part))
        return Group(*parts)
    return json_view(shown)


def message_header(message: Message) -> Text:
    header = Text()
    header.append(f"{message.role:<9}", style=ROLE_STYLES.get(message.role, "bold"))
    header.append(f" {message.message_id}", style="dim")
    header.append(f"  {when(message.created_at)}")
    if message.updated_at is not None:
        header.append(f"  edited {local_time(message.updated_at)}", style="italic")
    return header


def message_view(message: Message, *, full: bool = False) -> RenderableType:
    parts: list[RenderableType] = [
        message_header(message),
        Padding(content_view(message.content, full=full), (0, 0, 0, 2), expand=False),
    ]
    if message.metadata:
        metadata = Text("metadata " + json_text(message.metadata), style="dim")
        parts.append(Padding(metadata, (0, 0, 0, 2), expand=False))
    return Group(*parts)


# --- progress --------------------------------------------------------------------------


class Tracker:
    """Moves a progress bar: ``advance(n)`` or ``update(done, total)``."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self._bar, self._task = bar, task

    def advance(self, count: int = 1) -> None:
        self._bar.advance(self._task, count)

    def update(self, done: int, total: int) -> None:
        self._bar.update(self._task, completed=done, total=total)


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Tracker]:
    """A progress bar on stderr, shown only when stderr is a terminal."""
    console = stderr()
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
        transient=True,
    )
    with bar:
        yield Tracker(bar, bar.add_task(description, total=total))
