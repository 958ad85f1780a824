"""``makers-store info``: which store is in use and why, and what it holds."""

from __future__ import annotations

from typing import Any

import typer

from .context import open_session
from .options import JsonOutput


def info_command(ctx: typer.Context, as_json: JsonOutput = False) -> None:
    """Which store is in use and why; counts, size on disk, schema version."""
    from makers_store.admin import store_counts

    with open_session(ctx) as session:
        location = session.store.location
        backend: dict[str, Any] = session.blobs.describe()
        counts = session.call(store_counts(session.blobs))
    document = {
        "url": location.display_url if location else None,
        "reason": location.reason if location else None,
        "backend": backend,
        **counts.to_dict(),
    }
    from .render import emit_json, stdout

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
        rows.append(("size on disk", _size(int(backend["size_bytes"]))))
    if "schema_version" in backend:
        rows.append(("schema", str(backend["schema_version"])))
    rows += [
        ("conversations", str(counts.conversations)),
        ("messages", str(counts.messages)),
        ("state entries", str(counts.state_entries)),
        ("index entries", str(counts.index_entries)),
    ]
    console = stdout()
    for label, value in rows:
        console.print(f"{label:>14}  {value}", markup=False)


def _size(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} bytes"
