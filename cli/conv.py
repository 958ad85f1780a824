"""``makers-store conv``: list, show, update, delete and clear conversations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from .context import open_session
from .errors import NotFound, UsageProblem
from .options import (
    PAGE,
    After,
    All,
    Before,
    ConversationId,
    DryRun,
    JsonOutput,
    Order,
    Plan,
    UserFilter,
    Yes,
    api_arguments_as_flags,
    check_cursor_flags,
    confirmed,
    examples,
)

if TYPE_CHECKING:
    from makers_store import ConversationMeta, SyncContextStore

app = typer.Typer(
    help="List, show, update, delete and clear conversations.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _pages(
    store: SyncContextStore,
    *,
    limit: int | None,
    order: str,
    after: str | None,
    before: str | None,
    user_id: str | None,
) -> tuple[list[ConversationMeta], str | None, str | None]:
    """Up to ``limit`` conversations (None: all), paging through the API;
    returns them with the cursors of the range they cover."""
    items: list[ConversationMeta] = []
    first_previous: str | None = None
    next_cursor: str | None = None
    forward = before is None
    cursor = after if forward else before
    first = True
    while limit is None or len(items) < limit:
        size = PAGE if limit is None else min(PAGE, limit - len(items))
        page = store.list_conversations(
            limit=size,
            order=order,
            after=cursor if forward else None,
            before=None if forward else cursor,
            user_id=user_id,
        )
        if forward:
            items += page.items
            if first:
                first_previous = page.previous_cursor
            next_cursor = page.next_cursor
            cursor = page.next_cursor
        else:
            items[:0] = page.items
            if first:
                next_cursor = page.next_cursor
            first_previous = page.previous_cursor
            cursor = page.previous_cursor
        first = False
        if cursor is None or not page.items:
            break
    return items, next_cursor, first_previous


@app.command(
    "list",
    epilog=examples(
        "makers-store conv list --user u_123",
        "makers-store conv list --limit 50 --order asc",
    ),
)
def list_command(
    ctx: typer.Context,
    user: UserFilter = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, help="How many conversations to show.")
    ] = 20,
    order: Annotated[
        Order, typer.Option("--order", help="desc: most recent first; asc: oldest first.")
    ] = Order.desc,
    after: After = None,
    before: Before = None,
    all_pages: All = False,
    as_json: JsonOutput = False,
) -> None:
    """List conversations by last message time: id, title, messages, last message."""
    check_cursor_flags(after, before)
    with open_session(ctx) as session, api_arguments_as_flags("after", "before"):
        items, next_cursor, previous_cursor = _pages(
            session.store,
            limit=None if all_pages else limit,
            order=order.value,
            after=after,
            before=before,
            user_id=user,
        )
    if as_json:
        from .render import emit_json

        emit_json(
            {
                "items": [item.to_dict() for item in items],
                "next_cursor": next_cursor,
                "previous_cursor": previous_cursor,
            }
        )
        return
    from rich.table import Table

    from .render import ago, cell, local_time, stderr, stdout, title_of

    if not items:
        stderr().print("no conversations" + (f" for user {user!r}" if user else ""))
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("conversation", overflow="fold")
    table.add_column("title", overflow="ellipsis", max_width=40)
    table.add_column("messages", justify="right")
    table.add_column("last message")
    table.add_column("", style="dim")
    for item in items:
        table.add_row(
            cell(item.conversation_id),
            cell(title_of(item)),
            str(item.message_count),
            local_time(item.last_message_at),
            ago(item.last_message_at),
        )
    stdout().print(table)
    if next_cursor:
        stderr().print(f"more: --after {next_cursor}", style="dim")


def _require(store: SyncContextStore, conversation_id: str) -> ConversationMeta:
    meta = store.get_conversation(conversation_id=conversation_id)
    if meta is None:
        raise NotFound(f"conversation {conversation_id!r} not found")
    return meta


@app.command(
    "show",
    epilog=examples(
        "makers-store conv show c_42",
        "makers-store conv show c_42 --json",
    ),
)
def show_command(
    ctx: typer.Context, conversation_id: ConversationId, as_json: JsonOutput = False
) -> None:
    """Show one conversation: metadata, message count, times, users, state keys."""
    with open_session(ctx) as session:
        meta = _require(session.store, conversation_id)
        users = session.store.admin.conversation_users(conversation_id) or []
        state_keys = sorted(session.state(conversation_id).items())
    if as_json:
        from .render import emit_json

        emit_json({**meta.to_dict(), "user_ids": users})
        return
    from .render import conversation_details, stdout

    console = stdout()
    console.print(conversation_details(meta, users))
    if state_keys:
        console.print(f"{'state':>13}  " + ", ".join(state_keys), style="dim")


@app.command(
    "update",
    epilog=examples(
        'makers-store conv update c_42 --set title="Trip to Lisbon" --unset draft',
    ),
)
def update_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    set_pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Set a metadata key (VALUE parsed as JSON when it parses, else a string).",
        ),
    ] = None,
    unset: Annotated[
        list[str] | None, typer.Option("--unset", metavar="KEY", help="Remove a metadata key.")
    ] = None,
    as_json: JsonOutput = False,
) -> None:
    """Merge metadata into a conversation (--set k=v ..., --unset k ...)."""
    from .options import parse_pairs

    patch = parse_pairs(set_pairs, "--set")
    for key in unset or []:
        patch[key] = None
    if not patch:
        raise UsageProblem("nothing to change: pass --set KEY=VALUE or --unset KEY")
    with open_session(ctx) as session:
        meta = session.store.update_conversation(conversation_id=conversation_id, metadata=patch)
    from .render import conversation_details, emit_json, stdout

    if as_json:
        emit_json(meta.to_dict())
    else:
        stdout().print(conversation_details(meta))


@app.command(
    "delete",
    epilog=examples(
        "makers-store conv delete c_42",
        "makers-store conv delete c_42 --yes",
    ),
)
def delete_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    yes: Yes = False,
    dry_run: DryRun = False,
) -> None:
    """Delete a conversation with its messages, state and index entries (asks first)."""
    from .text import counted

    with open_session(ctx) as session:
        meta = session.store.get_conversation(conversation_id=conversation_id)
        state = session.state(conversation_id).items()
        if meta is None and not state:
            raise NotFound(f"conversation {conversation_id!r} not found")
        count = meta.message_count if meta is not None else 0
        confirmed(
            Plan(
                f"delete conversation {conversation_id!r} with {counted(count, 'message')} "
                f"and {counted(len(state), 'state entry', 'state entries')}",
                counts={"conversations": 1, "messages": count, "state_entries": len(state)},
            ),
            yes=yes,
            dry_run=dry_run,
        )
        session.store.delete_conversation(conversation_id=conversation_id)
    from .render import stderr

    stderr().print(f"deleted conversation {conversation_id!r}")


@app.command(
    "clear",
    epilog=examples(
        "makers-store conv clear c_42",
        "makers-store conv clear c_42 --yes",
    ),
)
def clear_command(
    ctx: typer.Context, conversation_id: ConversationId, yes: Yes = False, dry_run: DryRun = False
) -> None:
    """Delete every message of a conversation; keep it, its metadata and state (asks first)."""
    from .text import counted

    with open_session(ctx) as session:
        meta = _require(session.store, conversation_id)
        messages = counted(meta.message_count, "message")
        confirmed(
            Plan(
                f"delete the {messages} of conversation {conversation_id!r}",
                destructive=meta.message_count > 0,
                counts={"messages": meta.message_count},
            ),
            yes=yes,
            dry_run=dry_run,
        )
        session.store.clear_messages(conversation_id=conversation_id)
    from .render import stderr

    stderr().print(f"deleted {messages} of conversation {conversation_id!r}")
