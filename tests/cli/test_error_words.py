"""Errors that say what to do (issue 23, items 5, 6, 7 and 9): one line, our
words, the right exit code, nothing written; real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import console_script, run_process, snapshot


def without_module(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process where importing ``module`` fails, as without its extra."""
    program = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from makers_store.cli.main import main\n"
        "sys.exit(main())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MAKERS_STORE_DEBUG"}
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip


def test_studio_without_its_extra_names_the_extra(url: str) -> None:
    for module in ("h11", "jinja2"):
        run = without_module(module, "studio", "--store", url, "--port", "0")
        assert run.returncode == 1, run.stderr
        assert run.stderr == (
            f"error: {module} is not installed; install it with: "
            "pip install 'makers-store[studio]'\n"
        )


def test_json_nested_thousands_deep_is_a_named_usage_error(url: str) -> None:
    deep = "[" * 5000 + "]" * 5000
    before = snapshot(url)
    for args, named in (
        (("msg", "append", "c1", "--role", "user", "--content-json", deep), "--content-json"),
        (
            ("msg", "append", "c1", "-r", "user", "--content", "x", "--meta", f"k={deep}"),
            "--meta k=",
        ),
        (("conv", "update", "c1", "--set", f"title={deep}"), "--set title="),
        (("state", "set", "c1", "k", deep), "VALUE"),
    ):
        run = run_process("--store", url, *args)
        assert run.returncode == 2, (args, run.stderr)
        assert run.stderr.startswith(f"error: {named}") and "nested" in run.stderr, run.stderr
        assert "RecursionError" not in run.stderr and run.stderr.count("\n") == 1
    run = run_process("--store", url, "msg", "append", "c1", "-r", "user", "--content-json", "-",
                      input=deep)  # fmt: skip
    assert run.returncode == 2 and "--content-json" in run.stderr
    assert snapshot(url) == before


def test_a_store_below_a_file_is_named_for_reads_and_writes(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a directory")
    store = f"{tmp_path}/afile/x.db"
    for args in (("conv", "list"), ("msg", "append", "c", "-r", "user", "--content", "hi")):
        run = run_process("--store", store, *args)
        assert run.returncode == 2, run.stderr
        assert run.stderr == (
            f"error: store {store!r} cannot be created: {str(tmp_path / 'afile')!r} is a "
            "file, not a directory\n"
        )


def test_three_slashes_and_a_relative_path_hint_at_four(tmp_path: Path) -> None:
    url = "sqlite:///tmp/x.db"  # ./tmp/x.db, where /tmp/x.db was meant
    done = subprocess.run(
        [*console_script(), "--store", url, "conv", "list"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 3
    assert "store 'tmp/x.db' not found" in done.stderr
    assert "for /tmp/x.db write sqlite:////tmp/x.db" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_values_are_in_our_words_with_did_you_mean(url: str) -> None:
    cases = {
        ("msg", "append", "c1", "--role", "usr", "--content", "x"):
            "--role must be one of user, assistant, system, tool; got 'usr' (did you mean 'user'?)",
        ("conv", "list", "--limit", "abc"): "--limit must be a whole number; got 'abc'",
        ("conv", "list", "--limit", "0"): "--limit must be at least 1; got '0'",
        ("msg", "tail", "c1", "--lines", "1000"): "--lines must be at most 100; got '1000'",
        ("msg", "tail", "c1", "--interval", "soon"): "--interval must be a number; got 'soon'",
        ("conv", "list", "--order", "dsc"):
            "--order must be one of asc, desc; got 'dsc' (did you mean 'desc'?)",
        ("conv", "lst"): "no command 'lst' in 'makers-store conv' (did you mean 'list'?)",
        ("mgs", "list"): "no command 'mgs' in 'makers-store' (did you mean 'msg'?)",
    }  # fmt: skip
    for args, words in cases.items():
        run = run_process("--store", url, *args)
        assert run.returncode == 2, (args, run.stderr)
        assert run.stderr.startswith(f"error: {words} (see 'makers-store "), run.stderr
        for pydantic in ("Value error", "Input should", "valid integer"):
            assert pydantic not in run.stderr
