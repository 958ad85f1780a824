"""``makers-store info``: which store is in use and why, and what it holds."""

from __future__ import annotations

from typing import Any

import typer

from makers_store.text import size_text

from .context import cli_state, open_session
from .options import JsonOutput


def info_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Which store is in use and why; counts, size on disk, schema version."""
    from .errors import StoreNotFound
    from .render import emit_json, stdout

    try:
        with open_session(ctx) as session:
            location = session.store.location
            backend: dict[str, Any] = session.store.blobs.describe()
            counts = session.store.admin.counts()
    except StoreNotFound:  # raised by the open: nothing was created
        _not_created(cli_state(ctx).store_url, as_json=as_json)
        return
    document = {
        "url": location.display_url if location else None,
        "reason": location.reason if location else None,
        "exists": True,
        "backend": backend,
        **counts.to_dict(),
    }
    if as_json:
        emit_json(document)
        return
    rows = [
        ("store", document["url"]),
        ("why", document["reason"]),
        ("backend", backend.get("kind", "?")),
    ]
    if "path" in backend:
        rows.append(("file", backend["path"]))
    if "size_bytes" in backend:
        rows.append(("size on disk", size_text(int(backend["size_bytes"]))))
    if "reclaimable_bytes" in backend:
        rows.append(("reclaimable", _reclaimable(backend)))
    if "schema_version" in backend:
        rows.append(("schema", str(backend["schema_version"])))
    rows += [
        ("conversations", f"{counts.conversations:,}"),
        ("messages", f"{counts.messages:,}"),
        ("state entries", f"{counts.state_entries:,}"),
        ("index entries", f"{counts.index_entries:,}"),
    ]
    console = stdout()
    for label, value in rows:
        console.print(f"{label:>14}  {value}")


def _not_created(url: str | None, *, as_json: bool) -> None:
    """What ``info`` says about a store no write has created yet."""
    from makers_store.api.location import resolve

    from .render import emit_json, stdout

    location = resolve(url)
    if as_json:
        emit_json({"url": location.display_url, "reason": location.reason, "exists": False})
        return
    console = stdout()
    for label, value in (
        ("store", location.display_url),
        ("why", location.reason),
        ("state", "not created yet (commands that add data create it)"),
    ):
        console.print(f"{label:>14}  {value}")


def _reclaimable(backend: dict[str, Any]) -> str:
    """What ``makers-store vacuum`` would give back, as the backend tells it."""
    count = int(backend["reclaimable_bytes"])
    shown = size_text(count) + (" (an estimate)" if backend.get("reclaimable_estimate") else "")
    return f"{shown}: makers-store vacuum gives it back" if count else shown
