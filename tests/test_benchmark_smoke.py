"""The speed benchmark (tests/bench/benchmark.py) runs end to end in --quick mode.

Speed targets are not asserted here (a shared CI machine is too noisy, and the
quick sizes are too small to mean anything); the full run enforces them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.node.harness import PROJECT, npm_ci

SCRIPT = Path(__file__).parent / "bench" / "benchmark.py"
# (operation, baseline) of each table row, in order, at the --quick sizes.
ROWS = [
    ("append_message", "SQLiteSession.add_items"),
    ("append_message", "raw sqlite3 insert+commit"),
    ("append_message", "raw, each op in a worker thread"),
    ("append #111-120 (per append)", "append #6-15 of new convs"),
    ("get_messages(50, desc) of 120", "SQLiteSession.get_items(50) of 120"),
    ("list_conversations(user_id, 20) of 400", "same call among 60"),
    ("list_conversations(20) of 400", "same call among 60"),
]
# The Node rows (tests/bench/bench_node.py), in order, wherever they stand in the table.
NODE_ROWS = [
    ("Node appendMessage", "Python append_message"),
    ("Node appendMessage", "raw better-sqlite3 insert (Node)"),
    ("Node getMessages({limit: 50}) of 120", "Python get_messages(limit=50)"),
    ("Node getMessages({limit: 50}) of 120", "raw better-sqlite3 select 50 (Node)"),
    ("Node langgraphCheckpointer.put", "SqliteSaver.put"),
    ("Node langgraphCheckpointer.getTuple", "SqliteSaver.getTuple (latest)"),
    ("Node langgraphCheckpointer.list(10 of 50)", "SqliteSaver.list"),
]


def test_quick_benchmark_prints_the_table(tmp_path: Path) -> None:
    node = shutil.which("node") is not None
    if node:
        npm_ci(PROJECT)  # the Node rows' npm packages, as tests/node installs them
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,  # the Node rows start two Node processes and a LangGraph import
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"Python 3\.\d+\.\d+ .*SQLite 3\.\d+\.\d+", out), out
    header = next(line for line in out.splitlines() if line.startswith("operation"))
    for column in ("ours ops/s", "baseline ops/s", "ratio", "target", "result"):
        assert column in header
    lines = out.splitlines()
    start = lines.index(header) + 2  # past the header and its rule
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start : start + len(ROWS)]]
    assert [(row[0], row[2]) for row in rows] == ROWS, out
    node_rows = [re.split(r"\s{2,}", line) for line in lines[start:] if line.startswith("Node ")]
    assert [(row[0], row[2]) for row in node_rows] == (NODE_ROWS if node else []), out
    if node:
        assert re.search(r"SqliteSaver WAL, synchronous=NORMAL", out), out
    for row in rows + node_rows:
        assert len(row) == 7, row
        ours, baseline, ratio = (float(row[i].replace(",", "")) for i in (1, 3, 4))
        assert ours > 0 and baseline > 0, row
        assert abs(ratio - ours / baseline) <= 0.01 * ratio + 0.01, row
        assert re.fullmatch(r"(PASS|FAIL) \(quick: not enforced\)|-", row[6]), row
    assert "quick mode" in out
    # The temporary databases are removed afterwards.
    assert list(tmp_path.iterdir()) == []
