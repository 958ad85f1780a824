"""The store RPC server at the wire: framing, ids, errors, extra handlers; and the
keys each generic method takes, the same in Python's signatures, the table and store.d.ts."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import makers_store
from makers_store import ContextStore
from makers_store.emulator.runtime.store_rpc import StoreRpcServer, start_store_rpc
from makers_store.emulator.runtime.store_rpc import server as server_module
from makers_store.emulator.runtime.store_rpc.calls import runs_inline
from makers_store.emulator.runtime.store_rpc.methods import GENERIC, IGNORED_USER_ID
from makers_store.emulator.runtime.store_rpc.values import decode_request, encode_reply, snake
from makers_store.errors import MemoryValidationError

from .harness import PROJECT, serving


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
        assert all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in parameters), method
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
    for char in text[text.index("{") :]:
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
    interface = text[text.index("export interface ContextStore {") :]
    for method, keys in GENERIC.items():
        declaration = next(
            line.strip()
            for line in interface.splitlines()
            if line.strip().startswith(f"{method}(") and "{" in line
        )
        declared = _object_keys(declaration)
        if "WithConversation<" in declaration:
            declared.add("conversationId")
        assert declared == set(keys), (method, declaration)


# --- how calls run: eagerly, or as tasks; the framing --------------------------------

_STEP: contextvars.ContextVar[str] = contextvars.ContextVar("step", default="none")


async def _raw_server(tmp_path: Path, table: dict[str, Any], eager: set[str]) -> Any:
    server = StoreRpcServer(table, str(tmp_path / "s.sock"), eager=eager)
    await server.start()
    return server


@pytest.mark.parametrize("eager", [True, False], ids=["eager", "task"])
async def test_a_waiting_call_holds_no_other_call(tmp_path: Path, eager: bool) -> None:
    """Calls pipelined on one connection: one that waits (here for an event the
    next call sets) leaves the others to run and answer, and finishes after
    them, in the context it began in (a variable set before the wait is reset
    after it), whether it started eagerly or as a task."""
    gate = asyncio.Event()

    async def slow(params: dict[str, Any]) -> Any:
        token = _STEP.set("slow")
        await gate.wait()
        seen = _STEP.get()
        _STEP.reset(token)  # a ValueError if the context changed across the wait
        return {"seen": seen, "current_task": asyncio.current_task() is not None}

    async def release(params: dict[str, Any]) -> Any:
        gate.set()
        return {"step": _STEP.get()}  # the slow call's variable is not this call's

    async def fail(params: dict[str, Any]) -> Any:
        raise MemoryValidationError("bad input")

    table = {"slow": slow, "release": release, "fail": fail}
    server = await _raw_server(tmp_path, table, set(table) if eager else set())
    reader, writer = await asyncio.open_unix_connection(server.path)
    writer.write(
        b'{"id": 1, "method": "slow", "params": {}}\n'
        b'{"id": 2, "method": "fail", "params": {}}\n'
        b'{"id": 3, "method": "release", "params": {}}\n'
    )
    replies = [json.loads(await reader.readline()) for _ in range(3)]
    writer.close()
    await server.close()
    assert [reply["id"] for reply in replies] == [2, 3, 1]
    assert replies[0]["error"] == {"name": "MemoryValidationError", "message": "bad input"}
    assert replies[1]["result"] == {"step": "none"}
    assert replies[2]["result"] == {"seen": "slow", "current_task": True}


async def test_an_eager_call_that_waits_is_cancelled_with_its_connection(tmp_path: Path) -> None:
    """The task a waiting eager call goes on in is the call: closing the server
    cancels it inside the handler (its ``finally`` runs), and nothing is answered."""
    started, cleaned = asyncio.Event(), asyncio.Event()

    async def hang(params: dict[str, Any]) -> Any:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.set()

    server = await _raw_server(tmp_path, {"hang": hang}, {"hang"})
    reader, writer = await asyncio.open_unix_connection(server.path)
    writer.write(b'{"id": 1, "method": "hang", "params": {}}\n')
    await started.wait()
    await server.close()
    assert cleaned.is_set()
    assert await reader.read() == b""  # closed, no answer
    writer.close()


async def test_lines_split_and_joined_across_chunks(tmp_path: Path) -> None:
    """A request line may arrive a byte at a time and several may arrive in one
    chunk: each is read whole, and answered."""

    async def echo(params: dict[str, Any]) -> Any:
        return params

    server = await _raw_server(tmp_path, {"echo": echo}, {"echo"})
    reader, writer = await asyncio.open_unix_connection(server.path)
    first = b'{"id": 1, "method": "echo", "params": {"text": "\\u00e9\\n\xc3\xa9"}}\n'
    for index in range(len(first)):
        writer.write(first[index : index + 1])
        await writer.drain()
        await asyncio.sleep(0)
    writer.write(b'{"id": 2, "method": "echo", "params": {}}\n{"id": 3, "method": "echo", "params')
    writer.write(b'": {"n": 3}}\n')
    replies = [json.loads(await reader.readline()) for _ in range(3)]
    writer.close()
    await server.close()
    assert replies == [
        {"id": 1, "result": {"text": "é\né"}},
        {"id": 2, "result": {}},
        {"id": 3, "result": {"n": 3}},
    ]


async def test_a_request_line_over_the_limit_closes_the_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_module, "MAX_LINE_BYTES", 1000)

    async def echo(params: dict[str, Any]) -> Any:
        return params

    server = await _raw_server(tmp_path, {"echo": echo}, set())
    reader, writer = await asyncio.open_unix_connection(server.path)
    writer.write(b'{"id": 1, "method": "echo", "params": {}}\n')
    assert json.loads(await reader.readline()) == {"id": 1, "result": {}}
    writer.write(b'{"id": 2, "method": "echo", "params": {"a": "' + b"x" * 2000)
    assert await reader.read() == b""  # closed, without reading the rest
    writer.close()
    await server.close()


async def test_store_methods_start_eagerly_only_on_inline_backends(tmp_path: Path) -> None:
    """The store's own methods start eagerly on memory and SQLite (they ask for
    no current task there); other backends and the runtime's other handlers
    always get a task."""
    for url, inline in (("memory://", True), (f"sqlite:///{tmp_path / 's.db'}", True)):
        async with makers_store.open_store(url) as store:
            assert runs_inline(store) is inline
            server = await start_store_rpc(store, str(tmp_path / "e.sock"), extra={"kv.x": _noop})
            assert {"appendMessage", "state.get", "langgraph.checkpointer.put"} <= server._eager
            assert "kv.x" not in server._eager and "langgraph.store.batch" not in server._eager
            await server.close()


async def _noop(params: dict[str, Any]) -> Any:
    return None


@pytest.mark.parametrize(
    "result",
    [
        {"text": 'é€😀 \n " \\ \u2028', "n": [0, -1, 2**63 - 1, 2.5, 1e-7, 1e300, True, None]},
        "lone \ud800 surrogate",  # UTF-8 cannot carry it: the line is ASCII-escaped
        {"big": 2**70},  # past 64 bits: orjson refuses, json writes it
        {1: "a key that is not a string"},
    ],
    ids=["plain", "surrogate", "big-int", "int-key"],
)
def test_lines_read_back_as_json_reads_them(result: Any) -> None:
    """Whichever JSON library encodes a line (orjson where installed), it reads
    back with the standard library as the value ``json`` would have written."""
    line = encode_reply({"id": 1, "result": result})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    expected = json.loads(json.dumps({"id": 1, "result": result}))
    assert json.loads(line) == expected
    request = json.dumps({"id": 2, "method": "m", "params": {"v": result}}).encode()
    assert decode_request(request)["params"] == json.loads(request)["params"]


def test_values_json_refuses_are_refused_alike() -> None:
    """A value neither library has a JSON form for is refused as json refuses it."""
    with pytest.raises(TypeError, match="datetime is not JSON serializable"):
        encode_reply({"id": 1, "result": datetime.now(UTC)})
    with pytest.raises(MemoryValidationError, match="not JSON"):
        decode_request(b'{"id": 1, "method": "m", "params": {"a": tru}}')


async def test_a_node_client_fails_calls_while_the_server_is_away_then_reconnects(
    tmp_path: Path,
) -> None:
    """Calls made while the socket is gone reject with ``BackendError`` (none
    hangs, none is sent later), and the next call after a server is back on the
    path connects again."""
    path = str(tmp_path / "r.sock")
    async with makers_store.open_store("memory://") as store:
        server = await start_store_rpc(store, path)
        node = await asyncio.create_subprocess_exec(
            "node",
            str(PROJECT / "reconnect.mjs"),
            cwd=PROJECT,
            env={**os.environ, "MAKERS_STORE_RPC": path},
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert node.stdin is not None and node.stdout is not None
        try:
            assert await asyncio.wait_for(node.stdout.readline(), 60) == b"set\n"
            await server.close()
            node.stdin.write(b"closed\n")
            assert await asyncio.wait_for(node.stdout.readline(), 60) == b"failed\n"
            server = await start_store_rpc(store, path)
            node.stdin.write(b"back\n")
            node.stdin.close()  # its input ends: it exits once it has answered
            out = json.loads(await asyncio.wait_for(node.stdout.readline(), 60))
            assert await asyncio.wait_for(node.wait(), 60) == 0
        finally:
            if node.returncode is None:
                node.kill()
                await node.wait()
            await server.close()
    assert out["away"] == ["BackendError", "BackendError"]
    assert out["back"] == [1, None]  # state only: no conversation record
