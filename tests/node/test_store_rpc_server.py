"""The store RPC server at the wire: framing, ids, errors, extra handlers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import makers_store
from makers_store.emulator.runtime.store_rpc import start_store_rpc

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
