"""Output: tables and transcripts for people, JSON for scripts.

Imported by commands when they run (never at ``--help`` time). Every line a
person reads goes through :class:`Screen`: user data is printed as text
(never rich markup or emoji codes), with terminal control characters shown
escaped (:mod:`.text`). ``--json`` output is written exactly.

What a command prints is built from the few shapes below (:class:`Text`,
:class:`Group`, :class:`Padding`, :class:`Table`: rich's, as far as the CLI
uses them), without importing rich: on a terminal :class:`Screen` hands them
to rich, which lays them out to its width; anywhere else (a pipe, a file)
they are written as they are (:func:`plain_lines`), and rich, whose import
costs more than the rest of ``makers-store conv list``, is never imported.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from .text import printable, printable_json, printable_line

if TYPE_CHECKING:  # rich is imported when a terminal shows the output (Screen)
    from rich.console import Console, RenderableType
    from rich.progress import Progress, TaskID

    from makers_store import ConversationMeta, Message

ROLE_STYLES = {
    "user": "bold cyan",
    "assistant": "bold green",
    "system": "bold magenta",
    "tool": "bold yellow",
}
#: Strings longer than this inside structured content are abbreviated in transcripts.
LONG_STRING = 300
#: In a pipe or a file, a table column is padded to align up to this many
#: cells (or its ``max_width``); a longer value is written whole and pushes the
#: rest of its row to the right, so the row stays one line.
ALIGN_AT = 40
#: Characters gathered before a write to a pipe or a file.
WRITE_CHUNK = 1 << 20
#: The characters rich's Text drops from what it holds (bell, backspace,
#: vertical tab, form feed, carriage return): dropped here too, so a line is
#: the same on a terminal and in a pipe.
_DROPPED = dict.fromkeys((7, 8, 11, 12, 13))


class Text:
    """Text with styled parts: rich's ``Text`` as the CLI uses it (append,
    ``+``, ``plain``, ``highlight_words``), held without rich. ``is_json``:
    JSON text, coloured as JSON on a terminal."""

    __slots__ = ("is_json", "plain", "spans", "style")

    def __init__(self, plain: str = "", style: str = "", *, is_json: bool = False) -> None:
        self.plain = plain.translate(_DROPPED)
        self.style = style
        self.spans: list[tuple[int, int, str]] = []  # (start, end, style)
        self.is_json = is_json

    def append(self, value: str | Text, style: str | None = None) -> Text:
        offset = len(self.plain)
        if isinstance(value, Text):
            if value.style:
                self.spans.append((offset, offset + len(value.plain), value.style))
            self.spans += [(start + offset, end + offset, s) for start, end, s in value.spans]
            self.plain += value.plain
        elif value:
            value = value.translate(_DROPPED)
            if style:
                self.spans.append((offset, offset + len(value), style))
            self.plain += value
        return self

    def __add__(self, other: str | Text) -> Text:
        result = Text(self.plain, self.style, is_json=self.is_json)
        result.spans = list(self.spans)
        return result.append(other)

    def highlight_words(self, words: list[str], style: str, *, case_sensitive: bool = True) -> int:
        """Style every occurrence of each of ``words``; returns how many."""
        import re

        pattern = "|".join(re.escape(word) for word in words)
        found = list(re.finditer(pattern, self.plain, 0 if case_sensitive else re.IGNORECASE))
        self.spans += [(*match.span(0), style) for match in found]
        return len(found)


class Group:
    """Renderables one below the other."""

    __slots__ = ("renderables",)

    def __init__(self, *renderables: Renderable) -> None:
        self.renderables = list(renderables)


class Padding:
    """A renderable with blank lines above and below, spaces left and right
    (``pad``: top, right, bottom, left)."""

    __slots__ = ("bottom", "expand", "left", "renderable", "right", "top")

    def __init__(
        self, renderable: Renderable, pad: tuple[int, int, int, int], *, expand: bool = True
    ) -> None:
        self.renderable = renderable
        self.top, self.right, self.bottom, self.left = pad
        self.expand = expand


class Column:
    """A column of a :class:`Table`: its header, its cells, and how rich lays
    it out on a terminal (``layout``: rich's ``add_column`` arguments)."""

    __slots__ = ("cells", "header", "justify", "layout", "max_width")

    def __init__(self, header: str, layout: dict[str, Any]) -> None:
        self.header = header
        self.layout = layout
        self.justify: str = layout.get("justify", "left")
        self.max_width: int | None = layout.get("max_width")
        self.cells: list[str | Text] = []


class Table:
    """Rows under a header line (rich's ``Table``; ``layout``: its arguments)."""

    def __init__(self, **layout: Any) -> None:
        self.layout = layout
        self.show_header: bool = layout.get("show_header", True)
        self.columns: list[Column] = []
        self.row_count = 0

    def add_column(self, header: str = "", **layout: Any) -> None:
        self.columns.append(Column(header, layout))

    def add_row(self, *cells: str | Text) -> None:
        for column, value in zip(self.columns, cells, strict=True):
            column.cells.append(value)
        self.row_count += 1


Renderable: TypeAlias = "str | Text | Group | Padding | Table"


def _console(*, stderr: bool) -> Console:
    from rich.console import Console

    return Console(
        stderr=stderr,
        highlight=False,
        markup=False,  # strings are text: '[/INST]' is printed, not parsed
        emoji=False,  # ':smile:' too
    )


def plainly_not_a_terminal(stream: TextIO) -> bool:
    """Whether rich would find ``stream`` is not a terminal, known without
    importing rich: it is not a tty, and no variable that rich reads to be
    told otherwise is set (``TTY_COMPATIBLE``, ``FORCE_COLOR``: then rich
    decides)."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return isatty is None or not isatty()
    except ValueError:  # closed: no terminal either
        return True


class Screen:
    """Human output on stdout or stderr.

    On a terminal rich lays lines out to its width. Anywhere else (a pipe, a
    file) nothing is laid out: :func:`plain_lines` writes every line whole,
    every character of it, without the padding rich adds to align, so
    ``grep``, ``wc -l``, ``cut`` and diffs see the text. (Laying out for a pipe
    at some huge width is what cut lines at that width: rich crops what it
    lays out, and a width is always finite.)
    """

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        stream = sys.stderr if stderr else sys.stdout
        self._console: Console | None = None
        if not plainly_not_a_terminal(stream):
            self._console = _console(stderr=stderr)
        self.is_terminal = self._console is not None and self._console.is_terminal

    def print(self, item: Renderable, *, style: str | None = None, whole: bool = False) -> None:
        """Print ``item`` (a str is user data: :func:`text`); ``whole``: a line a
        person may copy (a command, a URL) is not wrapped by rich on a terminal."""
        shown = text(item) if isinstance(item, str) else item
        if self._console is not None and self.is_terminal:
            self._console.print(for_rich(shown), style=style, soft_wrap=whole)
            return
        stream = sys.stderr if self._stderr else sys.stdout
        # Written in a few large pieces, not line by line: short output reaches
        # the pipe in one write (before a reader such as `head` goes away).
        pending: list[str] = []
        size = 0
        for line in plain_lines(shown):
            pending += (line, "\n")
            size += len(line) + 1
            if size >= WRITE_CHUNK:
                stream.write("".join(pending))
                pending, size = [], 0
        stream.write("".join(pending))
        stream.flush()


def for_rich(item: Renderable) -> RenderableType:
    """``item`` as rich's renderable, for a terminal."""
    if isinstance(item, str):
        return item  # a table cell: rich renders it as the console says (no markup)
    if isinstance(item, Text):
        from rich.text import Span
        from rich.text import Text as RichText

        made = RichText(item.plain, style=item.style)
        made.spans = [Span(*span) for span in item.spans]
        if item.is_json:
            from rich.highlighter import JSONHighlighter

            made = JSONHighlighter()(made)
        return made
    if isinstance(item, Group):
        from rich.console import Group as RichGroup

        return RichGroup(*(for_rich(part) for part in item.renderables))
    if isinstance(item, Padding):
        from rich.padding import Padding as RichPadding

        pad = (item.top, item.right, item.bottom, item.left)
        return RichPadding(for_rich(item.renderable), pad, expand=item.expand)
    from rich.table import Table as RichTable

    table = RichTable(**item.layout)
    for column in item.columns:
        table.add_column(column.header, **column.layout)
    for index in range(item.row_count):
        table.add_row(*(for_rich(column.cells[index]) for column in item.columns))
    return table


def plain_lines(item: Renderable) -> Iterator[str]:
    """The lines of what :class:`Screen` prints, for output that is not a
    terminal: text as it is, indents kept, table cells aligned up to
    :data:`ALIGN_AT`; no width, no wrapping, no cropping."""
    if isinstance(item, str):
        yield from item.split("\n")
    elif isinstance(item, Text):
        yield from item.plain.split("\n")
    elif isinstance(item, Group):
        for part in item.renderables:
            yield from plain_lines(part)
    elif isinstance(item, Padding):
        yield from [""] * item.top
        for line in plain_lines(item.renderable):
            yield " " * item.left + line if line else line
        yield from [""] * item.bottom
    elif isinstance(item, Table):
        yield from _table_lines(item)
    else:
        raise TypeError(f"no plain rendering for {type(item).__name__}")


def cell_len(value: str) -> int:
    """The cells ``value`` takes on a terminal (rich's count: a wide
    character two, a combining one none); rich is asked only when ``value``
    is not printable ASCII, one cell a character."""
    if value.isascii() and value.isprintable():
        return len(value)
    from rich.cells import cell_len as cells

    return cells(value)


def _one_line(value: Renderable) -> str:
    return "\\n".join(plain_lines(value))


def _table_lines(table: Table) -> Iterator[str]:
    columns = table.columns
    rows = [[_one_line(cell) for cell in column.cells] for column in columns]
    headers = [_one_line(column.header) for column in columns]
    widths = []
    for column, header, values in zip(columns, headers, rows, strict=True):
        widest = max((cell_len(value) for value in [header, *values]), default=0)
        widths.append(min(widest, column.max_width or ALIGN_AT))

    def line(cells: list[str]) -> str:
        last = max((n for n, value in enumerate(cells) if value), default=-1)
        parts = []
        for n, value in enumerate(cells[: last + 1]):
            room = max(widths[n] - cell_len(value), 0)
            if columns[n].justify == "right":
                value = " " * room + value
            elif n < last:
                value += " " * room
            parts.append(value)
        return "  ".join(parts)

    if table.show_header:
        yield line(headers)
    for index in range(table.row_count):
        yield line([values[index] for values in rows])


def stdout() -> Screen:
    return Screen()


def stderr() -> Screen:
    return Screen(stderr=True)


def text(value: str, style: str | None = None) -> Text:
    """User data (or a line holding some) as :class:`Text`, control characters escaped."""
    return Text(printable(value), style=style or "")


def cell(value: str, style: str | None = None) -> Text:
    """One table cell or one-line field: :func:`text` with newlines escaped too."""
    return Text(printable_line(value), style=style or "")


# --- JSON for scripts ------------------------------------------------------------


def json_text(value: Any, *, indent: int | None = None) -> str:
    separators = None if indent else (",", ":")
    return json.dumps(value, ensure_ascii=False, indent=indent, separators=separators)


def human_json(value: Any) -> str:
    """Indented JSON for people: the same value, control characters as ``\\u`` escapes."""
    return printable_json(json_text(value, indent=2))


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
    """The title the CLI shows (and ``conv list --find`` matches): the library's."""
    from makers_store.models import title

    return title(meta)


def forked_from(meta: ConversationMeta) -> str | None:
    """``X at message M`` for a fork (``metadata.forked_from``), else None."""
    parent = meta.metadata.get("forked_from")
    if not isinstance(parent, dict) or not isinstance(parent.get("conversation_id"), str):
        return None
    message = parent.get("message_id")
    at = f"at message {message}" if isinstance(message, str) else "with no messages"
    return f"{parent['conversation_id']} {at}"


def conversation_details(meta: ConversationMeta, users: list[str] | None = None) -> Renderable:
    lines = Text()
    rows = [
        ("conversation", meta.conversation_id),
        ("title", title_of(meta) or "-"),
        ("messages", f"{meta.message_count:,}"),
        ("created", when(meta.created_at)),
        ("last message", when(meta.last_message_at)),
    ]
    if users:
        rows.append(("users", ", ".join(users)))
    parent = forked_from(meta)
    if parent is not None:
        rows.append(("forked from", parent))
    for label, value in rows:
        lines.append(f"{label:>13}  ", style="dim")
        lines.append(printable_line(value) + "\n")
    parts: list[Renderable] = [lines]
    if meta.metadata:
        parts += [Text("     metadata", style="dim"), json_view(meta.metadata)]
    return Group(*parts)


# --- messages ------------------------------------------------------------------------


def json_view(value: Any) -> Text:
    # rich's JSON() would dump the value again, undoing the escapes.
    return Text(human_json(value), is_json=True)


def _abbreviate(value: Any) -> Any:
    if isinstance(value, str) and len(value) > LONG_STRING:
        return f"{value[:32]}… <{len(value)} characters>"
    if isinstance(value, list):
        return [_abbreviate(item) for item in value]
    if isinstance(value, dict):
        return {key: _abbreviate(item) for key, item in value.items()}
    return value


def content_view(content: Any, *, full: bool) -> Renderable:
    """Text as text; multimodal parts one by one; other JSON pretty-printed."""
    if isinstance(content, str):
        return text(content)
    shown = content if full else _abbreviate(content)
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        parts: list[Renderable] = []
        for original, part in zip(content, shown, strict=True):
            kind = original.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(
                original.get("text"), str
            ):
                parts.append(text(original["text"]))
            else:
                parts.append(cell(f"[{kind or 'part'}]", style="italic dim"))
                parts.append(json_view(part))
        return Group(*parts)
    return json_view(shown)


def message_header(message: Message) -> Text:
    header = Text()
    role = printable_line(message.role)
    header.append(f"{role:<9}", style=ROLE_STYLES.get(message.role, "bold"))
    header.append(f" {printable_line(message.message_id)}", style="dim")
    header.append(f"  {when(message.created_at)}")
    if message.updated_at is not None:
        header.append(f"  edited {local_time(message.updated_at)}", style="italic")
    return header


def message_view(message: Message, *, full: bool = False) -> Renderable:
    parts: list[Renderable] = [
        message_header(message),
        Padding(content_view(message.content, full=full), (0, 0, 0, 2), expand=False),
    ]
    if message.metadata:
        metadata = Text("metadata " + printable_json(json_text(message.metadata)), style="dim")
        parts.append(Padding(metadata, (0, 0, 0, 2), expand=False))
    return Group(*parts)


# --- progress --------------------------------------------------------------------------


class Tracker:
    """Moves a progress bar: ``advance(n)`` or ``update(done, total)``."""

    def __init__(self, bar: Progress, task: TaskID) -> None:
        self._bar, self._task = bar, task
        #: whether the bar is on screen (stderr is a terminal): totals that cost
        #: a walk to count are worth it only then
        self.shown = not bar.disable

    def advance(self, count: int = 1) -> None:
        self._bar.advance(self._task, count)

    def update(self, done: int, total: int) -> None:
        self._bar.update(self._task, completed=done, total=total)


@contextmanager
def progress(description: str, total: int | None) -> Iterator[Tracker]:
    """A progress bar on stderr, shown only when stderr is a terminal."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = _console(stderr=True)
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
