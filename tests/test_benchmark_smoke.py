"""The speed benchmark (tests/bench/benchmark.py) runs end to end in --quick mode,
and its regression guard (--compare, --accept: tests/bench/bench_guard.py)
names what it should.

Speed targets are not asserted here (a shared CI machine is too noisy, and the
quick sizes are too small to mean anything); the full run enforces them. The
guard's tests run on made-up rows and tables: they check the machinery, never
a timing.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.node.harness import PROJECT, npm_ci

SCRIPT = Path(__file__).parent / "bench" / "benchmark.py"
if str(SCRIPT.parent) not in sys.path:  # the bench modules import each other by name
    sys.path.insert(0, str(SCRIPT.parent))

import bench_guard  # noqa: E402  (light: imports bench_harness only)
from bench_harness import Row  # noqa: E402

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
        timeout=900,  # Node processes, eight writer processes, a LangGraph import; a loaded CI
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


# --- the regression guard, on made-up figures ----------------------------------


def row(operation: str, ours: float, baseline: float, lower_is_better: bool = False) -> Row:
    return Row(operation, ours, "peer", baseline, None, "info", lower_is_better)


def accepted(ratio: float, lower_is_better: bool = False) -> bench_guard.Accepted:
    return bench_guard.Accepted(ratio, lower_is_better, "2026-12-05", "abc1234")


TABLE = {
    "append vs peer": accepted(0.40),
    "impossible vs peer": accepted(1000.0),  # no run reaches it
    "requests vs peer": accepted(4.0, lower_is_better=True),
    "not run today vs peer": accepted(1.0),
}
RUN = [
    row("append", 34, 100),  # 0.34: 15% below 0.40, inside the tolerance
    row("impossible", 5, 1),
    row("requests", 4.5, 1, lower_is_better=True),  # 12.5% more requests: inside
    row("brand new", 1, 1),
]


def test_the_guard_names_only_figures_more_than_20_percent_worse() -> None:
    named = bench_guard.fallen(RUN, TABLE)
    assert [verdict.name for verdict in named] == ["impossible vs peer"]
    worse = bench_guard.fallen(
        [row("append", 31, 100), row("requests", 5.1, 1, lower_is_better=True)], TABLE
    )
    assert [verdict.name for verdict in worse] == ["append vs peer", "requests vs peer"]


def test_a_figure_is_named_only_when_a_second_run_confirms_it() -> None:
    first = bench_guard.fallen([row("append", 20, 100), row("impossible", 5, 1)], TABLE)
    assert len(first) == 2
    again = [row("append", 39, 100), row("impossible", 7, 1)]  # append recovered
    kept = bench_guard.confirm(first, again)
    assert [(verdict.name, verdict.ratio) for verdict in kept] == [("impossible vs peer", 7.0)]


def test_the_report_names_fallen_missing_and_new_figures() -> None:
    named = bench_guard.fallen(RUN, TABLE)
    lines = "\n".join(bench_guard.report(RUN, TABLE, named))
    assert "impossible vs peer: 5 against 1e+03 accepted 2026-12-05 at abc1234" in lines
    assert "not measured in this run (1): not run today vs peer" in lines
    assert "not accepted yet (1): brand new vs peer" in lines
    clean = "\n".join(bench_guard.report(RUN, TABLE, []))
    assert "no figure fell more than 20% below its accepted ratio" in clean


def test_accepting_takes_medians_and_keeps_figures_not_measured(tmp_path: Path) -> None:
    runs = [[row("append", r, 100)] for r in (30, 50, 40)]
    table = bench_guard.accept(runs, TABLE, "def5678")
    assert table["append vs peer"].ratio == pytest.approx(0.40)
    assert table["append vs peer"].commit == "def5678"
    assert table["not run today vs peer"] == TABLE["not run today vs peer"]
    path = tmp_path / "accepted.json"
    bench_guard.save(table, path)
    assert bench_guard.load(path) == {
        name: bench_guard.Accepted(round(e.ratio, 4), e.lower_is_better, e.accepted, e.commit)
        for name, e in table.items()
    }


def test_the_committed_table_holds_the_issues_figures() -> None:
    """The accepted limits of issue 25 are guarded, and every entry is quick mode's."""
    table = bench_guard.load()
    names = list(table)
    assert any(n.startswith("append_message vs raw sqlite3 insert+commit") for n in names)
    assert any(n.startswith("lg store put, existing key (postgres) vs") for n in names)
    assert any(n.startswith("8 processes, add_items to one file, FULL") for n in names)
    assert all(entry.ratio > 0 for entry in table.values())


def test_compare_mode_exits_1_naming_the_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What benchmark.py --compare runs after its first quick run, on made-up rows."""
    path = tmp_path / "accepted.json"
    bench_guard.save(TABLE, path)
    assert bench_guard.run_compare(RUN, lambda: RUN, path) == 1
    out = capsys.readouterr().out
    assert "impossible vs peer" in out.split("twice:")[1]
    clean = {name: entry for name, entry in TABLE.items() if name != "impossible vs peer"}
    bench_guard.save(clean, path)

    def not_again() -> list[Row]:
        raise AssertionError("nothing fell: no second run")

    assert bench_guard.run_compare(RUN, not_again, path) == 0
    assert bench_guard.run_accept(RUN, lambda: RUN, 2, path) == 0
    assert bench_guard.load(path)["append vs peer"].ratio == pytest.approx(0.34)
