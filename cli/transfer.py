"""``makers-store export`` and ``makers-store import``: the store as JSON lines.

The format and the import's guarantees are described in
:mod:`makers_store.maintenance.exporting`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .context import open_session
from .options import DryRun, JsonOutput, Since, Until, UserFilter, Yes, time_range

if TYPE_CHECKING:
    from makers_store import SyncContextStore


@contextmanager
def _destination(output: Path | None) -> Iterator[Callable[[str], object]]:
    """A writer to stdout, or to a temporary file that replaces ``output``
    only once everything is written."""
    if output is None or str(output) == "-":
        yield sys.stdout.write
        sys.stdout.flush()
        return
    import os
    import tempfile

    directory = output.resolve().parent
    handle = tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=directory, prefix=f".{output.name}.", suffix=".tmp", delete=False
    )
    try:
        # The temporary file is made 0600; FILE gets the mode it already had,
        # or the one the umask gives a new file (as `> FILE` would).
        os.fchmod(handle.fileno(), _mode_for(output))
        with handle:
            yield handle.write
        os.replace(handle.name, output)
    except BaseException:
        os.unlink(handle.name)
        raise


def _mode_for(output: Path) -> int:
    import os
    import stat

    try:
        return stat.S_IMODE(os.stat(output).st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _active(
    store: SyncContextStore,
    conversation: list[str] | None,
    user: str | None,
    since: int | None,
    until: int | None,
) -> list[str]:
    """The conversations (of those named, or ``user``'s, or all) whose last
    message is from ``since`` to ``until``."""
    from .errors import NotFound

    def inside(at: int) -> bool:
        return (since is None or at >= since) and (until is None or at <= until)

    if conversation:
        chosen = []
        for cid in dict.fromkeys(conversation):
            meta = store.get_conversation(conversation_id=cid)
            if meta is None:
                raise NotFound(f"conversation {cid!r} not found")
            if inside(meta.last_message_at):
                chosen.append(cid)
        return chosen
    chosen = []
    for meta in store.iter_conversations(user_id=user):  # newest first
        if since is not None and meta.last_message_at < since:
            break
        if inside(meta.last_message_at):
            chosen.append(meta.conversation_id)
    return chosen


def _empty_export() -> str:
    """The header line alone: what export writes for a store with nothing in it."""
    from makers_store.maintenance.exporting import FORMAT, VERSION

    from .render import json_text

    return json_text({"type": "header", "format": FORMAT, "version": VERSION}) + "\n"


def export_command(
    ctx: typer.Context,
    conversation: Annotated[
        list[str] | None,
        typer.Option(
            "--conversation",
            "-c",
            metavar="CONVERSATION_ID",
            help="Only this conversation (repeatable).",
        ),
    ] = None,
    user: UserFilter = None,
    since: Since = None,
    until: Until = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write to FILE instead of stdout.",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Write conversations, messages, metadata and state as JSON lines.

    --since and --until select the conversations whose last message is in
    that time, each exported whole (an import replaces whole conversations)."""
    from .errors import Interrupted
    from .render import progress, stderr
    from .text import counted

    done = 0
    total = 0
    start, end = time_range(since, until)
    try:
        with open_session(ctx) as session:
            admin = session.store.admin
            if start is not None or end is not None:
                conversation = _active(session.store, conversation, user, start, end)
                if not conversation:  # none in that time: an export of nothing, not of all
                    with _destination(output) as write:
                        write(_empty_export())
                    stderr().print("exported 0 conversations (none had a message in that time)")
                    return
            total = len(set(conversation)) if conversation else admin.count_conversations()
            with _destination(output) as write, progress("exporting", total) as bar:

                def exported() -> None:
                    nonlocal done
                    session.checkpoint()  # stops here after Ctrl-C: done is exact
                    done += 1
                    bar.advance()

                counts = admin.export_jsonl(
                    write, conversation_ids=conversation, user_id=user, on_conversation=exported
                )
    except KeyboardInterrupt:
        # _destination removed the temporary file: FILE is as it was.
        left = f"{output} was not written" if output is not None else "the output is incomplete"
        raise Interrupted(
            f"export interrupted after {done:,} of {total:,} conversations; {left}"
        ) from None
    where = f" to {output}" if output is not None else ""
    stderr().print(
        f"exported {counted(counts.conversations, 'conversation')}, "
        f"{counted(counts.messages, 'message')}, "
        f"{counted(counts.state_entries, 'state entry', 'state entries')}{where}",
    )


@contextmanager
def _readable(file: Path) -> Iterator[Path]:
    """``-`` (stdin) is copied to a temporary file: the import reads twice."""
    if str(file) != "-":
        yield file
        return
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="makers-store-import-") as directory:
        copy = Path(directory) / "stdin.jsonl"
        with copy.open("wb") as handle:
            shutil.copyfileobj(sys.stdin.buffer, handle)
        yield copy


def _label(file: Path) -> str:
    return "standard input" if str(file) == "-" else str(file)


def _dry_run_import(ctx: typer.Context, path: Path, label: str, *, as_json: bool) -> None:
    """Check the file as the import would (a bad line is named, exit code 2),
    print what importing it would do and end the command. A store that does
    not exist yet is not created: everything in the file would be new."""
    from makers_store.maintenance.importing import validate_jsonl

    from .errors import StoreNotFound, UsageProblem
    from .options import confirmed
    from .plans import import_plan

    with path.open("rb") as handle:
        validate_jsonl(handle)
    try:
        with open_session(ctx) as session:
            plan = import_plan(session.store, path, label)
    except StoreNotFound:
        plan = import_plan(None, path, label)
    if plan is None:  # validated above, so not expected: said rather than assumed
        raise UsageProblem(f"FILE {str(path)!r} does not read as an export")
    confirmed(plan, yes=False, dry_run=True, as_json=as_json)


def _all_equal(counts: dict[str, Any]) -> bool:
    """Whether an import plan changes nothing: every conversation and blob of
    the file is in the store already, equal."""
    changes = ("new", "replaced", "new_blobs", "replaced_blobs")
    return counts["conversations"] + counts["blobs"] > 0 and not any(counts[k] for k in changes)


def _say_all_equal(counts: dict[str, Any], file: Path, *, as_json: bool) -> None:
    from .render import emit_json, stderr
    from .text import counted

    if as_json:
        emit_json({"conversations": 0, "messages": 0, "state_entries": 0, "adapter_blobs": 0,
                   "blobs": 0, "unchanged": counts["unchanged"]})  # fmt: skip
        return
    equal = counted(counts["unchanged"], "conversation")
    blobs = f" and {counted(counts['blobs'], 'other blob')}" if counts["blobs"] else ""
    stderr().print(f"imported nothing from {file}: 0 written, {equal}{blobs} already equal")


#: What each line of an export is (makers_store.maintenance.exporting's format).
EXPORT_RECORDS = frozenset({"header", "conversation", "message", "state", "adapter", "blob"})


def check_export(path: Path, label: str) -> None:
    """Refuse a file that is not an export before reading it through: its first
    line is neither the export's header nor one of its records (a file from
    another tool, a JSON document, the wrong file). Line-by-line errors of a
    real export are the library's (they name the line)."""
    import json

    from .errors import UsageProblem

    with path.open("rb") as handle:
        first = handle.readline(1 << 20).strip()
        while not first:
            line = handle.readline(1 << 20)
            if not line:
                return  # blank lines only: the library says the file holds nothing
            first = line.strip()
    try:
        record = json.loads(first)
    except ValueError:
        what = "not JSON"
    else:
        if isinstance(record, dict) and record.get("type") in EXPORT_RECORDS:
            return
        what = "JSON, but no export record (no known 'type')"
    raise UsageProblem(
        f"{label} is not a makers-store export: its first line is {what}; an export "
        'starts with {"type":"header","format":"makers-store-export",...} '
        "(makers-store export writes one)"
    )


def import_command(
    ctx: typer.Context,
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE", help="A file written by export ('-' reads stdin).", show_default=False
        ),
    ],
    yes: Yes = False,
    dry_run: DryRun = False,
    as_json: JsonOutput = False,
) -> None:
    """Read JSON lines written by export back into the store (idempotent).

    Each conversation of the file replaces the one with its id; when that
    replaces a conversation that differs in the store, the import says so and
    asks first (--yes goes ahead; --dry-run shows what would change)."""
    from .errors import Interrupted, UsageProblem
    from .options import confirmed
    from .render import emit_json, progress, stderr
    from .text import counted

    done = conversations = 0
    with _readable(file) as path:
        if not path.is_file():
            raise UsageProblem(f"FILE {str(file)!r} is not a readable file")
        if path.stat().st_size == 0:
            where = "standard input" if str(file) == "-" else f"FILE {str(file)!r}"
            raise UsageProblem(f"{where} is empty: nothing to import")

        def lines() -> Iterator[bytes]:
            with path.open("rb") as handle:
                yield from handle

        check_export(path, _label(file))
        if dry_run:
            _dry_run_import(ctx, path, _label(file), as_json=as_json)
        try:
            with open_session(ctx, create=True) as session:
                from makers_store.maintenance.importing import validate_jsonl

                from .plans import import_plan

                # a bad file is refused naming its line (exit 2) before anyone
                # is asked about replacing what it holds
                with path.open("rb") as handle:
                    validate_jsonl(handle)
                plan = import_plan(session.store, path, _label(file))
                if plan is not None:  # None: a bad file, refused below with its line
                    confirmed(plan, yes=yes, dry_run=False)
                    if _all_equal(plan.counts):  # as copy: equal data is not written again
                        _say_all_equal(plan.counts, file, as_json=as_json)
                        return
                with progress("importing", None) as bar:

                    def advanced(line: int, of: int) -> None:
                        # After Ctrl-C this stops the conversation being written,
                        # whose unit then leaves it as it was.
                        session.checkpoint()
                        bar.update(line, of)

                    def replaced(count: int, of: int) -> None:
                        nonlocal done, conversations
                        done, conversations = count, of

                    counts = session.store.admin.import_jsonl(
                        lines, progress=advanced, on_conversation=replaced
                    )
        except KeyboardInterrupt:
            where = (
                f"after {done:,} of {conversations:,} conversations" if conversations else "early"
            )
            raise Interrupted(
                f"import interrupted {where}; each conversation of the file is either "
                "imported or as it was; run the same import again to finish"
            ) from None
    if as_json:
        unchanged = {} if plan is None else {"unchanged": plan.counts["unchanged"]}
        emit_json({**counts.to_dict(), **unchanged})
        return
    compared = ""
    if plan is not None:
        c = plan.counts
        compared = (f" ({c['new']:,} new, {c['replaced']:,} replaced, "
                    f"{c['unchanged']:,} already equal)")  # fmt: skip
    stderr().print(
        f"imported {counted(counts.conversations, 'conversation')}{compared}, "
        f"{counted(counts.messages, 'message')}, "
        f"{counted(counts.state_entries, 'state entry', 'state entries')} from {file}",
    )
