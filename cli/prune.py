"""``makers-store prune``: delete idle conversations, or LangGraph checkpoints
and Claude transcripts nobody can reach any more.

Two modes, exactly one per run: ``--idle-for 30d`` (retention,
``store.admin.prune_conversations``) and ``--checkpoints keep-latest``
(``store.admin.prune_checkpoints``). Both go through the one gate
(:func:`~.options.confirmed`): the plan is computed first (a dry run of the
library call), said with its counts, asked about on a terminal; ``--yes``
skips the question, ``--dry-run`` stops there, and without a terminal and
without ``--yes`` nothing is deleted (exit 1). After the answer the prune of
idle conversations deletes only the planned ones, each judged again when it
is deleted: one written since the plan is kept.
"""

from __future__ import annotations

from datetime import timedelta
from enum import StrEnum
from typing import Annotated

import typer

from .context import open_session
from .errors import UsageProblem
from .options import (
    DURATION_FORMS,
    DryRun,
    JsonOutput,
    Plan,
    UserFilter,
    Yes,
    confirmed,
    parse_duration,
)
from .text import counted


class CheckpointStrategy(StrEnum):
    KEEP_LATEST = "keep-latest"


IdleFor = Annotated[
    str | None,
    typer.Option(
        "--idle-for",
        metavar="DURATION",
        help=f"Delete conversations whose last write is older than this ({DURATION_FORMS}; "
        "min is a minute, mo 30 days).",
        show_default=False,
    ),
]
Checkpoints = Annotated[
    CheckpointStrategy | None,
    typer.Option(
        "--checkpoints",
        help="Prune LangGraph checkpoints: keep the latest of each thread and what "
        "its DeltaChannels need; also delete orphaned Claude subagent transcripts.",
        show_default=False,
    ),
]
ConversationScope = Annotated[
    str | None,
    typer.Option(
        "--conversation",
        "-c",
        metavar="CONVERSATION_ID",
        help="With --checkpoints: only this conversation's thread and transcripts.",
    ),
]


def prune_command(
    ctx: typer.Context,
    idle_for: IdleFor = None,
    checkpoints: Checkpoints = None,
    user: UserFilter = None,
    conversation: ConversationScope = None,
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Delete idle conversations (--idle-for) or old LangGraph checkpoints
    (--checkpoints keep-latest); says what it will delete and asks first."""
    if (idle_for is None) == (checkpoints is None):
        raise UsageProblem(
            "pass exactly one of --idle-for DURATION (idle conversations) and "
            "--checkpoints keep-latest (old LangGraph checkpoints)"
        )
    if idle_for is not None:
        if conversation is not None:
            raise UsageProblem("--conversation goes with --checkpoints; --idle-for takes --user")
        _prune_idle(ctx, idle_for, user, yes=yes, dry_run=dry_run, as_json=as_json)
    else:
        if user is not None:
            raise UsageProblem("--user goes with --idle-for; --checkpoints takes --conversation")
        _prune_checkpoints(ctx, conversation, yes=yes, dry_run=dry_run, as_json=as_json)


def _prune_idle(
    ctx: typer.Context,
    idle_for: str,
    user: str | None,
    *,
    yes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    from .options import api_arguments_as_flags
    from .render import emit_json, stderr

    idle = parse_duration(idle_for, "--idle-for")
    with open_session(ctx) as session:
        admin = session.store.admin
        with api_arguments_as_flags(user_id="user"):
            plan = admin.prune_conversations(idle, user_id=user, dry_run=True)
        whose = "" if user is None else f" of user {user!r}"
        since = idle_since(plan.cutoff, idle)
        confirmed(
            Plan(
                f"delete {counted(plan.conversations, 'conversation')}{whose} idle since "
                f"{since} or longer, with {counted(plan.messages, 'message')}",
                destructive=plan.conversations > 0,
                details=list(plan.conversation_ids),
                counts={
                    "cutoff": plan.cutoff,
                    "conversations": plan.conversations,
                    "messages": plan.messages,
                    "conversation_ids": plan.conversation_ids,
                },
            ),
            yes=yes,
            dry_run=dry_run,
            as_json=as_json,
        )
        report = admin.prune_conversations(
            idle, user_id=user, conversation_ids=plan.conversation_ids
        )
    if as_json:
        emit_json(report.to_dict())
        return
    line = f"deleted {counted(report.conversations, 'conversation')} with " + counted(
        report.messages, "message"
    )
    written = plan.conversations - report.conversations
    if written > 0:
        line += f"; kept {counted(written, 'conversation')} written since the plan"
    stderr().print(line)


def idle_since(cutoff_ms: int, idle: timedelta) -> str:
    """The cutoff as a person checks it: ``2026-11-05 10:25 (30 days ago)``,
    local time, to the second when the duration is under an hour."""
    from datetime import datetime

    from .options import spoken_duration

    ms = idle // timedelta(milliseconds=1)
    shape = "%Y-%m-%d %H:%M:%S" if ms < 3_600_000 else "%Y-%m-%d %H:%M"
    when = datetime.fromtimestamp(cutoff_ms / 1000).astimezone().strftime(shape)
    return f"{when} ({spoken_duration(ms)} ago)"


def _prune_checkpoints(
    ctx: typer.Context,
    conversation: str | None,
    *,
    yes: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    from .options import api_arguments_as_flags
    from .render import emit_json, stderr

    with open_session(ctx) as session:
        admin = session.store.admin
        with api_arguments_as_flags(conversation_id="conversation"):
            plan = admin.prune_checkpoints(conversation_id=conversation, dry_run=True)
        confirmed(
            Plan(
                f"delete {counted(plan.checkpoints_deleted, 'LangGraph checkpoint')} "
                f"(with {counted(plan.writes_deleted, 'pending write')}) of "
                f"{counted(plan.threads, 'thread')}, keeping the latest of each and "
                f"{counted(plan.checkpoints_kept_for_deltas, 'ancestor')} its DeltaChannels "
                f"need, and "
                + counted(plan.orphan_transcripts, "orphaned Claude subagent transcript"),
                destructive=plan.checkpoints_deleted > 0 or plan.orphan_transcripts > 0,
                counts={
                    "threads": plan.threads,
                    "checkpoints": plan.checkpoints_deleted,
                    "writes": plan.writes_deleted,
                    "checkpoints_kept_for_deltas": plan.checkpoints_kept_for_deltas,
                    "orphan_transcripts": plan.orphan_transcripts,
                },
            ),
            yes=yes,
            dry_run=dry_run,
            as_json=as_json,
        )
        report = admin.prune_checkpoints(conversation_id=conversation)
    if as_json:
        emit_json(report.to_dict())
        return
    stderr().print(
        f"deleted {counted(report.checkpoints_deleted, 'LangGraph checkpoint')} "
        f"({counted(report.writes_deleted, 'pending write')}) of "
        f"{counted(report.threads, 'thread')} and "
        f"{counted(report.orphan_transcripts, 'orphaned Claude subagent transcript')}"
    )
