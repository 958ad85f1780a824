"""Appending messages: the one write whose programs help each other.

Split from :mod:`makers_store._core.programs` (whose module docstring explains the
write order) because of the helping protocol: without transactions two appends
can race for one seq, and the loser commits the winner's message before it
retries, so neither is lost and a crashed writer never blocks the conversation.

A message with the caller's id (``message_id=``) also has an alias blob that
points at its seq (:mod:`makers_store._core.keys`, "Message ids"). Invariants,
kept without transactions too:

- the alias is written before the message blob, so a committed message with
  a client id always has its alias (a helper may commit it at any time);
- the message blob at the alias's seq decides who holds the id: an alias
  whose seq holds no message with the id is stale, and the next append of
  the id overwrites it (if-match), so two appends of one id end with one
  message whichever way they interleave or crash;
- appending an id that is held is idempotent: the same role, content and
  metadata return the id and change nothing, anything else is a conflict.

``append_messages`` of several messages is one unit: a transaction where the
backend has them, else a batch intent in meta (see "batches without
transactions" below), so it commits whole or not at all, caller ids or not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..blob import Capabilities
from ..blob_ops import (
    Blob,
    BlobInfo,
    DeleteMany,
    Op,
    Program,
    Put,
    delete,
    delete_many,
    get,
    get_many,
    put,
)
from ..clock import IdSource
from ..errors import (
    MemoryConflictError,
    MemoryQuotaExceededError,
    MemoryValidationError,
    PreconditionFailedError,
)
from . import keys, validate
from .codec import (
    BatchIntent,
    ConversationRecord,
    batch_token,
    decode_json,
    decode_message,
    encode_message,
    pending_append,
)
from .keys import meta_key
from .programs import (
    MAX_MESSAGES,
    STALE_INDEX_BATCH,
    index_keys,
    index_keys_at,
    load_live_meta,
    load_meta,
    save_meta,
    superseded_index_keys,
)

#: Times an appender finds the same batch intent unfinished (a unit run again
#: after the retry policy's wait each time) before it takes its writer for
#: gone and removes the intent.
STALE_SIGHTINGS = 6


class ChangedSinceRead(MemoryConflictError):
    """An append with ``expected`` found the conversation changed (nothing written)."""


@dataclass(slots=True)
class NewMessage:
    """One append_message call; ``written`` remembers, across retries of the
    unit, the seqs where this call has put its message blob."""

    conversation_id: str
    role: str
    content_json: str
    metadata_json: str
    user_id: str | None
    now: int
    suffix: str
    #: orders this write among those of its millisecond (see keys, "rank")
    tie: int | None = None
    #: the caller's id for the message (None: ``msg_{seq}_{suffix}``)
    client_id: str | None = None
    #: the etag of an alias found ahead of meta by the previous attempt
    ahead: str | None = None
    #: (next_seq, message_count) meta must still show for the append to go
    #: ahead (None: any): a caller that decided to append from what it read
    #: (the history doctor) appends onto exactly that, or gets
    #: MemoryConflictError and nothing is written
    expected: tuple[int, int] | None = None
    written: list[int] = field(default_factory=list)
    #: batch intents of other calls seen unfinished, by token: how often
    sightings: dict[str, int] = field(default_factory=dict)
    #: (the first message of an ``append_messages`` call without
    #: transactions) what the call's latest intent reserved
    plan: BatchPlan | None = None
    #: intents this call has written (each attempt's token differs)
    intents: int = 0


@dataclass(slots=True)
class BatchPlan:
    """One attempt's intent: its token, the generation and first seq it
    reserved, the seq of each message it writes (index in the call -> seq),
    the ids of the messages the conversation already held (a retried call)
    and the aliases of the caller ids as the plan read them (a transaction
    writes them so; without one they are read again under the intent)."""

    token: str
    generation: str
    first: int
    slots: dict[int, int]
    held: dict[int, str]
    aliases: dict[int, AliasWrite] = field(default_factory=dict)


def new_messages(
    cid: str,
    batch: list[Mapping[str, Any]],
    user_id: str | None,
    now: int,
    tie: int | None,
    ids: IdSource,
) -> list[NewMessage]:
    """The messages of one ``append_messages`` call, each checked (an error
    names its index: ``messages[3]: ...``) before anything is written."""
    news: list[NewMessage] = []
    given: dict[str, int] = {}
    for index, item in enumerate(batch):
        with validate.item_context(f"messages[{index}]"):
            client_id = validate.client_message_id(item.get("message_id"))
            if client_id is not None and client_id in given:
                raise MemoryValidationError(
                    f"message_id {client_id!r} is also the id of messages[{given[client_id]}]; "
                    "the ids of one call must differ"
                )
            news.append(
                NewMessage(
                    conversation_id=cid,
                    role=validate.role(item.get("role")),
                    content_json=validate.content_json(item.get("content")),
                    metadata_json=validate.metadata_json(item.get("metadata")),
                    user_id=user_id,
                    now=now,
                    suffix=ids(),
                    tie=tie,
                    client_id=client_id,
                )
            )
        if client_id is not None:
            given[client_id] = index
    return news


def append_message(new: NewMessage, caps: Capabilities) -> Program[str]:
    """Append one message.

    The message blob is created at ``m/{next_seq}`` with if-none-match, then
    meta is advanced with if-match. Without transactions two appends can race
    for one seq: the loser finds the winner's uncommitted blob and commits it
    on the winner's behalf (so a stalled or crashed writer never blocks the
    conversation) before trying again; a writer whose meta update lost finds
    its blob either committed by a helper or still pending at ``next_seq``.
    With the caller's id, one step more: its alias (:func:`_claim_id`).
    ``caps``: the backend's; with ``costly_requests``, batch the removal of
    superseded index entries (see :func:`_commit_append`).
    """
    cid = new.conversation_id
    record, etag = yield from load_live_meta(cid)
    if record is not None and record.batch is not None:
        record, etag = yield from _settle(cid, record, etag, new, caps)
    alias: AliasWrite | None = None
    if new.client_id is not None:
        claim = yield from _claim_id(new, new.client_id, record, etag, caps)
        if isinstance(claim, str):
            return claim  # held already: a retried request
        alias = claim
    elif new.written:  # an earlier attempt of this call
        done = yield from _earlier_attempt(new, record, etag, caps)
        if done is not None:
            return done
    _check_expected(new, record)
    if record is None:
        record = ConversationRecord(cid, created_at=new.now, last_message_at=new.now)
    else:
        _check_room(cid, record, 1)
    seq = record.next_seq
    mid = new.client_id or keys.message_id(seq, new.suffix)
    if alias is not None:  # the alias first: a helper may commit the message any time after
        yield from _put_alias(alias, seq)
    try:
        yield _pending_put(new, seq, record.generation, mid)
    except PreconditionFailedError:
        yield from _help_pending(cid, record, etag, seq, caps)
        raise
    new.written.append(seq)
    yield from _commit_append(cid, record, etag, seq, (new.now, new.tie), new.user_id, caps)
    return mid


def _earlier_attempt(
    new: NewMessage, record: ConversationRecord | None, etag: str | None, caps: Capabilities
) -> Generator[Op, Any, str | None]:
    """The message's id when an earlier attempt of this call (``new.written``,
    without a caller id) was committed, by a helper or now; its blobs that
    will never be committed are deleted. None: append it afresh."""
    cid = new.conversation_id
    gen = "" if record is None else record.generation
    for seq in list(new.written):
        blob = yield from get(keys.message_key(cid, seq, gen))
        mid = keys.message_id(seq, new.suffix)
        if blob is None or pending_append(blob.data)[0] != mid:
            new.written.remove(seq)
        elif record is not None and seq in record.emptied:
            # Put into a slot emptied by a deletion after this call read meta
            # (the slot's message was committed and deleted meanwhile): never
            # committed, hidden; gone, and the message appended again.
            yield from delete(blob.key, if_match=blob.etag)
            new.written.remove(seq)
        elif record is not None and seq < record.next_seq:
            return mid  # committed by a helper
        elif record is not None and seq == record.next_seq:
            yield from _commit_append(cid, record, etag, seq, (new.now, new.tie), new.user_id, caps)
            return mid
        else:  # written into a conversation that was deleted meanwhile
            yield from delete(blob.key, if_match=blob.etag)
            new.written.remove(seq)
    return None


@dataclass(slots=True)
class AliasWrite:
    """The alias an append of a caller's id writes before its message blob:
    if-match the alias it read (``found``), or created when there was none."""

    key: str
    found: Blob | None


def _put_alias(alias: AliasWrite, seq: int) -> Generator[Op, Any, None]:
    found = alias.found
    yield from put(
        alias.key,
        keys.encode_alias(seq),
        if_match=None if found is None else found.etag,
        if_none_match=found is None,
    )


def _claim_id(
    new: NewMessage,
    mid: str,
    record: ConversationRecord | None,
    etag: str | None,
    caps: Capabilities,
) -> Generator[Op, Any, str | AliasWrite | None]:
    """The alias step of an append of the caller's id ``mid`` (see the module
    docstring): ``mid`` when the conversation holds it with this message
    already (a retry, by the runner or by the caller, finds the alias
    pointing at its own message), the alias to write before the message blob,
    or None when the alias names the seq the message takes already. Costs one
    read more than an append without an id, and one write more."""
    cid = new.conversation_id
    gen = "" if record is None else record.generation
    next_seq = 0 if record is None else record.next_seq
    alias_key = keys.alias_key(cid, mid, gen)
    alias = yield from get(alias_key)
    held = None if alias is None else keys.decode_alias(alias.data)
    yield from _drop_orphans(new, mid, gen, held, [] if record is None else record.emptied)
    if held is not None and record is not None and record.visible(held):
        blob = yield from get(keys.message_key(cid, held, gen))
        if blob is not None and pending_append(blob.data)[0] == mid:
            return _same_message(new, mid, blob.data)
        # else: a stale alias (its message is gone): overwritten below
    elif held is not None and held == next_seq:
        blob = yield from get(keys.message_key(cid, held, gen))
        if blob is None:
            # The alias's writer has not put its message yet, or crashed
            # before it: whoever puts a message at that seq holds the id.
            return None
        if record is None:
            record = ConversationRecord(cid, created_at=new.now, last_message_at=new.now)
        yield from _help_pending(cid, record, etag, held, caps)
        if pending_append(blob.data)[0] == mid:
            return _same_message(new, mid, blob.data)
        raise PreconditionFailedError(alias_key)  # another message took the seq: again
    elif held is not None and held > next_seq and alias is not None:
        # Its writer read a newer meta than this one, or meta of a conversation
        # since deleted: read meta again; still ahead then, it is a leftover.
        if new.ahead != alias.etag:
            new.ahead = alias.etag
            raise PreconditionFailedError(alias_key)
    return AliasWrite(alias_key, alias)


def _check_room(cid: str, record: ConversationRecord, adding: int) -> None:
    """MemoryQuotaExceededError when ``adding`` more messages would pass
    MAX_MESSAGES (checked before anything is written)."""
    if record.message_count + adding <= MAX_MESSAGES:
        return
    if adding == 1:
        raise MemoryQuotaExceededError(
            f"conversation_id {cid!r} already holds {record.message_count} messages, "
            f"the maximum is {MAX_MESSAGES}"
        )
    raise MemoryQuotaExceededError(
        f"conversation_id {cid!r} holds {record.message_count} messages; {adding} more "
        f"would pass the maximum of {MAX_MESSAGES}"
    )


def _check_expected(new: NewMessage, record: ConversationRecord | None) -> None:
    """MemoryConflictError unless meta is as ``new.expected`` says (checked
    before anything is written; the commit is if-match on the meta checked,
    so the append lands exactly on what its caller read)."""
    if new.expected is None:
        return
    seen = (0, 0) if record is None else (record.next_seq, record.message_count)
    if seen != new.expected:
        raise ChangedSinceRead(
            f"conversation_id {new.conversation_id!r} changed since it was read "
            f"(messages appended or deleted)"
        )


def _drop_orphans(
    new: NewMessage, mid: str, gen: str, held: int | None, emptied: list[int]
) -> Generator[Op, Any, None]:
    """Delete what an earlier attempt of this call put at a seq the alias no
    longer names: no meta counts it (the alias moved on because that seq was
    taken or gone), and left there it could read as a second message ``mid``.
    So is one the alias names in a slot emptied after this call read meta
    (see ``ConversationRecord.emptied``): never committed, hidden only for now."""
    for seq in list(new.written):
        if seq == held and seq not in emptied:
            continue
        blob = yield from get(keys.message_key(new.conversation_id, seq, gen))
        if blob is not None and pending_append(blob.data)[0] == mid:
            yield from delete(blob.key, if_match=blob.etag)
        new.written.remove(seq)


def _same_message(new: NewMessage, mid: str, data: bytes) -> str:
    """``mid`` when the stored message is the one ``new`` would append (a
    retried request); MemoryConflictError when the id holds another."""
    stored = decode_message(data)
    if (
        stored.role == new.role
        and stored.content == decode_json(new.content_json, what="content")
        and stored.metadata == decode_json(new.metadata_json, what="metadata")
    ):
        return mid
    raise MemoryConflictError(
        f"message_id {mid!r} already names another message in conversation_id "
        f"{new.conversation_id!r} (a different role, content or metadata)"
    )


def _help_pending(
    cid: str, record: ConversationRecord, etag: str | None, seq: int, caps: Capabilities
) -> Generator[Op, Any, None]:
    """Commit another append's message found uncommitted at ``seq``; one a
    batch wrote under an intent meta no longer holds (given up, its writer
    gone or too slow) is deleted instead: a batch commits whole or not at all."""
    pending = yield from get(keys.message_key(cid, seq, record.generation))
    token = None if pending is None else batch_token(pending.data)
    if pending is not None and token is not None:
        # Meta read after the blob: its intent came before the blob, so if
        # meta holds it no more (and did not commit it) it never will.
        current, _ = yield from load_meta(cid)
        if current is None or (  # None: its reservation of a new id was removed
            current.generation == record.generation
            and current.next_seq <= seq
            and (current.batch is None or current.batch.token != token)
        ):
            with contextlib.suppress(PreconditionFailedError):  # else: looked at again
                yield from delete(pending.key, if_match=pending.etag)
        return
    if pending is not None:
        _, created_at, user_id = pending_append(pending.data)
        if etag is None:
            record.created_at = record.last_message_at = created_at
        # its writer's tie is not known here: an entry without one
        yield from _commit_append(cid, record, etag, seq, (created_at, None), user_id, caps)


def _pending_put(new: NewMessage, seq: int, gen: str, mid: str, batch: str | None = None) -> Put:
    """The Put that creates ``new``'s message blob ``mid`` at ``seq``,
    uncommitted until meta passes it (if-none-match: it fails if the seq is
    taken); ``batch``: the token of the intent it is written under."""
    data = encode_message(
        message_id=mid,
        role=new.role,
        content_json=new.content_json,
        created_at=new.now,
        metadata_json=new.metadata_json,
        user_id=new.user_id,
        batch=batch,
    )
    return Put(keys.message_key(new.conversation_id, seq, gen), data, None, True)


def append_messages(news: list[NewMessage], caps: Capabilities) -> Program[list[str]]:
    """Append several messages to one conversation as one unit of work.

    The caller ids and the quota are checked for the whole batch before
    anything is written (:func:`_plan_batch`). On transactional backends the
    batch is one transaction: every alias and message blob, then one meta
    update; without them it is all or nothing through a batch intent in meta
    (:func:`_append_batch`).
    """
    if not news:
        return []
    if len(news) == 1:
        return [(yield from append_message(news[0], caps))]
    if not caps.atomic:
        return (yield from _append_batch(news, caps))
    cid = news[0].conversation_id
    record, etag = yield from load_live_meta(cid)
    if any(new.written for new in news):
        # A retry (the unit was rolled back, or committed with its answer
        # lost): one message at a time, each finding what an earlier attempt
        # wrote; still one unit, so one transaction.
        if record is not None:
            _check_room(cid, record, sum(1 for new in news if not new.written))
        ids = []
        for new in news:
            ids.append((yield from append_message(new, caps)))
        return ids
    plan = yield from _plan_batch(cid, record, news)
    if not plan.slots:  # every message is there already (a retried call)
        return _ids(news, plan)
    if record is None:
        now = news[0].now
        record = ConversationRecord(cid, created_at=now, last_message_at=now)
    # Every alias and blob first, then one meta update for the whole batch.
    for index, seq in plan.slots.items():
        new = news[index]
        if new.client_id is not None:
            yield from _put_alias(plan.aliases[index], seq)
        mid = new.client_id or keys.message_id(seq, new.suffix)
        try:
            yield _pending_put(new, seq, record.generation, mid)
        except PreconditionFailedError:
            if seq == plan.first:  # another append's uncommitted message: finish it first
                yield from _help_pending(cid, record, etag, seq, caps)
            raise  # the retry commits what this call already wrote, one by one
        new.written.append(seq)
    last, last_seq = news[max(plan.slots)], max(plan.slots.values())
    yield from _commit_append(
        cid, record, etag, last_seq, (last.now, last.tie), last.user_id, caps, len(plan.slots)
    )
    return _ids(news, plan)


def _commit_append(
    cid: str,
    record: ConversationRecord,
    etag: str | None,
    seq: int,
    written: keys.Position,
    user_id: str | None,
    caps: Capabilities,
    count: int = 1,
    created: bool = False,
) -> Generator[Op, Any, str]:
    """Advance meta past the message at ``seq`` (and the ``count - 1`` before
    it, written by the same batch) and move the index entries.

    ``last_message_at`` never goes back (instances' clocks differ), so an
    entry once superseded never becomes current again. With
    ``caps.costly_requests`` the superseded entries are not deleted at once:
    meta records their time in ``superseded_at`` and every
    ``STALE_INDEX_BATCH``-th move deletes them all in one batch, so a common
    append costs four requests (read meta, write message, write entry, write
    meta). Readers skip superseded entries either way.
    """
    # Hot path, flattened (each call and generator layer costs every append):
    # index_keys_at rather than index_keys, the entries' and meta's Puts
    # yielded here rather than through add_index_entries and save_meta.
    previous = (record.last_message_at, record.last_tie)
    new = etag is None or created  # created: meta exists, as a batch's reservation only
    before = [] if new else index_keys_at(cid, previous, record.user_ids)
    created_at, tie = written
    record.next_seq = seq + 1
    record.message_count += count
    if new or created_at >= previous[0]:
        record.last_message_at, record.last_tie = created_at, tie
    if user_id is not None and user_id not in record.user_ids:
        record.user_ids.append(user_id)
    after = index_keys_at(cid, (record.last_message_at, record.last_tie), record.user_ids)
    superseded = [key for key in before if key not in after]
    if superseded and caps.costly_requests:
        record.superseded_at.append(previous)
        superseded = []
    owed = len(record.superseded_at)  # a store copied from S3 owes some anywhere
    if owed and (owed >= STALE_INDEX_BATCH or not caps.costly_requests):
        superseded += superseded_index_keys(cid, record)
        record.superseded_at = []
    # New entries first, old ones last: a listing never loses the conversation.
    added = [key for key in after if key not in before]
    for key in added:
        yield Put(key, b"", None, False)
    try:
        info: BlobInfo = yield Put(meta_key(cid), record.encode(), etag, etag is None)
    except PreconditionFailedError:
        current, _ = yield from load_meta(cid)
        keep = index_keys(cid, current) if current is not None and current.live else []
        # Entries no meta will vouch for would only be clutter.
        yield from delete_many(key for key in added if key not in keep)
        raise
    if superseded:
        yield DeleteMany(tuple(superseded))
    return info.etag


# --- batches without transactions ---------------------------------------------------
#
# On a backend without transactions ``append_messages`` of several messages
# commits them all or none through an *intent* in meta (``ConversationRecord.
# batch``), written if-match before anything else: it reserves the seqs from
# ``next_seq`` on and names a token the batch's message blobs carry. Then the
# aliases of caller ids (each if-match what this unit read), the message
# blobs (if-none-match) and last meta, if-match the intent's etag, advancing
# ``next_seq`` past them all and clearing the intent: the commit point, as for
# one message.
#
# While an intent stands, every appender settles it before writing
# (:func:`_settle`): when all its blobs are there it commits them on the
# writer's behalf (as a helper commits a single message); otherwise it waits
# (the retry policy's backoff) and, having found the same intent unfinished
# STALE_SIGHTINGS times, removes it: its writer is taken for gone, and if it
# was only slow its final meta write fails its if-match, so it starts again.
# A message blob carrying a token that meta no longer holds as an intent is
# never committed: whoever finds it at ``next_seq`` deletes it
# (:func:`_help_pending`). Writers that are not appenders keep an intent as
# they found it. A batch into a new conversation reserves it with meta marked
# deleting (as a fork reserves its new id): readers see no conversation until
# the commit, and any other writer of the id removes the reservation first:
# meta alone, if-match what it read (programs.load_live_meta), since the batch
# may be committing meanwhile; the blobs left behind carry a token no meta
# holds, so the next append at their seq deletes them (:func:`_help_pending`).
# So a failed call leaves nothing visible, and a killed one all or nothing.


def _settle(
    cid: str, record: ConversationRecord, etag: str | None, new: NewMessage, caps: Capabilities
) -> Generator[Op, Any, tuple[ConversationRecord | None, str | None]]:
    """Commit, wait for or remove the intent of another call found in meta
    (see above); meta as it is afterwards."""
    intent = record.batch
    assert intent is not None
    gen = record.generation
    blobs = yield from get_many(
        keys.message_key(cid, intent.first + offset, gen) for offset in range(intent.count)
    )
    if all(blob is not None and batch_token(blob.data) == intent.token for blob in blobs):
        yield from _commit_intent(cid, record, etag, caps)
    else:
        seen = new.sightings[intent.token] = new.sightings.get(intent.token, 0) + 1
        if seen < STALE_SIGHTINGS:
            raise PreconditionFailedError(
                f"conversation {cid!r} has a batch of appends in flight", key=meta_key(cid)
            )
        record.batch = None
        yield from save_meta(cid, record, etag)
    current, etag = yield from load_live_meta(cid)
    if current is not None and current.batch is not None:  # yet another: next attempt
        raise PreconditionFailedError(
            f"conversation {cid!r} has a batch of appends in flight", key=meta_key(cid)
        )
    return current, etag


def _commit_intent(
    cid: str, record: ConversationRecord, etag: str | None, caps: Capabilities
) -> Generator[Op, Any, str]:
    """Advance meta past the intent's messages and clear it (if-match ``etag``)."""
    intent = record.batch
    assert intent is not None
    created = not record.live  # a new conversation's reservation
    record.batch, record.deleting = None, False
    last = intent.first + intent.count - 1
    return (
        yield from _commit_append(
            cid,
            record,
            etag,
            last,
            (intent.now, intent.tie),
            intent.user_id,
            caps,
            intent.count,
            created,
        )
    )


def _load_for_batch(cid: str, lead: NewMessage) -> Generator[Op, Any, Meta]:
    """Meta for a batch: as stored when it is this call's own reservation of
    a new conversation, else as any writer loads it."""
    record, etag = yield from load_meta(cid)
    if record is not None and not record.live and not _own(record, lead):
        record, etag = yield from load_live_meta(cid)
    return record, etag


def _own(record: ConversationRecord | None, lead: NewMessage) -> bool:
    return (
        record is not None
        and record.batch is not None
        and lead.plan is not None
        and record.batch.token == lead.plan.token
    )


Meta = tuple[ConversationRecord | None, str | None]


def _append_batch(news: list[NewMessage], caps: Capabilities) -> Program[list[str]]:
    """``append_messages`` without transactions: all or nothing (see above)."""
    lead = news[0]
    cid = lead.conversation_id
    record, etag = yield from _load_for_batch(cid, lead)
    if record is not None and record.batch is not None and not _own(record, lead):
        record, etag = yield from _settle(cid, record, etag, lead, caps)
    plan = lead.plan
    if plan is not None and not _own(record, lead):
        done = yield from _committed_earlier(cid, record, plan, news)
        if done is not None:
            return done
        plan = lead.plan = None  # given up by another appender, or replaced: afresh
    if plan is None:
        assert record is None or record.live
        plan = yield from _plan_batch(cid, record, news)
        if not plan.slots:  # every message is there already (a retried call)
            return _ids(news, plan)
        if record is None:
            now = lead.now
            record = ConversationRecord(cid, created_at=now, last_message_at=now, deleting=True)
        last = news[max(plan.slots)]
        record.batch = BatchIntent(
            plan.first, len(plan.slots), plan.token, last.now, last.tie, last.user_id
        )
        lead.plan = plan
        etag = yield from save_meta(cid, record, etag)  # the intent
    assert record is not None
    gen = record.generation
    owed: list[tuple[AliasWrite, int]] = []  # aliases to point at this batch
    for index, seq in plan.slots.items():
        client_id = news[index].client_id
        if client_id is not None:
            alias_key = keys.alias_key(cid, client_id, gen)
            alias = yield from get(alias_key)
            if alias is None or keys.decode_alias(alias.data) != seq:
                owed.append((AliasWrite(alias_key, alias), seq))
    if owed:
        # Meta read after the aliases: while it holds this intent, no append
        # of these ids has committed since the plan checked them, so each
        # alias read is stale or a leftover; one written later (after another
        # appender removed the intent) makes the if-match below fail.
        current, _ = yield from load_meta(cid)
        if not _own(current, lead):
            raise PreconditionFailedError(f"conversation {cid!r} changed", key=meta_key(cid))
    for alias_write, seq in owed:
        yield from _put_alias(alias_write, seq)
    for index, seq in plan.slots.items():
        new = news[index]
        mid = new.client_id or keys.message_id(seq, new.suffix)
        try:
            yield _pending_put(new, seq, gen, mid, plan.token)
        except PreconditionFailedError:
            blob = yield from get(keys.message_key(cid, seq, gen))
            if blob is not None and batch_token(blob.data) == plan.token:
                continue  # an earlier attempt's
            current, _ = yield from load_meta(cid)  # read after the blob
            if blob is not None and _own(current, lead):
                # Under this call's intent nobody commits it: a dead batch's
                # blob, or a single append's whose meta write will fail.
                with contextlib.suppress(PreconditionFailedError):
                    yield from delete(blob.key, if_match=blob.etag)
            raise
    yield from _commit_intent(cid, record, etag, caps)
    return _ids(news, plan)


def _ids(news: list[NewMessage], plan: BatchPlan) -> list[str]:
    ids = []
    for index, new in enumerate(news):
        if index in plan.held:
            ids.append(plan.held[index])
        else:
            ids.append(new.client_id or keys.message_id(plan.slots[index], new.suffix))
    return ids


def _committed_earlier(
    cid: str, record: ConversationRecord | None, plan: BatchPlan, news: list[NewMessage]
) -> Generator[Op, Any, list[str] | None]:
    """The call's ids when its last intent was committed (by a helper, or by
    an attempt whose answer was lost), else None."""
    if record is None or record.generation != plan.generation or plan.first >= record.next_seq:
        return None
    blob = yield from get(keys.message_key(cid, plan.first, plan.generation))
    if blob is None or batch_token(blob.data) != plan.token:
        return None
    return _ids(news, plan)


def _plan_batch(
    cid: str, record: ConversationRecord | None, news: list[NewMessage]
) -> Generator[Op, Any, BatchPlan]:
    """Where each message goes, after the caller ids are checked: one the
    conversation holds with the same message is not written again (its id is
    returned), with another it is MemoryConflictError and nothing is
    written; an alias another append may still be writing is waited for
    once (as a single append does), then taken for stale."""
    gen = "" if record is None else record.generation
    first = 0 if record is None else record.next_seq
    held: dict[int, str] = {}
    aliases: dict[int, AliasWrite] = {}
    for index, new in enumerate(news):
        if new.client_id is None:
            continue
        alias_key = keys.alias_key(cid, new.client_id, gen)
        alias = yield from get(alias_key)
        aliases[index] = AliasWrite(alias_key, alias)
        seq = None if alias is None else keys.decode_alias(alias.data)
        if alias is None or seq is None:
            continue
        if record is not None and record.visible(seq):
            blob = yield from get(keys.message_key(cid, seq, gen))
            if blob is not None and pending_append(blob.data)[0] == new.client_id:
                held[index] = _same_message(new, new.client_id, blob.data)
            continue  # else stale: overwritten when written
        if seq >= first and new.ahead != alias.etag:  # maybe in flight: look again once
            new.ahead = alias.etag
            raise PreconditionFailedError(alias_key)
    slots: dict[int, int] = {}
    for index in range(len(news)):
        if index not in held:
            slots[index] = first + len(slots)
    if record is not None:
        _check_room(cid, record, len(slots))
    for new in news:
        _check_expected(new, record)
    news[0].intents += 1
    token = f"{first}.{news[0].suffix}.{news[0].intents}"
    return BatchPlan(token, gen, first, slots, held, aliases)
