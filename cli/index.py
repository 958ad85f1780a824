"""``makers-store index``: the recency indexes behind ``conv list``."""

from __future__ import annotations

import typer

from .context import open_session
from .options import JsonOutput, UserFilter, examples

app = typer.Typer(
    help="Inspect, check and rebuild the conversation indexes.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("ls", epilog=examples("makers-store index ls --user u_123"))
def ls_command(ctx: typer.Context, user: UserFilter = None, as_json: JsonOutput = False) -> None:
    """List the raw index entries (recency, then per-user) and whether each is current."""
    from makers_store import IndexEntry

    from .render import emit_json_line, local_time, stdout

    console = stdout()

    def show(entry: IndexEntry) -> None:
        if as_json:
            emit_json_line(entry.to_dict())
            return
        index = "all" if entry.user_id is None else f"user {entry.user_id}"
        at = "-" if entry.last_message_at is None else local_time(entry.last_message_at)
        if entry.current:
            mark = "current"
        else:
            mark = f"{'owed' if entry.owed else 'STALE'}: {entry.reason}"
        console.print(f"{index:<16} {at}  {entry.conversation_id}  [{mark}]")

    count = 0
    with open_session(ctx) as session:
        for entry in session.store.admin.iter_index_entries(user_id=user):
            show(entry)
            count += 1
    if not as_json and count == 0:
        from .render import stderr

        stderr().print("no index entries")


@app.command(
    "check",
    epilog=examples(
        "makers-store index check",
        "makers-store index check --json",
    ),
)
def check_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Compare every index entry with the conversations; exit code 1 on drift."""
    with open_session(ctx) as session:
        report = session.store.admin.check_index()
    from .render import emit_json, stdout

    if as_json:
        emit_json(report.to_dict())
    else:
        console = stdout()
        for drift in report.drift:
            console.print(f"{drift.kind:<8} {drift.key}  ({drift.reason})")
        owed = f" ({report.owed} superseded, awaiting a batch delete)" if report.owed else ""
        console.print(
            f"checked {report.entries} entries{owed} and {report.conversations} conversations: "
            + (
                "no drift"
                if report.ok
                else f"{len(report.drift)} problem(s); run 'makers-store index rebuild'"
            ),
        )
    if not report.ok:
        raise typer.Exit(1)


@app.command("rebuild", epilog=examples("makers-store index rebuild"))
def rebuild_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Recreate every index entry from the conversations and remove stale ones."""
    from .render import emit_json, progress, stdout

    with open_session(ctx) as session:
        total = session.store.admin.count_conversations()
        with progress("rebuilding indexes", total) as bar:
            summary = session.store.admin.rebuild_index(on_conversation=bar.advance)
    if as_json:
        emit_json(summary.to_dict())
    else:
        stdout().print(
            f"indexed {summary.conversations} conversations: "
            f"{summary.created} entries created, {summary.removed} stale entries removed",
        )
