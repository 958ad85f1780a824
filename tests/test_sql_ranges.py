"""The SQL range query gives the planner one lower and one upper bound."""

from __future__ import annotations

from makers_store.blob_ops import ListKeys, Scan
from makers_store.emulator.sql_ranges import range_query


def bounds(sql: str) -> list[str]:
    where = sql.split(" WHERE ", 1)[1].split(" ORDER BY ", 1)[0]
    return where.split(" AND ")


def test_the_tighter_bound_of_each_side_is_kept() -> None:
    # a page before a cursor, newest first: the cursor is the only upper bound
    sql, params = range_query(ListKeys("i/all/", None, "i/all/5", True, 1), "blobs", "?")
    assert bounds(sql) == ["key >= ?", "key < ?"]
    assert params == ["i/all/", "i/all/5", 1]
    sql, params = range_query(Scan("c/x/m/", "c/x/m/07", None), "blobs", "?")
    assert bounds(sql) == ["key > ?", "key < ?"]
    assert params == ["c/x/m/07", "c/x/m0"]


def test_bounds_outside_the_prefix_give_way_to_it() -> None:
    sql, params = range_query(ListKeys("c/x/", "a", "z"), "blobs", "%s")
    assert bounds(sql) == ["key >= %s", "key < %s"]
    assert params == ["c/x/", "c/x0"]


def test_no_prefix_keeps_the_window() -> None:
    sql, params = range_query(ListKeys("", "a", "b"), "blobs", "?")
    assert bounds(sql) == ["key > ?", "key < ?"]
    assert params == ["a", "b"]
    sql, params = range_query(ListKeys(""), "blobs", "?")
    assert " WHERE " not in sql and params == []
