"""The Studio stays fast as the store grows: its pages at scale against the
same pages on a small store, side by side in one run.

One SQLite store holds ``--conversations`` conversations (100,000 by
default) and one conversation of ``--messages`` messages (10,000); a second,
small store holds 100 conversations of 50 messages. Each page is requested
in alternating rounds on both (in process, through the Studio's ASGI app, so
the figures are the server's work, not the network's) and the table prints
the median time of each, the ratio, and whether it meets the target: a page
of the large store takes at most ``TARGET_RATIO`` times its small twin
(the Studio reads pages through the store's cursors, never the whole store).

    python tests/bench/bench_studio.py [--quick] [--conversations N] [--messages N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

import makers_store
from makers_store.emulator.studio.app import StudioConfig, create_app
from makers_store.emulator.studio.security import new_token

TARGET_RATIO = 3.0
ROUNDS = 15
BIG = "big"


async def seed(url: str, conversations: int, messages: int, per_conversation: int) -> None:
    async with makers_store.open_store(url) as store:
        for n in range(conversations):
            await store.append_messages(
                f"c{n:06d}",
                [{"role": "user", "content": f"hello {n} {i}"} for i in range(per_conversation)],
                user_id=f"u{n % max(1, conversations // 50)}",  # 50 per user
            )
            if n % 10_000 == 0 and n:
                print(f"  seeded {n:,} conversations", file=sys.stderr)
        batch = 1000
        for start in range(0, messages, batch):
            size = min(batch, messages - start)
            await store.append_messages(
                BIG, [{"role": "user", "content": f"m{start + i}"} for i in range(size)]
            )


async def timed(client: httpx.AsyncClient, path: str) -> float:
    began = time.perf_counter()
    answer = await client.get(path)
    took = time.perf_counter() - began
    assert answer.status_code == 200, (path, answer.status_code, answer.text[:300])
    return took


async def measure(
    urls: dict[str, str], pages: list[tuple[str, dict[str, str]]]
) -> dict[str, list[float]]:
    """Seconds per request of each page (its path per side), in alternating rounds."""
    times: dict[str, list[float]] = {f"{side} {name}": [] for side in urls for name, _ in pages}
    stores = {side: makers_store.open_store(url) for side, url in urls.items()}
    clients = {
        side: httpx.AsyncClient(
            transport=httpx.ASGITransport(
                app=create_app(StudioConfig(store=store, token=new_token()))
            ),
            base_url="http://127.0.0.1",
        )
        for side, store in stores.items()
    }
    try:
        for _ in range(ROUNDS):  # alternating: both sides see the same machine
            for name, paths in pages:
                for side, client in clients.items():
                    times[f"{side} {name}"].append(await timed(client, paths[side]))
    finally:
        for client in clients.values():
            await client.aclose()
        for store in stores.values():
            await store.close()
    return times


def second_page(url: str) -> str:
    with makers_store.open_sync_store(url) as store:
        cursor = store.list_conversations(limit=50).next_cursor
    assert cursor is not None
    return f"/?after={cursor}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes; targets not enforced")
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=10_000)
    args = parser.parse_args(argv)
    conversations = 2_000 if args.quick else args.conversations
    messages = 1_000 if args.quick else args.messages
    with tempfile.TemporaryDirectory() as folder:
        large = f"sqlite:///{Path(folder) / 'large.db'}"
        small = f"sqlite:///{Path(folder) / 'small.db'}"
        began = time.perf_counter()
        asyncio.run(seed(large, conversations, messages, 1))
        asyncio.run(seed(small, 100, 50, 1))
        print(f"seeded in {time.perf_counter() - began:.0f} s", file=sys.stderr)
        urls = {"large": large, "small": small}

        def same(path: str) -> dict[str, str]:
            return dict.fromkeys(urls, path)

        pages = [
            ("conversation list", same("/")),
            ("list, one user", same("/?user=u1")),
            ("list, page 2", {side: second_page(url) for side, url in urls.items()}),
            ("conversation page", same(f"/conversation?id={BIG}")),
            ("older messages", same(f"/messages.part?id={BIG}&older=msg_0000000040_x")),
        ]
        times = asyncio.run(measure(urls, pages))
    print(
        f"Python {sys.version.split()[0]}; large: {conversations:,} conversations and one of "
        f"{messages:,} messages; small: 100 conversations and one of 50 messages"
    )
    header = f"{'page':<22}{'large ms':>10}{'small ms':>10}{'ratio':>8}{'target':>9}  result"
    print(header)
    print("-" * len(header))
    failed = False
    for name, _ in pages:
        big = statistics.median(times[f"large {name}"]) * 1000
        little = statistics.median(times[f"small {name}"]) * 1000
        ratio = big / little
        ok = ratio <= TARGET_RATIO
        failed |= not ok and not args.quick
        verdict = ("PASS" if ok else "FAIL") + (" (quick: not enforced)" if args.quick else "")
        target = f"<= {TARGET_RATIO}"
        print(f"{name:<22}{big:>10.1f}{little:>10.1f}{ratio:>8.2f}{target:>9}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
