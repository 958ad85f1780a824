"""``makers-store state``: a conversation's JSON key-value state."""

from __future__ import annotations

from typing import Annotated

import typer

from .context import Session, open_session
from .errors import NotFound
from .listing import FormatOption
from .options import ConversationId, JsonOutput, examples


def shlex_quote(text: str) -> str:
    import shlex

    return shlex.quote(text)


app = typer.Typer(
    help="Get, set, delete and list a conversation's JSON state.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


def _missing(session: Session, conversation_id: str, key: str) -> NotFound:
    """A key that is not set: in a conversation that exists (it has a meta or
    some state), or in one that does not, worded as every command words it."""
    if (
        session.store.get_conversation(conversation_id=conversation_id) is None
        and not session.state(conversation_id).items()
    ):
        return NotFound(f"conversation {conversation_id!r} not found")
    return NotFound(f"state key {key!r} not found in conversation {conversation_id!r}")


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
            raise _missing(session, conversation_id, key)
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
    import json

    from .errors import UsageProblem
    from .options import parse_json, read_text_argument

    text = read_text_argument(value, "VALUE")
    try:
        parsed = parse_json(text, "VALUE")
    except UsageProblem as problem:
        plain = text.strip()[:1] not in ("[", "{", '"') and len(text) <= 200
        if value == "-" or not plain or not str(problem).startswith("VALUE must be JSON ("):
            raise  # JSON gone wrong (or nested too deep): the parser's words
        quoted = shlex_quote(json.dumps(text, ensure_ascii=False))
        raise UsageProblem(
            f"VALUE must be JSON; for the text {text!r} write it as a JSON string: "
            f"makers-store state set {shlex_quote(conversation_id)} {shlex_quote(key)} {quoted}"
        ) from None
    with open_session(ctx, create=True) as session:
        session.state(conversation_id).set(key, parsed)


@app.command("delete", epilog=examples("makers-store state delete c_42 step"))
def delete_command(ctx: typer.Context, conversation_id: ConversationId, key: Key) -> None:
    """Remove KEY (exit code 3 when it is not set)."""
    with open_session(ctx) as session:
        state = session.state(conversation_id)
        if key not in state.items():
            raise _missing(session, conversation_id, key)
        state.delete(key)


@app.command(
    "list",
    epilog=examples(
        "makers-store state list c_42",
        "makers-store state list c_42 --json",
    ),
)
def list_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """List every key and value of a conversation's state."""
    from .listing import Format, chosen, emit_rows

    shape = chosen(format_, as_json)
    with open_session(ctx) as session:
        items = session.state(conversation_id).items()
        if not items and session.store.get_conversation(conversation_id=conversation_id) is None:
            raise NotFound(f"conversation {conversation_id!r} not found")
    if shape is Format.json:
        from .render import emit_json

        emit_json(items)
        return
    if shape is not Format.table:
        rows = ({"key": key, "value": value} for key, value in sorted(items.items()))
        emit_rows(shape, ("key", "value"), rows)
        return
    from .render import Table, cell, json_text, stderr, stdout
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
