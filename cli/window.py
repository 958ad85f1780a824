"""``makers-store conv window`` and ``conv summarize``: the context window a
model sees (``store.context_window``) and the summary it is built from
(``store.set_summary``)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from .context import open_session
from .errors import NotFound
from .options import ConversationId, JsonOutput

if TYPE_CHECKING:
    pass


class ApiShape(StrEnum):
    openai = "openai"
    anthropic = "anthropic"


def window_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    last: Annotated[
        int,
        typer.Option(
            "--last", "-n", metavar="N", min=1, max=1000, help="At most this many messages."
        ),
    ] = 20,
    shape: Annotated[
        ApiShape | None,
        typer.Option(
            "--as",
            help="Print the window as that API's input (JSON): OpenAI messages, or "
            "Anthropic's {messages, system}.",
        ),
    ] = None,
    as_json: JsonOutput = False,
) -> None:
    """Show what a model sees of a conversation: metadata.summary and the newest
    messages after metadata.summarizedUntil."""
    with open_session(ctx) as session:
        window = session.store.context_window(conversation_id, last=last)
        if not window.messages and session.store.get_conversation(conversation_id) is None:
            raise NotFound(f"conversation {conversation_id!r} not found")
        if shape is ApiShape.openai:
            converted: object = session.store.to_openai_input(window)
        elif shape is ApiShape.anthropic:
            converted = session.store.to_anthropic_request(window)
        else:
            converted = None
    from .render import emit_json, message_view, stderr, stdout
    from .text import counted

    if window.left_out_results:  # their call is before the window, or in the summary
        stderr().print(
            f"left out {counted(len(window.left_out_results), 'tool result')} whose call "
            f"fell outside the window: {', '.join(window.left_out_results)}"
        )
    if converted is not None:
        emit_json(converted)
        return
    if as_json:
        emit_json({**window.to_dict(), "system_text": window.system_text})
        return
    console = stdout()
    console.print(f"{'summary':>16}  {window.summary if window.summary is not None else '-'}")
    console.print(f"{'summarized until':>16}  {window.summarized_until or '-'}")
    for message in window.messages:
        console.print(message_view(message))
    if window.truncated:
        stderr().print(
            f"older messages after the summary are left out (more than {last}): "
            "time to summarise (makers-store conv summarize)",
            style="dim",
        )


def summarize_command(
    ctx: typer.Context,
    conversation_id: ConversationId,
    until: Annotated[
        str,
        typer.Option(
            "--until",
            metavar="MSG",
            help="The last message the summary covers (it must be in the conversation).",
            show_default=False,
        ),
    ],
    summary: Annotated[
        str,
        typer.Option(
            "--summary",
            metavar="TEXT",
            help="The summary's text; - reads it from standard input.",
            show_default=False,
        ),
    ],
    as_json: JsonOutput = False,
) -> None:
    """Set metadata.summary and metadata.summarizedUntil together, in one write:
    the summary stands for every message up to and including --until."""
    from makers_store.errors import MemoryNotFoundError

    from .options import read_text_argument

    text = read_text_argument(summary, "--summary")
    with open_session(ctx) as session:
        try:
            meta = session.store.set_summary(conversation_id, text, until=until)
        except MemoryNotFoundError:  # worded as every command words it
            if session.store.get_conversation(conversation_id) is None:
                raise NotFound(f"conversation {conversation_id!r} not found") from None
            raise NotFound(
                f"message {until!r} not found in conversation {conversation_id!r}"
            ) from None
    from .render import emit_json, stdout

    if as_json:
        emit_json(meta.to_dict())
        return
    stdout().print(f"summary of {conversation_id!r} set, up to and including {until}")
