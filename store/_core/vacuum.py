"""Giving back the space deletes leave (``store.admin.vacuum()``,
``makers-store vacuum``): the report, and the rules every backend keeps.

Deleting conversations (``delete_conversation``, a prune) removes their
blobs, but a database keeps the pages they filled: SQLite puts them on its
free list, PostgreSQL leaves dead row versions until a ``VACUUM``. A vacuum
changes no blob: it only rewrites how the backend lays them out, so every
conversation reads the same before and after, and it asks for no
confirmation. What each backend does is its
:meth:`~makers_store.blob.BlobStore.vacuum` (the seam's optional method):

* **SQLite** (``emulator/sqlite/vacuum.py``): ``PRAGMA incremental_vacuum`` in short
  write transactions (each moves a few thousand pages to fill the free ones
  and cuts the file's end), then a WAL checkpoint, so the file shrinks by the
  free pages. The sizes reported are the database's (pages times page
  size, as every new reader sees it); the file on disk follows at the
  checkpoint, which a store read and written without pause may put off to
  a quieter moment (the note says which). The store stays readable by
  other processes throughout (WAL: readers never wait for the writer), and
  writers wait only for one short transaction at a time, through their
  normal busy timeout. That needs
  ``auto_vacuum=INCREMENTAL``, which SQLite can only set before the first
  table exists or with one full ``VACUUM``: files made by this version have
  it from birth; a file made by an older version is switched by its first
  vacuum, which is then one full ``VACUUM`` (readers still read; writers
  wait for it, so run that first one when the store is quiet; it needs free
  disk space about the size of the file). No migration does it at open: a
  migration runs inside the opening transaction, where ``VACUUM`` cannot run,
  and would rewrite a large file unasked.
* **PostgreSQL**: ``VACUUM`` of the store's own tables (``blobs`` and
  ``_migrations`` in its schema), outside any transaction, which makes the
  dead rows' space reusable by later writes and gives the OS back only empty
  pages at a table's end. ``VACUUM FULL``, which would shrink the files, locks
  the tables against readers and is never run. Sizes are
  ``pg_total_relation_size`` (tables, TOAST and indexes).
* **S3 and memory**: nothing to do (a delete gives the space back at once),
  and the report says so (``nothing_to_do``).

What ``makers-store info`` shows as reclaimable (``reclaimable_bytes`` in
the backend's facts): SQLite's free pages (``freelist_count * page_size``),
exact; on PostgreSQL an estimate, each table's (and its TOAST table's) size
times its share of dead rows in the statistics collector's counts
(``n_dead_tup``), which lag writes by some seconds and leave index bloat
out; 0 on S3 and memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import fields_dict


@dataclass(frozen=True, slots=True)
class VacuumReport:
    """What ``store.admin.vacuum()`` did: the backend's size in bytes before
    and after (None where it cannot tell), and what was done in words.
    ``nothing_to_do``: the backend keeps no space after a delete (S3,
    memory), and nothing was done."""

    backend: str
    bytes_before: int | None
    bytes_after: int | None
    note: str
    nothing_to_do: bool = False

    @property
    def reclaimed_bytes(self) -> int | None:
        """``bytes_before - bytes_after`` (never below 0), or None when the
        backend cannot tell its size."""
        if self.bytes_before is None or self.bytes_after is None:
            return None
        return max(0, self.bytes_before - self.bytes_after)

    def to_dict(self) -> dict[str, Any]:
        return {**fields_dict(self), "reclaimed_bytes": self.reclaimed_bytes}
