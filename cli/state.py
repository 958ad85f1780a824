"""``makers-store state``: a conversation's JSON key-value state."""

from __future__ import annotations

from typing import Annotated

import typer

from .context import open_session
from .errors import NotFound
from .options import ConversationId, JsonOutput, examples

app = typer.Typer(
    help="Get, set, delete and list a conversation's JSON state.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

Key = Annotated[str, typer.Argument(metavar="KEY", help="The state key.", show_default=False)]


@app.command("get", epilog=examples("makers-store state get c_42 pending_run"))
def get_command(
    ctx: typer.Context, conversation_id: ConversationId, key: Key, as_json: JsonOutput = False
) -> None:
    """Print the JSON value stored under KEY (exit code 3 when it is not set)."""
    with open_session(ctx) as session:
        state = session.state(conversation_id)
        value = state.get(key)
        if value is None and key not in state.items():
            raise NotFound(f"state key {key!r} is not set in conversation {conversation_id!r}")
    from .render import emit_json_line, human_json

    if as_json:
        emit_json_line(value)  # compact, on one line, exact
    else:
        typer.echo(human_json(value))


@app.command(
    "set",
    epilog=examples(
        "makers-store state set c_42 step '{\"n\": 2}'",
        "makers-store state set c_42 note '\"text\"'",
    ),
)
def set_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    key: Key,
    value: Annotated[
        str,
        typer.Argument(
            metavar="VALUE",
            help="The value as JSON, e.g. '{\"step\": 2}' or '\"text\"' ('-' reads stdin).",
            show_default=False,
        ),
    ],
) -> None:
    """Store a JSON value under KEY."""
    from .options import parse_json, read_text_argument

    parsed = parse_json(read_text_argument(value, "VALUE"), "VALUE")
    with open_session(ctx, create=True) as session:
        session.state(conversation_id).set(key, parsed)


@app.command("delete", epilog=examples("makers-store state delete c_42 step"))
def delete_command(ctx: typer.Context, conversation_id: ConversationId, key: Key) -> None:
    """Remove KEY (exit code 3 when it is not set)."""
    with open_session(ctx) as session:
        state = session.state(conversation_id)
        if key not in state.items():
            raise NotFound(f"state key {key!r} is not set in conversation {conversation_id!r}")
        state.delete(key)


@app.command(
    "list",
    epilog=examples(
        "makers-store state list c_42",
        "makers-store state list c_42 --json",
    ),
)
def list_command(
    ctx: typer.Context, conversation_id: ConversationId, as_json: JsonOutput = False
) -> None:
    """List every key and value of a conversation's state."""
    with open_session(ctx) as session:
        items = session.state(conversation_id).items()
    from .render import emit_json

    if as_json:
        emit_json(items)
        return
    from rich.table import Table

    from .render import cell, json_text, stderr, stdout
    from .text import printable_json

    if not items:
        stderr().print(f"no state in {conversation_id!r}")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("key", overflow="fold")
    table.add_column("value", overflow="fold")
    for name, item in sorted(items.items()):
        table.add_row(cell(name), cell(printable_json(json_text(item))))
    stdout().print(table)
