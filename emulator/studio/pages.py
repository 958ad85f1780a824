"""The Studio's pages and the fragments its script fetches (GET only)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from makers_store import (
    ContextStore,
    ConversationMeta,
    MemoryNotFoundError,
    MemoryValidationError,
    search,
)

from . import frameworks, shapes
from .config import Renderer, StudioConfig

CONVERSATIONS_PAGE = 50
MESSAGES_PAGE = 50
NEWER_PAGE = 100
#: A title search reads at most this many conversations (newest first) per
#: request, then offers to go on: the page never reads a whole store.
SEARCH_SCAN = 5_000
SEARCH_BATCH = 100


def routes(p: str, config: StudioConfig, render: Renderer) -> list[Route]:
    store = config.store

    async def conversations_page(request: Request) -> Response:
        listing = await _conversation_listing(store, request)
        return render.page(request, "conversations.html", **listing)

    async def conversations_part(request: Request) -> Response:
        listing = await _conversation_listing(store, request)
        return HTMLResponse(render.text("conversation_rows.html", **listing))

    async def conversation_page(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        meta = await _meta(store, cid)
        messages, older = await _newest_messages(store, cid)
        return render.page(
            request,
            "conversation.html",
            cid=cid,
            title=shapes.title_of(meta) if meta else "",
            messages=messages,
            older=older,
            more=False,
            **await _panels(store, cid, meta),
        )

    async def messages_part(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        # ?older=ID: the page before ID; ?newer=ID: what came after ID. (In a
        # newest-first listing, "after" a message means older than it.)
        older_than = request.query_params.get("older")
        newer_than = request.query_params.get("newer")
        more = False
        if newer_than:
            found = await store.get_messages(cid, limit=NEWER_PAGE, order="asc", after=newer_than)
            older, more = None, len(found) == NEWER_PAGE
        else:
            page = await store.get_messages(
                cid, limit=MESSAGES_PAGE, order="desc", after=older_than
            )
            found = page[::-1]
            older = found[0].message_id if len(page) == MESSAGES_PAGE else None
        views = [shapes.message_view(m) for m in found]
        return HTMLResponse(
            render.text("messages.html", messages=views, older=older, more=more, cid=cid)
        )

    async def panel_part(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        name = request.query_params.get("name", "")
        if name not in PANELS:
            raise MemoryValidationError(f"name must be one of {', '.join(PANELS)}")
        meta = await _meta(store, cid)
        values = await _panels(store, cid, meta, (name,))
        return HTMLResponse(render.text(f"panel_{name}.html", cid=cid, **values))

    async def openai_part(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        items = await frameworks.openai_items(store, cid)
        return HTMLResponse(render.text("openai_items.html", items=items))

    async def history_part(request: Request) -> Response:
        cid = request.query_params.get("id", "")
        await _meta(store, cid)  # refuses an empty id
        try:  # each finding as its JSON shape: the template prints fields, never objects
            findings = [f.to_dict() async for f in store.admin.check_history(cid)]
        except MemoryNotFoundError:
            return HTMLResponse(render.text("history_check.html", missing=True, findings=[]))
        return HTMLResponse(render.text("history_check.html", missing=False, findings=findings))

    async def index_page(request: Request) -> Response:
        return render.page(request, "index_health.html")

    async def index_check_part(request: Request) -> Response:
        check = await store.admin.check_index()
        return HTMLResponse(render.text("index_check.html", check=check.to_dict()))

    return [
        Route(f"{p}/", conversations_page),
        Route(f"{p}/conversations.part", conversations_part),
        Route(f"{p}/conversation", conversation_page),
        Route(f"{p}/messages.part", messages_part),
        Route(f"{p}/panel.part", panel_part),
        Route(f"{p}/openai.part", openai_part),
        Route(f"{p}/history.part", history_part),
        Route(f"{p}/index", index_page),
        Route(f"{p}/index-check.part", index_check_part),
    ]


PANELS = ("meta", "state", "frameworks")


async def _meta(store: ContextStore, cid: str) -> ConversationMeta | None:
    if not cid:
        raise MemoryValidationError("id: give a conversation id (?id=...)")
    return await store.get_conversation(cid)


async def _newest_messages(
    store: ContextStore, cid: str
) -> tuple[list[dict[str, Any]], str | None]:
    page = await store.get_messages(cid, limit=MESSAGES_PAGE, order="desc")
    found = page[::-1]
    older = found[0].message_id if len(page) == MESSAGES_PAGE else None
    return [shapes.message_view(m) for m in found], older


async def _panels(
    store: ContextStore, cid: str, meta: ConversationMeta | None, names: tuple[str, ...] = PANELS
) -> dict[str, Any]:
    """What the panels ``names`` show (only what they read)."""
    values: dict[str, Any] = {}
    if "meta" in names:
        values["meta"] = None if meta is None else _meta_view(meta)
    if "state" in names:
        state = await store.bind(cid).state.items()
        values["state"] = [shapes.state_view(k, v) for k, v in sorted(state.items())]
    if "frameworks" in names:
        values["checkpoints"] = await frameworks.langgraph_timeline(store, cid)
        values["claude"] = await frameworks.claude_transcripts(store, cid)
        # read when asked for (openai.part): finding them reads the conversation
        values["openai"] = frameworks.openai_installed()
    return values


def _meta_view(meta: ConversationMeta) -> dict[str, Any]:
    metadata = sorted(meta.metadata.items())
    return {
        **shapes.conversation_row(meta),
        "metadata": [{"key": k, "json": shapes.pretty(v)} for k, v in metadata],
    }


async def _conversation_listing(store: ContextStore, request: Request) -> dict[str, Any]:
    params = request.query_params
    user = params.get("user") or None
    query = (params.get("q") or "").strip()
    after, before = params.get("after") or None, params.get("before") or None
    values: dict[str, Any] = {"user": user or "", "q": query, "exact": None, "note": ""}
    if query:
        exact = await store.get_conversation(query)
        values["exact"] = None if exact is None else shapes.conversation_row(exact)
        rows, resume, scanned = await _search_titles(store, query, user, after)
        values.update(rows=rows, next=resume, previous=None)
        values["note"] = (
            f"ids and titles containing {query!r} among the newest {scanned:,} conversations"
            + (" (more further on)" if resume else "")
        )
        return values
    page = await store.list_conversations(
        limit=CONVERSATIONS_PAGE, after=after, before=before, user_id=user
    )
    values.update(
        rows=[shapes.conversation_row(m) for m in page.items],
        next=page.next_cursor,
        previous=page.previous_cursor if (after or before) else None,
    )
    return values


async def _search_titles(
    store: ContextStore, query: str, user: str | None, after: str | None
) -> tuple[list[dict[str, Any]], str | None, int]:
    """Conversations whose id or title contains ``query`` (any case: the rule of
    ``store.admin.find_conversations``, :func:`makers_store.search.conversation_matches`),
    reading at most :data:`SEARCH_SCAN` from ``after`` on; and where to go on from."""
    found = search.pattern(query)
    rows: list[dict[str, Any]] = []
    scanned = 0
    cursor = after
    while scanned < SEARCH_SCAN and len(rows) < CONVERSATIONS_PAGE:
        page = await store.list_conversations(limit=SEARCH_BATCH, after=cursor, user_id=user)
        scanned += len(page.items)
        rows += [
            shapes.conversation_row(m)
            for m in page.items
            if search.conversation_matches(m, found)
        ]
        cursor = page.next_cursor
        if cursor is None:
            break
    return rows, cursor, scanned  # the whole last batch: resuming after it skips nothing
