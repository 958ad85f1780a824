"""What a Node agent pays per ``context.store`` call: the RPC client against the Python API.

Run it from the repository root::

    .venv/bin/python tests/bench/bench_node_store.py                  # memory and SQLite stores
    .venv/bin/python tests/bench/bench_node_store.py --calls 5000 --backend sqlite

For each backend, one store is opened in this process and served on a Unix
socket by the store RPC server, exactly as a serve instance serves its Node
worker. Side by side, in one run, the same calls are timed:

- **python**: ``await store.state.get(...)``, ``state.set``, ``append_message``
  and ``get_messages(limit=20)`` on the bound Python store, one after the other;
- **node**: the same calls from a Node process through ``createContextStore``
  (``store.mjs``) over the socket, one after the other (each awaited before the
  next, as an agent's code does).

It prints the mean time per call of each and the difference: the overhead of
the Node client (JSON both ways, the socket, the RPC server's task). The RPC
server runs on this process's event loop while Node calls it, as in serve.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import makers_store  # noqa: E402
from makers_store.emulator.runtime.store_rpc import start_store_rpc  # noqa: E402

STORE_MODULE = ROOT / "emulator" / "runtime" / "node" / "store.mjs"
OPERATIONS = ("state.get", "state.set", "appendMessage", "getMessages")

NODE_SCRIPT = """
const { connect, createContextStore } = await import(process.argv[1]);
const calls = Number(process.argv[2]);
const client = connect(process.argv[3]);
const store = createContextStore(client, { conversationId: 'bench-node' });
const operations = {
  'state.get': () => store.state.get('k'),
  'state.set': (i) => store.state.set('k', { i }),
  'appendMessage': (i) => store.appendMessage({ conversationId: 'bench-node', role: 'user',
    content: `message ${i}` }),
  'getMessages': () => store.getMessages({ conversationId: 'bench-node', limit: 20 }),
};
const result = {};
for (const [name, call] of Object.entries(operations)) {
  for (let i = 0; i < 50; i++) await call(i);  // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await call(i);
  result[name] = Number(process.hrtime.bigint() - started) / 1e3 / calls;
}
client.close();
console.log(JSON.stringify(result));
"""


async def _python_timings(store: makers_store.ContextStore, calls: int) -> dict[str, float]:
    bound = store.bind("bench-python")
    operations: dict[str, Callable[[int], Awaitable[Any]]] = {
        "state.get": lambda i: bound.state.get("k"),
        "state.set": lambda i: bound.state.set("k", {"i": i}),
        "appendMessage": lambda i: bound.append_message("bench-python", "user", f"message {i}"),
        "getMessages": lambda i: bound.get_messages("bench-python", limit=20),
    }
    result: dict[str, float] = {}
    for name, call in operations.items():
        for i in range(50):
            await call(i)
        started = time.perf_counter()
        for i in range(calls):
            await call(i)
        result[name] = (time.perf_counter() - started) * 1e6 / calls
    return result


async def _node_timings(socket_path: str, calls: int) -> dict[str, float]:
    node = shutil.which("node")
    if node is None:
        raise SystemExit("node is not on PATH")
    process = await asyncio.create_subprocess_exec(
        node, "--input-type=module", "-e", NODE_SCRIPT, STORE_MODULE.as_uri(), str(calls),
        socket_path, stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"the Node client failed with code {process.returncode}")
    timings: dict[str, float] = json.loads(out)
    return timings


async def bench(backend: str, calls: int) -> dict[str, tuple[float, float]]:
    folder = tempfile.mkdtemp(prefix="bench-node-")
    url = "memory://" if backend == "memory" else f"sqlite:///{folder}/store.db"
    store = makers_store.open_store(url)
    server = await start_store_rpc(store, f"{folder}/store.sock")
    try:
        python = await _python_timings(store, calls)
        node = await _node_timings(f"{folder}/store.sock", calls)
    finally:
        await server.close()
        await store.close()
        shutil.rmtree(folder, ignore_errors=True)
    return {name: (python[name], node[name]) for name in OPERATIONS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--backend", choices=["memory", "sqlite", "both"], default="both")
    args = parser.parse_args()
    backends = ["memory", "sqlite"] if args.backend == "both" else [args.backend]
    print(f"{'backend':8} {'call':14} {'python us':>10} {'node us':>10} {'overhead us':>12}")
    for backend in backends:
        for name, (python, node) in asyncio.run(bench(backend, args.calls)).items():
            print(f"{backend:8} {name:14} {python:10.1f} {node:10.1f} {node - python:12.1f}")


if __name__ == "__main__":
    main()
