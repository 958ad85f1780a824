"""The backends every store test runs on.

``MAKERS_TEST_BACKENDS=sqlite,postgres pytest ...`` narrows (or widens) the set.
"""

from __future__ import annotations

import os
from pathlib import Path

#: memory: atomic in-process; stepwise: one operation at a time, like object
#: storage without transactions; sqlite: the file-backed default emulator;
#: postgres and s3: throwaway servers on loopback, started on first use
#: (tests/servers/).
DEFAULT_BACKENDS = ["memory", "stepwise", "sqlite", "postgres", "s3"]
BACKENDS = [
    kind.strip()
    for kind in os.environ.get("MAKERS_TEST_BACKENDS", ",".join(DEFAULT_BACKENDS)).split(",")
    if kind.strip()
]

#: the framework adapters' tests marked ``on_s3`` run on every backend, s3
#: included: the frameworks call adapters in ways the store suite does not (a
#: new event loop per call, threads with loops of their own, sync then async),
#: and those once failed on PostgreSQL and S3 alone; so do races and whatever
#: takes S3's request path (listing pages, batch deletes, key encoding).
ADAPTER_BACKENDS = BACKENDS

#: the adapters' other tests (the frameworks' conformance suites, ranking,
#: validation, crash steps: the adapters' logic over the blob operations) run
#: on every backend but s3: stepwise memory runs the same programs one
#: operation at a time with S3's semantics (no transactions, compare-and-swap,
#: no backward listing), in-process, where moto's server costs milliseconds a
#: request.
ADAPTER_LOGIC_BACKENDS = [kind for kind in BACKENDS if kind != "s3"]

#: the backends several OS processes can share
SHARED_BACKENDS = [kind for kind in BACKENDS if kind in ("sqlite", "postgres", "s3")]


def backend_url(kind: str, tmp_path: Path) -> str:
    """A URL naming a fresh, empty store of ``kind`` for one test."""
    if kind == "postgres":
        from tests.servers.postgres import postgres_url

        return postgres_url(tmp_path)
    if kind == "s3":
        from tests.servers.s3 import s3_url

        return s3_url(tmp_path)
    return {
        "memory": "memory://",
        "stepwise": "memory://?atomic=false",
        "sqlite": f"sqlite:///{tmp_path}/store.db",
    }[kind]
