"""Every exception the serve runtime defines, in one module.

One module so that a reader finds what can go wrong in one place, and so that
any room of the runtime can raise or catch an error without importing the
room that happens to raise it most (``tools/sandbox`` once imported ``ctx``'s
module for :class:`PlatformOnlyError`, ``node/setup`` the worker pool for
:class:`ServeError`: both were import loops). It imports nothing of the
runtime and nothing but ``makers_store.errors`` at run time, so it is cheap
to import from anywhere, project code included.

The errors users and project code see are in ``makers_store``'s one hierarchy
(:class:`~makers_store.errors.StoreError`), so the CLI maps them to its exit
codes and a handler's ``except StoreError`` catches them. The last group are
signals between the runtime's own parts; they never reach a user as such.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from makers_store.errors import MemoryValidationError, StoreError

if TYPE_CHECKING:
    from starlette.responses import Response

# --- serve cannot start or serve (the CLI prints them, exit code 1) ---------


class ServeError(StoreError, RuntimeError):
    """The local runtime could not start or serve."""


class NoInstanceError(ServeError):
    """No worker became ready in time to take a request."""


class NodeSetupError(ServeError):
    """Node routes cannot run: Node missing or too old, or tsx not installable."""


# --- what project code meets ---------------------------------------------------


class PlatformOnlyError(StoreError, AttributeError):
    """A ``ctx`` feature that only the EdgeOne Makers platform provides.

    It is also an ``AttributeError``, so ``getattr(..., None)`` and ``hasattr``
    let code degrade gracefully when run locally.
    """


class NotInCloudFunctionsError(StoreError, AttributeError):
    """A store attribute the platform removes from cloud functions.

    An ``AttributeError`` as well, so ``hasattr`` / ``getattr(store, name, None)``
    answer as they would on the platform.
    """


# Errors of the local tools and sandbox (``ctx.tools``, ``ctx.sandbox``). Tools
# never raise these into an agent framework: the tool wrappers turn them into
# ``{"error": message}`` results. ``ctx.sandbox`` raises them, as the
# platform's sandbox client raises on a failed call.


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


# --- a handler's outcome that cannot be sent as is (a worker answers 500) ---------


class ResultError(TypeError):
    """The handler returned something that cannot be sent."""


class RelayedError(Exception):
    """The handler failed in another process (a Node worker), whose error answer is relayed."""

    def __init__(self, response: Response) -> None:
        super().__init__("the handler failed")
        self.response = response


class NodeStreamError(Exception):
    """A Node handler's stream failed after it started.

    :mod:`.node.proxy` raises a subclass named as the JS error, so the stream's
    ``event: error`` frame says ``TypeError: ...`` as a Python stream's does.
    """


# --- signals between the runtime's own parts -------------------------------------


class UpstreamError(Exception):
    """The other side broke an HTTP exchange (closed early, sent garbage):
    a worker for the front, the Node worker for its Python worker."""


class ClientGone(Exception):
    """The client disconnected before its body was complete (the front)."""


class BodyRefused(Exception):
    """The front cannot take the body: ``status`` and ``message`` say why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
