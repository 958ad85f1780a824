"""``<project>/.makers-store/``: what serve writes inside a project.

The default store (``store.db``), the runs' traces (``traces.jsonl``) and the
tools' workspaces live here, and change on every turn. serve gives the folder
a ``.gitignore`` holding ``*`` when it makes it (as pytest and mypy do for
their caches), because a frontend dev server that scans the project for source
files honours ``.gitignore``: Tailwind CSS 4's Vite plugin (in the
deepagents-research-nodejs and langgraph-quiz-python templates) watches every
file it scans and reloads the whole page when one changes, so without it each
trace written mid-stream reloaded the open page and aborted the stream the
page was reading. It also keeps the store out of ``git add .``. A
``.gitignore`` already there is left as it is.
"""

from __future__ import annotations

from pathlib import Path

#: The folder's name under the project.
DATA_DIR = ".makers-store"
IGNORE_FILE = ".gitignore"
IGNORE_EVERYTHING = (
    "# makers-store serve's local data (store, traces, tool workspaces): never source.\n*\n"
)


def ensure_data_dir(project: Path) -> Path:
    """``project``'s data folder, made with its ``.gitignore`` if either is missing."""
    folder = project / DATA_DIR
    folder.mkdir(exist_ok=True)
    ignore = folder / IGNORE_FILE
    if not ignore.exists():
        ignore.write_text(IGNORE_EVERYTHING, encoding="utf-8")
    return folder
