"""``makers-store copy SRC_URL DST_URL``: move a whole store between backends.

What is copied and why a second run writes nothing: :mod:`makers_store.copying`.
"""

from __future__ import annotations

from typing import Annotated

import typer

from .options import JsonOutput


def copy_command(
    source: Annotated[
        str, typer.Argument(metavar="SRC_URL", help="The store to read.", show_default=False)
    ],
    destination: Annotated[
        str,
        typer.Argument(metavar="DST_URL", help="The store to write.", show_default=False),
    ],
    prune: Annotated[
        bool,
        typer.Option("--prune", help="Delete blobs that exist only in the destination."),
    ] = False,
    as_json: JsonOutput = False,
) -> None:
    """Copy every conversation, message, state value and adapter blob from
    SRC_URL to DST_URL (for example from the local emulator to production).

    Idempotent: blobs already equal in the destination are not written again,
    so an interrupted copy is finished by running it again. Copy a store that
    nobody is writing to.
    """
    from makers_store.copying import copy_store, count_blobs
    from makers_store.factory import open_blob_store
    from makers_store.portal import Portal

    from .errors import UsageProblem
    from .render import emit_json, progress, stderr

    if source == destination:
        raise UsageProblem("SRC_URL and DST_URL name the same store")
    portal = Portal()
    try:
        src = open_blob_store(source, create=False)
        try:
            dst = open_blob_store(destination)
            try:
                total = portal.call(count_blobs(src))
                with progress("copying", total) as bar:
                    report = portal.call(copy_store(src, dst, prune=prune, progress=bar.advance))
            finally:
                portal.call(dst.close())
        finally:
            portal.call(src.close())
    finally:
        portal.stop()
    if as_json:
        emit_json(report.to_dict())
        return
    extra = (
        f"; {report.pruned} blobs only in the destination deleted"
        if prune
        else (
            f"; {report.extra_in_destination} blobs exist only in the destination "
            "(kept; --prune deletes them)"
            if report.extra_in_destination
            else ""
        )
    )
    stderr().print(
        f"copied {report.source_blobs} blobs: {report.written} written "
        f"({report.bytes_written:,} bytes), {report.unchanged} already equal{extra}",
    )
