"""Errors of the local tools and sandbox, in makers_store's one hierarchy.

Tools never raise these into an agent framework: the tool wrappers turn
them into ``{"error": message}`` results. ``ctx.sandbox`` raises them, as
the platform's sandbox client raises on a failed call.
"""

from __future__ import annotations

from makers_store.errors import MemoryValidationError, StoreError


class ToolError(StoreError):
    """A tool or sandbox call failed; the message says why."""


class ToolArgumentError(ToolError, MemoryValidationError):
    """An argument broke a rule (wrong type, out of range, a path leaving the
    workspace); the message names the argument. Also a ``ValueError``."""


class ToolFileNotFoundError(ToolError, FileNotFoundError):
    """The file or directory named does not exist in the workspace.

    Also the builtin ``FileNotFoundError``, which is what agent code and
    system prompts written for the platform's sandbox look for.
    """

    def __str__(self) -> str:  # OSError would format (errno, strerror)
        return str(self.args[0]) if self.args else ""


class ToolsDisabledError(ToolError):
    """``makers-store serve --no-tools`` turned tools and the sandbox off."""
