"""``makers-store conv``: list, show, update, delete and clear conversations."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from .context import open_session
from .errors import NotFound, UsageProblem
from .listing import FormatOption
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
    Since,
    Until,
    UserFilter,
    Yes,
    api_arguments_as_flags,
    check_cursor_flags,
    confirmed,
    examples,
    time_range,
)

if TYPE_CHECKING:
    from makers_store import CheckpointName, ConversationMeta, SyncContextStore

    from .listing import Format

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


#: What a filter says of a conversation: keep it, skip it, or stop (nothing
#: further in the listing order can match).
KEEP, SKIP, STOP = "keep", "skip", "stop"


def _filtered(
    store: SyncContextStore,
    *,
    limit: int | None,
    order: str,
    after: str | None,
    user_id: str | None,
    judge: Callable[[ConversationMeta], str],
) -> tuple[list[ConversationMeta], str | None, str | None]:
    """Up to ``limit`` conversations ``judge`` keeps, walking forward from
    ``after`` a page at a time. The cursor returned leads to the first
    conversation not examined, so ``--after`` it goes on where this stopped
    (a page left in the middle is asked again for the cursor of that place)."""
    items: list[ConversationMeta] = []
    previous_cursor: str | None = None
    cursor = after
    first = True
    while True:
        page = store.list_conversations(limit=PAGE, order=order, after=cursor, user_id=user_id)
        if first:
            previous_cursor, first = page.previous_cursor, False
        for index, meta in enumerate(page.items):
            verdict = judge(meta)
            if verdict == STOP:
                return items, None, previous_cursor
            if verdict == SKIP:
                continue
            items.append(meta)
            if limit is not None and len(items) >= limit:
                if index + 1 == len(page.items):
                    return items, page.next_cursor, previous_cursor
                here = store.list_conversations(
                    limit=index + 1, order=order, after=cursor, user_id=user_id
                )
                return items, here.next_cursor, previous_cursor
        if page.next_cursor is None or not page.items:
            return items, None, previous_cursor
        cursor = page.next_cursor


def _judge(
    find: str | None, since: int | None, until: int | None, order: str
) -> Callable[[ConversationMeta], str]:
    from makers_store.maintenance.search import conversation_matches, pattern

    found = pattern(find) if find is not None else None

    def judge(meta: ConversationMeta) -> str:
        at = meta.last_message_at
        if since is not None and at < since:
            return STOP if order == "desc" else SKIP
        if until is not None and at > until:
            return STOP if order == "asc" else SKIP
        if found is not None and not conversation_matches(meta, found):
            return SKIP
        return KEEP

    return judge


#: The columns of ``--format csv|tsv``: a conversation's JSON fields.
CONVERSATION_COLUMNS = ("conversation_id", "created_at", "last_message_at", "message_count",
                        "metadata")  # fmt: skip


@app.command(
    "list",
    epilog=examples(
        "makers-store conv list --user u_123 --since 7d",
        "makers-store conv list --find lisbon --format csv",
    ),
)
def list_command(
    ctx: typer.Context,
    user: UserFilter = None,
    find: Annotated[
        str | None,
        typer.Option(
            "--find",
            metavar="TEXT",
            help="Only conversations whose id or title contains TEXT (ignoring case).",
        ),
    ] = None,
    since: Since = None,
    until: Until = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="How many to show.")
    ] = 20,
    order: Annotated[
        Order, typer.Option("--order", help="desc: most recent first; asc: oldest first.")
    ] = Order.desc,
    after: After = None,
    before: Before = None,
    all_pages: All = False,
    state_only: Annotated[
        bool,
        typer.Option(
            "--state-only",
            help="List the conversations that hold only state (no message, so in no "
            "recency index), with their state entries; walks every conversation id.",
        ),
    ] = False,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """List conversations by last message time: id, title, messages, last message.

    --find, --since and --until filter (times are the last message's); the
    cursor printed after a filtered page goes on where it stopped."""
    from .listing import Format, chosen, emit_rows

    shape = chosen(format_, as_json)
    if state_only:
        given = [name for name, value in (("--user", user), ("--find", find),
                 ("--since", since), ("--until", until), ("--after", after),
                 ("--before", before)) if value is not None]  # fmt: skip
        if given:
            raise UsageProblem(f"--state-only lists conversations without messages: "
                               f"{', '.join(given)} cannot apply")  # fmt: skip
        _list_state_only(ctx, limit=None if all_pages else limit, shape=shape)
        return
    check_cursor_flags(after, before)
    start, end = time_range(since, until)
    filtering = find is not None or start is not None or end is not None
    if filtering and before is not None:
        raise UsageProblem("--before pages back through every conversation; with --find, "
                           "--since or --until page forward with --after")  # fmt: skip
    if find is not None and not find:
        raise UsageProblem("--find needs some TEXT")
    with open_session(ctx) as session, api_arguments_as_flags("after", "before"):
        if filtering:
            items, next_cursor, previous_cursor = _filtered(
                session.store,
                limit=None if all_pages else limit,
                order=order.value,
                after=after,
                user_id=user,
                judge=_judge(find, start, end, order.value),
            )
        else:
            items, next_cursor, previous_cursor = _pages(
                session.store,
                limit=None if all_pages else limit,
                order=order.value,
                after=after,
                before=before,
                user_id=user,
            )
    if shape is Format.json:
        from .render import emit_json

        emit_json(
            {
                "items": [item.to_dict() for item in items],
                "next_cursor": next_cursor,
                "previous_cursor": previous_cursor,
            }
        )
        return
    if shape is not Format.table:
        emit_rows(shape, CONVERSATION_COLUMNS, (item.to_dict() for item in items))
        return
    from .render import Table, ago, cell, local_time, stderr, stdout, title_of

    if not items:
        stderr().print("no conversations" + (f" for user {user!r}" if user else "")
                       + (" match" if filtering else ""))  # fmt: skip
        if not (filtering or user or after or before):
            with open_session(ctx) as session:
                walk = session.store.admin.iter_state_only_conversations()
                held = next(walk, None)
                walk.close()
            if held is not None:
                stderr().print("some conversations hold only state: conv list --state-only")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("conversation", overflow="fold")
    table.add_column("title", overflow="ellipsis", max_width=40, no_wrap=True)
    table.add_column("messages", justify="right")
    table.add_column("last message")
    table.add_column("", style="dim")
    for item in items:
        table.add_row(
            cell(item.conversation_id),
            cell(title_of(item)),
            f"{item.message_count:,}",
            local_time(item.last_message_at),
            ago(item.last_message_at),
        )
    stdout().print(table)
    if next_cursor:
        stderr().print(f"more: --after {next_cursor}", style="dim")


#: The columns of ``conv list --state-only --format csv|tsv``.
STATE_ONLY_COLUMNS = ("conversation_id", "state_entries")


def _list_state_only(ctx: typer.Context, *, limit: int | None, shape: Format) -> None:
    """``conv list --state-only``: the library's walk, cut at ``limit``."""
    from itertools import islice

    from .listing import Format, emit_rows

    with open_session(ctx) as session:
        walk = session.store.admin.iter_state_only_conversations()
        found = list(islice(walk, None if limit is None else limit + 1))
        walk.close()
    more = limit is not None and len(found) > limit
    found = found[:limit]
    if shape is Format.json:
        from .render import emit_json

        emit_json({"items": [item.to_dict() for item in found], "more": more})
        return
    if shape is not Format.table:
        emit_rows(shape, STATE_ONLY_COLUMNS, (item.to_dict() for item in found))
        return
    from .render import Table, cell, stderr, stdout

    if not found:
        stderr().print("no conversations hold only state")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("conversation", overflow="fold")
    table.add_column("state entries", justify="right")
    for item in found:
        table.add_row(cell(item.conversation_id), f"{item.state_entries:,}")
    stdout().print(table)
    if more:
        stderr().print(f"more: --limit {(limit or 0) * 2} or --all", style="dim")


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
        meta = session.store.get_conversation(conversation_id=conversation_id)
        state_keys = sorted(session.state(conversation_id).items())
        checkpoints = session.store.admin.langgraph_checkpoints(conversation_id)
        if meta is None and not state_keys and not checkpoints:
            raise NotFound(f"conversation {conversation_id!r} not found")
        users = [] if meta is None else session.store.admin.conversation_users(conversation_id)
    if meta is None:  # state.set or a LangGraph thread with no message: no meta, no index entry
        _show_without_messages(conversation_id, state_keys, checkpoints, as_json=as_json)
        return
    users = users or []
    if as_json:
        from .render import emit_json

        emit_json({**meta.to_dict(), "user_ids": users,
                   "langgraph_checkpoints": [c.to_dict() for c in checkpoints]})  # fmt: skip
        return
    from .render import conversation_details, stdout

    console = stdout()
    console.print(conversation_details(meta, users))
    if state_keys:
        console.print(f"{'state':>13}  " + ", ".join(state_keys), style="dim")
    if checkpoints:
        console.print(f"{'checkpoints':>13}  {checkpoint_line(checkpoints)}", style="dim")


def checkpoint_line(checkpoints: list[CheckpointName]) -> str:
    """``3 LangGraph checkpoints, the latest 1f0a...`` (of the root graph when
    it has any: subgraphs' namespaces are named)."""
    from .text import counted

    root = [c for c in checkpoints if c.checkpoint_ns == ""]
    latest = (root or checkpoints)[0]
    where = "" if latest.checkpoint_ns == "" else f" (namespace {latest.checkpoint_ns!r})"
    return (
        f"{counted(len(checkpoints), 'LangGraph checkpoint')}, the latest "
        f"{latest.checkpoint_id}{where}"
    )


def _show_without_messages(
    conversation_id: str,
    state_keys: list[str],
    checkpoints: list[CheckpointName],
    *,
    as_json: bool,
) -> None:
    from .render import emit_json, stdout
    from .text import counted

    if as_json:
        emit_json({"conversation_id": conversation_id, "message_count": 0,
                   "state_keys": state_keys,
                   "langgraph_checkpoints": [c.to_dict() for c in checkpoints]})  # fmt: skip
        return
    held = [counted(len(state_keys), "state key")]
    if checkpoints:
        held.append(counted(len(checkpoints), "LangGraph checkpoint"))
    console = stdout()
    console.print(f"{'conversation':>13}  {conversation_id}")
    console.print(f"{'messages':>13}  no messages; {'; '.join(held)}")
    if state_keys:
        console.print(f"{'state':>13}  " + ", ".join(state_keys), style="dim")
    if checkpoints:
        console.print(f"{'checkpoints':>13}  {checkpoint_line(checkpoints)}", style="dim")


@app.command(
    "fork",
    epilog=examples(
        "makers-store conv fork c_42 c_42_retry",
        "makers-store conv fork c_42 c_42_retry --up-to msg_0000000007_k3j9x2",
    ),
)
def fork_command(
    ctx: typer.Context,
    source_id: Annotated[
        str, typer.Argument(metavar="SRC", help="The conversation to copy.", show_default=False)
    ],
    new_id: Annotated[
        str,
        typer.Argument(
            metavar="NEW", help="The id of the copy (must not exist).", show_default=False
        ),
    ],
    up_to: Annotated[
        str | None,
        typer.Option(
            "--up-to",
            metavar="MSG",
            help="Copy the messages up to and including this one (default: all).",
        ),
    ] = None,
    as_json: JsonOutput = False,
) -> None:
    """Copy a conversation into a new id: messages (all, or up to --up-to),
    metadata with forked_from, state, users and its LangGraph thread up to the fork.

    Whole or nothing: a fork cut short leaves no new conversation."""
    from makers_store.errors import MemoryNotFoundError

    with open_session(ctx) as session, api_arguments_as_flags(up_to="up-to"):
        try:
            meta = session.store.fork_conversation(source_id, new_id, up_to=up_to)
        except MemoryNotFoundError as exc:
            # said the way every command says "not found" (the library names
            # its argument first: source_id or up_to)
            if up_to is not None and str(exc).startswith("up_to "):
                raise NotFound(
                    f"message {up_to!r} not found in conversation {source_id!r}"
                ) from None
            raise NotFound(f"conversation {source_id!r} not found") from None
    from .render import conversation_details, emit_json, stderr, stdout

    if as_json:
        emit_json(meta.to_dict())
        return
    stdout().print(conversation_details(meta))
    from .text import counted

    stderr().print(
        f"forked {counted(meta.message_count, 'message')} of {source_id!r} into {new_id!r}"
    )


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
