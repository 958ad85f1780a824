"""The synchronous facade mirrors the async API, mechanically."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import makers_store
from devtools import sync_codegen as _sync_codegen
from makers_store.api.state import StateStore
from makers_store.context_store import ContextStore
from makers_store.maintenance.admin import StoreAdmin
from makers_store.sync_api import SyncContextStore, SyncStateStore, SyncStoreAdmin


def test_generated_facade_is_up_to_date() -> None:
    generated = Path(_sync_codegen.TARGET).read_text(encoding="utf-8")
    assert generated == _sync_codegen.render(), "run: python -m devtools.sync_codegen"


def test_generated_admin_methods_are_up_to_date() -> None:
    """``StoreAdmin``'s forwarding methods are generated from the maintenance
    functions they forward to (their one signature and docstring)."""
    generated = Path(_sync_codegen.ADMIN).read_text(encoding="utf-8")
    assert generated == _sync_codegen.render_admin(), "run: python -m devtools.sync_codegen"


def test_every_admin_method_is_generated_or_composes() -> None:
    """A method written by hand in ``StoreAdmin`` is one of those that compose
    more than one function or ask the backend: a new one that only forwards
    goes in ``ADMIN_FORWARDS`` instead."""
    written = {name for name in vars(StoreAdmin) if not name.startswith("_")}
    written -= set(_sync_codegen.ADMIN_FORWARDS)
    assert written == {
        "check_search_index",
        "rebuild_search_index",
        "prune_checkpoints",
        "save_snapshot",
        "vacuum",
    }


def _public(cls: type) -> dict[str, object]:
    """The public members ``cls`` defines or inherits from its own bases."""
    members: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):  # without ``object``
        members.update(vars(klass))
    return {name: member for name, member in members.items() if not name.startswith("_")}


def test_same_methods_and_signatures() -> None:
    pairs = [
        (ContextStore, SyncContextStore),
        (StateStore, SyncStateStore),
        (StoreAdmin, SyncStoreAdmin),
    ]
    for async_cls, sync_cls in pairs:
        async_members, sync_members = _public(async_cls), _public(sync_cls)
        missing = set(async_members) - set(sync_members)
        assert not missing, f"{sync_cls.__name__} lacks {sorted(missing)}"
        for name, member in async_members.items():
            if isinstance(member, property):
                assert isinstance(sync_members[name], property), name
                continue
            a, s = inspect.signature(member), inspect.signature(sync_members[name])  # type: ignore[arg-type]
            assert list(a.parameters) == list(s.parameters), name
            for param in a.parameters.values():
                twin = s.parameters[param.name]
                assert (param.kind, param.default) == (twin.kind, twin.default), (
                    f"{name}.{param.name}"
                )
            if name not in ("bind", "watch"):  # these return the blocking twins
                expected = str(a.return_annotation)
                if expected.startswith("AsyncIterator["):  # its twin: an iterator (closable)
                    item = expected.removeprefix("AsyncIterator[")[:-1]
                    expected = f"Generator[{item}, None, None]"
                assert expected == s.return_annotation, name


def test_sync_store_works_from_threads(tmp_path: Path) -> None:
    with makers_store.open_sync_store(f"sqlite:///{tmp_path}/s.db") as store:
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            try:
                for i in range(20):
                    store.append_message(conversation_id="c", role="user", content=f"{n}-{i}")
                store.bind(f"c{n}").state.set("n", n)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        meta = store.get_conversation(conversation_id="c")
        assert meta is not None and meta.message_count == 80
        assert [store.bind(f"c{n}").state.get("n") for n in range(4)] == [0, 1, 2, 3]
        page = store.get_messages(conversation_id="c", limit=100, order="desc")
        assert len(page) == 80 and store.to_openai_input(page[:1])[0]["role"] == "user"


async def test_sync_store_can_be_called_inside_an_event_loop() -> None:
    """Cloud-function code may run under a loop; the facade has its own."""
    with makers_store.open_sync_store("memory://") as store:
        store.append_message(conversation_id="c", role="user", content="x")
        assert len(store.get_messages(conversation_id="c")) == 1
