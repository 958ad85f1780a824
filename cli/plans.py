"""What ``import`` and ``copy`` would delete or replace, before they do it.

Both replace whole conversations: each conversation of the file (or of the
source store) takes the place of the one with its id. A conversation is
*replaced* only when the stored one differs from the incoming one; one that
is equal is left alone by both commands (they are idempotent), so running
either again asks nothing. Equality is judged the way ``copy`` judges it: by
the conversation's export lines (``makers-store export`` writes the same lines
for the same data, and an export file holds those lines), compared by digest,
so memory holds one digest per conversation, never a conversation.

Only the public reading API is used: :meth:`StoreAdmin.export_jsonl` (of the
conversations that exist on both sides), ``iter_conversations``,
``count_conversations``/``count_units`` and ``get_blob``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .options import Plan
from .text import counted

if TYPE_CHECKING:
    from makers_store import SyncContextStore

#: Conversations exported per call when their stored copies are compared.
BATCH = 200


@dataclass
class Digests:
    """One export stream, digested: a digest per conversation (its lines in
    order) and per blob outside conversations (its bytes)."""

    conversations: dict[str, bytes] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    _current: str | None = None
    _hash: Any = None

    def line(self, text: str | bytes) -> None:
        raw = text.encode("utf-8") if isinstance(text, str) else text
        raw = raw.rstrip(b"\r\n")
        if not raw.strip():
            return
        record = json.loads(raw)
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "blob":
            data = base64.b64decode(str(record.get("data_base64", "")))
            self.blobs[str(record.get("key"))] = hashlib.sha256(data).digest()
            return
        cid = record.get("conversation_id") if isinstance(record, dict) else None
        if not isinstance(cid, str):
            return  # the header
        if cid != self._current:
            self._finish()
            self._current, self._hash = cid, hashlib.sha256()
        self._hash.update(raw + b"\n")

    def _finish(self) -> None:
        if self._current is not None:
            self.conversations[self._current] = self._hash.digest()
        self._current, self._hash = None, None

    def done(self) -> Digests:
        self._finish()
        return self


def _export_digests(
    store: SyncContextStore,
    conversation_ids: list[str] | None,
    on_conversation: Callable[[], None] | None = None,
) -> Digests:
    digests = Digests()
    store.admin.export_jsonl(
        digests.line, conversation_ids=conversation_ids, on_conversation=on_conversation
    )
    return digests.done()


def _batches(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), BATCH):
        yield ids[start : start + BATCH]


def _existing(store: SyncContextStore, wanted: Iterable[str]) -> set[str]:
    """Which of ``wanted`` own data in ``store``: the listed conversations, and
    when some conversation holds data without a meta (state or framework data
    only, which no listing shows), those found by exporting them one by one."""
    from makers_store.errors import MemoryNotFoundError

    wanted = set(wanted)
    listed = {meta.conversation_id for meta in store.iter_conversations()}
    found = wanted & listed
    if store.admin.count_conversations() > len(listed):
        for cid in sorted(wanted - listed):
            try:
                store.admin.export_jsonl(lambda _: None, conversation_ids=[cid])
            except MemoryNotFoundError:
                continue
            found.add(cid)
    return found


@dataclass
class Comparison:
    new: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _compare(
    store: SyncContextStore,
    incoming: dict[str, bytes],
    existing: set[str],
    advance: Callable[[], None],
) -> Comparison:
    """Sort ``incoming`` conversations into new, replaced and unchanged in ``store``."""
    result = Comparison()
    stored: dict[str, bytes] = {}
    for batch in _batches(sorted(existing)):
        stored.update(_export_digests(store, batch, advance).conversations)
    for cid, digest in incoming.items():
        if cid not in existing:
            result.new.append(cid)
        elif stored.get(cid) == digest:
            result.unchanged.append(cid)
        else:
            result.replaced.append(cid)
    return result


def _blob_changes(
    incoming: dict[str, bytes], read: Callable[[str], bytes | None]
) -> tuple[int, list[str]]:
    """(new blobs, replaced blob keys) of ``incoming`` against ``read(key)``."""
    new, replaced = 0, []
    for key, digest in incoming.items():
        data = read(key)
        if data is None:
            new += 1
        elif hashlib.sha256(data).digest() != digest:
            replaced.append(key)
    return new, replaced


def _stored_blob(store: SyncContextStore) -> Callable[[str], bytes | None]:
    def read(key: str) -> bytes | None:
        blob = store.admin.get_blob(key)
        return None if blob is None else blob.data

    return read


def _details(verb: str, ids: list[str], noun: str) -> list[str]:
    return [f"{verb} {noun} {cid!r}" for cid in sorted(ids)]


def import_plan(store: SyncContextStore | None, path: Path, label: str) -> Plan | None:
    """What importing ``path`` into ``store`` (None: a store not created yet)
    would replace; None when the file does not read as an export (the import
    then names the bad line, having written nothing)."""
    from .render import progress

    incoming = Digests()
    try:
        with path.open("rb") as handle:
            for line in handle:
                incoming.line(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    incoming.done()
    conversations = incoming.conversations
    if store is None or store.admin.count_units() == 0:  # nothing there to replace
        compared = Comparison(new=list(conversations))
        new_blobs, replaced_blobs = len(incoming.blobs), list[str]()
    else:
        existing = _existing(store, conversations)
        with progress("comparing", len(existing)) as bar:
            compared = _compare(store, conversations, existing, bar.advance)
        new_blobs, replaced_blobs = _blob_changes(incoming.blobs, _stored_blob(store))
    action = (
        f"import {counted(len(conversations), 'conversation')} from {label} "
        f"({len(compared.new):,} new, {len(compared.replaced):,} replacing a different copy "
        f"in the store, {len(compared.unchanged):,} already equal) and "
        f"{counted(len(incoming.blobs), 'other blob')} "
        f"({len(replaced_blobs):,} replacing different bytes)"
    )
    return Plan(
        action,
        destructive=bool(compared.replaced or replaced_blobs),
        details=_details("replace", compared.replaced, "conversation")
        + _details("replace", replaced_blobs, "blob"),
        counts={
            "conversations": len(conversations),
            "new": len(compared.new),
            "replaced": len(compared.replaced),
            "unchanged": len(compared.unchanged),
            "blobs": len(incoming.blobs),
            "new_blobs": new_blobs,
            "replaced_blobs": len(replaced_blobs),
            "replaced_ids": sorted(compared.replaced),
        },
    )


def copy_plan(
    source: SyncContextStore, destination: SyncContextStore | None, *, prune: bool
) -> Plan:
    """What copying ``source`` into ``destination`` (None: a store not created
    yet) would replace and, with ``prune``, delete."""
    from .render import progress

    with progress("reading the source", source.admin.count_conversations()) as bar:
        incoming = _export_digests(source, None, bar.advance)
    if destination is None or destination.admin.count_units() == 0:
        there = Digests()
    else:
        with progress("reading the destination", destination.admin.count_conversations()) as bar:
            there = _export_digests(destination, None, bar.advance)
    stored = there.conversations
    replaced = [cid for cid, d in incoming.conversations.items() if stored.get(cid, d) != d]
    new = [cid for cid in incoming.conversations if cid not in stored]
    unchanged = len(incoming.conversations) - len(replaced) - len(new)
    extra = [cid for cid in stored if cid not in incoming.conversations]
    replaced_blobs = [k for k, d in incoming.blobs.items() if there.blobs.get(k, d) != d]
    extra_blobs = [k for k in there.blobs if k not in incoming.blobs]
    clauses = [
        f"copy {counted(len(incoming.conversations), 'conversation')} "
        f"({len(new):,} new, {len(replaced):,} replacing a different copy in the destination, "
        f"{unchanged:,} already equal) and {counted(len(incoming.blobs), 'other blob')} "
        f"({len(replaced_blobs):,} replacing different bytes)"
    ]
    if prune:
        clauses.append(
            f"delete {counted(len(extra), 'conversation')} and "
            f"{counted(len(extra_blobs), 'blob')} that exist only in the destination"
        )
    details = _details("replace", replaced, "conversation") + _details(
        "replace", replaced_blobs, "blob"
    )
    if prune:
        details += _details("delete", extra, "conversation") + _details(
            "delete", extra_blobs, "blob"
        )
    return Plan(
        "; ".join(clauses),
        destructive=bool(replaced or replaced_blobs or (prune and (extra or extra_blobs))),
        details=details,
        counts={
            "conversations": len(incoming.conversations),
            "new": len(new),
            "replaced": len(replaced),
            "unchanged": unchanged,
            "deleted": len(extra) if prune else 0,
            "blobs": len(incoming.blobs),
            "replaced_blobs": len(replaced_blobs),
            "deleted_blobs": len(extra_blobs) if prune else 0,
            "replaced_ids": sorted(replaced),
            "deleted_ids": sorted(extra) if prune else [],
        },
    )
