"""The backends every store test runs on."""

from __future__ import annotations

from pathlib import Path

#: memory: atomic in-process; stepwise: one operation at a time, like object
#: storage without transactions; sqlite: the file-backed default emulator.
BACKENDS = ["memory", "stepwise", "sqlite"]


def backend_url(kind: str, tmp_path: Path) -> str:
    return {
        "memory": "memory://",
        "stepwise": "memory://?atomic=false",
        "sqlite": f"sqlite:///{tmp_path}/store.db",
    }[kind]
