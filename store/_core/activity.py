"""A conversation's last write: what retention judges idleness by.

The last write of a conversation is the newest of

* ``last_message_at``: its last append (messages, OpenAI session items);
* ``touched_at``: its last other write, stamped into meta by
  ``update_conversation`` (metadata), ``update_message``, ``delete_message``,
  ``clear_messages``, ``state.set`` / ``state.delete`` and the LangGraph
  checkpointer's ``put`` (a new checkpoint of the thread);
* the ``mtime`` of its Claude transcripts (read by the prune itself,
  :mod:`.retention`),

all on the store's clock (``store.runner.clock``), so a test that fixes time
fixes idleness.

The stamp is kept to :data:`TOUCH_RESOLUTION_MS`: a writer that finds a stamp
younger than that leaves meta alone, so a conversation's state written many
times a second costs one extra meta write per second, not one per write. The
prune pays for that by reading a stamp as "written up to a resolution later"
(:func:`last_write`), which keeps its guarantee exact: a writer that acts
after a prune judged a conversation idle finds a stamp older than the
resolution, so it writes meta, whose etag the prune's delete is conditional
on (the argument is in :mod:`.retention`).

The stamp is written *before* the write it stands for ("stamp, then
write"): a crash between the two leaves a conversation that looks active a
little longer, never one that looks idle with a fresh write in it.

The LangGraph checkpointer's saver also skips the meta *read* that comes
with a stamp (on PostgreSQL it turns a put's one round trip into two,
issue 36): after reading a thread's meta it does not read it again for a
resolution counted from the stamp meta then held (its own, or a younger
one another writer left), which keeps the argument above exact. A thread
without meta (a graph under an id nothing was appended to) is in no prune's
reach, and the saver does not look for its meta again for a resolution
either: if another writer creates that meta meanwhile (the first append),
the meta tells its own time, so for at most that second a checkpoint can be
younger than the conversation's last write says, and a prune whose cutoff
falls inside it may count the conversation idle up to a second early.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ..blob_ops import Op
from .codec import ConversationRecord
from .programs import save_meta

#: How finely ``touched_at`` follows writes that do not otherwise write meta.
TOUCH_RESOLUTION_MS = 1000


def last_write(record: ConversationRecord) -> int:
    """The latest moment (store clock, ms) the conversation may have been
    written, by what its meta knows: its last append, or its last other
    write plus :data:`TOUCH_RESOLUTION_MS` (a stamp that young was not
    renewed by the writes that followed it)."""
    if record.touched_at is None:
        return record.last_message_at
    return max(record.last_message_at, record.touched_at + TOUCH_RESOLUTION_MS)


def stamp(record: ConversationRecord, now: int | None) -> None:
    """Record a write at ``now`` in ``record``, for a writer that saves meta anyway."""
    if now is not None:
        record.touched_at = max(now, record.touched_at or 0)


def touch(
    cid: str, record: ConversationRecord | None, etag: str | None, now: int | None
) -> Generator[Op, Any, str | None]:
    """Stamp a write at ``now`` into live meta, for a writer that does not
    otherwise write it (state, a message's update, a checkpoint): a
    conditional meta write when the stamp is older than the resolution,
    nothing otherwise (and nothing without meta or ``now``). Returns meta's
    etag afterwards. Run it before the write it stands for."""
    if record is None or etag is None or now is None:
        return etag
    if record.touched_at is not None and now - record.touched_at < TOUCH_RESOLUTION_MS:
        return etag
    record.touched_at = max(now, record.touched_at or 0)
    return (yield from save_meta(cid, record, etag))
