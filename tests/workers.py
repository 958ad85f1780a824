"""Writer processes for the multi-process and crash tests.

python -m tests.workers append URL CONVERSATION COUNT TAG [USER]
python -m tests.workers spread URL PREFIX CONVERSATIONS COUNT TAG USER
python -m tests.workers forever URL CONVERSATION      (prints each acknowledged append)
python -m tests.workers read-forever URL CONVERSATION COUNT
    (reads its COUNT messages in a loop: "ok START END" per read, "bad ..." on a change)
python -m tests.workers fork-many URL SOURCE PREFIX COUNT  (one JSON line per id forked)
python -m tests.workers fork-forever URL SOURCE PREFIX     (prints each finished fork)
python -m tests.workers touch URL PREFIX CONVERSATIONS COUNT SEED
    (appends COUNT messages "late" to random conversations PREFIX0..; prints
     each conversation id once its append is acknowledged)
python -m tests.workers prune URL IDLE_SECONDS
    (prints "ready", then runs store.admin.prune_conversations and prints
     the conversations deleted so far after each unit of work)
python -m tests.workers churn URL CONVERSATION PAUSE
    (forever: appends a message, then deletes the one it appended before;
     prints "ready" after the first append and one line per delete; PAUSE
     seconds between rounds)
python -m tests.workers batches URL CONVERSATION TAG
    (forever: append_messages of [TAG-i-a (a caller id), a generated id,
     TAG-i-b (a caller id)], printing i once each is acknowledged)
python -m tests.workers same-ids URL CONVERSATION COUNT TAG START
    (appends ids same-0 .. same-{COUNT-1} from START, a time.time(), on: an
     even one with the content every writer gives it, an odd one with this
     writer's own, and a generated-id message after each; prints one JSON
     line per id: {"id", "outcome": "ok" | "conflict"})
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import makers_store


async def append(url: str, cid: str, count: int, tag: str, user: str | None) -> None:
    async with makers_store.open_store(url) as store:
        for i in range(count):
            await store.append_message(
                conversation_id=cid, role="user", content=f"{tag}-{i}", user_id=user
            )


async def spread(
    url: str, prefix: str, conversations: int, count: int, tag: str, user: str
) -> None:
    async with makers_store.open_store(url) as store:
        for i in range(count):
            cid = f"{prefix}{i % conversations}"
            await store.append_message(
                conversation_id=cid, role="user", content=f"{tag}-{i}", user_id=user
            )


async def forever(url: str, cid: str) -> None:
    async with makers_store.open_store(url) as store:
        i = 0
        while True:
            await store.append_message(
                conversation_id=cid,
                role="assistant",
                content={"n": i, "pad": "x" * (i % 7) * 1000},
                metadata={"n": i},
                user_id="u",
            )
            print(i, flush=True)
            i += 1


async def same_ids(url: str, cid: str, count: int, tag: str, start: float) -> None:
    async with makers_store.open_store(url) as store:
        await asyncio.sleep(max(0.0, start - time.time()))  # every writer at once
        for i in range(count):
            mid = f"same-{i}"
            content = f"shared-{i}" if i % 2 == 0 else f"{tag}-{i}"
            try:
                got = await store.append_message(cid, "user", content, message_id=mid)
                assert got == mid, got
                outcome = "ok"
            except makers_store.MemoryConflictError as exc:
                assert mid in str(exc), exc
                outcome = "conflict"
            print(json.dumps({"id": mid, "outcome": outcome}), flush=True)
            await store.append_message(cid, "assistant", f"{tag}-gen-{i}")


async def touch(url: str, prefix: str, conversations: int, count: int, seed: int) -> None:
    import random

    rng = random.Random(seed)
    async with makers_store.open_store(url) as store:
        for _ in range(count):
            cid = f"{prefix}{rng.randrange(conversations)}"
            await store.append_message(cid, "user", "late")
            print(cid, flush=True)


async def prune(url: str, idle_seconds: float) -> None:
    from datetime import timedelta

    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        print(done, flush=True)

    async with makers_store.open_store(url) as store:
        await store.admin.count_conversations()  # connected: the prune starts now
        print("ready", flush=True)
        await store.admin.prune_conversations(
            timedelta(seconds=idle_seconds), on_conversation=progress
        )
    print("done", flush=True)


async def fork_many(url: str, source: str, prefix: str, count: int) -> None:
    """Fork ``source`` into PREFIX0 .. PREFIX{COUNT-1}; one JSON line per id:
    {"id", "outcome": "ok" | "conflict"} (several processes race for each id)."""
    async with makers_store.open_store(url) as store:
        for i in range(count):
            new = f"{prefix}{i}"
            try:
                await store.fork_conversation(source, new)
                outcome = "ok"
            except makers_store.MemoryConflictError:
                outcome = "conflict"
            print(json.dumps({"id": new, "outcome": outcome}), flush=True)


async def fork_forever(url: str, source: str, prefix: str) -> None:
    """Fork ``source`` into PREFIX0, PREFIX1, ... printing each id forked
    (a kill then lands in the middle of the next fork)."""
    async with makers_store.open_store(url) as store:
        i = 0
        while True:
            await store.fork_conversation(source, f"{prefix}{i}")
            print(i, flush=True)
            i += 1


async def batches(url: str, cid: str, tag: str) -> None:
    async with makers_store.open_store(url) as store:
        i = 0
        while True:
            await store.append_messages(
                cid,
                [
                    {"role": "user", "content": f"{tag}-{i}", "message_id": f"{tag}-{i}-a"},
                    {"role": "assistant", "content": f"{tag}-{i}"},
                    {"role": "tool", "content": f"{tag}-{i}", "message_id": f"{tag}-{i}-b"},
                ],
            )
            print(i, flush=True)
            i += 1


async def churn(url: str, cid: str, pause: float) -> None:
    """Append to ``cid`` and delete the message appended the round before,
    forever: a source that keeps changing after any cut taken before it started."""
    async with makers_store.open_store(url) as store:
        previous = await store.append_message(cid, "assistant", "churn")
        print("ready", flush=True)
        while True:
            latest = await store.append_message(cid, "assistant", "churn")
            await store.delete_message(cid, previous)
            previous = latest
            print("deleted", flush=True)
            await asyncio.sleep(pause)


def read_forever(url: str, cid: str, count: int) -> None:
    """Read the conversation's ``count`` messages again and again, each read
    its own unit of work; print ``ok START END`` (time.time()) per read, or
    ``bad ...`` and exit 1 at the first read that differs from the first."""
    with makers_store.open_sync_store(url) as store:
        first = [m.to_dict() for m in store.get_messages(cid, limit=count)]
        if len(first) != count:
            print(f"bad: {len(first)} messages, not {count}", flush=True)
            raise SystemExit(1)
        print("ready", flush=True)
        while True:
            start = time.time()
            page = [m.to_dict() for m in store.get_messages(cid, limit=count)]
            if page != first:
                print(f"bad: read {len(page)} messages that differ", flush=True)
                raise SystemExit(1)
            print(f"ok {start} {time.time()}", flush=True)


def main(argv: list[str]) -> None:
    command, url, *rest = argv
    if command == "append":
        asyncio.run(append(url, rest[0], int(rest[1]), rest[2], rest[3] if len(rest) > 3 else None))
    elif command == "spread":
        asyncio.run(spread(url, rest[0], int(rest[1]), int(rest[2]), rest[3], rest[4]))
    elif command == "same-ids":
        asyncio.run(same_ids(url, rest[0], int(rest[1]), rest[2], float(rest[3])))
    elif command == "touch":
        asyncio.run(touch(url, rest[0], int(rest[1]), int(rest[2]), int(rest[3])))
    elif command == "prune":
        asyncio.run(prune(url, float(rest[0])))
    elif command == "fork-many":
        asyncio.run(fork_many(url, rest[0], rest[1], int(rest[2])))
    elif command == "fork-forever":
        asyncio.run(fork_forever(url, rest[0], rest[1]))
    elif command == "batches":
        asyncio.run(batches(url, rest[0], rest[1]))
    elif command == "churn":
        asyncio.run(churn(url, rest[0], float(rest[1])))
    elif command == "forever":
        asyncio.run(forever(url, rest[0]))
    elif command == "read-forever":
        read_forever(url, rest[0], int(rest[1]))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv[1:])
