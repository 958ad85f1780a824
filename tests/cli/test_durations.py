"""One reader of durations for every option that takes one (issue 32, item 1;
issue 35, item 6), run as a user runs it: the installed ``makers-store`` in
a subprocess, its output through pipes. ``m`` alone is refused naming ``min``
and ``mo``; huge values are usage errors naming the option, never a crash;
the prune plan says its cutoff as a date and time."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import makers_store
from makers_store.clock import FixedClock
from tests.cli.conftest import make_store, run_process


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = make_store(f"sqlite:///{tmp_path}/s.db")
    with makers_store.open_sync_store(url, clock=FixedClock()) as old:  # 2023
        old.append_message("old", "user", "a")
    with makers_store.open_sync_store(url) as now:
        now.append_message("fresh", "user", "b")
    return url


#: What each refused value is told (after ``error: OPTION 'VALUE'``).
REFUSED = {
    "6m": ": 'm' could mean minutes or months; write min for minutes (6min) or mo for "
    "months of 30 days (6mo)",
    "9999999999d": " is too long: at most 36500d (100 years)",
    "99999999999999w": " is too long: at most 36500d (100 years)",
    "5fortnights": ": unknown unit 'fortnights'; a duration is a number and one of s, min, "
    "h, d, w, mo (45s, 90min, 12h, 30d, 2w, 6mo)",
}


@pytest.mark.parametrize(
    ("args", "values"),
    [
        (["prune", "--idle-for", "{}", "--yes"], list(REFUSED)),
        (["conv", "list", "--since", "{}"], ["6m"]),
        (["msg", "list", "fresh", "--until", "{}"], ["9999999999d"]),
        (["msg", "search", "a", "--since", "{}"], ["99999999999999w"]),
        (["export", "--until", "{}"], ["6m"]),
    ],
    ids=["prune", "conv-list", "msg-list", "msg-search", "export"],
)
def test_every_duration_option_refuses_m_and_huge_values(
    url: str, args: list[str], values: list[str]
) -> None:
    option = next(arg for arg in args if arg.startswith("--") and arg != "--yes")
    for value in values:
        run = run_process("--store", url, *(value if a == "{}" else a for a in args))
        assert run.returncode == 2, (value, run.stdout, run.stderr)
        assert run.stderr == f"error: {option} {value!r}{REFUSED[value]}\n"
        assert run.stdout == ""
    with makers_store.open_sync_store(url) as store:
        assert {c.conversation_id for c in store.iter_conversations()} == {"old", "fresh"}


def test_min_is_a_minute_and_mo_a_month_and_the_plan_says_the_cutoff(url: str) -> None:
    for value, spoken, back in [
        ("6min", "6 minutes", timedelta(minutes=6)),
        ("6mo", "180 days", timedelta(days=180)),
        ("30 days", "30 days", timedelta(days=30)),
        ("1.5h", "90 minutes", timedelta(minutes=90)),
    ]:
        before = datetime.now().astimezone()
        run = run_process("--store", url, "prune", "--idle-for", value, "--dry-run")
        assert run.returncode == 0, run.stderr
        first = run.stdout.splitlines()[0]
        found = re.fullmatch(
            rf"would delete 1 conversation idle since (\S+ \S+) \({spoken} ago\) or longer, "
            r"with 1 message",
            first,
        )
        assert found, first
        shape = "%Y-%m-%d %H:%M:%S" if back < timedelta(hours=1) else "%Y-%m-%d %H:%M"
        cutoff = datetime.strptime(found.group(1), shape).astimezone()
        assert abs(cutoff - (before - back)) < timedelta(minutes=1, seconds=30), (value, first)
        assert run.stdout.splitlines()[1:] == ["old"]
    plan = json.loads(
        run_process("--store", url, "prune", "--idle-for", "6mo", "--dry-run", "--json").stdout
    )
    age = datetime.now().timestamp() * 1000 - plan["cutoff"]
    assert abs(age - 180 * 86_400_000) < 60_000
    kept = run_process("--store", url, "msg", "list", "fresh", "--since", "6min", "--json")
    assert [m["content"] for m in json.loads(kept.stdout)["items"]] == ["b"]


def test_tail_interval_is_bounded(url: str) -> None:
    run = run_process("--store", url, "msg", "tail", "fresh", "--follow", "--interval", "1e300")
    assert run.returncode == 2 and "--interval" in run.stderr and "3600" in run.stderr
