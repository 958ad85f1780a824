"""The Snapshots page: the store's named snapshots, saved and restored from
the browser as ``makers-store snapshot`` does (:mod:`makers_store.maintenance.snapshots`).

Restoring replaces everything the store holds: the page asks first, naming
the snapshot and what it holds (the CLI's confirmation rule, in a dialog).
Saving over a snapshot of the same name asks too (the API answers 409 until
the page says ``replace``).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from makers_store import MemoryValidationError
from makers_store.text import size_text

from .config import Renderer, StudioConfig


def _name(body: Any) -> str:
    name = body.get("name") if isinstance(body, dict) else None
    if not isinstance(name, str) or not name:
        raise MemoryValidationError("name must be a non-empty string")
    return name


def routes(p: str, config: StudioConfig, render: Renderer) -> list[Route]:
    store = config.store

    async def rows() -> dict[str, Any]:
        found = [info async for info in store.admin.list_snapshots()]
        shown = [
            {**info.to_dict(), "size": size_text(info.size_bytes)} for info in found
        ]
        return {"snapshots": shown, "folder": str(store.admin.snapshot_folder())}

    async def page(request: Request) -> Response:
        return render.page(request, "snapshots.html", **await rows())

    async def part(request: Request) -> Response:
        return HTMLResponse(render.text("snapshot_rows.html", **await rows()))

    async def save(request: Request) -> Response:
        body = await request.json()
        replace = isinstance(body, dict) and body.get("replace") is True
        info = await store.admin.save_snapshot(_name(body), replace=replace)
        return JSONResponse({"ok": True, "snapshot": info.to_dict()})

    async def restore(request: Request) -> Response:
        info = await store.admin.restore_snapshot(_name(await request.json()))
        return JSONResponse({"ok": True, "snapshot": info.to_dict()})

    return [
        Route(f"{p}/snapshots", page),
        Route(f"{p}/snapshots.part", part),
        Route(f"{p}/api/snapshot-save", save, methods=["POST"]),
        Route(f"{p}/api/snapshot-restore", restore, methods=["POST"]),
    ]
