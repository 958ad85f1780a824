"""The range query of ListKeys and Scan, shared by the SQL backends.

Keys compare by code point (SQLite's default BINARY collation, PostgreSQL's
``COLLATE "C"``), so a prefix is the key range ``[prefix, prefix_end(prefix))``,
which the primary-key index serves.
"""

from __future__ import annotations

from typing import Any

from makers_store.blob import ListKeys, Scan, prefix_end


def range_query(op: ListKeys | Scan, table: str, placeholder: str) -> tuple[str, list[Any]]:
    """``(sql, params)`` selecting ``op``'s rows from ``table``; ``placeholder``
    is the driver's parameter marker (``?`` for sqlite3, ``%s`` for psycopg)."""
    columns = "key, data" if isinstance(op, Scan) else "key, etag, size, updated_at"
    bounds: list[tuple[str, str]] = []
    if op.prefix:
        bounds.append((">=", op.prefix))
        end = prefix_end(op.prefix)
        if end is not None:
            bounds.append(("<", end))
    if op.start_after is not None:
        bounds.append((">", op.start_after))
    if op.end_before is not None:
        bounds.append(("<", op.end_before))
    sql = f"SELECT {columns} FROM {table}"
    if bounds:
        sql += " WHERE " + " AND ".join(f"key {cmp} {placeholder}" for cmp, _ in bounds)
    sql += " ORDER BY key DESC" if op.reverse else " ORDER BY key"
    params: list[Any] = [value for _, value in bounds]
    if op.limit is not None:
        sql += f" LIMIT {placeholder}"
        params.append(op.limit)
    return sql, params
