"""``makers-store blob``: the Blob store's raw view (key, size, etag, updated time)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .context import open_session
from .errors import CliError, NotFound
from .listing import FormatOption
from .options import JsonOutput, examples
from .text import counted

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .render import Screen

app = typer.Typer(
    help="Look at the raw blobs under the store (keys, sizes, etags, values).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command(
    "ls",
    epilog=examples(
        "makers-store blob ls c/",
        "makers-store blob ls i/u/ --limit 10",
    ),
)
def ls_command(
    ctx: typer.Context,
    prefix: Annotated[
        str,
        typer.Argument(
            metavar="PREFIX", help="Only keys starting with PREFIX, e.g. 'c/' or 'i/u/'."
        ),
    ] = "",
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", metavar="N", min=1, help="At most this many keys."),
    ] = None,
    format_: FormatOption = None,
    as_json: JsonOutput = False,
) -> None:
    """List blobs: key, size, etag, updated time (JSON lines with --json)."""
    from .listing import Format, chosen, emit_rows
    from .render import emit_json, stderr, stdout

    shape = chosen(format_, as_json, stream=True)
    with open_session(ctx) as session:
        infos = (
            {"key": info.key, "size": info.size, "etag": info.etag, "updated_at": info.updated_at}
            for info in session.store.admin.list_blobs(prefix, limit=limit)
        )
        if shape is Format.json:
            emit_json({"items": list(infos)})
            return
        if shape is not Format.table:  # streamed: a listing of millions holds none
            emit_rows(shape, BLOB_COLUMNS, infos)
            return
        shown = _blob_lines(stdout(), infos)
    if shown == 0:
        stderr().print("no blobs" + (f" under {prefix!r}" if prefix else ""))


#: The columns of ``blob ls --format csv|tsv``.
BLOB_COLUMNS = ("key", "size", "etag", "updated_at")


def _blob_lines(console: Screen, infos: Iterator[dict[str, Any]]) -> int:
    from .render import Text, cell, local_time

    shown = 0
    for info in infos:
        if shown == 0:  # the header, once there is a row to head
            console.print(Text(f"{'size':>12}  {'updated':<19}  {'etag':<16}  key", style="bold"))
        updated = local_time(info["updated_at"])
        line = f"{info['size']:>12,}  {updated}  {info['etag']:<16}  "
        console.print(Text(line) + cell(info["key"]))  # keys are user data: one line
        shown += 1
    return shown


@app.command(
    "get",
    epilog=examples(
        "makers-store blob get c/c_42/meta",
        "makers-store blob get c/c_42/meta --raw > meta.json",
    ),
)
def get_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="The blob key.", show_default=False)],
    raw: Annotated[
        bool, typer.Option("--raw", help="Write the value's bytes to stdout, nothing else.")
    ] = False,
    as_json: JsonOutput = False,
) -> None:
    """Show one blob: key, size, etag, updated time and its value."""
    with open_session(ctx) as session:
        blob = session.store.admin.get_blob(key)
    if blob is None:
        raise NotFound(f"blob {key!r} not found")
    if raw:
        sys.stdout.buffer.write(blob.data)
        sys.stdout.flush()
        return
    try:
        text: str | None = blob.data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    from .render import emit_json, json_view, local_time, stdout

    if as_json:
        emit_json(
            {
                "key": blob.key,
                "size": blob.size,
                "etag": blob.etag,
                "updated_at": blob.updated_at,
                "text": text,
            }
        )
        return
    from .options import parse_loose

    console = stdout()
    for label, value in (
        ("key", blob.key),
        ("size", counted(blob.size, "byte")),
        ("etag", blob.etag),
        ("updated", local_time(blob.updated_at)),
    ):
        console.print(f"{label:>8}  {value}")
    if text is None:
        console.print(f"{'value':>8}  <{counted(blob.size, 'byte')} of binary data; use --raw>")
    elif text:
        try:
            parsed = parse_loose(text)
        except CliError:  # too deep to lay out as JSON: the text as it is
            parsed = text
        if isinstance(parsed, dict | list):
            console.print(json_view(parsed))
        else:
            console.print(text)
