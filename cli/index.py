"""``makers-store index``: the recency indexes behind ``conv list``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .context import open_session
from .listing import FormatOption
from .options import JsonOutput, UserFilter, examples
from .text import counted

if TYPE_CHECKING:
    from makers_store import IndexCheck, RebuildSummary
    from makers_store.blob import SearchIndexCheck

    from .render import Screen

app = typer.Typer(
    help="Inspect, check and rebuild the conversation indexes.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


#: The columns of ``index ls --format csv|tsv``: an entry's JSON fields.
ENTRY_COLUMNS = ("key", "index", "user_id", "last_message_at", "conversation_id", "current",
                 "reason", "owed")  # fmt: skip


@app.command("ls", epilog=examples("makers-store index ls --user u_123"))
def ls_command(
    ctx: typer.Context,
    user: UserFilter = None,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """List the raw index entries (recency, then per-user) and whether each is current."""
    from .listing import Format, chosen, emit_rows
    from .render import cell, emit_json, local_time, stdout

    shape = chosen(format_, as_json, stream=True)
    with open_session(ctx) as session:
        entries = (
            entry.to_dict() for entry in session.store.admin.iter_index_entries(user_id=user)
        )
        if shape is Format.json:
            emit_json({"items": list(entries)})
            return
        if shape is not Format.table:  # streamed, as the walk reads them
            emit_rows(shape, ENTRY_COLUMNS, entries)
            return
        from .render import Text

        console = stdout()
        count = 0
        for entry in entries:
            if count == 0:  # the header, once there is a row to head
                console.print(Text(f"{'index':<16} {'last message':<19}  conversation  [state]",
                                   style="bold"))  # fmt: skip
            index = "all" if entry["user_id"] is None else f"user {entry['user_id']}"
            at = entry["last_message_at"]
            shown_at = "-" if at is None else local_time(at)
            if entry["current"]:
                mark = "current"
            else:
                mark = f"{'owed' if entry['owed'] else 'STALE'}: {entry['reason']}"
            cid = cell(entry["conversation_id"] or "-")
            console.print(cell(f"{index:<16} ") + Text(f"{shown_at}  ") + cid + Text(f"  [{mark}]"))
            count += 1
    if count == 0:
        from .render import stderr

        stderr().print("no index entries")


@app.command(
    "check",
    epilog=examples(
        "makers-store index check",
        "makers-store index check --fix",
    ),
)
def check_command(
    ctx: typer.Context,
    fix: Annotated[
        bool,
        typer.Option(
            "--fix",
            help="Repair what the check finds (as 'index rebuild' does), then check again; "
            "exit code 0 when clean afterwards. Entries are derived from the conversations, "
            "so no confirmation is asked.",
        ),
    ] = False,
    as_json: JsonOutput = False,
) -> None:
    """Compare every index entry with the conversations, and the search index
    with the messages; exit code 1 on drift."""
    from .render import emit_json, progress, stdout

    # Index entries are derived data: the repair deletes only entries no
    # conversation's meta vouches for and writes those a meta implies, never
    # a conversation, a message or state, so unlike the bulk deletes it asks
    # nothing (and needs no --dry-run: the check without --fix is that).
    fixed: RebuildSummary | None = None
    reindexed: int | None = None
    with open_session(ctx) as session:
        found = after = session.store.admin.check_index()
        text_found = text_after = session.store.admin.check_search_index()
        if fix and not found.ok:
            total = session.store.admin.count_conversations()
            with progress("repairing indexes", total) as bar:
                fixed = session.store.admin.rebuild_index(on_conversation=bar.advance)
            after = session.store.admin.check_index()
        if fix and text_found is not None and not text_found.ok:
            reindexed = session.store.admin.rebuild_search_index()
            text_after = session.store.admin.check_search_index()
    text_ok = text_after is None or text_after.ok
    if as_json:
        search_index = {
            "search_index": None if text_found is None else text_found.to_dict(),
        }
        if fix:
            emit_json(
                {
                    "ok": after.ok and text_ok,
                    "found": found.to_dict(),
                    "fixed": None if fixed is None else fixed.to_dict(),
                    "after": after.to_dict(),
                    **search_index,
                    "search_index_rebuilt": reindexed,
                    "search_index_after": None if text_after is None else text_after.to_dict(),
                }
            )
        else:
            emit_json({**found.to_dict(), **search_index, "ok": found.ok and text_ok})
    else:
        console = stdout()
        if text_found is not None:
            _print_search_check(console, text_found, "" if fix else " (index check --fix)")
        if reindexed is not None and text_after is not None:
            console.print(f"rebuilt the search index: {counted(reindexed, 'message')}")
            _print_search_check(console, text_after, " again")
        _print_check(console, found, "" if fix else "; run 'makers-store index check --fix'")
        if fixed is not None:
            console.print(
                f"fixed: {counted(fixed.removed, 'stale entry', 'stale entries')} removed, "
                f"{counted(fixed.created, 'missing entry', 'missing entries')} created"
            )
            _print_check(console, after, "; run 'makers-store index check --fix' again")
    if not after.ok or not text_ok:
        raise typer.Exit(1)


def _print_search_check(console: Screen, report: SearchIndexCheck, advice: str) -> None:
    """The search index's drift, by kind, then the verdict (at most 20 keys each)."""
    for kind, found in (("missing", report.missing), ("stale", report.stale),
                        ("wrong", report.wrong)):  # fmt: skip
        for key in found[:20]:
            console.print(f"{kind:<8} {key}  (search index)")
    waiting = ""
    if report.pending:
        waiting = f", {counted(report.pending, 'write')} waiting to be indexed"
    problems = len(report.missing) + len(report.stale) + len(report.wrong) + (not report.sound)
    console.print(
        f"search index ({report.index}): {counted(report.messages, 'message')}{waiting}: "
        + ("no drift" if report.ok else f"{counted(problems, 'problem')}; rebuild it{advice}")
    )


def _print_check(console: Screen, report: IndexCheck, advice: str) -> None:
    """Each drift found, then the counts and the verdict."""
    for drift in report.drift:
        console.print(f"{drift.kind:<8} {drift.key}  ({drift.reason})")
    owed = f" ({report.owed:,} superseded, awaiting a batch delete)" if report.owed else ""
    console.print(
        f"checked {counted(report.entries, 'entry', 'entries')}{owed} and "
        f"{counted(report.conversations, 'conversation')}: "
        + ("no drift" if report.ok else f"{counted(len(report.drift), 'problem')}{advice}"),
    )


@app.command("rebuild", epilog=examples("makers-store index rebuild"))
def rebuild_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Recreate every index entry from the conversations and remove stale ones;
    build the search index again from the messages."""
    from .render import emit_json, progress, stdout

    with open_session(ctx) as session:
        total = session.store.admin.count_conversations()
        with progress("rebuilding indexes", total) as bar:
            summary = session.store.admin.rebuild_index(on_conversation=bar.advance)
        with progress("rebuilding the search index", None):
            messages = session.store.admin.rebuild_search_index()
    if as_json:
        emit_json({**summary.to_dict(), "search_index_messages": messages})
    else:
        stdout().print(
            f"indexed {counted(summary.conversations, 'conversation')}: "
            f"{counted(summary.created, 'entry', 'entries')} created, "
            f"{counted(summary.removed, 'stale entry', 'stale entries')} removed",
        )
        if messages is not None:
            stdout().print(f"search index: {counted(messages, 'message')} indexed")
