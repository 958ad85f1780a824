"""Retention: deleting conversations idle for a while
(``store.admin.prune_conversations``), and LangGraph checkpoints and Claude
transcripts nobody can reach any more (``store.admin.prune_checkpoints``).

**Idle.** A conversation is idle when its last write
(:func:`makers_store._core.activity.last_write`, and the ``mtime`` of its
Claude transcripts) is older than ``now - idle_for``, ``now`` read once from
the store's clock when the prune starts (the *cutoff*).

**Finding candidates.** The recency index (``i/all/``, or ``i/u/{uid}/`` for
one user) sorts newest first by ``last_message_at``, which is never later
than the last write. The entries older than the cutoff are exactly the keys
after the cutoff's rank, so the prune lists forward from there: one listing
request per page of candidates, never the newer part of the index, on every
backend (object storage included). The cost grows with the conversations
older than the cutoff, not with the store. Each candidate's meta is then read
and judged; one whose other writes are recent is kept. Conversations without
meta (state or framework data under an id nothing was ever appended to) are
in no index and are not found.

**Deleting, and the race with writers.** Each conversation is judged and
deleted by one program, so the delete is conditional on nothing having been
written since the judgment; the deletion is the store's own
(:func:`makers_store._core.programs.delete_if_unchanged`: ``delete_conversation``'s
commit, walk over linked conversations and removal, with that precondition):

* On a transactional backend (memory, SQLite, PostgreSQL) judgment and
  delete are one unit of work. SQLite runs write units one at a time;
  PostgreSQL holds a row lock on the meta it read (``FOR UPDATE``), and every
  writer of a conversation (append, metadata, message update/delete, state,
  LangGraph ``put``) reads that meta the same way first, so it waits for the
  prune and then finds the conversation gone, or goes first and is seen.
* Without transactions (S3, the stepwise memory backend) the prune commits
  its intent as ``delete_conversation`` does, by writing ``deleting`` into
  meta, but *if-match the etag it judged*. Every writer changes meta before
  (or instead of) writing anything else: appends and metadata updates
  commit there, other writes stamp ``touched_at`` there first
  (:mod:`.activity`). A writer that acted after the judgment therefore made
  the commit fail (the conversation is kept, untouched); a writer that acts
  after the commit finds ``deleting`` and, as with ``delete_conversation``,
  finishes the deletion and starts a new conversation. The prune's removal
  must then not delete that new conversation's blobs: it lists the keys
  first, checks that meta still carries its own commit, and deletes each
  listed key *if-match the etag it listed* (a key rewritten since has
  another etag, and every backend's etags are unique per write), meta last,
  again if-match. So no cut between two steps, and no writer acting between
  them, makes the prune delete a write that followed its judgment.

A crash between steps leaves meta marked ``deleting`` (the conversation is
gone for readers) with its recency index entry, or that entry alone (meta
goes before it): either leads the next prune here to finish the removal (or
its next writer, as after ``delete_conversation``).

On a transactional backend the unit is leaner: the metas of a batch are read
in one read, an idle conversation's keys are listed once (what the listing
shows is what is deleted, in the same transaction) and deleted in one batch
with its index entries, many conversations per commit.

Not covered: Claude transcript appends do not read the conversation's meta,
so on PostgreSQL and S3 one racing the prune may survive it as transcript
data without its conversation (``prune_checkpoints`` deletes such leftovers
once their main transcript is gone).

**Checkpoints.** ``prune_checkpoints`` keeps the latest checkpoint of each
LangGraph namespace and the ancestors LangGraph's DeltaChannel rebuilds its
values from (:func:`~makers_store._core.checkpoint_programs.keep_latest`),
and deletes Claude subagent transcripts whose main transcript is gone (a
deletion of the session cut short after its commit point, or a subagent
written for a session that was deleted meanwhile).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .._core import adapter_keys, keys, names, paging, validate
from .._core.activity import last_write
from .._core.codec import ConversationRecord
from .._core.programs import all_keys, delete_if_unchanged, delete_range, linked_segments
from ..blob_ops import (
    Op,
    Program,
    delete,
    get,
    get_many,
    list_keys,
    segments_under,
)
from ..errors import MemoryCorruptError, MemoryValidationError, PreconditionFailedError
from ..models import fields_dict

if TYPE_CHECKING:
    from .._core.runner import UnitRunner

#: Index entries listed per request while looking for idle conversations.
INDEX_PAGE = 500
#: Conversations judged and deleted per unit of work on a transactional
#: backend (each is its own conditional step without transactions anyway):
#: large enough that a commit (an fsync on SQLite) is shared by many.
UNIT_BATCH = 200
#: Keys listed per request when a conversation's keys are collected for removal.
KEY_PAGE = 1000


# --- reports -----------------------------------------------------------------


@dataclass(slots=True)
class PruneReport:
    """What :meth:`StoreAdmin.prune_conversations` deleted, or with
    ``dry_run`` would delete: the conversations, how many, the messages they
    held, and ``kept``, the conversations found older than the cutoff by the
    index that were written since (judged active at delete time, not
    deleted). ``cutoff`` is the store-clock time (ms) the last writes were
    compared with."""

    dry_run: bool
    cutoff: int
    conversation_ids: list[str] = field(default_factory=list)
    conversations: int = 0
    messages: int = 0
    kept: int = 0

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


@dataclass(slots=True)
class CheckpointPruneReport:
    """What :meth:`StoreAdmin.prune_checkpoints` deleted, or with ``dry_run``
    would delete (then only ``threads`` and ``orphan_transcripts`` are
    counted; what a thread would lose is known only by walking it):
    LangGraph threads visited, checkpoints and pending writes deleted,
    checkpoints kept beside each latest one because a DeltaChannel is rebuilt
    from them, and Claude subagent transcripts deleted because their main
    transcript is gone."""

    dry_run: bool
    threads: int = 0
    checkpoints_deleted: int = 0
    writes_deleted: int = 0
    checkpoints_kept_for_deltas: int = 0
    orphan_transcripts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)


# --- arguments -----------------------------------------------------------------


def idle_ms(idle_for: object) -> int:
    """``idle_for`` (a positive :class:`~datetime.timedelta`) in whole milliseconds."""
    if not isinstance(idle_for, timedelta):
        raise MemoryValidationError(
            f"idle_for must be a datetime.timedelta, not {type(idle_for).__name__}"
        )
    ms = idle_for // timedelta(milliseconds=1)
    if ms < 1:
        raise MemoryValidationError(f"idle_for must be positive (1 ms or more), got {idle_for!r}")
    return ms


def flag(value: object, argument: str) -> bool:
    if not isinstance(value, bool):
        raise MemoryValidationError(f"{argument} must be a bool, not {type(value).__name__}")
    return value


# --- judging -------------------------------------------------------------------


@dataclass(slots=True)
class Tally:
    """What a prune did so far; kept across the retries of its units, so a
    conversation deleted by an attempt that then lost a race is counted once."""

    deleted: dict[str, int] = field(default_factory=dict)  # id -> messages
    kept: set[str] = field(default_factory=set)


def _claude_last_write(segment: str) -> Generator[Op, Any, int]:
    """The newest ``mtime`` of the Claude transcripts kept under the
    conversation's segment (0: none). One empty listing when it has none."""
    prefix = f"c/{segment}/x/claude/p/"
    newest = 0
    if not (yield from list_keys(prefix, limit=1)):
        return newest
    for project in (yield from segments_under(prefix)):
        for info in (yield from list_keys(f"{prefix}{project}/h/")):
            blob = yield from get(info.key)
            if blob is None:
                continue
            try:
                mtime = json.loads(blob.data)["mtime"]
            except (ValueError, KeyError, TypeError) as exc:
                raise MemoryCorruptError(f"Claude session head {info.key!r} is corrupt") from exc
            newest = max(newest, int(mtime))
    return newest


def _idle(
    cid: str, record: ConversationRecord, cutoff: int, listed: list[str] | None = None
) -> Generator[Op, Any, bool]:
    """Whether the conversation's last write, Claude transcripts included
    (its own and those of the ids linked to it), is older than ``cutoff``.
    ``listed``: every key of the conversation, when the caller listed them
    (then framework data is looked for in it, not with a listing of its own)."""
    if last_write(record) >= cutoff:
        return False
    adapters = keys.adapters_prefix(cid)
    if listed is not None:
        if not any(key.startswith(adapters) for key in listed):
            return True
    elif not (yield from list_keys(adapters, limit=1)):
        return True  # no framework data, no links: one listing says so
    for segment in [keys.id_segment(cid), *(yield from linked_segments(cid))]:
        if (yield from _claude_last_write(segment)) >= cutoff:
            return False
    return True


# --- the prune of a batch of conversations --------------------------------------


def prune_batch(
    found: Sequence[tuple[str, str | None]],
    cutoff: int,
    dry_run: bool,
    atomic: bool,
    tally: Tally,
    planned: frozenset[str] | None = None,
) -> Program[None]:
    """Judge each conversation of ``found`` (its meta key, and the index
    entry that led here, if one did) and delete the idle ones through the
    store's one deletion program, on the condition that nothing was written
    since the judgment (:func:`~makers_store._core.programs.delete_if_unchanged`;
    the module docstring says why that suffices); ``tally`` collects what was
    deleted or, with ``dry_run``, would be. With ``planned``, only those
    conversations are judged; entries without meta are deleted either way."""
    metas = yield from get_many(meta_key for meta_key, _ in found)  # one read for the batch
    for (_, entry_key), blob in zip(found, metas, strict=True):
        if blob is None:
            # An entry older than the cutoff without meta: left by a removal
            # cut short after its meta went (an append in flight writes its
            # entry at its own time, which is newer than the cutoff).
            if entry_key is not None and not dry_run:
                yield from delete(entry_key, quiet=True)
            continue
        record = ConversationRecord.decode(blob.data)
        cid = record.conversation_id
        if planned is not None and cid not in planned:
            continue
        if cid in tally.deleted:
            if not atomic and not record.live:  # an earlier attempt's commit: finish it
                yield from delete_if_unchanged(cid, record, blob.etag, atomic=False)
            continue
        if not record.live:
            # Deleted already (a prune or delete cut short): finish the removal.
            tally.deleted[cid] = record.message_count
            if not dry_run:
                yield from delete_if_unchanged(cid, record, blob.etag, atomic=atomic)
            continue
        if last_write(record) >= cutoff:
            tally.kept.add(cid)
            continue
        # In one transaction the keys listed now are the keys deleted below.
        listed = None
        if atomic and not dry_run:
            listed = [i.key for i in (yield from all_keys(keys.conversation_prefix(cid)))]
        if not (yield from _idle(cid, record, cutoff, listed)):
            tally.kept.add(cid)
            continue
        if not dry_run and not (
            yield from delete_if_unchanged(cid, record, blob.etag, atomic=atomic, listed=listed)
        ):
            tally.kept.add(cid)  # written since the judgment: kept, untouched
            continue
        tally.kept.discard(cid)
        tally.deleted[cid] = record.message_count


# --- finding candidates ---------------------------------------------------------


def older_than(cutoff: int, uid: str | None) -> str:
    """The key after which the entries of the index lie whose
    ``last_message_at`` is before ``cutoff`` (keys sort newest first)."""
    # Every entry at the cutoff's own rank ("{rank}/..." or "{rank}~tie/...")
    # sorts below "{rank}\x7f"; every older entry has a greater rank.
    return f"{keys.index_prefix(uid)}{keys.rank(cutoff)}\x7f"


def candidates(uid: str | None, start_after: str | None, limit: int) -> Program[list[str]]:
    """Index entries older than the cutoff, as the keys of their metas, in
    index order (newest first)."""
    prefix = keys.index_prefix(uid)
    page = yield from list_keys(prefix, start_after=start_after, limit=limit)
    return [info.key for info in page]


def _meta_key_of_entry(prefix: str, entry_key: str) -> str | None:
    try:
        _, segment = keys.parse_index_key(prefix, entry_key)
    except ValueError:
        return None  # not an entry: left to check_index / rebuild_index
    return keys.meta_key_of_segment(segment)


async def prune_conversations(
    runner: UnitRunner,
    idle_for: timedelta,
    *,
    user_id: str | None = None,
    dry_run: bool = False,
    conversation_ids: Sequence[str] | None = None,
    on_conversation: Callable[[int], None] | None = None,
) -> PruneReport:
    """Delete every conversation (or ``user_id``'s) whose last write is
    older than ``idle_for`` on the store's clock, whole, as
    ``delete_conversation`` deletes it; ``dry_run`` only reports what
    would go. Last write: the last append, metadata update, message
    update or delete, state write or LangGraph checkpoint, and the
    conversation's Claude transcripts (:mod:`makers_store._core.activity`).
    A conversation written while the prune runs is kept whole: each is
    judged again in the unit that deletes it, and deleted only if nothing
    was written since (:mod:`makers_store.lifecycle.retention`).
    ``conversation_ids`` limits the prune to those (a plan shown before;
    each still judged at delete time). ``on_conversation(n)`` runs after
    each unit of work with the conversations it deleted."""
    ms = idle_ms(idle_for)
    uid = validate.optional_user_id(user_id)
    dry = flag(dry_run, "dry_run")
    planned = None
    if conversation_ids is not None:
        if isinstance(conversation_ids, str) or not isinstance(conversation_ids, Sequence):
            raise MemoryValidationError("conversation_ids must be a sequence of conversation ids")
        planned = [validate.conversation_id(cid) for cid in conversation_ids]
    cutoff = runner.clock() - ms
    atomic = runner.blobs.capabilities.atomic
    tally = Tally()

    async def run(found: list[tuple[str, str | None]]) -> None:
        for start in range(0, len(found), UNIT_BATCH):
            batch = found[start : start + UNIT_BATCH]
            before = len(tally.deleted)
            # A transactional unit that is run again was rolled back: each
            # attempt counts afresh. Without transactions what an attempt
            # committed stays done, so its tally carries over.
            attempt: list[Tally] = []

            def make(
                batch: list[tuple[str, str | None]] = batch, attempt: list[Tally] = attempt
            ) -> Program[None]:
                attempt[:] = [Tally() if atomic else tally]
                return prune_batch(batch, cutoff, dry, atomic, attempt[0], chosen)

            await runner.run(make, write=not dry)
            if atomic:
                tally.deleted.update(attempt[0].deleted)
                tally.kept |= attempt[0].kept
            if on_conversation is not None:
                on_conversation(len(tally.deleted) - before)

    # With a plan, the index is walked all the same: its conversations are
    # judged where their entries are met (the rest are not), and entries
    # whose conversation is gone (a removal cut short) are deleted on the way,
    # which the plan, a list of conversations, cannot name.
    chosen = None if planned is None else frozenset(planned)
    seen: set[str] = set()
    prefix = keys.index_prefix(uid)

    async def read(position: str | None) -> tuple[list[str], str | None]:
        listing = functools.partial(candidates, uid, position, INDEX_PAGE)
        entries = await runner.run(listing, write=False)
        # Deleting removes the entries listed; listing on from the last one
        # listed skips the kept ones and reaches the rest.
        return entries, paging.after_full(entries, INDEX_PAGE, lambda entry: entry)

    async for entries in paging.pages(read, older_than(cutoff, uid)):
        fresh: list[tuple[str, str | None]] = []
        for entry in entries:
            meta_key = _meta_key_of_entry(prefix, entry)
            if meta_key is not None and meta_key not in seen:
                seen.add(meta_key)
                fresh.append((meta_key, entry))
        await run(fresh)
    if planned is not None:  # those the walk did not meet (their entry moved or is missing)
        rest = [keys.meta_key(cid) for cid in dict.fromkeys(planned)]
        await run([(meta_key, None) for meta_key in rest if meta_key not in seen])
    ids = list(tally.deleted)
    return PruneReport(
        dry_run=dry,
        cutoff=cutoff,
        conversation_ids=ids,
        conversations=len(ids),
        messages=sum(tally.deleted.values()),
        kept=len(tally.kept),
    )


# --- checkpoints and transcripts ------------------------------------------------


def _claude_orphans(segment: str, dry_run: bool) -> Program[int]:
    """Delete (or count) the subagent transcripts of the conversation's
    Claude sessions whose main transcript is gone. Each goes head first,
    if-match the head read (a subagent written meanwhile stays), then the
    batches and markers of that head's generation only (a transcript
    recreated meanwhile writes another generation)."""
    root = f"c/{segment}/x/claude/p/"
    if not (yield from list_keys(root, limit=1)):
        return 0
    found = 0
    for project in (yield from segments_under(root)):
        heads_prefix = f"{root}{project}/h/"
        heads = yield from list_keys(heads_prefix)
        streams = [info.key[len(heads_prefix) :] for info in heads]
        if adapter_keys.CLAUDE_MAIN_STREAM in streams:
            continue
        for info in heads:
            found += 1
            if dry_run:
                continue
            head = yield from get(info.key)
            if head is None:
                continue
            try:
                gen = str(json.loads(head.data)["gen"])
            except (ValueError, KeyError, TypeError) as exc:
                raise MemoryCorruptError(f"Claude session head {info.key!r} is corrupt") from exc
            try:
                yield from delete(info.key, if_match=head.etag)
            except PreconditionFailedError:
                found -= 1  # written meanwhile: not an orphan any more
                continue
            stream = info.key[len(heads_prefix) :]
            for kind in ("b", "u"):
                yield from delete_range(f"{root}{project}/{kind}/{stream}/{gen}/")
        if heads and not dry_run:
            # What the main transcript's deletion left after its head (its
            # commit point) went: its batches and markers.
            main = adapter_keys.CLAUDE_MAIN_STREAM
            if (yield from get(f"{heads_prefix}{main}")) is None:
                for kind in ("b", "u"):
                    yield from delete_range(f"{root}{project}/{kind}/{main}/")
    return found


def _threads_and_sessions(cid: str | None) -> Program[list[tuple[str, str, bool]]]:
    """(conversation segment, thread id or "", has Claude data) of every
    conversation with LangGraph checkpoints or Claude transcripts (or of
    ``cid`` alone): one listing per conversation of the store."""
    segments = (
        [keys.id_segment(cid)]
        if cid is not None
        else (yield from segments_under(keys.CONVERSATIONS))
    )
    found = []
    for segment in segments:
        base = f"{keys.CONVERSATIONS}{segment}/x/"
        graph = yield from list_keys(f"{base}{adapter_keys.LANGGRAPH_ADAPTER}/", limit=1)
        claude = yield from list_keys(f"{base}claude/p/", limit=1)
        if graph or claude:
            thread = (yield from names.resolve(segment, segment)) if graph else ""
            found.append((segment, thread, bool(claude)))
    return found


async def prune_checkpoints(
    runner: UnitRunner,
    inspect: Callable[[bytes], Any] | None,
    *,
    conversation_id: str | None = None,
    dry_run: bool = False,
) -> CheckpointPruneReport:
    """The body of :meth:`StoreAdmin.prune_checkpoints`. ``inspect`` reads a
    checkpoint record's DeltaChannel links with the checkpointer's
    serializer (None: LangGraph is not installed; then each latest
    checkpoint keeps its whole parent chain)."""
    from .._core import checkpoint_programs as graph

    cid = None if conversation_id is None else validate.conversation_id(conversation_id)
    dry = flag(dry_run, "dry_run")
    report = CheckpointPruneReport(dry_run=dry)
    found = await runner.run(functools.partial(_threads_and_sessions, cid), write=False)
    for segment, thread, has_claude in found:
        if thread:
            report.threads += 1
            attempt: list[graph.PruneTally] = []

            def make(
                thread: str = thread, attempt: list[graph.PruneTally] = attempt
            ) -> Program[None]:
                attempt[:] = [graph.PruneTally()]  # a unit run again starts over
                return graph.keep_latest(thread, inspect, attempt[0], dry_run=dry)

            await runner.run(make, write=not dry)
            tally = attempt[0]
            report.checkpoints_deleted += tally.checkpoints
            report.writes_deleted += tally.writes
            report.checkpoints_kept_for_deltas += tally.kept_for_deltas
        if has_claude:
            report.orphan_transcripts += await runner.run(
                functools.partial(_claude_orphans, segment, dry), write=not dry
            )
    return report
