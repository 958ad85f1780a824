"""Every command has help and is in the README's cheat sheet and the CLI
reference; completion scripts are current and actually complete."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import typer.main

from devtools import completions
from makers_store.cli.main import app
from tests.cli.conftest import REPO


def command_paths(command: Any, path: str = "") -> list[tuple[str, Any]]:
    found = [(path, command)] if path else []
    for name, sub in getattr(command, "commands", {}).items():
        found += command_paths(sub, f"{path} {name}".strip())
    return found


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    reference = (REPO / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    paths = command_paths(typer.main.get_command(app))
    names = {path for path, _ in paths}
    for expected in ("info", "conv list", "msg tail", "state get", "index rebuild", "export"):
        assert expected in names
    for path, command in paths:
        assert (command.help or "").strip(), f"'{path}' has no help text"
        if not hasattr(command, "commands"):
            assert f"makers-store {path}" in readme, f"'makers-store {path}' is not in README.md"
        assert f"## makers-store {path}\n" in reference, f"'{path}' is not in cli-reference.md"
        for param in command.params:
            if not getattr(param, "hidden", False) and param.param_type_name == "option":
                assert (getattr(param, "help", None) or "").strip(), f"{path} {param.opts}"


def test_completion_scripts_are_current() -> None:
    stale = completions.stale(REPO / "completions")
    assert not stale, f"stale completion scripts {stale}: run python -m devtools.completions"
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtools.completions",
            "--check",
            str(REPO / "completions"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=REPO,
    )
    assert check.returncode == 0, check.stderr


def test_a_changed_command_makes_them_stale(tmp_path: Any) -> None:
    assert completions.main([str(tmp_path)]) == 0
    assert completions.stale(tmp_path) == []
    bash = tmp_path / completions.FILES["bash"]
    bash.write_text(bash.read_text().replace("rebuild", "rebuilt"))
    assert completions.stale(tmp_path) == [completions.FILES["bash"]]
    assert completions.main(["--check", str(tmp_path)]) == 1


def complete_bash(*words: str) -> list[str]:
    script = REPO / "completions" / completions.FILES["bash"]
    quoted = " ".join(f"'{word}'" for word in words)
    program = (
        f"source '{script}'\n"
        f"COMP_WORDS=(makers-store {quoted})\n"
        "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
        "_makers_store\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    result = subprocess.run(
        ["bash", "-c", program], capture_output=True, text=True, check=True, timeout=30
    )
    return result.stdout.split()


def test_bash_completion_completes_commands_options_and_values() -> None:
    assert "conv" in complete_bash("") and "msg" in complete_bash("")
    assert sorted(complete_bash("co")) == ["conv", "copy"]
    assert complete_bash("--store", "x.db", "msg", "ta") == ["tail"]
    assert complete_bash("conv", "list", "--order", "") == ["asc", "desc"]
    assert "--follow" in complete_bash("msg", "tail", "c1", "--f")
    assert complete_bash("msg", "append", "c1", "--role", "a") == ["assistant"]


def test_the_cli_page_mentions_and_links_every_lifecycle_command() -> None:
    """docs/cli.md names the lifecycle commands and the Studio's actions and
    links their sections in lifecycle.md (issue 32)."""
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for command, anchor in [
        ("prune", "retention"),
        ("vacuum", "vacuum-giving-back-the-space-deletes-leave"),
        ("doctor", "history-doctor"),
        ("conv fork", "fork"),
        ("conv window", "the-context-window-summary-plus-the-latest-messages"),
        ("conv summarize", "the-context-window-summary-plus-the-latest-messages"),
    ]:
        assert f"$ makers-store {command}" in page, command
        assert f"(lifecycle.md#{anchor})" in page, anchor
    assert '"Check history"' in page and '"Fork here"' in page
    lifecycle = (REPO / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    for heading in ("## Retention", "## Vacuum: giving back the space deletes leave", "## Fork",
                    "## The context window: summary plus the latest messages",
                    "## History doctor"):  # fmt: skip
        assert f"\n{heading}\n" in lifecycle, heading
