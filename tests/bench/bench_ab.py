"""The A/B that re-accepting the guard's table requires (issue 36).

A table re-accepted after a change can hide the drop the change made: the
accepted ratio is simply replaced. So the table is re-accepted only through
this script, which measures the change against the commit before it, in one
run on one machine:

    .venv/bin/python tests/bench/bench_ab.py [--against REV] [--areas a,b] [--rounds 3]
    .venv/bin/python tests/bench/bench_ab.py --accept [--note 'FIGURE PART=the change: why']

* Two checkouts, each a ``git worktree add --detach`` in a temporary folder:
  ``HEAD`` (the change; commit it first) and ``--against`` (default: the
  previous landed commit, ``git merge-base HEAD main``, or ``HEAD~1`` on main
  itself).
* Rounds in alternating order (previous, new; then new, previous; ...): in
  each round every area's benchmark runs in a fresh process of each checkout's
  own code (the package imported from that checkout), quick sizes by default.
  A figure is a row of the benchmark, ``"{operation} vs {baseline}"``; its value
  is the row's ratio (ours over the peer, side by side in one process). Each
  side's value is the median over the rounds; the spread is printed.
* A figure whose median fell more than :data:`DROP` (10%) against the
  previous commit's median in the same run is named; ``--accept`` refuses to
  write the table while one is named that no ``--note`` covers. A note is
  ``'part of the figure's name=what changed and why'``, and is written into
  the table beside the figure.
* ``--accept`` writes ``tests/bench/accepted.json``: each figure's new median,
  with the commit, the commit it was measured against and that commit's
  median, the rounds' spread, and the machine (CPU model, cores the process
  may use, load average before and after).

``benchmark.py --compare`` still checks a run against the table; this script
is the only way the table changes.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_guard import ACCEPTED, Accepted, guarded, load, save
from bench_harness import ROOT, say

#: A figure that fell more than this against the previous commit is named.
DROP = 0.10
#: Areas: ``module`` (its ``run(workdir, sizes)``) or ``module:function`` in tests/bench.
AREAS = (
    "benchmark:bench_append",
    "benchmark:bench_growth_and_read",
    "benchmark:bench_list",
    "bench_openai",
    "bench_sqlite",
    "bench_langgraph",
    "bench_langgraph_store",
    "bench_node",
    "bench_backends",
    "bench_fork",
    "bench_prune",
    "bench_postgres",
)
#: Figures not judged (by a part of their name): a maximum, not a rate.
NOT_JUDGED = ("loop stall (us)",)

#: Run in a child process: import the package from the checkout given, run
#: one area, print its rows as JSON. The checkout's pyproject says where each
#: package lives (its ``package-dir``), so a checkout from before or after a
#: module move imports its own code.
CHILD = r"""
import asyncio, importlib, importlib.abc, importlib.util, inspect, json, os, sys, tempfile
import tomllib
from pathlib import Path
root, scripts, area = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
quick = sys.argv[4] == "quick"
dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in dirs:
            init = root / dirs[name] / "__init__.py"
            return importlib.util.spec_from_file_location(
                name, init, submodule_search_locations=[str(init.parent)])
        return None
sys.meta_path.insert(0, Finder())
bench = scripts / "tests" / "bench"
sys.path.insert(0, str(bench if bench.is_dir() else scripts / "tests"))
os.chdir(scripts)
module_name, _, function = area.partition(":")
module = importlib.import_module(module_name)
import bench_harness
assert Path(module.__file__).resolve().is_relative_to(scripts.resolve()), module.__file__
import makers_store
assert Path(makers_store.__file__).resolve().is_relative_to(root.resolve()), makers_store.__file__
if module_name == "bench_node" and module.missing() is not None:
    print(json.dumps({"left out": module.missing()})); sys.exit(0)
if module_name == "bench_postgres" and module.missing_peers() is not None:
    print(json.dumps({"left out": module.missing_peers()})); sys.exit(0)
run = getattr(module, function or "run")
sizes = bench_harness.QUICK if quick else bench_harness.FULL
with tempfile.TemporaryDirectory(prefix="makers-ab-") as tmp:
    extra = [[]] if len(inspect.signature(run).parameters) == 3 else []
    rows = asyncio.run(run(Path(tmp), sizes, *extra))
print(json.dumps({"rows": [
    [f"{r.operation} vs {r.baseline}", r.ratio, r.lower_is_better] for r in rows]}))
"""


def machine() -> dict[str, object]:
    """What the figures were measured on."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "cpus": os.cpu_count(),
        "cpus usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def previous_landed() -> str:
    """The commit a change builds on: where HEAD left main, or HEAD~1 on main."""
    head = git("rev-parse", "HEAD")
    try:
        base = git("merge-base", "HEAD", "main")
    except subprocess.CalledProcessError:
        return git("rev-parse", "HEAD~1")
    return git("rev-parse", "HEAD~1") if base == head else base


@dataclass
class Figure:
    name: str
    lower_is_better: bool
    previous: list[float]
    new: list[float]

    def median(self, side: str) -> float:
        return statistics.median(self.previous if side == "previous" else self.new)

    def change(self) -> float:
        """How much better (> 0) or worse (< 0) the new median is, as a fraction."""
        before, after = self.median("previous"), self.median("new")
        if not before or not after:
            return 0.0
        return before / after - 1 if self.lower_is_better else after / before - 1

    def fell(self) -> bool:
        return self.change() < -DROP and not any(part in self.name for part in NOT_JUDGED)

    def spread(self, side: str) -> str:
        values = self.previous if side == "previous" else self.new
        return f"{min(values):.3g}-{max(values):.3g}"


def measure_side(
    root: Path, scripts: Path, area: str, quick: bool
) -> dict[str, tuple[float, bool]] | str:
    """One area's figures from a fresh process running ``scripts``' benchmark
    on ``root``'s code, or why the area was left out."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(scripts), area, "quick" if quick else "full"],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = child.communicate()
    finally:  # stopped (Ctrl-C, SIGTERM): the child stops too
        if child.poll() is None:
            child.kill()
            child.wait()
    if child.returncode != 0:
        raise RuntimeError(f"{area} at {root} failed:\n{err[-3000:]}")
    answer = json.loads(out.strip().splitlines()[-1])
    if "left out" in answer:
        return str(answer["left out"])
    return {name: (ratio, lower) for name, ratio, lower in answer["rows"]}


def ab(
    previous: Path, new: Path, areas: Sequence[str], rounds: int, quick: bool, own: bool
) -> tuple[dict[str, Figure], list[str]]:
    """Alternating rounds of both checkouts: every figure's ratios on each side.
    The benchmark is the new checkout's on both sides (the code is what
    differs), or with ``own`` each checkout's own."""
    figures: dict[str, Figure] = {}
    notes: list[str] = []
    for index in range(rounds):
        sides = [("previous", previous), ("new", new)]
        for side, root in sides if index % 2 == 0 else sides[::-1]:
            for area in areas:
                say(f"round {index + 1}/{rounds}: {area} at {side} (load {os.getloadavg()[0]:.2f})")
                found = measure_side(root, root if own else new, area, quick)
                if isinstance(found, str):
                    if index == 0 and side == "previous":
                        notes.append(f"{area} left out: {found}")
                    continue
                for name, (ratio, lower) in found.items():
                    figure = figures.setdefault(name, Figure(name, lower, [], []))
                    (figure.previous if side == "previous" else figure.new).append(ratio)
    return figures, notes


def parse_notes(notes: Sequence[str]) -> dict[str, str]:
    """``'part=why'`` notes; a note must say what changed and why, in words."""
    parsed = {}
    for note in notes:
        part, sep, why = note.partition("=")
        if not sep or not part.strip() or len(why.split()) < 4:
            raise SystemExit(
                f"--note {note!r}: write 'part of the figure's name=the change and why it "
                "costs this' (at least four words after '=')"
            )
        parsed[part.strip()] = why.strip()
    return parsed


def report(
    figures: Mapping[str, Figure], notes: Mapping[str, str], previous: str, new: str
) -> tuple[list[str], list[str]]:
    """The table of the A/B, and the figures that fell with no note covering them."""
    lines = [f"A/B: {new[:10]} (new) against {previous[:10]} (previous), medians over rounds"]
    uncovered = []
    for name in sorted(figures):
        figure = figures[name]
        if not figure.previous or not figure.new:
            lines.append(f"  {name}: measured on one side only")
            continue
        mark = ""
        if figure.fell() and not guarded(name):
            # not in the table (bench_guard.LEFT_OUT says why): shown, never blocking
            mark = f"  fell > {DROP:.0%}, not guarded"
        elif figure.fell():
            note = next((why for part, why in notes.items() if part in name), None)
            mark = f"  FELL > {DROP:.0%}" + (f" (noted: {note})" if note else "")
            if note is None:
                uncovered.append(name)
        lines.append(
            f"  {name}: {figure.median('new'):.3g} [{figure.spread('new')}] against "
            f"{figure.median('previous'):.3g} [{figure.spread('previous')}] "
            f"({figure.change():+.0%}){mark}"
        )
    return lines, uncovered


def accepted_table(
    figures: Mapping[str, Figure],
    before: Mapping[str, Accepted],
    notes: Mapping[str, str],
    previous: str,
    new: str,
    where: Mapping[str, object],
) -> dict[str, Accepted]:
    """The table after an A/B: each measured, guarded figure's new median, with
    what it was measured against, where, and the note that covers a fall."""
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    table = dict(before)
    for name, figure in figures.items():
        if not guarded(name) or not figure.previous or not figure.new:
            continue
        note = next((why for part, why in notes.items() if part in name), "")
        table[name] = Accepted(
            round(figure.median("new"), 4),
            figure.lower_is_better,
            today,
            new[:7],
            against=previous[:7],
            previous=round(figure.median("previous"), 4),
            spread=figure.spread("new"),
            rounds=len(figure.new),
            machine=json.dumps(where, sort_keys=True),
            note=note if figure.fell() else "",
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--against", help="the previous commit (default: the previous landed)")
    parser.add_argument("--areas", help=f"comma-separated, of: {', '.join(AREAS)} (default all)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--full", action="store_true", help="full sizes (default quick)")
    parser.add_argument(
        "--own-benchmark",
        action="store_true",
        help="each checkout runs its own benchmark scripts (default: the new one's on both)",
    )
    parser.add_argument("--accept", action="store_true", help="write the table unless a drop")
    parser.add_argument("--note", action="append", default=[], help="'figure part=why'")
    parser.add_argument("--accepted", type=Path, default=ACCEPTED, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    notes = parse_notes(args.note)
    areas = args.areas.split(",") if args.areas else list(AREAS)
    unknown = [area for area in areas if area not in AREAS]
    if unknown:
        parser.error(f"--areas: unknown {', '.join(unknown)}")
    if args.accept and args.full:
        parser.error("--accept measures quick mode, as --compare does")
    if args.accept and git("status", "--porcelain", "--untracked-files=no"):
        parser.error("--accept measures HEAD: commit the change first")
    new = git("rev-parse", "HEAD")
    previous = git("rev-parse", args.against or previous_landed())
    # SIGTERM (timeout, a CI's cancel) unwinds as Ctrl-C does: checkouts removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    tmp = Path(tempfile.mkdtemp(prefix="makers-ab-"))
    trees = {"previous": tmp / "previous", "new": tmp / "new"}
    try:
        for side, commit in (("previous", previous), ("new", new)):
            git("worktree", "add", "--detach", str(trees[side]), commit)
            # node_modules are not in git: the Node rows use the checkout's own
            # lock file's packages, linked from this repository where present.
            for project in ("project", "claude-project"):
                modules = ROOT / "tests" / "node" / project / "node_modules"
                target = trees[side] / "tests" / "node" / project / "node_modules"
                if modules.is_dir() and target.parent.is_dir() and not target.exists():
                    target.symlink_to(modules)
        before = machine()
        figures, left_out = ab(
            trees["previous"], trees["new"], areas, args.rounds, not args.full, args.own_benchmark
        )
        after = machine()
    finally:
        for tree in trees.values():
            if tree.exists():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
        shutil.rmtree(tmp, ignore_errors=True)
    where = {**before, "load": before["load"], "load after": after["load"]}
    lines, uncovered = report(figures, notes, previous, new)
    print(f"machine: {json.dumps(where)}")
    print("\n".join([*left_out, *lines]))
    if uncovered:
        print(
            f"{len(uncovered)} figures fell more than {DROP:.0%} against {previous[:10]}: "
            "--accept refuses unless a --note 'figure part=the change and why' names each"
        )
    if not args.accept:
        return 1 if uncovered else 0
    if uncovered:
        return 1
    table = accepted_table(figures, load(args.accepted), notes, previous, new, where)
    save(table, args.accepted)
    print(f"accepted {len(table)} figures into {args.accepted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
