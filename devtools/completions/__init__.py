"""Generate the static shell completion scripts in ``completions/`` (bash, zsh, fish).

The scripts hold the command tree, options, option values (choices, files)
and help texts, read from the typer app (:mod:`.tree`), so completing costs
no Python start-up. Regenerate them in the checkout after changing commands::

    python -m devtools.completions            # writes the checkout's completions/
    python -m devtools.completions --check    # exit 1 if they are stale

A development tool: it is not in the wheel. Installed users get typer's
own ``makers-store --install-completion``, which asks the program itself on
every Tab.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from .. import ROOT, checked_target, checkout_root
from .bash import bash
from .fish import fish
from .tree import PROG, Node, tree
from .zsh import zsh

FILES = {"bash": f"{PROG}.bash", "zsh": f"_{PROG}", "fish": f"{PROG}.fish"}
GENERATORS: dict[str, Callable[[Node], str]] = {"bash": bash, "zsh": zsh, "fish": fish}
#: Where the scripts live in the checkout.
DIRECTORY = ROOT / "completions"


def render_all() -> dict[str, str]:
    """File name -> content of every completion script."""
    root = tree()
    return {FILES[shell]: make(root) for shell, make in GENERATORS.items()}


def stale(directory: Path) -> list[str]:
    """The scripts in ``directory`` that are missing or differ from the app."""
    return [
        name
        for name, text in render_all().items()
        if not (directory / name).is_file()
        or (directory / name).read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.completions", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "directory", nargs="?", type=Path, help=f"Default: the checkout's {DIRECTORY.name}/."
    )
    parser.add_argument("--check", action="store_true", help="Only report stale scripts.")
    args = parser.parse_args(argv)
    directory: Path = args.directory or checkout_root() / DIRECTORY.name
    if args.check:
        names = stale(directory)
        for name in names:
            print(f"stale: {directory / name}", file=sys.stderr)
        return 1 if names else 0
    directory = checked_target(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in render_all().items():
        (directory / name).write_text(text, encoding="utf-8")
        print(directory / name)
    return 0
