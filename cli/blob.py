"""``makers-store blob``: the Blob store's raw view (key, size, etag, updated time)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from .context import open_session
from .errors import CliError, NotFound
from .options import JsonOutput, examples

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
            metavar="[PREFIX]", help="Only keys starting with PREFIX, e.g. 'c/' or 'i/u/'."
        ),
    ] = "",
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", min=1, help="At most this many keys.")
    ] = None,
    as_json: JsonOutput = False,
) -> None:
    """List blobs: key, size, etag, updated time (JSON lines with --json)."""
    from .render import emit_json_line, local_time, stderr, stdout

    console = stdout()
    shown = 0
    with open_session(ctx) as session:
        for info in session.store.admin.list_blobs(prefix, limit=limit):
            if as_json:
                emit_json_line(
                    {
                        "key": info.key,
                        "size": info.size,
                        "etag": info.etag,
                        "updated_at": info.updated_at,
                    }
                )
            else:
                updated = local_time(info.updated_at)
                console.print(f"{info.size:>10}  {updated}  {info.etag:<16}  {info.key}")
            shown += 1
    if shown == 0 and not as_json:
        stderr().print("no blobs" + (f" under {prefix!r}" if prefix else ""))


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
        raise NotFound(f"no blob under key {key!r}")
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
        ("size", f"{blob.size} bytes"),
        ("etag", blob.etag),
        ("updated", local_time(blob.updated_at)),
    ):
        console.print(f"{label:>8}  {value}")
    if text is None:
        console.print(f"{'value':>8}  <{blob.size} bytes of binary data; use --raw>")
    elif text:
        try:
            parsed = parse_loose(text)
        except CliError:  # too deep to lay out as JSON: the text as it is
            parsed = text
        if isinstance(parsed, dict | list):
            console.print(json_view(parsed))
        else:
            console.print(text)
