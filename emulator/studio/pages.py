"""The Studio's pages and the fragments its script fetches (GET only)."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from makers_store import ContextStore, ConversationMeta, MemoryNotFoundError, MemoryValidationError
from makers_store.maintenance import search
from makers_store.text import size_text

from . import frameworks, shapes
from .config import Renderer, StudioConfig

CONVERSATIONS_PAGE = 50
MESSAGES_PAGE = 50
NEWER_PAGE = 100
#: A title search reads at most this many conversations (newest first) per
#: request, then offers to go on: the page never reads a whole store.
SEARCH_SCAN = 5_000
SEARCH_BATCH = 100
#: Message search hits a page shows first, and at most (``?limit=``).
SEARCH_HITS, MAX_SEARCH_HITS = 50, 1_000
#: Users the overview names (each a link to their conversations; the count says all).
USERS_SHOWN = 100
#: Conversations holding only state the list shows (the walk stops there).
STATE_ONLY_SHOWN = 200
#: Messages read looking for a tool call's result (or a result's call).
TOOL_LINK_SCAN = 2_000


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
        target = request.query_params.get("message") or ""
        meta = await _meta(store, cid)
        if target:  # opened at one message (a search hit, a tool call's result)
            messages, older, newer = await _messages_from(store, cid, target)
        else:
            (messages, older), newer = await _newest_messages(store, cid), False
        return render.page(
            request,
            "conversation.html",
            cid=cid,
            title=shapes.title_of(meta) if meta else "",
            messages=messages,
            older=older,
            more=False,
            newer=newer,
            target=target,
            **await _panels(store, cid, meta),
        )

    async def tool_link(request: Request) -> Response:
        """The message holding the result of a tool call (``find=result``,
        searched after the call's message) or the call of a result
        (``find=call``, searched before it), opened at that message."""
        params = request.query_params
        cid, call, start = params.get("id", ""), params.get("call", ""), params.get("from", "")
        find = params.get("find", "")
        if not call or not start or find not in ("result", "call"):
            raise MemoryValidationError("give id, call, from and find=result or find=call")
        found = await _find_tool_partner(store, cid, call, start, find)
        url = f"{p}/conversation?id={quote(cid, safe='')}&message={quote(found, safe='')}"
        return RedirectResponse(url, status_code=303)

    async def overview_page(request: Request) -> Response:
        backend = await asyncio.to_thread(store.blobs.describe)  # may read over a connection
        return render.page(request, "overview.html", space=space_view(backend))

    async def overview_counts_part(request: Request) -> Response:
        """The counts walk the whole store: fetched by the page once it shows."""
        started = time.perf_counter()
        counts = await store.admin.counts()
        users: list[str] = []
        async for uid in store.admin.iter_user_ids():
            users.append(uid)
            if len(users) == USERS_SHOWN:
                break
        took = time.perf_counter() - started
        return HTMLResponse(
            render.text(
                "overview_counts.html", counts=counts.to_dict(), users=users, took=f"{took:.2f} s"
            )
        )

    async def search_page(request: Request) -> Response:
        return render.page(request, "search.html", **await _message_search(store, request))

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
            render.text("messages.html", messages=views, older=older, more=more, cid=cid, target="")
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
        Route(f"{p}/tool-link", tool_link),
        Route(f"{p}/overview", overview_page),
        Route(f"{p}/overview-counts.part", overview_counts_part),
        Route(f"{p}/search", search_page),
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


def space_view(backend: dict[str, Any]) -> dict[str, Any]:
    """What the overview says of the backend (``blobs.describe()``): its kind,
    where it is, its size on disk and what a vacuum would give back."""
    size, reclaimable = backend.get("size_bytes"), backend.get("reclaimable_bytes")
    return {
        "kind": str(backend.get("kind", "?")),
        "where": str(backend.get("path") or backend.get("location") or ""),
        "size": size_text(int(size)) if isinstance(size, int) else "",
        "reclaimable": size_text(int(reclaimable)) if isinstance(reclaimable, int) else "",
        "reclaimable_bytes": reclaimable if isinstance(reclaimable, int) else None,
        "estimate": bool(backend.get("reclaimable_estimate")),
    }


async def _messages_from(
    store: ContextStore, cid: str, target: str
) -> tuple[list[dict[str, Any]], str | None, bool]:
    """A page of messages starting at ``target``; where older ones begin; whether
    newer ones follow the page."""
    first = await store.get_message(cid, target)
    if first is None:
        raise MemoryNotFoundError(f"conversation {cid!r} has no message {target!r}")
    after = await store.get_messages(cid, limit=MESSAGES_PAGE - 1, order="asc", after=target)
    before = await store.get_messages(cid, limit=1, order="desc", after=target)
    views = [shapes.message_view(m) for m in [first, *after]]
    return views, target if before else None, len(after) == MESSAGES_PAGE - 1


async def _find_tool_partner(
    store: ContextStore, cid: str, call: str, start: str, find: str
) -> str:
    """The id of the message answering ``call`` after ``start`` (or making it,
    before ``start``), read for at most :data:`TOOL_LINK_SCAN` messages."""
    order = "asc" if find == "result" else "desc"  # desc after X: older than X
    seen = 0
    async for message in store.iter_messages(cid, order=order, after=start):
        if find == "result" and call in shapes.answered_calls(message):
            return message.message_id
        if find == "call" and any(c["id"] == call for c in shapes.tool_calls(message)):
            return message.message_id
        seen += 1
        if seen >= TOOL_LINK_SCAN:
            break
    where = "after" if find == "result" else "before"
    raise MemoryNotFoundError(
        f"no {'result of' if find == 'result' else 'message making'} tool call {call!r} "
        f"in the {seen:,} messages {where} {start!r}"
        + (" (the doctor calls this an orphan)" if seen < TOOL_LINK_SCAN else "")
    )


async def _message_search(store: ContextStore, request: Request) -> dict[str, Any]:
    """The hits of ``?q=`` by ``store.admin.search_messages`` (``msg search``'s
    rule: a case-insensitive substring of the text), newest first, at most
    ``?limit=`` (50); ``more`` when there are others."""
    params = request.query_params
    query = params.get("q") or ""
    user, role = params.get("user") or None, params.get("role") or None
    try:
        limit = int(params.get("limit") or SEARCH_HITS)
    except ValueError:
        raise MemoryValidationError("limit must be a whole number") from None
    if not 1 <= limit <= MAX_SEARCH_HITS:
        raise MemoryValidationError(f"limit must be from 1 to {MAX_SEARCH_HITS:,}")
    values: dict[str, Any] = {
        "q": query,
        "user": user or "",
        "role": role or "",
        "limit": limit,
        "hits": [],
        "more": False,
    }
    if not query:
        return values
    hits = [
        hit.to_dict()
        async for hit in store.admin.search_messages(
            query,
            user_id=user,
            role=role,
            limit=limit + 1,  # + 1: whether more exist
        )
    ]
    values.update(hits=hits[:limit], more=len(hits) > limit)
    return values


async def _panels(
    store: ContextStore, cid: str, meta: ConversationMeta | None, names: tuple[str, ...] = PANELS
) -> dict[str, Any]:
    """What the panels ``names`` show (only what they read)."""
    values: dict[str, Any] = {}
    if "meta" in names:
        values["meta"] = None if meta is None else _meta_view(meta)
        values["users"] = (await store.admin.conversation_users(cid) or []) if meta else []
        # without meta, what it holds (a conversation of state only)
        values["state_keys"] = 0 if meta else len(await store.bind(cid).state.items())
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
    forked = meta.metadata.get("forked_from")  # {"conversation_id", "message_id"}: a fork's
    source = forked if isinstance(forked, dict) else {}
    return {
        **shapes.conversation_row(meta),
        "forked_from": _text_or_none(source.get("conversation_id")),
        "forked_at": _text_or_none(source.get("message_id")),
        "metadata": [{"key": k, "json": shapes.pretty(v)} for k, v in metadata],
    }


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


async def _conversation_listing(store: ContextStore, request: Request) -> dict[str, Any]:
    params = request.query_params
    user = params.get("user") or None
    query = (params.get("q") or "").strip()
    after, before = params.get("after") or None, params.get("before") or None
    values: dict[str, Any] = {
        "user": user or "",
        "q": query,
        "exact": None,
        "note": "",
        "only": "",
        "state_only": [],
    }
    if params.get("only") == "state":  # no index lists them: a walk of the store's ids
        found = []
        async for item in store.admin.iter_state_only_conversations():
            found.append(item.to_dict())
            if len(found) > STATE_ONLY_SHOWN:
                break
        values.update(
            only="state", rows=[], next=None, previous=None, state_only=found[:STATE_ONLY_SHOWN]
        )
        values["note"] = (
            "conversations that hold state and no message (no index lists them: "
            "found by reading every conversation id"
            + (f"; the first {STATE_ONLY_SHOWN} shown)" if len(found) > STATE_ONLY_SHOWN else ")")
        )
        return values
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
    ``store.admin.find_conversations``,
    :func:`makers_store.maintenance.search.conversation_matches`),
    reading at most :data:`SEARCH_SCAN` from ``after`` on; and where to go on from."""
    found = search.pattern(query)
    rows: list[dict[str, Any]] = []
    scanned = 0
    cursor = after
    while scanned < SEARCH_SCAN and len(rows) < CONVERSATIONS_PAGE:
        page = await store.list_conversations(limit=SEARCH_BATCH, after=cursor, user_id=user)
        scanned += len(page.items)
        rows += [
            shapes.conversation_row(m) for m in page.items if search.conversation_matches(m, found)
        ]
        cursor = page.next_cursor
        if cursor is None:
            break
    return rows, cursor, scanned  # the whole last batch: resuming after it skips nothing
