"""The speed benchmark (tests/bench/benchmark.py) runs end to end in --smoke mode
(--quick's data and code paths, each contender timed for a couple of calls: every
area runs and prints its rows in about a minute instead of --quick's three), and
its regression guard (--compare: tests/bench/bench_guard.py; the A/B that
re-accepting needs: tests/bench/bench_ab.py) names what it should.

Speed targets are not asserted here (a shared CI machine is too noisy, and the
smoke sizes are too small to mean anything); the full run enforces them. The
guard's tests run on made-up rows and tables: they check the machinery, never
a timing.
"""

from __future__ import annotations

import json
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

import bench_ab  # noqa: E402  (light: imports bench_guard and bench_harness only)
import bench_guard  # noqa: E402  (light: imports bench_harness only)
from bench_harness import Row  # noqa: E402

# (operation, baseline) of each table row, in order, at the --smoke sizes (--quick's data).
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


def test_smoke_benchmark_prints_the_table(tmp_path: Path) -> None:
    node = shutil.which("node") is not None
    if node:
        npm_ci(PROJECT)  # the Node rows' npm packages, as tests/node installs them
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,  # Node processes, writer processes, a LangGraph import; a loaded CI
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
        assert re.fullmatch(r"(PASS|FAIL) \(smoke: not enforced\)|-", row[6]), row
    assert "smoke mode" in out
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


def figure(name: str, previous: list[float], new: list[float]) -> bench_ab.Figure:
    return bench_ab.Figure(name, False, previous, new)


AB = {
    "append vs peer": figure("append vs peer", [0.40, 0.42, 0.38], [0.41, 0.39, 0.40]),
    "fell vs peer": figure("fell vs peer", [2.0, 2.2, 1.9], [1.7, 1.8, 1.75]),  # -12%
    "requests vs peer": bench_ab.Figure("requests vs peer", True, [4.0] * 3, [4.0] * 3),
}


def test_the_ab_names_a_figure_that_fell_more_than_10_percent() -> None:
    lines, uncovered = bench_ab.report(AB, {}, "a" * 40, "b" * 40)
    assert uncovered == ["fell vs peer"]
    text = "\n".join(lines)
    assert "fell vs peer: 1.75 [1.7-1.8] against 2 [1.9-2.2] (-12%)  FELL > 10%" in text
    assert "append vs peer: 0.4 [0.39-0.41] against 0.4 [0.38-0.42] (+0%)" in text
    # Counts: more requests per call is worse.
    more = {"r vs peer": bench_ab.Figure("r vs peer", True, [4.0] * 3, [5.0] * 3)}
    assert bench_ab.report(more, {}, "a", "b")[1] == ["r vs peer"]


def test_a_figure_the_guard_leaves_out_never_blocks_accepting() -> None:
    """A left-out figure (bench_guard.LEFT_OUT) is not written into the table,
    so its fall is shown and needs no note."""
    name = "append_message vs SQLiteSession.add_items"
    assert not bench_guard.guarded(name)
    fell = {name: figure(name, [4.0] * 3, [2.0] * 3)}
    lines, uncovered = bench_ab.report(fell, {}, "a" * 40, "b" * 40)
    assert uncovered == [] and "fell > 10%, not guarded" in "\n".join(lines)


def test_accepting_over_a_fall_needs_a_note_naming_the_change_and_why() -> None:
    with pytest.raises(SystemExit):
        bench_ab.parse_notes(["fell=slower"])  # no reason given
    with pytest.raises(SystemExit):
        bench_ab.parse_notes(["no equals sign given here at all"])
    notes = bench_ab.parse_notes(["fell vs=abc123 reads meta twice for the lifecycle stamp"])
    lines, uncovered = bench_ab.report(AB, notes, "a" * 40, "b" * 40)
    assert uncovered == []
    assert "(noted: abc123 reads meta twice for the lifecycle stamp)" in "\n".join(lines)


def test_the_accepted_table_records_commit_previous_and_machine(tmp_path: Path) -> None:
    """What bench_ab.py --accept writes: each figure's new median with the
    commit, the commit and median it was measured against, and the machine;
    figures the A/B did not measure keep their entry."""
    where = bench_ab.machine()
    assert where["cpus"] and where["cpu"] and str(where["load"]).count(",") == 2
    notes = {"fell": "abc123 reads meta twice for the lifecycle stamp"}
    table = bench_ab.accepted_table(AB, TABLE, notes, "c" * 40, "d" * 40, where)
    entry = table["fell vs peer"]
    assert (entry.ratio, entry.commit, entry.against, entry.previous) == (
        1.75,
        "ddddddd",
        "ccccccc",
        2.0,
    )
    assert entry.note == notes["fell"] and entry.spread == "1.7-1.8" and entry.rounds == 3
    assert json.loads(entry.machine)["cpu"] == where["cpu"]
    assert table["append vs peer"].note == ""  # did not fall: no note kept
    assert table["not run today vs peer"] == TABLE["not run today vs peer"]
    path = tmp_path / "accepted.json"
    bench_guard.save(table, path)
    assert bench_guard.load(path) == table


def test_benchmark_accept_refuses_without_the_ab() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--accept"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "bench_ab.py --accept" in done.stderr


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
