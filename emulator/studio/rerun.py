""""Re-run from here" (under ``makers-store serve``): replay a turn of a served
conversation against changed agent code without touching the original.

The user message chosen starts the turn. The conversation is forked just
before it (``store.fork_conversation`` up to the message before: messages,
metadata, state, users and the LangGraph thread up to there,
:mod:`makers_store.lifecycle.fork`), and the Playground opens on the fork with
that message's text ready to send, on the route that last served the
conversation (from its traces). The turn's first message has nothing before
it to fork: the Playground then opens on a fresh conversation id.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from makers_store import MemoryNotFoundError, MemoryValidationError
from makers_store.maintenance.search import message_texts

from .config import Renderer, StudioConfig
from .serve_pages import trace_rows


def _text_field(body: Any, name: str) -> str:
    value = body.get(name) if isinstance(body, dict) else None
    if not isinstance(value, str) or not value:
        raise MemoryValidationError(f"{name} must be a non-empty string")
    return value


def routes(p: str, config: StudioConfig, render: Renderer) -> list[Route]:
    store = config.store

    async def rerun(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            raise MemoryValidationError("the request body must be a JSON object") from None
        cid, mid = _text_field(body, "id"), _text_field(body, "message_id")
        message = await store.get_message(cid, mid)
        if message is None:
            raise MemoryNotFoundError(f"message {mid!r} not found in conversation {cid!r}")
        if message.role != "user":
            raise MemoryValidationError("re-run starts from a user message (the turn it begins)")
        before = await store.get_messages(cid, limit=1, order="desc", after=mid)
        new_id = f"{cid}-rerun-{secrets.token_hex(3)}"
        if before:
            await store.fork_conversation(cid, new_id, up_to=before[0].message_id)
        runs = trace_rows(config, cid)
        route = next((r["route"] for r in runs if r["route"] in config.agent_routes), None)
        text = "\n".join(message_texts(message.content))
        return JSONResponse(
            {
                "ok": True,
                "id": new_id,
                "forked": bool(before),
                "route": route,
                "body": json.dumps({"message": text}, ensure_ascii=False),
            }
        )

    return [Route(f"{p}/api/rerun", rerun, methods=["POST"])]
