"""The records and programs of the Claude ``SessionStore``
(:mod:`makers_store.adapters.claude.sessions`, whose docstring describes the
layout and the append protocol): I/O-free generators over the blob
operations, run as units of work by the store's runner."""

from __future__ import annotations

import json
import secrets
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionStoreEntry,
    SessionSummaryEntry,
)

from ..._core import adapter_keys, keys, names
from ..._core.codec import dumps
from ..._core.programs import delete_range
from ...blob_ops import (
    Blob,
    ListKeys,
    Op,
    Program,
    delete,
    delete_many,
    get,
    list_keys,
    list_many,
    put,
    scan,
    segments_under,
)
from ...errors import MemoryCorruptError, PreconditionFailedError

# --- records -----------------------------------------------------------------


@dataclass(slots=True)
class Head:
    """A transcript's commit point: batches below ``next`` are committed."""

    gen: str
    next: int = 0
    mtime: int = 0
    summary: dict[str, Any] | None = None

    def encode(self) -> bytes:
        record: dict[str, Any] = {"gen": self.gen, "next": self.next, "mtime": self.mtime}
        if self.summary is not None:
            record["summary"] = self.summary
        return dumps(record).encode()

    @classmethod
    def decode(cls, blob: Blob) -> Head:
        try:
            record = json.loads(blob.data)
            return cls(record["gen"], record["next"], record["mtime"], record.get("summary"))
        except (ValueError, KeyError, TypeError) as exc:
            raise MemoryCorruptError(f"Claude session head {blob.key!r} is corrupt") from exc


def _batch_blob(token: str, entries_json: str) -> bytes:
    """A batch: the writer's token on the first line, then the entries array."""
    return f"{token}\n{entries_json}".encode()


def _batch_token(data: bytes) -> bytes:
    return data.partition(b"\n")[0]


def _batch_entries(data: bytes) -> list[dict[str, Any]]:
    return cast("list[dict[str, Any]]", _decode_batches([data]))


def _decode_batches(batches: Sequence[bytes]) -> list[SessionStoreEntry]:
    """Join the batches' arrays into one and parse it once (strict JSON
    never holds a raw newline, so the array starts after the token line)."""
    try:
        parts = [data[data.index(b"\n") + 2 : -1] for data in batches]
        return cast("list[SessionStoreEntry]", json.loads(b"[" + b",".join(parts) + b"]"))
    except (ValueError, RecursionError) as exc:  # RecursionError: stored before the nesting limit
        raise MemoryCorruptError("a Claude session batch is corrupt") from exc


@dataclass(slots=True)
class Place:
    """Where one transcript lives."""

    sid: str
    project: str
    stream: str

    @property
    def head_key(self) -> str:
        return adapter_keys.claude_head_key(self.sid, self.project, self.stream)

    @property
    def is_main(self) -> bool:
        return self.stream == adapter_keys.CLAUDE_MAIN_STREAM

    def batch(self, gen: str, seq: int) -> str:
        return adapter_keys.claude_batch_key(self.sid, self.project, self.stream, gen, seq)

    def marker(self, gen: str, entry_uuid: str) -> str:
        return adapter_keys.claude_marker_key(self.sid, self.project, self.stream, gen, entry_uuid)


@dataclass(slots=True)
class Append:
    """One ``append`` call; ``written`` remembers, across retries of the unit,
    the (generation, seq) slots where this call put its batch."""

    place: Place
    key: SessionKey
    entries: list[dict[str, Any]]
    entries_json: str
    now: int
    #: Advance the project's clock blob (see :func:`_next_mtime`). Off where
    #: every request costs money (S3): there all sessions of a deployment share
    #: one project key (the working directory), so one blob would take a
    #: conditional write, and its retries, from every conversation's appends.
    project_clock: bool = True
    token: str = field(default_factory=lambda: secrets.token_hex(8))
    written: list[tuple[str, int]] = field(default_factory=list)


# --- programs ----------------------------------------------------------------


def _load_head(place: Place) -> Generator[Op, Any, tuple[Head | None, str | None]]:
    blob = yield from get(place.head_key)
    return (None, None) if blob is None else (Head.decode(blob), blob.etag)


def append(call: Append) -> Program[None]:
    place = call.place
    head, etag = yield from _load_head(place)
    for gen, seq in list(call.written):  # an earlier attempt of this very call
        blob = yield from get(place.batch(gen, seq))
        if blob is None or _batch_token(blob.data) != call.token.encode():
            call.written.remove((gen, seq))
        elif head is not None and head.gen == gen and seq < head.next:
            return  # committed by a helper
        elif head is not None and head.gen == gen and seq == head.next:
            yield from _commit(call, head, etag, _batch_entries(blob.data))
            return
        else:  # the transcript was deleted or recreated meanwhile: drop the orphan
            yield from delete(blob.key, if_match=blob.etag)
            call.written.remove((gen, seq))
    if head is None:
        head = Head(gen=secrets.token_hex(8))
    entries, entries_json = yield from _new_entries(call, head)
    if not entries:
        return
    slot = place.batch(head.gen, head.next)
    try:
        yield from put(slot, _batch_blob(call.token, entries_json), if_none_match=True)
    except PreconditionFailedError:
        pending = yield from get(slot)
        if pending is not None and etag is not None:  # another's uncommitted batch
            yield from _commit(call, head, etag, _batch_entries(pending.data))
        raise
    call.written.append((head.gen, head.next))
    yield from _commit(call, head, etag, entries)


def _new_entries(call: Append, head: Head) -> Generator[Op, Any, tuple[list[dict[str, Any]], str]]:
    """The call's entries minus those whose uuid is committed or repeated."""
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    for entry in call.entries:
        entry_uuid = entry.get("uuid")
        if isinstance(entry_uuid, str):
            if entry_uuid in seen:
                continue
            seen.add(entry_uuid)
            if head.next:
                marker = yield from get(call.place.marker(head.gen, entry_uuid))
                if marker is not None and int(marker.data) < head.next:
                    continue
        kept.append(entry)
    if len(kept) == len(call.entries):
        return kept, call.entries_json
    return kept, dumps(kept)


def _commit(
    call: Append, head: Head, etag: str | None, entries: list[dict[str, Any]]
) -> Generator[Op, Any, None]:
    """Advance the head past batch ``head.next`` holding ``entries``."""
    place, seq = call.place, head.next
    for entry in entries:
        entry_uuid = entry.get("uuid")
        if isinstance(entry_uuid, str):
            yield from put(place.marker(head.gen, entry_uuid), str(seq).encode())
    head.next = seq + 1
    if place.is_main and call.project_clock:
        head.mtime = yield from _next_mtime(place.project, call.now)
    else:
        head.mtime = max(call.now, head.mtime + 1)
    if place.is_main:
        prev: SessionSummaryEntry | None = None
        if head.summary is not None:
            prev = {"session_id": place.sid, "mtime": head.mtime, "data": head.summary}
        folded = fold_session_summary(prev, call.key, cast("list[SessionStoreEntry]", entries))
        head.summary = folded["data"]
        # Listing entry first: a committed main transcript is always listed.
        yield from names.remember(place.sid)  # a bounded session id, for listings
        yield from put(adapter_keys.claude_project_entry(place.project, place.sid), b"")
    yield from put(place.head_key, head.encode(), if_match=etag, if_none_match=etag is None)


def _next_mtime(project: str, now: int) -> Generator[Op, Any, int]:
    """The mtime of a main-transcript commit: above every mtime the project
    has given (its clock blob, advanced with if-match / if-none-match), so
    mtimes are strictly increasing across sessions, store objects and
    processes, and the SDK's newest-first listing follows commit order; a
    racing commit fails the condition and its unit runs again."""
    clock = yield from get(adapter_keys.claude_clock_key(project))
    last = 0 if clock is None else _clock_value(clock)
    mtime = max(now, last + 1)
    etag = None if clock is None else clock.etag
    yield from put(
        adapter_keys.claude_clock_key(project),
        str(mtime).encode(),
        if_match=etag,
        if_none_match=etag is None,
    )
    return mtime


def _clock_value(blob: Blob) -> int:
    try:
        return int(blob.data)
    except ValueError as exc:
        raise MemoryCorruptError(f"Claude session clock {blob.key!r} is corrupt") from exc


def load(place: Place) -> Program[list[SessionStoreEntry] | None]:
    head, _ = yield from _load_head(place)
    if head is None:
        return None
    blobs = yield from scan(
        adapter_keys.claude_batches_prefix(place.sid, place.project, place.stream, head.gen),
        end_before=place.batch(head.gen, head.next),
    )
    if len(blobs) < head.next:
        # Batches below the head are never deleted but with the transcript:
        # a removal without transactions, in key order (batches before the
        # head), is under way. Gone, rather than a transcript with holes.
        return None
    return _decode_batches([blob.data for blob in blobs])


def delete_stream(place: Place) -> Program[None]:
    """Delete one transcript: its head (the commit point) first, then its data."""
    blob = yield from get(place.head_key)
    if blob is not None:
        yield from delete(blob.key, if_match=blob.etag)
    for prefix in adapter_keys.claude_stream_prefixes(place.sid, place.project, place.stream):
        yield from delete_range(prefix)


def delete_session(sid: str, project: str) -> Program[None]:
    """Delete a main transcript and every subagent transcript under it."""
    main = yield from get(
        adapter_keys.claude_head_key(sid, project, adapter_keys.CLAUDE_MAIN_STREAM)
    )
    if main is not None:  # the commit point first: the session is gone at once
        yield from delete(main.key, if_match=main.etag)
    heads = yield from list_keys(adapter_keys.claude_heads_prefix(sid, project))
    yield from delete_many(info.key for info in heads)
    yield from delete_range(adapter_keys.claude_session_prefix(sid, project))
    yield from delete(adapter_keys.claude_project_entry(project, sid), quiet=True)


def list_heads(
    project: str, *, whole: bool = False
) -> Program[tuple[list[tuple[str, Head]], list[str]]]:
    """(session id, head) of the project's main transcripts, and the session
    segments of stale entries. ``whole`` (a backend without transactions):
    leave out a transcript whose batches under its head are not all there,
    as :func:`load` reads it as none: its conversation's removal is under way
    (listings sent together, keys only)."""
    entries = yield from list_keys(adapter_keys.claude_project_prefix(project))
    found: list[tuple[str, Head]] = []
    stale: list[str] = []
    for info in entries:
        segment = adapter_keys.claude_segment_of_project_entry(info.key)
        blob = yield from get(adapter_keys.claude_main_head_key_of_segment(segment, project))
        if blob is None:
            stale.append(segment)  # its name may be gone with its conversation
        else:
            found.append(((yield from names.resolve(segment, segment)), Head.decode(blob)))
    written = [(sid, head) for sid, head in found if head.next > 0]
    if not whole or not written:
        return found, stale
    listings = []
    for sid, head in written:
        place = Place(sid, project, adapter_keys.CLAUDE_MAIN_STREAM)
        prefix = adapter_keys.claude_batches_prefix(sid, project, place.stream, head.gen)
        listings.append(ListKeys(prefix, None, place.batch(head.gen, head.next), False, None))
    batches = yield from list_many(*listings)
    partial = {sid for (sid, head), keys_found in zip(written, batches, strict=True)
               if len(keys_found) < head.next}  # fmt: skip
    return [(sid, head) for sid, head in found if sid not in partial], stale


def prune(project: str, stale: list[str]) -> Program[None]:
    """Drop listing entries whose session is gone (deleted with its conversation)."""
    for segment in stale:
        head = yield from get(adapter_keys.claude_main_head_key_of_segment(segment, project))
        if head is None:
            yield from delete(adapter_keys.claude_project_prefix(project) + segment, quiet=True)


def list_subkeys(sid: str, project: str) -> Program[list[str]]:
    prefix = adapter_keys.claude_heads_prefix(sid, project)
    heads = yield from list_keys(prefix + "s")
    return [cast(str, adapter_keys.claude_subpath_of_head_key(info.key)) for info in heads]


def bind(cid: str, candidate: str) -> Program[str]:
    """The session bound to ``cid``, binding ``candidate`` if there is none.

    The link is written before the binding, so a binding always has its link;
    a binder that loses the race removes its own link and retries.
    """
    key = adapter_keys.claude_binding_key(cid)
    blob = yield from get(key)
    if blob is not None:
        return blob.data.decode()
    link = keys.link_key(cid, candidate)
    yield from names.remember(cid, candidate)  # links are followed by segment
    yield from put(link, b"")
    try:
        yield from put(key, candidate.encode(), if_none_match=True)
    except PreconditionFailedError:
        yield from delete(link, quiet=True)
        raise
    return candidate


def read_binding(cid: str) -> Program[str | None]:
    blob = yield from get(adapter_keys.claude_binding_key(cid))
    return None if blob is None else blob.data.decode()


def transcripts_of(cid: str) -> Program[list[SessionKey]]:
    """The transcripts kept for conversation ``cid``: under its own id and
    under the session bound to it, each project's main transcript first."""
    sids = [cid]
    bound = yield from read_binding(cid)
    if bound is not None and bound != cid:
        sids.append(bound)
    found: list[SessionKey] = []
    for sid in sids:
        projects_prefix = keys.adapter_prefix(sid, "claude") + "p/"
        for segment in (yield from segments_under(projects_prefix)):
            project = keys.unescape(segment)
            heads = yield from list_keys(adapter_keys.claude_heads_prefix(sid, project))
            for info in heads:
                subpath = adapter_keys.claude_subpath_of_head_key(info.key)
                key: SessionKey = {"project_key": project, "session_id": sid}
                if subpath is not None:
                    key["subpath"] = subpath
                found.append(key)
    return found
