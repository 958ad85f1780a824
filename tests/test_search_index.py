"""The search index: exactly the scan's answers, on every backend with one,
through every write path, with writers running while a search does.

The scan (``search_messages(..., use_index=False)``) is the rule's reference:
after every step of a random sequence of writes, every query through the
index must give the scan's hits, in its order, with its snippets; and a
search run while another writer appends and deletes must return every
match committed before it started and nothing deleted before it started.
"""

from __future__ import annotations

import asyncio
import io
import re
import shutil
import sqlite3
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import makers_store
from makers_store.blob import MIN_QUERY, fold, indexed_text, message_text_of_blob
from makers_store.maintenance import search
from tests.backends import BACKENDS, backend_url

#: The backends with a search index (stepwise memory and S3 always scan).
INDEXED = [kind for kind in BACKENDS if kind in ("memory", "sqlite", "postgres")]
#: Characters whose case Python's re folds in unusual ways, and plain ones.
TRICKY = (
    "sS\u017fkK\u212aiI\u0130\u0131\u03c3\u03a3\u03c2\u00df\u1e9e\u00b5\u03bc\u039c"
    "\u0345\u03b9\u0399\u1fbe\u01c4\u01c5\u01c6\ufb05\ufb06\u00e9\u00c9 \x00"
)
WORDS = [
    "hello",
    "World",
    "\u017ftra\u00dfe",
    "KELVIN",
    "\u03a3\u0391\u03a3",
    "na\u00efve",
    "tool",
    "the",
]
QUERIES = [
    "hello",
    "WORLD",
    "stra",
    "kelvin",
    "\u03c3\u03b1\u03c2",
    "NA\u00cf",
    "the",
    "o w",
    "he",
    "xyz",
]
TEXT = st.lists(st.sampled_from(WORDS) | st.text(TRICKY, max_size=4), max_size=4).map(" ".join)
CONTENT = (
    TEXT
    | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": TEXT}), max_size=2)
    | st.fixed_dictionaries({"type": st.just("image"), "url": TEXT})  # not text: never found
    | st.lists(st.fixed_dictionaries({"type": st.just("tool_result"), "content": TEXT}), max_size=2)
)
CIDS = st.sampled_from(["c1", "c2", "a/b", "日本"])
USERS = st.none() | st.sampled_from(["u1", "u2"])


@given(text=st.text(TRICKY + "abc", max_size=12), query=st.text(TRICKY + "abc", min_size=1))
@settings(max_examples=400, deadline=None)
def test_fold_finds_every_match(text: str, query: str) -> None:
    """Whatever the rule finds, the folded text holds the folded query."""
    if search.pattern(query).search(text):
        assert fold(query) in fold(text)


def test_fold_agrees_with_re_on_every_character() -> None:
    """Two characters the rule matches to each other fold alike (every code
    point against its upper, lower and title forms and re's extra cases)."""
    for code in range(0x20000):
        char = chr(code)
        if 0xD800 <= code < 0xE000:
            continue
        found = re.compile(re.escape(char), re.IGNORECASE)
        for other in {char.upper(), char.lower(), char.title(), char.casefold()}:
            if len(other) == 1 and found.fullmatch(other):
                assert fold(char) == fold(other), (hex(code), other)


def test_indexed_text_is_the_rule_s_texts() -> None:
    record = b'[1,"m","user",1,null,null,{},[{"type":"text","text":"A"},{"content":"B"},3]]'
    assert indexed_text(record) == "a\nb"
    assert indexed_text(b"not json") is None


class Clock:
    """A clock the test moves (retention judges idleness by it)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1
        return self.now


class SearchMachine(RuleBasedStateMachine):
    kind = "memory"

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="makers-search-"))
        self.loop = asyncio.new_event_loop()
        self.url = backend_url(self.kind, self.dir)
        self.clock = Clock()
        self.store = makers_store.open_store(self.url, clock=self.clock)
        self.forks = 0

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    async def _ids(self, cid: str) -> list[str]:
        return [m.message_id async for m in self.store.iter_messages(cid)]

    # --- writes ------------------------------------------------------------

    @rule(cid=CIDS, role=st.sampled_from(["user", "assistant", "tool"]), content=CONTENT,
          user=USERS)  # fmt: skip
    def append(self, cid: str, role: str, content: Any, user: str | None) -> None:
        self.run(self.store.append_message(cid, role, content, user_id=user))

    @rule(cid=CIDS, contents=st.lists(CONTENT, min_size=1, max_size=3))
    def append_batch(self, cid: str, contents: list[Any]) -> None:
        batch = [{"role": "user", "content": content} for content in contents]
        self.run(self.store.append_messages(cid, batch))

    @rule(cid=CIDS, index=st.integers(0, 5), content=CONTENT)
    def update(self, cid: str, index: int, content: Any) -> None:
        ids = self.run(self._ids(cid))
        if ids:
            self.run(self.store.update_message(cid, ids[index % len(ids)], content=content))

    @rule(cid=CIDS, index=st.integers(0, 5))
    def delete_message(self, cid: str, index: int) -> None:
        ids = self.run(self._ids(cid))
        if ids:
            self.run(self.store.delete_message(cid, ids[index % len(ids)]))

    @rule(cid=CIDS)
    def clear(self, cid: str) -> None:
        if self.run(self.store.get_conversation(cid)) is not None:
            self.run(self.store.clear_messages(cid))

    @rule(cid=CIDS)
    def delete_conversation(self, cid: str) -> None:
        self.run(self.store.delete_conversation(cid))

    @rule(cid=CIDS)
    def fork(self, cid: str) -> None:
        if self.run(self.store.get_conversation(cid)) is not None:
            self.forks += 1
            self.run(self.store.fork_conversation(cid, f"fork{self.forks}"))

    @rule(cid=CIDS)
    def export_and_import(self, cid: str) -> None:
        """Import replaces the conversation with a new generation."""
        if self.run(self.store.get_conversation(cid)) is None:
            return
        out = io.StringIO()
        self.run(self.store.admin.export_jsonl(out.write, conversation_ids=[cid]))
        lines = out.getvalue().splitlines()
        self.run(self.store.admin.import_jsonl(lambda: lines))

    @rule()
    def copy_to_another_store(self) -> None:
        """A copy's index (same backend, a new store) answers as the scan does there."""
        self.forks += 1
        url = backend_url(self.kind, self.dir / f"copy{self.forks}")
        if self.kind == "sqlite":
            (self.dir / f"copy{self.forks}").mkdir()

        async def copy_and_compare() -> None:
            async with makers_store.open_store(url) as copy:
                await self.store.admin.copy_to(copy)
                for query in QUERIES[:3]:
                    indexed = [h async for h in search.search_messages(copy, query)]
                    scanned = [
                        h async for h in search.search_messages(copy, query, use_index=False)
                    ]
                    assert indexed == scanned, query

        self.run(copy_and_compare())

    @rule()
    def prune_idle(self) -> None:
        """Retention deletes every conversation idle for 5 ms (of the clock's)."""
        self.clock.now += 5
        self.run(self.store.admin.prune_conversations(timedelta(milliseconds=5)))

    @rule(cid=CIDS, text=TEXT)
    def openai_session_items(self, cid: str, text: str) -> None:
        """The OpenAI session adapter's items are messages."""
        pytest.importorskip("agents")
        session = self.store.openai_session(cid)
        self.run(session.add_items([{"role": "user", "content": text}]))

    @rule()
    def catch_up(self) -> None:
        """SQLite indexes the keys written since its last catch-up (a search
        reads those itself meanwhile): both states must answer alike."""
        catch_up = getattr(self.store.blobs, "catch_up_search_index", None)
        if catch_up is not None:
            self.run(catch_up())

    # --- the index against the scan ----------------------------------------

    async def _both(self, query: str, **options: Any) -> tuple[list[Any], list[Any]]:
        indexed = [h async for h in search.search_messages(self.store, query, **options)]
        scanned = [
            h async for h in search.search_messages(self.store, query, use_index=False, **options)
        ]
        return indexed, scanned

    @invariant()
    def index_gives_the_scan_s_answers(self) -> None:
        for query in QUERIES:
            indexed, scanned = self.run(self._both(query))
            assert indexed == scanned, query
        for options in ({"role": "user"}, {"user_id": "u1"}, {"limit": 2}):
            indexed, scanned = self.run(self._both("the", **options))
            assert indexed == scanned, options

    @invariant()
    def index_checks_out(self) -> None:
        check = self.run(self.store.blobs.check_search_index())
        assert check is not None and check.ok, check

    @rule(query=st.sampled_from(QUERIES[:-1]))
    def search_while_writing(self, query: str) -> None:
        """A search with a writer running: every match committed before it
        started, nothing deleted before it started."""
        self.run(self._search_while_writing(query))

    async def _search_while_writing(self, query: str) -> None:
        before = {(h.conversation_id, h.message_id): h for h in await self._hits(query)}
        victims = list(before)[:3]
        writer = self.store
        if self.kind != "memory":  # another store on the same database: another writer
            writer = makers_store.open_store(self.url, clock=self.clock)
        appended: set[tuple[str, str]] = set()
        deleted: set[tuple[str, str]] = set()
        started = asyncio.Event()

        async def write() -> None:
            await started.wait()
            for round_ in range(3):
                mid = await writer.append_message("w", "user", f"{query} {round_}")
                appended.add(("w", mid))
                if victims:
                    cid, mid = victims.pop()
                    await writer.delete_message(cid, mid)
                    deleted.add((cid, mid))
                await asyncio.sleep(0)

        async def read() -> list[Any]:
            hits = search.search_messages(self.store, query)
            first = await anext(hits, None)
            started.set()
            return ([] if first is None else [first]) + [h async for h in hits]

        task = asyncio.ensure_future(write())
        try:
            found = await read()
        finally:
            started.set()
            await task
            if writer is not self.store:
                await writer.close()
        got = [(h.conversation_id, h.message_id) for h in found]
        assert len(got) == len(set(got))
        assert set(before) - deleted <= set(got) <= set(before) | appended

    async def _hits(self, query: str) -> list[Any]:
        return [h async for h in search.search_messages(self.store, query)]


@pytest.mark.parametrize("kind", INDEXED)
def test_index_matches_scan(kind: str) -> None:
    machine = type(f"SearchMachine_{kind}", (SearchMachine,), {"kind": kind})
    runner = machine.TestCase
    runner.settings = settings(
        max_examples={"memory": 40, "sqlite": 25, "postgres": 10}[kind],
        stateful_step_count=15,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    runner().runTest()


def test_short_queries_scan(tmp_path: Path) -> None:
    """A query shorter than a trigram is answered by the scan, the same way."""

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{tmp_path}/s.db") as store:
            await store.append_message("c", "user", "Ok, \u017fo")
            assert await store.blobs.search_message_keys("ok", 10) is None
            hits = [h.snippet async for h in store.admin.search_messages("S")]
            assert hits == ["Ok, \u017fo"] and len("S") < MIN_QUERY

    asyncio.run(main())


def test_a_message_blob_written_over_twice_stays_indexed(tmp_path: Path) -> None:
    """A Put without precondition (an upsert: import, copy, seed) of a message
    blob already marked for the index: SQLite applies the upsert's conflict
    policy to the statements of the trigger it fires, so marking the key
    again failed the write with a UNIQUE error."""

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{tmp_path}/s.db") as store:
            await store.append_message("c", "user", "first text")
            key = "c/c/m/0000000000"
            blob = await store.blobs.get(key)
            assert blob is not None
            for _ in range(2):  # both before the index catches up
                await store.blobs.put(key, blob.data.replace(b"first", b"other"))
            hits = [h.snippet async for h in store.admin.search_messages("other tex")]
            assert hits == ["other text"]

    asyncio.run(main())


def test_a_catch_up_leaves_the_write_lock_free_between_batches(tmp_path: Path) -> None:
    """A long catch-up (a first open of a large store) commits a batch at a
    time and pauses between two, so another process's writer gets the write
    lock meanwhile (it took it back at once: writers elsewhere could wait
    until their busy timeout and fail, as a restore did after a bulk import)."""
    from makers_store.emulator.sqlite import search as sqlite_search

    path = tmp_path / "s.db"
    batches = 5

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.append_message("c", "user", "hello")
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            count = batches * sqlite_search.CATCH_UP_BATCH
            waiting = [f"c/x{n}/m/0000000000" for n in range(count)]
            other.executemany("INSERT INTO search_dirty (key) VALUES (?)", [(k,) for k in waiting])
            await store.append_message("c", "user", "again")  # the idle catch-up follows
            seen_mid_way = False
            for _ in range(400):
                await asyncio.sleep(0.01)
                try:
                    other.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError:
                    continue  # a batch holds the lock
                left = other.execute("SELECT count(*) FROM search_dirty").fetchone()[0]
                other.execute("ROLLBACK")
                if 0 < left < len(waiting):
                    seen_mid_way = True
                if left == 0:
                    break
            other.close()
            assert seen_mid_way and left == 0

    asyncio.run(main())


def test_existing_store_is_indexed_on_first_open(tmp_path: Path) -> None:
    """A store written before the index (schema 2) gets it when first opened."""
    path = tmp_path / "old.db"

    async def write() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.append_message("c", "user", "an old Message")

    asyncio.run(write())
    conn = sqlite3.connect(path)  # back to how schema 2 left it
    conn.execute("DROP TABLE search_fts")
    conn.execute("DROP TABLE search_rows")
    conn.execute("DROP TABLE search_dirty")
    conn.execute("DROP TABLE search_appended")
    conn.execute("DELETE FROM _migrations WHERE name >= '0003'")
    conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()

    async def read() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            assert await store.blobs.search_message_keys("message", 10) == ["c/c/m/0000000000"]
            hits = [h.snippet async for h in store.admin.search_messages("OLD mess")]
            assert hits == ["an old Message"]

    asyncio.run(read())


@pytest.mark.skipif("postgres" not in BACKENDS, reason="PostgreSQL not among the backends")
def test_existing_postgres_store_is_indexed_on_first_open(tmp_path: Path) -> None:
    """A PostgreSQL store written before the index gets it when first opened."""
    import psycopg

    url = backend_url("postgres", tmp_path)

    async def write() -> None:
        async with makers_store.open_store(url) as store:
            await store.append_message("c", "user", "an old Message")

    asyncio.run(write())
    base, schema = url.split("?schema=")
    with psycopg.connect(base, autocommit=True) as conn:  # back to how migration 1 left it
        conn.execute(f'DROP TABLE "{schema}".search_rows')
        conn.execute(f'DROP TABLE "{schema}".search_fill')
        conn.execute(f"DELETE FROM \"{schema}\"._migrations WHERE name = '0002_search_index'")

    async def read() -> None:
        async with makers_store.open_store(url) as store:
            hits = [h.snippet async for h in store.admin.search_messages("OLD mess")]
            assert hits == ["an old Message"]  # the scan, or the index if filled already
            await store.blobs.wait_for_search_fill()  # type: ignore[attr-defined]
            assert await store.blobs.search_message_keys("message", 10) == ["c/c/m/0000000000"]
            hits = [h.snippet async for h in store.admin.search_messages("OLD mess")]
            assert hits == ["an old Message"]
            check = await store.admin.check_search_index()
            assert check is not None and check.ok and check.index == "postgresql pg_trgm gin"

    asyncio.run(read())


def test_sqlite_indexes_what_waits_once_writers_pause(tmp_path: Path) -> None:
    """Appends only mark their keys; half a second without writes, the
    process indexes them (a search meanwhile reads the marked ones itself)."""

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{tmp_path}/s.db") as store:
            for n in range(3):
                await store.append_message("c", "user", f"pause number {n}")
            check = await store.admin.check_search_index()
            assert check is not None and check.pending == 3 and check.ok
            assert len([h async for h in store.admin.search_messages("PAUSE")]) == 3
            for _ in range(100):
                await asyncio.sleep(0.05)
                check = await store.admin.check_search_index()
                assert check is not None
                if check.pending == 0:
                    break
            assert check.pending == 0 and check.ok and check.messages == 3
            assert len([h async for h in store.admin.search_messages("number 1")]) == 1

    asyncio.run(main())


def _sqlite_marks(path: Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT prefix, low FROM search_appended ORDER BY prefix").fetchall()
    finally:
        conn.close()


def test_sqlite_appends_mark_their_conversation_once(tmp_path: Path) -> None:
    """An append marks its conversation's prefix with the lowest key waiting;
    the next appends find the mark and leave it (nothing written for them);
    a catch-up in small batches walks the prefix from its low key on."""
    from makers_store.emulator.sqlite import search as sqlite_search

    path = tmp_path / "s.db"

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            for n in range(5):
                await store.append_message("c", "user", f"marked {n}")
            await store.append_message("d", "user", "marked too")
            assert _sqlite_marks(path) == [
                ("c/c/m/", "c/c/m/0000000000"),
                ("c/d/m/", "c/d/m/0000000000"),
            ]
            conn = sqlite3.connect(path, isolation_level=None)
            steps = []
            for _ in range(4):
                conn.execute("BEGIN IMMEDIATE")
                taken = sqlite_search.catch_up(conn, batch=2)
                conn.execute("COMMIT")
                steps.append((taken, _sqlite_marks(path)))
                found = sqlite_search.message_keys(conn, "marked", 100)
                assert found is not None and len(found) == 6  # indexed or waiting: all
            conn.close()
            assert steps == [
                (2, [("c/c/m/", "c/c/m/0000000002"), ("c/d/m/", "c/d/m/0000000000")]),
                (2, [("c/c/m/", "c/c/m/0000000004"), ("c/d/m/", "c/d/m/0000000000")]),
                (2, []),  # the last of c and all of d
                (0, []),
            ]
            check = await store.admin.check_search_index()
            assert check is not None and check.ok and check.pending == 0 and check.messages == 6
            assert len([h async for h in store.admin.search_messages("MARKED")]) == 6

    asyncio.run(main())


def test_sqlite_a_lower_key_lowers_its_conversations_mark(tmp_path: Path) -> None:
    """A message blob created below the mark's low key (an import or a copy
    writes keys in any order) lowers it; one above leaves it; a unit marks a
    prefix once for all it creates there."""
    from makers_store.blob_ops import Put

    path = tmp_path / "s.db"

    def program() -> Any:
        for key in ("c/c/m/0000000007", "c/c/m/0000000003", "c/c/m/0000000005",
                    "c/c/g/x1/m/0000000009"):  # fmt: skip
            yield Put(key, b"[]", if_none_match=True)

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.runner.run(program, write=True)
            assert _sqlite_marks(path) == [
                ("c/c/g/x1/m/", "c/c/g/x1/m/0000000009"),
                ("c/c/m/", "c/c/m/0000000003"),
            ]

    asyncio.run(main())


def test_sqlite_finds_a_text_with_nul_once_indexed(tmp_path: Path) -> None:
    """FTS5's trigram tokenizer stops at NUL: the index keeps NUL as U+0001
    (a message "\\x00 hello" was found while waiting and lost once indexed)."""

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{tmp_path}/s.db") as store:
            await store.append_message("c", "user", "\x00 hello")
            await store.append_message("c", "user", "a\x00b\x00c")
            await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]
            hits = [h.snippet async for h in store.admin.search_messages("HELLO")]
            assert hits == ["\x00 hello"]
            hits = [h.snippet async for h in store.admin.search_messages("b\x00c")]
            assert hits == ["a\x00b\x00c"]
            check = await store.admin.check_search_index()
            assert check is not None and check.ok and check.pending == 0

    asyncio.run(main())


def test_a_store_indexed_by_migration_0003_moves_to_conversation_marks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0004 on a store left by 0003: its triggers go (the blob table
    marks what it writes), keys marked by 0003 stay waiting, and a text
    indexed with a NUL is indexed again."""
    from makers_store.emulator.sqlite import search as sqlite_search

    path = tmp_path / "s.db"

    async def write() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            await store.append_message("c", "user", "\x00 hello")
            await store.append_message("c", "user", "indexed")
            await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]

    asyncio.run(write())
    conn = sqlite3.connect(path, isolation_level=None)  # back to how 0003 left it:
    with monkeypatch.context() as patch:  # its texts (NUL kept as it was)
        patch.setattr(sqlite_search, "indexed_body", message_text_of_blob)
        sqlite_search.rebuild(conn)
    conn.execute("DROP TABLE search_appended")
    sqlite_search.create(conn)  # its triggers (the tables exist); every message dirty
    conn.execute("DELETE FROM search_dirty WHERE key = 'c/c/m/0000000000'")
    assert "\x00" in conn.execute("SELECT body FROM search_rows").fetchone()[0]
    conn.execute("DELETE FROM _migrations WHERE name >= '0004'")
    conn.execute("PRAGMA user_version = 3")
    conn.close()

    async def read() -> None:
        async with makers_store.open_store(f"sqlite:///{path}") as store:
            check = await store.admin.check_search_index()
            assert check is not None and check.ok and check.pending == 2
            await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]
            hits = [h.snippet async for h in store.admin.search_messages("HELLO")]
            assert hits == ["\x00 hello"]
            check = await store.admin.check_search_index()
            assert check is not None and check.ok and check.pending == 0  # FTS5 sound too

    asyncio.run(read())
    conn = sqlite3.connect(path)
    triggers = [name for (name,) in conn.execute("SELECT name FROM sqlite_master "
                                                 "WHERE type = 'trigger'")]  # fmt: skip
    conn.close()
    assert triggers == []


def test_only_the_blob_table_writes_blobs() -> None:
    """What the search index must catch up on is marked by the one code that
    writes SQLite blobs (emulator/sqlite/ops.py, through search.mark_created
    and search.mark_changed): no other module may (migration 0002 renames
    index entries, never message blobs, before any index exists)."""
    root = Path(__file__).parent.parent
    writes = re.compile(
        r"(UPDATE|DELETE\s+FROM|REPLACE\s+INTO|INSERT\s+(OR\s+\w+\s+)?INTO)\s+blobs\b",
        re.IGNORECASE,
    )
    found = sorted(
        str(path.relative_to(root))
        for folder in ("store", "emulator", "cli")
        for path in (root / folder).rglob("*.py")
        if writes.search(path.read_text())
    )
    assert found == ["emulator/sqlite/migrations.py", "emulator/sqlite/ops.py"]


def test_sqlite_reads_the_waiting_keys_mark_by_mark() -> None:
    """The waiting keys are read from each mark's range: the marks are the
    outer loop, never every conversation key of the store (a plain JOIN made
    the planner walk the blobs and the marks for each)."""
    from makers_store.emulator.sqlite import search as sqlite_search

    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE blobs (key TEXT PRIMARY KEY, etag TEXT NOT NULL, size INTEGER NOT NULL,"
        " updated_at INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID"
    )
    sqlite_search.create(conn)
    sqlite_search.mark_appends_by_conversation(conn)
    plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sqlite_search._APPENDED_KEYS}")]
    conn.close()
    assert plan[0] == "SCAN a" and plan[1].startswith("SEARCH b USING PRIMARY KEY"), plan


def test_sqlite_catch_up_reads_the_batch_not_the_store() -> None:
    """Each statement of a catch-up batch walks the batch's keys and looks
    each up: a plain JOIN made the planner scan every blob and every indexed
    row of the store per batch of 1,000 (249 us a message indexed at 20,000
    messages, and growing with the store; 27 us with the batch outside)."""
    from makers_store.emulator.sqlite import search as sqlite_search

    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE blobs (key TEXT PRIMARY KEY, etag TEXT NOT NULL, size INTEGER NOT NULL,"
        " updated_at INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID"
    )
    sqlite_search.create(conn)
    conn.execute("CREATE TEMP TABLE search_batch (key TEXT PRIMARY KEY)")
    statements = [
        *sqlite_search._UNINDEX_BATCH,
        sqlite_search._BATCH_BLOBS,
        *sqlite_search._INDEX_BATCH,
    ]
    for statement in statements:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
        scans = [step for step in plan if step.startswith("SCAN") and step != "SCAN d"]
        assert not scans, (statement, plan)
    conn.close()


def test_sqlite_catch_up_reads_each_waiting_message_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up computes the text of what waits, once a message: not of the
    messages indexed before, and not twice (an SQL function in an INSERT ...
    SELECT filtered on its result ran twice a row)."""
    from makers_store.emulator.sqlite import search as sqlite_search

    read: list[str] = []
    indexed_body = sqlite_search.indexed_body

    def counted(key: str, data: bytes) -> str | None:
        read.append(key)
        return indexed_body(key, data)

    async def main() -> None:
        async with makers_store.open_store(f"sqlite:///{tmp_path / 's.db'}") as store:
            for cid in ("a", "b", "c"):
                batch = [{"role": "user", "content": f"old {i}"} for i in range(400)]
                await store.append_messages(cid, batch)
            await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]
            monkeypatch.setattr(sqlite_search, "indexed_body", counted)
            for cid in ("a", "b"):
                for i in range(5):
                    await store.append_message(cid, "user", f"new {i}")
            await store.blobs.catch_up_search_index()  # type: ignore[attr-defined]
            assert sorted(read) == sorted(
                f"c/{cid}/m/{seq:010d}" for cid in ("a", "b") for seq in range(400, 405)
            )
            hits = [hit.message_id async for hit in store.admin.search_messages("new 3")]
            assert len(hits) == 2

    asyncio.run(main())


def test_sqlite_reads_a_marks_keys_from_the_mark_on() -> None:
    """The waiting keys of a mark are read from its low key, not from the
    first message key of the store: on the column itself the GLOB gave SQLite
    a lower bound of its own ('c/'), which it took instead of the mark's, and
    a search or a catch-up batch walked every message key before the mark.
    Counted in SQLite's VM steps, the same on every machine."""
    from makers_store.emulator.sqlite import search as sqlite_search

    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE blobs (key TEXT PRIMARY KEY, etag TEXT NOT NULL, size INTEGER NOT NULL,"
        " updated_at INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID"
    )
    sqlite_search.create(conn)
    sqlite_search.mark_appends_by_conversation(conn)
    before = [(f"c/a{c:03d}/m/{seq:010d}", "e", 0, 0, b"") for c in range(50) for seq in range(100)]
    conn.executemany("INSERT INTO blobs VALUES (?, ?, ?, ?, ?)", before)  # 5,000 before the mark
    marked = [(f"c/z/m/{seq:010d}", "e", 0, 0, b"") for seq in range(10)]
    conn.executemany("INSERT INTO blobs VALUES (?, ?, ?, ?, ?)", marked)
    conn.execute("INSERT INTO search_appended VALUES ('c/z/m/', 'c/z/m/0000000000')")

    def steps(query: str, params: tuple[object, ...]) -> tuple[int, list[str]]:
        counted = [0]

        def count() -> int:
            counted[0] += 1
            return 0

        conn.set_progress_handler(count, 10)
        try:
            keys = [row[0] for row in conn.execute(query, params)]
        finally:
            conn.set_progress_handler(None, 0)
        return counted[0] * 10, keys

    taken, keys = steps(sqlite_search._APPENDED_KEYS, ())
    assert keys == [key for key, *_ in marked] and taken < 1_000, taken
    taken, keys = steps(sqlite_search._MARKED_RANGE, ("c/z/m/0000000000", "c/z/m0", 1_001))
    assert keys == [key for key, *_ in marked] and taken < 1_000, taken
    conn.close()
