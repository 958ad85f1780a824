"""The ``makers-store`` entry point: the one place errors become exit codes.

Kept to the standard library: ``makers-store --version`` answers without
importing typer (a script asking for the version pays for nothing else);
every other command line goes to the command tree in :mod:`.app`, imported
then. ``app`` is importable from here, as it always was.
"""

from __future__ import annotations

import sys
from typing import Any


def version_line() -> str:
    from makers_store import __version__  # the package is imported already (its parent)

    return f"makers-store {__version__}"


def main() -> int:
    """Run the CLI on ``sys.argv`` and return its exit code (see cli/errors.py)."""
    argv = sys.argv[1:]
    if argv in (["--version"], ["-V"]):
        sys.stdout.write(version_line() + "\n")
        return 0
    from .app import app
    from .errors import run_with_error_boundary

    return run_with_error_boundary(app, argv)


def __getattr__(name: str) -> Any:
    """The command tree's names (``app``, for tests and the generators in
    devtools/), imported from :mod:`.app` when asked for."""
    from importlib import import_module

    if name.startswith("__"):  # the import system asks for __path__ and the like
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    tree = import_module(f"{__package__}.app")
    try:
        return getattr(tree, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


if __name__ == "__main__":
    sys.exit(main())
