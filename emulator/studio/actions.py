"""The Studio's writes: JSON in, JSON out, each one public store call (the
whole-store doctor answers the HTML of its findings, rendered by the templates).

Every request here has passed :class:`.security.Guard` (token and origin).
Values arrive as JSON *text* typed in the page, parsed here so a typo is a
400 naming the field, and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from makers_store import MemoryValidationError

from .config import Renderer, StudioConfig

#: Findings the whole-store doctor shows (the count says how many there were).
FINDINGS_SHOWN = 500


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise MemoryValidationError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise MemoryValidationError("the request body must be a JSON object")
    return body


def _text(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise MemoryValidationError(f"{name} must be a non-empty string")
    return value


def _json_field(body: dict[str, Any], name: str) -> Any:
    text = _text(body, name)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise MemoryValidationError(f"{name} is not valid JSON: {exc}") from None


def routes(p: str, config: StudioConfig, render: Renderer) -> list[Route]:
    store = config.store

    async def set_state(request: Request) -> Response:
        body = await _body(request)
        cid, key = _text(body, "id"), _text(body, "key")
        value = _json_field(body, "value")
        await store.bind(cid).state.set(key, value)
        return JSONResponse({"ok": True, "value": await store.bind(cid).state.get(key)})

    async def delete_state(request: Request) -> Response:
        body = await _body(request)
        await store.bind(_text(body, "id")).state.delete(_text(body, "key"))
        return JSONResponse({"ok": True})

    async def update_meta(request: Request) -> Response:
        """Shallow-merge a patch into the metadata; a null value deletes its key."""
        body = await _body(request)
        patch = _json_field(body, "patch")
        if not isinstance(patch, dict):
            raise MemoryValidationError('patch must be a JSON object, e.g. {"title": "x"}')
        meta = await store.update_conversation(_text(body, "id"), patch)
        return JSONResponse({"ok": True, "metadata": meta.metadata})

    async def clear(request: Request) -> Response:
        await store.clear_messages(_text(await _body(request), "id"))
        return JSONResponse({"ok": True})

    async def delete(request: Request) -> Response:
        await store.delete_conversation(_text(await _body(request), "id"))
        return JSONResponse({"ok": True})

    async def fork(request: Request) -> Response:
        """Fork the conversation at one of its messages into a new id (the page
        proposes one); the page then opens the fork."""
        body = await _body(request)
        meta = await store.fork_conversation(
            _text(body, "id"), _text(body, "new_id"), up_to=_text(body, "message_id")
        )
        return JSONResponse({"ok": True, "id": meta.conversation_id})

    async def rebuild_index(request: Request) -> Response:
        summary = await store.admin.rebuild_index()
        return JSONResponse({"ok": True, "summary": summary.to_dict()})

    async def vacuum(request: Request) -> Response:
        report = await store.admin.vacuum()
        return JSONResponse({"ok": True, "report": report.to_dict()})

    async def doctor(request: Request) -> Response:
        """``makers-store doctor`` over the whole store (read-only; a POST
        because it reads every conversation): its findings as HTML."""
        findings: list[dict[str, Any]] = []
        count = 0
        async for finding in store.admin.check_history():
            count += 1
            if len(findings) < FINDINGS_SHOWN:
                findings.append(finding.to_dict())
        return HTMLResponse(
            render.text("doctor.html", findings=findings, count=count, repairs=None, missing=False)
        )

    async def doctor_repair(request: Request) -> Response:
        """``makers-store doctor --fix`` over the whole store: what it repaired."""
        repairs = [r.to_dict() async for r in store.admin.repair_history()]
        findings = [r["finding"] for r in repairs[:FINDINGS_SHOWN]]
        return HTMLResponse(
            render.text(
                "doctor.html",
                findings=findings,
                count=len(repairs),
                repairs=repairs[:FINDINGS_SHOWN],
                missing=False,
            )
        )

    return [
        Route(f"{p}/api/vacuum", vacuum, methods=["POST"]),
        Route(f"{p}/api/doctor", doctor, methods=["POST"]),
        Route(f"{p}/api/doctor-repair", doctor_repair, methods=["POST"]),
        Route(f"{p}/api/state", set_state, methods=["POST"]),
        Route(f"{p}/api/state-delete", delete_state, methods=["POST"]),
        Route(f"{p}/api/meta", update_meta, methods=["POST"]),
        Route(f"{p}/api/clear", clear, methods=["POST"]),
        Route(f"{p}/api/delete", delete, methods=["POST"]),
        Route(f"{p}/api/fork", fork, methods=["POST"]),
        Route(f"{p}/api/index-rebuild", rebuild_index, methods=["POST"]),
    ]
