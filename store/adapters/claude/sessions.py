"""A ``claude_agent_sdk`` :class:`~claude_agent_sdk.types.SessionStore` over the store.

Layout (see the "Claude sessions" section of :mod:`makers_store._core.keys`). A
session's data lives under the conversation whose id is its ``session_id``,
so ``delete_conversation(session_id)`` removes it; ``project_key`` and
``subpath`` are escaped into the keys. Each transcript (the main one, or one
subagent's ``subpath``) is an append-only log:

* ``h/{stream}``, the *head*, is the commit point: the transcript's
  generation, the next batch number, its mtime and (main transcript only) the
  SDK's summary sidecar, folded with :func:`claude_agent_sdk.fold_session_summary`
  at each commit. No head, no transcript.
* ``b/{stream}/{gen}/{seq}`` holds one ``append`` call's entries as one blob,
  so an append writes only its own entries (never the whole transcript) and
  ``load`` is one prefix scan up to the head's next seq.
* ``u/{stream}/{gen}/{uuid}`` records the batch that holds an entry's
  ``uuid``: an entry whose uuid is already committed is skipped (the SDK
  retries batches whose append timed out but may have landed).
* ``x/claude/p/{project}/{sid}`` lists the main transcripts of a project.
  It is derived: readers skip entries without a head (the session was deleted
  with its conversation) and prune them; every main append re-puts its entry.

An append runs as one unit of work. On object storage (no transactions) it
creates batch ``next`` with if-none-match and then advances the head with
if-match; a writer that finds another's uncommitted batch in its slot commits
it on the other's behalf before trying again, so concurrent appends from many
processes lose nothing, keep one order, and a crashed writer never blocks the
log. Deleting a transcript deletes its head first; a recreated transcript gets
a fresh random generation, so leftovers of an interrupted deletion are never
read again (they are removed by the next deletion of that session).

Entries are stored as strict JSON (:func:`makers_store._core.codec.encode_json`):
NaN, Infinity and non-string keys are rejected with MemoryValidationError.

``session_binding`` gives a conversation its Claude session id: an id the SDK
itself accepts as a session id (8-4-4-4-12 hex digits, any case) is returned
unchanged; any other id gets a ``uuid4`` generated once, created with
if-none-match (racing binders all get the winner's), and linked to the
conversation so that deleting it deletes the bound session too.
"""

from __future__ import annotations

import re
import uuid
from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..._core import adapter_keys, validate
from ..._core.codec import encode_json
from ...errors import MemoryValidationError
from . import session_programs as programs

if TYPE_CHECKING:
    from ...api.conversation_store import ConversationStore

__all__ = ["ClaudeSessionStore", "session_binding"]

#: The session ids the SDK accepts (its own resume check).
_SESSION_UUID_RE = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE
)


# --- the SessionStore --------------------------------------------------------


def _place(key: Any) -> tuple[programs.Place, SessionKey]:
    """Validate a SessionKey (naming the bad field) and locate its transcript."""
    if not isinstance(key, dict):
        raise MemoryValidationError(f"key must be a dict, not {type(key).__name__}")
    sid = validate.identifier(key.get("session_id"), "key.session_id")
    project = validate.identifier(key.get("project_key"), "key.project_key")
    subpath = key.get("subpath")
    if subpath is not None:
        validate.identifier(subpath, "key.subpath")
    return programs.Place(sid, project, adapter_keys.claude_stream(subpath)), cast(SessionKey, key)


class ClaudeSessionStore(SessionStore):
    """Mirrors Claude Agent SDK transcripts into a :class:`ContextStore`.

    Pass it as ``ClaudeAgentOptions(session_store=store.claude_session_store())``;
    the SDK's ``*_from_store`` / ``*_via_store`` helpers read it too.
    """

    def __init__(self, store: ConversationStore) -> None:
        self._store = store

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append ``entries`` in order; entries whose ``uuid`` is stored are skipped."""
        place, session_key = _place(key)
        if not isinstance(entries, list):
            raise MemoryValidationError("entries must be a list of JSON objects")
        if not entries:
            return
        if not all(isinstance(entry, dict) for entry in entries):
            raise MemoryValidationError("entries must be a list of JSON objects")
        runner = self._store.runner
        call = programs.Append(
            place,
            session_key,
            cast("list[dict[str, Any]]", entries),
            encode_json(entries, argument="entries"),
            runner.clock(),
            project_clock=not runner.blobs.capabilities.costly_requests,
        )
        await runner.run(lambda: programs.append(call), write=True)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry appended to ``key``, in order; None if it was never written."""
        place, _ = _place(key)
        return await self._store.runner.run(lambda: programs.load(place), write=False)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The project's main transcripts with their mtimes (epoch ms)."""
        found = await self._heads(project_key)
        return [{"session_id": sid, "mtime": head.mtime} for sid, head in found]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summary sidecars the appends folded, one per main transcript."""
        found = await self._heads(project_key)
        return [
            {"session_id": sid, "mtime": head.mtime, "data": head.summary}
            for sid, head in found
            if head.summary is not None
        ]

    async def delete(self, key: SessionKey) -> None:
        """Delete one subagent transcript, or a session with all its subagents."""
        place, _ = _place(key)
        if place.is_main:
            await self._store.runner.run(
                lambda: programs.delete_session(place.sid, place.project), write=True
            )
        else:
            await self._store.runner.run(lambda: programs.delete_stream(place), write=True)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths of the session's subagent transcripts."""
        place, _ = _place({"project_key": key["project_key"], "session_id": key["session_id"]})
        return await self._store.runner.run(
            lambda: programs.list_subkeys(place.sid, place.project), write=False
        )

    async def conversation_transcripts(self, conversation_id: str) -> list[SessionKey]:
        """The keys (for :meth:`load`) of every transcript kept for a
        conversation: sessions whose id is ``conversation_id`` and the session
        bound to it (``store.claude_session_binding``), main transcripts and
        subagents', in every project. Reads only (binds nothing); an
        addition to the SDK's ``SessionStore`` protocol, for browsing."""
        cid = validate.conversation_id(conversation_id)
        return await self._store.runner.run(lambda: programs.transcripts_of(cid), write=False)

    async def _heads(self, project_key: str) -> list[tuple[str, programs.Head]]:
        project = validate.identifier(project_key, "project_key")
        runner = self._store.runner
        whole = not runner.blobs.capabilities.atomic  # a removal is one transaction there
        found, stale = await runner.run(
            lambda: programs.list_heads(project, whole=whole), write=False
        )
        if stale:
            await runner.run(lambda: programs.prune(project, stale), write=True)
        return found


async def session_binding(store: ConversationStore, cid: str) -> str:
    """The Claude session id of conversation ``cid`` (validated by the caller)."""
    if _SESSION_UUID_RE.fullmatch(cid):
        return cid
    runner = store.runner
    bound = await runner.run(lambda: programs.read_binding(cid), write=False)
    if bound is not None:
        return bound
    candidate = str(uuid.uuid4())
    return await runner.run(lambda: programs.bind(cid, candidate), write=True)
