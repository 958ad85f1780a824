"""Development-time generators, run from a checkout; never part of the wheel.

- ``python -m devtools.sync_codegen`` writes ``StoreAdmin``'s forwarding methods
  from the maintenance functions, then ``store/sync_api.py`` from
  ``store/context_store.py`` and the classes it mirrors;
- ``python -m devtools.completions`` writes the shell scripts in ``completions/``;
- ``python -m devtools.cli_reference`` writes ``docs/cli-reference.md`` from the typer app;
- ``python -m devtools.api_reference`` writes ``docs/api-reference.md`` from the docstrings.

They live outside the three folders setuptools maps onto ``makers_store``
(``store/``, ``emulator/``, ``cli/``), so no installed copy of them exists to
run, and they find what they read and write from their own place in the
checkout, never from the installed package: nothing they do can write into
site-packages. :func:`checked_target` refuses a target there all the same.
"""

from __future__ import annotations

import argparse
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

#: The checkout this folder is part of.
ROOT = Path(__file__).resolve().parent.parent


def checkout_root() -> Path:
    """:data:`ROOT`, after checking that it is a makers-store checkout."""
    api = ROOT / "store" / "context_store.py"
    if not (ROOT / "pyproject.toml").is_file() or not api.is_file():
        raise SystemExit(f"{ROOT} is not a makers-store checkout; run the generators from one")
    return ROOT


def checked_target(path: Path) -> Path:
    """``path``, resolved; SystemExit if it lies in an installation's site-packages."""
    resolved = path.resolve()
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    for directory in installed:
        if resolved.is_relative_to(Path(directory).resolve()):
            raise SystemExit(f"refusing to write {resolved}: it is inside {directory}")
    return resolved


def page_is_stale(target: Path, text: str) -> bool:
    """Whether the page ``target`` is missing or differs from ``text``."""
    return not target.is_file() or target.read_text(encoding="utf-8") != text


def page_main(
    argv: list[str] | None, *, prog: str, description: str, page: str, render: Callable[[], str]
) -> int:
    """The command line of a generator of one docs page (``docs/{page}``):
    write it, or with ``--check`` only say whether it is stale (exit 1)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    default = f"Default: the checkout's docs/{page}."
    parser.add_argument("target", nargs="?", type=Path, help=default)
    parser.add_argument("--check", action="store_true", help="Only report whether it is stale.")
    args = parser.parse_args(argv)
    target: Path = args.target or checkout_root() / "docs" / page
    text = render()
    if args.check:
        if page_is_stale(target, text):
            print(f"stale: {target}", file=sys.stderr)
            return 1
        return 0
    target = checked_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0
