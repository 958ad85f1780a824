"""``ctx.tools`` and ``ctx.sandbox`` under ``makers-store serve``: real local tools.

One conversation, one workspace folder (:mod:`.workspace`); the file tools
(:mod:`.files`), commands and code (:mod:`.processes`), fetch and search
(:mod:`.web`) work on it, and both the toolkit registry (:mod:`.toolkit`,
shaped per framework by :mod:`.shapes` from the specs in :mod:`.catalog`) and
the sandbox client (:mod:`.sandbox`) call that one implementation.

Not a security sandbox: commands and code run as the user who started serve.
"""

from __future__ import annotations

from ..errors import ToolArgumentError, ToolError, ToolFileNotFoundError, ToolsDisabledError
from .sandbox import LocalSandbox
from .toolkit import ClaudeMcpServerBundle, Toolkit, build_toolkit
from .workspace import Workspace

__all__ = [
    "ClaudeMcpServerBundle",
    "LocalSandbox",
    "ToolArgumentError",
    "ToolError",
    "ToolFileNotFoundError",
    "Toolkit",
    "ToolsDisabledError",
    "Workspace",
    "build_toolkit",
]
