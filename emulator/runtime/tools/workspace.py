"""The folder that plays the sandbox's filesystem for one conversation.

On the platform each conversation is routed to its own sandbox machine. Under
``makers-store serve`` it gets ``<project>/.makers-store/workspaces/<name>/``,
whose root stands for the sandbox's ``/``: ``files_write("/tmp/a.txt")``
lands in ``<workspace>/tmp/a.txt``. A request without a conversation id gets
a folder of its own run, since there is nothing to share it with.

Paths are checked, never trusted: a path whose ``..`` parts climb above the
root, or that reaches outside through a symlink, is refused. This keeps the
file tools inside the folder; it is not a security boundary (``commands``
and ``code_interpreter`` run as the user, see :mod:`.processes`).
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolArgumentError
from ..project.data_dir import DATA_DIR

#: Where the workspaces live, under the project folder (hidden from --reload).
WORKSPACES_DIR = Path(DATA_DIR) / "workspaces"

#: The readable part of a folder name is cut to this many characters; the
#: digest of the whole id that follows keeps names distinct.
NAME_PREFIX_CHARS = 32
#: Hex digits of the sha256 of the id (128 bits: collisions are not a concern).
NAME_DIGEST_CHARS = 32
#: Folder names start with these, so a conversation id can never name the
#: folder of a run (or the other way round).
CONVERSATION_MARK = "c"
RUN_MARK = "r"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def folder_name(conversation_id: str, run_id: str) -> str:
    """A bounded, filesystem-safe, collision-free folder name for the ids.

    ``c-<escaped prefix>-<digest>`` for a conversation, ``r-...`` for a run
    without one. The prefix keeps ASCII letters, digits, ``-`` and ``_`` (any
    other run of characters becomes one ``_``), so ``/``, ``..``, control
    characters and any unicode are harmless; the digest covers the whole id.
    """
    mark, value = (CONVERSATION_MARK, conversation_id) if conversation_id else (RUN_MARK, run_id)
    # surrogatepass: a JSON body can carry lone surrogates; they still hash.
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    prefix = _UNSAFE.sub("_", value)[:NAME_PREFIX_CHARS].strip("_")
    return "-".join(part for part in (mark, prefix, digest[:NAME_DIGEST_CHARS]) if part)


@dataclass(frozen=True)
class WorkspacePath:
    """A path the caller gave, checked: ``host`` on disk, ``shown`` as the sandbox path."""

    host: Path
    shown: str

    @property
    def is_root(self) -> bool:
        return self.shown == "/"


class Workspace:
    """One conversation's folder; created on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @classmethod
    def for_conversation(cls, project_dir: Path, conversation_id: str, run_id: str) -> Workspace:
        """The workspace of ``conversation_id`` ("" -> one of its own for ``run_id``)."""
        return cls(project_dir / WORKSPACES_DIR / folder_name(conversation_id, run_id))

    def ensure(self) -> Path:
        """Create the folder if needed; return its real path (symlinks resolved)."""
        self.root.mkdir(parents=True, exist_ok=True)
        return Path(os.path.realpath(self.root))

    def resolve(self, path: object, *, argument: str = "path") -> WorkspacePath:
        """Map a sandbox path (absolute or relative to ``/``) into the workspace.

        Raises :class:`ToolArgumentError` naming ``argument`` when ``path`` is
        not a non-empty str, holds a NUL, climbs above the root with ``..``,
        or leads outside the workspace through a symlink (dangling or not).
        """
        if not isinstance(path, str) or not path:
            raise ToolArgumentError(f"{argument} must be a non-empty string, not {path!r}")
        if "\x00" in path:
            raise ToolArgumentError(f"{argument} {path!r} holds a NUL character")
        parts: list[str] = []
        for part in path.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise ToolArgumentError(
                        f"{argument} {path!r} climbs above the workspace root with '..'"
                    )
                parts.pop()
            else:
                parts.append(part)
        root = self.ensure()
        host = root.joinpath(*parts)
        real = os.path.realpath(host)
        if real != str(root) and not real.startswith(str(root) + os.sep):
            raise ToolArgumentError(
                f"{argument} {path!r} leads outside the workspace through a symlink"
            )
        return WorkspacePath(host=host, shown="/" + "/".join(parts))
