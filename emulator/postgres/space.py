"""The PostgreSQL store's space: its size, what a ``VACUUM`` could make
reusable, and running that ``VACUUM`` (``PostgresBlobStore.vacuum``).

The store's tables are ``blobs`` and ``_migrations`` in its schema; nothing
here reads or vacuums another table. ``VACUUM`` (never ``VACUUM FULL``, which
locks readers out while it rewrites a table) runs on an autocommit
connection outside any transaction block, as PostgreSQL requires: readers and
writers go on meanwhile. It marks dead rows' space reusable and gives the OS
back only the empty pages at a table's end, so the size after is often the
size before: the space is reused by the next writes instead of growing the
files.

Reclaimable space is an estimate: for each table and its TOAST table (where
large blobs live), its main-fork size times its share of dead rows,
``n_dead_tup / (n_live_tup + n_dead_tup)``, from the statistics PostgreSQL
keeps per table (a connection reports its counts when idle, at most every
few seconds, so they lag writes; index bloat is left out). ``VACUUM`` may
even grow a table by its free-space and visibility maps the first time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from makers_store.blob import VacuumReport

from . import migrations as migrations

if TYPE_CHECKING:
    from .units import Connection

#: The store's own tables in its schema (the relations PostgreSQL sizes and
#: vacuums; their TOAST tables and indexes come with them).
TABLES = ("blobs", "_migrations")
_OWN = (
    "SELECT c.oid, c.reltoastrelid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind = 'r'"
)
#: Tables, TOAST and indexes, in bytes.
TOTAL_BYTES = f"SELECT coalesce(sum(pg_total_relation_size(oid)), 0)::bigint FROM ({_OWN}) own"
#: The estimate described in the module's docstring, in bytes.
RECLAIMABLE_BYTES = (
    "SELECT coalesce(sum(pg_relation_size(s.relid)::numeric * s.n_dead_tup"
    " / nullif(s.n_live_tup + s.n_dead_tup, 0)), 0)::bigint"
    f" FROM pg_stat_all_tables s, ({_OWN}) own"
    " WHERE s.relid = own.oid OR s.relid = own.reltoastrelid"
)


def parameters(schema: str) -> tuple[str, list[str]]:
    return schema, list(TABLES)


async def _bytes(conn: Connection, query: str, schema: str) -> int:
    cursor = await conn.execute(query, parameters(schema))
    row = await cursor.fetchone()
    return 0 if row is None else int(row[0])


async def vacuum_tables(conn: Connection, schema: str) -> VacuumReport:
    """``VACUUM`` the store's tables on ``conn`` (autocommit, idle, outside a
    pipeline), their total size read before and after. A warning the server
    sends instead (a table this user may not vacuum is skipped with one) is
    part of the report's note."""
    q = migrations.quoted(schema)
    before = await _bytes(conn, TOTAL_BYTES, schema)
    reclaimable = await _bytes(conn, RECLAIMABLE_BYTES, schema)
    warnings: list[str] = []

    def notice(diagnostic: Any) -> None:
        if diagnostic.severity_nonlocalized == "WARNING":
            warnings.append(str(diagnostic.message_primary))

    conn.add_notice_handler(notice)
    try:
        await conn.execute(f"VACUUM {', '.join(f'{q}.{table}' for table in TABLES)}")
    finally:
        conn.remove_notice_handler(notice)
    after = await _bytes(conn, TOTAL_BYTES, schema)
    note = (
        f"VACUUM of {q}.blobs and {q}._migrations: the space of dead rows (about "
        f"{reclaimable:,} bytes by the statistics) is reusable by later writes; "
        "PostgreSQL gives the OS back only empty pages at a table's end"
    )
    if warnings:
        note += "; the server warned: " + "; ".join(warnings)
    return VacuumReport(backend="postgres", bytes_before=before, bytes_after=after, note=note)
