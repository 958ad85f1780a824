"""The range query of ListKeys and Scan, shared by the SQL backends.

Keys compare by code point (SQLite's default BINARY collation, PostgreSQL's
``COLLATE "C"``), so a prefix is the key range ``[prefix, prefix_end(prefix))``,
which the primary-key index serves.
"""

from __future__ import annotations

from typing import Any

from makers_store.blob_ops import ListKeys, Scan, prefix_end


def range_query(op: ListKeys | Scan, table: str, placeholder: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` selecting ``op``'s rows from ``table``; ``placeholder``
    is the driver's parameter marker (``?`` for sqlite3, ``%s`` for psycopg)."""
    columns = "key, data" if isinstance(op, Scan) else "key, etag, size, updated_at"
    # One lower and one upper bound, the tighter of each pair: given two upper
    # bounds, SQLite's planner may start a descending scan at the looser one
    # and filter every row down to the other (a whole prefix read per page).
    bounds: list[tuple[str, str]] = []
    if op.start_after is not None and op.start_after >= op.prefix:
        bounds.append((">", op.start_after))
    elif op.prefix:
        bounds.append((">=", op.prefix))
    end = prefix_end(op.prefix) if op.prefix else None
    if op.end_before is not None and (end is None or op.end_before <= end):
        bounds.append(("<", op.end_before))
    elif end is not None:
        bounds.append(("<", end))
    sql = f"SELECT {columns} FROM {table}"
    if bounds:
        sql += " WHERE " + " AND ".join(f"key {cmp} {placeholder}" for cmp, _ in bounds)
    sql += " ORDER BY key DESC" if op.reverse else " ORDER BY key"
    params: list[Any] = [value for _, value in bounds]
    if op.limit is not None:
        sql += f" LIMIT {placeholder}"
        params.append(op.limit)
    return sql, params
