"""Text-file operations inside a :class:`~.workspace.Workspace`.

The one implementation behind the ``files_*`` tools and ``ctx.sandbox.files``.
Text only, UTF-8, as on the platform (binary goes through ``commands`` with
``base64 -d``). Every path is checked by :meth:`Workspace.resolve` first.
"""

from __future__ import annotations

import functools
import shutil
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, ParamSpec, TypeVar

from ..errors import ToolArgumentError, ToolError, ToolFileNotFoundError
from .workspace import Workspace, WorkspacePath

#: files_read refuses bigger files (a model cannot use more; use commands + head).
MAX_READ_BYTES = 5 * 1024 * 1024


@dataclass(frozen=True)
class FileEntry:
    """One entry of a listing: ``type`` is "file", "dir" or "symlink" (not followed)."""

    name: str
    path: str
    type: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _os_errors_as_tool_errors(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Permission denied, disk full...: a ToolError with the OS's reason."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except ToolError:
            raise
        except OSError as exc:
            name = function.__name__
            raise ToolError(f"{name} failed: {exc.strerror or exc}") from None

    return wrapper


def _existing(where: WorkspacePath) -> WorkspacePath:
    if not where.host.exists():
        raise ToolFileNotFoundError(f"no such file or directory: {where.shown}")
    return where


@_os_errors_as_tool_errors
def read_text(workspace: Workspace, path: object) -> str:
    where = _existing(workspace.resolve(path))
    if where.host.is_dir():
        raise ToolError(f"{where.shown} is a directory; use files_list")
    size = where.host.stat().st_size
    if size > MAX_READ_BYTES:
        raise ToolError(
            f"{where.shown} is {size} bytes; files_read reads at most {MAX_READ_BYTES}; "
            "use commands (head, tail, grep) for a part of it"
        )
    data = where.host.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{where.shown} is not UTF-8 text (byte {exc.start}); the file tools read text "
            "only; use commands (base64) for binary files"
        ) from None


@_os_errors_as_tool_errors
def write_text(workspace: Workspace, path: object, content: object) -> int:
    """Write ``content`` (creating parent folders); return the bytes written."""
    if not isinstance(content, str):
        raise ToolArgumentError(
            f"content must be a string (UTF-8 text only), not {type(content).__name__}; "
            "write binary files with commands (base64 -d)"
        )
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolArgumentError(
            f"content is not valid text: a lone surrogate at index {exc.start}"
        ) from None
    where = workspace.resolve(path)
    if where.is_root or where.host.is_dir():
        raise ToolError(f"{where.shown} is a directory; give a file path")
    where.host.parent.mkdir(parents=True, exist_ok=True)
    where.host.write_bytes(data)
    return len(data)


@_os_errors_as_tool_errors
def list_dir(workspace: Workspace, path: object) -> list[FileEntry]:
    where = _existing(workspace.resolve(path))
    if not where.host.is_dir():
        raise ToolError(f"{where.shown} is not a directory")
    entries = []
    prefix = where.shown.rstrip("/")
    for child in sorted(where.host.iterdir(), key=lambda item: item.name):
        info = child.lstat()
        if stat.S_ISLNK(info.st_mode):
            kind = "symlink"
        elif stat.S_ISDIR(info.st_mode):
            kind = "dir"
        else:
            kind = "file"
        size = info.st_size if kind == "file" else 0
        entries.append(FileEntry(child.name, f"{prefix}/{child.name}", kind, size))
    return entries


@_os_errors_as_tool_errors
def exists(workspace: Workspace, path: object) -> bool:
    return workspace.resolve(path).host.exists()


@_os_errors_as_tool_errors
def remove(workspace: Workspace, path: object) -> None:
    """Remove a file, or a folder with everything in it (links are removed, not followed)."""
    where = workspace.resolve(path)
    if where.is_root:
        raise ToolArgumentError("path '/' is the workspace root; it cannot be removed")
    if not where.host.is_symlink() and not where.host.exists():
        raise ToolFileNotFoundError(f"no such file or directory: {where.shown}")
    if where.host.is_dir() and not where.host.is_symlink():
        shutil.rmtree(where.host)
    else:
        where.host.unlink()


@_os_errors_as_tool_errors
def make_dir(workspace: Workspace, path: object) -> bool:
    """Create a folder and its parents; True if it was created, False if it existed."""
    where = workspace.resolve(path)
    if where.host.is_dir():
        return False
    if where.host.exists():
        raise ToolError(f"{where.shown} exists and is not a directory")
    where.host.mkdir(parents=True)
    return True
