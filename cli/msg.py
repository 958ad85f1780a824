"""``makers-store msg``: append, list, show, update, delete and tail messages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    Role,
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
from .text import printable_line

if TYPE_CHECKING:
    from makers_store import Message, MessageHit, SyncContextStore

app = typer.Typer(
    help="Append, list, show, update, delete and tail messages.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

MessageId = Annotated[
    str,
    typer.Argument(
        metavar="MESSAGE_ID",
        help="The message id (msg_..., or the id given when it was appended).",
        show_default=False,
    ),
]
Content = Annotated[
    str | None,
    typer.Option("--content", metavar="TEXT", help="Text content ('-' reads stdin)."),
]
ContentJson = Annotated[
    str | None,
    typer.Option(
        "--content-json",
        metavar="JSON",
        help="JSON content: a string, a list of parts or an object ('-' reads stdin).",
    ),
]
ContentFile = Annotated[
    Path | None,
    typer.Option(
        "--content-file", metavar="FILE", help="Text content read from FILE.", dir_okay=False
    ),
]


def _unknown(conversation_id: str, message_id: str) -> NotFound:
    return NotFound(f"message {message_id!r} not found in conversation {conversation_id!r}")


@contextmanager
def _known(conversation_id: str, message_id: str) -> Iterator[None]:
    """The library's not-found error for a message, worded as ``msg show`` words it."""
    from makers_store.errors import MemoryNotFoundError

    try:
        yield
    except MemoryNotFoundError:
        raise _unknown(conversation_id, message_id) from None


Meta = Annotated[
    list[str] | None,
    typer.Option(
        "--meta",
        "-m",
        metavar="KEY=VALUE",
        help="A metadata entry (VALUE parsed as JSON when it parses, else a string).",
    ),
]


@app.command(
    "append",
    epilog=examples(
        'makers-store msg append c_42 --role user --content "Hello" --user u_123',
        "git diff | makers-store msg append c_42 --role tool --tool-call-id call_1 --content -",
    ),
)
def append_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    role: Annotated[Role, typer.Option("--role", "-r", help="Who speaks.", show_default=False)],
    content: Content = None,
    content_json: ContentJson = None,
    content_file: ContentFile = None,
    meta: Meta = None,
    tool_call_id: Annotated[
        str | None,
        typer.Option(
            "--tool-call-id",
            metavar="ID",
            help="With --role tool: the id of the call this message answers (stored as "
            "metadata.tool_call_id, where the converters and the doctor read it).",
        ),
    ] = None,
    user: Annotated[
        str | None,
        typer.Option(
            "--user", "-u", metavar="USER_ID", help="Add the conversation to this user's index."
        ),
    ] = None,
    message_id: Annotated[
        str | None,
        typer.Option(
            "--id",
            metavar="MESSAGE_ID",
            help="The message's id (default: a generated msg_...). Appending an id the "
            "conversation holds again with the same role, content and metadata changes "
            "nothing; with others it fails.",
        ),
    ] = None,
    as_json: JsonOutput = False,
) -> None:
    """Append a message (creating the conversation if needed); prints the new message id."""
    from .options import parse_pairs, read_content

    _, value = read_content(content, content_json, content_file, required=True)
    metadata = parse_pairs(meta, "--meta") or None
    if tool_call_id is not None:
        if role is not Role.tool:
            raise UsageProblem("--tool-call-id goes with --role tool (a tool result)")
        if not tool_call_id:
            raise UsageProblem("--tool-call-id must not be empty")
        metadata = {**(metadata or {}), "tool_call_id": tool_call_id}
    elif role is Role.tool and not any(
        (metadata or {}).get(key) for key in ("tool_call_id", "tool_use_id")
    ):
        from .render import stderr

        stderr().print(
            "warning: a tool message without --tool-call-id answers no call: model APIs "
            "refuse it (OpenAI) or read it as user text (Anthropic)"
        )
    with open_session(ctx, create=True) as session:
        appended = session.store.append_message(
            conversation_id=conversation_id,
            role=role.value,
            content=value,
            metadata=metadata,
            user_id=user,
            message_id=message_id,
        )
    if as_json:
        from .render import emit_json

        emit_json({"conversation_id": conversation_id, "message_id": appended})
        return
    typer.echo(printable_line(appended))


def _walk(
    store: SyncContextStore,
    conversation_id: str,
    *,
    limit: int | None,
    order: str,
    after: str | None,
    before: str | None,
    since: int | None = None,
    until: int | None = None,
) -> tuple[list[Message], bool]:
    """Up to ``limit`` messages (None: all) from the cursor, in ``order``,
    created from ``since`` to ``until``; returns them and whether more lie
    beyond."""
    from contextlib import closing
    from itertools import islice

    from makers_store.maintenance.search import CLOCK_SLACK_MS

    size = PAGE if limit is None else min(PAGE, limit + 1)  # + 1: whether more lie beyond
    walk = store.iter_messages(
        conversation_id, order=order, after=after, before=before, page_size=size
    )
    newest_first = (order == "desc") == (before is None)

    def in_range(messages: Iterator[Message]) -> Iterator[Message]:
        for message in messages:
            at = message.created_at
            # the walk's direction passes the range's far end: stop a little past it,
            # as a later message may carry an instance clock a little behind
            if newest_first and since is not None and at < since - CLOCK_SLACK_MS:
                return
            if not newest_first and until is not None and at > until + CLOCK_SLACK_MS:
                return
            if (since is None or at >= since) and (until is None or at <= until):
                yield message

    with closing(walk):
        items = list(islice(in_range(walk), None if limit is None else limit + 1))
    more = limit is not None and len(items) > limit
    items = items[:limit]
    if before is not None:  # walked away from the cursor: shown in ``order``
        items.reverse()
    return items, more


#: The columns of ``--format csv|tsv``: a listed message's JSON fields.
MESSAGE_COLUMNS = ("conversation_id", "message_id", "role", "content", "created_at", "metadata",
                   "updated_at")  # fmt: skip


def listed(conversation_id: str, message: Message) -> dict[str, Any]:
    """A message as every ``--json`` of ``msg`` prints it: with its conversation."""
    return {"conversation_id": conversation_id, **message.to_dict()}


@app.command(
    "list",
    epilog=examples(
        "makers-store msg list c_42",
        "makers-store msg list c_42 --order desc --limit 5 --since 2h",
    ),
)
def list_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    since: Since = None,
    until: Until = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="How many messages to show.")
    ] = 20,
    order: Annotated[
        Order, typer.Option("--order", help="asc: oldest first; desc: newest first.")
    ] = Order.asc,
    after: After = None,
    before: Before = None,
    all_pages: All = False,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """Print a conversation's messages as a readable transcript."""
    from .listing import Format, chosen, emit_rows

    shape = chosen(format_, as_json)
    check_cursor_flags(after, before)
    start, end = time_range(since, until)
    with open_session(ctx) as session, api_arguments_as_flags("after", "before"):
        items, more = _walk(
            session.store,
            conversation_id,
            limit=None if all_pages else limit,
            order=order.value,
            after=after,
            before=before,
            since=start,
            until=end,
        )
        meta = None
        if not items or (more and after is None and before is None):
            meta = session.store.get_conversation(conversation_id=conversation_id)
        if not items and meta is None:
            raise NotFound(f"conversation {conversation_id!r} not found")
    edge = None
    if more and items:
        edge = items[-1].message_id if before is None else items[0].message_id
    if shape is Format.json:
        from .render import emit_json

        key = "next_cursor" if before is None else "previous_cursor"
        emit_json({"items": [listed(conversation_id, item) for item in items], key: edge})
        return
    if shape is not Format.table:
        emit_rows(shape, MESSAGE_COLUMNS, (listed(conversation_id, item) for item in items))
        return
    from .render import message_view, stderr, stdout

    if not items:
        filtered = " from --since to --until" if start is not None or end is not None else ""
        stderr().print(f"no messages in {conversation_id!r}{filtered}")
        return
    console = stdout()
    for message in items:
        console.print(message_view(message))
    if edge is not None:
        flag = "--after" if before is None else "--before"
        # from either end of the whole conversation the rest is its count less the shown
        unfiltered = after is None and before is None and start is None and end is None
        left = meta.message_count - len(items) if unfiltered and meta is not None else None
        how_many = f"{left:,} more" if left is not None and left > 0 else "more"
        stderr().print(f"{how_many}: {flag} {edge} or --all", style="dim")


#: The columns of ``msg search --format csv|tsv``: a hit's JSON fields.
HIT_COLUMNS = ("conversation_id", "message_id", "role", "created_at", "snippet")


@app.command(
    "search",
    epilog=examples(
        'makers-store msg search "refund" --since 7d',
        'makers-store msg search "timeout" --conversation c_42 --role tool --format jsonl',
    ),
)
def search_command(
    ctx: typer.Context,
    text: Annotated[
        str,
        typer.Argument(
            metavar="TEXT", help="The text to find (ignoring case).", show_default=False
        ),
    ],
    conversation: Annotated[
        list[str] | None,
        typer.Option(
            "--conversation",
            "-c",
            metavar="CONVERSATION_ID",
            help="Only in this conversation (repeatable).",
        ),
    ] = None,
    user: UserFilter = None,
    role: Annotated[Role | None, typer.Option("--role", "-r", help="Only this role's.")] = None,
    since: Since = None,
    until: Until = None,
    limit: Annotated[
        int, typer.Option("--limit", "-n", metavar="N", min=1, help="How many matches to show.")
    ] = 20,
    all_matches: Annotated[bool, typer.Option("--all", "-a", help="Every match.")] = False,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """Find messages whose text contains TEXT (ignoring case; the text parts of
    structured content count): conversation, message id, time and the text
    around the match, newest first."""

    from .listing import Format, chosen, emit_rows
    from .render import progress

    shape = chosen(format_, as_json)
    if not text:
        raise UsageProblem("TEXT must not be empty")
    start, end = time_range(since, until)
    wanted = None if all_matches else limit
    streamed = shape in (Format.jsonl, Format.csv, Format.tsv)
    found: list[MessageHit] = []
    more = False
    with open_session(ctx) as session:
        for cid in dict.fromkeys(conversation or []):
            if session.store.get_conversation(conversation_id=cid) is None:
                raise NotFound(f"conversation {cid!r} not found")
        admin = session.store.admin
        total = len(set(conversation)) if conversation else None
        with progress("searching", total) as bar:
            if total is None and bar.shown and not user:  # counted only for a bar to fill
                bar.update(0, admin.count_conversations())
            hits = admin.search_messages(
                text,
                conversation_ids=conversation,
                user_id=user,
                role=None if role is None else role.value,
                since=start,
                until=end,
                limit=None if wanted is None else wanted + 1,  # + 1: whether more exist
                on_conversation=bar.advance,
            )
            if streamed:  # rows as they are found: a search of everything holds none
                emit_rows(shape, HIT_COLUMNS, _counted(hits, wanted))
                return
            for hit in hits:
                if wanted is not None and len(found) == wanted:
                    more = True
                    break
                found.append(hit)
    if shape is Format.json:
        from .render import emit_json

        emit_json({"items": [hit.to_dict() for hit in found], "more": more})
        return
    _show_hits(found, text)
    if more:
        from .render import stderr

        stderr().print(f"more: --limit {(wanted or 0) * 2} or --all", style="dim")


def _counted(hits: Iterator[MessageHit], wanted: int | None) -> Iterator[dict[str, Any]]:
    for shown, hit in enumerate(hits):
        if wanted is not None and shown == wanted:
            return
        yield hit.to_dict()


def _show_hits(found: list[MessageHit], text: str) -> None:
    from .render import Table, cell, local_time, stderr, stdout

    if not found:
        stderr().print("no messages match")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("conversation", overflow="fold")
    table.add_column("message", overflow="fold")
    table.add_column("role")
    table.add_column("time")
    table.add_column("match", overflow="fold")
    needle = text.lower()
    for hit in found:
        snippet = cell(hit.snippet)
        snippet.highlight_words([needle], style="bold reverse", case_sensitive=False)
        table.add_row(
            cell(hit.conversation_id),
            cell(hit.message_id),
            cell(hit.role),
            local_time(hit.created_at),
            snippet,
        )
    stdout().print(table)


@app.command("show", epilog=examples("makers-store msg show c_42 msg_0000000003_ab12cd34ef"))
def show_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    message_id: MessageId,
    as_json: JsonOutput = False,
) -> None:
    """Show one message in full."""
    with open_session(ctx) as session:
        message = session.store.get_message(conversation_id, message_id)
    if message is None:
        raise _unknown(conversation_id, message_id)
    from .render import emit_json, message_view, stdout

    if as_json:
        emit_json(listed(conversation_id, message))
    else:
        stdout().print(message_view(message, full=True))


@app.command(
    "update",
    epilog=examples(
        'makers-store msg update c_42 msg_0000000003_ab12cd34ef --content "fixed typo"',
        "makers-store msg update c_42 msg_0000000003_ab12cd34ef --meta rating=5 --meta draft=null",
    ),
)
def update_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    message_id: MessageId,
    content: Content = None,
    content_json: ContentJson = None,
    content_file: ContentFile = None,
    meta: Annotated[
        list[str] | None,
        typer.Option(
            "--meta",
            "-m",
            metavar="KEY=VALUE",
            help="Set a metadata key, merged into the metadata (VALUE parsed as JSON when it "
            "parses, else a string; null deletes the key). Repeat for several.",
        ),
    ] = None,
    replace_meta: Annotated[
        bool,
        typer.Option(
            "--replace-meta", help="Replace the whole metadata with the --meta entries instead."
        ),
    ] = False,
    clear_meta: Annotated[bool, typer.Option("--clear-meta", help="Remove the metadata.")] = False,
    as_json: JsonOutput = False,
) -> None:
    """Replace a message's content and/or merge into its metadata (--meta k=v;
    --replace-meta replaces it whole)."""
    from .options import parse_pairs, read_content

    has_content, value = read_content(content, content_json, content_file, required=False)
    if meta and clear_meta:
        raise UsageProblem("--meta and --clear-meta are mutually exclusive; pass one")
    if replace_meta and not meta:
        raise UsageProblem("--replace-meta replaces the metadata with the --meta entries: pass "
                           "--meta KEY=VALUE (or --clear-meta to remove it all)")  # fmt: skip
    entries = parse_pairs(meta, "--meta") if meta else None
    if not (has_content or meta or clear_meta):
        raise UsageProblem("nothing to change: pass a content option, --meta or --clear-meta")
    with open_session(ctx) as session, _known(conversation_id, message_id):
        store, cid, mid = session.store, conversation_id, message_id
        if clear_meta or replace_meta:
            whole = (
                None if clear_meta else {k: v for k, v in (entries or {}).items() if v is not None}
            )
            if has_content:
                message = store.update_message(
                    conversation_id=cid, message_id=mid, content=value, metadata=whole
                )
            else:
                message = store.update_message(conversation_id=cid, message_id=mid, metadata=whole)
        else:
            if has_content:
                message = store.update_message(conversation_id=cid, message_id=mid, content=value)
            if entries:
                # one unit: read, merge, write again if another writer won (store.retry)
                message = store.merge_message_metadata(cid, mid, patch=entries)
    from .render import emit_json, message_view, stdout

    if as_json:
        emit_json(listed(conversation_id, message))
    else:
        stdout().print(message_view(message, full=True))


@app.command(
    "delete",
    epilog=examples(
        "makers-store msg delete c_42 msg_0000000003_ab12cd34ef --yes",
    ),
)
def delete_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    message_id: MessageId,
    yes: Yes = False,
    dry_run: DryRun = False,
) -> None:
    """Delete one message (asks first)."""
    with open_session(ctx) as session, _known(conversation_id, message_id):
        shown = session.store.get_message(conversation_id, message_id)
        if shown is None:
            raise _unknown(conversation_id, message_id)
        confirmed(
            Plan(
                f"delete message {message_id!r} ({shown.role}) of conversation {conversation_id!r}",
                counts={"messages": 1},
            ),
            yes=yes,
            dry_run=dry_run,
        )
        session.store.delete_message(conversation_id=conversation_id, message_id=message_id)
    from .render import stderr

    stderr().print(f"deleted message {message_id!r} of conversation {conversation_id!r}")


@app.command(
    "tail",
    epilog=examples(
        "makers-store msg tail c_42 --follow",
        "makers-store msg tail c_42 --follow --json | jq -r .content",
    ),
)
def tail_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    lines: Annotated[
        int,
        typer.Option(
            "--lines",
            "-n",
            metavar="N",
            min=0,
            max=PAGE,
            help="How many recent messages to show first.",
        ),
    ] = 10,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing messages as they are appended.")
    ] = False,
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            metavar="SECONDS",
            min=0.05,
            max=3600,
            help="Seconds between polls with --follow.",
        ),
    ] = 1.0,
    as_json: JsonOutput = False,
) -> None:
    """Print the last messages; with --follow, new ones as other processes append them."""
    from .follow import tail

    with open_session(ctx) as session:
        tail(
            session.store,
            conversation_id,
            lines=lines,
            follow=follow,
            interval=interval,
            as_json=as_json,
        )
