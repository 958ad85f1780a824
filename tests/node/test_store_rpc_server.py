"""The store RPC server at the wire: framing, ids, errors, extra handlers; and the
keys each generic method takes, the same in Python's signatures, the table and store.d.ts."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import makers_store
from makers_store import ContextStore
from makers_store.emulator.runtime.store_rpc import start_store_rpc
from makers_store.emulator.runtime.store_rpc.methods import GENERIC, IGNORED_USER_ID
from makers_store.emulator.runtime.store_rpc.values import snake

from .harness import serving


async def _exchange(path: str, lines: list[bytes]) -> list[dict[str, Any]]:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"".join(lines))  # all sent before any answer is read
    await writer.drain()
    replies = [json.loads(await reader.readline()) for _ in lines]
    writer.close()
    return replies


async def test_pipelined_requests_answer_by_id_with_named_errors() -> None:
    async with makers_store.open_store("memory://") as store, serving(store) as path:
        replies = await _exchange(
            path,
            [
                b'{"id": 1, "method": "appendMessage", "params": '
                b'{"conversationId": "c", "role": "user", "content": "hi"}}\n',
                b'{"id": 2, "method": "getMessages", "params": '
                b'{"conversationId": "c", "limit": 0}}\n',
                b'{"id": 3, "method": "noSuchMethod", "params": {}}\n',
                b"not json\n",
                b'{"id": 5, "method": "state.get", "params": '
                b'{"key": "k", "$bind": {"conversationId": "c"}}}\n',
            ],
        )
    by_id = {reply["id"]: reply for reply in replies}
    assert by_id[1]["result"].startswith("msg_")
    assert by_id[2]["error"] == {
        "name": "MemoryValidationError",
        "message": "limit must be between 1 and 100, got 0",
    }
    assert by_id[3]["error"]["message"] == "unknown store method 'noSuchMethod'"
    assert by_id[None]["error"]["name"] == "MemoryValidationError"  # the unreadable line
    assert by_id[5] == {"id": 5, "result": None}


async def test_extra_handlers_and_close(tmp_path: Path) -> None:
    async def echo(params: dict[str, Any]) -> Any:
        return {"echo": params}

    path = str(tmp_path / "s.sock")
    async with makers_store.open_store("memory://") as store:
        server = await start_store_rpc(store, path, extra={"kv.echo": echo})
        replies = await _exchange(path, [b'{"id": 7, "method": "kv.echo", "params": {"a": 1}}\n'])
        await server.close()
    assert replies == [{"id": 7, "result": {"echo": {"a": 1}}}]
    assert not Path(path).exists()  # noqa: ASYNC240 (one stat, after the server closed)


STORE_TYPES = Path(__file__).resolve().parents[2] / "emulator" / "runtime" / "node" / "store.d.ts"


def test_each_generic_method_takes_its_python_methods_parameters() -> None:
    """The table is read from ``store/api.py``'s signatures: every parameter is
    one a keyword can pass, and each Node key leads back to it (``snake``, as
    the handler converts them), so nothing a Python caller can pass is out of
    reach from Node, and nothing else is passed on."""
    for method, keys in GENERIC.items():
        python = getattr(ContextStore, snake(method))
        assert inspect.iscoroutinefunction(python), method
        parameters = list(inspect.signature(python).parameters.values())[1:]
        assert all(
            p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters
        ), method
        ignored = ("userId",) if method in IGNORED_USER_ID else ()
        assert [snake(key) for key in keys if key not in ignored] == [p.name for p in parameters]
        assert len(set(keys)) == len(keys), method


def test_an_ignored_user_id_is_one_python_does_not_take() -> None:
    """``userId`` is dropped only where the Python method has no ``user_id``: were
    one added there, it must be passed on, not dropped (then leave the list)."""
    for method in IGNORED_USER_ID:
        python = getattr(ContextStore, snake(method))
        assert "user_id" not in inspect.signature(python).parameters, method


def _object_keys(text: str) -> set[str]:
    """The keys at the top level of the first ``{...}`` type literal in ``text``."""
    depth, token, keys = 0, "", set()
    for char in text[text.index("{"):]:
        if char in "{[(<":
            depth += 1
        elif char in "}])>":
            depth -= 1
            if depth == 0:
                break
        if depth != 1:
            continue
        if char.isalnum() or char == "_":
            token += char
        elif char == ":" and token:
            keys.add(token)
            token = ""
        elif char != "?":
            token = ""
    return keys


def test_store_d_ts_declares_the_keys_each_generic_method_takes() -> None:
    """The TypeScript declarations Node agents are checked against name the same
    keys as the table (``conversationId`` through ``WithConversation``)."""
    text = STORE_TYPES.read_text(encoding="utf-8")
    interface = text[text.index("export interface ContextStore {"):]
    for method, keys in GENERIC.items():
        declaration = next(
            line.strip() for line in interface.splitlines()
            if line.strip().startswith(f"{method}(") and "{" in line
        )
        declared = _object_keys(declaration)
        if "WithConversation<" in declaration:
            declared.add("conversationId")
        assert declared == set(keys), (method, declaration)
