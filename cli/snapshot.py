"""``makers-store snapshot``, ``reset`` and ``seed``: the dev loop's data.

The rules (what a snapshot holds, consistency, failures, where they live):
:mod:`makers_store.maintenance.snapshots`. Restoring, resetting and replacing a snapshot
ask first, as every command that deletes does (:func:`.options.confirmed`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .context import open_session
from .options import DryRun, JsonOutput, Plan, Yes, confirmed, examples
from .text import counted

if TYPE_CHECKING:
    from makers_store import SnapshotInfo, SyncContextStore

app = typer.Typer(
    help="Save the whole store under a name and put it back: list, save, restore, delete.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SnapshotName = Annotated[
    str, typer.Argument(metavar="NAME", help="The snapshot's name.", show_default=False)
]
SnapshotDir = Annotated[
    Path | None,
    typer.Option(
        "--dir",
        metavar="DIR",
        help="The snapshot folder (default: snapshots/ beside a SQLite store's file, "
        "e.g. .makers-store/snapshots/).",
    ),
]


def _holding(counts: dict[str, int]) -> str:
    return (
        f"{counted(counts.get('conversations', 0), 'conversation')}, "
        f"{counted(counts.get('messages', 0), 'message')}"
    )


def _store_holds(store: SyncContextStore) -> int:
    """Conversation ids owning data (a cheap walk), plus one when blobs outside
    them exist (``v/`` is the store's own): what a restore replaces."""
    outside = any(not info.key.startswith("v/") for info in store.admin.list_blobs(limit=1))
    return store.admin.count_conversations() + outside


def _show(info: SnapshotInfo, verb: str, *, as_json: bool) -> None:
    from makers_store.text import size_text

    from .render import emit_json, local_time, stdout

    if as_json:
        emit_json(info.to_dict())
        return
    stdout().print(
        f"{verb} snapshot {info.name!r} ({local_time(info.saved_at)}, "
        f"{size_text(info.size_bytes)}, {_holding(info.counts)}): {info.path}"
    )


@app.command("save", epilog=examples("makers-store snapshot save before-bug"))
def save_command(
    ctx: typer.Context,
    name: SnapshotName,
    directory: SnapshotDir = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Save everything the store holds as the snapshot NAME: conversations,
    messages, state, users, LangGraph checkpoints and store items, Claude
    sessions, OpenAI items. On SQLite the store as of one moment, agents
    writing meanwhile. Replacing a snapshot of that name asks first."""
    from makers_store.maintenance.snapshots import check_name

    with open_session(ctx) as session:
        store = session.store
        path = store.admin.snapshot_folder(directory) / f"{check_name(name)}.db"
        replace = path.exists()
        plan = Plan(f"replace snapshot {name!r} ({path})", destructive=replace)
        if dry_run or replace:
            if not replace:
                plan.action = f"save snapshot {name!r} ({path})"
            confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
        info = store.admin.save_snapshot(name, directory=directory, replace=replace)
    _show(info, "saved", as_json=as_json)


@app.command(
    "list", epilog=examples("makers-store snapshot list", "makers-store snapshot list --json")
)
def list_command(
    ctx: typer.Context, directory: SnapshotDir = None, as_json: JsonOutput = False
) -> None:
    """List the snapshots, newest first: name, time saved, size, what they hold."""
    from makers_store.text import size_text

    from .render import cell, emit_json, local_time, stderr, stdout

    with open_session(ctx) as session:
        found = list(session.store.admin.list_snapshots(directory=directory))
        where = session.store.admin.snapshot_folder(directory)
    if as_json:
        emit_json({"directory": str(where), "items": [info.to_dict() for info in found]})
        return
    if not found:
        stderr().print(f"no snapshots in {where}")
        return
    from .render import Text

    console = stdout()
    console.print(Text(f"{'saved':<19}  {'size':>9}  {'holds':<34}  name", style="bold"))
    for info in found:
        line = f"{local_time(info.saved_at):<19}  {size_text(info.size_bytes):>9}  "
        console.print(Text(f"{line}{_holding(info.counts):<34}  ") + cell(info.name))


@app.command(
    "restore",
    epilog=examples(
        "makers-store snapshot restore before-bug", "makers-store snapshot restore seed --yes"
    ),
)
def restore_command(
    ctx: typer.Context,
    name: SnapshotName,
    directory: SnapshotDir = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Make the store hold exactly what the snapshot NAME holds: everything else
    in it is deleted (asked first). On SQLite one transaction: safe while
    `makers-store serve` runs, whose agents read the restored store next."""
    with open_session(ctx, create=True) as session:
        store = session.store
        info = store.admin.snapshot_info(name, directory=directory)
        plan = _replacing_plan(store, f"snapshot {name!r} ({_holding(info.counts)})")
        confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
        store.admin.restore_snapshot(name, directory=directory)
    _show(info, "restored", as_json=as_json)


def _replacing_plan(store: SyncContextStore, what: str) -> Plan:
    held = _store_holds(store)
    where = store.location.display_url if store.location else "the store"
    action = f"replace everything in {where} by {what}"
    return Plan(action, destructive=held > 0, counts={"conversations_now": held})


@app.command("delete", epilog=examples("makers-store snapshot delete before-bug --yes"))
def delete_command(
    ctx: typer.Context,
    name: SnapshotName,
    directory: SnapshotDir = None,
    yes: Yes = False,
    dry_run: DryRun = False,
) -> None:
    """Delete the snapshot NAME (asked first)."""
    from .render import stdout

    with open_session(ctx) as session:
        store = session.store
        info = store.admin.snapshot_info(name, directory=directory)
        confirmed(Plan(f"delete snapshot {name!r} ({_holding(info.counts)})"), yes=yes,
                  dry_run=dry_run)  # fmt: skip
        store.admin.delete_snapshot(name, directory=directory)
    stdout().print(f"deleted snapshot {name!r}")


def reset_command(
    ctx: typer.Context,
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="NAME", help="Restore this snapshot instead of emptying."),
    ] = None,
    directory: SnapshotDir = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Empty the store, or with --to NAME put the snapshot NAME back, in one
    command (asked first). On SQLite one transaction: the store reads as it
    was or as after, never a mix."""
    from .render import emit_json, stdout

    with open_session(ctx, create=True) as session:
        store = session.store
        if to is None:
            plan = _replacing_plan(store, "nothing (an empty store)")
            plan.action = plan.action.replace("replace everything in", "delete everything in")
            plan.action = plan.action.split(" by nothing")[0]
            confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
            store.admin.reset()
            if as_json:
                emit_json({"reset": True, "to": None})
            else:
                stdout().print("the store is empty")
            return
        info = store.admin.snapshot_info(to, directory=directory)
        plan = _replacing_plan(store, f"snapshot {to!r} ({_holding(info.counts)})")
        confirmed(plan, yes=yes, dry_run=dry_run, as_json=as_json)
        store.admin.reset(to=to, directory=directory)
    _show(info, "restored", as_json=as_json)


def seed_command(
    ctx: typer.Context,
    path: Annotated[
        Path,
        typer.Argument(
            metavar="PATH",
            help="An export file, or a folder of them (*.jsonl).",
            show_default=False,
        ),
    ],
    as_json: JsonOutput = False,
) -> None:
    """Load seed fixtures: the conversations of an export file (or of every
    .jsonl file of a folder) replace the ones with their ids; others are left
    alone. Every file is checked before anything is written; loading the same
    seeds again changes nothing, so every run starts from the same conversations."""
    from .render import emit_json, stdout

    with open_session(ctx, create=True) as session:
        counts = session.store.admin.seed(path)
    if as_json:
        emit_json(counts.to_dict())
        return
    stdout().print(
        f"seeded {counted(counts.conversations, 'conversation')}, "
        f"{counted(counts.messages, 'message')} from {path}"
    )
