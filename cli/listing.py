"""What list commands print: a table for people, or JSON, JSON lines, CSV or
TSV for programs (``--format``; ``--json`` is ``--format json``).

Every machine format carries the API's field names and exact values: ``json``
the document ``--json`` prints (items and cursors), ``jsonl`` one item per
line, ``csv`` and ``tsv`` a header and one row per item, the columns being the
item's JSON fields in their order (nested values as compact JSON, None as an
empty cell). CSV quotes as RFC 4180 does; TSV keeps one line per row by
writing backslash, tab, newline and carriage return as ``\\\\``, ``\\t``,
``\\n``, ``\\r``. Only the table shows user data escaped for a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from enum import StrEnum
from typing import Annotated, Any

import typer

from .errors import UsageProblem


class Format(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"
    csv = "csv"
    tsv = "tsv"


FormatOption = Annotated[
    Format | None,
    typer.Option(
        "--format",
        help="table for people (the default); json (as --json), jsonl, csv or tsv for programs.",
        show_default=False,
    ),
]


def chosen(format_: Format | None, as_json: bool, *, stream: bool = False) -> Format:
    """The format asked for: ``--format``, or ``--json``, or the table. For a
    command that streams (``blob ls``, ``index ls``) ``--json`` has always
    meant JSON lines, and still does; ``--format json`` is then one document."""
    json_is = Format.jsonl if stream else Format.json
    if as_json and format_ not in (None, json_is):
        raise UsageProblem(f"--json and --format {format_} are mutually exclusive; pass one")
    if as_json:
        return json_is
    return format_ or Format.table


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    from .render import json_text

    return json_text(value)


_TSV_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def emit_rows(format_: Format, columns: Sequence[str], items: Iterable[dict[str, Any]]) -> None:
    """``items`` as JSON lines, CSV or TSV on stdout (columns: for CSV/TSV)."""
    if format_ is Format.jsonl:
        from .render import emit_json_line

        for item in items:
            emit_json_line(item)
        return
    if format_ is Format.tsv:
        out = sys.stdout
        out.write("\t".join(columns) + "\n")
        for item in items:
            out.write("\t".join(_cell(item.get(c)).translate(_TSV_ESCAPES) for c in columns))
            out.write("\n")
        out.flush()
        return
    if format_ is Format.csv:
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(columns)
        for item in items:
            writer.writerow([_cell(item.get(c)) for c in columns])
        sys.stdout.flush()
        return
    raise AssertionError(f"not a row format: {format_}")
