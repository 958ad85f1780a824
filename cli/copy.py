"""``makers-store copy SRC_URL DST_URL``: move a whole store between backends.

What is copied and why a second run writes nothing: :mod:`makers_store.maintenance.copying`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .options import DryRun, JsonOutput, Yes

if TYPE_CHECKING:
    from makers_store import CopyReport


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
        typer.Option(
            "--prune", help="Delete conversations and blobs that exist only in the destination."
        ),
    ] = False,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Copy every conversation (messages, state, framework data) and every
    blob outside conversations from SRC_URL to DST_URL (for example from the
    local emulator to production).

    Each conversation in DST_URL is replaced at once: while the copy runs,
    fails or is interrupted it reads as it was or as in SRC_URL. Idempotent:
    conversations and blobs already equal are not written again, so an
    interrupted copy is finished by running it again. When the copy would
    replace a conversation that differs in DST_URL, or delete one (--prune),
    it says so and asks first (--yes goes ahead; --dry-run shows the plan).
    Copy a store that nobody is writing to.
    """
    from contextlib import ExitStack, closing

    from makers_store import Portal

    from .context import Session
    from .errors import StoreNotFound, UsageProblem
    from .options import confirmed
    from .plans import copy_plan
    from .render import emit_json, progress, stderr

    if source == destination:
        raise UsageProblem("SRC_URL and DST_URL name the same store")
    portal = Portal()  # one event loop for both stores: the copy uses them together
    try:
        with ExitStack() as stack:
            src = stack.enter_context(closing(Session(source, portal=portal)))
            try:
                # a dry run creates nothing: a destination not made yet is empty
                dst: Session | None = stack.enter_context(
                    closing(Session(destination, create=not dry_run, portal=portal))
                )
            except StoreNotFound:
                dst = None
            if dry_run or not yes:
                plan = copy_plan(src.store, None if dst is None else dst.store, prune=prune)
                confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
            assert dst is not None
            total = src.store.admin.count_units()
            with progress("copying", total) as bar:
                report = src.store.admin.copy_to(dst.store, prune=prune, progress=bar.advance)
    finally:
        portal.stop()
    if as_json:
        emit_json(report.to_dict())
        return
    stderr().print(_summary(report, prune))


def _summary(report: CopyReport, prune: bool) -> str:
    """What the copy did, in one line (user data: none, only counts)."""
    from .text import counted

    if prune:
        extra = (
            f"; deleted {counted(report.pruned_conversations, 'conversation')} and "
            f"{counted(report.pruned_blobs, 'blob')} only in the destination"
        )
    elif report.extra_conversations or report.extra_blobs:
        extra = (
            f"; {counted(report.extra_conversations, 'conversation')} and "
            f"{counted(report.extra_blobs, 'blob')} exist only in the destination "
            "(kept; --prune deletes them)"
        )
    else:
        extra = ""
    return (
        f"copied {counted(report.conversations, 'conversation')} "
        f"({report.conversations_written:,} written, {report.conversations_unchanged:,} "
        f"already equal) and {counted(report.blobs, 'other blob')} "
        f"({report.blobs_written:,} written, {report.blobs_unchanged:,} already equal), "
        f"{counted(report.bytes_written, 'byte')}{extra}"
    )
