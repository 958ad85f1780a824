"""Processes for the Claude session tests.

python -m tests.adapters.claude_worker bind URL CONVERSATION     (prints the session id)
python -m tests.adapters.claude_worker append URL SESSION COUNT TAG
"""

from __future__ import annotations

import asyncio
import sys

import makers_store


async def bind(url: str, cid: str) -> None:
    async with makers_store.open_store(url) as store:
        print(await store.claude_session_binding(cid))


async def append(url: str, sid: str, count: int, tag: str) -> None:
    async with makers_store.open_store(url) as store:
        sessions = store.claude_session_store()
        key = {"project_key": "proj", "session_id": sid}
        for i in range(count):
            await sessions.append(key, [{"type": "x", "uuid": f"{tag}-{i}", "n": i}])  # type: ignore[arg-type,typeddict-item]


def main(argv: list[str]) -> None:
    command, url, name = argv[:3]
    if command == "bind":
        asyncio.run(bind(url, name))
    elif command == "append":
        asyncio.run(append(url, name, int(argv[3]), argv[4]))
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
