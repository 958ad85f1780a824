"""``makers-store vacuum``: give back the space deletes leave (``store.admin.vacuum()``)."""

from __future__ import annotations

import typer

from .context import open_session
from .options import JsonOutput


def vacuum_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Give back the space deleted conversations leave and report the size before
    and after. It deletes no data and changes none (no confirmation is asked);
    the store stays readable meanwhile. SQLite: its free pages, in short
    transactions; PostgreSQL: VACUUM of the store's tables; S3 and memory:
    nothing to do, said so."""
    from makers_store.text import size_text

    from .render import emit_json, stdout

    with open_session(ctx) as session:
        report = session.store.admin.vacuum()
    if as_json:
        emit_json(report.to_dict())
        return
    rows = [("backend", report.backend)]
    if report.bytes_before is not None and report.bytes_after is not None:
        rows += [
            ("before", size_text(report.bytes_before)),
            ("after", size_text(report.bytes_after)),
            ("reclaimed", size_text(report.reclaimed_bytes or 0)),
        ]
    rows.append(("done", report.note))
    console = stdout()
    for label, value in rows:
        console.print(f"{label:>10}  {value}")
