"""A bounded page of values: the read that export and ``fork_conversation``
share (in the core, since ``lifecycle/`` forks and ``maintenance/`` exports).
"""

from __future__ import annotations

from ..blob_ops import Entry, Program, list_keys, scan

#: Largest batch of values read or written in one unit (a single bigger value still goes alone).
CHUNK_BYTES = 1024 * 1024
_LIST_BATCH = 500

#: Values read, and whether they are the rest of the range.
Chunk = tuple[list[Entry], bool]


def value_chunk(prefix: str, start_after: str | None, end_before: str | None) -> Program[Chunk]:
    """Values of the range from its start, up to CHUNK_BYTES (or one value),
    and whether they are the rest of the range: the bounded page of export
    and of ``fork_conversation``."""
    infos = yield from list_keys(
        prefix, start_after=start_after, end_before=end_before, limit=_LIST_BATCH
    )
    count = total = 0
    for info in infos:
        if count and total + info.size > CHUNK_BYTES:
            break
        count, total = count + 1, total + info.size
    if not count:
        return [], True
    values = yield from scan(prefix, start_after=start_after, end_before=end_before, limit=count)
    return values, count == len(infos) < _LIST_BATCH

