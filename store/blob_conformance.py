"""The conformance suite every Blob-store backend must pass: one named rule per check.

Each rule (:data:`CHECKS`, in order; :data:`RULES` by name) is an async
function of a fresh, empty backend that asserts what the backend must do,
each assertion saying what it checks. Three ways to run them:

- ``await run_blob_conformance(open_backend)`` runs every rule, each on a
  fresh backend made by ``open_backend()`` (an async callable) and closed
  after it, and raises AssertionError naming the first broken rule. It needs
  no test framework, so a third-party backend can run it from anything.
- ``await run_blob_rule(rule, open_backend)`` runs one rule (by name or
  function) the same way.
- :class:`BlobStoreTests` is a base class for pytest, as zarr's
  ``StoreTests`` is: subclass it as ``TestMyBackend``, define
  ``open_backend``, and pytest reports each rule as its own test
  (``TestMyBackend::test_preconditions``), so a failing backend shows which
  rule it breaks. The tests are coroutines: run them with an asyncio plugin
  (pytest-asyncio in auto mode, or ``@pytest.mark.asyncio`` on the class).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from .blob import BlobStore
from .blob_ops import ListKeys, Op, Program, delete_many, get, put, put_if_absent, scan
from .blob_ops import get_many as read_many  # the rules below bear their names
from .blob_ops import list_many as read_listings
from .errors import PreconditionFailedError

OpenBackend = Callable[[], Awaitable[BlobStore]]
Check = Callable[[BlobStore], Awaitable[None]]
#: Every rule, in the order they run.
CHECKS: list[Check] = []
#: The rules by name (the function's name, as the reports give it).
RULES: dict[str, Check] = {}


def check(fn: Check) -> Check:
    """Register ``fn`` as a rule."""
    CHECKS.append(fn)
    RULES[fn.__name__] = fn
    return fn


async def _fails(awaitable: Awaitable[Any], what: str) -> None:
    try:
        await awaitable
    except PreconditionFailedError:
        return
    raise AssertionError(f"{what}: expected PreconditionFailedError")


@check
async def get_put_head_delete(blobs: BlobStore) -> None:
    """get, head, put and delete of one key: values, etags, sizes, what a missing key gives."""
    assert await blobs.get("a") is None, "get of a missing key returns None"
    assert await blobs.head("a") is None, "head of a missing key returns None"
    info = await blobs.put("a", b"one")
    blob = await blobs.get("a")
    assert blob is not None and blob.data == b"one", "get returns what put stored"
    assert (blob.key, blob.etag, blob.size) == ("a", info.etag, 3), "get reports key, etag, size"
    assert isinstance(blob.updated_at, int) and blob.updated_at > 0, "updated_at is epoch ms"
    head = await blobs.head("a")
    assert head is not None and head.etag == info.etag and head.size == 3, "head matches get"
    second = await blobs.put("a", b"one")
    assert second.etag != info.etag, "every put yields a new etag, even with equal bytes"
    assert await blobs.delete("a") is True, "delete of a present key returns True"
    assert await blobs.delete("a") is False, "delete of a missing key returns False"
    assert await blobs.get("a") is None, "a deleted key is gone"


@check
async def get_many(blobs: BlobStore) -> None:
    """get_many: one answer per key in the order asked, None where missing,
    repeated keys answered twice, more keys than one SQL batch, values intact."""
    keys = [f"g/{n:04}" for n in range(1_200)]
    await asyncio.gather(*(blobs.put(key, key.encode()) for key in keys[::2]))

    def read(wanted: list[str]) -> Program[list[tuple[str, bytes] | None]]:
        found = yield from read_many(wanted)
        return [None if blob is None else (blob.key, blob.data) for blob in found]

    wanted = [*reversed(keys), "g/0000", "missing"]
    expected = [(k, k.encode()) if int(k[2:]) % 2 == 0 else None for k in reversed(keys)]
    got = await blobs.run(read(wanted), write=False)
    assert got == [*expected, ("g/0000", b"g/0000"), None], "answers follow the keys asked"
    assert await blobs.run(read([]), write=False) == [], "no keys, no answers"
    info = await blobs.put("g/new", b"fresh")

    def read_then_write() -> Program[str]:
        (blob,) = yield from read_many(["g/new"])
        assert blob is not None
        yield from put("g/new", blob.data + b"!", if_match=blob.etag)
        return blob.etag

    etag = await blobs.run(read_then_write(), write=True)
    assert etag == info.etag, "get_many in a write unit reports the etag put returned"


@check
async def batch_delete(blobs: BlobStore) -> None:
    """delete_many removes exactly its keys (more than one S3 request holds), missing or not."""
    # More than one S3 DeleteObjects request takes, missing keys among them.
    present = [f"d/{n:04}" for n in range(1_005)]
    await asyncio.gather(*(blobs.put(key, b"") for key in present))
    await blobs.put("d/keep", b"kept")
    gone = (*present, "d/never-written", "elsewhere")
    await blobs.run(delete_many(gone), write=True)
    left = await blobs.list("d/")
    assert [info.key for info in left] == ["d/keep"], "delete_many removes exactly its keys"
    await blobs.run(delete_many([]), write=True)  # an empty batch is no operation


@check
async def bytes_round_trip(blobs: BlobStore) -> None:
    """Empty, binary and 1 MiB values come back byte for byte."""
    payloads = {"empty": b"", "binary": bytes(range(256)), "large": b"x" * (1 << 20)}
    for key, data in payloads.items():
        await blobs.put(key, data)
    for key, data in payloads.items():
        blob = await blobs.get(key)
        assert blob is not None and blob.data == data and blob.size == len(data), key


@check
async def preconditions(blobs: BlobStore) -> None:
    """if_match / if_none_match on put and delete: a failed one raises and changes nothing."""
    first = await blobs.put("k", b"1", if_none_match=True)
    await _fails(blobs.put("k", b"2", if_none_match=True), "if_none_match on an existing key")
    await _fails(blobs.put("k", b"2", if_match="not-the-etag"), "if_match with a stale etag")
    await _fails(blobs.put("missing", b"2", if_match=first.etag), "if_match on a missing key")
    blob = await blobs.get("k")
    assert blob is not None and blob.data == b"1", "a failed conditional put changes nothing"
    second = await blobs.put("k", b"2", if_match=first.etag)
    await _fails(blobs.delete("k", if_match=first.etag), "delete with a stale etag")
    await _fails(
        blobs.delete("missing", if_match=first.etag), "conditional delete of a missing key"
    )
    assert await blobs.get("k") is not None, "a failed conditional delete changes nothing"
    assert await blobs.delete("k", if_match=second.etag) is True, "delete with the current etag"

    def create_quietly(key: str, data: bytes) -> Program[None]:
        yield from put_if_absent(key, data)

    await blobs.run(create_quietly("q", b"first"), write=True)
    await blobs.run(create_quietly("q", b"second"), write=True)
    kept = await blobs.get("q")
    assert kept is not None and kept.data == b"first", "a quiet create keeps an existing blob"


@check
async def listing(blobs: BlobStore) -> None:
    """list: code-point order, prefix, reverse, limit, start_after, end_before, sizes."""
    names = ["p/a", "p/b", "p/b/c", "p/c", "p0", "p", "q/a", "p/\u00e9", "p/\U0001f600", "o/z"]
    for name in names:
        await blobs.put(name, name.encode())

    async def keys(prefix: str = "", **kw: Any) -> list[str]:
        return [info.key for info in await blobs.list(prefix, **kw)]

    inside = sorted(n for n in names if n.startswith("p/"))
    assert await keys("p/") == inside, "list returns a prefix's keys in code-point order"
    assert await keys() == sorted(names), "an empty prefix lists every key"
    assert await keys("p/", reverse=True) == inside[::-1], "reverse lists descending"
    assert await keys("p/", limit=2) == inside[:2], "limit keeps the first keys"
    assert await keys("p/", reverse=True, limit=2) == inside[::-1][:2], "limit with reverse"
    assert await keys("p/", start_after="p/b") == [k for k in inside if k > "p/b"], "start_after"
    assert await keys("p/", end_before="p/c") == [k for k in inside if k < "p/c"], "end_before"
    window = [k for k in inside if "p/a" < k < "p/c"]
    assert await keys("p/", start_after="p/a", end_before="p/c") == window, "both bounds"
    assert await keys("p/", start_after="p/a", end_before="p/c", reverse=True) == window[::-1]
    assert await keys("p/", start_after="z") == [], "start_after past the end"
    assert await keys("p/", start_after="a", end_before="p/b") == ["p/a"], "bounds outside prefix"
    assert await keys("x/") == [], "an unknown prefix lists nothing"
    infos = await blobs.list("p/", limit=1)
    assert infos[0].size == len(infos[0].key.encode()), "list reports sizes"


@check
async def list_many(blobs: BlobStore) -> None:
    """list_many: each listing's answer, in order, as if listed on its own
    (directions, bounds and limits mixed), in read and write units."""
    for name in ("a/1", "a/2", "a/3", "b/1", "b/2"):
        await blobs.put(name, name.encode())
    listings = (
        ListKeys("a/", limit=2),
        ListKeys("b/", reverse=True),
        ListKeys("a/", start_after="a/1", end_before="a/3"),
        ListKeys("c/"),
    )

    def both() -> Program[list[list[str]]]:
        answers = yield from read_listings(*listings)
        return [[info.key for info in answer] for answer in answers]

    expected = [["a/1", "a/2"], ["b/2", "b/1"], ["a/2"], []]
    assert await blobs.run(both(), write=False) == expected, "answers follow the listings"
    assert await blobs.run(both(), write=True) == expected, "the same inside a write unit"
    single = [[info.key for info in await blobs.list(**one._asdict())] for one in listings]
    assert single == expected, "each answer is what the listing gives alone"


@check
async def scanning(blobs: BlobStore) -> None:
    """scan inside a program returns keys with their values (reverse, start_after, limit)."""
    for i in range(5):
        await blobs.put(f"s/{i}", str(i).encode())

    def program() -> Program[list[tuple[str, bytes]]]:
        found = yield from scan("s/", start_after="s/0", reverse=True, limit=3)
        return [(entry.key, entry.data) for entry in found]

    got = await blobs.run(program(), write=False)
    assert got == [("s/4", b"4"), ("s/3", b"3"), ("s/2", b"2")], "scan returns values"


@check
async def programs_run_as_units(blobs: BlobStore) -> None:
    """run: a program's result and writes, failures thrown into it, rollback if atomic."""

    def copy(src: str, dst: str) -> Program[int]:
        blob = yield from get(src)
        assert blob is not None
        info = yield from put(dst, blob.data + b"!")
        return info.size

    await blobs.put("src", b"data")
    assert await blobs.run(copy("src", "dst"), write=True) == 5, "run returns the result"
    dst = await blobs.get("dst")
    assert dst is not None and dst.data == b"data!", "a program's writes are kept"

    def caught() -> Generator[Op, Any, str]:
        try:
            yield from put("dst", b"x", if_none_match=True)
        except PreconditionFailedError:
            return "caught"
        return "not raised"

    assert await blobs.run(caught(), write=True) == "caught", "failures are thrown into programs"

    class Boom(Exception):
        pass

    def failing() -> Program[None]:
        yield from put("partial", b"1")
        raise Boom

    try:
        await blobs.run(failing(), write=True)
    except Boom:
        pass
    else:
        raise AssertionError("an exception inside a program propagates out of run")
    if blobs.capabilities.atomic:
        assert await blobs.get("partial") is None, "an atomic backend rolls back a failed unit"


@check
async def atomic_units_are_isolated(blobs: BlobStore) -> None:
    """An atomic backend's concurrent read-modify-write units lose no update."""
    if not blobs.capabilities.atomic:
        return
    await blobs.put("counter", b"0")

    def increment() -> Program[None]:
        blob = yield from get("counter")
        assert blob is not None
        yield from put("counter", str(int(blob.data) + 1).encode())

    await asyncio.gather(*(blobs.run(increment(), write=True) for _ in range(50)))
    blob = await blobs.get("counter")
    assert blob is not None and blob.data == b"50", "atomic read-modify-write units lose nothing"


async def run_blob_rule(rule: str | Check, open_backend: OpenBackend) -> str:
    """Run one rule on a fresh backend, closing it after; returns the rule's name.

    A broken rule raises AssertionError prefixed with the rule's name.
    """
    check_fn = RULES[rule] if isinstance(rule, str) else rule
    blobs = await open_backend()
    try:
        await check_fn(blobs)
    except AssertionError as exc:
        raise AssertionError(f"{check_fn.__name__}: {exc}") from exc
    finally:
        await blobs.close()
        await blobs.close()  # closing twice is allowed
    return check_fn.__name__


async def run_blob_conformance(open_backend: OpenBackend) -> list[str]:
    """Run every rule, each on a fresh backend; returns the names of the rules run.

    Stops at the first broken rule: AssertionError naming it.
    """
    return [await run_blob_rule(check_fn, open_backend) for check_fn in CHECKS]


class BlobStoreTests:
    """One test per rule for pytest: ``class TestMine(BlobStoreTests)`` with
    ``async def open_backend(self) -> BlobStore`` returning a fresh, empty backend.

    The class itself is not collected (its name does not start with ``Test``);
    each subclass gets ``test_<rule>`` for every rule in :data:`CHECKS`.
    """

    async def open_backend(self) -> BlobStore:
        raise NotImplementedError("a BlobStoreTests subclass defines open_backend()")


def _rule_test(check_fn: Check) -> Callable[[BlobStoreTests], Awaitable[None]]:
    async def test(self: BlobStoreTests) -> None:
        await run_blob_rule(check_fn, self.open_backend)

    test.__name__ = f"test_{check_fn.__name__}"
    test.__qualname__ = f"{BlobStoreTests.__name__}.{test.__name__}"
    test.__doc__ = check_fn.__doc__
    return test


for _check in CHECKS:
    setattr(BlobStoreTests, f"test_{_check.__name__}", _rule_test(_check))
del _check
