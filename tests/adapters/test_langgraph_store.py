"""``store.langgraph_store`` on every backend: the same operations against
LangGraph's InMemoryStore (the reference: LangGraph ships no store
conformance suite) and ours, then ranking and vector search (TTL and the
synchronous side: test_langgraph_store_lifecycle.py).

Known, intended differences from InMemoryStore, each tested below:
searches without a query order by ``updated_at`` descending (like
PostgresStore and SqliteStore; InMemoryStore keeps insertion order), so
result *sets* are compared and pages must partition them; a query without an
embedder ranks by terms and sets ``score``; a namespace whose items are all
gone is not listed; ``created_at`` survives an update.
"""

from __future__ import annotations

import asyncio
import math
import random
import re
from collections.abc import Sequence
from typing import Any

import pytest
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from makers_store import ContextStore, MemoryCorruptError, MemoryValidationError
from makers_store.adapters.langgraph.store import MakersLangGraphStore


def view(items: list[Any]) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    return [(item.namespace, item.key, item.value) for item in items]


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic fake embedder: how often each letter a-z occurs."""
    return [[float(text.lower().count(chr(97 + i))) for i in range(26)] for text in texts]


def letters_index(dims: int = 26, fields: list[str] | None = None) -> IndexConfig:
    return IndexConfig(dims=dims, embed=letters, fields=fields or ["text"])


# --- the same operations against InMemoryStore and ours ---------------------


def scenario(seed: int) -> list[PutOp]:
    """Puts, updates and deletes over a small tree of namespaces; every item
    has a number ``n`` (InMemoryStore's $gt raises on a missing one)."""
    rng = random.Random(seed)
    tops, mids, leaves = ["users", "docs", "a-b", "ünï"], ["u1", "u2", "*x", "shared"], ["m", "n"]
    ops: list[PutOp] = []
    for step in range(120):
        namespace: tuple[str, ...] = (rng.choice(tops),)
        if rng.random() < 0.7:
            namespace += (rng.choice(mids),)
        if rng.random() < 0.3:
            namespace += (rng.choice(leaves),)
        key = rng.choice(["k1", "k2", "k/3", "k 4", "k%5"])
        if step > 60 and rng.random() < 0.15:
            ops.append(PutOp(namespace, key, None))
            continue
        value = {
            "n": rng.randint(0, 9),
            "kind": rng.choice(["note", "task"]),
            "meta": {"lang": rng.choice(["en", "fr"]), "rev": rng.randint(1, 3)},
            "tags": rng.choice([["a"], ["a", "b"], []]),
            "text": rng.choice(["alpha", "beta gamma", "delta"]),
        }
        ops.append(PutOp(namespace, key, value))
    return ops


FILTERS: list[dict[str, Any] | None] = [
    None,
    {"kind": "note"},
    {"n": {"$gt": 4}},
    {"n": {"$gte": 3, "$lt": 7}},
    {"n": {"$ne": 2}},
    {"n": {"$lte": 5}, "kind": {"$eq": "task"}},
    {"meta": {"lang": "en"}},
    {"tags": ["a", "b"]},
    {"missing": "x"},
]
PREFIXES: list[tuple[str, ...]] = [(), ("users",), ("docs", "u1"), ("ünï", "*x"), ("nope",)]


async def apply_to_both(ours: BaseStore, reference: BaseStore, ops: list[PutOp]) -> None:
    for start in range(0, len(ops), 7):  # several ops per batch, as LangGraph sends them
        chunk = ops[start : start + 7]
        assert await ours.abatch(chunk) == await reference.abatch(chunk)


@pytest.mark.parametrize("seed", [1, 2])
async def test_same_results_as_in_memory_store(store: ContextStore, seed: int) -> None:
    ours, reference = store.langgraph_store, InMemoryStore()
    await apply_to_both(ours, reference, scenario(seed))

    everything = await reference.asearch((), limit=1000)
    gets = [GetOp(item.namespace, item.key) for item in everything]
    gets += [GetOp(("users", "u1"), "absent"), GetOp(("docs",), "k1")]
    assert view([i for i in await ours.abatch(gets) if i]) == view(
        [i for i in await reference.abatch(gets) if i]
    )

    for prefix in PREFIXES:
        for condition in FILTERS:
            want = await reference.asearch(prefix, filter=condition, limit=1000)
            got = await ours.asearch(prefix, filter=condition, limit=1000)
            assert sorted(view(got)) == sorted(view(want)), (prefix, condition)
            assert [g.updated_at for g in got] == sorted((g.updated_at for g in got), reverse=True)
            pages = [
                await ours.asearch(prefix, filter=condition, limit=3, offset=offset)
                for offset in range(0, len(got) + 3, 3)
            ]
            assert view([i for page in pages for i in page]) == view(got)

    listings: list[dict[str, Any]] = [
        {},
        {"prefix": ("users",)},
        {"prefix": ("*", "u1")},
        {"suffix": ("m",)},
        {"suffix": ("*", "m")},
        {"prefix": ("docs",), "suffix": ("n",)},
        {"max_depth": 1},
        {"prefix": ("users",), "max_depth": 2},
        {"limit": 3},
        {"limit": 4, "offset": 2},
        {"max_depth": 2, "limit": 5, "offset": 1},
        {"prefix": ("nope",)},
    ]
    # InMemoryStore lists namespaces it once held (and ones a get created):
    # list from a reference that holds only the live items.
    survivors = InMemoryStore()
    await survivors.abatch([PutOp(item.namespace, item.key, item.value) for item in everything])
    for arguments in listings:
        expected = await survivors.alist_namespaces(**arguments)
        assert await ours.alist_namespaces(**arguments) == expected, arguments


async def test_batch_reads_see_the_state_before_its_writes(store: ContextStore) -> None:
    ours, reference = store.langgraph_store, InMemoryStore()
    ops: list[Any] = [
        PutOp(("ns",), "k", {"v": 1}),
        GetOp(("ns",), "k"),
        SearchOp(("ns",)),
        PutOp(("ns",), "k", {"v": 2}),
        ListNamespacesOp(),
    ]
    got, want = await ours.abatch(ops), await reference.abatch(ops)
    assert got == [None, None, [], None, []]
    assert want[:4] == got[:4]  # InMemoryStore's get created the namespace it lists
    item = await ours.aget(("ns",), "k")
    assert item is not None and item.value == {"v": 2}


async def test_put_update_delete_and_timestamps(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("docs", "u1"), "report", {"memory": "likes ai"})
    first = await lg.aget(("docs", "u1"), "report")
    await lg.aput(("docs", "u1"), "report", {"memory": "likes go"})
    second = await lg.aget(("docs", "u1"), "report")
    assert first is not None and second is not None
    assert second.value == {"memory": "likes go"}
    assert second.created_at == first.created_at < second.updated_at
    assert first.created_at.tzinfo is not None
    await lg.adelete(("docs", "u1"), "report")
    await lg.adelete(("docs", "u1"), "report")  # deleting a missing item is fine
    assert await lg.aget(("docs", "u1"), "report") is None
    assert await lg.alist_namespaces() == []  # an emptied namespace is not listed
    assert await store.blobs.list("l/") == []


@pytest.mark.on_s3
async def test_concurrent_writers_all_land(store: ContextStore) -> None:
    """Writers racing on one key retry their compare-and-swap (stepwise
    backends); the item keeps the created_at of its first version."""
    lg = store.langgraph_store
    await lg.aput(("race",), "same", {"v": -1})
    first = await lg.aget(("race",), "same")
    await asyncio.gather(
        *(lg.aput(("race",), "same", {"v": i}) for i in range(10)),
        *(lg.aput(("race",), f"k{i}", {"v": i}) for i in range(10)),
    )
    item = await lg.aget(("race",), "same")
    assert first is not None and item is not None
    assert item.created_at == first.created_at and item.value["v"] in range(10)
    assert len(await lg.asearch(("race",), limit=100)) == 11


async def test_items_live_outside_conversations(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("a/b", "c"), "k.1", {"x": 1})
    await lg.aput(("a",), "b/c", {"x": 2})
    assert [info.key for info in await store.blobs.list("l/")] == [
        "l/a%2Fb/c/.k%2E1",
        "l/a/.b%2Fc",
    ]
    # the derived index: a directory entry per namespace, a copy per item
    assert [info.key for info in await store.blobs.list("ln/")] == [
        "ln/.version",
        "ln/a%2Fb/c/.",
        "ln/a/.",
    ]
    copies = [info.key for info in await store.blobs.list("lr/")]
    assert [re.sub(r"~\d{15}\.", "~{rank}.", key) for key in copies] == [
        "lr/a%2Fb/c/~{rank}.k%2E1",
        "lr/a/~{rank}.b%2Fc",
    ]
    assert await lg.alist_namespaces() == [("a",), ("a/b", "c")]
    assert view(await lg.asearch(("a",))) == [(("a",), "b/c", {"x": 2})]
    conversations = await store.list_conversations()
    assert conversations.items == []


async def test_invalid_input_is_refused_before_anything_is_written(store: ContextStore) -> None:
    lg = store.langgraph_store
    with pytest.raises(MemoryValidationError, match="value must be strict JSON"):
        await lg.aput(("ns",), "k", {"x": math.nan})
    with pytest.raises(MemoryValidationError, match=r"\$regex"):
        await lg.asearch(("ns",), filter={"x": {"$regex": "a"}})
    with pytest.raises(InvalidNamespaceError):
        await lg.aput(("bad.label",), "k", {})
    with pytest.raises(InvalidNamespaceError):
        await lg.abatch([PutOp((), "k", {})])
    with pytest.raises(MemoryValidationError, match="limit"):
        await lg.asearch(("ns",), limit=-1)
    with pytest.raises(MemoryValidationError, match="ttl"):
        await lg.aput(("ns",), "k", {}, ttl=-1)
    with pytest.raises(MemoryValidationError, match="max_depth"):
        await lg.alist_namespaces(max_depth=0)
    with pytest.raises(MemoryValidationError, match="index"):
        await lg.aput(("ns",), "k", {}, index="text")  # type: ignore[arg-type]
    # the valid put in the same batch as a bad one was not applied either
    with pytest.raises(MemoryValidationError):
        await lg.abatch([PutOp(("ns",), "ok", {"x": 1}), PutOp(("ns",), "k", {"x": math.inf})])
    assert await store.blobs.list("") == []


async def test_corrupt_records_are_reported(store: ContextStore) -> None:
    lg = store.langgraph_store
    await store.blobs.put("l/x/.bad", b"not a record")
    await store.blobs.put("l/x/.worse", b"1 x\n{}\n{}")
    with pytest.raises(MemoryCorruptError, match="not a LangGraph store item"):
        await lg.aget(("x",), "bad")
    with pytest.raises(MemoryCorruptError, match="malformed"):
        await lg.aget(("x",), "worse")


# --- ranking ----------------------------------------------------------------


async def test_query_without_embedder_ranks_by_terms(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("docs",), "py", {"text": "Python tutorial for beginners"})
    await lg.aput(("docs",), "ts", {"text": "TypeScript guide"})
    await lg.aput(("docs",), "both", {"title": "Guide", "text": "python, the GUIDE"})
    await lg.aput(("docs",), "none", {"text": "cooking"})
    await lg.aput(("docs", "deep"), "py2", {"text": "python"})
    results = await lg.asearch(("docs",), query="python guide")
    assert [(r.key, r.score) for r in results] == [
        ("both", 1.0),
        ("py2", 0.5),  # ties: most recently updated first
        ("ts", 0.5),
        ("py", 0.5),
        ("none", 0.0),
    ]
    filtered = await lg.asearch(("docs",), query="python", filter={"text": "python"}, limit=1)
    assert [(r.key, r.score) for r in filtered] == [("py2", 1.0)]
    page = await lg.asearch(("docs",), query="python guide", limit=2, offset=1)
    assert [r.key for r in page] == ["py2", "ts"]
    assert [r.score for r in await lg.asearch(("docs",), query="!!")] == [0.0] * 5
    assert all(r.score is None for r in await lg.asearch(("docs",)))


async def test_vector_search_ranks_like_in_memory_store(store: ContextStore) -> None:
    ours = MakersLangGraphStore(store, index=letters_index())
    reference = InMemoryStore(index=letters_index())
    ops = [
        PutOp(("docs",), "py", {"text": "python tutorial"}),
        PutOp(("docs",), "ts", {"text": "typescript guide"}),
        PutOp(("docs",), "rust", {"text": "rust ownership"}),
        PutOp(("docs", "x"), "zz", {"text": "zzz buzz"}),
        PutOp(("docs",), "title", {"title": "python", "text": "qqq"}, index=["title"]),
    ]
    await apply_to_both(ours, reference, ops)
    for query in ["python programming", "guide to typescript", "buzz"]:
        got = await ours.asearch(("docs",), query=query, limit=10)
        want = await reference.asearch(("docs",), query=query, limit=10)
        assert [r.key for r in got] == [r.key for r in want], query
        for mine, theirs in zip(got, want, strict=True):
            assert mine.score == pytest.approx(theirs.score)
    assert [r.key for r in await ours.asearch(("docs",), query="python", limit=2, offset=1)] == [
        r.key for r in await reference.asearch(("docs",), query="python", limit=2, offset=1)
    ]
    filtered = await ours.asearch(("docs",), query="python", filter={"text": "rust ownership"})
    assert [r.key for r in filtered] == ["rust"]


async def test_vector_search_details(store: ContextStore) -> None:
    lg = MakersLangGraphStore(store, index=letters_index(fields=["parts[*]"]))
    await lg.aput(("d",), "multi", {"parts": ["aaaa", "zzzz"]})
    await lg.aput(("d",), "plain", {"parts": ["mmmm"]})
    await lg.aput(("d",), "skipped", {"parts": ["aaaa"]}, index=False)
    await lg.aput(("d",), "nofield", {"other": "aaaa"})
    results = await lg.asearch(("d",), query="zzz")
    # max over an item's vectors; items without vectors follow, unscored
    assert [(r.key, r.score) for r in results][:2] == [("multi", pytest.approx(1.0)), ("plain", 0)]
    assert {(r.key, r.score) for r in results[2:]} == {("skipped", None), ("nofield", None)}
    # an item's vectors are kept with it and follow updates and deletes
    await lg.aput(("d",), "plain", {"parts": ["zz"]})
    tied = await lg.asearch(("d",), query="z", limit=2)
    assert [(r.key, r.score) for r in tied] == [("plain", 1.0), ("multi", 1.0)]  # newest first
    await lg.adelete(("d",), "multi")
    assert (await lg.asearch(("d",), query="z", limit=1))[0].key == "plain"


async def test_embedder_with_wrong_dimensions_is_refused(store: ContextStore) -> None:
    lg = MakersLangGraphStore(store, index=letters_index(dims=3))
    with pytest.raises(MemoryValidationError, match="dims"):
        await lg.aput(("d",), "k", {"text": "abc"})
    assert await store.blobs.list("") == []
    with pytest.raises(MemoryValidationError, match="dims"):
        MakersLangGraphStore(store, index=letters_index(dims=0))


async def test_lone_surrogates_in_namespaces_and_keys_are_refused(store: ContextStore) -> None:
    lg = store.langgraph_store
    await lg.aput(("ok",), "k", {"v": 1})
    before = [info.key for info in await store.blobs.list()]
    lone = "x\ud800"
    for argument, call in [
        ("namespace", lambda: lg.aput(("ok", lone), "k", {})),
        ("key", lambda: lg.aput(("ok",), lone, {})),
        ("value", lambda: lg.aput(("ok",), "k", {"v": [lone]})),
        ("namespace", lambda: lg.asearch((lone,))),
        ("key", lambda: lg.aget(("ok",), lone)),
    ]:
        with pytest.raises(MemoryValidationError, match=f"^{argument} .*lone surrogate"):
            await call()
    assert [info.key for info in await store.blobs.list()] == before
    item = await lg.aget(("ok",), "k")
    assert item is not None and item.value == {"v": 1}
